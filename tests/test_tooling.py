"""The project's own machinery: the generated copies (solutions/, the book's editions) stay true
to the notebooks, the course is read once per run, the locks are hashed and complete, the
workflows are pinned and the release gated, and every skip is accounted for."""

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import nbformat
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from autograder import notebooks as nbs
from autograder.book import export, questions
from autograder.book.editions import OUTPUTS_NOTE, stage_book
from tests import lockfile
from tests.skips import SkipAudit

ROOT = nbs.ROOT


def test_committed_solutions_match_the_notebooks():
    """Is solutions/ exactly what the #@save cells of the notebooks generate?"""
    assert export.export(check=True) == 0


def test_drift_is_detected(tmp_path, capsys):
    """If someone edits a #@save cell, does the check fail with a diff?"""
    shutil.copytree(nbs.ROOT / "book", tmp_path / "book")
    shutil.copytree(nbs.ROOT / "solutions", tmp_path / "solutions")
    shutil.copy(nbs.ROOT / "_toc.yml", tmp_path / "_toc.yml")
    path = tmp_path / "book" / "masking.ipynb"
    nb = nbs.read(path)
    cell = next(c for c in nb.cells if nbs.nbgrader_meta(c).get("grade_id") == "masked_softmax")
    cell.source = cell.source.replace('float("-inf")', "-1e6")
    nbformat.write(nb, path)
    assert export.export(check=True, root=tmp_path) == 1
    out = capsys.readouterr().out
    assert '-    scores = X.masked_fill(~mask, float("-inf"))' in out
    assert "+    scores = X.masked_fill(~mask, -1e6)" in out


def test_every_graded_function_is_exported():
    """Is every autograded answer that defines code also a #@save cell, so solutions/ holds it?"""
    for path in nbs.chapter_notebooks():
        for cell in nbs.read(path).cells:
            defines = any(line.startswith(("def ", "class ")) for line in cell.source.splitlines())
            if cell.cell_type == "code" and nbs.is_solution(cell) and defines:
                assert nbs.saved_module(cell), f"{path.name}: {cell.source[:60]!r}"


def test_reader_edition_shows_stub_then_hidden_solution(tmp_path):
    """Does the book show each exercise's stub, the solution behind a toggle, and no hidden test?"""
    stage_book(tmp_path)
    for path in nbs.chapter_notebooks():
        nb = nbs.read(tmp_path / "book" / path.name)
        text = nbformat.writes(nb)
        for marker in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "run_hidden", '"nbgrader"'):
            assert marker not in text, f"{path.name} contains {marker}"
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        assert not any(nbs.SAVE_LINE.match(line) for line in code.splitlines())
        stubs = [c for c in nb.cells if "skip-execution" in c.metadata.get("tags", [])]
        # the solution cells keep their ids (long demo code is folded with hide-input as well)
        exercises = {
            c.id for c in nbs.read(path).cells if c.cell_type == "code" and nbs.is_solution(c)
        }
        solutions = [c for c in nb.cells if c.id in exercises]
        assert stubs and len(stubs) == len(solutions) == len(exercises)
        assert all("hide-input" in c.metadata.get("tags", []) for c in solutions)
        for stub in stubs:
            assert "raise NotImplementedError()" in stub.source
            # the ✓ outputs under a stub are the reference's: a note says so, then the solution
            i = nb.cells.index(stub)
            note, solution = nb.cells[i + 1], nb.cells[i + 2]
            assert note.cell_type == "markdown" and note.source == OUTPUTS_NOTE["reader"]
            assert "hide-input" in solution.metadata.get("tags", [])
        assert "A model answer" in text and ":class: dropdown" in text


def test_the_stage_leaves_out_python_s_and_jupyter_s_caches(tmp_path):
    """Does staging the book copy no ``__pycache__``? Python writes one beside
    book/figures/make_diagrams.py when the figures' tests import it; this test writes it first.
    (Jupyter's checkpoints, left out the same way, are asserted absent but not made here.)"""
    import py_compile

    py_compile.compile(str(ROOT / "book" / "figures" / "make_diagrams.py"), doraise=True)
    assert list((ROOT / "book").rglob("__pycache__/*.pyc"))
    stage_book(tmp_path)
    copied = [
        p for p in tmp_path.rglob("*") if {"__pycache__", ".ipynb_checkpoints"} & set(p.parts)
    ]
    assert not copied, copied


