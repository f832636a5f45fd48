"""The grading pool (autograder/grading/pool.py): a slot per thread for life, a worker past a limit or
dead killed alone and replaced, and nothing of one submission running beside the next."""

from __future__ import annotations

import time

import psutil
import pytest

from autograder.grading import pool

# A worker that answers each job with its pid and slot; a job's student says how to behave.
FAKE_WORKER = """
import json, os, sys, time
print(json.dumps({"ready": os.getpid()}), flush=True)
for line in sys.stdin:
    job = json.loads(line)
    if job["student"] == "sleeper":
        time.sleep(600)
    if job["student"] == "crasher":
        os._exit(3)
    reply = {"job": job["job"], "pid": os.getpid(), "slot": job["slot"], "success": True}
    print(json.dumps(reply), flush=True)
"""


@pytest.fixture
def fake(tmp_path, monkeypatch):
    script = tmp_path / "worker.py"
    script.write_text(FAKE_WORKER)
    monkeypatch.setattr(pool, "WORKER", script)
    return tmp_path / "logs"


def _job(n: int, student: str = "honest") -> dict:
    return {"job": n, "student": student}


def test_each_thread_keeps_one_slot_and_one_worker(fake):
    """With more jobs than slots, does every job run on one of the slots' two workers, each
    worker always under the same slot, both slots used?"""
    grading = pool.Pool(2, 1024, fake)
    try:
        futures = [grading.executor.submit(grading.run, _job(n), 60, 60) for n in range(8)]
        replies = [f.result()[0] for f in futures]
    finally:
        grading.close()
    slot_of = {}
    for reply in replies:
        assert slot_of.setdefault(reply["pid"], reply["slot"]) == reply["slot"]
    assert sorted(slot_of.values()) == [0, 1]
    assert sorted(r["job"] for r in replies) == list(range(8))


def test_a_worker_past_the_wall_clock_is_killed_alone_and_replaced(fake):
    """Does a job past its wall clock come back with why, its worker killed (gone before the
    call returns), and the next job of that slot run on a fresh worker of the same slot?"""
    grading = pool.Pool(1, 1024, fake)
    try:
        first, _ = grading.executor.submit(grading.run, _job(0), 60, 60).result()
        reply, why = grading.executor.submit(grading.run, _job(1, "sleeper"), 1, 60).result()
        assert reply is None and why.startswith("timed out") and "1 s (wall clock)" in why
        assert not psutil.pid_exists(first["pid"]) or (
            psutil.Process(first["pid"]).status() == psutil.STATUS_ZOMBIE
        )
        after, _ = grading.executor.submit(grading.run, _job(2), 60, 60).result()
    finally:
        grading.close()
    assert after["slot"] == first["slot"] == 0 and after["pid"] != first["pid"]


def test_a_worker_that_dies_is_reported_and_replaced(fake):
    """A worker that exits in the middle of a job: is that job told so, and the next graded?"""
    grading = pool.Pool(1, 1024, fake)
    try:
        reply, why = grading.executor.submit(grading.run, _job(0, "crasher"), 60, 60).result()
        after, _ = grading.executor.submit(grading.run, _job(1), 60, 60).result()
    finally:
        grading.close()
    assert reply is None and why == "the grading process died (memory limit or a signal)"
    assert after["job"] == 1 and after["slot"] == 0


def test_close_stops_every_worker(fake):
    """After close(), is no worker of the pool left running?"""
    grading = pool.Pool(2, 1024, fake)
    futures = [grading.executor.submit(grading.run, _job(n), 60, 60) for n in range(4)]
    pids = {f.result()[0]["pid"] for f in futures}
    grading.close()
    for pid in pids:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"


def test_an_interrupted_run_stops_its_workers_at_once(fake):
    """Closing with now=True (Ctrl-C during a run): are the busy workers killed at once, not
    waited for, and the jobs not started dropped?"""
    grading = pool.Pool(1, 1024, fake)
    first, _ = grading.executor.submit(grading.run, _job(0), 60, 60).result()
    busy = grading.executor.submit(grading.run, _job(1, "sleeper"), 600, 600)
    waiting = grading.executor.submit(grading.run, _job(2), 60, 60)
    time.sleep(0.5)  # the sleeper has its worker
    start = time.monotonic()
    grading.close(now=True)
    assert time.monotonic() - start < 10
    assert busy.result()[0] is None and waiting.cancelled()
    assert not psutil.pid_exists(first["pid"]) or (
        psutil.Process(first["pid"]).status() == psutil.STATUS_ZOMBIE
    )
