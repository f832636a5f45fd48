"""The catalogs' audit (autograder/catalogs/audit.py): every translated catalog complete, in step
with the English source and keeping its markup; and each check fails when it should, on a copy
of the sources (``repo``): a changed paragraph, diagram label or feedback message, an
untranslated, fuzzy or obsolete entry."""

from __future__ import annotations

import nbformat
import polib

from autograder import i18n
from autograder import notebooks as nbs
from autograder.catalogs import audit, ui_messages
from tests.i18n import ZH, edit_entry, pofile


def test_translated_catalogs_are_complete_current_and_keep_their_markup():
    """Is every catalog of translated.txt fully translated (nothing fuzzy or empty) and in step
    with the source, and does every translation anywhere keep its roles, code, math, links
    and term pairs, with terms.tsv agreeing with the glossary? Each problem names its place."""
    listed = i18n.manifest(ZH)
    required = {
        "course",
        "sphinx",
        "figures",
        "book/masking",
        "book/glossary",
        "book/intro",
        "README",
    }
    assert required <= set(listed)
    assert all((i18n.catalog_dir(ZH) / f"{d}.po").exists() for d in listed), listed
    problems = list(audit.problems(ZH))
    assert not problems, f"{len(problems)} problem(s):\n" + "\n".join(problems)


def test_every_page_has_a_catalog():
    """Has `make catalogs` made a catalog for every page of the book (the other helpers
    translate into these), and no catalog for a page that is not in the book?"""
    pages_ = set(nbs.toc_files())
    found = {d for d in audit.catalogs(ZH) if d.startswith("book/")}
    assert found == pages_, (sorted(pages_ - found), sorted(found - pages_))


def test_a_changed_english_paragraph_fails_until_make_catalogs(repo):
    """If an English paragraph of a translated chapter changes, does the check name the new
    paragraph's chapter, cell and line, and the stale catalog entry?"""
    path = repo / "book" / "masking.ipynb"
    nb = nbs.read(path)
    index = next(i for i, c in enumerate(nb.cells) if "Take two sequences" in c.source)
    nb.cells[index].source = nb.cells[index].source.replace("Take two", "Take three")
    nbformat.write(nb, path)
    found = audit.completeness_problems(ZH, "book/masking", repo)
    assert any(
        f"book/masking.ipynb, cell {index}, line 3: not in" in p and "Take three" in p
        for p in found
    ), found
    assert any("is no longer in the source" in p and "Take two" in p for p in found), found


def test_untranslated_and_fuzzy_entries_fail(repo):
    edit_entry(repo, "book/masking", "Take two sequences", msgstr="")
    edit_entry(repo, "book/masking", "A plain softmax hands", fuzzy=True)
    found = audit.completeness_problems(ZH, "book/masking", repo)
    assert any("untranslated" in p and "Take two" in p and "cell 2, line 3" in p for p in found)
    assert any("fuzzy" in p and "A plain softmax" in p for p in found), found


def test_obsolete_entries_fail(repo):
    po = pofile(repo, "book/masking")
    po.append(polib.POEntry(msgid="Gone.", msgstr="没了。", obsolete=True))
    po.save()
    assert any("obsolete" in p for p in audit.completeness_problems(ZH, "book/masking", repo))


def test_a_changed_diagram_label_fails_until_make_catalogs(repo):
    """If a label of the diagrams changes in make_diagrams.py, does the check of the catalog
    ``figures`` name the new label's line and the stale entry?"""
    path = repo / ui_messages.DIAGRAMS
    text = path.read_text()
    line = 1 + text[: text.index('tr("runs once")')].count("\n")
    path.write_text(text.replace('tr("runs once")', 'tr("runs only once")'))
    found = audit.completeness_problems(ZH, i18n.FIGURES, repo)
    assert any(
        f"{ui_messages.DIAGRAMS}, line {line}: not in" in p and "runs only once" in p for p in found
    ), found
    assert any("'runs once' is no longer in the source" in p for p in found), found


def test_a_changed_feedback_message_fails_until_make_catalogs(repo):
    """The feedback page's words are messages of ``course``: does a changed one fail the
    catalog's check (new untranslated, old left over)?"""
    path = repo / "autograder/results/feedback.py"
    text = path.read_text()
    assert 'tr("Scores")' in text or "say('Scores')" in text
    path.write_text(text.replace("say('Scores')", "say('Your scores')"))
    found = audit.completeness_problems(ZH, i18n.COURSE, repo)
    assert any("not in" in p and "'Your scores'" in p for p in found), found
    assert any("'Scores' is no longer in the source" in p for p in found), found
