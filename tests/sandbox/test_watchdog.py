"""The sandbox's watchdog on real processes: CPU time per cell, not the wall clock."""

import subprocess
import sys
import time

import pytest

from autograder.sandbox import Limits, SandboxKernelManager, Watchdog, tree_cpu_seconds

pytestmark = pytest.mark.timeout(60)

# A stand-in kernel: a Python process whose command line names ipykernel_launcher (the
# watchdog interrupts that process); it spins on the CPU, and on SIGINT it prints
# "interrupted" and exits, or ignores it.
# Like ipykernel, which installs Python's SIGINT handler around each cell, "obey" installs it
# itself: a process started in the background by a shell inherits SIGINT ignored.
SPIN = """
import signal, sys
if sys.argv[2] == "ignore":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
else:
    signal.signal(signal.SIGINT, signal.default_int_handler)
try:
    while True:
        pass
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


@pytest.fixture(autouse=True)
def no_process_left():
    """Kill what a test started, even when it fails before its own clean-up."""
    yield
    import psutil

    for child in psutil.Process().children(recursive=True):
        try:
            child.kill()
        except psutil.Error:
            pass


class FakeKernel(SandboxKernelManager):
    """Only what the watchdog reads: the tree's first process, its limits, its cell mark."""

    def __init__(self, proc, limits):  # no jupyter_client set-up
        self.proc, self.limits = proc, limits

    def root_pid(self):
        return self.proc.pid


def spin(mode):
    argv = [sys.executable, "-c", SPIN, "ipykernel_launcher", mode]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)


def watch_until(dog, km, done, seconds=30):
    end = time.monotonic() + seconds
    while time.monotonic() < end and not done():
        dog.inspect(km)
        time.sleep(0.05)


def test_a_cell_over_its_cpu_time_is_interrupted():
    """Does a cell that has used more than its CPU seconds get SIGINT, and is it reported?"""
    proc = spin("obey")
    km = FakeKernel(proc, Limits(cell_cpu_seconds=1))
    km.start_cell()
    dog = Watchdog()
    watch_until(dog, km, lambda: proc.poll() is not None)
    why = (proc.returncode, dog.events, dog.killed)  # what happened, should it fail
    assert proc.stdout.read().strip() == "interrupted", why
    assert list(dog.events.values()) == ["a cell used more than 1 s of CPU time: interrupted"]
    assert dog.killed == {}


def test_a_cell_that_ignores_the_interrupt_is_killed(monkeypatch):
    """Is a tree that goes on computing after the interrupt killed, with the reason kept?"""
    monkeypatch.setattr("autograder.sandbox.watchdog.INTERRUPT_GRACE_CPU", 0.5)
    proc = spin("ignore")
    km = FakeKernel(proc, Limits(cell_cpu_seconds=1))
    km.start_cell()
    dog = Watchdog()
    watch_until(dog, km, lambda: proc.poll() is not None)
    assert proc.returncode == -9
    assert "ignored the interrupt" in dog.killed[proc.pid]


def test_sleeping_costs_no_cpu_time_and_is_left_alone():
    """Is a process that waits (as on a busy machine) never charged for the wall-clock time?"""
    sleep = [sys.executable, "-c", "import time; time.sleep(3)", "ipykernel_launcher"]
    proc = subprocess.Popen(sleep)
    km = FakeKernel(proc, Limits(cell_cpu_seconds=1))
    km.start_cell()
    dog = Watchdog()
    watch_until(dog, km, lambda: proc.poll() is not None, seconds=10)
    assert proc.returncode == 0
    assert dog.events == {} and dog.killed == {}
    assert tree_cpu_seconds(None, []) == 0.0


def test_a_notebook_over_its_total_cpu_time_is_killed():
    """Are many short cells stopped once the notebook's tree is over its CPU seconds?"""
    proc = spin("obey")
    km = FakeKernel(proc, Limits(cpu_seconds=1, cell_cpu_seconds=60))
    dog = Watchdog()
    watch_until(dog, km, lambda: proc.poll() is not None)
    assert dog.killed[proc.pid] == "the notebook used more than 1 s of CPU time"


def test_a_new_cell_is_not_killed_for_the_previous_cells_interrupt(monkeypatch):
    """After an interrupted cell, does the next cell start with a clean slate?"""
    monkeypatch.setattr("autograder.sandbox.watchdog.INTERRUPT_GRACE_CPU", 0.5)
    proc = spin("ignore")
    km = FakeKernel(proc, Limits(cell_cpu_seconds=1))
    dog = Watchdog()
    km.start_cell()
    watch_until(dog, km, lambda: proc.pid in dog.interrupted)
    km.start_cell()  # the next cell: its own second of CPU time before any interrupt
    dog.inspect(km)
    assert proc.pid not in dog.interrupted and dog.killed == {}
    proc.kill()
    proc.wait()


def test_the_interrupt_goes_to_the_kernel_not_to_the_sandbox_around_it():
    """With bwrap's command line naming ipykernel_launcher too, is the Python kernel the target?"""
    wrapper = subprocess.Popen(
        ["sh", "-c", f"{sys.executable} -c '{SPIN}' ipykernel_launcher obey; echo done"],
        stdout=subprocess.PIPE,
        text=True,
    )
    km = FakeKernel(wrapper, Limits(cell_cpu_seconds=1))
    km.start_cell()
    dog = Watchdog()
    watch_until(dog, km, lambda: wrapper.poll() is not None)
    why = (wrapper.returncode, dog.events, dog.killed)  # what happened, should it fail
    assert wrapper.stdout.read().split() == ["interrupted", "done"], why  # the shell lived on


def test_a_folder_over_its_size_or_file_count_is_reported(tmp_path):
    """Does the folder check name the file count or the size that a folder went past, and
    pass a folder within both?"""
    from autograder.sandbox import Limits, folder_over_limits

    (tmp_path / "sub").mkdir()
    for i in range(12):
        (tmp_path / "sub" / f"f{i}").write_bytes(b"x" * 4096)
    assert folder_over_limits(tmp_path, Limits(folder_files=100, folder_mb=1)) is None
    assert "more than 10 files" in folder_over_limits(tmp_path, Limits(folder_files=10))
    (tmp_path / "big").write_bytes(b"x" * (2 * 2**20))
    assert "past 1 MiB" in folder_over_limits(tmp_path, Limits(folder_mb=1))
    (tmp_path / "link").symlink_to("/usr")  # never followed
    assert folder_over_limits(tmp_path, Limits(folder_files=100, folder_mb=3)) is None


def test_the_folder_check_never_follows_a_folder_swapped_for_a_link(tmp_path, monkeypatch):
    """A folder replaced by a link to a big tree while it is measured: is the tree behind the
    link never walked (the walk holds folder descriptors and follows no link)?"""
    import os

    from autograder.sandbox import Limits, folder_over_limits

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "f").write_bytes(b"x")
    real_fwalk = os.fwalk

    def swapping_fwalk(top, *args, **kwargs):
        for entry in real_fwalk(top, *args, **kwargs):
            if (tmp_path / "sub").is_dir() and not (tmp_path / "sub").is_symlink():
                os.rename(tmp_path / "sub", tmp_path / "gone")
                (tmp_path / "sub").symlink_to("/usr")  # thousands of files, if followed
            yield entry

    monkeypatch.setattr(os, "fwalk", swapping_fwalk)
    assert folder_over_limits(tmp_path, Limits(folder_files=50, folder_mb=1)) is None
