"""Hidden checks: the grader runs these; the student release does not contain them.

They compare against independent references (explicit loops, PyTorch built-ins,
mathematical properties), never against the reference solution. Every module
``checks/hidden/<chapter>.py`` is imported here and registers its checks.
"""

from checks._core import import_chapters

CHAPTERS = import_chapters(__name__, __path__)
