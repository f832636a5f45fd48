"""The one error type of the tooling for what its user can fix, said in one message.

Library code raises :class:`CourseError` (an unknown chapter, a folder that cannot be written,
a wrong ``--shard``, a password given twice, a submissions archive that cannot be unpacked);
only the command line (:mod:`autograder.cli`) turns one into its message on stderr and exit
status 1, as ``SystemExit(message)`` did. Callers that are not the command line catch it, or
let a test see its type.
"""


class CourseError(Exception):
    """A problem the user can fix: the message is the whole report (what is wrong, and what
    to do about it where that is not plain)."""
