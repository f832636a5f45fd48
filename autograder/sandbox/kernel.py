"""The kernel manager that starts every kernel of a submission inside a :class:`Sandbox`."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from traitlets import Bool, Instance, Int

from autograder.sandbox import processes
from autograder.sandbox.wrap import Limits, Sandbox, prepare, python_paths

# Imported by every kernel before its first cell, so that a cell's CPU time is its own work:
# every chapter imports torch and matplotlib. Counted in the notebook's CPU time, as before;
# no name is added to the notebook's namespace, and a module that fails to import is skipped.
# Not torch._dynamo (about 2 s of CPU): the checks' meta-device runs no longer import it
# (checks/_meta.py).
PRELOAD = ("torch", "matplotlib.pyplot")


class SandboxKernelManager(AsyncKernelManager):
    """A kernel manager that starts every kernel inside a :class:`Sandbox`.

    Configured as any Jupyter configurable, through its traits: ``uid``, ``namespaces`` and
    ``limits`` (``config.SandboxKernelManager.uid = ...``, as ``autograder.grading.worker`` does;
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
                processes.kill_user(
                    self.uid
                )  # its daemons too: nothing of it outlives the notebook
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
                processes.interrupt_kernel(processes.tree(self.root_pid()))
                return
        await super()._async_interrupt_kernel()

    interrupt_kernel = _async_interrupt_kernel

    def root_pid(self) -> int | None:
        process = getattr(self.provisioner, "process", None)
        return getattr(process, "pid", None)

    # Per-cell CPU accounting: the executor marks where each cell starts (see
    # autograder.grading.worker), the watchdog compares the tree's CPU time with that mark.
    cell_started_cpu: float | None = None

    def start_cell(self) -> None:
        self.cell_started_cpu = processes.tree_cpu_seconds(self.root_pid())

    def end_cell(self) -> None:
        self.cell_started_cpu = None


def preload_line(modules: tuple[str, ...]) -> str:
    """One IPython line that imports ``modules`` and binds no name (a failure is skipped)."""
    code = f"for m in {tuple(modules)!r}:\n try: __import__(m)\n except Exception: pass"
    return f"exec({code!r}, {{}})"
