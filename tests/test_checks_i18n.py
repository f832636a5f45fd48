"""The checks' language (checks/_i18n.py): chosen, found at run time, and words only."""

import io
import json
import os
from contextlib import redirect_stdout

import pytest

import checks
from autograder import i18n
from autograder.i18n import catalogs
from checks import CheckError, _i18n
from checks._core import REGISTRY
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


@pytest.mark.parametrize("target", _targets())
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
    for path, table in catalogs.runtime_tables(ZH).items():
        assert path.exists(), f"{path}: run `make catalogs`"
        assert path.read_text(encoding="utf-8") == catalogs.runtime_text(table), (
            f"{path} differs from locale/zh_CN/LC_MESSAGES/checks.po: run `make catalogs`"
        )
    visible, hidden = catalogs.runtime_tables(ZH).values()
    assert not set(visible) & set(hidden)

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
    msgids = {m.msgid for m in catalogs.check_messages()}
    assert {c.question for items in REGISTRY.values() for c in items} <= msgids
    assert "{name} has shape {actual}, expected {expected}" in msgids


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
    import polib

    root = tmp_path
    path = i18n.catalog_path(ZH, catalogs.CHECKS, root)
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
    found = catalogs.markup_problems(ZH, catalogs.CHECKS, root)
    assert (not found) == ok, found


def test_the_grader_speaks_the_notebooks_language():
    from autograder.preprocessors import _Checker

    checker = _Checker.__new__(_Checker)
    checker.language = "zh_CN"
    seen = []
    checker._run = lambda: seen.append(_i18n.language())
    checker.run()
    assert seen == ["zh"] and _i18n.language() == "en"


def test_the_package_data_ships_the_translations():
    text = (catalogs.nbs.ROOT / "pyproject.toml").read_text()
    assert '"_messages/*.json"' in text
    assert os.path.exists(_i18n.files(ZH)[0])
