"""The grader's configuration: the ``grading:`` block of the book's ``_config.yml``, read once,
typed and checked here.

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

Every value is written once, in ``_config.yml`` (the Gradescope bundle carries a copy of it
next to this package). The CLI (:mod:`autograder.cli`), :class:`autograder.course.Course`,
:class:`autograder.grading.batch.Settings`, :class:`autograder.sandbox.Limits`, the grading worker
and the Gradescope bundle take their defaults from here; ``book/instructors.md`` states them
and ``tests/test_config.py`` checks it says what is here, and that no module of
``autograder/`` writes one of these numbers as a default of its own. A missing, unknown or
ill-typed value fails at import with :class:`ConfigError`, naming the key, what it expects
and what it found. PyTorch's CPU wheel index is not a Python value: it is written once, as
``TORCH_INDEX`` in the ``Makefile`` (``tests/test_tooling.py``).

Why frozen dataclasses and not traitlets ``Configurable`` classes: these values are read
where traitlets and nbgrader are not imported and must not be (the CLI's ``--help``, the
sandbox, the worker before it imports nbgrader, the Gradescope bundle's start-up, the docs
test), and they never change while a command runs. A frozen dataclass is typed, cannot be
changed by accident, and :func:`dataclasses.replace` gives the CLI's overrides. nbgrader
itself gets its configuration as traitlets, from :func:`nbgrader_config`, built from these
values in one place; the sandbox's kernel manager is a traitlets configurable too.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

CONFIG_FILE = Path(__file__).resolve().parent.parent / "_config.yml"


class ConfigError(ValueError):
    """The ``grading:`` block of ``_config.yml`` is missing a value, or has a wrong one."""


@dataclass(frozen=True)
class Limits:
    """What grading allows one notebook (each field: ``grading.limits`` in ``_config.yml``)."""

    cell_timeout: int  # CPU seconds per cell (wall clock without the sandbox)
    notebook_timeout: int  # CPU seconds per notebook (wall clock without the sandbox)
    wall_factor: int  # the wall-clock backstop, as a multiple of the two above
    memory_mb: int  # address space per process, and resident memory of the whole tree
    grader_cpu_seconds: int  # CPU seconds of the grading worker's own, per notebook
    processes: int  # processes and threads of the kernel's user
    file_mb: int  # the largest file a kernel may write
    folder_mb: int  # everything in the kernel's folder together
    folder_files: int  # files and folders in the kernel's folder


def _positive_int(key: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(
            f"{CONFIG_FILE.name}: grading.{key}: expected a positive integer, "
            f"got {value!r} ({type(value).__name__})"
        )
    return value


def _limits(key: str, values, base: dict | None = None) -> Limits:
    names = [f.name for f in dataclasses.fields(Limits)]
    if not isinstance(values, dict):
        raise ConfigError(
            f"{CONFIG_FILE.name}: grading.{key}: expected a mapping of limits, got {values!r}"
        )
    unknown = sorted(set(values) - set(names))
    if unknown:
        raise ConfigError(
            f"{CONFIG_FILE.name}: grading.{key}: unknown limit(s) {unknown}; expected some of {names}"
        )
    merged = {**(base or {}), **values}
    missing = [n for n in names if n not in merged]
    if missing:
        raise ConfigError(f"{CONFIG_FILE.name}: grading.{key}: missing {missing}")
    return Limits(**{n: _positive_int(f"{key}.{n}", merged[n]) for n in names})


def load(path: Path = CONFIG_FILE) -> dict:
    """The ``grading:`` block of ``path``, checked: its values, typed."""
    import yaml

    try:
        block = (yaml.safe_load(Path(path).read_text()) or {}).get("grading")
    except (OSError, yaml.YAMLError) as err:
        raise ConfigError(f"cannot read the grader's configuration from {path}: {err}") from err
    if not isinstance(block, dict):
        raise ConfigError(f"{Path(path).name}: expected a mapping `grading:`, got {block!r}")
    for key in ("course_id", "limits", "gradescope", "first_uid", "book_cell_timeout"):
        if key not in block:
            raise ConfigError(f"{Path(path).name}: grading.{key} is missing")
    if not isinstance(block["course_id"], str) or not block["course_id"]:
        raise ConfigError(
            f"{Path(path).name}: grading.course_id: expected a name, got {block['course_id']!r}"
        )
    limits = _limits("limits", block["limits"])
    return {
        "course_id": block["course_id"],
        "limits": limits,
        "gradescope": _limits("gradescope", block["gradescope"], dataclasses.asdict(limits)),
        "first_uid": _positive_int("first_uid", block["first_uid"]),
        "book_cell_timeout": _positive_int("book_cell_timeout", block["book_cell_timeout"]),
    }


_GRADING = load()
COURSE_ID: str = _GRADING["course_id"]
LIMITS: Limits = _GRADING["limits"]
GRADESCOPE: Limits = _GRADING["gradescope"]
FIRST_UID: int = _GRADING["first_uid"]
BOOK_CELL_TIMEOUT: int = _GRADING["book_cell_timeout"]

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
