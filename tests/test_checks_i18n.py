"""The checks' language (checks/_i18n.py): chosen, found at run time, and words only."""

import io
import json
import os
from contextlib import redirect_stdout

import pytest

import checks
from autograder import i18n
from autograder import notebooks as nbs
from autograder.catalogs import checks_messages
from checks import CheckError, _i18n, _runner
from checks._core import REGISTRY
from tests._sweep import first_only, one_per
from tests.wrong import load, reference

ZH = "zh"
checks.groups()  # the hidden groups too
WRONG = load()


@pytest.fixture(autouse=True)
def _english(monkeypatch):
    monkeypatch.delenv(_i18n.ENV, raising=False)
    monkeypatch.delenv(_i18n.SESSION_ENV, raising=False)
    _i18n.set_language(None)
    yield
    _i18n.set_language(None)


def _run(group, fn, lang=None):
    """(passed, printed lines, error) of the visible or hidden group, in ``lang``."""
    out = io.StringIO()
    with _i18n.using(lang), redirect_stdout(out):
        try:
            checks.run_hidden(group, fn, devices=["cpu"])
        except CheckError as err:
            return False, out.getvalue(), str(err)
    return True, out.getvalue(), ""


def _verdicts(group, fn, lang):
    """The ✓/✗ of each check of ``group``, in order."""
    _, printed, _ = _run(group, fn, lang)
    return [line[0] for line in printed.splitlines() if line[:1] in "✓✗"]


def test_the_language_comes_from_the_environment_then_the_notebook(monkeypatch, tmp_path):
    assert _i18n.language() == "en"
    monkeypatch.setenv(_i18n.ENV, "zh")
    assert _i18n.language() == "zh"
    monkeypatch.setenv(_i18n.ENV, "zh-CN")
    assert _i18n.language() == "zh"
    monkeypatch.delenv(_i18n.ENV)
    nb = tmp_path / "masking.ipynb"
    nb.write_text(json.dumps({"metadata": {"language": "zh_CN"}, "cells": []}))
    monkeypatch.setenv(_i18n.SESSION_ENV, str(nb))
    assert _i18n.language() == "zh"
    monkeypatch.setenv(_i18n.ENV, "en")  # the variable wins over the notebook
    assert _i18n.language() == "en"
    with _i18n.using("zh"):  # and the grader's choice over both
        assert _i18n.language() == "zh"
    assert _i18n.language() == "en"


@pytest.mark.parametrize("value", ["fr", "klingon", "", "  ", "zz_ZZ"])
def test_an_unknown_language_is_english(monkeypatch, value, tmp_path):
    monkeypatch.setenv(_i18n.ENV, value)
    assert _i18n.language() == "en"
    assert _i18n.tr("{name} is not implemented yet") == "{name} is not implemented yet"
    broken = tmp_path / "x.ipynb"
    broken.write_text("{not json")
    monkeypatch.setenv(_i18n.SESSION_ENV, str(broken))
    assert _i18n.language() == "en"
    passed, printed, _ = _run("masked_softmax", reference("masked_softmax"), value)
    assert passed and "✓ Does the worked example" in printed
    with pytest.raises(ValueError, match="unknown language 'fr'"):
        checks.set_language("fr")


def test_set_language():
    checks.set_language("zh")
    assert _i18n.language() == "zh"
    checks.set_language(None)
    assert _i18n.language() == "en"


def test_the_codes_are_the_course_languages():
    assert {c: lang.locale for c, lang in i18n.LANGUAGES.items()} == _i18n.LOCALES


def test_a_wrong_masked_softmax_says_why_in_chinese():
    wrong = next(w for w in WRONG if w.target == "masked_softmax")
    group, fragment = wrong.failures[0]
    passed, printed, error = _run(group, wrong.implementation(), ZH)
    assert not passed
    crosses = [line for line in printed.splitlines() if line.startswith("✗")]
    assert crosses and all(_chinese(line) for line in crosses), printed
    assert "项检查有" in error and "原因见上方的 ✗ 行" in error, error
    assert fragment not in printed + error or not _chinese(fragment)


