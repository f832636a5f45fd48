"""``make catalogs``' templates and update (autograder/catalogs/__init__.py), on tiny catalogs."""

from __future__ import annotations

import polib

from autograder import catalogs, i18n

ZH = "zh"


def _save(path, entries):
    path.parent.mkdir(parents=True, exist_ok=True)
    po = polib.POFile(wrapwidth=0)
    po.metadata = {"Content-Type": "text/plain; charset=UTF-8"}
    po.extend(entries)
    po.save(str(path))


def test_every_catalog_of_the_tools_has_its_messages():
    assert tuple(catalogs.UI) == i18n.UI_DOMAINS


def test_the_update_moves_each_entry_to_where_its_message_is_now(tmp_path):
    """After code moves, a catalog whose messages did not change (sphinx-intl says "Not
    Changed" and keeps it as it was) names where each message is now, as its template does;
    its translations and flags stay."""
    pot_dir = tmp_path / "pot"
    moved = [("checks/_expect.py", "12"), ("checks/hidden/masking.py", "40")]
    _save(
        pot_dir / "checks.pot",
        [
            polib.POEntry(
                msgid="{name} is wrong", occurrences=moved, flags=["python-brace-format"]
            ),
            polib.POEntry(msgid="Does it stay?", occurrences=[("checks/masking.py", "7")]),
        ],
    )
    po_path = i18n.catalog_path(ZH, "checks", tmp_path)
    _save(
        po_path,
        [
            polib.POEntry(
                msgid="{name} is wrong",
                msgstr="{name} 错了",
                occurrences=[("checks/_core.py", "300")],  # where it was before the move
                flags=["python-brace-format"],
            ),
            polib.POEntry(
                msgid="Does it stay?",
                msgstr="它还在吗？",
                occurrences=[("checks/masking.py", "7")],
                flags=["fuzzy"],
            ),
        ],
    )
    written = catalogs.update(pot_dir, ZH, tmp_path)
    assert written == [po_path]
    po = polib.pofile(str(po_path))
    found = {e.msgid: (e.occurrences, e.msgstr, e.flags) for e in po}
    assert found == {
        "{name} is wrong": (moved, "{name} 错了", ["python-brace-format"]),
        "Does it stay?": ([("checks/masking.py", "7")], "它还在吗？", ["fuzzy"]),
    }
    assert "#: checks/_expect.py:12 checks/hidden/masking.py:40\n" in po_path.read_text()
    assert catalogs.update(pot_dir, ZH, tmp_path) == []  # in step: nothing to write
