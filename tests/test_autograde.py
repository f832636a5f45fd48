"""End to end with nbgrader: every chapter released, then reference, blank and packed answers graded.

Each chapter's submissions are graded as an instructor would grade a class: the reference
notebook, the untouched student notebook, the known-wrong implementations (tests/wrong) and
the correct but unusual ones (tests/unusual), one per exercise and set of cells it must
fail (``end_to_end``: the fast tier runs every one through its checks), pasted into the
solution regions of the chapter notebook, and for the last chapter a submission in nbgrader's ``<student>/<chapter>/``
layout and one that sends its own ``checks/`` package. The chapters are graded in groups of
five (``GROUPS``), each group in one grading run, as an instructor grades several assignments
at once; a group is graded when the first test of one of its chapters asks for it, and a group
whose grading fails fails its own chapters' tests, not the others'.

**Load.** Every run grades on one core oversubscribed 3:1 (``tests/_load.py``: three grading
jobs pinned to it): grades must not depend on the machine's load, so every reference must
still earn every point with no problem reported, and every other notebook score what it
declares.

**Packing.** Each notebook costs a sandboxed kernel, so answers are packed: an exercise is
graded on its own (its checks use their own helpers, never the notebook's other answers,
and a question's test cell reads only its answer), so the *k*-th packed notebook of a chapter
holds the *k*-th answer of every exercise of the chapter at once (wrong answers first, then
unusual ones), and exercises with fewer answers keep the reference. A chapter costs
``max(answers per exercise) + 2`` notebooks, whatever the number of exercises. A packed
notebook must score cell by cell what its answers declare, together:

- every cell that a wrong answer declares loses points, and its output holds the fragment of
  the message that the wrong answer declares for it;
- every cell of an exercise that holds the reference or an unusual answer keeps full marks;
- the other cells of an exercise that holds a wrong answer may lose points or not: a wrong
  answer declares the groups it must fail, not every group it fails.

A mismatch names the cell, the exercise it grades and the answer that exercise holds in that
notebook (``tests/wrong/<module>.py::<name>``). An answer that disturbs other exercises (one
that kills the kernel when it is defined, or rebinds a name that other cells use) shows up
there; if that is what it is meant to do, declare it with ``alone=True`` (``@wrong(...,
alone=True)``, ``@unusual(..., alone=True)``): it is then graded in a notebook of its own,
every other exercise keeping the reference.

Code cells after the chapter's last test cell cannot change a score and are emptied.

**Language.** For one chapter (``LANG_CHAPTER``), the reference and the first packed notebook
are also graded in Chinese: translated as a Chinese release is
(:func:`autograder.i18n.pages.translate_notebook`: the markdown, and ``metadata.language``,
which makes the checks speak Chinese), by a course that released the chapter in Chinese, as
an instructor of a Chinese class grades. Every cell must score what its English twin
scored; the checks' messages must be Chinese; and the feedback pages Chinese too.
"""

from __future__ import annotations

import csv
import functools
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook, MissingEntry

from autograder import notebooks as nbs
from autograder.course import COURSE_ID
from autograder.grading.preprocessors import parse_test_cell
from checks import _quiz
from tests import _load, unusual, wrong
from tests.wrong import Wrong, exercise_of

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
# A quick local subset: AUTOGRADE_CHAPTERS=efficient_attention,masking grades only those chapters.
ONLY = [c for c in os.environ.get("AUTOGRADE_CHAPTERS", "").split(",") if c]
CHAPTERS = [c for c in nbs.chapter_names() if not ONLY or c in ONLY]
LAYOUT_CHAPTER = CHAPTERS[-1]
CASCADE_CHAPTER = "multi_head_attention"
LANG_CHAPTER = "masking"
# The chapters are graded in runs of GROUP chapters each, in order: a grading run's fixed
# costs (its workers' start, about 5 s of CPU each, the course folder's copy, its records)
# are paid once per group, not once per chapter.
GROUP = 5
GROUPS = [CHAPTERS[i : i + GROUP] for i in range(0, len(CHAPTERS), GROUP)]


