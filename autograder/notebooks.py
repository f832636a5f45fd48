"""Reading the course: which chapter notebooks exist, in which order, and their cells.

The book's table of contents (``_toc.yml``) is the one list of chapters. A
chapter with exercises is a notebook under ``book/``; its file stem is also
its nbgrader assignment name.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from pathlib import Path

import nbformat
import yaml

from autograder.errors import CourseError

ROOT = Path(__file__).resolve().parent.parent
SAVE_LINE = re.compile(r"^#\s?@save\s+(?P<module>[a-z_][a-z0-9_]*)\s*$")  # ruff writes "# @save"
SOLUTION_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")
HIDDEN_MARKERS = ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")
# Code cells after a chapter's last test cell that no grade depends on (training loops,
# benchmarks, long plots) carry this tag; the grader does not run them.
DEMO_TAG = "demo"


# Parsed files, keyed by path and content: a test run (or a grading run) asks for the table of
# contents and the same notebooks thousands of times, and parsing is what costs (a chapter
# notebook takes ~20 ms to parse and validate, ~0.1 ms to read and hash). Keyed by content, not
# by mtime, so that a file rewritten within one clock tick is never served stale.
_PARSED: OrderedDict[tuple, object] = OrderedDict()
_PARSED_MAX = 64


def _parsed(path: Path, parse):
    """``parse(text)`` of the file at ``path``, parsed once per content (a small LRU cache)."""
    data = Path(path).read_bytes()
    key = (parse, str(path), data)
    if key in _PARSED:
        _PARSED.move_to_end(key)
        return _PARSED[key]
    value = _PARSED[key] = parse(data.decode("utf-8"))
    if len(_PARSED) > _PARSED_MAX:
        _PARSED.popitem(last=False)
    return value


def _copy(node):
    """A deep copy of a parsed notebook (JSON types only), ten times faster than parsing again."""
    if isinstance(node, dict):
        return nbformat.NotebookNode({k: _copy(v) for k, v in node.items()})
    if isinstance(node, list):
        return [_copy(v) for v in node]
    return node


def toc_files(root: Path = ROOT) -> list[str]:
    """Every page of the book, in reading order, as paths without suffix."""
    return list(_parsed(root / "_toc.yml", _toc_files))


def _toc_files(text: str) -> tuple[str, ...]:
    toc = yaml.safe_load(text)
    files = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return tuple(files)


def chapter_notebooks(root: Path = ROOT) -> list[Path]:
    """The chapter notebooks, in the order of the table of contents."""
    paths = [root / f"{f}.ipynb" for f in toc_files(root)]
    return [p for p in paths if p.exists()]


def chapter_names(root: Path = ROOT) -> list[str]:
    return [p.stem for p in chapter_notebooks(root)]


def notebook_path(chapter: str, root: Path = ROOT) -> Path:
    for path in chapter_notebooks(root):
        if path.stem == chapter:
            return path
    known = ", ".join(chapter_names(root))
    raise CourseError(f"no chapter named {chapter!r}; the chapters are: {known}")


def read(path: Path) -> nbformat.NotebookNode:
    """The notebook at ``path`` (nbformat 4, validated): a fresh copy the caller may change."""
    return _copy(_parsed(path, _parse_notebook))


def _parse_notebook(text: str) -> nbformat.NotebookNode:
    return nbformat.reads(text, as_version=4)


def nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def is_solution(cell) -> bool:
    return bool(nbgrader_meta(cell).get("solution"))


def is_test(cell) -> bool:
    meta = nbgrader_meta(cell)
    return bool(meta.get("grade")) and not meta.get("solution")


def strip_lines(source: str, drop) -> str:
    """Remove every line for which ``drop(line.strip())`` is true."""
    return "\n".join(line for line in source.splitlines() if not drop(line.strip()))


def without_markers(source: str) -> str:
    """The cell as a reader or the solutions package sees it: no #@save, no solution markers."""
    return strip_lines(source, lambda s: bool(SAVE_LINE.match(s)) or s in SOLUTION_MARKERS)


def without_hidden_tests(source: str) -> str:
    """The cell with every hidden-test region removed."""
    out, hidden = [], False
    for line in source.splitlines():
        if line.strip() == HIDDEN_MARKERS[0]:
            hidden = True
        elif line.strip() == HIDDEN_MARKERS[1]:
            hidden = False
        elif not hidden:
            out.append(line)
    return "\n".join(out)


def saved_module(cell) -> str | None:
    """The module a ``#@save <module>`` code cell exports to, or None."""
    if cell.cell_type != "code" or not cell.source:
        return None
    match = SAVE_LINE.match(cell.source.splitlines()[0].strip())
    return match["module"] if match else None


def write_if_changed(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` unless it holds exactly that (its time then stays, and a
    build that watches times rebuilds nothing)."""
    if path.exists() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
