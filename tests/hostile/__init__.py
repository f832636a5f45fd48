"""A corpus of hostile and broken submissions, built from the chapter "Masking".

Each case is a function that turns the reference notebook into a submission (or
returns raw bytes for a file that is not a notebook at all), together with what the
grader must do with it: the exact auto score of every test cell, or the exact
problem it reports. ``tests/test_hostile.py`` grades the whole corpus in one batch.

Points in "Masking": the sequence_mask tests are worth 1 + 2 + 1, the masked_softmax
tests 1 + 2 + 1 + 1 + 1; the written answer (2) is graded by hand.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field

import nbformat

from autograder import notebooks as nbs

CHAPTER = "masking"
SEQUENCE_MASK_CELLS = [
    "test_sequence_mask",
    "hidden_sequence_mask_values",
    "hidden_sequence_mask_safety",
]
MASKED_SOFTMAX_CELLS = [
    "test_masked_softmax",
    "hidden_masked_softmax_values",
    "hidden_masked_softmax_edge_cases",
    "hidden_masked_softmax_dtypes",
    "hidden_masked_softmax_safety",
]
ALL_CELLS = SEQUENCE_MASK_CELLS + MASKED_SOFTMAX_CELLS


def _test_cells() -> dict[str, tuple[float, bool]]:
    """The chapter's autograded test cells, in order: grade_id -> (points, has hidden tests)."""
    cells = {}
    for cell in nbs.read(nbs.notebook_path(CHAPTER)).cells:
        meta = nbs.nbgrader_meta(cell)
        if nbs.is_test(cell) and cell.cell_type == "code":
            cells[meta["grade_id"]] = (float(meta["points"]), nbs.HIDDEN_MARKERS[0] in cell.source)
    return cells


TEST_CELLS = _test_cells()
AUTO_POINTS = sum(points for points, _ in TEST_CELLS.values())  # every autograded point
SEQUENCE_MASK_POINTS = sum(TEST_CELLS[c][0] for c in SEQUENCE_MASK_CELLS)
# CPU seconds per cell and per notebook; the wall clock is a backstop wall_factor times larger.
SETTINGS = {"cell_timeout": 4, "notebook_timeout": 30, "wall_factor": 5, "memory_mb": 2048}


@dataclass
class Case:
    name: str
    make: Callable
    zero_cells: list[str] = field(default_factory=list)  # these score 0, every other test cell full
    problem: str | None = None  # the problem the grader must report (a substring), if any
    note: str = ""


CASES: dict[str, Case] = {}


def case(zero_cells=(), problem=None):
    def register(fn):
        CASES[fn.__name__] = Case(
            fn.__name__, fn, list(zero_cells), problem, (fn.__doc__ or "").strip()
        )
        return fn

    return register


def reference() -> nbformat.NotebookNode:
    return nbs.read(nbs.notebook_path(CHAPTER))


def _cell(nb, grade_id):
    return next(c for c in nb.cells if nbs.nbgrader_meta(c).get("grade_id") == grade_id)


def _prepend(nb, grade_id, code):
    cell = _cell(nb, grade_id)
    cell.source = code + "\n" + cell.source
    return nb


def _append(nb, grade_id, code):
    cell = _cell(nb, grade_id)
    cell.source = cell.source + "\n" + code
    return nb


def _wrong_sequence_mask(nb):
    _make_wrong(_cell(nb, "sequence_mask"))
    return nb


def _make_wrong(cell):
    """Replace the solution region of the sequence_mask cell by a wrong answer."""
    lines = cell.source.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.strip() == "### BEGIN SOLUTION")
    end = next(i for i, ln in enumerate(lines) if ln.strip() == "### END SOLUTION")
    indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())]
    cell.source = "\n".join(lines[:start] + [indent + "return X.clone()"] + lines[end + 1 :])


# ---------------------------------------------------------------- cases


@case()
def reference_answers():
    """The reference solutions: full marks (the control)."""
    return reference()


