"""A corpus of hostile and broken submissions, built from the chapter "Masking".

Each case is a function that turns the reference notebook into a submission (or
returns raw bytes for a file that is not a notebook at all), together with what the
grader must do with it: the exact auto score of every test cell, or the exact
problem it reports. ``tests/test_hostile.py`` grades the whole corpus in one batch.

Points in "Masking": the sequence_mask tests are worth 1 + 2 + 1, the masked_softmax
tests 1 + 2 + 1 + 1 + 1, the two quiz questions 1 + 1; the written answer (2) is graded
by hand.

The cases after "the grader's boundary" below come from issue 21, one class per group,
each with variations: what the grader reads back or writes after a kernel ran (links,
FIFOs, names swapped while it is graded), feedback pages (script in a written answer,
hidden-test markers in a student's own cells, a notebook too big to show), waiting past
the wall clock (a sleep, a blocked read, answers one byte a second), stops after the
tests ran (CPU, memory, an exit), deleted and changed cells, and answers that are slow
for the grader to read. ``outside/``, beside the course folder, stands for any folder
outside every course that a submission might aim a link at.
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
ALL_CELLS = SEQUENCE_MASK_CELLS + MASKED_SOFTMAX_CELLS  # the two exercises
QUIZ_CELLS = ["test_quiz_2_1", "test_quiz_2_2"]
EVERY_CELL = ALL_CELLS + QUIZ_CELLS  # every autograded test cell


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
# CPU seconds per cell and per notebook; the wall clock is a backstop wall_factor times larger
# (20 s per cell); the grader's own CPU seconds per notebook.
SETTINGS = {
    "cell_timeout": 4,
    "notebook_timeout": 30,
    "wall_factor": 5,
    "memory_mb": 2048,
    "grader_cpu": 20,
}
CELL_WALL = SETTINGS["cell_timeout"] * SETTINGS["wall_factor"]


@dataclass
class Case:
    name: str
    make: Callable
    zero_cells: list[str] = field(default_factory=list)  # these score 0, every other test cell full
    problem: str | None = None  # the problem the grader must report (a substring), if any
    note: str = ""
    # Other reports that are right too (a substring each), beside ``problem`` (or no report at
    # all, where it is None): for a case whose report depends on another part of the tree (the
    # checks' wire format), or on how busy the machine is.
    also: tuple = ()


CASES: dict[str, Case] = {}


def case(zero_cells=(), problem=None, also=()):
    def register(fn):
        CASES[fn.__name__] = Case(
            fn.__name__, fn, list(zero_cells), problem, (fn.__doc__ or "").strip(), tuple(also)
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


@case(zero_cells=EVERY_CELL, problem="more than 30 s of CPU time")
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


@case(zero_cells=MASKED_SOFTMAX_CELLS + QUIZ_CELLS, problem="kernel died at cell")
def killed_kernel():
    """Kills its own kernel with SIGKILL in the masked_softmax cell: the sequence_mask tests
    before it keep their points, every test after it scores 0."""
    return _prepend(
        reference(), "masked_softmax", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"
    )


@case(problem="'test_sequence_mask' was missing")
def deleted_test_cell():
    """Deletes the visible test cell of sequence_mask: the grader puts it back, runs it and
    says so."""
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
        "import checks, checks._expect, checks._runner, torch\n"
        "checks.run = checks.run_hidden = lambda *args, **kwargs: None\n"
        "checks._runner.run = checks._runner.run_hidden = checks.run\n"
        "checks._expect.expect_close = lambda *args, **kwargs: None\n"
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


@case(zero_cells=EVERY_CELL, problem="not a readable notebook")
def invalid_json():
    """A truncated file."""
    return b'{"cells": [{"cell_type": "code", "source": "import torch'


@case(zero_cells=EVERY_CELL, problem="empty")
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
        "for course in Path.cwd().parents:\n"
        "    try:\n"
        "        for target in course.glob('source/*/checks/_core.py'):\n"
        "            target.write_text('raise RuntimeError(\"poisoned by a submission\")')\n"
        "        (course / 'evil.txt').write_text('was here')\n"
        "    except OSError as err:\n"
        "        print('blocked:', err)",
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


@case(zero_cells=ALL_CELLS, also=("a cell used more than 4 s of CPU time: interrupted",))
def copies_the_solutions():
    """Stubs only, then looks for the answers: the source notebook above its folder, the
    repository through its parent processes, solutions/ on disk. Its own work earns nothing.
    (Its search walks every folder the sandbox shows, the Python installation included: close
    to the cell's 4 s of CPU, and past it on a busy machine, where CPU time grows too. Then it
    is interrupted, which costs nothing it had.)"""
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


@case(zero_cells=EVERY_CELL, also=("a cell used more than 4 s of CPU time: interrupted",))
def answers_for_the_grader():
    """Stubs only, and a kernel that replaces the grader's server with its own, which answers
    every request "ok" with a tensor of ones, or True: data it makes up cannot pass. (Its
    server answers every check's requests, close to the cell's 4 s of CPU: on a busy machine,
    where CPU time grows too, it may be interrupted, which costs nothing it had.)"""
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
    """Leaves FIFOs, a socket, symlinks to /etc/passwd and /etc, a link loop, a hard link and a
    big file in its own folder, under every name the grader has read back (the notebook,
    the outputs kept for the instructor, the timestamp).

    Making them is allowed (it is its folder); the grader never opens or copies anything
    from it, so none of them blocks, leaks or stops the batch.
    """
    return _append(
        reference(),
        "sequence_mask",
        "import os, socket\n"
        "for name in ('masking.ipynb', 'student-outputs.ipynb', 'pipe.ipynb'):\n"
        "    if os.path.lexists(name):\n"
        "        os.remove(name)\n"
        "    os.mkfifo(name)\n"
        "os.symlink('/etc/passwd', 'passwd.ipynb')\n"
        "os.symlink('/etc/passwd', 'timestamp.txt')\n"
        "os.symlink('/etc', 'etc')\n"
        "os.symlink('loop.ipynb', 'loop.ipynb')\n"
        "os.link('README.md', 'hard.ipynb')\n"
        "s = socket.socket(socket.AF_UNIX); s.bind('socket.ipynb')\n"
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


@case(zero_cells=EVERY_CELL, problem="stopped by the sandbox")
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


@case(zero_cells=EVERY_CELL, problem="holds more than 2000 files")
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


# ---------------------------------------------------------------- the grader's boundary
# (issue 21). Whatever a kernel leaves in its folder is student-controlled: the grader must
# never open a name there, read a file back from there, or write there after the kernel ran.

# Finds the course folder (named "course" by tests/test_hostile.py) and outside/ beside it,
# whatever depth the kernel's folder is at.
WHERE = """
import os, pathlib
here = pathlib.Path.cwd()
course = next((p for p in here.parents if p.name == 'course'), here.parents[3])
outside = course.parent / 'outside'
"""

# Every name a grader might write or read back, aimed at the gradebook or outside/.
LINKS = (
    WHERE
    + """
