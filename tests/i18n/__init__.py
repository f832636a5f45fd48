"""Tests of ``autograder.i18n``, one module per module (the rest are in tests/test_i18n.py),
and the helpers they share with tests/test_i18n.py: a catalog of a copy, and one of its
entries edited as a translator would."""

from __future__ import annotations

from pathlib import Path

import polib

from autograder import i18n

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
