"""The Gradescope bundle, run exactly as Gradescope runs it.

Gradescope unpacks the bundle in ``/autograder/source``, runs ``setup.sh`` there once (as
root), then per submission copies ``run_autograder`` to ``/autograder/run_autograder`` and
runs it from ``/autograder``; the grader reads ``/autograder/submission`` and writes
``/autograder/results/results.json``. The harness does the same inside bubblewrap, with a
temporary folder bound at ``/autograder``, the machine's system read-only, no network,
and a clean environment: nothing of this repository is on the path.

Offline and in CI time, ``setup.sh`` cannot download the grader lock's 116 packages (1.4 GB
installed). So the harness does what a package cache does: the project's installed
environment is bound read-only at the system Python's ``/usr/local/lib/python3.11/dist-packages``
and ``setup.sh`` is told (``AUTOGRADER_VENV_OPTIONS=--system-site-packages --without-pip``) to
make its venv see it, pip and setuptools included; pip's index is the machine's local package
index (``pip config``, as the Makefile's install uses it) instead of PyPI. Everything else is
``setup.sh`` as shipped: it finds the system's Python 3.11, creates ``/autograder/venv`` and
has pip resolve the hashed grader lock there (every pin must be satisfied, or pip fails
offline). One venv serves both submissions, as on Gradescope, where setup runs once per image.
"""

import json
import os
import shutil
import subprocess
import sysconfig
import time
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.course import Course
from autograder.gradescope import bundle
from tests import lockfile
from tests.hostile import CHAPTER, reference

ROOT = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = Path("/usr/bin/python3.11")
SYSTEM_SITE = Path("/usr/local/lib/python3.11/dist-packages")
RESULTS = Path(os.environ.get("GRADESCOPE_RESULTS_DIR", "/tmp")) / "gradescope-results"


def _test_cells() -> dict[str, tuple[float, bool]]:
    """The chapter's autograded test cells: grade_id -> (points, hidden), in order."""
    from autograder import notebooks as nbs

    cells = {}
    for cell in nbs.read(nbs.notebook_path(CHAPTER)).cells:
        meta = nbs.nbgrader_meta(cell)
        if nbs.is_test(cell) and cell.cell_type == "code":
            cells[meta["grade_id"]] = (float(meta["points"]), nbs.HIDDEN_MARKERS[0] in cell.source)
    return cells


TESTS = _test_cells()
VISIBLE = sum(p for p, hidden in TESTS.values() if not hidden)
HIDDEN = [p for p, hidden in TESTS.values() if hidden]


# ---------------------------------------------------------------- the bundle's text (fast)


def test_the_bundle_installs_the_grader_lock(tmp_path):
    """Is requirements.txt the grader's lock, hashed, with the CPU index (jupyter-client and
    ipykernel included, none of the maintainers' tools)?"""
    text = bundle._requirements(lockfile.GRADER)
    assert text.endswith(lockfile.GRADER.read_text())
    (tmp_path / "requirements.txt").write_text(text)
    pins = lockfile.pins(tmp_path / "requirements.txt")
    assert pins == lockfile.pins(lockfile.GRADER) and all(p.hashes for p in pins.values())
    assert {"torch", "nbgrader", "jupyter-client", "ipykernel"} <= set(pins)
    assert not {"jupyter-book", "sphinx", "pytest", "playwright", "ruff"} & set(pins)
    assert f"--extra-index-url {lockfile.TORCH_INDEX}" in lockfile.options(
        tmp_path / "requirements.txt"
    )


def test_run_autograder_never_looks_next_to_itself():
    """Gradescope runs a copy at /autograder/run_autograder: is the bundle found by name?"""
    assert "dirname" not in bundle.RUN and "$ROOT/source" in bundle.RUN
    assert "$ROOT/venv/bin/python" in bundle.RUN
    assert "-m venv" in bundle.SETUP and "python3 -m pip install" not in bundle.SETUP