def by_chapter(values, chapter_of_value, ids):
    """``values`` as pytest params in chapter order, so that each group of chapters is graded
    when the first test of its first chapter asks for it and read by the tests that follow."""
    order = {c: i for i, c in enumerate(CHAPTERS)}
    ordered = sorted(values, key=lambda v: order[chapter_of_value(v)])  # stable
    return [pytest.param(v, id=ids(v)) for v in ordered]


# ---------------------------------------------------------------- reading the chapters


@functools.cache
def chapter_notebook(chapter: str) -> nbformat.NotebookNode:
    return nbs.read(nbs.notebook_path(chapter))


@functools.cache
def graded_cells(chapter: str) -> tuple[str, ...]:
    """grade_ids of the chapter's autograded test cells, in order."""
    return tuple(
        nbs.nbgrader_meta(c)["grade_id"]
        for c in chapter_notebook(chapter).cells
        if nbs.is_test(c) and c.cell_type == "code"
    )


@functools.cache
def exercises_of_cells(chapter: str) -> dict[str, frozenset[str]]:
    """grade_id of each test cell -> the exercises whose check groups it runs."""
    return {
        nbs.nbgrader_meta(c)["grade_id"]: frozenset(
            exercise_of(call.group) for call in parse_test_cell(c.source)
        )
        for c in chapter_notebook(chapter).cells
        if nbs.is_test(c) and c.cell_type == "code"
    }


def cells_of(chapter: str, exercise: str) -> list[str]:
    """The test cells that grade ``exercise``."""
    return [g for g, exs in exercises_of_cells(chapter).items() if exercise in exs]


@functools.cache
def exercise_chapters() -> dict[str, str]:
    """Every exercise (the grade_id of an answer cell) -> its chapter, reading each notebook once."""
    return {
        nbs.nbgrader_meta(c)["grade_id"]: chapter
        for chapter in nbs.chapter_names()
        for c in chapter_notebook(chapter).cells
        if nbs.is_solution(c) and c.cell_type == "code"
    }


@functools.cache  # called for every wrong and unusual answer, at collection
def chapter_of(target: str) -> str:
    try:
        return exercise_chapters()[target]
    except KeyError:
        raise LookupError(f"no answer cell {target!r} in any chapter") from None


ALL_WRONG = [w for w in wrong.load() if chapter_of(w.target) in CHAPTERS]
ALL_UNUSUAL = [u for u in unusual.load() if chapter_of(u.target) in CHAPTERS]


def end_to_end(answers: list[Wrong]) -> list[Wrong]:
    """The answers graded here: for each exercise, wrong answers whose declared cells cover
    every test cell that any of its wrong answers must fail.

    Every wrong and unusual answer is run through its checks by tests/test_wrong.py (the fast
    tier), directly and, in tests/test_remote.py, through the grader's proxies: that proves the
    groups each fails and the message of each. What only nbgrader can add is how failing groups
    become lost points, test cell by test cell. So, exercise by exercise, wrong answers are
    chosen greedily, the one that fails the most cells not yet covered first (an answer that
    zeroes its inputs, issue 21's forgery, fails every cell, so it is chosen wherever there is
    one), until every cell that a wrong answer declares is covered; with one unusual answer per
    exercise (full marks) and every answer declared ``alone`` (one that disturbs the notebook
    on purpose). ``AUTOGRADE_ALL=1`` grades every answer, as a release check.
    """
    if os.environ.get("AUTOGRADE_ALL"):
        return answers
    chosen = [a for a in answers if a.alone]
    unusual_seen: set[str] = set()
    wrong_by_target: dict[str, list[Wrong]] = {}
    for a in answers:
        if a.alone:
            continue
        if a.failures:
            wrong_by_target.setdefault(a.target, []).append(a)
        elif a.target not in unusual_seen:
            unusual_seen.add(a.target)
            chosen.append(a)
    for candidates in wrong_by_target.values():
        uncovered = set().union(*(a.cells for a in candidates))
        while uncovered:
            best = max(candidates, key=lambda a: len(uncovered & set(a.cells)))  # first wins ties
            chosen.append(best)
            uncovered -= set(best.cells)
    order = {id(a): i for i, a in enumerate(answers)}
    return sorted(chosen, key=lambda a: order[id(a)])