def _chinese(text: str) -> bool:
    return any("\u4e00" <= c <= "\u9fff" for c in text)


def _targets():
    seen, found = set(), []
    for w in WRONG:
        if w.target not in seen and not w.target.startswith("quiz_"):
            seen.add(w.target)
            found.append(w.target)
    return found[:4]


@pytest.mark.parametrize("target", one_per(_targets(), first_only, ids=str))
def test_verdicts_do_not_depend_on_the_language(target):
    """The reference, a stub and three wrong answers: the same ✓ and ✗ in English and Chinese."""

    def stub(*args, **kwargs):
        raise NotImplementedError

    stub.__name__ = target
    wrongs = [w for w in WRONG if w.target == target][:3]
    groups = sorted({g for w in wrongs for g, _ in w.failures})
    for group in groups:
        for fn in [reference(target), stub, *(w.implementation() for w in wrongs)]:
            en, zh = _run(group, fn, "en"), _run(group, fn, ZH)
            assert en[0] == zh[0], (group, fn)
            assert _verdicts(group, fn, "en") == _verdicts(group, fn, ZH), (group, fn)


def test_english_is_the_source():
    """No translation reaches English: every question is printed as it is written."""
    passed, printed, _ = _run("masked_softmax", reference("masked_softmax"), "en")
    assert passed
    for item in REGISTRY["masked_softmax"]:
        assert f"✓ {item.question} [cpu]" in printed


def test_the_shipped_translations_are_the_catalog():
    """checks/_messages/*.json (and the hidden ones) are what `make catalogs` makes."""
    for path, table in checks_messages.runtime_tables(ZH).items():
        assert path.exists(), f"{path}: run `make catalogs`"
        assert path.read_text(encoding="utf-8") == checks_messages.runtime_text(table), (
            f"{path} differs from locale/zh_CN/LC_MESSAGES/checks.po: run `make catalogs`"
        )
    visible, hidden, hints = checks_messages.runtime_tables(ZH).values()
    assert not set(visible) & set(hidden)
    assert not set(hints) & set(visible)  # a hint is never in a release

    # A question written only in checks/hidden/ (not a visible check registered as hidden
    # too) must not be in what a release ships.
    def written_in_hidden(c):
        return os.sep + os.path.join("checks", "hidden") + os.sep in c.fn.__code__.co_filename

    everywhere = [c for items in REGISTRY.values() for c in items]
    only_hidden = {c.question for c in everywhere if written_in_hidden(c)}
    only_hidden -= {c.question for c in everywhere if not written_in_hidden(c)}
    assert only_hidden and only_hidden <= set(hidden)
    assert not only_hidden & set(visible), "a hidden check's question is in the release"


def test_every_question_and_template_is_in_the_catalog():
    msgids = {m.msgid for m in checks_messages.check_messages()}
    assert {c.question for items in REGISTRY.values() for c in items} <= msgids
    assert "{name} has shape {actual}, expected {expected}" in msgids


def test_the_grader_speaks_the_notebooks_language():
    from autograder.grading.preprocessors import _Checker

    checker = _Checker.__new__(_Checker)
    checker.language = "zh_CN"
    seen = []
    checker._run = lambda: seen.append(_i18n.language())
    checker.run()
    assert seen == ["zh"] and _i18n.language() == "en"


def test_the_package_data_ships_the_translations():
    text = (nbs.ROOT / "pyproject.toml").read_text()
    assert 'checks = ["_messages/*.json"]' in text
    assert 'solutions = ["_messages/*.json"]' in text  # the hints, beside solutions/answers.py
    assert os.path.exists(_i18n.files(ZH)[0])


# ---------------------------------------------------------------- the chapters' own messages


def _failing(fragment):
    """The known-wrong answer declared to fail with ``fragment``, and the group it fails."""
    for w in WRONG:
        for group, declared in w.failures:
            if fragment in declared:
                return w, group
    raise LookupError(fragment)


