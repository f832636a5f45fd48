"""End to end with nbgrader: release every chapter, then grade reference, blank and wrong answers.

One folder of submissions is graded in a single run, as an instructor would: the
reference notebooks, the untouched student notebooks, the known-wrong implementations
(tests/wrong) and the correct but unusual ones (tests/unusual) injected in place of the
reference, a submission in nbgrader's
``<student>/<chapter>/`` layout, and one that sends its own ``checks/`` package.

Each notebook costs a kernel, so the wrong answers are packed: a notebook carries at
most one wrong answer per exercise, and never two for exercises where one uses the
other (``MultiHeadAttention`` calls ``transpose_qkv``), so that a lost point can only
come from the wrong answer that the test names. Code cells after the chapter's last
test cell cannot change a score and are emptied.
"""

import ast
import functools
import json
import os
import shutil

import nbformat
import pytest
from nbgrader.api import Gradebook

from autograder import notebooks as nbs
from autograder.course import COURSE_ID, Course
from tests import unusual, wrong

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
# A quick local subset: AUTOGRADE_CHAPTERS=efficient_attention,masking grades only those chapters.
ONLY = [c for c in os.environ.get("AUTOGRADE_CHAPTERS", "").split(",") if c]
CHAPTERS = [c for c in nbs.chapter_names() if not ONLY or c in ONLY]
LAYOUT_CHAPTER = CHAPTERS[-1]


def graded_cells(chapter):
    return [
        nbs.nbgrader_meta(c)["grade_id"]
        for c in nbs.read(nbs.notebook_path(chapter)).cells
        if nbs.is_test(c)
    ]


@functools.cache  # called for every wrong and unusual answer, at collection
def chapter_of(target: str) -> str:
    for chapter in nbs.chapter_names():
        if any(
            nbs.nbgrader_meta(c).get("grade_id") == target
            for c in nbs.read(nbs.notebook_path(chapter)).cells
        ):
            return chapter
    raise LookupError(target)


WRONG = [w for w in wrong.load() if chapter_of(w.target) in CHAPTERS]
UNUSUAL = [u for u in unusual.load() if chapter_of(u.target) in CHAPTERS]


def _names(source: str) -> set[str]:
    return {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}


def related_exercises(chapter: str) -> dict[str, set[str]]:
    """exercise -> the exercises of the chapter it uses or that use it (answers and wrong answers)."""
    cells = {
        nbs.nbgrader_meta(c)["grade_id"]: nbs.without_markers(c.source)
        for c in nbs.read(nbs.notebook_path(chapter)).cells
        if c.cell_type == "code" and nbs.is_solution(c)
    }
    defines = {
        ex: {
            node.name
            for node in ast.parse(src).body
            if isinstance(node, ast.FunctionDef | ast.ClassDef)
        }
        for ex, src in cells.items()
    }
    uses = {ex: _names(src) for ex, src in cells.items()}
    for w in WRONG:
        if w.target in uses:
            uses[w.target] |= _names("\n".join(w.body()))
    related = {ex: set() for ex in cells}
    for a in cells:
        for b in cells:
            if a != b and uses[a] & defines[b]:
                related[a].add(b)
                related[b].add(a)
    return related


def packed() -> dict[str, tuple[str, list]]:
    """student id -> (chapter, wrong answers) for the wrong-answer notebooks."""
    notebooks: dict[str, tuple[str, list]] = {}
    related = {ch: related_exercises(ch) for ch in CHAPTERS}
    for w in WRONG:
        chapter = chapter_of(w.target)
        k = 0
        while True:
            student = f"wrong_{chapter}_{k}"
            _, placed = notebooks.setdefault(student, (chapter, []))
            taken = {p.target for p in placed}
            if w.target not in taken and not taken & related[chapter][w.target]:
                placed.append(w)
                break
            k += 1
    return notebooks


PACKED = packed()
STUDENT_OF = {(w.target, w.name): s for s, (_, ws) in PACKED.items() for w in ws}


def packed_unusual() -> dict[str, tuple[str, list]]:
    """student id -> (chapter, unusual answers): one answer per exercise and notebook.

    All are correct, so exercises that use one another may share a notebook.
    """
    notebooks: dict[str, tuple[str, list]] = {}
    for u in UNUSUAL:
        chapter, k = chapter_of(u.target), 0
        while u.target in {
            p.target for p in notebooks.setdefault(f"unusual_{chapter}_{k}", (chapter, []))[1]
        }:
            k += 1
        notebooks[f"unusual_{chapter}_{k}"][1].append(u)
    return notebooks