aims = {
    'masking.ipynb': course / 'gradebook.db',
    'gradebook.db': course / 'gradebook.db',
    'student-outputs.ipynb': outside / 'written-through-a-link.ipynb',
    'timestamp.txt': outside / 'canary.txt',
    'results.json': outside / 'results.json',
    'masking.html': outside / 'canary.txt',
}
for name, aim in aims.items():
    if os.path.lexists(name):
        os.remove(name)
    os.symlink(aim, name)
for name in ('autograded', 'feedback', 'submitted', 'source', 'outputs'):
    os.symlink(outside, name)
print('links planted')
"""
)


@case()
def links_where_the_grader_writes():
    """After its last test: its notebook, and every other name the grader wrote or read in a
    kernel's folder, replaced by links to the course's gradebook and to a folder outside
    every course; folders the grader might write into, linked outside too. Full marks, the
    gradebook intact, nothing created or changed outside."""
    nb = reference()
    nb.cells.append(nbformat.v4.new_code_cell(LINKS))
    return nb


SWAPPER = (
    WHERE
    + """
import glob, re, threading, time

def aims():
    # the grader's socket of a test cell is named in the cell it sent (this kernel's history)
    history = '\\n'.join(get_ipython().user_ns.get('_ih', []))
    return set(re.findall(r"'(/[^']+[.]sock)'", history))

