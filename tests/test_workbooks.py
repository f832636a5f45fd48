"""Every notebook a student opens outside a graded release is a workbook, and no prediction's
answer can be read before the student answers.

Fast: the structure of every form, staged here (the downloads of both editions, as .ipynb and as
MyST .md, and the launchable notebooks): see ``tests/_workbooks.py``. The same structure is
proven on the built site by ``tests/test_book.py``. Every predict-then-run question names the
cell that would reveal its answer; that cell is in the reader edition only.

Slow (``make test``): the form students use most, run. That is the launchable notebook: the
Colab and Binder buttons of every page open it, and the downloads hold the same code cells
(proven here, so the run covers them too). One kernel per chapter runs it three times over,
demos skipped: as it is handed out (every self-check fails, saying the exercise is not done;
every other error is one line), with a known-wrong answer from tests/wrong in every stub (every
self-check fails with that answer's message, and no question's check prints ✓), and with the
reference answers (every check passes).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import nbformat
import pytest

import tests.wrong as wrong_answers
from autograder import notebooks as nbs
from autograder.book import launch, launchables, questions
from autograder.book.editions import downloadable, stage_book, to_myst
from autograder.book.questions import REVEALS_TAG
from tests import _workbooks
from tests._sweep import first_only, one_per

CHAPTERS = nbs.chapter_names()

# Every question that asks for a prediction a cell of the chapter would show, and that cell
# (its id in the chapter notebook). The reader edition shows it after the answer; no other
# form has it.
REVEALED_BY = {
    "quiz_1_2": ["quiz-1-2-run"],
    "quiz_2_2": ["quiz-2-2-run"],
    "quiz_3_2": ["quiz_3_2-run-intro", "quiz_3_2-run"],
    "quiz_3_3": ["quiz_3_3-run"],
    "quiz_4_1": ["088ff737"],
    "quiz_5_2": ["7b2c9f6d"],
    "quiz_6_2": ["quiz-6-2-run"],
    "quiz_10_2": ["a10q2run"],
    "quiz_13_3": ["ec30fd45"],
}


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    """Both editions staged, and the launchable tree, once for the module."""
    base = tmp_path_factory.mktemp("forms")
    for edition in ("reader", "student"):
        stage_book(base / edition, edition=edition)
    launchables.write_launchables(base / "launch")
    return base


_FORMS: dict[tuple[Path, str], dict] = {}


def forms(staged: Path, chapter: str) -> dict[str, nbformat.NotebookNode]:
    """Every workbook form of a chapter: the downloads (.ipynb, .md) of both editions, and the
    launchable notebook (read once per module)."""
    if (staged, chapter) not in _FORMS:
        _FORMS[staged, chapter] = _read_forms(staged, chapter)
    return _FORMS[staged, chapter]


def _read_forms(staged: Path, chapter: str) -> dict[str, nbformat.NotebookNode]:
    from myst_nb.core.read import read_myst_markdown_notebook

    out = {}
    for edition in ("reader", "student"):
        nb = downloadable(nbs.read(staged / edition / "book" / f"{chapter}.ipynb"))
        out[f"{edition}.ipynb"] = nb
        out[f"{edition}.md"] = read_myst_markdown_notebook(to_myst(nb))
    out["launchable"] = nbs.read(staged / "launch" / f"{chapter}.ipynb")
    return out


@pytest.mark.parametrize("chapter", one_per(CHAPTERS, first_only, ids=str))
def test_every_form_is_a_workbook(staged, chapter):
    """In each form, is every stub followed by its self-check, the reference only a commented
    import away, and does no later cell define, import or load a graded name? No output, no
    revealing cell?"""
    found = []
    for name, nb in forms(staged, chapter).items():
        found += _workbooks.problems(nb, chapter, where=f"{name}: ")
    assert not found, "\n".join(found)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_forms_hold_the_same_code(staged, chapter):
    """Do the downloads of both editions (.ipynb and .md) and the launchable notebook hold the
    same code cells, so that running one of them proves the code of all?"""
    code = {
        name: [c.source.strip() for c in nb.cells if c.cell_type == "code"]
        for name, nb in forms(staged, chapter).items()
    }
    assert all(cells == code["launchable"] for cells in code.values()), {
        name: len(cells) for name, cells in code.items()
    }


def test_the_structure_test_catches_a_reference_after_a_stub(staged):
    """Would the structure test fail a notebook that imports the reference after the stub (the
    old reader download), one that defines it again, and one that loads it with %load?"""
    nb = forms(staged, "masking")["launchable"]
    assert not _workbooks.problems(nb, "masking")
    stub = next(i for i, c in enumerate(nb.cells) if _workbooks.stub_target(c.source, "masking"))
    for bad in (
        "from solutions.masking import sequence_mask",
        "def sequence_mask(X, valid_len, value=0):\n    return X",
        "%load solutions/masking.py",
        "import solutions.masking\nsolutions.masking.sequence_mask(X, lens)",
    ):
        broken = nbformat.reads(nbformat.writes(nb), as_version=4)
        broken.cells.insert(stub + 1, nbformat.v4.new_code_cell(bad))
        assert _workbooks.problems(broken, "masking"), bad


def test_a_model_answer_is_folded_in_the_reader_download(staged):
    """Does the reader's download fold each written answer's model answer (<details>, which
    Jupyter and Colab show closed), and the student's hold none?"""
    for chapter in CHAPTERS:
        reader = forms(staged, chapter)["reader.ipynb"]
        student = forms(staged, chapter)["student.ipynb"]
        text = "\n".join(c.source for c in reader.cells if c.cell_type == "markdown")
        assert "{admonition}" not in text, chapter
        assert text.count("<details><summary>A model answer") == text.count("**Your answer:**")
        student_text = "\n".join(c.source for c in student.cells)
        assert "<details><summary>A model answer" not in student_text, chapter


