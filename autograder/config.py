"""The grader's configuration, written once: every limit, id and default that more than one
place needs.

What is here, and who reads it:

- :data:`COURSE_ID`, nbgrader's course id, in every gradebook and course folder;
- :class:`Limits`, what grading allows one notebook, with :data:`LIMITS` (the defaults of
  ``attention-course grade``, each overridden by its flag: ``--cell-timeout``,
  ``--notebook-timeout``, ``--wall-factor``, ``--memory``, ``--grader-cpu``) and
  :data:`GRADESCOPE` (what ``attention-course gradescope`` writes into a bundle's
  ``bundle.json``, overridden by its ``--cell-timeout``, ``--notebook-timeout``, ``--memory``);
- :data:`FIRST_UID`, the first of the sandbox's kernel uids (``AUTOGRADER_FIRST_UID`` moves it);
- :data:`BOOK_CELL_TIMEOUT`, the wall clock of one cell when the book's own notebooks are
  executed (``attention-course execute``, ``make outputs``);
- :func:`nbgrader_config`, the one place nbgrader's ``Config`` is built, and
  :func:`config_file`, the course folder's ``nbgrader_config.py`` written from it.

The CLI (:mod:`autograder.cli`), :class:`autograder.course.Course`,
:class:`autograder.grading.Settings`, :class:`autograder.sandbox.Limits`, the grading worker
and the Gradescope bundle take their defaults from here; ``book/instructors.md`` states them
and ``tests/test_config.py`` checks it says what is here, and that no module of
``autograder/`` writes one of these numbers as a default of its own. PyTorch's CPU wheel
index is not a Python value: it is written once, as ``TORCH_INDEX`` in the ``Makefile``
(``tests/test_tooling.py``).

Why frozen dataclasses and not traitlets ``Configurable`` classes: these values are read
where traitlets and nbgrader are not imported and must not be (the CLI's ``--help``, the
sandbox, the worker before it imports nbgrader, the Gradescope bundle's start-up, the docs
test), and they never change while a command runs. A frozen dataclass is typed, imports
nothing, cannot be changed by accident, and :func:`dataclasses.replace` gives the CLI's
overrides. nbgrader itself still gets its configuration as traitlets, from
:func:`nbgrader_config`, built from these values in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

COURSE_ID = "attention-step-by-step"


@dataclass(frozen=True)
class Limits:
    """What grading allows one notebook (CPU seconds are those of the kernel's whole tree)."""

    cell_timeout: int = 60  # CPU seconds per cell (wall clock without the sandbox)
    notebook_timeout: int = 600  # CPU seconds per notebook (wall clock without the sandbox)
    # The wall-clock backstop, as a multiple of the two limits above: only a notebook that
    # sleeps or waits (not one on a busy machine) should ever reach it.
    wall_factor: int = 10
    memory_mb: int = 4096  # address space per process, and resident memory of the whole tree
    # CPU seconds the grading worker itself may spend on one notebook (reading the kernel's
    # answers, running the checks, nbgrader's own work): a few seconds for honest work.
    grader_cpu_seconds: int = 120
    # The kernel's sandbox (autograder.sandbox.Limits): processes and threads of its user,
    # the largest file it may write, and its folder's size and number of entries.
    processes: int = 256
    file_mb: int = 64
    folder_mb: int = 256
    folder_files: int = 2000


LIMITS = Limits()
# A Gradescope container grades one submission and has less memory than a grading server;
# Gradescope stops a whole run after 10 minutes by default.
GRADESCOPE = Limits(notebook_timeout=600, memory_mb=3072)

# Kernels run as uids FIRST_UID + worker index: no account has them on Debian.
FIRST_UID = 61000
BOOK_CELL_TIMEOUT = 600  # wall-clock seconds per cell when the book's notebooks are executed

# Why a setting is what it is, written above it in nbgrader_config.py too.
WHY = {
    ("Execute", "kernel_name"): "Students' notebooks may name another kernel; always grade with "
    "this environment's.",
}
# The stub nbgrader writes in place of a solution region.
CODE_STUB = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}


def nbgrader_config(root: Path, db_url: str | None = None, *, cell_timeout: int | None = None):
    """nbgrader's configuration for the course folder ``root``: a ``traitlets`` ``Config``.

    Args:
        root: the course folder (``CourseDirectory.root``).
        db_url: the gradebook (default: ``gradebook.db`` in ``root``).
        cell_timeout: ``Execute.timeout``, the wall clock of one cell, where one is set.
    """
    from traitlets.config import Config

    cfg = Config()
    cfg.CourseDirectory.root = str(root)
    cfg.CourseDirectory.course_id = COURSE_ID
    cfg.CourseDirectory.db_url = db_url or f"sqlite:///{Path(root) / 'gradebook.db'}"
    cfg.Execute.kernel_name = "python3"  # see WHY
    if cell_timeout is not None:
        cfg.Execute.timeout = cell_timeout
    cfg.Execute.allow_errors = True
    cfg.Execute.interrupt_on_timeout = True
    cfg.ClearSolutions.code_stub = dict(CODE_STUB)
    return cfg


def config_file(cfg) -> str:
    """``cfg`` (from :func:`nbgrader_config`) as the text of an ``nbgrader_config.py``."""
    lines = [
        "# Written by `python -m autograder`; edits are overwritten.",
        "c = get_config()  # noqa: F821",
    ]
    for section, values in cfg.items():
        for name, value in values.items():
            if (section, name) in WHY:
                lines.append(f"# {WHY[section, name]}")
            lines.append(f"c.{section}.{name} = {value!r}")
    return "\n".join(lines) + "\n"
