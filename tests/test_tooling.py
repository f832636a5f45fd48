"""Do the generated copies stay true to the notebooks: solutions/ and the book's reader edition?"""

import ast
import re
import shutil

import nbformat

from autograder import export, questions
from autograder import notebooks as nbs
from autograder.editions import OUTPUTS_NOTE, stage_book


def test_committed_solutions_match_the_notebooks():
    """Is solutions/ exactly what the #@save cells of the notebooks generate?"""
    assert export.export(check=True) == 0


def test_drift_is_detected(tmp_path, capsys):
    """If someone edits a #@save cell, does the check fail with a diff?"""
    shutil.copytree(nbs.ROOT / "book", tmp_path / "book")
    shutil.copytree(nbs.ROOT / "solutions", tmp_path / "solutions")
    shutil.copy(nbs.ROOT / "_toc.yml", tmp_path / "_toc.yml")
    path = tmp_path / "book" / "masking.ipynb"
    nb = nbs.read(path)
    cell = next(c for c in nb.cells if nbs.nbgrader_meta(c).get("grade_id") == "masked_softmax")
    cell.source = cell.source.replace('float("-inf")', "-1e6")
    nbformat.write(nb, path)
    assert export.export(check=True, root=tmp_path) == 1
    out = capsys.readouterr().out
    assert '-    scores = X.masked_fill(~mask, float("-inf"))' in out
    assert "+    scores = X.masked_fill(~mask, -1e6)" in out


def test_every_graded_function_is_exported():
    """Is every autograded answer that defines code also a #@save cell, so solutions/ holds it?"""
    for path in nbs.chapter_notebooks():
        for cell in nbs.read(path).cells:
            defines = any(line.startswith(("def ", "class ")) for line in cell.source.splitlines())
            if cell.cell_type == "code" and nbs.is_solution(cell) and defines:
                assert nbs.saved_module(cell), f"{path.name}: {cell.source[:60]!r}"


def test_reader_edition_shows_stub_then_hidden_solution(tmp_path):
    """Does the book show each exercise's stub, the solution behind a toggle, and no hidden test?"""
    stage_book(tmp_path)
    for path in nbs.chapter_notebooks():
        nb = nbs.read(tmp_path / "book" / path.name)
        text = nbformat.writes(nb)
        for marker in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "run_hidden", '"nbgrader"'):
            assert marker not in text, f"{path.name} contains {marker}"
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        assert not any(nbs.SAVE_LINE.match(line) for line in code.splitlines())
        stubs = [c for c in nb.cells if "skip-execution" in c.metadata.get("tags", [])]
        # the solution cells keep their ids (long demo code is folded with hide-input as well)
        exercises = {
            c.id for c in nbs.read(path).cells if c.cell_type == "code" and nbs.is_solution(c)
        }
        solutions = [c for c in nb.cells if c.id in exercises]
        assert stubs and len(stubs) == len(solutions) == len(exercises)
        assert all("hide-input" in c.metadata.get("tags", []) for c in solutions)
        for stub in stubs:
            assert "raise NotImplementedError()" in stub.source
            # the ✓ outputs under a stub are the reference's: a note says so, then the solution
            i = nb.cells.index(stub)
            note, solution = nb.cells[i + 1], nb.cells[i + 2]
            assert note.cell_type == "markdown" and note.source == OUTPUTS_NOTE["reader"]
            assert "hide-input" in solution.metadata.get("tags", [])
        assert "A model answer" in text and ":class: dropdown" in text


def test_student_edition_says_whose_outputs_follow_a_stub(tmp_path):
    """Does every stub of an exercise in the student edition say that the outputs after it are
    the reference's? (A question's stub has none: its check shows no output there.)"""
    stage_book(tmp_path, edition="student")
    for path in nbs.chapter_notebooks():
        cells = nbs.read(tmp_path / "book" / path.name).cells
        stubs = [i for i, c in enumerate(cells) if "skip-execution" in c.metadata.get("tags", [])]
        asked = {c.id for c in nbs.read(path).cells if questions.is_question(c)}
        stubs = [i for i in stubs if cells[i].id.removesuffix("-stub") not in asked]
        assert stubs, path.name
        for i in stubs:
            assert cells[i + 1].source == OUTPUTS_NOTE["student"], (path.name, i)
            assert "Show solution" not in cells[i + 1].source
            assert cells[i + 2].metadata.get("edition") == "student-reference", (path.name, i)


def test_demo_cells_come_after_every_test_cell():
    """Is every cell the grader skips (tag `demo`) a plain code cell after the chapter's tests?

    The short conceptual questions ("Check your understanding", before the summary) may come
    after demo cells: their test cells read only the answer variable of their own question.
    """
    for path in nbs.chapter_notebooks():
        cells = nbs.read(path).cells
        last_test = max(i for i, c in enumerate(cells) if nbs.is_test(c) and not is_quiz_test(c))
        for i, cell in enumerate(cells):
            if nbs.DEMO_TAG in cell.metadata.get("tags", []):
                assert i > last_test, f"{path.name}: demo cell {i} before test cell {last_test}"
                assert cell.cell_type == "code" and not nbs.nbgrader_meta(cell), (path.name, i)


def is_quiz_test(cell) -> bool:
    """A test cell of a short question: it runs only ``quiz_*`` groups, on its answer variable."""
    grade_id = nbs.nbgrader_meta(cell).get("grade_id", "")
    if not (nbs.is_test(cell) and grade_id.startswith("test_quiz_")):
        return False
    answer = "answer_" + grade_id.removeprefix("test_quiz_")
    names = {
        n.id
        for n in ast.walk(ast.parse(nbs.without_markers(cell.source)))
        if isinstance(n, ast.Name)
    }
    return names <= {"checks", answer}


def test_the_slow_demos_are_tagged():
    """Are the training loops (the slowest cells of the book) tagged `demo`?"""
    for chapter, marker in [
        ("additive_attention", "optimizer.step()"),
        ("transformer_block", "optimizer.step()"),
        ("multi_head_attention", "optimizer.step()"),
        ("encoder_decoder", "optimizer.step()"),
    ]:
        cells = [c for c in nbs.read(nbs.notebook_path(chapter)).cells if marker in c.source]
        assert cells and all(nbs.DEMO_TAG in c.metadata.get("tags", []) for c in cells), chapter


def test_exercise_titles_are_not_numbered_headings():
    """Is every exercise title a bold paragraph, so that no "2.4.1 Exercise 2.2" clash appears?"""
    titles = 0
    for path in nbs.chapter_notebooks():
        for cell in nbs.read(path).cells:
            if cell.cell_type != "markdown":
                continue
            for line in cell.source.splitlines():
                assert not re.match(r"#+\s+Exercise\b", line), f"{path.name}: {line!r}"
                titles += bool(re.match(r"\*\*Exercise \d+\.\d+\b.*\*\*$", line))
    assert titles >= len(nbs.chapter_notebooks()), titles
