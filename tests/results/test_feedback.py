"""Feedback pages (autograder.results.feedback), built from tiny notebooks: fast, no grading run.

The end-to-end proof (every student of a hostile batch gets a page, none has anything
live, in Chromium too) is in tests/test_hostile.py.
"""

import html.parser
import re
import types

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from autograder.results import feedback as fb

XSS = [
    "<script>alert(1)</script>",
    '<img src="x" onerror="alert(1)">',
    '<a href="javascript:alert(1)">x</a>',
    "[x](javascript:alert(1))",
    '<svg onload="alert(1)"></svg>',
    '<iframe srcdoc="<script>alert(1)</script>"></iframe>',
    '<details open ontoggle="alert(1)">x</details>',
    '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
    "<style>body{display:none}</style>",
    '<form action="https://example.org"><input></form>',
    '<base href="https://example.org/">',
    '<link rel="stylesheet" href="https://example.org/x.css">',
    "<object data='x'></object><embed src='x'>",
    '<p style="background:url(https://example.org/track)">x</p>',
]


class _Tags(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attrs = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [(tag, k, v or "") for k, v in attrs]


def _live(page: str) -> list:
    parser = _Tags()
    parser.feed(page)
    bad = [t for t in parser.tags if t in ("script", "iframe", "object", "embed", "form", "link")]
    bad += [t for t in parser.tags if t == "base"]
    bad += [
        (t, k, v)
        for t, k, v in parser.attrs
        if k.startswith("on")
        or "javascript:" in v.lower()
        or k == "style"
        or (t == "meta" and k == "http-equiv" and v != "Content-Security-Policy")
    ]
    return bad


class _Text(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.parts, self.style = [], False

    def handle_starttag(self, tag, attrs):
        self.style = tag == "style"

    def handle_data(self, data):
        if not self.style:
            self.parts.append(data)


def _words(page: str) -> str:
    """The text a reader sees on a page (its stylesheet left out)."""
    parser = _Text()
    parser.feed(page)
    return " ".join(parser.parts)


def _page(**kw) -> fb.Page:
    return fb.Page(student="ada", chapter="masking", title="Masking", **kw)


@pytest.mark.parametrize("payload", XSS)
def test_nothing_in_a_submission_is_live_on_its_page(payload):
    """A payload in a Markdown cell, a written answer, a code cell and an output: is none of
    it live on the page, which still shows the student's text?"""
    written = new_markdown_cell("My answer. " + payload)
    written.metadata["nbgrader"] = {"grade": True, "solution": True, "grade_id": "w", "points": 2}
    test = new_code_cell('checks.run("g", f)')
    test.metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": "t", "points": 1}
    test.outputs = [new_output("error", ename="CheckError", evalue=payload, traceback=[])]
    nb = new_notebook(
        cells=[new_markdown_cell(payload), written, new_code_cell("# " + payload), test]
    )
    nb.metadata["title"] = payload
    page = _page(scores={"t": fb.Score("t", "code", 0, 1, False, True)})
    text = fb.render(page, nb)
    assert _live(text) == []
    assert "My answer." in text


def test_the_page_carries_a_policy_that_lets_nothing_run():
    text = fb.render(_page(), new_notebook())
    start = text.index('content="', text.index("Content-Security-Policy")) + 9
    policy = text[start : text.index('"', start)]
    assert "default-src 'none'" in policy and "script-src 'none'" in policy
    assert "unsafe" not in policy
    style = text[text.index("<style>") + 7 : text.index("</style>")]
    assert fb.csp(style) == policy  # the page's own stylesheet, and only it, by its hash


def test_an_unterminated_hidden_marker_hides_the_rest_and_breaks_nothing():
    """'### BEGIN HIDDEN TESTS' without its END, in a test cell: the rest hidden; in a
    student's own cell: shown as it is; the page built either way."""
    assert fb.hide_hidden_tests("# about\n### BEGIN HIDDEN TESTS\nsecret()") == (
        "# about\n" + fb.HIDDEN_NOTE
    )
    own = new_code_cell("### BEGIN HIDDEN TESTS\nscratch = 1")
    test = new_code_cell('# desc\n### BEGIN HIDDEN TESTS\nchecks.run_hidden("g.x", lambda: f)')
    test.metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": "t", "points": 1}
    text = fb.render(_page(), new_notebook(cells=[own, test]))
    assert "scratch" in text and "run_hidden" not in text and "could not be built" not in text


def test_test_cells_are_named_by_their_checks():
    assert fb.test_label('checks.run("sequence_mask", sequence_mask)') == (
        "Checks of sequence_mask"
    )
    hidden = '# d\n### BEGIN HIDDEN TESTS\nchecks.run_hidden("masked_softmax.edge_cases", f)\n'
    assert fb.test_label(hidden + "### END HIDDEN TESTS") == (
        "Hidden checks of masked_softmax (edge cases)"
    )
    assert fb.test_label("something else") == "Test"


def test_a_huge_notebook_is_cut_and_says_so():
    """Each cell cut at MAX_CELL_CHARS, the page at its budget, and the page says so."""
    cells = [new_markdown_cell("word " * (fb.MAX_CELL_CHARS // 2)) for _ in range(6)]
    text = fb.render(_page(budget=3 * fb.MAX_CELL_CHARS), new_notebook(cells=cells))
    assert text.count("more characters of this cell are not shown") == 3
    assert "its last 3 cells are not shown" in text
    assert "could not be built fully" in text and "too long" in text


def test_a_cell_that_cannot_be_rendered_costs_only_itself(monkeypatch):
    real = fb._markdown

    def fails_once(text):
        if "boom" in text:
            raise ValueError("renderer broke")
        return real(text)

    monkeypatch.setattr(fb, "_markdown", fails_once)
    nb = new_notebook(cells=[new_markdown_cell("boom"), new_markdown_cell("fine text")])
    text = fb.render(_page(), nb)
    assert "fine text" in text and "cell 1 could not be shown" in text


def test_a_page_without_a_notebook_shows_the_scores_and_why():
    page = _page(
        scores={"t": fb.Score("t", "code", 0, 1, False, True)},
        notice=fb.in_plain_words("not a readable notebook (JSONDecodeError: ...)"),
    )
    text = fb.render(page, None)
    assert "not a notebook Jupyter can open" in text and "0 / 1" in text


OUTCOMES = [
    ("graded", None),
    (
        "graded; stopped by the sandbox at cell 40: the notebook used more than 30 s of "
        "CPU time; the test cells after the stop scored 0",
        "stopped at cell 40 because the notebook used more than 30 s of CPU time",
    ),
    ("graded; the kernel died at cell 12 (a crash, os._exit or a kill)", "stopped at cell 12"),
    ("graded; 1 cell(s) waited past the wall clock without computing", "waited"),
    ("graded; warning: the answer cell 'quiz_2_2' is missing", "Note: The answer cell"),
    ("the notebook file is empty", "is empty"),
    ("timed out: the notebook ran longer than 6000 s (wall clock)", "ran for longer"),
    ("stopped: the grader spent more than 120 s of its own CPU", "too long to read"),
    ("something new", "could not be graded"),
]


@pytest.mark.parametrize("outcome, words", OUTCOMES)
def test_what_happened_is_said_in_plain_words(outcome, words):
    said = fb.in_plain_words(outcome)
    if words is None:
        assert said is None
    else:
        assert words in said[0]


def test_scores_and_hand_graded_points_are_named():
    page = _page(
        scores={
            "t": fb.Score("t", "code", 1, 1, False, True),
            "w": fb.Score("w", "markdown", 0, 2, True, False),
        }
    )
    text = fb.render(page, nbformat.v4.new_notebook())
    assert "Score: <strong>1/1 autograded; 2 points to be graded by hand</strong>" in text
    page.scores["w"] = fb.Score("w", "markdown", 1.5, 2, True, True)
    text = fb.render(page, nbformat.v4.new_notebook())
    assert "<strong>1/1 autograded; 1.5/2 graded by hand</strong>" in text
    assert "Student: <strong>ada</strong>" in text


# ---------------------------------------------------------------- in the chapter's language


def test_a_chinese_page_speaks_chinese_and_an_english_one_is_unchanged():
    """A page in Chinese (a chapter released in Chinese): are its own words those of the
    course catalog, its scores' words included, with <html lang="zh-CN">, and is none of the
    English page's words left? The English page keeps its words and <html lang="en">."""
    scores = {
        "t": fb.Score("t", "code", 1, 1, False, True),
        "w": fb.Score("w", "markdown", 0, 2, True, False),
    }
    test = new_code_cell(
        '# d\n### BEGIN HIDDEN TESTS\nchecks.run_hidden("masked_softmax.edge", f)\n'
        "### END HIDDEN TESTS"
    )
    test.metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": "t", "points": 1}
    written = new_markdown_cell("我的回答")
    written.metadata["nbgrader"] = {"grade": True, "solution": True, "grade_id": "w", "points": 2}
    nb = new_notebook(cells=[new_markdown_cell("# 掩蔽"), test, written])
    outcome = "graded; the kernel died at cell 12 (a crash, os._exit or a kill)"

    def page(lang):
        notice = fb.in_plain_words(outcome, lang)
        p = fb.Page("ada", "masking", "掩蔽", "2026-11-26", dict(scores), 1.0, notice, lang=lang)
        p.partial.append(p.tr("some cells are too long to show in full"))
        return fb.render(p, nb)

    english, chinese = page("en"), page("zh")
    assert '<html lang="en">' in english and '<html lang="zh-CN">' in chinese
    for words in (
        "Score: <strong>1/1 autograded; 2 points to be graded by hand</strong>.",
        "Late penalty: −1.",
        "Student: <strong>ada</strong> · Chapter: masking · Submitted: 2026-11-26",
        "Hidden checks of masked_softmax (edge)",
        "Your written answer (w)",
        "to be graded by hand (2 points)",
        "Its Python process stopped at cell 12",
        "This page could not be built fully: some cells are too long to show in full.",
        "<h2>Scores</h2>",
        fb.HIDDEN_NOTE,
    ):
        assert words in english, words
    for words in (
        "分数：<strong>自动评分 1/1；2 分待人工评分</strong>。",
        "迟交扣分：−1。",
        "学生：<strong>ada</strong> · 章节：masking · 提交时间：2026-11-26",
        "<h1>反馈：掩蔽</h1>",
        "masked_softmax (edge) 的隐藏检查",
        "你的书面回答（w）",
        "待人工评分（2 分）",
        "第 12 个单元格",
        "本页面未能完整生成：有些单元格太长，无法完整显示。",
        "# 这些隐藏测试的代码不予显示",
    ):
        assert words in chinese, words
    text = _words(chinese)
    for words in ("Score", "Student", "Chapter", "Feedback", "graded", "hidden", "Your", "cell"):
        assert words not in text, (words, text)


@pytest.mark.parametrize("outcome", [o for o, w in OUTCOMES if w is not None])
def test_what_happened_is_said_in_chinese_too(outcome):
    """Every outcome the English page puts in words has Chinese words (what the grader's
    record names, a limit of the sandbox, stays as the record has it)."""
    english, chinese = fb.in_plain_words(outcome), fb.in_plain_words(outcome, "zh")
    assert chinese[1] == english[1]
    assert re.search(r"[\u4e00-\u9fff]", chinese[0]) and chinese[0] != english[0]
    assert not re.search(r"\b(Your|It|Its|Every|Ask)\b", chinese[0]), chinese[0]


def test_the_page_speaks_the_language_the_chapter_was_released_in(tmp_path):
    """The language of a chapter's pages is its release's (the source notebook's metadata,
    which Course(lang=...) writes); English where it says none or there is no release."""
    course = types.SimpleNamespace(root=tmp_path)
    assert fb.released_language(course, "masking") == "en"
    src = tmp_path / "source" / "masking"
    src.mkdir(parents=True)
    nb = new_notebook(cells=[new_markdown_cell("# 掩蔽\n\n正文")])
    nbformat.write(nb, src / "masking.ipynb")
    assert fb.released_language(course, "masking") == "en"
    nb.metadata["language"] = "zh_CN"
    nbformat.write(nb, src / "masking.ipynb")
    assert fb.released_language(course, "masking") == "zh"
    assert fb._title("masking", course) == "掩蔽"  # the release's title, in its language
