"""A Gradescope autograder bundle for one chapter, and the code it runs there.

``python -m autograder gradescope <chapter>`` writes ``<chapter>-gradescope.zip``:

    setup.sh           installs Python and the pinned packages (Gradescope runs it once)
    run_autograder     grades /autograder/submission, writes /autograder/results/results.json
    requirements.txt   the packages the grader needs, pinned as in requirements.lock
    autograder/        this package: the same grading code as `python -m autograder grade`
    checks/            every check, hidden ones included (Gradescope never shows the source)
    course/            the chapter's nbgrader source folder and a gradebook template
    bundle.json        chapter, limits, visibility of hidden tests

On Gradescope, one container grades one submission; its fleet is the parallelism.
``run_autograder`` grades with the same worker as the local grader (timeouts, memory cap,
integrity check of the checks), then reports every autograded test cell as a Gradescope
test with ``score``, ``max_score``, ``status``, ``output`` and ``visibility``. Hidden test
cells are reported without their code. Written answers are left to Gradescope's manual
grading. The root folder is ``$AUTOGRADER_ROOT`` (default ``/autograder``), so that the
project's tests can run the bundle against fake submission folders.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import tempfile
import zipfile
from pathlib import Path

SETUP = """\
#!/usr/bin/env bash
# Gradescope runs this once when it builds the autograder image (Ubuntu, as root).
set -euo pipefail
apt-get update
apt-get install -y --no-install-recommends python3 python3-pip python3-venv
python3 -m pip install --upgrade pip
# torch from PyTorch's CPU index: PyPI's default build of torch carries CUDA (GBs).
python3 -m pip install --extra-index-url https://download.pytorch.org/whl/cpu \\
    -r /autograder/source/requirements.txt