@case(zero_cells=SEQUENCE_MASK_CELLS, problem="a cell used more than 4 s of CPU time: interrupted")
def infinite_loop_in_a_function():
    """sequence_mask never returns: each of its test cells is interrupted at its CPU limit."""
    nb = reference()
    cell = _cell(nb, "sequence_mask")
    loop = "### BEGIN SOLUTION\n    while True:\n        pass"
    cell.source = cell.source.replace("### BEGIN SOLUTION", loop, 1)
    return nb


@case(zero_cells=MASKED_SOFTMAX_CELLS, problem="a cell used more than 4 s of CPU time: interrupted")
def infinite_loop_at_top_level():
    """The masked_softmax answer cell loops forever before its def: interrupted, then NameError."""
    return _prepend(reference(), "masked_softmax", "while True:\n    pass")


BURN = "import time\nend = time.process_time() + 3\nwhile time.process_time() < end:\n    pass"


@case(zero_cells=ALL_CELLS, problem="more than 30 s of CPU time")
def slow_notebook():
    """Every cell is under the per-cell CPU limit, the notebook over the per-notebook one."""
    nb = reference()
    for _ in range(11):  # 33 s of CPU time, 3 s per cell
        nb.cells.insert(3, nbformat.v4.new_code_cell(BURN))
    return nb


@case(zero_cells=SEQUENCE_MASK_CELLS)
def memory_bomb():
    """Allocates without bound before defining sequence_mask: MemoryError under the cap."""
    return _prepend(reference(), "sequence_mask", "hog = [bytearray(2**27) for _ in range(10_000)]")


@case(zero_cells=MASKED_SOFTMAX_CELLS)
def sys_exit():
    """Calls sys.exit() at the top of the masked_softmax cell: the kernel survives, that cell fails."""
    return _prepend(reference(), "masked_softmax", "import sys\nsys.exit(3)")


@case(zero_cells=ALL_CELLS, problem="kernel died")
def killed_kernel():
    """Kills its own kernel with SIGKILL in the masked_softmax cell."""
    return _prepend(
        reference(), "masked_softmax", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"
    )


@case()
def deleted_test_cell():
    """Deletes the visible test cell of sequence_mask: the grader puts it back and runs it."""
    nb = reference()
    nb.cells.remove(_cell(nb, "test_sequence_mask"))
    return nb


@case()
def duplicated_answer_cell():
    """Pastes a second copy of the sequence_mask cell; the first copy is wrong, the last is right."""
    nb = reference()
    original = _cell(nb, "sequence_mask")
    first = copy.deepcopy(original)
    _make_wrong(first)
    first.id = original.id + "-copy"
    nb.cells.insert(nb.cells.index(original), first)
    return nb


@case(zero_cells=SEQUENCE_MASK_CELLS)
def edited_locked_test_cell():
    """A wrong sequence_mask, and its visible test cell edited to `pass`: the test is restored."""
    nb = _wrong_sequence_mask(reference())
    _cell(nb, "test_sequence_mask").source = "pass"
    return nb


@case()
def raised_points():
    """Sets the visible test cell's points to 100: the gradebook's points are used."""
    nb = reference()
    _cell(nb, "test_sequence_mask").metadata["nbgrader"]["points"] = 100
    return nb


@case(zero_cells=SEQUENCE_MASK_CELLS)
def monkeypatched_checks():
    """A wrong sequence_mask that replaces checks.run, run_hidden, torch.allclose and expect_close.

    The checks that decide its grade run in the grader, not in its kernel: it gets exactly
    what its work earns, nothing for its wrong sequence_mask, everything for masked_softmax.
    """
    nb = _wrong_sequence_mask(reference())
    return _append(
        nb,
        "sequence_mask",
        "import checks, checks._core, torch\n"
        "checks.run = checks.run_hidden = lambda *args, **kwargs: None\n"
        "checks._core.run = checks._core.run_hidden = checks.run\n"
        "checks._core.expect_close = lambda *args, **kwargs: None\n"
        "torch.allclose = lambda *args, **kwargs: True",
    )


@case(zero_cells=SEQUENCE_MASK_CELLS)
def emptied_check_registry():
    """A wrong sequence_mask that empties its kernel's check registry: the grader's is untouched."""
    nb = _wrong_sequence_mask(reference())
    return _append(
        nb,
        "sequence_mask",
        "import checks._core\nfor group in checks._core.REGISTRY.values():\n    group.clear()",
    )


