"""What a graded batch becomes for people: feedback pages and the instructor's summaries.

:mod:`.feedback` writes one self-contained, sanitized page per student and chapter (scores,
the student's own cells, hidden tests' results without their code), in the language of the
release; :mod:`.reports` writes the class's summaries (the exercises most often failed, a
chart of the scores).

It reads a graded course (:mod:`autograder.course`, :mod:`autograder.grading`), never the
sandbox, and nothing below imports it.
"""
