"""The launchable notebooks (autograder/book/launchables.py), in Chinese: the same code, grade
ids and points as the English ones, Chinese text, the setup cell choosing the self-checks'
language, and the chapter's diagram in the release's language."""

from __future__ import annotations

import nbformat

from autograder import i18n
from autograder import notebooks as nbs
from autograder.book import launch, launchables
from autograder.book.editions import YOUR_ANSWER
from tests.i18n import ZH, code_cells

ROOT = nbs.ROOT


def test_launchables_and_release_in_chinese_keep_grades(tmp_path):
    """Do the Chinese launchable notebook and the Chinese release of a chapter have the same
    code, grade ids and points as the English ones, with Chinese text and README?"""
    from autograder.course import Course

    path = nbs.notebook_path("masking")
    en, zh = (
        launchables.launchable(nbs.read(path)),
        launchables.launchable(nbs.read(path), lang=ZH, page="book/masking"),
    )
    assert code_cells(en) == code_cells(zh)
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
    assert code_cells(sources["en"][0]) == code_cells(sources[ZH][0])
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