def test_the_scripts_are_executable_bash_files_the_bundle_carries(tmp_path):
    """Are setup.sh and run_autograder real, executable files that bash can parse, the
    scripts the bundle is written with?"""
    for name, text in (("setup.sh", bundle.SETUP), ("run_autograder", bundle.RUN)):
        path = bundle.FILES / name
        assert path.read_text() == text and os.access(path, os.X_OK), name
        subprocess.run(["bash", "-n", str(path)], check=True)


def test_students_see_no_hidden_total():
    """Does the students' summary count only visible tests, saying hidden ones exist?"""
    tests = [
        {"name": "test_a", "score": 1.0, "max_score": 1.0, "visibility": "visible"},
        {"name": "hidden_b", "score": 0.0, "max_score": 2.0, "visibility": "after_published"},
        {"name": "hidden_c", "score": 3.0, "max_score": 3.0, "visibility": "after_published"},
    ]
    text = bundle._summary(tests, None, [], 2.0)
    assert "Visible tests: 1 of 1 points." in text
    assert "2 hidden tests worth 5 points" in text
    assert "4" not in text and "6" not in text  # neither the total scored nor the total
    # The written answers' points, which Gradescope's score leaves out, are named.
    assert "Written answers: 2 more points, graded by hand" in text
    assert "remain for a person" in text
    assert "Written answers" not in bundle._summary(tests, None, [], 0.0)


def test_a_chapter_released_in_chinese_is_summed_up_in_chinese():
    """Is the students' summary of a chapter released in Chinese Chinese, what happened to
    the notebook and a collector's warning included, with the same numbers as in English?"""
    import re

    from autograder import records

    tests = [
        {"name": "test_a", "score": 1.0, "max_score": 1.0, "visibility": "visible"},
        {"name": "hidden_b", "score": 0.0, "max_score": 2.0, "visibility": "after_published"},
    ]
    stop = "graded, but stopped by the sandbox at cell 9: " + records.MEMORY.format(
        used="5000", limit="3072"
    )
    warning = records.SEVERAL_NOTEBOOKS.format(count=2, names="a.ipynb, b.ipynb", chosen="b.ipynb")
    english = bundle._summary(tests, stop, [warning], 2.0, "en")
    chinese = bundle._summary(tests, stop, [warning], 2.0, "zh")
    assert "Visible tests: 1 of 1 points." in english and "MiB together" in english
    assert sorted(re.findall(r"\d+", chinese)) == sorted(re.findall(r"\d+", english))
    assert not set(re.findall(r"[A-Za-z]{3,}", chinese)) - {"ipynb", "MiB"}, chinese


def test_the_bundle_carries_its_release_language_catalog(tmp_path):
    """A bundle has no polib: does it carry the chapter's release language as JSON, which
    the bundle's translator reads, and nothing for an English release?"""
    import types

    from autograder import i18n

    course = types.SimpleNamespace(root=tmp_path / "course")
    src = course.root / "source" / CHAPTER
    src.mkdir(parents=True)
    nb = nbformat.v4.new_notebook(metadata={"language": "zh_CN"})
    nbformat.write(nb, src / f"{CHAPTER}.ipynb")
    stage = tmp_path / "stage"
    bundle._write_messages(course, CHAPTER, stage)
    (shipped,) = stage.rglob("*.json")
    assert shipped == i18n.catalog_path("zh", i18n.COURSE, stage).with_suffix(".json")
    msgid = "Visible tests: {score} of {points} points."
    assert i18n.translations("zh", i18n.COURSE, stage)[msgid] == i18n.gettext("zh", msgid)
    nb.metadata["language"] = "en"
    nbformat.write(nb, src / f"{CHAPTER}.ipynb")
    bundle._write_messages(course, CHAPTER, tmp_path / "english")
    assert not (tmp_path / "english").exists()


# ---------------------------------------------------------------- as Gradescope runs it (slow)


