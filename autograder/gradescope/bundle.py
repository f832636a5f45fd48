"""A Gradescope autograder bundle for one chapter, and the code it runs there.

``python -m autograder gradescope <chapter>`` writes ``<chapter>-gradescope.zip``:

    setup.sh           a venv /autograder/venv from the grader's lock (Gradescope runs it once)
    run_autograder     grades /autograder/submission, writes /autograder/results/results.json
    requirements.txt   requirements-grader.lock: what grading needs, pinned and hashed
    autograder/        this package: the same grading code as `python -m autograder grade`
    _config.yml        the book's configuration, whose `grading:` block autograder/config.py reads
    checks/            every check, hidden ones included (Gradescope never shows the source)
    course/            the chapter's nbgrader source folder and a gradebook template
    bundle.json        chapter, limits, visibility of hidden tests

On Gradescope, one container grades one submission; its fleet is the parallelism.
``run_autograder`` grades with the same worker as the local grader (timeouts, memory cap,
the checks run outside the kernel), then reports every autograded test cell as a Gradescope
test with ``score``, ``max_score``, ``status``, ``output`` and ``visibility``. Hidden test
cells are reported without their code, with the visibility chosen at build time
(``after_published`` by default); the summary students see counts only the visible
tests' points. Written answers are left to Gradescope's manual grading. Kernels run in
bubblewrap when the container allows namespaces, else (as root) as another user with
rlimits (``"sandbox": "auto"`` in bundle.json; ``"required"`` refuses to grade without
bubblewrap; ``"off"``); results.json is written after every process of theirs is gone. The root folder is
``$AUTOGRADER_ROOT`` (default ``/autograder``). ``tests/gradescope/test_bundle.py`` runs the
bundle as Gradescope does, in bubblewrap with a temporary folder at ``/autograder``.

Why one module: it is both ends of the bundle, :func:`build`, which writes the layout above
and ``bundle.json``, and :func:`main`, which reads them inside Gradescope's container, and
the two must change together (a key added to ``bundle.json`` is written and read in this
file). The two scripts Gradescope runs are files of their own only because they are shell.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from autograder import config
from autograder.config import COURSE_ID, GRADESCOPE, Limits

# The two scripts Gradescope runs, as the files they are (shell, checked by `bash -n` in the
# tests): setup.sh once per image, run_autograder once per submission.
FILES = Path(__file__).resolve().parent
SETUP = (FILES / "setup.sh").read_text()
RUN = (FILES / "run_autograder").read_text()


def _requirements(lock: Path) -> str:
    """The grader's lock as it is (its index, pins and hashes; ``make lock`` writes it): the
    versions the book is tested with, for what grading needs and nothing more."""
    return f"# {lock.name} of Attention, Step by Step\n{lock.read_text()}"


def build(
    course,
    chapter: str,
    output: Path,
    *,
    hidden_visibility: str = "after_published",
    limits: Limits = GRADESCOPE,
) -> Path:
    """Write the bundle zip for ``chapter`` (released first if needed), grading within
    ``limits`` (default: :data:`autograder.config.GRADESCOPE`)."""
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
        (stage / "requirements.txt").write_text(
            _requirements(nbs.ROOT / "requirements-grader.lock")
        )
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        shutil.copytree(nbs.ROOT / "autograder", stage / "autograder", ignore=ignore)
        # autograder/config.py reads the grading block of the book's _config.yml, next to it.
        shutil.copyfile(config.CONFIG_FILE, stage / config.CONFIG_FILE.name)
        shutil.copytree(nbs.ROOT / "checks", stage / "checks", ignore=ignore)
        shutil.copytree(
            course.root / "source" / chapter, stage / "course" / "source" / chapter, ignore=ignore
        )
        shutil.copyfile(template, stage / "course" / "template.db")
        _write_messages(course, chapter, stage)
        (stage / "bundle.json").write_text(
            json.dumps(
                {
                    "chapter": chapter,
                    "cell_timeout": limits.cell_timeout,
                    "notebook_timeout": limits.notebook_timeout,
                    "memory_mb": limits.memory_mb,
                    "hidden_visibility": hidden_visibility,
                    "sandbox": "auto",
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


def _write_messages(course, chapter: str, stage: Path) -> None:
    """The ``course`` catalog of the chapter's release language, as JSON, where the bundle's
    :func:`autograder.i18n.translations` finds it (the bundle has no polib): the students'
    summary and what happened to their notebook are said in the chapter's language."""
    from autograder import i18n
    from autograder.results import feedback

    lang = feedback.released_language(course, chapter)
    if lang == i18n.SOURCE:
        return
    path = i18n.catalog_path(lang, i18n.COURSE, stage).with_suffix(".json")
    path.parent.mkdir(parents=True, exist_ok=True)
    messages = i18n.translations(lang, i18n.COURSE)
    path.write_text(json.dumps(messages, ensure_ascii=False, sort_keys=True, indent=0))