WRONG = end_to_end(ALL_WRONG)
UNUSUAL = end_to_end(ALL_UNUSUAL)


def kind(answer: Wrong) -> str:
    return "wrong" if answer.failures else "unusual"


def where(answer: Wrong) -> str:
    """Where a maintainer finds the answer: ``tests/wrong/masking.py::writes_into_input``."""
    return f"tests/{kind(answer)}/{answer.fn.__module__.rsplit('.', 1)[-1]}.py::{answer.name}"


# ---------------------------------------------------------------- packing


@dataclass(frozen=True)
class Packed:
    """One graded notebook: the chapter with ``answers`` pasted in place of the reference."""

    student: str
    chapter: str
    answers: tuple[Wrong, ...]  # at most one per exercise

    def holding(self, exercise: str) -> Wrong | None:
        """The answer this notebook holds for ``exercise`` (None: the reference)."""
        return next((a for a in self.answers if a.target == exercise), None)

    def expected(self) -> dict[str, tuple[str, list[Wrong]]]:
        """grade_id -> (``"loses"``, ``"full"`` or ``"either"``, the answers it is down to)."""
        out = {}
        for grade_id, exercises in exercises_of_cells(self.chapter).items():
            held = [a for a in map(self.holding, sorted(exercises)) if a is not None]
            wrongs = [a for a in held if a.failures]
            if any(grade_id in a.cells for a in wrongs):
                out[grade_id] = ("loses", [a for a in wrongs if grade_id in a.cells])
            elif wrongs:  # a wrong answer's own cell that it does not declare
                out[grade_id] = ("either", wrongs)
            else:
                out[grade_id] = ("full", held)
        return out


def pack(answers: list[Wrong]) -> list[Packed]:
    """One notebook per slot of each chapter: the k-th answer of each exercise in the k-th.

    ``answers`` in order (wrong answers first, then unusual ones); an answer declared
    ``alone`` gets a notebook of its own.
    """
    slots: dict[str, list[list[Wrong]]] = {}
    alone: list[Packed] = []
    for answer in answers:
        chapter = chapter_of(answer.target)
        if answer.alone:
            n = sum(p.chapter == chapter for p in alone)
            alone.append(Packed(f"alone_{chapter}_{n}", chapter, (answer,)))
            continue
        chapter_slots = slots.setdefault(chapter, [])
        free = (s for s in chapter_slots if all(a.target != answer.target for a in s))
        slot = next(free, None)
        if slot is None:
            chapter_slots.append(slot := [])
        slot.append(answer)
    packed = [
        Packed(f"packed_{chapter}_{k}", chapter, tuple(slot))
        for chapter, chapter_slots in slots.items()
        for k, slot in enumerate(chapter_slots)
    ]
    return packed + alone


PACKED = pack(WRONG + UNUSUAL)
NOTEBOOK_OF = {(a.target, a.name, kind(a)): p for p in PACKED for a in p.answers}


def notebook_of(answer: Wrong) -> Packed:
    return NOTEBOOK_OF[(answer.target, answer.name, kind(answer))]


def with_answers(chapter: str, answers) -> nbformat.NotebookNode:
    """The chapter notebook with these exercises' references replaced by ``answers``."""
    nb = nbs.read(nbs.notebook_path(chapter))
    by_target = {a.target: a for a in answers}
    for cell in nb.cells:
        answer = by_target.get(nbs.nbgrader_meta(cell).get("grade_id"))
        if answer is not None:
            cell.source = answer.inject(cell.source)
    last_test = max(i for i, c in enumerate(nb.cells) if nbs.is_test(c) and c.cell_type == "code")
    for later in nb.cells[last_test + 1 :]:
        if later.cell_type == "code" and not nbs.nbgrader_meta(later):
            later.source = "# emptied for the end-to-end test: no test cell follows"
    return nb


def cascade_answers() -> list[Wrong]:
    """A transpose_qkv that raises (view after permute) and a transpose_output that returns the
    wrong shape; the notebook keeps the reference MultiHeadAttention."""
    names = {"transpose_qkv": "view_after_permute", "transpose_output": "merge_keeps_heads"}
    return [w for w in wrong.load() if names.get(w.target) == w.name]