def _bwrap(folder: Path, command: list[str], chdir: str, env: dict[str, str], log: Path, extra=()):
    """Run ``command`` as Gradescope would, ``folder`` at /autograder; return its exit code.

    As root, as on Gradescope; a user who is not root is root in a user namespace there.
    """
    site = Path(sysconfig.get_paths(vars={"base": str(ROOT / ".venv")})["purelib"])
    args = ["bwrap", "--die-with-parent", "--unshare-pid", "--unshare-net", "--unshare-ipc"]
    if os.geteuid() != 0:
        args += ["--unshare-user", "--uid", "0", "--gid", "0"]
    args += list(extra)
    for path in ("/usr", "/etc", "/opt"):
        args += ["--ro-bind", path, path]
    for path in ("/bin", "/sbin", "/lib", "/lib64"):
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    args += ["--ro-bind", str(site.resolve()), str(SYSTEM_SITE)]  # the package cache
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/root"]
    args += ["--tmpfs", "/var/tmp", "--bind", str(folder), "/autograder", "--chdir", chdir]
    args += ["--clearenv"]
    for key, value in env.items():
        args += ["--setenv", key, value]
    with open(log, "ab") as out:
        return subprocess.run(
            [*args, *command], stdout=out, stderr=subprocess.STDOUT, timeout=900
        ).returncode


def _local_index() -> dict[str, str]:
    """pip's local package sources, as the Makefile's install uses them (``pip config``).

    The configured local indexes stand in for PyPI (the sandbox has no network), for anything
    the project's environment lacks.
    """
    out = subprocess.run(
        [
            str(ROOT / ".venv" / "bin" / "python"),
            "-m",
            "pip",
            "config",
            "get",
            "global.extra-index-url",
        ],
        capture_output=True,
        text=True,
    )
    local = [u for u in out.stdout.split() if u.startswith("file:")]
    return {"PIP_INDEX_URL": local[0]} if local else {"PIP_NO_INDEX": "1"}


BASE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root",
    "LANG": "C.UTF-8",
}


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    """/autograder after Gradescope's image build: the bundle unpacked, setup.sh run once."""
    if shutil.which("bwrap") is None or not SYSTEM_PYTHON.exists() or not SYSTEM_SITE.is_dir():
        pytest.skip("needs bubblewrap and the system's Python 3.11 (Debian 12: `make system`)")
    tmp = tmp_path_factory.mktemp("gradescope")
    course = Course(tmp / "course")
    zipped = bundle.build(course, CHAPTER, tmp / "bundle.zip")
    folder = tmp / "autograder"
    with zipfile.ZipFile(zipped) as z:  # Gradescope keeps the modes it was given
        for info in z.infolist():
            z.extract(info, folder / "source")
            mode = info.external_attr >> 16 & 0o777
            if mode:
                (folder / "source" / info.filename).chmod(mode)
    log = tmp / "setup.log"
    options = "--system-site-packages --without-pip"  # the project's pip and setuptools
    env = {**BASE_ENV, "AUTOGRADER_VENV_OPTIONS": options, **_local_index()}
    start = time.monotonic()
    code = _bwrap(folder, ["/autograder/source/setup.sh"], "/autograder/source", env, log)
    elapsed = time.monotonic() - start
    assert code == 0, log.read_text()[-4000:]
    print(f"\nsetup.sh: {elapsed:.0f} s")
    return folder, course, log, {}  # the last: each run's log


def _grade(image, name: str, notebook: nbformat.NotebookNode, extra=()) -> dict:
    folder = image[0]
    for sub in ("submission", "results"):
        shutil.rmtree(folder / sub, ignore_errors=True)
    (folder / "submission").mkdir()
    nbformat.write(notebook, folder / "submission" / f"{CHAPTER}.ipynb")
    shutil.copy2(folder / "source" / "run_autograder", folder / "run_autograder")
    log = folder.parent / f"run-{name}.log"
    start = time.monotonic()
    code = _bwrap(folder, ["/autograder/run_autograder"], "/autograder", BASE_ENV, log, extra)
    print(f"run_autograder ({name}): {time.monotonic() - start:.0f} s")
    assert code == 0, log.read_text()[-4000:]
    image[3][name] = log.read_text()
    results = json.loads((folder / "results" / "results.json").read_text())
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(results, indent=2))
    return results


