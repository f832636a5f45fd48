"""The messages of every page of the book, and notebooks translated from the catalogs.

A page's messages are those Sphinx's gettext builder extracts from it (see
:mod:`.markdown`), found here in the *source* (``book/<page>.ipynb`` or ``.md``), so that
each has a place a translator can open: ``book/masking.ipynb, cell 7, line 3``. A model
answer, which the reader edition shows inside a dropdown, has the same messages as its
cell. Three kinds come from elsewhere:

- the captions of the book's parts (``_toc.yml``), on the root page;
- a code cell's figure caption, image alt text and fold prompts (``metadata.mystnb``): the
  builds and downloads translate these in the notebook itself, since Sphinx never sees
  the alt text and prompts as text (``catalogs`` adds them to the templates);
- the notes and prompts that ``autograder.book.editions`` adds: ``course.po``, not a page.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nbformat
import yaml

from autograder import notebooks as nbs
from autograder.i18n import markdown

METADATA = (  # (path in metadata.mystnb, kind); Sphinx extracts the caption itself
    (("figure", "caption"), "caption"),
    (("image", "alt"), "output-alt"),
    (("code_prompt_show",), "prompt"),
    (("code_prompt_hide",), "prompt"),
)
SPHINX_MISSES = {"output-alt", "prompt"}  # metadata kinds that are not in Sphinx's templates
# A dropdown folded for Jupyter (autograder.book.launch.plain_dropdowns): its title is the
# admonition title's message.
_SUMMARY = re.compile(r"<summary>([^<\n]+)</summary>")


@dataclass(frozen=True)
class Message:
    msgid: str
    file: str  # relative to the repository: book/masking.ipynb
    line: int  # 1-based: in the cell, or in the file
    cell: int | None = None  # index of the cell in the notebook
    kind: str = "paragraph"

    @property
    def where(self) -> str:
        cell = f", cell {self.cell}" if self.cell is not None else ""
        return f"{self.file}{cell}, line {self.line}"


@functools.cache
def extensions(root: Path = nbs.ROOT) -> frozenset[str]:
    """The MyST extensions the book enables (``parse.myst_enable_extensions``)."""
    config = yaml.safe_load((root / "_config.yml").read_text())
    return frozenset((config.get("parse") or {}).get("myst_enable_extensions") or ())


def page_file(page: str, root: Path = nbs.ROOT) -> Path:
    for suffix in (".ipynb", ".md"):
        if (root / f"{page}{suffix}").exists():
            return root / f"{page}{suffix}"
    raise FileNotFoundError(f"no page {page} (.ipynb or .md) under {root}")


def toc_captions(root: Path = nbs.ROOT) -> list[str]:
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    return [part["caption"] for part in toc.get("parts", []) if part.get("caption")]


def _metadata(cell) -> list[tuple[tuple[str, ...], str, str]]:
    """(path, kind, text) of each translatable string in a code cell's ``metadata.mystnb``."""
    found = []
    for path, kind in METADATA:
        value = cell.get("metadata", {}).get("mystnb", {})
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, str) and value.strip():
            found.append((path, kind, value))
    return found


def page_messages(page: str, root: Path = nbs.ROOT) -> list[Message]:
    """Every message of ``page`` (``book/masking``), in order, with its place in the source."""
    path = page_file(page, root)
    rel = path.relative_to(root).as_posix()
    ext = extensions(root)
    found = []
    if page == nbs.toc_files(root)[0]:
        found += [Message(c, "_toc.yml", 1, kind="toc") for c in toc_captions(root)]
    if path.suffix == ".md":
        for b in markdown.blocks(path.read_text(), ext):
            found.append(Message(b.msgid, rel, b.start + 1, kind=b.kind))
        return found
    for i, cell in enumerate(nbs.read(path).cells):
        if cell.cell_type == "markdown":
            for b in markdown.blocks(cell.source, ext):
                found.append(Message(b.msgid, rel, b.start + 1, i, b.kind))
        elif cell.cell_type == "code":
            for _, kind, text in _metadata(cell):
                found.append(Message(markdown.message(text), rel, 1, i, kind))
    return found


def translate_cells(
    cells: list,
    lookup: Callable[[str], str | None],
    root: Path = nbs.ROOT,
    *,
    metadata: Callable[[str], str | None] | None = None,
) -> tuple[list, list[str]]:
    """Copies of ``cells`` with their markdown translated where ``lookup`` has a translation,
    and their figure and fold texts where ``metadata`` (default: ``lookup``) has one; code is
    untouched. Also the msgids left as they were."""
    ext = extensions(root)
    metadata = metadata or lookup
    out, missing = [], []
    for cell in cells:
        cell = copy.deepcopy(cell)
        if cell.cell_type == "markdown":
            cell.source, left = markdown.translate(cell.source, lookup, ext)
            cell.source = _SUMMARY.sub(
                lambda m: f"<summary>{lookup(m[1]) or m[1]}</summary>", cell.source
            )
            missing += [b.msgid for b in left]
        elif cell.cell_type == "code":
            for path, _, text in _metadata(cell):
                msgstr = metadata(markdown.message(text))
                if not msgstr:
                    missing.append(markdown.message(text))
                    continue
                holder = cell.metadata["mystnb"]
                for key in path[:-1]:
                    holder = holder[key]
                holder[path[-1]] = msgstr
        out.append(cell)
    return out, missing


def lookup_for(code: str, page: str | None, root: Path = nbs.ROOT) -> Callable[[str], str | None]:
    """Translations of a page's catalog, then of the course's own messages."""
    from autograder import i18n

    tables = [i18n.translations(code, i18n.COURSE, root)]
    if page:
        tables.insert(0, i18n.translations(code, page, root))

    def lookup(msgid: str) -> str | None:
        for table in tables:
            if table.get(msgid):
                return table[msgid]
        return None

    return lookup


def translate_notebook(
    nb: nbformat.NotebookNode, code: str, page: str, root: Path = nbs.ROOT
) -> nbformat.NotebookNode:
    """``nb`` (a chapter, in any edition) in language ``code``: its markdown cells and its
    figure texts from the page's catalog and ``course.po``. English returns ``nb`` as it is.
    Its setup cell is the book's (:func:`autograder.book.i18n_stage.translate_chapter` sets the
    self-checks' language there too)."""
    from autograder import i18n

    if code == i18n.SOURCE:
        return nb
    nb = copy.deepcopy(nb)
    nb.cells, _ = translate_cells(nb.cells, lookup_for(code, page, root), root)
    nb.metadata["language"] = i18n.language(code).locale
    return nb


def translate_text(text: str, code: str, page: str, root: Path = nbs.ROOT) -> str:
    """A Markdown page (or a MyST notebook as text) in language ``code``."""
    from autograder import i18n

    if code == i18n.SOURCE:
        return text
    out, _ = markdown.translate(text, lookup_for(code, page, root), extensions(root))
    return out