def student_checks_that_always_fail() -> str:
    return "raise RuntimeError('a student copy of checks/ was imported')\n"


# ---------------------------------------------------------------- grading, one run per group


@dataclass
class Batch:
    """A chapter's part of a grading run, read once: scores, test cells' outputs, problems."""

    chapter: str
    course: object
    subs: Path
    csv: Path
    students: list[str]
    scores: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)
    outputs: dict[tuple[str, str], str] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)

    def score(self, student: str, grade_id: str) -> tuple[float, float]:
        try:
            return self.scores[student, grade_id]
        except KeyError:
            problem = self.problems.get(student, "no problem reported either")
            raise AssertionError(f"{student} has no grade for {grade_id}: {problem}") from None


def _text(outputs) -> str:
    parts = []
    for out in outputs:
        if out.output_type == "stream":
            parts.append(out.text)
        elif out.output_type == "error":
            parts.append(f"{out.ename}: {out.evalue}")
        else:
            parts.append(str(out.get("data", {}).get("text/plain", "")))
    return "\n".join(parts)


def submit(chapter: str, subs: Path, release: Path) -> list[str]:
    """Write the chapter's submissions into ``subs``; their students, in order."""
    students = [f"reference_{chapter}", f"blank_{chapter}"]
    shutil.copy(nbs.notebook_path(chapter), subs / f"reference_{chapter}.ipynb")
    shutil.copy(release / chapter / f"{chapter}.ipynb", subs / f"blank_{chapter}.ipynb")
    for packed in (p for p in PACKED if p.chapter == chapter):
        nbformat.write(with_answers(chapter, packed.answers), subs / f"{packed.student}.ipynb")
        students.append(packed.student)
    if chapter == CASCADE_CHAPTER:
        nbformat.write(with_answers(chapter, cascade_answers()), subs / f"cascade_{chapter}.ipynb")
        students.append(f"cascade_{chapter}")
    if chapter == LAYOUT_CHAPTER:
        layout = subs / "layout_student" / chapter
        layout.mkdir(parents=True)
        shutil.copy(nbs.notebook_path(chapter), layout / "whatever-the-lms-called-it.ipynb")
        cheater = subs / "cheater" / chapter
        (cheater / "checks").mkdir(parents=True)
        (cheater / "checks" / "__init__.py").write_text(student_checks_that_always_fail())
        shutil.copy(nbs.notebook_path(chapter), cheater / f"{chapter}.ipynb")
        students += ["layout_student", "cheater"]
    return students


def grade_batch(chapters: list[str], tmp: Path, released_copy) -> dict[str, Batch]:
    """Grade ``chapters`` in one run; each chapter's :class:`Batch`, read back."""
    course = released_copy(tmp / "course", CHAPTERS)  # released once per test run, then copied
    subs = tmp / "submissions"
    subs.mkdir()
    students = {chapter: submit(chapter, subs, course.root / "release") for chapter in chapters}
    out = tmp / "grades.csv"
    total = sum(len(names) for names in students.values())
    with _load.one_busy_core(course.root / "gradebook.db", total) as spinners:
        start = time.monotonic()
        assert course.grade(subs, None, out, jobs=_load.JOBS) == 0
    print(
        f"\n{total} notebooks of {', '.join(chapters)}: {_load.JOBS} jobs on one core "
        f"({len(spinners)} spinning process(es) for the last ones), {time.monotonic() - start:.0f} s"
    )
    with open(out.with_name("problems.csv"), newline="") as f:
        problems = {row["student_id"]: row["problem"] for row in csv.DictReader(f)}
    batches = {}
    with Gradebook(course.db_url, course_id=COURSE_ID) as gb:
        for chapter in chapters:
            batch = batches[chapter] = Batch(chapter, course, subs, out, students[chapter])
            batch.problems = {s: p for s, p in problems.items() if s in students[chapter]}
            for student in students[chapter]:
                try:
                    submission = gb.find_submission(chapter, student)
                except MissingEntry:
                    continue
                for notebook in submission.notebooks:
                    for grade in notebook.grades:
                        batch.scores[student, grade.name] = (grade.score, grade.max_score)
    for chapter, batch in batches.items():
        for student in batch.students:
            path = course.root / "autograded" / student / chapter / f"{chapter}.ipynb"
            if path.exists():
                for cell in nbs.read(path).cells:
                    grade_id = nbs.nbgrader_meta(cell).get("grade_id")
                    if grade_id in exercises_of_cells(chapter):
                        batch.outputs[student, grade_id] = _text(cell.get("outputs", []))
    return batches