def _check_format(results: dict) -> None:
    assert set(results) == {"score", "output", "visibility", "tests"}
    assert results["visibility"] == "visible"
    for test in results["tests"]:
        assert set(test) == {"name", "score", "max_score", "status", "output", "visibility"}
        assert test["status"] in {"passed", "failed"}
        assert test["visibility"] == ("after_published" if TESTS[test["name"]][1] else "visible")
        assert "BEGIN HIDDEN" not in test["output"] and "run_hidden" not in test["output"]


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_a_perfect_submission_earns_every_point(image):
    """The reference notebook, graded as Gradescope grades: every point, every test passed;
    what its code printed while the checks called it is in no test's output."""
    nb = reference()
    cell = next(
        c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "sequence_mask"
    )
    cell.source = cell.source.replace(
        "### BEGIN SOLUTION", "### BEGIN SOLUTION\n    print('PRINTED BY THE STUDENT')", 1
    )
    results = _grade(image, "perfect", nb)
    assert "PRINTED BY THE STUDENT" not in json.dumps(results)
    _check_format(results)
    total = VISIBLE + sum(HIDDEN)
    assert total >= 12 and results["score"] == total
    assert [t["status"] for t in results["tests"]] == ["passed"] * len(TESTS)
    assert sum(t["max_score"] for t in results["tests"]) == total
    assert results["output"].startswith(f"Visible tests: {VISIBLE:g} of {VISIBLE:g} points.")
    assert f"{len(HIDDEN)} hidden tests worth {sum(HIDDEN):g} points" in results["output"]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_an_untouched_submission_earns_nothing(image):
    """The released notebook handed in as it is: 0 points, each test failed, hidden totals hidden."""
    course = image[1]
    released = nbformat.read(course.root / "release" / CHAPTER / f"{CHAPTER}.ipynb", 4)
    results = _grade(image, "untouched", released)
    _check_format(results)
    assert results["score"] == 0.0
    assert [t["status"] for t in results["tests"]] == ["failed"] * len(TESTS)
    assert "sequence_mask is not implemented yet" in results["tests"][0]["output"]
    assert results["output"].startswith(f"Visible tests: 0 of {VISIBLE:g} points.")
    assert f"{len(HIDDEN)} hidden tests worth {sum(HIDDEN):g} points" in results["output"]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_container_without_namespaces_still_grades_fairly(image):
    """Gradescope's Docker may forbid namespaces (no CAP_SYS_ADMIN): modelled by dropping every
    capability, bubblewrap cannot nest; the bundle says so and grades without the sandbox."""
    results = _grade(image, "no-namespaces", reference(), ["--cap-drop", "ALL"])
    _check_format(results)
    assert results["score"] == VISIBLE + sum(HIDDEN)
    assert "grading without a sandbox" in image[3]["no-namespaces"]
    if os.geteuid() == 0:  # as root, the other runs had their sandbox
        assert "grading without a sandbox" not in image[3].get("perfect", "")


# Polls for results.json and overwrites it the moment it appears.
DAEMON = """
import pathlib, time
path = pathlib.Path('/autograder/results/results.json')
for _ in range(20000):
    time.sleep(0.005)
    try:
        if path.exists():
            path.write_text('{}')
    except OSError:
        pass
"""


