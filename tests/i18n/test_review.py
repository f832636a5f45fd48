"""The review of a translation (autograder/i18n/review.py): each check fails on a translation
that breaks what it guards, naming the catalog's line, on a copy of the catalogs."""

from __future__ import annotations

import shutil

import polib
import pytest

from autograder import i18n
from autograder import notebooks as nbs
from autograder.i18n import review
from tests.i18n import ZH, edit_entry

ROOT = nbs.ROOT


@pytest.fixture
def root(tmp_path):
    """What the review reads: the catalogs and terms.tsv, the glossary, the MyST settings."""
    shutil.copytree(ROOT / "locale", tmp_path / "locale")
    (tmp_path / "book").mkdir()
    shutil.copy(ROOT / "book" / "glossary.md", tmp_path / "book" / "glossary.md")
    shutil.copy(ROOT / "_config.yml", tmp_path / "_config.yml")
    return tmp_path


@pytest.mark.parametrize(
    "contains, breaks, expected",
    [
        (
            "{numref}`fig-mask-broadcast` draws",
            lambda s: s.replace("fig-mask-broadcast", "fig"),
            "role",
        ),
        ("Implement `sequence_mask(X", lambda s: s.replace("`value`", "value"), "code"),
        ("Position $j$ of sequence", lambda s: s.replace("$j$", "j"), "math"),
        ("**Learning objectives.**", lambda s: "**学习目标：**学完本章，你将能够", "left as text"),
    ],
)
def test_a_translation_that_breaks_markup_fails(root, contains, breaks, expected):
    """Does a translation that drops a role's target, inline code or math, or leaves ** as
    text (CJK punctuation next to **), fail with its catalog line?"""
    entry = edit_entry(root, "book/masking", contains, msgstr=lambda e: breaks(e.msgstr))
    found = review.markup_problems(ZH, "book/masking", root)
    assert any(expected in p and f"masking.po:{entry.linenum}" in p for p in found), found


def test_a_diagram_label_that_drops_a_field_or_a_term_fails(root):
    """Does a translation of a diagram's label that drops a template's field, or renders a
    term otherwise, fail?"""
    entry = edit_entry(root, i18n.FIGURES, "query heads, g = {g}", msgstr="8 个查询头")
    found = review.markup_problems(ZH, i18n.FIGURES, root)
    assert any(f"figures.po:{entry.linenum}: placeholders" in p for p in found), found
    edit_entry(root, i18n.FIGURES, "keys, values", msgstr="钥匙、值")
    assert any("'key' should be 键" in p for p in review.term_problems(ZH, i18n.FIGURES, root))


@pytest.mark.parametrize(
    "msgstr, ok",
    [
        ("{name} 的形状是 {actual}，应为 {expected}", True),
        ("{name} 的形状是 {actual}", False),  # a field lost
        ("{name} 的形状是 {actual:.3g}，应为 {expected}", False),  # a format spec added
        ("{name} 的形状是 {actual}，应为 {expected} {", False),  # not a template
    ],
)
def test_a_translation_must_keep_the_format_fields(tmp_path, msgstr, ok):
    root = tmp_path
    path = i18n.catalog_path(ZH, i18n.CHECKS, root)
    path.parent.mkdir(parents=True)
    po = polib.POFile()
    po.append(
        polib.POEntry(
            msgid="{name} has shape {actual}, expected {expected}",
            msgstr=msgstr,
            flags=["python-brace-format"],
        )
    )
    po.save(str(path))
    found = review.markup_problems(ZH, i18n.CHECKS, root)
    assert (not found) == ok, found


def test_a_role_may_change_its_title_but_not_its_target():
    assert (
        review.markup("{term}`queries <query>`")["role"]
        == review.markup("{term}`查询 <query>`")["role"]
    )
    assert review.markup("{term}`query`")["role"] != review.markup("{term}`查询`")["role"]


def test_another_rendering_of_a_listed_term_fails_unless_explained(root):
    """Does a translation that renders "query" as 询问 fail, and pass once a translator
    comment says why the term does not apply?"""
    contains = "Take two sequences"
    edit_entry(root, "book/masking", contains, msgstr=lambda e: e.msgstr.replace("查询", "询问"))
    found = review.term_problems(ZH, "book/masking", root)
    assert any("'query' should be 查询" in p for p in found), found
    edit_entry(root, "book/masking", contains, tcomment="terms: query - a test of the escape")
    assert not review.term_problems(ZH, "book/masking", root)


def test_terms_agree_with_the_glossary(root):
    """Does terms.tsv fail when it gives a glossary term another Chinese name than
    book/glossary.md, or leaves a glossary entry out?"""
    assert not review.glossary_problems(ZH, root)
    path = root / "locale" / "zh_CN" / "terms.tsv"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("加性注意力\tadditive", "相加注意力\tadditive"), encoding="utf-8")
    assert any("相加注意力" in p for p in review.glossary_problems(ZH, root))
    path.write_text(
        "\n".join(ln for ln in text.splitlines() if "\tvalid length" not in ln), encoding="utf-8"
    )
    assert any("'valid length' has no line" in p for p in review.glossary_problems(ZH, root))


def test_term_forms_match_whole_words_outside_code():
    term = next(t for t in i18n.terms(ZH) if t.english[0] == "key")
    prose = review._prose
    assert term.pattern.search(prose("each key and the keys"))
    assert not term.pattern.search(prose("the `key` argument, a keyboard, monkey"))
    mha = next(t for t in i18n.terms(ZH) if t.english[0] == "multi-head attention")
    assert mha.pattern.search("Multi-head  attention") and mha.pattern.search(
        "multi head attention"
    )


@pytest.mark.parametrize(
    "msgid, words",
    [
        ("The keys.", True),
        ("`torch.bmm` multiplies", True),
        ("42", False),
        ("\nQ K^T\n", False),  # display math, as Sphinx extracts it
        ("`valid_lens` $n$", False),  # only code and math
        ("{numref}`fig-mask`", False),
    ],
)
def test_a_message_without_words_needs_no_translation(msgid, words):
    assert review.needs_translation(msgid) == words