def test_student_edition_says_whose_outputs_follow_a_stub(tmp_path):
    """Does every stub of an exercise in the student edition say that the outputs after it are
    the reference's? (A question's stub has none: its check shows no output there.)"""
    stage_book(tmp_path, edition="student")
    for path in nbs.chapter_notebooks():
        cells = nbs.read(tmp_path / "book" / path.name).cells
        stubs = [i for i, c in enumerate(cells) if "skip-execution" in c.metadata.get("tags", [])]
        asked = {c.id for c in nbs.read(path).cells if questions.is_question(c)}
        stubs = [i for i in stubs if cells[i].id.removesuffix("-stub") not in asked]
        assert stubs, path.name
        for i in stubs:
            assert cells[i + 1].source == OUTPUTS_NOTE["student"], (path.name, i)
            assert "Show solution" not in cells[i + 1].source
            assert cells[i + 2].metadata.get("edition") == "student-reference", (path.name, i)


def test_demo_cells_come_after_every_test_cell():
    """Is every cell the grader skips (tag `demo`) a plain code cell after the chapter's tests?

    The short conceptual questions ("Check your understanding", before the summary) may come
    after demo cells: their test cells read only the answer variable of their own question.
    """
    for path in nbs.chapter_notebooks():
        cells = nbs.read(path).cells
        last_test = max(i for i, c in enumerate(cells) if nbs.is_test(c) and not is_quiz_test(c))
        for i, cell in enumerate(cells):
            if nbs.DEMO_TAG in cell.metadata.get("tags", []):
                assert i > last_test, f"{path.name}: demo cell {i} before test cell {last_test}"
                assert cell.cell_type == "code" and not nbs.nbgrader_meta(cell), (path.name, i)


def is_quiz_test(cell) -> bool:
    """A test cell of a short question: it runs only ``quiz_*`` groups, on its answer variable."""
    grade_id = nbs.nbgrader_meta(cell).get("grade_id", "")
    if not (nbs.is_test(cell) and grade_id.startswith("test_quiz_")):
        return False
    answer = "answer_" + grade_id.removeprefix("test_quiz_")
    names = {
        n.id
        for n in ast.walk(ast.parse(nbs.without_markers(cell.source)))
        if isinstance(n, ast.Name)
    }
    return names <= {"checks", answer}


def test_the_slow_demos_are_tagged():
    """Are the training loops (the slowest cells of the book) tagged `demo`?"""
    for chapter, marker in [
        ("additive_attention", "optimizer.step()"),
        ("transformer_block", "optimizer.step()"),
        ("multi_head_attention", "optimizer.step()"),
        ("encoder_decoder", "optimizer.step()"),
    ]:
        cells = [c for c in nbs.read(nbs.notebook_path(chapter)).cells if marker in c.source]
        assert cells and all(nbs.DEMO_TAG in c.metadata.get("tags", []) for c in cells), chapter


def test_exercise_titles_are_not_numbered_headings():
    """Is every exercise title a bold paragraph, so that no "2.4.1 Exercise 2.2" clash appears?"""
    titles = 0
    for path in nbs.chapter_notebooks():
        for cell in nbs.read(path).cells:
            if cell.cell_type != "markdown":
                continue
            for line in cell.source.splitlines():
                assert not re.match(r"#+\s+Exercise\b", line), f"{path.name}: {line!r}"
                titles += bool(re.match(r"\*\*Exercise \d+\.\d+\b.*\*\*( \(.*\))?$", line))
    assert titles >= len(nbs.chapter_notebooks()), titles


# The bold title of an exercise or a question, and the mark after it, if any.
_TITLE = re.compile(
    r"\*\*(?P<kind>Exercise|Question) (?P<chapter>\d+)\.(?P<number>\d+)\b[^*]*\*\*"
    r"(?: \((?P<mark>a warm-up|needs thought)(?P<more>[^)]*)\))?"
)


def _graded_items(path):
    """Each title of an exercise or a question, in reading order, with its graded cells."""
    items = []
    for cell in nbs.read(path).cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith(("**Exercise ", "**Question ")):
                    match = _TITLE.match(line)
                    assert match, f"{path.name}: a title that is not read: {line!r}"
                    items.append({**match.groupdict(), "graded": []})
        if nbs.nbgrader_meta(cell).get("grade") or nbs.is_solution(cell):
            assert items, f"{path.name}: a graded cell before any title"
            items[-1]["graded"].append(nbs.nbgrader_meta(cell)["grade_id"])
    return items


