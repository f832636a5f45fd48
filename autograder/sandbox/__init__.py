"""A bubblewrap sandbox for every kernel that runs a submission.

Each kernel the grader starts runs as ``bwrap … -- prlimit … -- setpriv … python -m
ipykernel_launcher``, and sees:

- a read-only system (``/usr``, ``/etc``, ``/lib*``, ``/bin``, ``/sbin``) and a read-only
  Python environment (the interpreter's prefix and the virtual environment);
- a private, size-capped ``/tmp`` (also its ``HOME``), gone when the kernel ends;
- exactly one writable place of the real file system: the folder the notebook runs in;
- nothing else: no repository, no source notebook, no course folder or gradebook, no
  other student's folder, no ``/root`` or ``/home``;
- its own PID, network, IPC and UTS namespaces: no network at all (the loopback inside has
  nothing listening), and every process it starts, daemons included, dies with it
  (``--die-with-parent``; the PID namespace ends with its first process);
- when the grader runs as root: its own unprivileged user (one uid per grading worker), so
  that ``RLIMIT_NPROC`` caps its process count; otherwise a user namespace.

Resource limits are rlimits set by ``prlimit`` inside the sandbox (address space, CPU
seconds per process, file size, process count, no core files); :class:`Watchdog` adds
what rlimits cannot: the memory, process count and CPU time of the whole tree, and the size
and file count of its folder.

The kernel talks to the grader over IPC (Unix) sockets; no TCP port is opened. Two short
folders hold them: the kernel's own (its Jupyter sockets and connection file, writable by
it) and the grader's (the sockets on which the grader's checks listen: read-only to the
kernel, which may connect but can neither replace nor rename what is there, so that
nothing the grader does there by name can be redirected by a symlink).

What the sandbox may write is student-controlled from then on: the grader never reads a
file back from the folder a kernel ran in, never writes into it after the kernel started,
and removes it with :func:`shutil.rmtree` (which does not follow links).

The package's modules, lowest first: :mod:`.wrap` (the command line: namespaces, rlimits,
user; :class:`Limits`), :mod:`.processes` (a kernel's process tree: its CPU time, its
interrupt, the kill of every process of a uid), :mod:`.kernel` (the kernel manager that
starts a wrapped kernel and marks each cell's start) and :mod:`.watchdog` (what rlimits
cannot set, polled on the whole tree). One :class:`Limits` is enforced by two means that must
neither overlap nor leave a gap, the rlimits of :mod:`.wrap` and the polling of
:mod:`.watchdog`, so a limit moved from one to the other is one change in this package. It
imports only :mod:`autograder.config` and :mod:`autograder.records` of the grader. What the
rest of the grader uses is imported here.
"""

from autograder.sandbox.kernel import PRELOAD, SandboxKernelManager, preload_line
from autograder.sandbox.processes import kill_user, tree_cpu_seconds
from autograder.sandbox.watchdog import Watchdog, folder_over_limits
from autograder.sandbox.wrap import (
    FIRST_UID,
    Limits,
    Sandbox,
    SandboxUnavailable,
    check_available,
    prepare,
    python_paths,
)

__all__ = [
    "FIRST_UID",
    "PRELOAD",
    "Limits",
    "Sandbox",
    "SandboxKernelManager",
    "SandboxUnavailable",
    "Watchdog",
    "check_available",
    "folder_over_limits",
    "kill_user",
    "preload_line",
    "prepare",
    "python_paths",
    "tree_cpu_seconds",
]
