"""Job folders: what a submission's sandbox sees, and what comes back from it.

Each job is a private nbgrader course folder (``.grading/jobs/<n>-<student>``): the
chapter's source (never the hidden checks: the grader runs its own), a gradebook with only
the assignment, and the submission. After grading only the notebook (and its timestamp)
comes back (:func:`copy_back`), and, for the instructor, the outputs it printed
(:func:`keep_student_outputs`).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nbformat

from autograder.collect import Submission


def sanitized(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Make a notebook safe for nbgrader without changing what it computes.

    A cell pasted twice (JupyterLab copies the nbgrader metadata) makes nbgrader 0.9.6
    fail the whole notebook (upstream #1083: DeduplicateIds leaves an empty
    ``nbgrader`` dict that OverwriteCells then reads). Keep the metadata on the last
    copy, the one whose code defines the answer, and make earlier copies plain cells.
    """
    seen = set()
    for cell in reversed(nb.cells):
        meta = cell.get("metadata", {}).get("nbgrader")
        if meta is None:
            continue
        grade_id = meta.get("grade_id")
        if not grade_id or grade_id in seen:
            del cell.metadata["nbgrader"]
        else:
            seen.add(grade_id)
    return nb


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder``, read into memory: the jobs' source, safe from any submission."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def restore(folder: Path, files: dict[str, bytes]) -> list[str]:
    """Put ``folder`` back as ``files`` says; return what had been changed, added or removed."""
    changed = []
    present = {
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    for rel in sorted(present - set(files)):
        (folder / rel).unlink()
        changed.append(f"source/{folder.name}/{rel} (added)")
    for rel, data in files.items():
        path = folder / rel
        if not path.exists() or path.read_bytes() != data:
            changed.append(f"source/{folder.name}/{rel}")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    return changed


def _listing(root: Path) -> dict[str, float]:
    """Files of the course folder that grading itself does not write, with their mtimes."""
    skip = {".grading", "autograded", "submitted", "source"}
    out = {}
    for p in root.rglob("*"):
        rel = p.relative_to(root)
        if rel.parts[0] in skip or rel.name.startswith("gradebook.db") or not p.is_file():
            continue
        out[str(rel)] = p.stat().st_mtime
    return out


def _job_root(
    course_root: Path, sources: dict, template: Path, sub: Submission, index: int
) -> Path:
    root = course_root / ".grading" / "jobs" / f"{index:05d}-{sub.student}"
    if root.exists():
        shutil.rmtree(root)
    for rel, data in sources[sub.chapter].items():
        if rel.startswith(HIDDEN_CHECKS):  # the grader runs its own; never in a student's folder
            continue
        path = root / "source" / sub.chapter / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    shutil.copyfile(template, root / "gradebook.db")
    dest = root / "submitted" / sub.student / sub.chapter
    dest.mkdir(parents=True)
    nbformat.write(sanitized(nbformat.read(sub.path, as_version=4)), dest / f"{sub.chapter}.ipynb")
    if sub.timestamp:
        (dest / "timestamp.txt").write_text(sub.timestamp)
    return root


HIDDEN_CHECKS = "checks/hidden/"
COPY_BACK = ("*.ipynb", "timestamp.txt")
COPY_BACK_MAX_BYTES = 20 * 2**20


def keep_student_outputs(root: Path, course_root: Path, sub: Submission) -> None:
    """Keep what the submission printed at grading, for the instructor only.

    Feedback never shows it (``DropStudentOutputs``); ``.grading/outputs/<student>/<chapter>.ipynb``
    is where an instructor looks when a notebook crashed. The file was written by the worker,
    outside the sandbox, with every output capped.
    """
    from autograder.worker import STUDENT_OUTPUTS

    src = root / STUDENT_OUTPUTS
    if src.is_file() and not src.is_symlink() and src.stat().st_size <= COPY_BACK_MAX_BYTES:
        dest = course_root / ".grading" / "outputs" / sub.student / f"{sub.chapter}.ipynb"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)


def copy_back(src: Path, dest: Path) -> list[str]:
    """Copy what the course keeps of a job's folder: its notebook (and timestamp), nothing else.

    Only regular files directly in ``src`` that match :data:`COPY_BACK` and are at most
    :data:`COPY_BACK_MAX_BYTES` are copied. A symlink, a FIFO, a device, a socket or a huge
    file that a submission left in its folder is never opened. Returns what was skipped.
    """
    import stat

    skipped = []
    dest.mkdir(parents=True, exist_ok=True)
    if not src.is_dir() or src.is_symlink():
        return skipped
    for entry in os.scandir(src):
        info = entry.stat(follow_symlinks=False)
        wanted = any(Path(entry.name).match(p) for p in COPY_BACK)
        if not wanted:
            continue
        if not stat.S_ISREG(info.st_mode) or info.st_size > COPY_BACK_MAX_BYTES:
            skipped.append(entry.name)
            continue
        fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            (dest / entry.name).write_bytes(f.read(COPY_BACK_MAX_BYTES + 1)[:COPY_BACK_MAX_BYTES])
    return skipped
