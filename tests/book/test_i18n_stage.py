"""The Chinese book's stage (autograder/book/i18n_stage.py): the pages' English kept for Sphinx
to translate, what Sphinx cannot reach translated, the catalogs and Sphinx settings carried,
and the Chinese diagrams shown."""

from __future__ import annotations

import re
import shutil

import nbformat

from autograder import i18n
from autograder import notebooks as nbs
from autograder.book import i18n_stage
from autograder.book.editions import (
    MODEL_ANSWER_SUMMARY,
    OUTPUTS_NOTE,
    downloadable,
    stage_book,
)
from autograder.i18n import pages
from tests.i18n import ZH

ROOT = nbs.ROOT
EXT = pages.extensions()


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
