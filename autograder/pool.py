"""The grading workers: long-lived processes, each grading one job at a time.

A :class:`Worker` is ``python autograder/worker.py`` with a memory cap (``RLIMIT_AS``,
inherited by the kernels it starts), reading jobs as JSON lines and answering each with
one. :func:`autograder.grading.run` hands jobs to idle workers and kills and replaces a
worker whose job runs past the wall-clock backstop.

Why not a maintained pool (``concurrent.futures``, pebble): ``ProcessPoolExecutor`` cannot
stop one running task, and a notebook past its wall-clock backstop must be stopped alone,
its worker replaced, the rest of the batch left running. pebble's ``ProcessPool`` can stop
one task, but it decides which worker takes a job: here each worker has a fixed *slot*, and
its kernels run as that slot's uid (``autograder.sandbox.FIRST_UID + slot``), which is what
keeps two students' kernels under separate process limits and lets the user-only mode kill
everything of one kernel by its uid. A job must therefore go to a known worker, which is
what :func:`autograder.grading.run` does with these :class:`Worker` objects.
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
from pathlib import Path

WORKER = Path(__file__).resolve().parent / "worker.py"


def _limits(memory_mb: int):
    def apply():
        limit = memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


class Worker:
    def __init__(self, index: int, memory_mb: int, log_dir: Path, replies: queue.Queue):
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
        self.job: dict | None = None
        self.started = 0.0
        self.cpu_at_start = 0.0
        self.sub = self.root = self.run = None
        self.replies = replies
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
                self.replies.put((self, msg))
        self.replies.put((self, None))  # the worker ended

    def send(self, job: dict) -> None:
        self.job, self.started = job, time.monotonic()
        self.cpu_at_start = self.cpu_seconds()
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()

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