def test_every_chapter_goes_from_a_warm_up_to_one_that_needs_thought():
    """Are a chapter's exercises, and its questions, numbered in reading order; does every title
    own a graded cell; is the first graded item marked (a warm-up), and one later item (needs
    thought), unless the warm-up's mark says that all the chapter's items are light?"""
    for chapter, path in enumerate(nbs.chapter_notebooks(), start=1):
        items = _graded_items(path)
        for kind in ("Exercise", "Question"):
            numbers = [(int(i["chapter"]), int(i["number"])) for i in items if i["kind"] == kind]
            assert numbers == [(chapter, n) for n in range(1, len(numbers) + 1)], (path.name, kind)
        assert all(i["graded"] for i in items), path.name
        marks = [i["mark"] for i in items]
        assert marks[0] == "a warm-up" and marks.count("a warm-up") == 1, (path.name, marks)
        if "all light" in items[0]["more"]:
            assert "needs thought" not in marks, path.name
        else:
            assert marks.count("needs thought") == 1, (path.name, marks)


# ---------------------------------------------------------------- reading the course, once


def test_a_notebook_is_parsed_once_and_read_as_a_fresh_copy(tmp_path, monkeypatch):
    """Is a notebook parsed once per content (not per call), and is every read a copy the
    caller may change, and a rewritten file read anew?"""
    path = tmp_path / "x.ipynb"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    nbformat.write(nb, path)
    parses = []
    real = nbs._parse_notebook
    monkeypatch.setattr(nbs, "_parse_notebook", lambda text: parses.append(1) or real(text))
    first = nbs.read(path)
    first.cells[0].source = "changed"
    first.cells.append(nbformat.v4.new_markdown_cell("more"))
    second = nbs.read(path)
    assert second.cells[0].source == "x = 1" and len(second.cells) == 1
    assert isinstance(second.cells[0].metadata, nbformat.NotebookNode)
    assert len(parses) == 1
    nbformat.write(first, path)  # same path, new content: parsed again
    assert nbs.read(path).cells[0].source == "changed" and len(parses) == 2


def test_the_table_of_contents_is_parsed_once(monkeypatch):
    """Do a thousand calls of chapter_names() parse _toc.yml at most once, and is the list a
    copy the caller may change?"""
    loads = []
    real = nbs._toc_files
    monkeypatch.setattr(nbs, "_toc_files", lambda text: loads.append(1) or real(text))
    nbs._PARSED.clear()
    for _ in range(1000):
        assert nbs.chapter_names()[0] == "attention_pooling"
    assert len(loads) == 1
    toc = nbs.toc_files()
    toc.append("changed by a caller")
    assert "changed by a caller" not in nbs.toc_files()


# ---------------------------------------------------------------- the locks


MAKEFILE = (nbs.ROOT / "Makefile").read_text()
TORCH_INDEX = lockfile.TORCH_INDEX
LOCKS = pytest.mark.parametrize(
    "lock, extras",
    [(lockfile.DEV, ("grader", "dev")), (lockfile.GRADER, ("grader",))],
    ids=["requirements.lock", "requirements-grader.lock"],
)


def _requirements(extras: tuple[str, ...]) -> list[Requirement]:
    """The lock's input: the project's dependencies and those of ``extras``."""
    project = tomllib.loads((nbs.ROOT / "pyproject.toml").read_text())["project"]
    extra = [r for e in extras for r in project["optional-dependencies"][e]]
    return [Requirement(r) for r in project["dependencies"] + extra]


@LOCKS
def test_a_lock_is_hashed_and_holds_its_input(lock, extras):
    """Does the lock pin, with hashes, every requirement of its extras of pyproject.toml at an
    allowed version, setuptools included, and name the CPU index of the Makefile and no other?"""
    pins = lockfile.pins(lock)
    assert all(pin.hashes for pin in pins.values()), [n for n, p in pins.items() if not p.hashes]
    for req in _requirements(extras):
        name = canonicalize_name(req.name)
        assert name in pins, f"{req} is not in {lock.name}: run `make lock`"
        assert req.specifier.contains(pins[name].version, prereleases=True), (req, pins[name])
    assert "setuptools" in pins and pins["torch"].version.endswith("+cpu")
    assert lockfile.options(lock) == [f"--extra-index-url {TORCH_INDEX}"]
    assert "#    make lock" in lock.read_text()