# What the kernel's user can read, written to /probe (a folder the test binds in; nothing of
# Gradescope's): every file it can open under /autograder (its environment, venv/, aside) and
# /tmp (where the grader works), and the bundle's files it could know by name.
LISTING = """
import glob, os
readable = []
def can_read(path):
    try:
        with open(path, 'rb') as f:
            f.read(1)
        return True
    except OSError:
        return False
for top in ('/autograder', '/tmp'):
    for base, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if os.path.join(base, d) != '/autograder/venv']
        readable += [os.path.join(base, f) for f in files if can_read(os.path.join(base, f))]
named = ['/autograder/source/bundle.json', '/autograder/source/checks/hidden/masking.py',
         '/autograder/source/course/source/masking/masking.ipynb',
         '/autograder/source/course/template.db', '/autograder/submission/masking.ipynb',
         '/autograder/results/results.json', '/autograder/run_autograder']
for pattern in ('/tmp/grade-*/source/masking/masking.ipynb', '/tmp/grade-*/gradebook.db',
                '/tmp/grade-*/.grading/jobs/*/source/masking/masking.ipynb',
                '/tmp/grade-*/.grading/jobs/*/gradebook.db'):
    named += glob.glob(pattern)
readable += [p for p in named if can_read(p)]
with open('/probe/readable.txt', 'w') as f:
    f.write(os.getcwd() + '\\n' + '\\n'.join(sorted(set(readable))))
"""


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_without_namespaces_student_code_runs_as_another_user(image, tmp_path):
    """Docker's default (no CAP_SYS_ADMIN, so no namespaces, but root): does the kernel run as
    another user who can neither read the bundle nor touch results.json, and is every process
    of it gone before results.json is written, so that a daemon cannot rewrite it? And, listed
    file by file, can that user read nothing of the bundle or the grader's work but its own
    folder: the released checks (no hidden/), the earlier chapters' solutions, the README?"""
    if os.geteuid() != 0:
        pytest.skip("models a container that runs run_autograder as root")
    folder = image[0]
    folder.chmod(0o755)  # /autograder on Gradescope
    probe = tmp_path / "probe"
    probe.mkdir()
    probe.chmod(0o777)
    nb = reference()
    cell = next(
        c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "sequence_mask"
    )
    attack = f"""
import os, pathlib, subprocess, sys
for action in (
    lambda: pathlib.Path('/autograder/results/planted.txt').write_text('x'),
    lambda: print(pathlib.Path('/autograder/source/checks/hidden/masking.py').read_text()),
):
    try:
        action()
    except OSError:
        pass
subprocess.Popen([sys.executable, '-c', {DAEMON!r}], start_new_session=True)
"""
    cell.source = cell.source + "\n" + attack + "\n" + LISTING
    extra = ["--cap-drop", "CAP_SYS_ADMIN", "--bind", str(probe), "/probe"]
    results = _grade(image, "user-only", nb, extra)
    log = image[3]["user-only"]
    assert "kernels run as another user" in log and "grading without a sandbox" not in log
    # The daemon polled for results.json to overwrite it: it was gone before the file was.
    assert results["score"] == VISIBLE + sum(HIDDEN) and results["tests"]
    assert not (folder / "results" / "planted.txt").exists()  # not root: results/ is closed
    cwd, *readable = (probe / "readable.txt").read_text().splitlines()
    own = {p.removeprefix(cwd + "/") for p in readable if p.startswith(cwd + "/")}
    release = image[1].root / "release" / CHAPTER
    released = {
        str(p.relative_to(release))
        for p in release.rglob("*")
        if p.is_file() and p.suffix != ".ipynb" and "__pycache__" not in p.parts
    }
    # Its folder: what the release hands out (checks/ without hidden/, the earlier chapters'
    # solutions/, figures, the README), without the notebook; no hidden check among it.
    assert own == released and "checks/_core.py" in own
    assert not [p for p in own if "hidden" in p]
    # Beyond it, only its own kernel folder: its connection file and its home.
    others = [p for p in readable if not p.startswith(cwd + "/")]
    (kernel,) = {p.rsplit("/", 1)[0] for p in others if p.endswith("/kernel.json")}
    assert all(p.startswith(kernel + "/") for p in others), others
