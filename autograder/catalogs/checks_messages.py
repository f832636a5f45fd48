"""The catalog ``checks``: what the self-checks say, and the tables they read it from at run time.

- :func:`check_messages`: the ``tr`` templates of ``checks/`` (and ``N_``'s, marked to be
  translated later), every check's question (the first line of its docstring), the hidden
  checks' included, and the questions' hints (the ``# hint`` comments of the answer cells);
  :mod:`autograder.catalogs` writes them into ``checks.pot``;
- :func:`runtime_tables` and :func:`write_runtime` (``make catalogs``): the translations of
  ``checks.po`` as ``checks/_i18n.py`` reads them in a student's kernel (which has no
  polib), split by who may see them: a release holds the visible checks' table, never the
  hidden checks' or the hints'.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path

from autograder import i18n
from autograder import notebooks as nbs
from autograder.catalogs.ui_messages import CourseMessage, string_constants
from autograder.i18n.review import format_fields


def _templates(path: Path) -> Iterator[tuple[str, int]]:
    """The messages of ``tr("...")`` calls in a module of ``checks`` (a string, or the name of
    a module's string constant), and of ``N_("...")`` (marked, translated later), with their
    lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    constants = string_constants(tree)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id not in ("tr", "N_") or len(node.args) != 1:
            continue
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            yield arg.value, node.lineno
        elif isinstance(arg, ast.Name) and arg.id in constants:
            yield constants[arg.id], node.lineno


def check_messages(root: Path = nbs.ROOT) -> list[CourseMessage]:
    """What the self-checks say: the ``tr`` templates of ``checks/`` and every check's question
    (the first line of its docstring), hidden checks' included, and the questions' hints (the
    ``# hint`` comments of the answer cells, at their cells); each once, at its first place (a
    message said by visible checks is at a visible place)."""
    import checks
    import checks.hidden  # noqa: F401  (registers the hidden checks)
    from autograder.book import questions
    from checks._core import REGISTRY

    base = root / "checks"
    found: dict[str, CourseMessage] = {}

    def add(msgid: str, where: str, line: int, note: str, python_format: bool) -> None:
        old = found.get(msgid)
        if old is None or (_hidden(old.where) and not _hidden(where)):
            found[msgid] = CourseMessage(msgid, where, note, python_format, line=line)

    for path in sorted(base.rglob("*.py"), key=lambda p: (_hidden(str(p)), str(p))):
        rel = path.relative_to(root).as_posix()
        for msgid, line in _templates(path):
            add(msgid, rel, line, "a template of the checks", bool(format_fields(msgid)))
    package = Path(checks.__file__).parent
    for items in REGISTRY.values():
        for item in items:
            code = getattr(item.fn, "__code__", None)
            file = Path(code.co_filename) if code else package / "_core.py"
            try:
                rel = (root / "checks" / file.relative_to(package)).relative_to(root).as_posix()
            except ValueError:
                rel = file.name
            line = code.co_firstlineno if code else 1
            add(item.question, rel, line, f"a check's question ({item.group})", False)
    for q in questions.questions(root):
        where = f"book/{q.chapter}.ipynb"
        for text in [*q.hints.values(), q.hint]:
            if text and text not in found:
                note = f"a hint of {q.name}'s self-check, for a wrong answer"
                found[text] = CourseMessage(text, where, note, False, line=q.cell * 10000 + 1)
    return sorted(found.values(), key=lambda m: (_kind(m.where), m.where))


def hint_messages(root: Path = nbs.ROOT) -> set[str]:
    """The questions' hints (a hidden check may say one too, as its reason)."""
    from autograder.book import questions

    return {t for q in questions.questions(root) for t in [*q.hints.values(), q.hint] if t}


def _hidden(where: str) -> bool:
    return "checks/hidden/" in where.replace("\\", "/")


def _hint(where: str) -> bool:
    """Is the message at ``where`` a question's hint (said only where ``solutions/answers.py`` is)?"""
    return where.replace("\\", "/").startswith("book/")


def _kind(where: str) -> int:
    return 2 if _hint(where) else int(_hidden(where))


def runtime_tables(code: str, root: Path = nbs.ROOT) -> dict[Path, dict[str, str]]:
    """What ``checks/_i18n.py`` reads at run time, from the ``checks`` catalog: the translated
    messages of the visible checks in ``checks/_messages/<locale>.json``, those that only the
    hidden checks say in ``checks/hidden/_messages/<locale>.json``, and the questions' hints
    beside the self-study keys, in ``solutions/_messages/<locale>.json`` (never in a release,
    as the keys: a hint names a wrong answer)."""
    locale = i18n.language(code).locale
    done = i18n.translations(code, i18n.CHECKS, root)
    tables: tuple[dict, dict, dict] = ({}, {}, {})  # visible, hidden, hints
    hints = hint_messages(root)
    for m in check_messages(root):
        if done.get(m.msgid):
            tables[_kind(m.where)][m.msgid] = done[m.msgid]
            if m.msgid in hints and _hidden(m.where):  # a hidden check's reason, and a hint
                tables[2][m.msgid] = done[m.msgid]
    return {
        root / "checks" / "_messages" / f"{locale}.json": tables[0],
        root / "checks" / "hidden" / "_messages" / f"{locale}.json": tables[1],
        root / "solutions" / "_messages" / f"{locale}.json": tables[2],
    }


def runtime_text(table: dict[str, str]) -> str:
    return json.dumps(table, ensure_ascii=False, indent=0, sort_keys=True) + "\n"


def write_runtime(code: str, root: Path = nbs.ROOT) -> list[Path]:
    """Write :func:`runtime_tables` where they differ; return the files written."""
    written = []
    for path, table in runtime_tables(code, root).items():
        text = runtime_text(table)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written