"""

RUN = """\
#!/usr/bin/env bash
# Gradescope runs this for each submission. AUTOGRADER_ROOT lets tests point it elsewhere.
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
HERE="$(cd "$(dirname "$0")" && pwd)"
exec "${PYTHON:-python3}" -c 'import sys; sys.path.insert(0, sys.argv[1]); \\
from autograder.gradescope import main; sys.exit(main(sys.argv[2]))' "$HERE" "$ROOT"
"""

# What the grader imports, from requirements.lock (torch pinned as everywhere else).
NEEDED = {
    "torch",
    "nbgrader",
    "nbformat",
    "nbconvert",
    "nbclient",
    "jupyter-client",
    "ipykernel",
    "matplotlib",
    "numpy",
    "tqdm",
    "psutil",
    "pyyaml",
    "sqlalchemy",
    "traitlets",
}


def _requirements(lock: Path) -> str:
    lines = []
    for line in lock.read_text().splitlines():
        name = line.split("==")[0].strip().lower()
        if "==" in line and not line.startswith("#") and name in NEEDED:
            lines.append(line.strip())
    return "\n".join(lines) + "\n"


def build(
    course, chapter: str, output: Path, *, hidden_visibility: str = "after_published"
) -> Path:
    """Write the bundle zip for ``chapter`` (released first if needed)."""
    from autograder import notebooks as nbs

    if not (course.root / "source" / chapter).is_dir():
        course.release([chapter])
    template = course.template_gradebook(chapter)
    stage = Path(tempfile.mkdtemp(prefix="gradescope-"))
    try:
        (stage / "setup.sh").write_text(SETUP)
        (stage / "run_autograder").write_text(RUN)
        for name in ("setup.sh", "run_autograder"):
            (stage / name).chmod(0o755)
        (stage / "requirements.txt").write_text(_requirements(nbs.ROOT / "requirements.lock"))
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        shutil.copytree(nbs.ROOT / "autograder", stage / "autograder", ignore=ignore)
        shutil.copytree(nbs.ROOT / "checks", stage / "checks", ignore=ignore)
        shutil.copytree(
            course.root / "source" / chapter, stage / "course" / "source" / chapter, ignore=ignore
        )
        shutil.copyfile(template, stage / "course" / "template.db")
        (stage / "bundle.json").write_text(
            json.dumps(
                {
                    "chapter": chapter,
                    "cell_timeout": course.timeout,
                    "notebook_timeout": 600,
                    "memory_mb": 3072,
                    "hidden_visibility": hidden_visibility,
                },
                indent=2,
            )
        )
        output = Path(output)
        output.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(output, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(stage.rglob("*")):
                if path.is_file():
                    info = zipfile.ZipInfo(str(path.relative_to(stage)))
                    info.external_attr = (stat.S_IFREG | path.stat().st_mode & 0o777) << 16
                    info.compress_type = zipfile.ZIP_DEFLATED
                    archive.writestr(info, path.read_bytes())
        return output
    finally:
        shutil.rmtree(stage, ignore_errors=True)


class _BundleCourse:
    """The little of Course that grading.run needs, inside a Gradescope container."""

    course_id = "attention-step-by-step"

    def __init__(self, root: Path, template: Path):
        self.root = root
        self.db_url = f"sqlite:///{root / 'gradebook.db'}"
        self._template = template

    def template_gradebook(self, chapter: str) -> Path:
        return self._template


def _cell_text(cell) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output.get("text", ""))
        elif output.get("output_type") == "error":
            parts.append(f"{output.get('ename')}: {output.get('evalue')}")
    return "".join(parts).strip()


def main(root: str) -> int:
    """Grade ``<root>/submission`` and write ``<root>/results/results.json``."""
    from autograder import grading
    from autograder import notebooks as nbs

    root = Path(root)
    source = Path(__file__).resolve().parent.parent
    config = json.loads((source / "bundle.json").read_text())
    chapter = config["chapter"]
    results_path = root / "results" / "results.json"
    results_path.parent.mkdir(parents=True, exist_ok=True)

    work = Path(tempfile.mkdtemp(prefix="grade-"))
    shutil.copytree(source / "course" / "source", work / "source")
    course = _BundleCourse(work, source / "course" / "template.db")
    shutil.copyfile(source / "course" / "template.db", work / "gradebook.db")  # has the assignment
    found = sorted((root / "submission").rglob("*.ipynb"))
    named = [p for p in found if p.stem == chapter]
    path = (named or found or [root / "submission" / f"{chapter}.ipynb"])[0]
    sub = grading.Submission("submission", chapter, path, str(path.relative_to(root)))
    if not path.exists():
        sub.problem = f"no notebook in the submission (expected {chapter}.ipynb)"
    else:
        grading.prepare(sub, lambda nb: chapter)
    settings = grading.Settings(
        jobs=1,
        cell_timeout=config["cell_timeout"],
        notebook_timeout=config["notebook_timeout"],
        memory_mb=config["memory_mb"],
    )
    stats = grading.run(course, [sub], settings, log=lambda m: print(m, file=sys.stderr))
    problem = stats["failed"][0][1] if stats["failed"] else None

    source_nb = nbs.read(source / "course" / "source" / chapter / f"{chapter}.ipynb")
    graded_path = work / "autograded" / "submission" / chapter / f"{chapter}.ipynb"
    graded = {}
    if graded_path.exists():
        for cell in nbs.read(graded_path).cells:
            gid = nbs.nbgrader_meta(cell).get("grade_id")
            if gid:
                graded[gid] = cell
    from nbgrader.api import Gradebook

    tests = []
    with Gradebook(course.db_url, course_id=course.course_id) as gb:
        for cell in source_nb.cells:
            meta = nbs.nbgrader_meta(cell)
            if not (nbs.is_test(cell) and cell.cell_type == "code"):
                continue
            gid = meta["grade_id"]
            grade = gb.find_grade(gid, chapter, chapter, "submission")
            hidden = nbs.HIDDEN_MARKERS[0] in cell.source
            score = float(grade.score or 0.0)
            top = float(meta["points"])
            output = _cell_text(graded[gid]) if gid in graded else ""
            if problem:
                output = f"Not graded: {problem}"
            tests.append(
                {
                    "name": gid,
                    "score": score,
                    "max_score": top,
                    "status": "passed" if score == top else "failed",
                    "output": output[:8000],
                    "visibility": config["hidden_visibility"] if hidden else "visible",
                }
            )
    total = sum(t["score"] for t in tests)
    top = sum(t["max_score"] for t in tests)
    summary = f"Autograded {total:g} of {top:g} points."
    if problem:
        summary += f" The notebook could not be graded fully: {problem}"
    results = {
        "score": total,
        "output": summary + " Written answers are graded by hand.",
        "visibility": "visible",
        "tests": tests,
    }
    results_path.write_text(json.dumps(results, indent=2))
    shutil.rmtree(work, ignore_errors=True)
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main(os.environ.get("AUTOGRADER_ROOT", "/autograder")))