PACKED_UNUSUAL = packed_unusual()
UNUSUAL_STUDENT_OF = {(u.target, u.name): s for s, (_, us) in PACKED_UNUSUAL.items() for u in us}


def with_wrong_answers(chapter, wrongs):
    """The chapter notebook with these exercises' references replaced by wrong answers."""
    nb = nbs.read(nbs.notebook_path(chapter))
    by_target = {w.target: w for w in wrongs}
    for cell in nb.cells:
        wrong = by_target.get(nbs.nbgrader_meta(cell).get("grade_id"))
        if wrong is not None:
            cell.source = wrong.inject(cell.source)
    last_test = max(i for i, c in enumerate(nb.cells) if nbs.is_test(c) and c.cell_type == "code")
    for later in nb.cells[last_test + 1 :]:
        if later.cell_type == "code" and not nbs.nbgrader_meta(later):
            later.source = "# emptied for the wrong-answer test: no test cell follows"
    return nb


CASCADE_CHAPTER = "multi_head_attention"


def cascade_notebook():
    """The multi-head chapter with a transpose_qkv that raises (view after permute) and a
    transpose_output that returns the wrong shape, but the reference MultiHeadAttention."""
    split = next(w for w in wrong.load() if w.name == "view_after_permute")
    merge = next(w for w in wrong.load() if w.name == "merge_keeps_heads")
    return with_wrong_answers(CASCADE_CHAPTER, [split, merge])


def student_checks_that_always_fail() -> str:
    return "raise RuntimeError('a student copy of checks/ was imported')\n"


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("course")
    course = Course(tmp / "course")
    course.release()
    subs = tmp / "submissions"
    subs.mkdir()
    for chapter in CHAPTERS:
        shutil.copy(nbs.notebook_path(chapter), subs / f"reference_{chapter}.ipynb")
        shutil.copy(
            course.root / "release" / chapter / f"{chapter}.ipynb", subs / f"blank_{chapter}.ipynb"
        )
    for student, (chapter, answers) in (PACKED | PACKED_UNUSUAL).items():
        nbformat.write(with_wrong_answers(chapter, answers), subs / f"{student}.ipynb")
    if CASCADE_CHAPTER in CHAPTERS:
        nbformat.write(cascade_notebook(), subs / f"cascade_{CASCADE_CHAPTER}.ipynb")
    layout = subs / "layout_student" / LAYOUT_CHAPTER
    layout.mkdir(parents=True)
    shutil.copy(nbs.notebook_path(LAYOUT_CHAPTER), layout / "whatever-the-lms-called-it.ipynb")
    cheater = subs / "cheater" / LAYOUT_CHAPTER
    (cheater / "checks").mkdir(parents=True)
    (cheater / "checks" / "__init__.py").write_text(student_checks_that_always_fail())
    shutil.copy(nbs.notebook_path(LAYOUT_CHAPTER), cheater / f"{LAYOUT_CHAPTER}.ipynb")
    assert course.grade(subs, None, tmp / "grades.csv") == 0
    course.csv = tmp / "grades.csv"
    course.subs = subs
    return course


def score(course, student, chapter, grade_id):
    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}", course_id=COURSE_ID) as gb:
        grade = gb.find_grade(grade_id, chapter, chapter, student)
        return grade.score, grade.max_score


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_reference_earns_full_marks_on_every_autograded_cell(course, chapter):
    """Does the reference solution score full marks on every test cell, hidden ones included?"""
    for grade_id in graded_cells(chapter):
        got, top = score(course, f"reference_{chapter}", chapter, grade_id)
        assert top > 0 and got == top, f"{chapter}/{grade_id}: {got} of {top}"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_untouched_release_scores_zero(course, chapter):
    """Does an untouched student notebook score zero without crashing the grader?"""
    for grade_id in graded_cells(chapter):
        got, top = score(course, f"blank_{chapter}", chapter, grade_id)
        assert got == 0 and top > 0, f"{chapter}/{grade_id}: {got} of {top}"