@LOCKS
def test_a_lock_is_closed(lock, extras):
    """Is every requirement of every locked package (with the extras asked of it, markers for
    this Python) in the lock too, so that `pip install --require-hashes` needs nothing else?
    The requirements are read from the installed packages' metadata."""
    pins = lockfile.pins(lock)
    wanted = {(name, "") for name in pins}
    wanted |= {(canonicalize_name(r.name), e) for r in _requirements(extras) for e in r.extras}
    missing, seen = [], set()
    while wanted - seen:
        name, extra = (wanted - seen).pop()
        seen.add((name, extra))
        for text in metadata.requires(name) or []:
            req = Requirement(text)
            if req.marker and not req.marker.evaluate({"extra": extra}):
                continue
            dep = canonicalize_name(req.name)
            if dep not in pins:
                missing.append(f"{name}[{extra}] needs {req}")
            wanted |= {(dep, e) for e in req.extras}
    assert not missing, missing


def test_the_grader_lock_is_the_dev_lock_cut_down():
    """Does Gradescope get the versions and files CI tested, and nothing of the tools?"""
    dev, grader = lockfile.pins(lockfile.DEV), lockfile.pins(lockfile.GRADER)
    assert {name: dev.get(name) for name in grader} == grader
    assert len(grader) < len(dev) - 40
    assert not {"jupyter-book", "sphinx", "pytest", "playwright", "ruff", "pip-tools"} & set(grader)


def test_the_cpu_index_is_named_once():
    """Is PyTorch's CPU index written by hand only in the Makefile (the locks are generated,
    and Binder reads only its own file, which must agree)?"""
    assert MAKEFILE.count("download.pytorch.org") == 1
    binder = (nbs.ROOT / "binder" / "requirements.txt").read_text()
    assert f"--extra-index-url {TORCH_INDEX}" in binder.splitlines()
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=nbs.ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    named = {
        f
        for f in tracked
        if not f.endswith((".md", ".ipynb"))
        and not f.startswith(("tests/", "locale/"))  # catalogs: the .md text, generated
        and "download.pytorch.org" in (nbs.ROOT / f).read_text(errors="replace")
    }
    generated = {"requirements.lock", "requirements-grader.lock"}
    assert named == {"Makefile", "binder/requirements.txt"} | generated


# ---------------------------------------------------------------- the workflows


def _workflow(name: str) -> dict:
    return yaml.safe_load((nbs.ROOT / ".github" / "workflows" / name).read_text())


def test_every_action_is_pinned_by_commit():
    """Is every third-party action pinned by a full commit SHA, with its tag in a comment?"""
    uses = []
    for path in sorted((nbs.ROOT / ".github" / "workflows").glob("*.yml")):
        for line in path.read_text().splitlines():
            if match := re.match(r"\s*(?:- )?uses: (\S+)(.*)$", line):
                uses.append((path.name, match[1], match[2]))
    assert len(uses) >= 6
    for name, action, comment in uses:
        if action.startswith("./"):
            continue
        assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", action), (name, action)
        assert re.fullmatch(r"\s+# v\d+.*", comment), (name, action, comment)


def test_publishing_waits_for_the_tests_on_the_same_commit():
    """Does publish.yml run only after the test workflow passed on a push to main, and build
    the commit that was tested?"""
    test, publish = _workflow("test.yml"), _workflow("publish.yml")
    on = publish[True]  # PyYAML reads the key `on` as True
    assert "push" not in on and "pull_request" not in on
    assert on["workflow_run"] == {
        "workflows": [test["name"]],
        "types": ["completed"],
        "branches": ["main"],
    }
    build = publish["jobs"]["build"]
    assert "github.event.workflow_run.conclusion == 'success'" in build["if"]
    assert "github.event.workflow_run.event == 'push'" in build["if"]
    assert "github.ref == 'refs/heads/main'" in build["if"]  # by hand: main only
    assert build["env"]["SHA"] == "${{ github.event.workflow_run.head_sha || github.sha }}"
    checkout = next(s for s in build["steps"] if "actions/checkout" in s.get("uses", ""))
    assert checkout["with"]["ref"] == "${{ env.SHA }}"
    first = build["steps"][0]  # by hand, a commit whose tests have not passed is refused
    assert first["if"] == "github.event_name == 'workflow_dispatch'"
    assert "gh run list" in first["run"] and "--status success" in first["run"]
    assert publish["jobs"]["deploy"]["needs"] == "build"
    text = (nbs.ROOT / ".github" / "workflows" / "publish.yml").read_text()
    assert "GITHUB_SHA" not in text  # main's tip, not the tested commit, under workflow_run


