"""``attention-course formgrader``: nbgrader's formgrader on the course, for hand grading.

nbgrader 0.9 has no standalone ``nbgrader formgrade``: the formgrader is an extension of
Jupyter Server. This starts a Jupyter Server in the course folder with the extension on
(``nbgrader.server_extensions.formgrader``), the course's ``nbgrader_config.py`` written
first, and the formgrader as its start page. Grades given there are the gradebook's manual
scores: ``grade`` keeps them on a regrade, and ``feedback``, ``summary`` and ``grades.csv``
show them.

nbgrader's exchange (where ``nbgrader release_assignment`` would put assignments for a
JupyterHub's students) is the course's own ``exchange/`` folder: this course releases
through downloads and its own ``release`` command, and the default, a system folder
(``/usr/local/share/nbgrader/exchange``), is not writable, which the formgrader logs as
an error on every page that lists assignments.
"""

from __future__ import annotations

import os
import subprocess
import sys

EXTENSION = "nbgrader.server_extensions.formgrader"


def command(course, *, port: int, ip: str, browser: bool, token: str | None = None) -> list[str]:
    """The Jupyter Server command line that serves the formgrader on ``course``."""
    cmd = [
        sys.executable,
        "-m",
        "jupyter_server",
        f"--ServerApp.root_dir={course.root}",
        f"--ServerApp.jpserver_extensions={EXTENSION}=True",
        "--ServerApp.default_url=/formgrader",
        f"--ServerApp.ip={ip}",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.open_browser={browser}",
        f"--Exchange.root={exchange(course)}",
    ]
    if token is not None:
        cmd.append(f"--IdentityProvider.token={token}")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")  # a container's root, as on many grading servers
    return cmd


def exchange(course):
    """The course's own nbgrader exchange folder (see the module's docstring)."""
    return course.root / "exchange"


def environment() -> dict[str, str]:
    """This environment's tools first on PATH (nbgrader runs ``alembic``), no PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    return env


def start(course, *, port: int, ip: str, browser: bool, token: str | None = None, log=None):
    """Write the course's nbgrader configuration and start the server (a ``Popen``); its
    output goes to the open file ``log`` if given, else to this terminal."""
    course.write_config()
    exchange(course).mkdir(mode=0o700, exist_ok=True)
    return subprocess.Popen(
        command(course, port=port, ip=ip, browser=browser, token=token),
        cwd=course.root,
        env=environment(),
        stdout=log,
        stderr=subprocess.STDOUT if log is not None else None,
    )


def serve(course, *, port: int = 8888, ip: str = "127.0.0.1", browser: bool = True) -> int:
    """Serve the formgrader until interrupted (Ctrl-C); the server prints its URL."""
    print(f"formgrader on {course.root}: http://{ip}:{port}/formgrader (stop with Ctrl-C)")
    process = start(course, port=port, ip=ip, browser=browser)
    try:
        return process.wait()
    except KeyboardInterrupt:
        process.terminate()
        return process.wait()