@case()
def warnings_on_stderr():
    """Correct code that warns and prints to stderr on every call: no points lost."""
    nb = reference()
    cell = _cell(nb, "sequence_mask")
    cell.source = cell.source.replace(
        "### BEGIN SOLUTION",
        "### BEGIN SOLUTION\n    import sys, warnings\n"
        "    warnings.warn('a harmless warning', UserWarning)\n"
        "    print('a line on stderr', file=sys.stderr)",
        1,
    )
    return nb


@case(zero_cells=ALL_CELLS, problem="not a readable notebook")
def invalid_json():
    """A truncated file."""
    return b'{"cells": [{"cell_type": "code", "source": "import torch'


@case(zero_cells=ALL_CELLS, problem="empty")
def empty_file():
    """A file of zero bytes."""
    return b""


@case()
def other_kernel_name():
    """The notebook says it runs on an R kernel: it is graded with Python."""
    nb = reference()
    nb.metadata["kernelspec"] = {"name": "ir", "display_name": "R", "language": "R"}
    nb.metadata["language_info"] = {"name": "R"}
    return nb


@case()
def enormous_output():
    """Prints 100,000 lines and a 20-million-character line: output is capped, grades are not."""
    nb = _append(reference(), "sequence_mask", "print('x' * 20_000_000)")
    nb.cells.insert(3, nbformat.v4.new_code_cell("for i in range(100_000):\n    print(i)"))
    return nb


@case()
def writes_outside_its_folder():
    """Correct code that also tries to overwrite the grader's checks in the course folder."""
    return _append(
        reference(),
        "sequence_mask",
        "from pathlib import Path\n"
        "course = Path.cwd().parents[5]\n"
        "try:\n"
        "    for target in course.glob('source/*/checks/_core.py'):\n"
        "        target.write_text('raise RuntimeError(\"poisoned by a submission\")')\n"
        "    (course / 'evil.txt').write_text('was here')\n"
        "except OSError as err:\n"
        "    print('blocked:', err)",
    )


# ---------------------------------------------------------------- the sandbox (issue: grades
# no student can change). Each attacker's own answers are the reference: it must keep exactly
# its full marks, and the honest students graded before and after it must keep theirs.


@case()
def aaa_honest_before():
    """An honest student graded before the attackers (names sort the batch): full marks."""
    return reference()


@case()
def zzz_honest_after():
    """An honest student graded after the attackers: full marks, whatever they left behind."""
    return reference()


ATTACK = """
import os, pathlib, subprocess, sys
def _attempt(what, action):
    try:
        action()
        print("ATTACK SUCCEEDED:", what)
    except Exception as err:
        print("blocked:", what, type(err).__name__)
"""


@case()
def daemon_edits_later_jobs():
    """A setsid daemon that, for a minute, rewrites the checks in every other job's folder."""
    daemon = (
        "import pathlib, time\n"
        "end = time.time() + 60\n"
        "while time.time() < end:\n"
        "    for p in pathlib.Path('/').glob('**/autograded/*/masking/checks/_core.py'):\n"
        "        try: p.write_text('raise RuntimeError(\\'poisoned\\')')\n"
        "        except OSError: pass\n"
        "    time.sleep(0.5)\n"
    )
    return _append(
        reference(),
        "sequence_mask",
        ATTACK + f"subprocess.Popen(['setsid', sys.executable, '-c', {daemon!r}], "
        "start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)",
    )