class _BundleCourse:
    """The little of Course that batch.run needs, inside a Gradescope container."""

    course_id = COURSE_ID

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


def _sandbox_mode(wanted: str) -> bool | str:
    """How kernels are isolated here: bubblewrap (True), another user only ("user"), none.

    A container may forbid namespaces (Docker without CAP_SYS_ADMIN). As root, kernels then
    still run as another user, with rlimits; the grader's files become unreadable to it
    (``umask 077``, the bundle's folder closed), and every process of that user is killed
    before ``results.json`` is written. Only where even that is impossible (no root, no
    CAP_SETUID) does ``"auto"`` grade without isolation, and say so.
    """
    from autograder.sandbox import FIRST_UID, SandboxUnavailable, check_available

    if wanted == "off":
        return False
    try:
        check_available()
        return True
    except SandboxUnavailable as err:
        if wanted == "required":
            raise
        reason = err
    if os.geteuid() == 0:
        probe = [
            "setpriv",
            f"--reuid={FIRST_UID}",
            f"--regid={FIRST_UID}",
            "--clear-groups",
            "true",
        ]
        if subprocess.run(probe, capture_output=True).returncode == 0:
            print(
                f"warning: no namespaces here ({reason}); kernels run as another user "
                f"(uid {FIRST_UID}) with rlimits, without bubblewrap",
                file=sys.stderr,
            )
            return "user"
    print(f"warning: grading without a sandbox: {reason}", file=sys.stderr)
    return False


def close_bundle(root: Path, source: Path) -> None:
    """Leave the kernel's user (the user-only mode) nothing of the grader's to read.

    ``umask 077`` for everything the grader writes from now on (its work folder is a fresh
    ``mkdtemp``, mode 0700, and the kernel's own folder is made elsewhere, see
    :func:`autograder.grading.jobs.run_folder`); the bundle (``source/``: every check, hidden ones
    included, the course's source notebook, the gradebook template), the results, the
    submission, Gradescope's copy of ``run_autograder`` and its metadata closed to others.
    The environment (``venv/``) stays readable: the kernel runs on it.
    """
    os.umask(0o077)
    for folder in (source, root / "results", root / "submission"):
        if folder.is_dir() and not folder.is_symlink():
            folder.chmod(0o700)
    for name in ("run_autograder", "submission_metadata.json"):
        path = root / name
        if path.is_file() and not path.is_symlink():
            path.chmod(0o700 if name == "run_autograder" else 0o600)


