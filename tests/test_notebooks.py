"""Reading the course (autograder/notebooks.py), on a tiny course of its own: the table of
contents' order, the chapters it names, notebooks parsed once and handed out as copies, and the
markers of the cells."""

from __future__ import annotations

import os

import nbformat
import pytest

from autograder import notebooks as nbs
from autograder.errors import CourseError

TOC = """\
format: jb-book
root: intro
parts:
  - caption: Part one
    chapters:
      - file: book/second
        sections:
          - file: book/notes
      - file: book/first
"""


@pytest.fixture
def course(tmp_path):
    """A course whose table of contents lists a page (notes) and two chapters out of
    alphabetical order."""
    (tmp_path / "_toc.yml").write_text(TOC)
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "notes.md").write_text("# Notes\n")
    for name in ("first", "second"):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"# {name}")])
        nbformat.write(nb, tmp_path / "book" / f"{name}.ipynb")
    return tmp_path


def test_pages_and_chapters_follow_the_table_of_contents(course):
    assert nbs.toc_files(course) == ["intro", "book/second", "book/notes", "book/first"]
    assert nbs.chapter_names(course) == ["second", "first"]  # notebooks only, in toc order
    assert nbs.notebook_path("first", course) == course / "book" / "first.ipynb"


def test_an_unknown_chapter_is_a_course_error_that_names_the_chapters(course):
    with pytest.raises(
        CourseError, match="no chapter named 'third'; the chapters are: second, first"
    ):
        nbs.notebook_path("third", course)


def test_a_notebook_is_read_as_a_fresh_copy_and_again_after_it_changes(course):
    path = course / "book" / "first.ipynb"
    nb = nbs.read(path)
    nb.cells[0].source = "changed by the caller"
    assert nbs.read(path).cells[0].source == "# first"  # the caller's change is its own
    changed = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# new")])
    nbformat.write(changed, path)  # within the same clock tick: the content is the key
    assert nbs.read(path).cells[0].source == "# new"


def test_cells_markers_and_saved_modules():
    solution = nbformat.v4.new_code_cell(
        "#@save masking\ndef f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION"
    )
    solution.metadata["nbgrader"] = {"solution": True, "grade": False, "grade_id": "f"}
    test = nbformat.v4.new_code_cell(
        "check(f)\n### BEGIN HIDDEN TESTS\nsecret(f)\n### END HIDDEN TESTS\ndone()"
    )
    test.metadata["nbgrader"] = {"solution": False, "grade": True, "grade_id": "t", "points": 1}
    assert nbs.saved_module(solution) == "masking" and nbs.saved_module(test) is None
    assert nbs.is_solution(solution) and not nbs.is_test(solution)
    assert nbs.is_test(test) and not nbs.is_solution(test)
    assert nbs.without_markers(solution.source) == "def f(x):\n    return x"
    assert nbs.without_hidden_tests(test.source) == "check(f)\ndone()"
    assert nbs.saved_module(nbformat.v4.new_code_cell("# @save pooling\nx = 1")) == "pooling"
    assert nbs.saved_module(nbformat.v4.new_markdown_cell("#@save masking")) is None


def test_write_if_changed_leaves_an_equal_file_alone(tmp_path):
    path = tmp_path / "deep" / "file.txt"
    nbs.write_if_changed(path, b"one")  # makes its folder
    os.utime(path, (1, 1))
    nbs.write_if_changed(path, b"one")
    assert path.stat().st_mtime == 1  # the same bytes: not written, its time kept
    nbs.write_if_changed(path, b"two")
    assert path.read_bytes() == b"two" and path.stat().st_mtime > 1
