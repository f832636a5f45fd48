"""The command that wraps a kernel: bubblewrap's namespaces, prlimit's rlimits, setpriv's user.

:class:`Sandbox` builds ``bwrap … -- prlimit … -- setpriv … <argv>`` (or, where a container
forbids namespaces, only another user and the rlimits: :meth:`Sandbox._user_only`);
:func:`prepare` makes the folders a kernel gets; :func:`check_available` says whether
bubblewrap works here. What the wrapped kernel sees is :mod:`autograder.sandbox`'s docstring.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from autograder import config
from autograder.config import LIMITS

SYSTEM_DIRS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# uids FIRST_UID + worker index: no account has them on Debian. Two grading runs on one
# machine (two checkouts' tests side by side) must not share uids: the user-only mode kills
# every process of its uid, and RLIMIT_NPROC counts them all. AUTOGRADER_FIRST_UID moves them.
FIRST_UID = int(os.environ.get("AUTOGRADER_FIRST_UID", str(config.FIRST_UID)))
TMP_BYTES = 256 * 2**20
RLIMIT_CPU_MARGIN = 30  # CPU seconds the per-process rlimit allows beyond the tree's limit


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
