"""The language of the checks' messages: which one, and the messages in it.

English is the source and the default; every message of ``checks`` is written once, in
English, in the code (a check's question is the first line of its docstring, a template is
``tr("{name} has shape {actual}, expected {expected}")``). A translation is the gettext
catalog ``locale/<locale>/LC_MESSAGES/checks.po`` of the course, extracted from the code by
``make catalogs`` (:mod:`autograder.catalogs.checks_messages`), which also writes what this module reads
at run time, since a student's kernel has only the standard library and torch:

    checks/_messages/<locale>.json          the messages of the visible checks
    checks/hidden/_messages/<locale>.json   those only the hidden checks say

(the hidden ones stay with ``checks/hidden``, which a release and the wheel never hold). The
hints of the questions' self-checks (``# hint`` comments of the answer cells, which
``python -m autograder export`` writes to ``solutions/answers.py``) are translated in the same
catalog, and shipped beside the module they belong to, which no release holds either:

    solutions/_messages/<locale>.json       the questions' hints (:func:`tr` with ``beside``)

The language, first found first (:func:`language`):

1. :func:`using` (a block: the grader, for the notebook it grades) or :func:`set_language`;
2. the environment variable ``COURSE_LANG`` (``zh``; the setup cell of a Chinese notebook sets
   it where nothing else did);
3. the notebook's own ``metadata.language`` (``zh_CN`` in every Chinese notebook the course
   writes), where the kernel knows its notebook: Jupyter names it in ``JPY_SESSION_NAME``;
4. English.

A language without a translation, or an unknown one, is English: nothing here fails. The
language changes only words: what is checked, and every verdict, is the same in all.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import os
from collections.abc import Iterator
from pathlib import Path

ENV = "COURSE_LANG"
SESSION_ENV = "JPY_SESSION_NAME"  # Jupyter's: the path of the kernel's notebook
SOURCE = "en"
LOCALES = {"en": "en", "zh": "zh_CN"}  # the codes of autograder.i18n.LANGUAGES, and their locale
FOLDER = "_messages"

_chosen: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "checks_language", default=None
)
_set: list[str | None] = [None]  # set_language's choice, for every thread


def normalise(value) -> str | None:
    """``"zh"`` for ``zh``, ``zh_CN``, ``zh-CN`` or ``ZH``; ``"en"`` for English; None otherwise."""
    if not isinstance(value, str) or not value.strip():
        return None
    code = value.strip().replace("-", "_").split("_")[0].split(".")[0].lower()
    return code if code in LOCALES else None


@functools.cache
def _notebook_language(path: str, stamp: int) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            metadata = json.load(f).get("metadata") or {}
    except (OSError, ValueError, AttributeError):
        return None
    return normalise(metadata.get("language"))


def notebook_language() -> str | None:
    """The language in the metadata of the kernel's notebook, if the kernel can know it."""
    path = os.environ.get(SESSION_ENV, "")
    if not path.endswith(".ipynb"):
        return None
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError:
        return None
    return _notebook_language(path, stamp)


def language() -> str:
    """The language of the checks' messages now (see the module docstring): ``en`` or ``zh``."""
    for choice in (_chosen.get(), _set[0], os.environ.get(ENV)):
        code = normalise(choice)
        if code is not None:
            return code
    return notebook_language() or SOURCE


def set_language(code: str | None) -> None:
    """Say the checks' messages in ``code`` (``"zh"``, ``"en"``) from now on; None forgets it.

    Raises:
        ValueError: for a language the checks do not know.
    """
    if code is not None and normalise(code) is None:
        known = ", ".join(LOCALES)
        raise ValueError(f"unknown language {code!r}; the checks speak {known}")
    _set[0] = normalise(code) if code is not None else None


@contextlib.contextmanager
def using(code: str | None) -> Iterator[None]:
    """The checks' messages in ``code`` inside the block (this thread or task only); an unknown
    or missing ``code`` leaves the choice as it was."""
    token = _chosen.set(normalise(code))
    try:
        yield
    finally:
        _chosen.reset(token)


def files(code: str) -> list[Path]:
    """Where the run-time translations of ``code`` are: the visible checks', the hidden ones'."""
    name = f"{LOCALES[code]}.json"
    here = Path(__file__).parent
    return [here / FOLDER / name, here / "hidden" / FOLDER / name]


@functools.cache
def _table(paths: tuple[Path, ...], stamps: tuple) -> dict[str, str]:
    table: dict[str, str] = {}
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                table.update(json.load(f))
        except (OSError, ValueError):  # no translation here (a hidden one in a release)
            continue
    return table


def _read(paths: list[Path]) -> dict[str, str]:
    stamps = []
    for path in paths:
        try:
            stamps.append(os.stat(path).st_mtime_ns)
        except OSError:
            stamps.append(None)
    return _table(tuple(paths), tuple(stamps))


def translations(code: str, beside: str | os.PathLike | None = None) -> dict[str, str]:
    """msgid -> msgstr of ``code`` as shipped (empty for English); with ``beside`` (a module's
    file), those shipped next to that module too, in its folder's ``_messages``."""
    if code == SOURCE or code not in LOCALES:
        return {}
    paths = files(code)
    if beside is not None:
        paths.append(Path(beside).parent / FOLDER / f"{LOCALES[code]}.json")
    return _read(paths)


def N_(message: str) -> str:
    """``message`` as it is, marked for the catalog: a message kept in a constant (a table of
    classic mistakes, say) and translated where it is said, with :func:`tr` (gettext's ``N_``)."""
    return message


def tr(message: str, beside: str | os.PathLike | None = None) -> str:
    """``message`` (English, a template or a question) in the checks' language, or as it is.

    Args:
        beside: the file of a module whose translations are shipped next to it (the questions'
            hints, beside ``solutions/answers.py``), to look in too.
    """
    code = language()
    if code == SOURCE:
        return message
    return translations(code, beside).get(message) or message
