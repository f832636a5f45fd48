"""The grader's recorded sentences (autograder/records.py): said in the page's language."""

import re

import pytest

from autograder import records
from autograder.results import feedback as fb

SAMPLE = {
    "used": "5000",
    "limit": "4096",
    "count": "3",
    "names": "a.ipynb, masking.ipynb",
    "chosen": "masking.ipynb",
    "chapter": "masking",
    "rule": "zip",
    "aside": "ada.ipynb (zip time 2026-11-01 10:00:00)",
    "grade_id": "'quiz_2_2'",
    "first": "17",  # two reasons (BOTH): each field is itself a sentence, tested below
    "second": "18",
}
FIELD_WORDS = {w for v in SAMPLE.values() for w in re.findall(r"[A-Za-z]{3,}", v)}
KEPT = {"CPU", "MiB"}  # units and names the Chinese keeps as they are


def _sample(template):
    return template.format(**{k: SAMPLE[k] for k in records.FIELD.findall(template)})


@pytest.mark.parametrize("template", records.TEMPLATES)
def test_every_recorded_sentence_is_said_in_chinese_with_its_fields(template):
    """Does each sentence the grader records come back unchanged in English, and in Chinese
    with every field it carried and none of the template's English words?"""
    english = _sample(template)
    assert records.in_language(english, fb.translator("en")) == english
    chinese = records.in_language(english, fb.translator("zh"))
    assert re.search(r"[\u4e00-\u9fff]", chinese), chinese
    for name in records.FIELD.findall(template):
        assert SAMPLE[name] in chinese, (name, chinese)
    left = set(re.findall(r"[A-Za-z]{3,}", chinese)) - FIELD_WORDS - KEPT
    assert not left, (left, chinese)


def test_a_reason_inside_a_stop_and_a_warning_are_said_in_chinese_on_the_page():
    """On a Chinese feedback page, are the sandbox's reason inside a stop, two reasons
    together and a collector's warning said in Chinese, their numbers and names kept?"""
    stop = records.MEMORY.format(used="5000", limit="4096")
    two = records.all_of([stop, records.PROCESSES.format(count="300", limit="256")])
    warning = records.SEVERAL_NOTEBOOKS.format(count=2, names="a.ipynb, b.ipynb", chosen="b.ipynb")
    for outcome in (
        f"graded; stopped by the sandbox at cell 7: {stop}; the test cells after the stop scored 0",
        f"graded; stopped by the sandbox at cell 7: {two}; the test cells after the stop scored 0",
        f"graded; warning: {warning}",
    ):
        english, _ = fb.in_plain_words(outcome, "en")
        chinese, _ = fb.in_plain_words(outcome, "zh")
        assert "MiB together" in english or "notebooks (" in english
        left = set(re.findall(r"[A-Za-z]{3,}", chinese)) - {"ipynb", "MiB"}
        assert not left, (left, chinese)
        for number in re.findall(r"\d+", outcome):
            assert number in chinese


def test_a_sentence_no_template_knows_is_kept_as_written():
    said = "something the grader has never said before: 42"
    assert records.in_language(said, fb.translator("zh")) == said


def test_the_producers_write_the_templates():
    """Do the sandbox's watchdog, the collector and the reconciler say what records.py says
    (a sentence written outside it would stay English on a Chinese page)?"""
    import inspect

    from autograder import sandbox
    from autograder.grading import collect, jobs

    for module in (sandbox, collect, jobs):
        source = inspect.getsource(module)
        for template in records.TEMPLATES:
            words = re.split(r"\{\w+\}", template)[0].strip()
            if len(words) > 12:
                assert words not in source, (module.__name__, words)
    assert "records." in inspect.getsource(sandbox.Watchdog.inspect)
