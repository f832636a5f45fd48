"""The Chinese edition: catalogs complete and in step with the English source, translations that
keep every role, code span, formula and term, and notebooks translated from the same catalogs.

Fast (part of `make check`): the catalogs listed in ``locale/zh_CN/translated.txt`` are read
with polib and compared with the messages of the source found by :mod:`autograder.i18n`, which
finds what Sphinx's gettext builder finds (``make catalogs`` stops if the two ever disagree).
That each check of a translation's markup and terms fails when it should is
tests/i18n/test_review.py's.
"""

from __future__ import annotations

import json
import re
import shutil

import nbformat
import polib
import pytest

from autograder import catalogs, i18n
from autograder import notebooks as nbs
from autograder.book import i18n_stage, launch, launchables
from autograder.book.editions import (
    MODEL_ANSWER_SUMMARY,
    OUTPUTS_NOTE,
    YOUR_ANSWER,
    downloadable,
    stage_book,
)
from autograder.book.i18n_extension import switch_url
from autograder.catalogs import audit, ui_messages
from autograder.i18n import markdown, pages, readme
from autograder.i18n.review import needs_translation
from tests.i18n import ZH, edit_entry, pofile

ROOT = nbs.ROOT
EXT = pages.extensions()


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


# ---------------------------------------------------------------- the checks can fail


@pytest.fixture
def repo(tmp_path):
    """A copy of what the checks read: the book, its configuration, the catalogs, the
    READMEs and the tools whose messages are the course's."""
    for name in ("book", "locale"):
        shutil.copytree(ROOT / name, tmp_path / name)
    for name in ("_config.yml", "_toc.yml", readme.SOURCE, readme.path(ZH).name):
        shutil.copy(ROOT / name, tmp_path / name)
    for name in ui_messages.TOOL_MODULES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


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
    catalog's check (new untranslated, old left over), and is a ``tr`` of something that is
    not a literal string an error (its text could not be translated)?"""
    path = repo / "autograder/results/feedback.py"
    text = path.read_text()
    assert 'tr("Scores")' in text or "say('Scores')" in text
    path.write_text(text.replace("say('Scores')", "say('Your scores')"))
    found = audit.completeness_problems(ZH, i18n.COURSE, repo)
    assert any("not in" in p and "'Your scores'" in p for p in found), found
    assert any("'Scores' is no longer in the source" in p for p in found), found
    path.write_text(text + "\n\ndef later(page, name):\n    return page.tr(name)\n")
    with pytest.raises(ui_messages.ToolMessageError, match="feedback.py:.*literal string"):
        ui_messages.tool_messages(repo)


# ---------------------------------------------------------------- the README's student part


def test_the_readme_catalog_holds_the_student_part():
    """Are the README catalog's messages those of README.md from its title to the end of
    its student part (not the line linking the translation), and the link back?"""
    found = [m.msgid for m in readme.messages()]
    assert found[0] == "Attention, Step by Step" and found[-1] == readme.BACK
    assert "How to run a chapter" in found and "Three commands" not in found
    assert not [m for m in found if readme.path(ZH).name in m]


def test_the_chinese_readme_is_what_make_catalogs_makes():
    """Is README.zh-CN.md exactly what the current README.md and README.po make, and is it
    Chinese, linking back to README.md (which links to it)?"""
    assert not readme.drift(ZH), readme.drift(ZH)
    text = readme.path(ZH).read_text(encoding="utf-8")
    assert text.startswith("<!-- Generated by `make catalogs`")
    assert "# 注意力，一步一步" in text and "](README.md)" in text
    assert "](README.zh-CN.md)" in (ROOT / readme.SOURCE).read_text(encoding="utf-8")


def test_a_hand_edited_or_missing_chinese_readme_fails(repo):
    path = readme.path(ZH, repo)
    path.write_text(path.read_text(encoding="utf-8").replace("开始之前", "开始以前"))
    found = readme.drift(ZH, repo)
    assert found and "README.zh-CN.md:" in found[0] and "run `make catalogs`" in found[0], found
    path.unlink()
    assert "README.zh-CN.md: missing" in readme.drift(ZH, repo)[0]


def test_a_readme_without_its_markers_is_an_error(repo):
    source = repo / readme.SOURCE
    text = source.read_text(encoding="utf-8")
    source.write_text(text.replace("中文版：[README.zh-CN.md](README.zh-CN.md)", "中文版"))
    with pytest.raises(readme.ReadmeError, match="no line linking to README.zh-CN.md"):
        readme.text(ZH, repo)
    source.write_text(text.replace(readme.END, "<!-- "))
    with pytest.raises(readme.ReadmeError, match="student part"):
        readme.messages(repo)


def test_a_changed_english_readme_paragraph_fails_until_make_catalogs(repo, tmp_path):
    """If a paragraph of the README's student part changes, do the catalog check and the
    Chinese README's check fail, naming README.md's line; does the README's share of `make
    catalogs` make the entry fuzzy and the file current; and once a translator clears the
    entry, does the file fail again until the next `make catalogs`?"""
    source = repo / readme.SOURCE
    text = source.read_text(encoding="utf-8")
    source.write_text(text.replace("it does nothing, elsewhere", "it does nothing; elsewhere"))
    line = 1 + next(i for i, ln in enumerate(text.split("\n")) if "Every chapter is a" in ln)
    found = audit.completeness_problems(ZH, readme.DOMAIN, repo)
    assert any(f"README.md, line {line}: not in locale/zh_CN" in p for p in found), found
    assert any("README.po" in p and "no longer in the source" in p for p in found), found
    assert readme.drift(ZH, repo)
    # What `make catalogs` does for the README (with only the README's template, update()
    # removes this copy's other catalogs, which this test does not read).
    pot_dir = tmp_path / "pot"
    pot_dir.mkdir()
    catalogs.write_readme_template(pot_dir, repo)
    catalogs.update(pot_dir, ZH, repo)
    assert readme.write(ZH, repo) and not readme.drift(ZH, repo)
    found = audit.completeness_problems(ZH, readme.DOMAIN, repo)
    assert len(found) == 1 and f"README.md, line {line}: fuzzy" in found[0], found
    edit_entry(repo, readme.DOMAIN, "nothing; elsewhere", flags=[])
    assert not audit.completeness_problems(ZH, readme.DOMAIN, repo)
    assert readme.drift(ZH, repo)
    readme.write(ZH, repo)
    assert not readme.drift(ZH, repo)


# ---------------------------------------------------------------- finding and replacing messages


@pytest.mark.parametrize("page", nbs.toc_files())
def test_every_message_is_replaced_in_place(page):
    """Does every message of every page (lists, tables, figures, glossaries, admonitions) get
    its translation in its own place: translating each one to a marked copy and reading the
    text again gives exactly the marked messages, display math untouched?"""
    path = pages.page_file(page)
    texts = (
        [path.read_text()]
        if path.suffix == ".md"
        else [c.source for c in nbs.read(path).cells if c.cell_type == "markdown"]
    )
    mark = lambda m: f"《{m}》"  # noqa: E731
    for text in texts:
        before = markdown.blocks(text, EXT)
        out, missing = markdown.translate(text, mark, EXT)
        assert not missing
        after = [b.msgid for b in markdown.blocks(out, EXT)]
        assert after == [b.msgid if b.kind == "math" else mark(b.msgid) for b in before]


def test_markdown_messages_are_those_sphinx_makes():
    text = """\
# A *title*

A paragraph
over two lines with `code` and $x$.

- item one
  continued
- item two

| a | b |
| - | - |
| `x` | c d |

```{figure} f.svg
:name: fig-f
:alt: The alt text.

