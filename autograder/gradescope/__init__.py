"""Gradescope: the autograder bundle of a chapter, and the code that runs inside it.

:mod:`.bundle` writes ``<chapter>.zip`` (:func:`autograder.gradescope.bundle.build`) and, in
Gradescope's container, grades the one submission there and writes ``results.json``
(:func:`autograder.gradescope.bundle.main`). ``setup.sh`` and ``run_autograder`` are the
two scripts Gradescope runs, shipped as they are in this folder.

It uses the same grading as the local grader (:mod:`autograder.grading`, the sandbox) and
the feedback's words (:mod:`autograder.results`); nothing else imports it but the command
line.
"""