def test_packing_never_puts_related_exercises_together():
    """Does each wrong-answer notebook hold one answer per exercise, none using another?"""
    for student, (chapter, wrongs) in PACKED.items():
        targets = [w.target for w in wrongs]
        assert len(targets) == len(set(targets)), student
        related = related_exercises(chapter)
        for t in targets:
            assert not related[t] & set(targets), (student, t, related[t])
    if "multi_head_attention" in CHAPTERS:
        assert related_exercises("multi_head_attention")["MultiHeadAttention"] >= {"transpose_qkv"}
    assert len(STUDENT_OF) == len(WRONG)


@pytest.mark.parametrize("wrong", WRONG, ids=lambda w: f"{w.target}-{w.name}")
def test_wrong_answer_loses_points_on_its_cells(course, wrong):
    """Does each known-wrong implementation lose points on every test cell that targets it?"""
    student = STUDENT_OF[(wrong.target, wrong.name)]
    chapter = PACKED[student][0]
    for grade_id in wrong.cells:
        got, top = score(course, student, chapter, grade_id)
        assert got < top, f"{wrong.name} ({student}) kept {got} of {top} on {grade_id}"


@pytest.mark.parametrize("answer", UNUSUAL, ids=lambda u: f"{u.target}-{u.name}")
def test_unusual_answer_keeps_full_marks(course, answer):
    """Does each correct but unusual answer keep full marks on every test cell of its exercise?"""
    student = UNUSUAL_STUDENT_OF[(answer.target, answer.name)]
    chapter = PACKED_UNUSUAL[student][0]
    cells = [
        g
        for g in graded_cells(chapter)
        if g.removeprefix("hidden_").removeprefix("test_").startswith(answer.target)
        or wrong.exercise_of(g.removeprefix("test_")) == answer.target  # test_quiz_7_1
    ]
    assert cells
    for grade_id in cells:
        got, top = score(course, student, chapter, grade_id)
        assert top > 0 and got == top, f"{answer.name} ({student}) got {got} of {top} on {grade_id}"


@pytest.mark.skipif(CASCADE_CHAPTER not in CHAPTERS, reason="chapter not selected")
def test_a_wrong_earlier_exercise_costs_nothing_in_a_later_one(course):
    """With transpose_qkv and transpose_output wrong, does a right MultiHeadAttention keep full
    marks (the checks use their own transposes) while 7.2 loses its points?"""
    student, chapter = f"cascade_{CASCADE_CHAPTER}", CASCADE_CHAPTER
    for grade_id in graded_cells(chapter):
        got, top = score(course, student, chapter, grade_id)
        if "MultiHeadAttention" in grade_id:
            assert top > 0 and got == top, f"{grade_id}: {got} of {top}"
        if "transpose" in grade_id:
            assert got < top, f"{grade_id}: {got} of {top}"


def test_grades_csv_lists_every_submission(course):
    """Does grades.csv, in nbgrader's format, hold a row for each graded notebook?"""
    rows = course.csv.read_text().splitlines()
    assert rows[0].startswith("assignment,duedate,timestamp,student_id")
    students = {line.split(",")[3] for line in rows[1:]}
    assert {f"reference_{c}" for c in CHAPTERS} <= students
    assert {f"blank_{c}" for c in CHAPTERS} <= students
    assert set(PACKED) | set(PACKED_UNUSUAL) | {"layout_student", "cheater"} <= students


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_release_has_stubs_but_no_solutions_or_hidden_tests(course, chapter):
    """Does the student notebook keep the self-checks but lose solutions and hidden tests?"""
    release = course.root / "release" / chapter
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


def test_grades_an_nbgrader_layout(course):
    """Does `grade` accept a <student>/<chapter>/<notebook> folder as nbgrader lays it out?"""
    for grade_id in graded_cells(LAYOUT_CHAPTER):
        got, top = score(course, "layout_student", LAYOUT_CHAPTER, grade_id)
        assert top > 0 and got == top, f"{grade_id}: {got} of {top}"


def test_a_student_copy_of_checks_never_reaches_the_grader(course):
    """If a submission folder holds a checks/ package that always raises, are full marks kept?"""
    for grade_id in graded_cells(LAYOUT_CHAPTER):
        got, top = score(course, "cheater", LAYOUT_CHAPTER, grade_id)
        assert top > 0 and got == top, f"{grade_id}: {got} of {top}"
    folder = course.subs / "cheater" / LAYOUT_CHAPTER
    assert (folder / "checks" / "__init__.py").read_text() == student_checks_that_always_fail()
    assert json.loads((folder / f"{LAYOUT_CHAPTER}.ipynb").read_text())  # left untouched