# ---------------------------------------------------------------- skips


SKIP_CALLS = {"skip", "skipif", "xfail", "importorskip"}


def test_every_skip_in_the_tests_names_its_reason():
    """Does every pytest.skip(...), skipif, xfail and importorskip in tests/ give a reason?"""
    calls = 0
    for path in sorted((nbs.ROOT / "tests").rglob("*.py")):
        tree = ast.parse(path.read_text())
        called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        for node in ast.walk(tree):
            func = node.func if isinstance(node, ast.Call) else node
            if not isinstance(func, ast.Attribute) or func.attr not in SKIP_CALLS:
                continue
            if ast.unparse(func.value) not in {"pytest", "pytest.mark"}:
                continue
            where = f"{path.relative_to(nbs.ROOT)}:{node.lineno}"
            if not isinstance(node, ast.Call):
                assert id(node) in called, f"{where}: a bare @pytest.mark.{func.attr}"
                continue
            calls += 1
            positional_reason = func.attr == "skip" and node.args  # skip("why")
            assert positional_reason or "reason" in {k.arg for k in node.keywords}, where
    assert calls >= 5


SKIPPING = """
import pytest

def test_expected():
    pytest.skip("no MPS device here")

def test_unexpected():
    pytest.skip("no PostgreSQL server")

def test_without_reason():
    pytest.skip()

def test_passes():
    pass
"""


