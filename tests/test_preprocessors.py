"""The grader's own nbgrader preprocessors, each on a tiny notebook (as nbgrader tests its own)."""

import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from autograder.notebooks import DEMO_TAG
from autograder.preprocessors import CapOutput, SkipDemos, StderrIsNotFailure, VerifyChecksRan


@pytest.fixture(scope="module")
def preprocessors():
    return {
        "stderr": StderrIsNotFailure,
        "verify": VerifyChecksRan.signed_with(lambda text: "sig"),
        "cap": CapOutput,
        "skip": SkipDemos,
    }


def run(preprocessor_class, *cells):
    nb = new_notebook(cells=list(cells))
    nb, _ = preprocessor_class().preprocess(nb, {})
    return nb.cells


def test_a_demo_cell_is_marked_for_skipping(preprocessors):
    """Is a plain code cell tagged `demo` skipped, with a note and without its old outputs?"""
    skip = preprocessors["skip"]
    cell = new_code_cell("train()", metadata={"tags": [DEMO_TAG]})
    cell.outputs = [new_output("stream", name="stdout", text="loss 0.1\n")]
    (out,) = run(skip, cell)
    assert skip.SKIP in out.metadata["tags"]
    assert out.source.startswith("# Not run by the grader") and out.source.endswith("train()")
    assert out.outputs == []


def test_a_test_cell_tagged_demo_still_runs(preprocessors):
    """Can a submission skip a test cell by tagging it `demo`? (It must not.)"""
    skip = preprocessors["skip"]
    meta = {"tags": [DEMO_TAG], "nbgrader": {"grade": True, "grade_id": "t", "points": 1}}
    (out,) = run(skip, new_code_cell("checks.run('x', f)", metadata=meta))
    assert skip.SKIP not in out.metadata["tags"] and out.source == "checks.run('x', f)"


def test_the_internal_skip_tag_cannot_be_set_by_a_submission(preprocessors):
    """Is the tag that Execute skips removed from every cell that is not a demo?"""
    skip = preprocessors["skip"]
    meta = {"tags": [skip.SKIP], "nbgrader": {"grade": True, "grade_id": "t", "points": 1}}
    plain, graded = run(
        skip,
        new_code_cell("x = 1", metadata={"tags": [skip.SKIP]}),
        new_code_cell("t", metadata=meta),
    )
    assert skip.SKIP not in plain.metadata["tags"] and skip.SKIP not in graded.metadata["tags"]


def test_stderr_in_a_test_cell_is_shown_as_ordinary_output(preprocessors):
    """Does a warning on stderr in a test cell become stdout, so that it costs no points?"""
    meta = {"nbgrader": {"grade": True, "grade_id": "t", "points": 1, "solution": False}}
    cell = new_code_cell("warn()", metadata=meta)
    cell.outputs = [new_output("stream", name="stderr", text="UserWarning\n")]
    (out,) = run(preprocessors["stderr"], cell)
    assert out.outputs[0].name == "stdout"


def test_an_unsigned_test_cell_gets_an_error(preprocessors):
    """Does a test cell whose checks printed no signed line get an error (so zero points)?"""
    meta = {"nbgrader": {"grade": True, "grade_id": "t", "points": 1, "solution": False}}
    cell = new_code_cell('checks.run("masked_softmax", masked_softmax)', metadata=meta)
    cell.outputs = [new_output("stream", name="stdout", text="✓ all good\n")]
    (out,) = run(preprocessors["verify"], cell)
    assert out.outputs[-1].output_type == "error"
    assert out.outputs[-1].ename == "GraderIntegrityError"


def test_a_huge_output_is_cut(preprocessors):
    """Is a single output over the limit cut, with a note saying how much?"""
    cap = preprocessors["cap"]
    cell = new_code_cell("print('x' * 10**6)")
    cell.outputs = [new_output("stream", name="stdout", text="x" * 300_000)]
    (out,) = run(cap, cell)
    assert len(out.outputs[0].text) < 101_000 and "cut by the grader" in out.outputs[0].text