@pytest.mark.parametrize(
    "fragment, chinese",
    [
        # a visible check's own message (checks/vision.py)
        (
            "answer_11_2 should be a divisor of 224, got 3",
            "answer_11_2 应当是 224 的约数，实际是 3",
        ),
        # a hidden check's own message and its reason (checks/hidden/masking.py)
        ("answer_2_2 = 12 zeros is not the count", "answer_2_2 = 12 个零不是正确的个数"),
        # a label that a chapter's check gives the framework's template (checks/hidden/pooling.py)
        ("weights for queries far from every key has a non-finite value", "远离所有键的查询的权重"),
    ],
)
def test_a_wrong_answer_is_told_why_in_chinese(fragment, chinese):
    """The message of a chapter's check, not only its question, is Chinese; the verdict is the
    English one, and the English message is what tests/wrong declares, word for word."""
    wrong, group = _failing(fragment)
    en = _run(group, wrong.implementation(), "en")
    zh = _run(group, wrong.implementation(), ZH)
    assert not en[0] and not zh[0]
    assert fragment in en[1] + en[2]
    said = zh[1] + zh[2]
    assert chinese in said and fragment not in said, said


def _answer(group, value, lang):
    """(passed, what it printed and raised) of a question's visible group, in ``lang``."""
    lines = []
    with _i18n.using(lang):
        try:
            _runner._run(group, lambda: value, ["cpu"], True, lines.append)
        except CheckError as err:
            return False, "\n".join([*lines, str(err)])
    return True, "\n".join(lines)


def test_a_quiz_hint_is_chinese():
    """A wrong answer's hint (a `# hint` comment of the answer cell) is in the catalog and said
    in Chinese: the one written for that letter, or the question's for any other number."""
    passed, text = _answer("quiz_3_1", "c", ZH)
    assert not passed and "掩码看的是键的位置，而不是键的值" in text, text
    assert "the mask looks" not in text
    passed, text = _answer("quiz_3_3", 1, ZH)
    assert not passed and "数一数 W_q (h × d_q)、W_k (h × d_k) 和 w_v (h) 的元素个数" in text, text
    passed, text = _answer("quiz_3_1", "c", "en")
    assert not passed and "Hint: the mask looks at the keys' positions" in text


def test_every_hint_is_in_the_catalog_and_beside_the_keys():
    """Every hint is a message of the catalog, and its translation is shipped beside
    solutions/answers.py only: never in checks/_messages, which a release holds."""
    from autograder.book import questions

    found = questions.questions()
    hints = {t for q in found for t in [*q.hints.values(), q.hint] if t}
    msgids = {m.msgid for m in checks_messages.check_messages()}
    assert hints and hints <= msgids
    visible, hidden, beside = checks_messages.runtime_tables(ZH).values()
    assert hints == set(beside)
    assert not set(beside.values()) & set(visible.values())


def test_a_release_ships_no_hint(tmp_path):
    """A released chapter's solutions/ holds the earlier chapters' modules, not the hints."""
    from autograder.course import Course
    from autograder.notebooks import chapter_names

    Course._stage_solutions(None, chapter_names()[-1], tmp_path / "solutions")
    assert not (tmp_path / "solutions" / _i18n.FOLDER).exists()
    assert not (tmp_path / "solutions" / "answers.py").exists()


def _questions():
    from autograder.book import questions

    return questions.questions()


@pytest.mark.parametrize("question", one_per(_questions(), first_only, ids=lambda q: q.grade_id))
def test_a_questions_verdicts_do_not_depend_on_the_language(question):
    """The key, each answer with a hint of its own, and a wrong one: the same verdict, visible
    and hidden, in English and in Chinese."""
    from checks import _quiz

    if _quiz.QUESTION.fullmatch(question.grade_id):
        group, hidden = question.grade_id, f"{question.grade_id}.key"
    else:
        group = next(g for g, name in _quiz.DECLARED.items() if name == question.name)
        hidden = question.grade_id
    values = [question.key, *question.hints]
    values += [w.implementation()() for w in WRONG if w.target == question.grade_id][:2]
    for value in values:
        en, zh = _answer(group, value, "en"), _answer(group, value, ZH)
        assert en[0] == zh[0], (group, value, en, zh)
        assert _run(hidden, lambda v=value: v, "en")[0] == _run(hidden, lambda v=value: v, ZH)[0]
