"""The watchdog: the limits that rlimits cannot set, enforced on every kernel's whole tree."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from autograder import records
from autograder.sandbox import processes
from autograder.sandbox.kernel import SandboxKernelManager
from autograder.sandbox.wrap import Limits

INTERRUPT_GRACE_CPU = 5.0  # CPU seconds a cell may go on after its interrupt before the kill
FOLDER_CHECK_SECONDS = 1.0


def folder_over_limits(folder: Path, lim: Limits) -> str | None:
    """Why ``folder`` is over ``lim.folder_mb`` or ``lim.folder_files``; None if it is not.

    Walks with :func:`os.fwalk`, relative to open folder descriptors and without following
    a link, so a folder that the sandbox swaps for a link while it is measured is never
    entered; stops as soon as a limit is passed.
    """
    size, count = 0, 0
    try:
        walk = os.fwalk(str(folder), follow_symlinks=False, onerror=None)
        for _, dirs, files, dir_fd in walk:
            for name in dirs + files:
                count += 1
                try:
                    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                except OSError:
                    continue
                size += info.st_blocks * 512
                if count > lim.folder_files:
                    return records.FOLDER_FILES.format(limit=lim.folder_files)
                if size > lim.folder_mb * 2**20:
                    return records.FOLDER_SIZE.format(limit=lim.folder_mb)
    except OSError:
        return None
    return None


class Watchdog:
    """Enforce :class:`Limits` on the whole process tree of every running sandbox.

    rlimits are per process (memory, CPU) or per user (processes); this polls the tree of
    every running sandbox a few times a second. A cell whose tree has used more than
    ``cell_cpu_seconds`` of CPU time since it started is interrupted (SIGINT to the kernel,
    as Jupyter's interrupt button does) and killed if it goes on regardless; a tree over
    its memory, process count or notebook CPU time is killed. CPU time, unlike wall-clock
    time, does not grow with the machine's load. The reasons are kept for the grader.
    """

    def __init__(self, interval: float = 0.2):
        self.interval = interval
        self.killed: dict[int, str] = {}  # the trees killed, and why
        self.events: dict[int, str] = {}  # cells interrupted for their CPU time
        # the cell's start mark and the tree's CPU time when its interrupt was sent
        self.interrupted: dict[int, tuple[float, float]] = {}
        self.folder_checked: dict[int, float] = {}  # when each tree's folder was last measured
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> Watchdog:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def clear(self) -> None:
        """Forget the previous notebook's events (a worker grades one notebook at a time)."""
        self.killed.clear()
        self.events.clear()
        self.interrupted.clear()
        self.folder_checked.clear()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            for km in list(SandboxKernelManager.active):
                try:
                    self.inspect(km)
                except Exception:  # never let one odd process stop the watch over the rest
                    continue

    def inspect(self, km: SandboxKernelManager) -> None:
        """Enforce ``km.limits`` on its tree once: interrupt a cell, or kill the tree."""
        import psutil

        pid = km.root_pid()
        procs = processes.tree(pid)
        if not procs:
            return
        rss = 0
        for p in procs:
            try:
                rss += p.memory_info().rss
            except psutil.Error:
                pass
        cpu = processes.tree_cpu_seconds(pid, procs)
        lim = km.limits
        reason = None
        if rss > lim.memory_mb * 2**20:
            reason = records.MEMORY.format(used=f"{rss / 2**20:.0f}", limit=lim.memory_mb)
        elif len(procs) > lim.processes:
            reason = records.PROCESSES.format(count=len(procs), limit=lim.processes)
        elif cpu > lim.cpu_seconds:
            reason = records.NOTEBOOK_CPU.format(limit=lim.cpu_seconds)
        elif (
            getattr(km, "sandbox", None) is not None
            and time.monotonic() - self.folder_checked.get(pid, 0.0) > FOLDER_CHECK_SECONDS
        ):
            self.folder_checked[pid] = time.monotonic()
            reason = folder_over_limits(km.sandbox.workdir, lim)
        started = km.cell_started_cpu
        mark = self.interrupted.get(pid)
        if mark is not None and mark[0] != started:  # that cell is over; this is another
            del self.interrupted[pid]
            mark = None
        if reason is None and started is not None:
            if mark is None and cpu - started > lim.cell_cpu_seconds:
                self.interrupted[pid] = (started, cpu)
                self.events.setdefault(
                    pid, records.CELL_CPU_INTERRUPTED.format(limit=lim.cell_cpu_seconds)
                )
                processes.interrupt_kernel(procs)
            elif mark is not None and cpu - mark[1] > INTERRUPT_GRACE_CPU:
                reason = records.CELL_CPU_IGNORED.format(limit=lim.cell_cpu_seconds)
        if reason:
            self.killed[pid] = reason
            km.stop_reason = reason
            for p in reversed(procs):
                try:
                    p.kill()
                except psutil.Error:
                    pass