@pytest.fixture(scope="module")
def graded(tmp_path_factory, released_copy):
    """``graded(chapter)``: the chapter's batch, graded with its group (``GROUPS``) the first
    time a test asks for one of the group's chapters."""
    batches: dict[str, Batch | Exception] = {}

    def get(chapter: str) -> Batch:
        if chapter not in batches:
            group = next(g for g in GROUPS if chapter in g)
            try:
                tmp = tmp_path_factory.mktemp(f"autograde-{group[0]}")
                batches.update(grade_batch(group, tmp, released_copy))
            except Exception as err:  # every test of the group reports it, none grades again
                batches.update(dict.fromkeys(group, err))
                raise
        result = batches[chapter]
        if isinstance(result, Exception):
            raise AssertionError(f"grading {chapter} failed: {result}") from result
        return result

    return get


# ---------------------------------------------------------------- the packing itself (no grading)


def test_packing_holds_every_answer_once_and_one_per_exercise():
    """Is every wrong and unusual answer in exactly one notebook, with at most one answer per
    exercise in a notebook, every declared cell a cell of its exercise, and as few notebooks
    per chapter as its busiest exercise has answers?"""
    placed = [(a.target, a.name, kind(a)) for p in PACKED for a in p.answers]
    assert sorted(placed) == sorted((a.target, a.name, kind(a)) for a in WRONG + UNUSUAL)
    assert len(placed) == len(set(placed))
    for p in PACKED:
        targets = [a.target for a in p.answers]
        assert len(targets) == len(set(targets)), p.student
        assert all(chapter_of(t) == p.chapter for t in targets), p.student
        assert all(not a.alone for a in p.answers) or len(p.answers) == 1, p.student
    for w in ALL_WRONG:
        for grade_id in w.cells:
            assert w.target in exercises_of_cells(chapter_of(w.target)).get(grade_id, ()), (
                f"{where(w)} declares {grade_id}, which is no test cell of {w.target}"
            )
    for chapter in CHAPTERS:
        counts: dict[str, int] = {}
        for a in WRONG + UNUSUAL:
            if chapter_of(a.target) == chapter and not a.alone:
                counts[a.target] = counts.get(a.target, 0) + 1
        packed = [p for p in PACKED if p.chapter == chapter and p.student.startswith("packed_")]
        assert len(packed) == max(counts.values(), default=0), chapter
    if CASCADE_CHAPTER in CHAPTERS:
        assert len(cascade_answers()) == 2


@pytest.mark.skipif("masking" not in CHAPTERS, reason="chapter not selected")
def test_a_packed_notebook_expects_the_union_of_its_declarations():
    """With a wrong sequence_mask and an unusual masked_softmax in one notebook, are exactly the
    wrong answer's declared cells expected to lose, its other cells left open, and every cell
    of masked_softmax and of the questions expected to keep full marks?"""
    bad = next(
        w for w in ALL_WRONG if w.target == "sequence_mask" and w.name == "writes_into_input"
    )
    good = next(u for u in ALL_UNUSUAL if u.target == "masked_softmax")
    expected = Packed("example", "masking", (bad, good)).expected()
    assert set(expected) == set(graded_cells("masking"))
    verdicts = {g: v for g, (v, _) in expected.items()}
    assert {g for g, v in verdicts.items() if v == "loses"} == set(bad.cells)
    assert {g for g, v in verdicts.items() if v == "either"} == (
        set(cells_of("masking", "sequence_mask")) - set(bad.cells)
    )
    assert expected["hidden_masked_softmax_values"] == ("full", [good])
    assert expected["test_quiz_2_1"] == ("full", [])


# ---------------------------------------------------------------- reference and blank


