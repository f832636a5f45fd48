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

Why one module: one :class:`Limits` is enforced by two means that must neither overlap nor
leave a gap, the rlimits :meth:`Sandbox.command` puts on the command line and the
:class:`Watchdog`'s polling of the whole tree, and :class:`SandboxKernelManager` is where
the two meet (it starts the wrapped kernel and marks each cell's start for the watchdog); a
limit moved from one means to the other is one change, in one file.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from traitlets import Bool, Instance, Int

from autograder import config, records
from autograder.config import LIMITS

SYSTEM_DIRS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# uids FIRST_UID + worker index: no account has them on Debian. Two grading runs on one
# machine (two checkouts' tests side by side) must not share uids: the user-only mode kills
# every process of its uid, and RLIMIT_NPROC counts them all. AUTOGRADER_FIRST_UID moves them.
FIRST_UID = int(os.environ.get("AUTOGRADER_FIRST_UID", str(config.FIRST_UID)))
TMP_BYTES = 256 * 2**20
RLIMIT_CPU_MARGIN = 30  # CPU seconds the per-process rlimit allows beyond the tree's limit
# Imported by every kernel before its first cell, so that a cell's CPU time is its own work:
# every chapter imports torch and matplotlib, and the first operation on the meta device
# imports torch's dynamo (about 2.5 s of CPU). Counted in the notebook's CPU time, as before;
# no name is added to the notebook's namespace, and a module that fails to import is skipped.
PRELOAD = ("torch", "torch._dynamo", "matplotlib.pyplot")
INTERRUPT_GRACE_CPU = 5.0  # CPU seconds a cell may go on after its interrupt before the kill


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot create namespaces on this machine."""


@dataclass
class Limits:
    """What one kernel and everything it starts may use (defaults: autograder.config.LIMITS)."""

    # address space per process, and resident memory of the whole tree
    memory_mb: int = LIMITS.memory_mb
    # CPU time of the whole tree for the notebook (and per process)
    cpu_seconds: int = LIMITS.notebook_timeout
    cell_cpu_seconds: int = LIMITS.cell_timeout  # CPU time of the whole tree for one cell
    processes: int = LIMITS.processes  # processes and threads of the sandbox's user
    file_mb: int = LIMITS.file_mb  # the largest file it may write
    # everything in its folder together (checked about once a second)
    folder_mb: int = LIMITS.folder_mb
    folder_files: int = LIMITS.folder_files  # files and folders in its folder


@dataclass
class Sandbox:
    """How to wrap a command: the folder it may write, the ipc folder, its user and limits."""

    workdir: Path
    ipc_dir: Path
    uid: int | None = None  # None: run as this user, in a user namespace
    limits: Limits = field(default_factory=Limits)
    readonly: tuple[str, ...] = ()
    namespaces: bool = True  # False: no bubblewrap, only another user and rlimits (root only)
    grader_dir: Path | None = None  # the grader's sockets: the kernel may connect, not write

    def command(self, argv: list[str], env: dict[str, str]) -> list[str]:
        """``argv`` wrapped in bwrap, prlimit and (as root) setpriv, with exactly ``env``."""
        if not self.namespaces:
            return self._user_only(argv, env)
        args = ["bwrap", "--die-with-parent", "--new-session", "--clearenv"]
        args += ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
        if self.uid is None:
            args += ["--unshare-user", "--uid", "65534", "--gid", "65534"]
        for path in SYSTEM_DIRS:
            if os.path.islink(path):  # merged /usr: /bin -> usr/bin
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                args += ["--ro-bind", path, path]
        args += ["--proc", "/proc", "--dev", "/dev"]
        args += ["--perms", "1777", "--size", str(TMP_BYTES), "--tmpfs", "/tmp"]
        for path in self.readonly:
            args += _parents(path) + ["--ro-bind", path, path]
        for path in (self.ipc_dir, self.workdir):
            args += _parents(str(path)) + ["--bind", str(path), str(path)]
        if self.grader_dir is not None:
            path = str(self.grader_dir)
            args += _parents(path) + ["--ro-bind", path, path]
        args += ["--chdir", str(self.workdir)]
        for key, value in sorted(env.items()):
            args += ["--setenv", key, value]
        return args + ["--"] + self._limited(argv)

    def _limited(self, argv: list[str]) -> list[str]:
        """``argv`` under prlimit and, with a uid, setpriv to that user."""
        lim = self.limits
        args = [
            "prlimit",
            f"--as={lim.memory_mb * 2**20}",
            # per process, a backstop: the watchdog stops the whole tree first, and says why
            f"--cpu={lim.cpu_seconds + RLIMIT_CPU_MARGIN}",
            f"--fsize={lim.file_mb * 2**20}",
            f"--nproc={lim.processes}",
            "--core=0",
            "--",
        ]
        if self.uid is not None:
            args += [
                "setpriv",
                f"--reuid={self.uid}",
                f"--regid={self.uid}",
                "--clear-groups",
                "--no-new-privs",
                "--inh-caps=-all",
                "--bounding-set=-all",
                "--",
            ]
        return args + list(argv)

    def _user_only(self, argv: list[str], env: dict[str, str]) -> list[str]:
        """Without namespaces (a container that forbids them): another user, rlimits, ``env``.

        Weaker than bubblewrap: the kernel shares the network and sees the file system as
        its user may; the grader keeps its own files unreadable (``umask 077``) and kills
        every process of that user when the kernel ends (:func:`kill_user`).
        """
        if self.uid is None:
            raise SandboxUnavailable("without namespaces the grader must run as root")
        pairs = [f"{k}={v}" for k, v in sorted(env.items())]
        return self._limited(["env", "-i", *pairs, *argv])


def _parents(path: str) -> list[str]:
    """bwrap arguments that create ``path``'s parent folders, traversable by anyone."""
    args = []
    parts = Path(path).parts
    for i in range(2, len(parts)):
        parent = str(Path(*parts[:i]))
        if parent not in SYSTEM_DIRS and parent != "/tmp":
            args += ["--perms", "0755", "--dir", parent]
    return args


def python_paths() -> tuple[str, ...]:
    """The folders a kernel of this environment reads: the interpreter's prefix and the venv."""
    paths = {os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix)}
    exe = os.path.realpath(sys.executable)
    if not any(exe.startswith(p + os.sep) for p in paths):
        paths.add(os.path.dirname(exe))
    # Keep the venv's own path too if it is a link (bwrap binds at the path the kernel uses).
    if os.path.realpath(sys.prefix) != sys.prefix:
        paths.add(sys.prefix)
    return tuple(sorted(p for p in paths if not any(p.startswith(s + os.sep) for s in SYSTEM_DIRS)))