@case()
def startup_files_for_later_kernels():
    """Drops an IPython start-up file and .pth files that break torch.softmax for later kernels.

    Its own HOME (a private /tmp) takes the start-up file; the environment's site-packages
    does not. Nothing reaches a later kernel: the honest student graded after it keeps
    full marks.
    """
    patch = "import torch; torch.softmax = lambda *a, **k: 0"
    return _append(
        reference(),
        "sequence_mask",
        "import pathlib, site, IPython.paths\n"
        "startup = pathlib.Path(IPython.paths.get_ipython_dir(), 'profile_default', 'startup')\n"
        "startup.mkdir(parents=True, exist_ok=True)\n"
        f"(startup / '00-evil.py').write_text({patch!r})\n"
        "user_site = pathlib.Path(site.getusersitepackages())\n"
        "user_site.mkdir(parents=True, exist_ok=True)\n"
        f"(user_site / 'evil.pth').write_text({patch!r})\n"
        "try:\n"
        f"    pathlib.Path(site.getsitepackages()[0], 'evil.pth').write_text({patch!r})\n"
        "    print('ATTACK SUCCEEDED: site-packages is writable')\n"
        "except OSError as err:\n"
        "    print('blocked:', err)",
    )


@case(zero_cells=ALL_CELLS)
def copies_the_solutions():
    """Stubs only, then looks for the answers: the source notebook above its folder, the
    repository through its parent processes, solutions/ on disk. Its own work earns nothing."""
    nb = reference()
    for grade_id in ("sequence_mask", "masked_softmax"):
        cell = _cell(nb, grade_id)
        lines = cell.source.splitlines()
        start = next(i for i, ln in enumerate(lines) if ln.strip() == "### BEGIN SOLUTION")
        end = next(i for i, ln in enumerate(lines) if ln.strip() == "### END SOLUTION")
        indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())]
        cell.source = "\n".join(
            lines[:start] + [indent + "raise NotImplementedError()"] + lines[end + 1 :]
        )
    steal = (
        ATTACK + "found = []\n"
        "for parent in pathlib.Path.cwd().parents:\n"
        "    found += list(parent.glob('*/masking/masking.ipynb')) + list(parent.glob('**/solutions/masking.py'))\n"
        "for pid in os.listdir('/proc'):\n"
        "    try: found.append(pathlib.Path(open(f'/proc/{pid}/cmdline').read().split(chr(0))[0]))\n"
        "    except OSError: pass\n"
        "for root in ['/work', '/root', '/home', '/tmp', '/srv']:\n"
        "    found += list(pathlib.Path(root).glob('*/solutions/masking.py'))\n"
        "for path in found:\n"
        "    if path.name == 'masking.py' and path.is_file():\n"
        "        exec(path.read_text(), globals())\n"
        "        print('ATTACK SUCCEEDED: copied', path)\n"
        "        break\n"
    )
    return _append(nb, "masked_softmax", steal)


def _stubs(nb):
    """The notebook with both answers back to the release's stub."""
    for grade_id in ("sequence_mask", "masked_softmax"):
        cell = _cell(nb, grade_id)
        lines = cell.source.splitlines()
        start = next(i for i, ln in enumerate(lines) if ln.strip() == "### BEGIN SOLUTION")
        end = next(i for i, ln in enumerate(lines) if ln.strip() == "### END SOLUTION")
        indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())]
        cell.source = "\n".join(
            lines[:start] + [indent + "raise NotImplementedError()"] + lines[end + 1 :]
        )
    return nb


@case(zero_cells=ALL_CELLS)
def forges_passing_checks():
    """Stubs only, and every way to make the checks say "pass" from inside the kernel: calls
    what signed results before (checks._core._sign, the key file in its environment), prints
    the lines a passing check prints, patches torch.equal, allclose and isclose to say True."""
    nb = _stubs(reference())
    forge = (
        ATTACK + "import torch, checks, checks._core\n"
        "torch.equal = torch.allclose = lambda *a, **k: True\n"
        "torch.isclose = lambda a, b, *x, **k: torch.ones_like(a, dtype=torch.bool)\n"
        "key = os.environ.get('ATTENTION_GRADER_KEY_FILE')\n"
        "_attempt('read a key file', lambda: open(key).read())\n"
        "_attempt('call the signer', lambda: checks._core._sign('masked_softmax'))\n"
        "for group in ('sequence_mask', 'masked_softmax'):\n"
        "    print(f'✓ every check of {group} passed')\n"
        "    print(f'[grader] {group}: 5 checks passed (0123456789abcdef0123)')\n"
    )
    return _append(nb, "masked_softmax", forge)


