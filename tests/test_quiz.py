"""Honest feedback on the questions: a wrong answer never shows ✓, and no key reaches a release.

- Self-study (the keys of ``solutions/answers.py`` importable): the self-check says right, or
  wrong with a hint that never states the key, and agrees with the grader's hidden key check on
  every known-wrong, unusual and reference answer.
- Graded (a release, nbgrader, ``ATTENTION_COURSE_GRADED``): the self-check says only
  "recorded", the same line for every well-formed answer, never ✓.
- Every file of a release (every chapter, as ``make release`` writes it) and the part of a
  Gradescope bundle that a student's notebook is given hold no key: not the answers module, no
  assignment of an answer, no hint or explanation, and the released checks run in a process of
  their own say "recorded" for the right answer as for a wrong one.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

import checks
import tests.unusual
import tests.wrong
from autograder import notebooks as nbs
from autograder.book import questions
from autograder.gradescope import bundle
from checks import CheckError, _quiz
from checks._runner import _run

checks.groups()  # the hidden groups too
QUESTIONS = questions.questions()
WRONG = tests.wrong.load()
UNUSUAL = tests.unusual.load()


def group_of(question) -> str:
    """The visible group of a question (``quiz_3_1``, or a finding's declared group)."""
    if _quiz.QUESTION.fullmatch(question.grade_id):
        return question.grade_id
    return next(g for g, name in _quiz.DECLARED.items() if name == question.name)


def key_group_of(question) -> str:
    """The hidden group that grades it."""
    group = group_of(question)
    return f"{group}.key" if _quiz.QUESTION.fullmatch(group) else question.grade_id


def run(group: str, value) -> tuple[bool, str]:
    """Run a visible group on ``value``: (passed, what it printed and raised)."""
    lines = []
    try:
        _run(group, lambda: value, ["cpu"], True, lines.append)
    except CheckError as err:
        return False, "\n".join([*lines, str(err)])
    return True, "\n".join(lines)


def hidden_passes(question, value) -> bool:
    try:
        checks.run_hidden(key_group_of(question), lambda: value, devices=["cpu"], verbose=False)
    except CheckError:
        return False
    return True


def well_formed(question, value) -> bool:
    passed, text = run(group_of(question), value)
    return passed or "Hint:" in text


def candidates(question) -> list:
    """Values to try: the key, the known-wrong and unusual answers, and more around the key."""
    values = [question.key]
    for answer in [*WRONG, *UNUSUAL]:
        if answer.target == question.grade_id:
            values.append(answer.implementation()())
    if isinstance(question.key, bool):
        values += [True, False]
    elif isinstance(question.key, str):
        values += list("abcd") + [" B ", "C"]
    else:
        values += [question.key + d for d in (-1, 1, 0.5, 0.01 * question.key, 1e-9)]
        values += list(question.hints)
    return values


def test_every_question_is_read():
    """Are all the book's questions read, each with its key and a hint for a wrong answer?"""
    quiz = [q for q in QUESTIONS if q.grade_id.startswith("quiz_")]
    assert len(quiz) >= 25  # the 25 of chapters 1 to 10, and those of any later chapter
    for q in QUESTIONS:
        assert q.hints or q.hint, f"{q.grade_id}: no hint for a wrong answer"
        if isinstance(q.key, str):  # every wrong letter has its own hint
            assert set(q.hints) == set("abcd") - {q.key}, q.grade_id


@pytest.mark.parametrize("question", QUESTIONS, ids=lambda q: q.grade_id)
def test_self_study_agrees_with_the_grader(question):
    """In self-study, does the self-check accept exactly what the grader's hidden key accepts,
    on every known-wrong, unusual and reference answer and on values around the key?"""
    group = group_of(question)
    tried = 0
    for value in candidates(question):
        if not well_formed(question, value):
            continue
        passed, text = run(group, value)
        tried += 1
        assert passed == hidden_passes(question, value), (value, text)
        if passed:
            assert text == f"✓ {question.name} is right.", text
        else:
            assert "✓" not in text and text.startswith(f"✗ {question.name} = "), text
    assert tried >= 3


def question_text(question) -> str:
    """The markdown that asks the question (or, for a finding, the cell before its answer)."""
    cells = nbs.read(nbs.notebook_path(question.chapter)).cells
    number = question.grade_id.removeprefix("quiz_").replace("_", ".")
    for i, cell in enumerate(cells):
        if nbs.nbgrader_meta(cell).get("grade_id") == question.grade_id:
            asked = [c.source for c in cells[:i] if c.cell_type == "markdown"]
            return next((t for t in reversed(asked) if f"Question {number}" in t), asked[-1])
    raise LookupError(question.grade_id)


@pytest.mark.parametrize("question", QUESTIONS, ids=lambda q: q.grade_id)
def test_a_hint_never_states_the_key(question):
    """Does no hint of a question name its key: the letter as an option, or a number that is
    the key and not already in the question?"""
    asked = {float(x) for x in re.findall(r"\d+(?:\.\d+)?", question_text(question))}
    texts = [*question.hints.values(), question.hint]
    for text in texts:
        if isinstance(question.key, str):
            assert not re.search(
                rf"\(\s*{question.key}\s*\)|\"{question.key}\"|'{question.key}'", text
            )
        elif not isinstance(question.key, bool):
            numbers = {float(x) for x in re.findall(r"\d+(?:\.\d+)?", text)} - asked
            assert not [x for x in numbers if _quiz.close(x, question.key, question.tolerance)], (
                text
            )


@pytest.mark.parametrize("question", QUESTIONS, ids=lambda q: q.grade_id)
def test_graded_says_recorded_for_every_answer(question, monkeypatch):
    """Where it is graded (ATTENTION_COURSE_GRADED, or nbgrader's NBGRADER_EXECUTION), does the
    self-check print the same "recorded" line for the key as for every wrong answer, and no ✓?"""
    for env in (_quiz.GRADED_ENV, _quiz.GRADER_ENV):
        monkeypatch.setenv(env, "autograde")
        lines = set()
        for value in candidates(question):
            passed, text = run(group_of(question), value)
            if not passed:  # a form error: the same with or without the key
                assert "Hint:" not in text and "✗ Is" in text, text
                continue
            assert "✓" not in text and text.endswith("; graded after the deadline"), text
            lines.add(re.sub(r"recorded: .* \(", "recorded: X (", text))
        assert len(lines) == 1, lines
        monkeypatch.delenv(env)


def test_the_recorded_line_says_the_form():
    """Does the graded line name the answer and its form, as the issue's example does?"""
    os.environ[_quiz.GRADED_ENV] = "1"
    try:
        assert run("quiz_3_1", " C")[1] == (
            'answer_3_1 recorded: "c" (a letter a–d); graded after the deadline'
        )
        assert run("quiz_3_3", 12352)[1] == (
            "answer_3_3 recorded: 12352 (a number); graded after the deadline"
        )
    finally:
        del os.environ[_quiz.GRADED_ENV]


def test_a_wrong_answer_gets_its_hint():
    """Does a wrong letter get the hint written for it, and a wrong number with no hint of its
    own the question's?"""
    passed, text = run("quiz_3_1", "c")
    assert not passed and text.startswith('✗ answer_3_1 = "c" is not right. Hint: the mask looks')
    passed, text = run("quiz_3_3", 1)
    assert not passed and "Hint: count the entries of W_q" in text


def test_without_the_answers_module_the_check_is_graded(monkeypatch):
    """Where solutions.answers cannot be imported (a released folder), is the check graded?"""
    monkeypatch.setitem(sys.modules, "solutions.answers", None)  # import fails
    assert _quiz.answers() is None and _quiz.key("answer_3_1") is None
    passed, text = run("quiz_3_1", "a")
    assert passed and "recorded" in text and "✓" not in text


# ---------------------------------------------------------------- nothing of the keys in a release


def _secret_texts() -> list[str]:
    """Distinctive text of the keys: every hint and explanation (20 characters or more)."""
    texts = []
    for q in QUESTIONS:
        texts += [*q.hints.values(), q.hint, q.why]
    return sorted({t[:60] for t in texts if len(t) >= 20})


def _assignments(text: str) -> list[str]:
    """Assignments of an answer variable to anything but the stub's ``...``."""
    names = "|".join(re.escape(q.name) for q in QUESTIONS)
    return [
        m.group(0)
        for m in re.finditer(rf"(?<![\w.])({names})[ \t]*=(?!=)[ \t]*(?![ \t]|\.\.\.)[^\n]*", text)
        if "lambda" not in m.group(0)
    ]


def no_key_problems(folder: Path) -> list[str]:
    """Every trace of a key in the files of ``folder``."""
    found = []
    secrets = _secret_texts()
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        rel = path.relative_to(folder)
        if path.name == f"{questions.ANSWERS_MODULE}.py" and "solutions" in path.parts:
            found.append(f"{rel}: the answers module")
        text = path.read_text(errors="replace")
        if path.suffix == ".ipynb":
            text = "\n".join("".join(c["source"]) for c in json.loads(text)["cells"])
        for secret in secrets:
            if secret in text:
                found.append(f"{rel}: {secret!r}")
        found += [f"{rel}: {a}" for a in _assignments(text)]
        if path.suffix == ".py":
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.Name) and node.id in ("HINTS", "TOLERANCE"):
                    found.append(f"{rel}: {node.id}")
    return found


