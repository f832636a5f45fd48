"""The exceptions of the checks: what every layer of ``checks`` raises or catches.

The lowest module of the package (it imports nothing of it), so that the wire format
(:mod:`checks._wire`), the questions (:mod:`checks._quiz`), the crash attribution
(:mod:`checks._crash`) and the assertion helpers (:mod:`checks._expect`) can all raise and
catch the same classes. ``checks`` exports them.
"""

from __future__ import annotations


class CheckError(AssertionError):
    """A check found a wrong answer. The message says what and where.

    In a notebook, IPython shows it as ``CheckError: <message>`` alone: the frames of
    the checks (the grader's paths) say nothing to a student, and the message already
    names the line of their code that failed.
    """

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


class CrashInCodeUnderTest(Exception):
    """An exception the code under test raised in another process (see :mod:`checks._remote`).

    It carries what the local exception would have shown: its type's name, its message and
    the line of the code under test it came from.
    """

    def __init__(self, type_name: str, message: str, where: str = ""):
        super().__init__(message)
        self.type_name, self.message, self.where = type_name, message, where


class CheckInternalError(Exception):
    """A check itself crashed: a bug in ``checks/``, not in the code under test.

    Deliberately not a :class:`CheckError`: a test that expects a wrong answer to
    be caught must not be satisfied by a check that merely fell over.
    """
