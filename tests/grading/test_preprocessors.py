"""The grader's own nbgrader preprocessors, each on a tiny notebook (as nbgrader tests its own)."""

import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from autograder.grading.preprocessors import (
    BadTestCell,
    CapOutput,
    DropStudentOutputs,
    SkipDemos,
    is_test_cell,
    parse_test_cell,
)
from autograder.notebooks import DEMO_TAG


@pytest.fixture(scope="module")
def preprocessors():
    return {
        "drop": DropStudentOutputs,
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


TEST = {"nbgrader": {"grade": True, "grade_id": "t", "points": 1, "solution": False}}


def test_student_outputs_are_dropped_and_test_outputs_kept(preprocessors, tmp_path):
    """Does every output of a cell that is not a test cell go (kept aside for the instructor),
    while a test cell keeps the checker's output?"""
    drop = type("Drop", (preprocessors["drop"],), {})
    answer = new_code_cell("print(open('/etc/hostname').read())")
    answer.outputs = [new_output("stream", name="stdout", text="secret\n")]
    test = new_code_cell('checks.run("g", f)', metadata=TEST)
    test.outputs = [new_output("stream", name="stdout", text="✓ fine\n")]
    nb = new_notebook(cells=[answer, test])
    kept = tmp_path / "kept.ipynb"
    nb, _ = drop(keep_in=str(kept)).preprocess(nb, {})
    assert nb.cells[0].outputs == [] and nb.cells[1].outputs[0].text == "✓ fine\n"
    assert "secret" in kept.read_text()


@pytest.mark.parametrize(
    "source",
    [
        'checks.run("g", f)\nprint("hi")',
        'checks.run("g", f, devices=["cpu"])',
        'checks.run("g", f())',
        "import os",
        "checks.run(group, f)",
        'checks.run("g", lambda x: f)',
    ],
)
def test_a_test_cell_with_anything_but_check_calls_is_refused(source):
    """Does the grader refuse a test cell that is not only checks.run lines (it runs them itself)?"""
    with pytest.raises(BadTestCell, match="may only hold"):
        parse_test_cell(source)


def test_every_test_cell_of_the_course_parses():
    """Does every test cell of every chapter parse into its check calls, hidden ones included?"""
    from autograder import notebooks as nbs

    found = 0
    for path in nbs.chapter_notebooks():
        for cell in nbs.read(path).cells:
            if is_test_cell(cell):
                calls = parse_test_cell(cell.source)
                assert calls, cell.source
                found += len(calls)
    assert found >= 50


def test_check_calls_are_read_with_their_target():
    """Are group, hidden-ness and target read from each line, comments ignored?"""
    calls = parse_test_cell(
        '# visible\nchecks.run("a", f)\n### BEGIN HIDDEN TESTS\nchecks.run_hidden("a.b", lambda: x)'
    )
    assert [(c.hidden, c.group, c.target) for c in calls] == [
        (False, "a", "f"),
        (True, "a.b", "lambda: x"),
    ]


def test_a_huge_output_is_cut(preprocessors):
    """Is a single output over the limit cut, with a note saying how much?"""
    cap = preprocessors["cap"]
    cell = new_code_cell("print('x' * 10**6)")
    cell.outputs = [new_output("stream", name="stdout", text="x" * 300_000)]
    (out,) = run(cap, cell)
    assert len(out.outputs[0].text) < 101_000 and "cut by the grader" in out.outputs[0].text


def test_a_conversation_past_its_deadline_ends_however_slowly_bytes_come():
    """A peer that sends a byte every 0.2 s never trips a per-call timeout: does the
    checks' socket end at its one deadline all the same?"""
    import socket
    import threading
    import time

    from autograder.grading.preprocessors import _Deadline

    ours, theirs = socket.socketpair()
    stop = threading.Event()

    def trickle():
        while not stop.is_set():
            try:
                theirs.send(b"x")
            except OSError:
                return
            time.sleep(0.2)

    threading.Thread(target=trickle, daemon=True).start()
    start = time.monotonic()
    sock = _Deadline.wrap(ours, time.monotonic() + 1.0)
    sock.settimeout(60)  # what the protocol's code may set: the deadline still decides
    with pytest.raises(TimeoutError):
        while True:
            sock.recv(1)
    assert time.monotonic() - start < 2.0
    stop.set()
    sock.close()
    theirs.close()


def test_after_the_kernel_dies_no_test_cell_is_scored_as_passed():
    """The kernel dies at one cell: does that cell say so, does every test cell after it fail
    (a test cell without an error would score full points), and are the cells before it kept?"""
    from nbclient.exceptions import DeadKernelError
    from nbgrader import utils

    from autograder.grading.preprocessors import CpuTimedExecute

    ran = []

    class Dies(CpuTimedExecute):
        def execute_cell(self, cell, index, **kwargs):
            ran.append(index)
            if index == 1:
                raise DeadKernelError("Kernel died")
            cell.outputs = [new_output("stream", name="stdout", text="✓ fine\n")]
            return cell

    before = new_code_cell('checks.run("g", f)', metadata=TEST)
    after = new_code_cell('checks.run("g", f)', metadata=TEST)
    cells = [before, new_code_cell("os._exit(0)"), after, new_code_cell("x = 1")]
    ex = Dies()
    CpuTimedExecute.reset()
    ex._walled, ex._stopped_at, ex._index, ex._cell_cpu = set(), None, -1, None
    for index, cell in enumerate(cells):
        ex.preprocess_cell(cell, {}, index)
    assert ran == [0, 1]  # nothing after the stop was sent to a dead kernel
    assert cells[1].outputs[0].ename == "KernelStopped"
    assert "did not run" in after.outputs[0].evalue
    assert CpuTimedExecute.stopped_cell == 2
    assert utils.determine_grade(before, None) == (1, 1)
    assert utils.determine_grade(after, None) == (0, 1)