class _Shell:
    """The little of IPython's shell that checks._workbook uses."""

    def set_custom_exc(self, exceptions, handler):
        self.exceptions, self.handler = exceptions, handler

    class InteractiveTB:
        @staticmethod
        def structured_traceback(etype, value, tb, tb_offset=None):
            return ["the usual traceback", "..."]

    def show(self, run) -> list[str]:
        try:
            run()
        except self.exceptions as err:
            return self.handler(self, type(err), err, err.__traceback__)
        raise AssertionError("nothing was raised")


def _cell(source: str, number: int, namespace: dict) -> None:
    """Run ``source`` as IPython runs a cell: from a file of its own, in linecache."""
    import linecache

    filename = f"/tmp/ipykernel_0/{number}.py"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102


def test_an_unfinished_exercise_says_so_in_one_line():
    """Does a stub that a later cell calls raise one line that says what to do (finish it, or
    load the reference), and a NameError it leads to one line too, while a NotImplementedError
    of a library keeps its traceback?"""
    from checks import _workbook

    _workbook.UNFINISHED.clear()
    shell, ns = _Shell(), {}
    assert _workbook.explain_unfinished(shell)
    stub = "def masked_softmax(X, valid_lens):\n    # YOUR CODE HERE\n    raise NotImplementedError()\n"
    _cell(stub, 1, ns)
    assert shell.show(lambda: _cell("weights = masked_softmax(1, 2)", 2, ns)) == [
        "NotImplementedError: masked_softmax is not implemented yet: finish its exercise above "
        "and run its cell again, or go on with the course's reference: "
        "from solutions.masking import masked_softmax"
    ]
    assert shell.show(lambda: _cell("print(weights)", 3, ns)) == [
        "NameError: name 'weights' is not defined: a cell above stopped at an unfinished "
        "exercise (masked_softmax); finish it, then run the cells again from there"
    ]
    answer = "answer_2_1 = ...\n# YOUR CODE HERE\nraise NotImplementedError()\n"
    assert shell.show(lambda: _cell(answer, 4, ns)) == [
        "NotImplementedError: answer_2_1 is not answered yet: replace "
        "`raise NotImplementedError()` in its cell with your answer"
    ]
    import torch

    library = str(Path(torch.__file__).parent / "fake.py")
    code = compile("def op():\n    raise NotImplementedError()\n", library, "exec")
    exec(code, ns)  # noqa: S102
    assert shell.show(ns["op"]) == ["the usual traceback", "..."]
    _workbook.UNFINISHED.clear()


