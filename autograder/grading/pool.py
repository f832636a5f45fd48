"""The grading workers: one thread per slot, each owning one long-lived worker process.

A :class:`Worker` is ``python autograder/grading/worker.py`` with a memory cap (``RLIMIT_AS``,
inherited by the kernels it starts), reading jobs as JSON lines and answering each with
one. A :class:`Pool` is a :class:`concurrent.futures.ThreadPoolExecutor` of ``jobs``
threads; each thread takes a *slot* the first time it runs a job and keeps it for life, and
owns that slot's worker. :meth:`Pool.run` (called in a pool thread) hands a job to the
thread's worker and waits for its answer; a worker past the job's wall clock, past its own
CPU limit, or dead, is killed, alone, and the thread starts a fresh one for its next job.

Why a slot per thread, and not a ``ProcessPoolExecutor`` or pebble: a notebook past its
limits must be stopped alone, its worker replaced, the rest of the batch left running
(``ProcessPoolExecutor`` cannot stop one task); and a job must go to a known worker,
because the kernels of slot ``k`` run as the uid ``autograder.sandbox.FIRST_UID + k``,
which keeps two students' kernels under separate process limits and lets the user-only
mode kill everything of one kernel by its uid.
"""

from __future__ import annotations

import json
import os
import queue
import resource
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

WORKER = Path(__file__).resolve().parent / "worker.py"


def _limits(memory_mb: int):
    def apply():
        limit = memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


class Worker:
    def __init__(self, index: int, memory_mb: int, log_dir: Path):
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "PGPASSWORD", "PGPASSFILE")
        }
        env["MPLBACKEND"] = "agg"
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        env["PYTHONUNBUFFERED"] = "1"
        # One thread per kernel, always: PyTorch's OpenMP threads spin while they wait, so on
        # a busy machine two threads ran a small training loop 15-30 times slower than one,
        # and the spinning would count against the notebook's CPU-time limits. Parallelism
        # comes from --jobs.
        env["OMP_NUM_THREADS"] = "1"
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log = open(log_dir / f"worker-{index}.log", "ab")
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            env=env,
            text=True,
            start_new_session=True,
            preexec_fn=_limits(memory_mb),
        )
        self.index = index
        self.started = 0.0  # when the job being graded was sent
        self.cpu_at_start = 0.0
        self.replies: queue.SimpleQueue = queue.SimpleQueue()  # answers; None: it ended
        self.ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "ready" in msg:
                self.ready.set()
            else:
                self.replies.put(msg)
        self.replies.put(None)  # the worker ended

    def send(self, job: dict) -> None:
        self.started = time.monotonic()
        self.cpu_at_start = self.cpu_seconds()
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()

    def wait(self, wall_limit: float, cpu_limit: float) -> tuple[dict | None, str | None]:
        """The answer to the job sent last, or ``(None, why)``: past ``wall_limit`` seconds
        since it was sent, past ``cpu_limit`` seconds of this worker's own CPU, or dead."""
        while True:
            try:
                msg = self.replies.get(timeout=0.5)
            except queue.Empty:
                if time.monotonic() - self.started > wall_limit:
                    return None, (
                        f"timed out: the notebook ran longer than {wall_limit:.0f} s (wall clock)"
                    )
                if self.cpu_used() > cpu_limit:
                    return None, (
                        f"stopped: the grader spent more than {cpu_limit} s of its own CPU "
                        "time on this notebook's answers (data padded to be slow to read?); "
                        "not graded"
                    )
                continue
            if msg is None:
                return None, "the grading process died (memory limit or a signal)"
            return msg, None

    def cpu_seconds(self) -> float:
        """CPU time of the worker process itself: its threads, not the kernels it starts."""
        import psutil

        try:
            t = psutil.Process(self.proc.pid).cpu_times()
        except psutil.Error:
            return 0.0
        return t.user + t.system

    def cpu_used(self) -> float:
        """CPU seconds the worker has spent on its current job."""
        return self.cpu_seconds() - self.cpu_at_start

    def kill(self) -> None:
        """Kill the worker and every kernel it started."""
        import psutil

        try:
            parent = psutil.Process(self.proc.pid)
            procs = parent.children(recursive=True) + [parent]
        except psutil.NoSuchProcess:
            procs = []
        for p in procs:
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
        self.proc.wait()
        self.log.close()

    def close_input(self) -> None:
        """Tell the worker there is no more work; it exits after its current job."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass

    def stop(self) -> None:
        try:
            self.close_input()
            self.proc.wait(timeout=30)
        except (subprocess.TimeoutExpired, BrokenPipeError, OSError):
            self.kill()
        self.log.close()


class Pool:
    """``jobs`` grading threads, each with the worker process of its slot (see the module)."""

    def __init__(self, jobs: int, memory_mb: int, log_dir: Path):
        self.memory_mb, self.log_dir = memory_mb, log_dir
        self._slots: queue.SimpleQueue = queue.SimpleQueue()
        for slot in range(jobs):
            self._slots.put(slot)
        self._mine = threading.local()  # the calling thread's slot and worker
        self._workers: dict[int, Worker] = {}  # the live worker of each slot
        self._lock = threading.Lock()
        self.executor = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="grading-slot")

    def _worker(self) -> Worker:
        """The calling thread's worker, started on its first job or after a kill."""
        worker = getattr(self._mine, "worker", None)
        if worker is None:
            if getattr(self._mine, "slot", None) is None:
                self._mine.slot = self._slots.get_nowait()  # one per thread, for life
            worker = Worker(self._mine.slot, self.memory_mb, self.log_dir)
            if not worker.ready.wait(timeout=120):
                worker.kill()
                raise RuntimeError(
                    f"grading worker {self._mine.slot} did not start; see {self.log_dir}"
                )
            self._mine.worker = worker
            with self._lock:
                self._workers[worker.index] = worker
        return worker

    def run(self, job: dict, wall_limit: float, cpu_limit: float) -> tuple[dict | None, str | None]:
        """Grade ``job`` on the calling pool thread's worker: its answer, or ``(None, why)``.

        A worker that gave no answer (past a limit, or dead) is killed with every kernel it
        started before this returns, so nothing of that job runs beside the next one.
        """
        worker = self._worker()
        worker.send({**job, "slot": worker.index})
        reply, why = worker.wait(wall_limit, cpu_limit)
        if reply is None:
            worker.kill()
            self._mine.worker = None
            with self._lock:
                self._workers.pop(worker.index, None)
        return reply, why

    def close(self, now: bool = False) -> None:
        """Stop every worker: after the running jobs end, each told there is no more work (all
        at once: each takes a moment to shut down); or, ``now`` (an interrupted run), killed
        with their kernels at once, the jobs not started dropped."""
        self.executor.shutdown(wait=False, cancel_futures=True)
        if now:
            with self._lock:
                running = list(self._workers.values())
            for worker in running:
                worker.kill()  # its thread's wait ends: the worker is dead
        self.executor.shutdown(wait=True)
        with self._lock:
            workers = list(self._workers.values())
        for worker in workers:
            worker.close_input()
        for worker in workers:
            worker.stop()