@pytest.mark.parametrize("chapter", by_chapter(CHAPTERS, str, str))
def test_reference_earns_full_marks_on_every_autograded_cell(graded, chapter):
    """Graded on a core oversubscribed 3:1, does the reference solution score full marks on
    every test cell, hidden ones included, with no problem (time-out, retry, interrupted cell)
    reported?"""
    batch = graded(chapter)
    assert graded_cells(chapter)
    for grade_id in graded_cells(chapter):
        got, top = batch.score(f"reference_{chapter}", grade_id)
        assert top > 0 and got == top, f"{chapter}/{grade_id}: {got} of {top}"
    assert f"reference_{chapter}" not in batch.problems


@pytest.mark.parametrize("chapter", by_chapter(CHAPTERS, str, str))
def test_untouched_release_scores_zero(graded, chapter):
    """Does an untouched student notebook score zero without crashing the grader?"""
    batch = graded(chapter)
    for grade_id in graded_cells(chapter):
        got, top = batch.score(f"blank_{chapter}", grade_id)
        assert got == 0 and top > 0, f"{chapter}/{grade_id}: {got} of {top}"


# ---------------------------------------------------------------- packed answers


def mismatches(batch: Batch, packed: Packed) -> list[str]:
    """Every cell of ``packed`` whose score is not what its answers declare, and why."""
    out = []
    for grade_id, (verdict, answers) in packed.expected().items():
        got, top = batch.score(packed.student, grade_id)
        ok = top > 0 and (
            got < top if verdict == "loses" else got == top if verdict == "full" else True
        )
        if not ok:
            holders = {a.target: a for a in answers}
            holds = ", ".join(
                f"{ex} holds {where(holders[ex]) if ex in holders else 'the reference'}"
                for ex in sorted(exercises_of_cells(packed.chapter)[grade_id])
            )
            want = {"loses": "less than full marks", "full": "full marks"}[verdict]
            out.append(f"{grade_id}: {got} of {top}, expected {want} ({holds})")
    return out


@pytest.mark.parametrize("packed", by_chapter(PACKED, lambda p: p.chapter, lambda p: p.student))
def test_packed_notebook_scores_what_its_answers_declare(graded, packed):
    """Does each packed notebook lose points on every cell its wrong answers declare, and only
    there and on their own exercises' cells: full marks on every exercise that holds the
    reference or an unusual answer, and no problem reported?"""
    batch = graded(packed.chapter)
    bad = mismatches(batch, packed)
    answers = "\n  ".join(f"{a.target}: {where(a)}" for a in packed.answers)
    problem = batch.problems.get(packed.student)
    assert not bad and problem is None, (
        f"{packed.student} ({packed.chapter}) scored other than its answers declare:\n  "
        + "\n  ".join(bad)
        + (f"\nproblem reported: {problem}" if problem else "")
        + f"\nits answers:\n  {answers}\n(an answer meant to disturb other exercises "
        "may declare alone=True)"
    )


@pytest.mark.parametrize(
    "answer", by_chapter(WRONG, lambda w: chapter_of(w.target), lambda w: f"{w.target}-{w.name}")
)
def test_wrong_answer_loses_points_on_its_cells(graded, answer):
    """Does each known-wrong implementation lose points on every test cell it declares, for the
    reason it declares (its message fragment is in the cell's output), in a notebook that
    graded without a problem?"""
    packed = notebook_of(answer)
    batch = graded(packed.chapter)
    assert batch.problems.get(packed.student) is None, (
        f"{where(answer)} ({packed.student}): {batch.problems[packed.student]}"
    )
    assert answer.failures
    for group, fragment in answer.failures:
        grade_id = wrong.cell_for(group)
        got, top = batch.score(packed.student, grade_id)
        assert top > 0 and got < top, (
            f"{where(answer)} ({packed.student}) kept {got} of {top} on {grade_id}"
        )
        output = batch.outputs.get((packed.student, grade_id), "")
        if _quiz.is_question(group) and fragment not in output:
            # A release's visible question check confirms the form only (issue 22): an answer
            # of the right form is recorded there, without the self-study hint it declares,
            # and its hidden key's group decides. An answer of the wrong form fails it as
            # declared.
            assert "graded after the deadline" in output, (where(answer), fragment, output)
            continue
        assert fragment in output, (
            f"{where(answer)} ({packed.student}) lost {grade_id}, but not with {fragment!r}; "
            f"the cell's output:\n{output}"
        )