# ---------------------------------------------------------------- predictions


def _question_section(cells, answer: int) -> list:
    """The cells after a question's answer cell, up to the next question or heading."""
    out = []
    for cell in cells[answer + 1 :]:
        if cell.cell_type == "markdown" and (
            re.search(r"\*\*Question \d+\.\d+", cell.source) or cell.source.startswith("#")
        ):
            break
        out.append(cell)
    return out


def _staged_ids(path: Path) -> set[str]:
    return {c.get("id", "") for c in nbs.read(path).cells}


def test_every_revealing_cell_is_named_and_tagged():
    """Is every cell named in REVEALED_BY tagged reveals-answer in its chapter, and every
    reveals-answer cell named, so that no revealing cell goes unnoticed?"""
    tagged = set()
    for path in nbs.chapter_notebooks():
        tagged |= {c.id for c in nbs.read(path).cells if questions.reveals(c)}
    named = {cid for ids in REVEALED_BY.values() for cid in ids}
    assert tagged == named


@pytest.mark.parametrize("grade_id", sorted(REVEALED_BY))
def test_a_prediction_is_revealed_only_in_the_reader_edition(staged, tmp_path, grade_id):
    """Does the cell that would reveal this prediction follow the answer in the reader edition
    (folded), and is it absent from the release, the student edition and every workbook?"""
    from autograder.course import Course

    chapter = next(ch for ch in CHAPTERS if grade_id in _workbooks.graded(ch))
    ids = REVEALED_BY[grade_id]
    source = nbs.read(nbs.notebook_path(chapter)).cells
    answer = next(
        i for i, c in enumerate(source) if nbs.nbgrader_meta(c).get("grade_id") == grade_id
    )
    # After the answer (best right after it, before the check), within the question.
    section = _question_section(source, answer)
    assert [c.id for c in section if c.id in ids] == ids, "after the answer, in its question"
    reader = nbs.read(staged / "reader" / "book" / f"{chapter}.ipynb").cells
    solution = next(i for i, c in enumerate(reader) if c.id == source[answer].id)
    shown = [c for c in _question_section(reader, solution) if c.id in ids]
    assert [c.id for c in shown] == ids
    assert all(
        "hide-output" in c.metadata.get("tags", []) for c in shown if c.cell_type == "code"
    ), "folded"
    release = Course(tmp_path / "course").stage_source(chapter) / f"{chapter}.ipynb"
    for where in (release, staged / "student" / "book" / f"{chapter}.ipynb"):
        assert not set(ids) & _staged_ids(where), where
        assert REVEALS_TAG not in where.read_text(), where
    for name, nb in forms(staged, chapter).items():
        assert not set(ids) & {c.get("id", "") for c in nb.cells}, name


def _numbers(text: str) -> list[float]:
    return [float(m.replace(",", "")) for m in re.findall(r"-?\d[\d,]*\.?\d*(?:e[-+]?\d+)?", text)]