@case(zero_cells=ALL_CELLS)
def answers_for_the_grader():
    """Stubs only, and a kernel that replaces the grader's server with its own, which answers
    every request "ok" with a tensor of ones, or True: data it makes up cannot pass."""
    nb = _stubs(reference())
    fake = (
        "import socket, torch, checks._serve as served, checks._wire as wire\n"
        "def fake_serve(path, targets):\n"
        "    s = socket.socket(socket.AF_UNIX); s.connect(path)\n"
        "    while True:\n"
        "        try: request = wire.recv(s)\n"
        "        except Exception: return\n"
        "        if request.get('op') == 'bye': return\n"
        "        wire.send(s, ('ok', {'out': torch.ones(2, 3), 'inputs': [], 'rng': torch.get_rng_state()}))\n"
        "served.serve = fake_serve\n"
    )
    return _append(nb, "masked_softmax", fake)


@case(zero_cells=ALL_CELLS)
def leaks_the_hidden_checks():
    """Stubs only, and searches its folder, its parents and the disk for the hidden checks and
    the source notebook, printing what it finds: none is in its sandbox, and nothing it prints
    reaches its feedback."""
    nb = _stubs(reference())
    leak = (
        ATTACK
        + "for root in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents, pathlib.Path('/tmp')]:\n"
        "    for path in list(root.glob('checks/hidden/*.py')) + list(root.glob('*/masking/masking.ipynb')):\n"
        "        if path.resolve() == (pathlib.Path.cwd() / 'masking.ipynb').resolve():\n"
        "            continue  # its own notebook\n"
        "        text = path.read_text()\n"
        "        if 'hidden' in path.parts or 'BEGIN HIDDEN TESTS' in text or 'BEGIN SOLUTION' in text:\n"
        "            print('ATTACK SUCCEEDED: read', path)\n"
        "            print(text)\n"
    )
    return _append(nb, "masked_softmax", leak)


@case()
def special_files_in_its_folder():
    """Leaves a FIFO, symlinks to /etc/passwd and /etc, and a big file in its own folder.

    Making them is allowed (it is its folder); the grader must never open or copy them.
    """
    return _append(
        reference(),
        "sequence_mask",
        "import os\n"
        "os.mkfifo('pipe.ipynb')\n"
        "os.symlink('/etc/passwd', 'passwd.ipynb')\n"
        "os.symlink('/etc', 'etc')\n"
        "try:\n"
        "    with open('big.ipynb', 'wb') as f:\n"
        "        for _ in range(512):\n"
        "            f.write(bytes(2**20))\n"
        "except OSError as err:\n"
        "    print('the file size limit held:', err)",
    )


@case()
def children_that_outlive_the_notebook():
    """Starts twenty children, each in its own session, that sleep for ten minutes."""
    return _append(
        reference(),
        "sequence_mask",
        ATTACK + "for _ in range(20):\n"
        "    subprocess.Popen(['sleep', '600'], start_new_session=True)",
    )


@case(zero_cells=ALL_CELLS, problem="stopped by the sandbox")
def children_share_a_memory_bomb():
    """Five children hold 700 MiB each (written, so resident): under the per-process cap,
    over the notebook's."""
    hold = "x = b'\\1' * (700 * 2**20); import time; time.sleep(120)"
    return _prepend(
        reference(),
        "sequence_mask",
        "import subprocess, sys, time\n"
        f"kids = [subprocess.Popen([sys.executable, '-c', {hold!r}]) for _ in range(5)]\n"
        "time.sleep(30)",
    )


@case(zero_cells=ALL_CELLS, problem="holds more than 2000 files")
def fills_its_folder():
    """Writes 2,500 small files into its folder (each under the file-size limit): the folder's
    file count is capped, so it cannot fill the grader's disk."""
    return _prepend(
        reference(),
        "sequence_mask",
        "import pathlib, time\n"
        "for i in range(2500):\n"
        "    pathlib.Path(f'junk{i}.txt').write_text('x' * 1000)\n"
        "time.sleep(5)",
    )


def write(case: Case, path) -> None:
    made = case.make()
    if isinstance(made, bytes):
        path.write_bytes(made)
    else:
        nbformat.write(made, path)