@pytest.mark.parametrize("ci", [True, False])
def test_the_skip_audit_fails_a_run_on_a_skip_it_does_not_expect(tmp_path, ci, request):
    """Run pytest with the audit on a file that skips three ways: in CI only the hardware skip
    passes; anywhere, a skip without a reason fails; each is listed. (And this run is audited.)"""
    assert isinstance(request.config.pluginmanager.get_plugin("skip-audit"), SkipAudit)
    (tmp_path / "test_skipping.py").write_text(SKIPPING)
    (tmp_path / "conftest.py").write_text(
        "from tests.skips import SkipAudit, in_ci\n\n\n"
        "def pytest_configure(config):\n"
        "    config.pluginmanager.register(SkipAudit(ci=in_ci()), 'skip-audit')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(nbs.ROOT), "CI": "true" if ci else ""}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # nbval, anyio...: seconds of imports
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-ra", "-p", "no:cacheprovider",
         "-c", os.devnull, "--rootdir", str(tmp_path), str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    out = result.stdout
    assert result.returncode == 1, out
    assert "3 skipped" in out and "1 passed" in out, out
    assert "skips that fail the run" in out
    assert "test_without_reason: '': a skip must name its reason" in out
    assert ("test_unexpected: 'no PostgreSQL server': not expected in CI" in out) == ci, out
    assert "test_expected: 'no MPS device here'" not in out.split("skips that fail the run")[1]


# ---------------------------------------------------------------- tests/ follows the code

# The modules whose tests are not (or not only) in their mirror test module, where they are, and
# why. A module with neither fails test_every_module_has_its_test_module; a module listed here
# that gets its mirror module must leave this table (the test says so).
TESTED_ELSEWHERE = {
    "autograder/__init__.py": ("tests/test_imports.py", "its docstring's layer table"),
    "autograder/__main__.py": ("tests/test_cli.py", "two lines that run cli.main: `-m autograder`"),
    "autograder/i18n/__init__.py": (
        "tests/catalogs/test_audit.py",
        "the languages and catalogs' paths, read by every check of a translation",
    ),
    "autograder/errors.py": ("tests/test_cli.py", "the one error the command line reports"),
    "autograder/book/launch.py": (
        "tests/test_launch.py",
        "the setup cell and the launch links, proven where chapters run",
    ),
    "autograder/book/editions.py": (
        "tests/test_workbooks.py",
        "the editions are proven on the forms they stage (and, built, in tests/test_book.py)",
    ),
    "autograder/book/export.py": ("tests/test_tooling.py", "the drift check of solutions/"),
    "autograder/book/questions.py": ("tests/test_quiz.py", "the questions and their feedback"),
    "autograder/catalogs/checks_messages.py": (
        "tests/test_checks_i18n.py",
        "the checks' messages, proven in both languages",
    ),
    "autograder/course.py": ("tests/test_instructor.py", "the instructor's commands, end to end"),
    "checks/_errors.py": (
        "tests/test_remote.py",
        "the errors a check reports, as they cross the protocol",
    ),
    "checks/_quiz.py": ("tests/test_quiz.py", "the questions' checks"),
    "checks/_remote.py": ("tests/test_remote.py", "the grader's side of the protocol"),
    "checks/_serve.py": ("tests/test_remote.py", "the kernel's side of the protocol"),
    "checks/_watch.py": ("tests/test_checks_meta.py", "the device watch, on the meta device"),
    "checks/_wire.py": ("tests/test_wire.py", "the codec of the protocol"),
    "checks/_workbook.py": ("tests/test_workbooks.py", "the self-checks of the workbooks"),
}


def mirror_of(module: Path) -> Path | None:
    """The test module of a module, as tests/ mirrors the code: ``autograder/<pkg>/<m>.py`` in
    ``tests/<pkg>/test_<m>.py`` (a package's own code, ``tests/<pkg>/test_<pkg>.py``),
    ``autograder/<m>.py`` in ``tests/test_<m>.py``, ``checks/_<m>.py`` in
    ``tests/test_checks_<m>.py``; None for a chapter's checks and solutions, which the sweeps
    prove (every known-wrong and unusual answer, every reference: tests/test_wrong.py,
    tests/test_solutions.py)."""
    parts = module.relative_to(ROOT).with_suffix("").parts
    if parts[0] == "autograder":
        *folders, name = parts[1:]
        name = folders[-1] if name == "__init__" and folders else name
        return ROOT.joinpath("tests", *folders, f"test_{name}.py")
    if (
        parts[0] == "checks"
        and len(parts) == 2
        and parts[1].startswith("_")
        and parts[1] != "__init__"
    ):
        return ROOT / "tests" / f"test_checks{parts[1]}.py"
    return None


def imports(text: str, module: Path) -> bool:
    """Does test source ``text`` import ``module`` (``a.b.c``, or ``c`` from ``a.b``; a
    package's ``__main__``: runs ``-m a``)?"""
    dotted = ".".join(module.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    parent, _, leaf = dotted.rpartition(".")
    if leaf == "__main__":
        return f'"-m", "{parent}"' in text
    by_name = parent and re.search(rf"^\s*from {re.escape(parent)} import .*\b{leaf}\b", text, re.M)
    return bool(re.search(rf"\b{re.escape(dotted)}\b", text) or by_name)


def test_every_module_has_its_test_module():
    """Does every module of autograder/ and checks/ with code in it have its test module where
    tests/ mirrors the code, or a line in TESTED_ELSEWHERE that names the test module that proves
    it (one that imports it) and why; and does no line of that table stay once the mirror
    module exists?"""
    missing, stale, wrong = [], [], []
    for package in ("autograder", "checks"):
        for module in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(module.read_text())
            if not any(isinstance(n, (ast.FunctionDef, ast.ClassDef)) for n in tree.body):
                if module.name != "__main__.py":
                    continue  # a docstring, constants or re-exports: nothing to test
            rel = str(module.relative_to(ROOT))
            mirror = mirror_of(module)
            has_mirror = mirror is not None and mirror.exists()
            if rel in TESTED_ELSEWHERE:
                where, _ = TESTED_ELSEWHERE[rel]
                text = (ROOT / where).read_text() if (ROOT / where).exists() else ""
                if has_mirror:
                    stale.append(f"{rel}: {mirror.relative_to(ROOT)} exists now")
                elif not imports(text, module):
                    wrong.append(f"{rel}: {where} does not import it")
            elif mirror is not None and not has_mirror:
                missing.append(f"{rel}: no {mirror.relative_to(ROOT)}")
    assert not missing, "modules without a test module:\n" + "\n".join(missing)
    assert not stale, "lines of TESTED_ELSEWHERE to remove:\n" + "\n".join(stale)
    assert not wrong, "\n".join(wrong)