def _outputs(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        parts.append(out.get("text", "") if out.get("output_type") == "stream" else "")
        parts.append(str(out.get("data", {}).get("text/plain", "")))
    return "".join(parts)


@pytest.mark.parametrize("question", questions.questions(), ids=lambda q: q.grade_id)
def test_no_key_in_the_outputs_around_a_question(staged, question):
    """In the student edition, do the outputs of the cells around a question (from its text to
    the next question or section) show neither its answer variable nor, for a number, its key?
    And for a predict-then-run question, does the named cell's output in the reader edition
    show the key (so that it is the cell that reveals it)?"""
    from checks._quiz import close

    cells = nbs.read(staged / "student" / "book" / f"{question.chapter}.ipynb").cells
    if not question.grade_id.startswith("quiz_"):  # a finding, seen in the output of a cell
        tagged = [c for c in cells if questions.ANSWER_IN_OUTPUT_TAG in c.metadata.get("tags", [])]
        reader = nbs.read(staged / "reader" / "book" / f"{question.chapter}.ipynb").cells
        shown = [c for c in reader if questions.ANSWER_IN_OUTPUT_TAG in c.metadata.get("tags", [])]
        assert tagged and not any(c.outputs for c in tagged)
        assert all(c.outputs for c in shown)
        return
    number = question.grade_id.removeprefix("quiz_").replace("_", ".")
    start = next(
        i
        for i, c in enumerate(cells)
        if c.cell_type == "markdown" and f"Question {number}" in c.source
    )
    end = next(
        (
            i
            for i in range(start + 1, len(cells))
            if cells[i].cell_type == "markdown"
            and (
                re.search(r"\*\*Question \d+\.\d+", cells[i].source)
                or cells[i].source.startswith("#")
            )
        ),
        len(cells),
    )
    around = "".join(_outputs(c) for c in cells[start:end])
    assert question.name not in around
    if not isinstance(question.key, str):
        tolerance = question.tolerance or {"abs": 1e-9}
        assert not [x for x in _numbers(around) if close(x, question.key, tolerance)]
        if question.grade_id in REVEALED_BY:
            reader = nbs.read(staged / "reader" / "book" / f"{question.chapter}.ipynb").cells
            shown = "".join(
                _outputs(c) for c in reader if c.get("id") in REVEALED_BY[question.grade_id]
            )
            assert [x for x in _numbers(shown) if close(x, question.key, question.tolerance)]


# ---------------------------------------------------------------- run: the launchable notebooks

PASS_MARK = "print('=== pass {name}')"


def _wrong_for(target: str, group: str) -> tuple[str, str]:
    """A known-wrong answer to ``target`` that its self-check (``group``) rejects, as the source
    of its solution region, and the message it must fail with (for a question: a well-formed
    wrong value, which only the key rejects: the self-check gives a hint)."""
    from checks._quiz import is_question

    candidates = [w for w in wrong_answers.load() if w.target == target]
    if is_question(group):
        for w in candidates:
            if set(w.groups) == {f"{group}.key"}:
                return w, "Hint:"
        question = next(q for q in questions.questions() if q.grade_id == target)
        if isinstance(question.key, bool):  # a finding: the other truth value
            return f"{question.name} = {not question.key}", "Hint:"
    for w in candidates:
        if group in w.messages:
            return w, w.messages[group]
    raise LookupError(f"no wrong answer to {target} that fails {group}")


def _exercise_of(group: str, chapter: str) -> str | None:
    """The grade_id of the exercise a visible check group tests."""
    from checks._quiz import DECLARED

    graded = _workbooks.graded(chapter)
    head = group.split(".")[0]
    for grade_id, names in graded.items():
        if head == grade_id or head in names or DECLARED.get(group) in names:
            return grade_id
    return None


def _fill(nb, chapter: str, how: str):
    """The launchable notebook with every stub filled: as it is ("stub"), with a known-wrong
    answer ("wrong") or with the reference ("reference"); and what each check cell must say."""
    source = {
        nbs.nbgrader_meta(c)["grade_id"]: c
        for c in nbs.read(nbs.notebook_path(chapter)).cells
        if c.cell_type == "code" and nbs.is_solution(c)
    }
    nb = nbformat.reads(nbformat.writes(nb), as_version=4)
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    groups = {}  # exercise -> its visible group
    for i in code:
        check = _workbooks.CHECK_RUN.search(nb.cells[i].source)
        if check and _exercise_of(check["group"], chapter):
            groups.setdefault(_exercise_of(check["group"], chapter), check["group"])
    expect = {}  # index of a check cell -> (grade_id, what it must print, or "": pass)
    for i in code:
        cell = nb.cells[i]
        after = next(
            (
                nb.cells[j].source
                for j in code
                if j > i and not _workbooks.is_stub(nb.cells[j].source)
            ),
            "",
        )
        target = _workbooks.stub_target(cell.source, chapter, after)
        if target is not None:
            original = source[target].source
            if how == "reference":
                cell.source = nbs.without_markers(original)
            elif how == "wrong":
                wrong, _ = _wrong_for(target, groups[target])
                cell.source = (
                    wrong if isinstance(wrong, str) else nbs.without_markers(wrong.inject(original))
                )
            cell.source = nbs.strip_lines(cell.source, lambda s: bool(nbs.SAVE_LINE.match(s)))
            continue
        check = _workbooks.CHECK_RUN.search(cell.source)
        target = _exercise_of(check["group"], chapter) if check else None
        if target is not None:
            if how == "stub":
                expect[i] = (target, None)
            elif how == "wrong":
                expect[i] = (target, _wrong_for(target, check["group"])[1])
            else:
                expect[i] = (target, "")
    assert len({t for t, _ in expect.values()}) == len(source), (chapter, how, expect)
    return nb, expect


def _text(cell) -> str:
    return "".join(
        o.get("text", "") if o.get("output_type") == "stream" else "\n".join(o.get("traceback", []))
        for o in cell.get("outputs", [])
    )


@pytest.fixture(scope="module")
def launch_tree(tmp_path_factory):
    tree = tmp_path_factory.mktemp("launch") / "tree"
    launchables.write_launchables(tree)
    return tree


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_launchable_notebook_run_three_ways(launch_tree, chapter):
    """One kernel runs the launchable notebook as handed out, with known-wrong answers, and with
    the reference answers (demos skipped; the tree's own checks/ and solutions/):

    - as handed out: every self-check fails (not done yet), and every error is one line;
    - wrong: every self-check fails with that wrong answer's message, no question's check
      prints ✓ and each gives a hint;
    - reference: every self-check passes, and each question's says it is right.
    """
    from nbclient import NotebookClient

    nb = nbs.read(launch_tree / f"{chapter}.ipynb")
    setup, rest = nb.cells[:2], nb.cells[2:]
    assert launch.is_setup(setup[1])
    rest = [c for c in rest if nbs.DEMO_TAG not in c.metadata.get("tags", [])]
    body = nbformat.v4.new_notebook(cells=rest)
    run = nbformat.v4.new_notebook(cells=list(setup), metadata=nb.metadata)
    expected = {}
    for how in ("stub", "wrong", "reference"):
        filled, expect = _fill(body, chapter, how)
        offset = len(run.cells) + 1
        run.cells.append(nbformat.v4.new_code_cell(PASS_MARK.format(name=how)))
        run.cells += filled.cells
        expected |= {offset + i: (how, *e) for i, e in expect.items()}
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env.update(MPLBACKEND="agg", OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    start = time.monotonic()
    client = NotebookClient(
        run, timeout=300, kernel_name="python3", allow_errors=True,
        resources={"metadata": {"path": str(launch_tree)}},
    )  # fmt: skip
    client.execute(env=env, cwd=str(launch_tree))
    took = time.monotonic() - start
    problems = []
    for i, (how, target, message) in sorted(expected.items()):
        cell = run.cells[i]
        text = _text(cell)
        failed = any(o.get("output_type") == "error" for o in cell.outputs)
        quiz = target.startswith("quiz_") or target in _workbooks.value_answers(chapter)
        if how == "stub":
            said = "is not implemented yet"
            if target.startswith("quiz_"):
                said = "no answer yet"
            elif quiz:  # a finding: its cell is the bare raise, so the name is never set
                said = "is not defined"
            if not failed or said not in text:
                problems.append(f"{how} {target}: {text[-300:]!r}")
        elif how == "wrong":
            if not failed or message not in text or (quiz and "✓" in text):
                problems.append(f"{how} {target}: expected {message!r}, got {text[-400:]!r}")
        elif failed or "✗" in text or "✓" not in text or (quiz and "is right" not in text):
            problems.append(f"{how} {target}: {text[-400:]!r}")
    # Apart from the self-checks, an exercise left as a stub is one line, never a traceback.
    stub_pass = run.cells[: next(i for i, (h, *_) in sorted(expected.items()) if h == "wrong")]
    for cell in stub_pass:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error" and len(out.get("traceback", [])) > 1:
                problems.append(f"a long traceback in cell {cell.source[:60]!r}: {out['ename']}")
    ran = [c for c in run.cells if c.cell_type == "code"]
    print(f"\n{chapter}: {len(ran)} cells, {len(expected)} checks, one kernel, {took:.1f} s")
    assert not problems, "\n".join(problems)