The caption.
```

```{admonition} A title
:class: dropdown

Inside.
```

```python
code is not a message
```

$$
y = x
$$ (eq-y)
"""
    found = [(b.kind, b.msgid) for b in markdown.blocks(text, EXT)]
    assert found == [
        ("heading", "A *title*"),
        ("paragraph", "A paragraph over two lines with `code` and $x$."),
        ("paragraph", "item one continued"),
        ("paragraph", "item two"),
        ("cell", "a"),
        ("cell", "b"),
        ("cell", "`x`"),
        ("cell", "c d"),
        ("alt", "The alt text."),
        ("paragraph", "The caption."),
        ("title", "A title"),
        ("paragraph", "Inside."),
        ("math", "\ny = x\n"),
    ]
    out, _ = markdown.translate(text, lambda m: {"item one continued": "第一项"}.get(m), EXT)
    assert "- 第一项\n- item two" in out


def test_an_unknown_directive_is_an_error():
    with pytest.raises(markdown.UnknownDirective, match="mystery"):
        markdown.blocks("```{mystery}\ntext\n```\n", EXT)


# ---------------------------------------------------------------- notebooks from the catalogs


def _code(nb) -> list[tuple]:
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


def test_downloads_of_translated_chapters_are_chinese_and_share_the_code():
    """Is every markdown cell and figure text of a translated chapter's notebook Chinese, and
    is every code cell, with its grading metadata, the English one?"""
    for page in i18n.manifest(ZH):
        if not page.startswith("book/") or pages.page_file(page).suffix != ".ipynb":
            continue
        english = nbs.read(pages.page_file(page))
        table = pages.lookup_for(ZH, page)
        cells, missing = pages.translate_cells(english.cells, table)
        assert not [m for m in missing if needs_translation(m)], (page, missing[:3])
        zh = nbformat.from_dict({**english, "cells": cells})
        assert _code(zh) == _code(english), page
        assert [c.cell_type for c in zh.cells] == [c.cell_type for c in english.cells]
        heading = next(c for c in zh.cells if c.cell_type == "markdown").source
        assert re.search(r"[\u4e00-\u9fff]", heading), heading


def test_launchables_and_release_in_chinese_keep_grades(tmp_path):
    """Do the Chinese launchable notebook and the Chinese release of a chapter have the same
    code, grade ids and points as the English ones, with Chinese text and README?"""
    from autograder.course import Course

    path = nbs.notebook_path("masking")
    en, zh = (
        launchables.launchable(nbs.read(path)),
        launchables.launchable(nbs.read(path), lang=ZH, page="book/masking"),
    )
    assert _code(en) == _code(zh)
    assert YOUR_ANSWER["student"] in [c.source for c in en.cells]
    assert i18n.gettext(ZH, YOUR_ANSWER["student"]) in [c.source for c in zh.cells]
    assert i18n.gettext(ZH, YOUR_ANSWER["student"]) != YOUR_ANSWER["student"]
    sources = {}
    for lang, figure in [("en", "masking.svg"), (ZH, "zh_CN/masking.svg")]:
        src = Course(tmp_path / lang, lang=lang).stage_source("masking")
        sources[lang] = nbs.read(src / "masking.ipynb"), (src / "README.md").read_text()
        # the diagram in the release's language, where the notebook looks for it
        assert (src / "figures/masking.svg").read_bytes() == (
            ROOT / "book/figures" / figure
        ).read_bytes()
    assert _code(sources["en"][0]) == _code(sources[ZH][0])
    assert sources[ZH][1].startswith("# 掩蔽：如何运行本章")
    assert sources[ZH][0].metadata["language"] == "zh_CN"


def test_chinese_launch_folder(tmp_path):
    written = launchables.write_launchables(tmp_path / "zh", lang=ZH)
    chapters = {p.name for p in nbs.chapter_notebooks()}
    assert {p.name for p in written} == chapters | {"intro.ipynb"}
    assert "开始之前" in nbformat.writes(nbs.read(tmp_path / "zh" / "intro.ipynb"))
    assert (tmp_path / "zh" / "checks").is_dir() and (tmp_path / "zh" / "solutions").is_dir()
    assert "可运行的笔记本" in (tmp_path / "zh" / "README.md").read_text()
    assert "# 掩蔽" in nbs.read(tmp_path / "zh" / "masking.ipynb").cells[0].source
    assert (tmp_path / "zh/figures/masking.svg").read_bytes() == (
        ROOT / "book/figures/zh_CN/masking.svg"
    ).read_bytes()
    urls = launch.launch_urls("zh/masking")
    assert urls["Colab"].endswith("/blob/notebooks/zh/masking.ipynb")
    # the setup cell chooses the self-checks' language (Colab's kernel cannot read the
    # notebook's): the one line by which it differs from the English one
    english = launchables.write_launchables(tmp_path / "en")
    setups = [
        next(c.source for c in nbs.read(p).cells if launch.is_setup(c))
        for p in (tmp_path / "zh" / "masking.ipynb", tmp_path / "en" / "masking.ipynb")
    ]
    line = 'os.environ.setdefault("COURSE_LANG", "zh")'
    assert line in setups[0] and "COURSE_LANG" not in setups[1] and english
    assert [x for x in setups[0].splitlines() if line not in x] == setups[1].splitlines()


def test_stage_of_the_chinese_book(tmp_path):
    """Does the Chinese stage keep the pages' English (Sphinx translates them) but translate
    what Sphinx cannot reach, and carry the catalogs and the Sphinx settings?"""
    stage_book(tmp_path, edition="reader", lang=ZH)
    import yaml

    config = yaml.safe_load((tmp_path / "_config.yml").read_text())
    assert config["title"] == "注意力，一步一步"
    assert config["sphinx"]["config"]["language"] == "zh_CN"
    assert config["sphinx"]["config"]["nb_code_prompt_show"] == "显示解答"
    assert (tmp_path / "locale/zh_CN/LC_MESSAGES/book/masking.po").exists()
    assert "有效长度" in (tmp_path / i18n_stage.SEARCH_WORDS).read_text()
    nb = nbs.read(tmp_path / "book" / "masking.ipynb")
    text = nbformat.writes(nb)
    assert "# Masking" in text  # Sphinx translates the markdown itself
    assert i18n.gettext(ZH, OUTPUTS_NOTE["reader"]) in [c.source for c in nb.cells]
    alts = [
        c.metadata["mystnb"]["image"]["alt"]
        for c in nb.cells
        if "mystnb" in c.metadata and "image" in c.metadata["mystnb"]
    ]
    assert alts and all(re.search(r"[\u4e00-\u9fff]", a) for a in alts)
    # the Chinese diagrams, where Sphinx's figure_language_filename finds them
    assert config["sphinx"]["config"]["figure_language_filename"] == i18n.FIGURE_LANGUAGE_FILENAME
    assert (tmp_path / "book/figures/zh_CN/masking.svg").read_bytes() == (
        ROOT / "book/figures/zh_CN/masking.svg"
    ).read_bytes()
    # its download (what the build's _write_downloads writes): the model answer's fold Chinese
    download = i18n_stage.translate_chapter(downloadable(nb), ZH, "book/masking")
    folds = re.findall(r"<summary>([^<]*)</summary>", nbformat.writes(download))
    summary = i18n.gettext(ZH, MODEL_ANSWER_SUMMARY)
    assert summary != MODEL_ANSWER_SUMMARY and folds.count(summary) == 1, folds
    assert all(re.search(r"[\u4e00-\u9fff]", f) for f in folds), folds


@pytest.mark.parametrize(
    "page, here, there, url",
    [
        ("book/masking", "en", "zh", "../zh/book/masking.html"),
        ("book/masking", "zh", "en", "../../book/masking.html"),
        ("search", "en", "zh", "zh/search.html"),
        ("search", "zh", "en", "../search.html"),
    ],
)
def test_switcher_links_are_relative(page, here, there, url):
    assert switch_url(page, i18n.language(here), i18n.language(there)) == url


def test_pages_not_fully_translated_say_so(monkeypatch):
    """Does a page whose catalog is not in translated.txt get the notice, in Chinese, and a
    complete page none?"""
    from autograder.book.i18n_extension import INCOMPLETE, incomplete, incomplete_notice

    listed = [d for d in i18n.manifest(ZH) if d != "book/masking"]
    monkeypatch.setattr(i18n, "manifest", lambda code, root=ROOT: listed)
    assert incomplete(ZH, "book/masking") and not incomplete(ZH, "book/glossary")
    assert not incomplete(ZH, "search")
    notice = incomplete_notice(ZH)
    assert i18n.gettext(ZH, INCOMPLETE) in notice and INCOMPLETE not in notice


def test_the_chinese_book_shows_the_chinese_diagrams(tmp_path):
    """Does a page of the Chinese book show the Chinese diagram? The Sphinx settings of the
    Chinese stage, given to a Sphinx build of a chapter's figure cell with myst-nb (as the
    book parses it), make the page's image the file of book/figures/zh_CN/; without them
    (the English book) it is the English one."""
    import yaml
    from sphinx.application import Sphinx

    text = i18n_stage.localize_config((ROOT / "_config.yml").read_text(), ZH, "reader")
    settings = yaml.safe_load(text)["sphinx"]["config"]
    assert settings["figure_language_filename"] == i18n.FIGURE_LANGUAGE_FILENAME
    chapter = nbs.read(nbs.notebook_path("masking"))
    cell = next(c for c in chapter.cells if c.cell_type == "markdown" and "{figure}" in c.source)
    assert "figures/masking.svg" in cell.source
    figures = ROOT / "book" / "figures"
    for code, shown in [(ZH, figures / "zh_CN" / "masking.svg"), ("en", figures / "masking.svg")]:
        src = tmp_path / code
        shutil.copytree(figures, src / "figures", ignore=shutil.ignore_patterns("*.py"))
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(cell.source)])
        nb.metadata = chapter.metadata
        nbformat.write(nb, src / "page.ipynb")
        (src / "conf.py").write_text("")
        config = {
            "extensions": ["myst_nb"],
            "myst_enable_extensions": sorted(EXT),
            "nb_execution_mode": "off",
            "root_doc": "page",
            "language": i18n.language(code).locale,
        }
        if code != "en":
            config["figure_language_filename"] = settings["figure_language_filename"]
        out = src / "_build"
        Sphinx(src, src, out, out / ".doctrees", "html", config, status=None).build()
        html = (out / "page.html").read_text(encoding="utf-8")
        images = re.findall(r'<img [^>]*src="([^"]+\.svg)"', html)
        assert images == ["_images/masking.svg"], images
        assert (out / images[0]).read_bytes() == shown.read_bytes(), f"{code}: not {shown}"
