"""The process tree of a kernel: its CPU time, its interrupt, and the kill of a whole uid."""

from __future__ import annotations

import os
import signal
import time


def kill_user(uid: int, rounds: int = 5) -> int:
    """Kill every process of ``uid`` (the user-only mode's way to end a kernel's tree).

    First as that user: a child of this process takes the uid and calls ``kill(-1,
    SIGKILL)``, which the kernel applies to every process the uid may signal in one pass
    over the process table, with no fork slipping in between (a walk from here, process by
    process, let a daemon that forks a new pid every few milliseconds escape every round).
    Then a walk of the process table from here, again until a pass finds none, for what the
    uid could not signal (a set-uid program it started). Returns how many the walk found.
    """
    import psutil

    if os.geteuid() == 0:
        for _ in range(2):
            _kill_all_as(uid)
    killed = 0
    for _ in range(rounds):
        found = 0
        for proc in psutil.process_iter(["uids", "status"]):
            uids = proc.info.get("uids")
            if proc.info.get("status") == psutil.STATUS_ZOMBIE:
                continue  # dead already, waiting for its parent
            if uids is not None and uid in (uids.real, uids.effective):
                try:
                    proc.kill()
                    found += 1
                except psutil.Error:
                    pass
        killed += found
        if not found:
            break
    return killed


def _kill_all_as(uid: int, wait: float = 5.0) -> None:
    """``kill(-1, SIGKILL)`` from a child that is ``uid`` and nothing else (root only).

    Once it is ``uid``, the child can be signalled by that uid's processes, which it is about
    to kill: one could stop it first. So it is waited for ``wait`` seconds at most, then
    killed from here; the walk of :func:`kill_user` does the rest.
    """
    pid = os.fork()
    if pid == 0:  # only system calls here, then out: nothing of this process's state is used
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            os.kill(-1, signal.SIGKILL)  # never this process itself (Linux)
        finally:
            os._exit(0)
    deadline = time.monotonic() + wait
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return
        time.sleep(0.002)


def tree(pid: int | None) -> list:
    import psutil

    if pid is None:
        return []
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def tree_cpu_seconds(pid: int | None, procs: list | None = None) -> float:
    """CPU seconds (user + system) used so far by ``pid`` and every process below it.

    Counts the live processes and, through ``children_user``/``children_system``, the
    children they have already reaped; the machine's load does not change it.
    """
    import psutil

    total = 0.0
    for p in procs if procs is not None else tree(pid):
        try:
            t = p.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def interrupt_kernel(procs: list) -> bool:
    """Send SIGINT to the kernel of a sandbox's tree (as Jupyter's interrupt button does).

    The kernel is the outermost Python process running ``ipykernel_launcher``: bwrap's own
    command line names it too, and a submission's children could.
    """
    import signal

    import psutil

    def depth(p) -> int:
        try:
            return len(p.parents())
        except psutil.Error:
            return 1 << 30

    candidates = []
    for p in procs:
        try:
            argv = p.cmdline()
        except psutil.Error:
            continue
        if argv and "python" in os.path.basename(argv[0]) and "ipykernel_launcher" in argv:
            candidates.append(p)
    for p in sorted(candidates, key=depth):
        try:
            p.send_signal(signal.SIGINT)
            return True
        except psutil.Error:
            continue
    return False
