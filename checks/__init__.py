"""Self-checks for the exercises of *Attention, Step by Step*.

In a chapter notebook::

    import checks
    checks.run("masked_softmax", masked_softmax)

prints one line per check and raises ``CheckError`` with a message that names
the expected against the actual shape, dtype or value if something is wrong.

Every module ``checks/<chapter>.py`` is imported here and registers its checks;
a new chapter's module needs nothing else.

The modules form layers, lowest first. A module imports modules of its own layer and of the
layers below it, never one above, and no two modules import each other, even inside a
function (``tests/test_imports.py`` reads the table below and enforces both; ``*`` stands
for every chapter's module, ``checks/<chapter>.py`` and ``checks/hidden/<chapter>.py``)::

    ground      _errors _i18n _meta
    core        _quiz _crash _expect _mutation _core
    protocol    _wire _watch _serve _remote
    helpers     _contract _workbook
    chapters    * hidden
    runner      _runner
    package     __init__

- **ground**: the exceptions every layer raises, the checks' language, and the meta device
  without the compiler's import (:mod:`._meta`);
- **core**: what every chapter uses: the questions' rules (what a self-check may say where
  it is graded), whose crash an exception is (:mod:`._crash`), the assertion helpers
  (:mod:`._expect`, and :mod:`._mutation` for changes in place) and the registry of the
  checks with the inputs they build (:mod:`._core`);
- **protocol**: the wire format both sides use, the watches both sides run, the kernel's
  side (:mod:`._serve`) and the grader's (:mod:`._remote`);
- **helpers**: the contracts the chapters' checks share (copies, gradients, devices), and
  the workbook's one-line note on an unfinished exercise;
- **chapters**: each chapter's checks, visible and hidden;
- **runner**: ``run`` and ``run_hidden``: a group against a function, through the proxies;
- **package**: this module, which imports every chapter.

``checks`` never imports ``autograder``; of ``solutions`` only :mod:`._workbook` reads the
names (to say where the reference of an unfinished exercise is).
"""

from checks._core import available_devices, import_chapters
from checks._errors import CheckError, CheckInternalError
from checks._expect import expect_close, expect_tensor
from checks._i18n import set_language
from checks._runner import groups, run, run_hidden

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
