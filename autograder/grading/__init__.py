"""Grading a batch: from the submissions handed in to the scores in the gradebook.

A run reads what was handed in (:mod:`.collect`: folders, zips, an LMS's export, an
exchange; one notebook per student and chapter), writes one job folder per notebook
(:mod:`.jobs`), hands the jobs to a pool of worker processes (:mod:`.pool`, one thread per
slot), each of which executes a notebook in the sandbox and runs the checks from outside the
kernel (:mod:`.worker`, :mod:`.preprocessors`), and records every result in the gradebook
(:mod:`.ledger`) and in the run's CSV files (:mod:`.tables`). :mod:`.batch` is the run
itself; :mod:`.scores` is the arithmetic of a total; :mod:`.formgrader` starts nbgrader's
formgrader for the hand-graded answers.

It imports the ground modules (:mod:`autograder.config`, :mod:`autograder.records`,
:mod:`autograder.notebooks`) and :mod:`autograder.sandbox`, never the book, the course or
what is made from results (the layers are in :mod:`autograder`'s docstring).
"""