@pytest.mark.parametrize(
    "answer",
    by_chapter(UNUSUAL, lambda u: chapter_of(u.target), lambda u: f"{u.target}-{u.name}"),
)
def test_unusual_answer_keeps_full_marks(graded, answer):
    """Does each correct but unusual answer keep full marks on every test cell of its exercise?"""
    packed = notebook_of(answer)
    batch = graded(packed.chapter)
    cells = cells_of(packed.chapter, answer.target)
    assert cells
    for grade_id in cells:
        got, top = batch.score(packed.student, grade_id)
        assert top > 0 and got == top, (
            f"{where(answer)} ({packed.student}) got {got} of {top} on {grade_id}"
        )


@pytest.mark.skipif(CASCADE_CHAPTER not in CHAPTERS, reason="chapter not selected")
def test_a_wrong_earlier_exercise_costs_nothing_in_a_later_one(graded):
    """With transpose_qkv and transpose_output wrong, does every other exercise of the chapter
    keep full marks, the right MultiHeadAttention (whose checks use their own transposes) and
    the later questions included, while 7.2 loses exactly the points its answers declare?"""
    student, chapter = f"cascade_{CASCADE_CHAPTER}", CASCADE_CHAPTER
    batch = graded(chapter)
    answers = cascade_answers()
    broken = {a.target for a in answers}
    assert broken == {"transpose_qkv", "transpose_output"}
    cascade = Packed(student, chapter, tuple(answers))
    assert cells_of(chapter, "MultiHeadAttention")
    assert not mismatches(batch, cascade), mismatches(batch, cascade)
    assert student not in batch.problems
    for grade_id, exercises in exercises_of_cells(chapter).items():
        got, top = batch.score(student, grade_id)
        if exercises & broken:
            assert got < top, f"{grade_id}: {got} of {top}"
        else:
            assert top > 0 and got == top, f"{grade_id}: {got} of {top}"


# ---------------------------------------------------------------- in another language


