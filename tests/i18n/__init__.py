"""Tests of ``autograder.i18n``, one module per module, and the helpers they share with the tests
of ``autograder.catalogs`` and of the translated book: a copy of what the catalogs' checks read
(the fixture ``repo``), a catalog of that copy and one of its entries edited as a translator
would, and a notebook's code cells with their grading metadata."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polib

from autograder import i18n
from autograder import notebooks as nbs
from autograder.catalogs import ui_messages
from autograder.i18n import readme

ZH = "zh"


def pofile(root: Path, domain: str) -> polib.POFile:
    return polib.pofile(str(i18n.catalog_path(ZH, domain, root)), wrapwidth=0)


def edit_entry(root: Path, domain: str, contains: str, **changes) -> polib.POEntry:
    """Change the first entry of catalog ``domain`` whose msgid contains ``contains``: each
    attribute given (a value, or a function of the entry), ``fuzzy=True`` to flag it."""
    po = pofile(root, domain)
    entry = next(e for e in po if contains in e.msgid)
    for key, value in changes.items():
        if key == "fuzzy":
            entry.flags.append("fuzzy")
        else:
            setattr(entry, key, value(entry) if callable(value) else value)
    po.save()
    return entry


def copy_sources(tmp_path: Path) -> Path:
    """A copy of what the checks read: the book, its configuration, the catalogs, the
    READMEs and the tools whose messages are the course's."""
    for name in ("book", "locale"):
        shutil.copytree(nbs.ROOT / name, tmp_path / name)
    for name in ("_config.yml", "_toc.yml", readme.SOURCE, readme.path(ZH).name):
        shutil.copy(nbs.ROOT / name, tmp_path / name)
    for name in ui_messages.TOOL_MODULES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(nbs.ROOT / name, tmp_path / name)
    return tmp_path


def code_cells(nb) -> list[tuple]:
    """The code cells with their grading metadata; the setup cell (the tools', not the book's)
    without the line that chooses the self-checks' language (launch.with_language)."""
    language = 'os.environ.setdefault("COURSE_LANG"'
    return [
        (
            "\n".join(x for x in c.source.splitlines() if not x.startswith(language)),
            json.dumps(c.metadata.get("nbgrader"), sort_keys=True),
        )
        for c in nb.cells
        if c.cell_type == "code"
    ]
