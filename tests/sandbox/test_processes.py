"""The process tree of a kernel (autograder/sandbox/processes.py): the kill of every process
of a uid, against a daemon that hops to a new pid every few milliseconds."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import psutil
import pytest

# A daemon of the kernel's uid that hops to a new pid every few milliseconds: each generation
# writes the time, starts the next in a new session and exits. A snapshot of the uid's
# processes taken at any moment misses the next generation. (sh, not Python: the test's
# interpreter may sit where another uid cannot read it.)
HOPPER = """
echo "daemon $(date +%s.%N)" >> "$1"
sleep 0.002
if [ "$(date +%s)" -lt "$2" ]; then setsid sh "$0" "$1" "$2" & fi
exit 0
"""


@pytest.mark.timeout(120)
def test_a_pid_hopping_daemon_of_the_kernels_uid_is_gone_when_its_kernel_is(tmp_path):
    """The user-only mode (no namespaces: a container such as Gradescope's) ends a kernel by
    killing every process of its uid, before the slot's next submission starts. Against a
    double-forking daemon that changes its pid every few milliseconds: has it stopped
    writing once the kernel manager's clean-up returns?"""
    import asyncio
    import subprocess

    from autograder import sandbox

    if os.geteuid() != 0:
        pytest.skip("the user-only mode runs kernels as another uid, which needs root")
    uid = 64900  # a uid of this test's own: other grading tests may run beside it
    folder = Path(tempfile.mkdtemp(prefix="attn-probe-"))  # reachable by that uid
    try:
        folder.chmod(0o777)
        script, probe = folder / "hop.sh", folder / "probe.txt"
        script.write_text(HOPPER)
        script.chmod(0o755)
        setpriv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
        end = str(int(time.time()) + 60)
        subprocess.run([*setpriv, "setsid", "sh", str(script), str(probe), end], check=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(probe.read_text().splitlines()) < 20:
            time.sleep(0.05)
        # What the slot's kernel manager does when its kernel ends, in the user-only mode.
        km = sandbox.SandboxKernelManager(uid=uid, namespaces=False)
        asyncio.run(km._async_cleanup_resources())
        stopped = time.time()
        time.sleep(0.5)  # a generation that escaped would go on writing
        times = [float(line.split()[1]) for line in probe.read_text().splitlines()]
    finally:
        sandbox.kill_user(uid)
        shutil.rmtree(folder, ignore_errors=True)
    assert len(times) >= 20, "the daemon never ran: this test proves nothing"
    assert max(times) < stopped, f"{sum(t >= stopped for t in times)} writes after the kill"


@pytest.mark.timeout(60)
def test_a_kill_as_the_uid_that_is_stopped_does_not_hang_the_grader(monkeypatch):
    """Once the child that kills as the kernel's uid has taken that uid, the uid's processes
    may signal it: stopped there (SIGSTOP), does the grader still go on, the child reaped?"""
    import signal

    from autograder.sandbox import processes

    if os.geteuid() != 0:
        pytest.skip("the kill as the kernel's uid needs root")
    # In the forked child, taking the uid stops it, as a student's SIGSTOP would right after.
    monkeypatch.setattr(os, "setuid", lambda uid: os.kill(os.getpid(), signal.SIGSTOP))
    children = set(psutil.Process().children())
    start = time.monotonic()
    processes._kill_all_as(64901, wait=1.0)
    assert time.monotonic() - start < 10
    assert set(psutil.Process().children()) == children  # nothing stopped or unreaped left