# One interpreter imports torch, then forks a child per released folder; the child puts that
# folder first on its path, as `python -c` run in it would, and imports the folder's checks:
# each folder's checks run alone, and torch is imported once, not once per chapter.
RELEASED_CHECKS = """\
import json, os, sys, traceback
import torch  # before any folder is on the path
said = {}
for folder, groups in json.loads(sys.argv[1]).items():
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        status = 0
        try:
            os.chdir(folder)
            sys.path.insert(0, folder)
            import checks
            from checks import CheckError, _quiz, _runner
            out = {}
            for group, values in groups.items():
                lines = []
                for value in values:
                    try:
                        _runner._run(group, lambda: value, ["cpu"], True, lines.append)
                    except CheckError as err:
                        lines.append("ERROR " + str(err))
                out[group] = lines
            text = json.dumps({"out": out, "checks": checks.__file__, "answers": _quiz.answers() is not None})
        except BaseException:
            text, status = json.dumps({"error": traceback.format_exc()}), 1
        with os.fdopen(write, "w") as f:
            f.write(text)
        os._exit(status)
    os.close(write)
    with os.fdopen(read) as f:
        said[folder] = json.loads(f.read())
    os.waitpid(pid, 0)
print(json.dumps(said))
"""


def released_checks_say(values: dict[Path, dict]) -> dict[Path, dict]:
    """Run visible groups with the checks of each released folder (``values``: folder -> group
    -> values), each folder in a process of its own that sees only that folder (no PYTHONPATH,
    no repository): what each folder's checks printed."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", _quiz.GRADED_ENV)}
    env.pop(_quiz.GRADER_ENV, None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the folders are the shared release: read, never write
    with tempfile.TemporaryDirectory() as neutral:  # no folder of the tree is the cwd
        result = subprocess.run(
            [sys.executable, "-c", RELEASED_CHECKS, json.dumps({str(f): v for f, v in values.items()})],
            cwd=neutral, env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
    said = json.loads(result.stdout.strip().splitlines()[-1])
    errors = {f: s["error"] for f, s in said.items() if "error" in s}
    assert not errors, errors
    return {Path(f): s for f, s in said.items()}


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_release_holds_no_key(released):
    """Does no file of any released chapter (as `make release` writes them) hold a key, and do
    the released checks, run from the folder alone, print the same "recorded" line for the key
    as for a wrong answer? (The release is the one the slow tier makes once: tests/_shared.py.)"""
    folders = sorted((released() / "release").iterdir())
    assert sorted(f.name for f in folders) == sorted(nbs.chapter_names())
    found, values = [], {}
    for folder in folders:
        found += no_key_problems(folder)
        values[folder] = {}
        for q in (q for q in QUESTIONS if q.chapter == folder.name):
            wrong = next(v for v in candidates(q) if well_formed(q, v) and not hidden_passes(q, v))
            values[folder][group_of(q)] = [q.key, wrong]
    said_by = released_checks_say(values)
    assert sorted(said_by) == folders
    strip = re.compile(r"recorded: .* \(")
    for folder, said in said_by.items():
        assert said["checks"].startswith(str(folder)) and not said["answers"], said
        assert said["out"].keys() == values[folder].keys(), folder.name
        for right, wrong in said["out"].values():
            assert "✓" not in right + wrong and "recorded" in right, (folder.name, right)
            assert strip.sub("", right) == strip.sub("", wrong), (folder.name, right, wrong)
    assert not found, "\n".join(found[:40])


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_gradescope_bundle_gives_a_notebook_no_key(tmp_path):
    """Does the part of a Gradescope bundle that a student's notebook is given (the chapter's
    folder, less the grader's notebook and hidden checks, which stay outside the sandbox) hold
    no key, and does the bundle hold no answers module at all?"""
    from autograder.course import Course

    chapter = "additive_attention"
    zipped = bundle.build(Course(tmp_path / "course"), chapter, tmp_path / "bundle.zip")
    unpacked = tmp_path / "bundle"
    with zipfile.ZipFile(zipped) as archive:
        names = archive.namelist()
        archive.extractall(unpacked)
    assert not [n for n in names if n.endswith(f"solutions/{questions.ANSWERS_MODULE}.py")]
    given = unpacked / "course" / "source" / chapter
    (given / f"{chapter}.ipynb").unlink()  # the grader's source notebook: never in the sandbox
    shutil.rmtree(
        given / "checks" / "hidden"
    )  # the grader runs them itself (autograder/grading/jobs.py)
    assert not no_key_problems(given)