def main(root: str) -> int:
    """Grade ``<root>/submission`` and write ``<root>/results/results.json``."""
    from autograder import notebooks as nbs
    from autograder.grading import batch, collect
    from autograder.grading.jobs import write_private
    from autograder.grading.scores import Total, is_hand_graded
    from autograder.results import feedback

    root = Path(root)
    source = Path(__file__).resolve().parents[2]
    config = json.loads((source / "bundle.json").read_text())
    chapter = config["chapter"]
    results_path = root / "results" / "results.json"
    results_path.parent.mkdir(parents=True, exist_ok=True)
    sandbox = _sandbox_mode(config.get("sandbox", "auto"))
    if sandbox == "user":  # nothing of the grader's may be readable by the kernel's user
        close_bundle(root, source)

    work = Path(tempfile.mkdtemp(prefix="grade-"))
    shutil.copytree(source / "course" / "source", work / "source")
    course = _BundleCourse(work, source / "course" / "template.db")
    shutil.copyfile(source / "course" / "template.db", work / "gradebook.db")  # has the assignment
    folder = root / "submission"
    source_nb = nbs.read(source / "course" / "source" / chapter / f"{chapter}.ipynb")
    graded_cells = frozenset(
        nbs.nbgrader_meta(c)["grade_id"]
        for c in source_nb.cells
        if nbs.nbgrader_meta(c).get("grade")
    )
    notebook, problem, warnings = collect.pick(
        collect.notebooks_in(folder) if folder.is_dir() else [], chapter, {chapter: graded_cells}
    )
    sub = collect.Submission("submission", chapter, notebook or folder, "submission")
    if notebook is None:
        sub.problem = f"{problem} (expected {chapter}.ipynb)"
    else:
        collect.prepare(sub, lambda nb: chapter)
    settings = batch.Settings(
        jobs=1,
        cell_timeout=config["cell_timeout"],
        notebook_timeout=config["notebook_timeout"],
        memory_mb=config["memory_mb"],
        sandbox=sandbox,
    )
    stats = batch.run(course, [sub], settings, log=lambda m: print(m, file=sys.stderr))
    problem = stats["failed"][0][1] if stats["failed"] else None
    lang = feedback.released_language(course, chapter)
    tr = feedback.translator(lang)

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
                output = tr("Not graded in full: {why}").format(why=_in_words(problem, lang))
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
    hand = sum(
        float(nbs.nbgrader_meta(c).get("points", 0))
        for c in source_nb.cells
        if nbs.nbgrader_meta(c).get("grade") and is_hand_graded(c.cell_type)
    )
    results = {
        "score": sum(t["score"] for t in tests),
        "output": _summary(tests, problem, warnings, hand, lang),
        "visibility": "visible",
        "tests": tests,
    }
    write_private(results_path, json.dumps(results, indent=2).encode("utf-8"))
    results_path.chmod(0o644)
    shutil.rmtree(work, ignore_errors=True)
    # stdout is for the instructor (Gradescope shows it to course staff): the whole total.
    total = Total(results["score"], sum(t["max_score"] for t in tests), hand_max=hand)
    print(f"{total}{'; ' + problem if problem else ''}")
    return 0


def _in_words(problem: str, lang: str) -> str:
    """What the grader recorded (``batch.run``'s ``failed`` entry), for a student."""
    from autograder.results import feedback

    if problem.startswith("graded, but "):
        problem = "graded; " + problem.removeprefix("graded, but ")
    said = feedback.in_plain_words(problem, lang)
    return said[0] if said else problem


def _summary(
    tests: list[dict], problem: str | None, warnings: list[str], hand: float, lang: str = "en"
) -> str:
    """The students' summary, in the chapter's language ``lang``: the visible tests' points;
    of hidden ones only that they exist; the points that remain for a person (``hand``),
    which Gradescope's score leaves out; what happened to the notebook, in words."""
    from autograder import records
    from autograder.results import feedback

    tr = feedback.translator(lang)
    shown = [t for t in tests if t["visibility"] == "visible"]
    held = [t for t in tests if t["visibility"] != "visible"]
    lines = [
        tr("Visible tests: {score} of {points} points.").format(
            score=f"{sum(t['score'] for t in shown):g}",
            points=f"{sum(t['max_score'] for t in shown):g}",
        )
    ]
    if held:
        lines.append(
            tr(
                "{count} hidden tests worth {points} points are graded too; their results are "
                "shown when grades are published."
            ).format(count=len(held), points=f"{sum(t['max_score'] for t in held):g}")
        )
    if problem:
        lines.append(_in_words(problem, lang))
    lines += [tr("Note: {what}.").format(what=records.in_language(w, tr)) for w in warnings]
    if hand:
        lines.append(
            tr(
                "Written answers: {points} more points, graded by hand; they are not in this "
                "score, and remain for a person to grade."
            ).format(points=f"{hand:g}")
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main(os.environ.get("AUTOGRADER_ROOT", "/autograder")))