def check_available() -> None:
    """Raise :class:`SandboxUnavailable`, saying why, unless a sandbox can be made here."""
    if shutil.which("bwrap") is None:
        raise SandboxUnavailable(
            "bubblewrap (bwrap) is not installed: `apt-get install bubblewrap`, or run "
            "`make system`. Grading without a sandbox (--no-sandbox) is only for trusted code."
        )
    probe = [
        "bwrap",
        "--ro-bind",
        "/",
        "/",
        "--unshare-pid",
        "--unshare-net",
        "--die-with-parent",
        *([] if os.geteuid() == 0 else ["--unshare-user"]),
        "true",
    ]
    result = subprocess.run(probe, capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        raise SandboxUnavailable(
            "bubblewrap cannot create namespaces here "
            f"({result.stderr.strip() or result.returncode}). In a container, allow user "
            "namespaces (or run the grader as root in it); --no-sandbox grades without one."
        )


def prepare(workdir: Path, uid: int | None, namespaces: bool = True) -> tuple[Path, Path]:
    """Make ``workdir`` the sandbox user's; return a fresh kernel folder and grader folder.

    The kernel folder (its Jupyter sockets, its connection file, in the user-only mode its
    home) becomes the sandbox user's only once the grader has written the connection file
    into it (see ``SandboxKernelManager._hand_over``). The grader folder is this process's, mode 0711: the kernel
    may connect to a socket there whose name it is told, and can neither list, add, rename
    nor replace anything in it. Both are short, because a Unix socket's path has at most 107
    bytes.

    Without namespaces the user reaches ``workdir`` through its real parents, which must
    already be traversable: the grader makes no folder of its own traversable (the worker
    puts ``workdir`` straight in the system's temporary folder), and everything in
    ``workdir`` becomes the user's (links are never followed).
    """
    ipc_dir = Path(tempfile.mkdtemp(prefix="attn-"))  # the user's once the kernel starts
    grader_dir = Path(tempfile.mkdtemp(prefix="attn-g-"))
    grader_dir.chmod(0o711)
    if uid is not None:
        os.chown(workdir, uid, uid)
        if not namespaces:
            for base, dirs, files in os.walk(workdir):
                for name in dirs + files:
                    os.chown(os.path.join(base, name), uid, uid, follow_symlinks=False)
            (ipc_dir / "home").mkdir()
            os.chown(ipc_dir / "home", uid, uid)
    ipc_dir.chmod(0o700)
    return ipc_dir, grader_dir


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


class SandboxKernelManager(AsyncKernelManager):
    """A kernel manager that starts every kernel inside a :class:`Sandbox`.

    Configured as any Jupyter configurable, through its traits: ``uid``, ``namespaces`` and
    ``limits`` (``config.SandboxKernelManager.uid = ...``, as ``autograder.worker`` does;
    nbclient passes its configuration to the kernel manager it creates). The folder the
    notebook runs in is the ``cwd`` nbclient passes, and the only writable place.
    """

    uid = Int(
        None, allow_none=True, help="the kernel's user (root only); None: a user namespace"
    ).tag(config=True)
    namespaces = Bool(
        True, help="bubblewrap's namespaces; False: the user-only mode (Sandbox._user_only)"
    ).tag(config=True)
    limits = Instance(Limits, args=(), help="what the kernel's tree may use").tag(config=True)
    active: list = []  # the sandboxes running now (the watchdog reads it)
    stop_reason: str | None = None  # why the watchdog stopped this kernel, if it did

    async def _async_pre_start_kernel(self, **kw):
        workdir = Path(kw.get("cwd") or os.getcwd()).resolve()
        self._ipc_dir, self._grader_dir = prepare(workdir, self.uid, self.namespaces)
        self.stop_reason = None
        self.transport = "ipc"
        self.ip = str(self._ipc_dir / "k")
        self.connection_file = str(self._ipc_dir / "kernel.json")
        kernel_cmd, kw = await super()._async_pre_start_kernel(**kw)
        kernel_cmd = [*kernel_cmd, f"--IPKernelApp.exec_lines={preload_line(PRELOAD)}"]
        env = {
            "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
            "HOME": "/tmp",
            "LANG": "C.UTF-8",
            "MPLBACKEND": "agg",
            "MPLCONFIGDIR": "/tmp/matplotlib",
            "IPYTHONDIR": "/tmp/ipython",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONNOUSERSITE": "1",
        }
        for key in ("OMP_NUM_THREADS", "NBGRADER_EXECUTION"):
            if key in (kw.get("env") or os.environ):
                env[key] = (kw.get("env") or os.environ)[key]
        if not self.namespaces:  # no private /tmp: a home of its own, gone with the kernel
            home = str(self._ipc_dir / "home")
            env.update(HOME=home, MPLCONFIGDIR=f"{home}/matplotlib", IPYTHONDIR=f"{home}/ipython")
        sandbox = Sandbox(
            workdir,
            self._ipc_dir,
            self.uid,
            self.limits,
            python_paths(),
            self.namespaces,
            self._grader_dir,
        )
        self.sandbox = sandbox
        # bwrap itself needs no particular environment; the kernel gets exactly `env`.
        kw["env"] = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        return sandbox.command(kernel_cmd, env), kw

    def _hand_over(self) -> None:
        """Give the kernel folder to the sandbox's user, now that the connection file is in it.

        Not before: jupyter_client writes that file by name (unlink, then create), and a
        process of that user (one that outlived an earlier kernel of its uid) could put a link
        there in between. The file itself is changed without following a link.
        """
        if self.uid is None:
            return
        if os.path.lexists(self.connection_file):
            os.chown(self.connection_file, self.uid, self.uid, follow_symlinks=False)
        os.chown(self._ipc_dir, self.uid, self.uid)

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        self._hand_over()
        await super()._async_launch_kernel(kernel_cmd, **kw)
        SandboxKernelManager.active.append(self)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        try:
            await super()._async_cleanup_resources(restart=restart)
        finally:
            if self in SandboxKernelManager.active:
                SandboxKernelManager.active.remove(self)
            if not self.namespaces and self.uid is not None and not restart:
                kill_user(self.uid)  # its daemons too: nothing of it outlives the notebook
            if not restart:
                for folder in (getattr(self, "_ipc_dir", None), getattr(self, "_grader_dir", None)):
                    if folder is not None:
                        shutil.rmtree(folder, ignore_errors=True)

    async def _async_interrupt_kernel(self) -> None:
        """Interrupt the running cell: SIGINT to the kernel itself, as Jupyter's button does.

        jupyter_client signals the process group of the process it started, which here is
        bubblewrap (or, without namespaces, the kernel and every process of the student's):
        bubblewrap ends on SIGINT and takes the whole sandbox with it, so a cell that only
        had to be interrupted (one past the wall clock, say) killed the notebook.
        """
        if self.has_kernel and self.kernel_spec is not None:
            if self.kernel_spec.interrupt_mode == "signal":
                _interrupt_kernel(_tree(self.root_pid()))
                return
        await super()._async_interrupt_kernel()

    interrupt_kernel = _async_interrupt_kernel

    def root_pid(self) -> int | None:
        process = getattr(self.provisioner, "process", None)
        return getattr(process, "pid", None)

    # Per-cell CPU accounting: the executor marks where each cell starts (see
    # autograder.worker), the watchdog compares the tree's CPU time with that mark.
    cell_started_cpu: float | None = None

    def start_cell(self) -> None:
        self.cell_started_cpu = tree_cpu_seconds(self.root_pid())

    def end_cell(self) -> None:
        self.cell_started_cpu = None


def preload_line(modules: tuple[str, ...]) -> str:
    """One IPython line that imports ``modules`` and binds no name (a failure is skipped)."""
    code = f"for m in {tuple(modules)!r}:\n try: __import__(m)\n except Exception: pass"
    return f"exec({code!r}, {{}})"


def _tree(pid: int | None) -> list:
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
    for p in procs if procs is not None else _tree(pid):
        try:
            t = p.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def _interrupt_kernel(procs: list) -> bool:
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
        procs = _tree(pid)
        if not procs:
            return
        rss = 0
        for p in procs:
            try:
                rss += p.memory_info().rss
            except psutil.Error:
                pass
        cpu = tree_cpu_seconds(pid, procs)
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
                _interrupt_kernel(procs)
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
