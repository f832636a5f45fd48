"""The grading worker (autograder/grading/worker.py), the real process as the pool starts it
(:class:`autograder.grading.pool.Worker`): it says it is ready, answers every job on its own
line of the protocol, a job that fails in the worker itself (with its traceback) as a job that
nbgrader could not grade (with nbgrader's error), serves the next job after either, and ends
when its input ends. Grading proper is proven end to end (tests/test_smoke.py,
tests/test_autograde.py)."""

from __future__ import annotations

import pytest

from autograder.grading import pool

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def test_a_job_it_cannot_grade_is_answered_and_the_next_served(tmp_path):
    (tmp_path / "logs").mkdir()
    worker = pool.Worker(0, 4096, tmp_path / "logs")
    job = {"root": str(tmp_path / "missing"), "chapter": "masking", "student": "ada"}
    try:
        assert worker.ready.wait(120), "the worker never said it was ready"
        # without its limits: the worker's own code fails (a KeyError), before nbgrader runs
        worker.send({"job": 0, **job})
        reply, why = worker.wait(120, 60)
        assert reply is not None, why
        assert reply["job"] == 0 and reply["success"] is False
        assert "KeyError: 'cell_timeout'" in reply["error"], reply
        assert worker.proc.poll() is None  # still serving
        # a course folder that does not exist: nbgrader reports it, the worker passes it on
        worker.send({"job": 1, **job, "cell_timeout": 4, "wall_factor": 5})
        reply, why = worker.wait(120, 60)
        assert reply is not None, why
        assert reply["job"] == 1 and reply["success"] is False and "cpu" in reply
        assert "No notebooks were matched" in reply["error"], reply
        worker.close_input()
        assert worker.proc.wait(timeout=60) == 0  # no more input: it ends, cleanly
    finally:
        worker.kill()
