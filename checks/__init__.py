"""Self-checks for the exercises of *Attention, Step by Step*.

In a chapter notebook::

    import checks
    checks.run("masked_softmax", masked_softmax)

prints one line per check and raises ``CheckError`` with a message that names
the expected against the actual shape, dtype or value if something is wrong.

Every module ``checks/<chapter>.py`` is imported here and registers its checks;
a new chapter's module needs nothing else.
"""

from checks._core import (
    CheckError,
    CheckInternalError,
    available_devices,
    expect_close,
    expect_tensor,
    groups,
    import_chapters,
    run,
    run_hidden,
)
from checks._i18n import set_language

CHAPTERS = import_chapters(__name__, __path__)

__all__ = [
    "CheckError",
    "CheckInternalError",
    "available_devices",
    "expect_close",
    "expect_tensor",
    "groups",
    "run",
    "run_hidden",
    "set_language",
]