def swap():
    end = time.time() + 300
    while time.time() < end:
        for name in ('masking.ipynb', 'student-outputs.ipynb', 'timestamp.txt'):
            try:
                with open(name + '.tmp', 'w') as f:
                    f.write('{}')
                os.replace(name + '.tmp', name)  # a plain file for a check ...
                os.symlink(course / 'gradebook.db', name + '.lnk')
                os.replace(name + '.lnk', name)  # ... and a link for its use
            except OSError:
                pass
        for sock in aims():
            folder = os.path.dirname(sock)
            try:  # the folder of the grader's sockets: the next one, or this one, as a link
                os.symlink(outside / 'canary.txt', os.path.join(folder, 'planted'))
                print('ATTACK SUCCEEDED: wrote into the folder of the grader\\'s sockets')
            except OSError:
                pass
            try:
                os.replace(os.path.join(folder, 'planted'), sock)
            except OSError:
                pass
        time.sleep(0.02)

threading.Thread(target=swap, daemon=True).start()
"""
)


@case()
def swaps_names_while_graded():
    """From its first cell, a thread that keeps swapping plain files and links (to the
    gradebook) under the names the grader used in its folder, and tries to put links in
    place of the grader's sockets: it earns its full marks, and reaches nothing."""
    nb = reference()
    nb.cells.insert(2, nbformat.v4.new_code_cell(SWAPPER))
    return nb


XSS = """<script>document.title = 'PWNED'</script>
<img src="x" onerror="document.title = 'PWNED'">
<svg onload="document.title = 'PWNED'"><circle r="1"/></svg>
<a href="javascript:document.title = 'PWNED'">a link</a> and [another](javascript:alert(1)).
<iframe srcdoc="<script>parent.document.title = 'PWNED'</script>"></iframe>
<details open ontoggle="document.title = 'PWNED'"><summary>x</summary></details>
<meta http-equiv="refresh" content="0; url=javascript:alert(1)">
<style>body { display: none }</style>
<form action="https://example.org"><input name="q"></form>
<object data="javascript:alert(1)"></object><embed src="javascript:alert(1)">
"""


@case(problem="does not have")
def script_in_its_answers():
    """A written answer, a Markdown cell of its own, a code comment, the notebook's title
    and an extra graded cell's id carry <script>, event handlers and javascript: links:
    nothing of it is live in the feedback page; every autograded point earned."""
    nb = reference()
    written = _cell(nb, "written_masking_empty_rows")
    written.source = "My answer.\n\n" + XSS
    nb.cells.insert(1, nbformat.v4.new_markdown_cell("## Notes\n\n" + XSS))
    nb.cells.insert(2, nbformat.v4.new_code_cell("# </pre><script>document.title='PWNED'</script>"))
    nb.metadata["title"] = "<script>document.title='PWNED'</script>"
    extra = nbformat.v4.new_markdown_cell(XSS)
    extra.metadata["nbgrader"] = {
        "grade": True,
        "grade_id": '"><script>document.title=1</script>',
        "locked": True,
        "points": 3,
        "schema_version": 3,
        "solution": False,
        "task": False,
    }
    nb.cells.append(extra)
    return nb


@case()
def hidden_markers_in_its_own_cells():
    """A code cell of its own that starts with "### BEGIN HIDDEN TESTS" and has no END, the
    same line in a Markdown cell and in its answer: graded in full, and its feedback page
    (and everyone else's) built."""
    nb = reference()
    nb.cells.insert(1, nbformat.v4.new_code_cell("### BEGIN HIDDEN TESTS\nscratch = 1"))
    nb.cells.insert(1, nbformat.v4.new_markdown_cell("### BEGIN HIDDEN TESTS\nmy notes"))
    cell = _cell(nb, "sequence_mask")
    cell.source = cell.source.replace(
        "### BEGIN SOLUTION", "### BEGIN SOLUTION\n    ### BEGIN HIDDEN TESTS", 1
    )
    return nb


@case()
def huge_notebook():
    """About 6 MB of Markdown and code of its own: graded in full; its feedback page shows
    what fits and says the rest is not shown."""
    nb = reference()
    nb.cells.insert(1, nbformat.v4.new_markdown_cell("Notes. " * 600_000))
    for _ in range(3):
        nb.cells.insert(2, nbformat.v4.new_code_cell("# " + "x" * 500_000 + "\npass"))
    return nb


@case(problem="waited past the wall clock")
def sleeps_past_the_wall_clock():
    """An honest notebook with a cell of its own that sleeps past the cell's wall clock (no
    CPU): that cell is interrupted, the rest graded, the wait reported; full marks."""
    nb = reference()
    index = nb.cells.index(_cell(nb, "hidden_sequence_mask_safety")) + 1
    nb.cells.insert(index, nbformat.v4.new_code_cell(f"import time\ntime.sleep({CELL_WALL + 15})"))
    return nb


@case(problem="waited past the wall clock")
def blocked_on_a_read():
    """An honest notebook with a cell that blocks on a read that never comes (a pipe): that
    cell is interrupted, the rest graded; full marks."""
    nb = reference()
    index = nb.cells.index(_cell(nb, "test_masked_softmax"))
    block = "import os\nr, w = os.pipe()\nos.read(r, 1)"
    nb.cells.insert(index - 1, nbformat.v4.new_code_cell(block))
    return nb


# The kernel answers the checks of one quiz question one byte a second: a header that never
# completes for question 2.1, a whole frame trickled for question 2.2. The others: as usual.
TRICKLE = """
import io, socket, time, torch, checks._serve as remote
honest = remote.serve
def serve(path, targets):
    names = ' '.join(targets)
    if 'answer_2_1' not in names and 'answer_2_2' not in names:
        return honest(path, targets)
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    buf = io.BytesIO()
    torch.save(('ok', {'out': 1}), buf)
    frame = len(buf.getvalue()).to_bytes(8, 'big') + buf.getvalue()
    if 'answer_2_1' in names:
        frame = frame[:5]
    try:
        for i in range(len(frame)):
            s.send(frame[i:i + 1])
            time.sleep(1)
        time.sleep(600)
    except OSError:
        return
remote.serve = serve
"""


@case(zero_cells=QUIZ_CELLS, problem="waited past the wall clock")
def answers_one_byte_a_second():
    """Its kernel answers the checks of both quiz questions one byte a second (an unfinished
    header; a whole frame, trickled): those two tests fail at their deadline, and only
    they; the rest of its (correct) notebook keeps its points."""
    nb = reference()
    index = nb.cells.index(_cell(nb, "quiz_2_1"))
    nb.cells.insert(index, nbformat.v4.new_code_cell(TRICKLE))
    return nb


@case(problem="ignored the interrupt", also=("timed out on the wall clock",))
def spins_after_every_test():
    """After every test ran, a last cell that ignores SIGINT and spins: stopped by the
    sandbox (or, on a machine so busy that the cell's wall clock comes first, abandoned
    there), and every point its tests earned kept."""
    nb = reference()
    spin = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"
    nb.cells.append(nbformat.v4.new_code_cell(spin))
    return nb


@case(problem="stopped by the sandbox")
def memory_after_every_test():
    """After every test ran, children that together hold more memory than the notebook may:
    stopped, every point kept."""
    hold = "x = b'\\1' * (800 * 2**20); import time; time.sleep(120)"
    nb = reference()
    nb.cells.append(
        nbformat.v4.new_code_cell(
            "import subprocess, sys, time\n"
            f"kids = [subprocess.Popen([sys.executable, '-c', {hold!r}]) for _ in range(3)]\n"
            "time.sleep(60)"
        )
    )
    return nb


@case(problem="kernel died at cell")
def exits_after_every_test():
    """After every test ran, os._exit(0): the kernel is gone, every point kept."""
    nb = reference()
    nb.cells.append(nbformat.v4.new_code_cell("import os\nos._exit(0)"))
    return nb


@case(zero_cells=["test_quiz_2_1"], problem="'test_quiz_2_1' was missing")
def deleted_quiz_and_its_test():
    """Deletes the answer cell of quiz question 2.1 and, in the JSON, its locked test cell
    (nbgrader 0.9.6 then fails the notebook): 0 for that question, the rest graded."""
    nb = reference()
    nb.cells.remove(_cell(nb, "quiz_2_1"))
    nb.cells.remove(_cell(nb, "test_quiz_2_1"))
    return nb


@case(zero_cells=["test_quiz_2_2"], problem="'quiz_2_2' is missing")
def deleted_answer_cells():
    """Deletes the answer cell of quiz question 2.2 and its written answer, keeping their
    tests: 0 for those two questions only (the written one waits for a person)."""
    nb = reference()
    nb.cells.remove(_cell(nb, "quiz_2_2"))
    nb.cells.remove(_cell(nb, "written_masking_empty_rows"))
    return nb


@case(problem="the course does not have ('extra_points')")
def changed_metadata():
    """Cell ids renumbered (some invalid, some repeated), every checksum and schema version
    changed, a test cell's points raised, and an extra locked grade cell worth 5 points:
    the gradebook's cells and points decide; the extra cell is ignored and reported."""
    nb = reference()
    for i, cell in enumerate(nb.cells):
        cell["id"] = "same" if i % 7 == 0 else f"cell {i}!" if i % 5 == 0 else f"n{i * 13}"
        meta = cell.metadata.get("nbgrader")
        if meta:
            meta["checksum"] = "0" * 32
            meta["schema_version"] = 1 if i % 2 else 3
    _cell(nb, "hidden_masked_softmax_values").metadata["nbgrader"]["points"] = 50
    extra = nbformat.v4.new_code_cell("assert True")
    extra.metadata["nbgrader"] = {
        "grade": True,
        "grade_id": "extra_points",
        "locked": True,
        "points": 5,
        "schema_version": 3,
        "solution": False,
        "task": False,
    }
    nb.cells.insert(nb.cells.index(_cell(nb, "test_sequence_mask")), extra)
    return nb


# Every answer the kernel sends is a torch.save frame padded with 10 million pickle no-ops
# (BINPUT): 20 MB, well under the frame cap, that took the grader's unpickler some 18 s of
# CPU each. A format that cannot carry work refuses it at once (checks/_wire.py).
PADDED = """
import io, socket, zipfile, torch, checks._serve as remote
def padded(obj):
    buf = io.BytesIO()
    torch.save(obj, buf)
    src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, 'w', zipfile.ZIP_STORED) as dst:
        for name in src.namelist():
            data = src.read(name)
            if name.endswith('data.pkl'):
                at = data.index(b'ok') + 2  # after the first value pushed
                data = data[:at] + b'q\\x00' * 10_000_000 + data[at:]
            dst.writestr(name, data)
    return out.getvalue()
def serve(path, targets):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    frame = padded(('ok', None))
    try:
        while True:
            head = s.recv(8)
            if len(head) < 8:
                return
            size = int.from_bytes(head, 'big')
            while size > 0:
                size -= len(s.recv(min(size, 1 << 20)))
            s.sendall(len(frame).to_bytes(8, 'big') + frame)
    except OSError:
        return
remote.serve = serve
"""


@case(
    zero_cells=EVERY_CELL,
    problem="of its own CPU time on this notebook's answers",
    also=(None,),
)
def answers_slow_to_read():
    """Correct answers, but every answer its kernel sends is padded to cost the grader CPU
    time to read. The grader's worker stops at its CPU limit for one notebook
    (or a format that cannot carry work refuses every frame): nothing earned, the batch
    unharmed."""
    nb = reference()
    nb.cells.insert(2, nbformat.v4.new_code_cell(PADDED))
    return nb


def write(case: Case, path) -> None:
    made = case.make()
    if isinstance(made, bytes):
        path.write_bytes(made)
    else:
        nbformat.write(made, path)