def _has_chinese(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


@pytest.mark.skipif(LANG_CHAPTER not in CHAPTERS, reason="chapter not selected")
def test_the_same_answers_in_chinese_earn_the_same_grades(graded, released_copy, tmp_path):
    """Graded by a course that released the chapter in Chinese, do the Chinese forms of the
    reference and of a packed notebook of wrong answers score exactly what their English
    twins scored, cell by cell (points and pass or fail), with the checks' messages in
    Chinese, no problem reported, and Chinese feedback pages?"""
    from autograder.book.i18n_stage import translate_chapter
    from autograder.results.feedback import feedback

    chapter, page = LANG_CHAPTER, f"book/{LANG_CHAPTER}"
    batch = graded(chapter)
    packed = next(p for p in PACKED if p.student == f"packed_{chapter}_0")
    twins = {
        f"reference_{chapter}": nbs.read(nbs.notebook_path(chapter)),
        packed.student: with_answers(chapter, packed.answers),
    }
    course = released_copy(tmp_path / "course", [chapter], lang="zh")
    subs = tmp_path / "submissions"
    subs.mkdir()
    for student, nb in twins.items():
        nbformat.write(translate_chapter(nb, "zh", page), subs / f"{student}.ipynb")
    out = tmp_path / "grades.csv"
    assert course.grade(subs, chapter, out) == 0
    with open(out.with_name("problems.csv"), newline="") as f:
        assert not list(csv.DictReader(f))
    with Gradebook(course.db_url, course_id=COURSE_ID) as gb:
        chinese = {
            (student, grade.name): (grade.score, grade.max_score)
            for student in twins
            for notebook in gb.find_submission(chapter, student).notebooks
            for grade in notebook.grades
        }
    english = {key: value for key, value in batch.scores.items() if key[0] in twins}
    assert chinese == english  # every grade cell, its points and so its pass or fail
    lost = [
        g
        for g in graded_cells(chapter)
        if english[packed.student, g][0] < english[packed.student, g][1]
    ]
    reference = f"reference_{chapter}"
    kept = [
        g for g in graded_cells(chapter) if english[reference, g][0] == english[reference, g][1]
    ]
    assert lost and kept  # both verdicts compared: the wrong answers lose, the reference keeps
    graded_nb = nbs.read(course.root / "autograded" / packed.student / chapter / f"{chapter}.ipynb")
    messages = {
        nbs.nbgrader_meta(c).get("grade_id"): _text(c.get("outputs", [])) for c in graded_nb.cells
    }
    assert all(_has_chinese(messages[g]) for g in lost), {g: messages[g] for g in lost}
    assert not any(_has_chinese(batch.outputs[packed.student, g]) for g in lost)
    pages = feedback(course, chapter)
    assert len(pages) == len(twins)
    for path in pages:
        text = path.read_text(encoding="utf-8")
        assert '<html lang="zh-CN">' in text and "分数：" in text and "Score:" not in text


# ---------------------------------------------------------------- what the grader reads and writes


@pytest.mark.parametrize("chapter", by_chapter(CHAPTERS, str, str))
def test_grades_csv_lists_every_submission(graded, chapter):
    """Does grades.csv, in nbgrader's format, hold a row for each graded notebook?"""
    batch = graded(chapter)
    rows = list(csv.DictReader(batch.csv.open()))
    assert batch.csv.read_text().startswith("assignment,duedate,timestamp,student_id")
    students = {r["student_id"] for r in rows if r["assignment"] == chapter}
    assert set(batch.students) <= students
    assert {s for s, _ in batch.scores} == set(batch.students)  # every one graded


@pytest.mark.parametrize("chapter", by_chapter(CHAPTERS, str, str))
def test_release_has_stubs_but_no_solutions_or_hidden_tests(released, chapter):
    """Does the student notebook keep the self-checks but lose solutions and hidden tests?"""
    release = released(CHAPTERS) / "release" / chapter
    text = (release / f"{chapter}.ipynb").read_text()
    assert "raise NotImplementedError()" in text and "checks.run(" in text
    for marker in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "run_hidden"):
        assert marker not in text
    code = [c.source for c in nbs.read(release / f"{chapter}.ipynb").cells if c.cell_type == "code"]
    assert not any(nbs.SAVE_LINE.match(line) for src in code for line in src.splitlines())
    assert not (release / "checks" / "hidden").exists()
    assert (release / "checks" / "_core.py").exists()
    from solutions import SOURCES

    shipped = {p.stem for p in (release / "solutions").glob("*.py")} - {"__init__"}
    order = nbs.chapter_names()  # every chapter: CHAPTERS may be a subset (AUTOGRADE_CHAPTERS)
    assert all(order.index(SOURCES[m]) < order.index(chapter) for m in shipped)
    assert chapter not in {SOURCES[m] for m in shipped}


def test_grades_an_nbgrader_layout(graded):
    """Does `grade` accept a <student>/<chapter>/<notebook> folder as nbgrader lays it out?"""
    batch = graded(LAYOUT_CHAPTER)
    for grade_id in graded_cells(LAYOUT_CHAPTER):
        got, top = batch.score("layout_student", grade_id)
        assert top > 0 and got == top, f"{grade_id}: {got} of {top}"


def test_a_student_copy_of_checks_never_reaches_the_grader(graded):
    """If a submission folder holds a checks/ package that always raises, are full marks kept,
    and is the student's folder left exactly as it was sent?"""
    batch = graded(LAYOUT_CHAPTER)
    for grade_id in graded_cells(LAYOUT_CHAPTER):
        got, top = batch.score("cheater", grade_id)
        assert top > 0 and got == top, f"{grade_id}: {got} of {top}"
    folder = batch.subs / "cheater" / LAYOUT_CHAPTER
    sent = {
        "checks/__init__.py": student_checks_that_always_fail().encode(),
        f"{LAYOUT_CHAPTER}.ipynb": nbs.notebook_path(LAYOUT_CHAPTER).read_bytes(),
    }
    found = {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }
    assert found == sent  # nothing added, removed or changed in the student's folder
    assert json.loads(found[f"{LAYOUT_CHAPTER}.ipynb"])
