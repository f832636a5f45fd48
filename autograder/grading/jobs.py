"""Job folders: what a submission's sandbox sees, and what comes back from it.

Each job is a private nbgrader course folder (``.grading/jobs/<n>-<student>``): the
chapter's source (never the hidden checks: the grader runs its own), a gradebook with only
the assignment, and the submission, reconciled with the gradebook (:func:`reconcile`).

The kernel never runs in it. It runs in a *run folder* (:func:`run_folder`) holding a copy
of the chapter's files (``checks/`` without ``hidden/``, ``solutions/`` of the earlier
chapters) and nothing else: the one place its sandbox may write, and, from the moment the
kernel starts, a place the grader never reads from or writes into again (it is only
removed, by :func:`shutil.rmtree`, which follows no link). nbgrader writes the graded
notebook into the job's ``autograded/`` folder, which no sandbox can reach; only that
notebook comes back to the course (:func:`copy_back`), and, for the instructor, the outputs
it printed (:func:`keep_student_outputs`). Both are read with :func:`read_regular`, which
opens nothing that is not a regular file and follows no link.

Why one module: a job folder is one boundary with two sides, what goes in (the chapter's
files, the gradebook's cells, the reconciled submission, the run folder) and what comes back
(the graded notebook and, for the instructor, its outputs, read with :func:`read_regular`);
with both sides in one file, the rule that the grader never reads a file a kernel could have
written is checked in one place.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder import records
from autograder.grading.collect import Submission

HIDDEN_CHECKS = "checks/hidden/"
COPY_BACK = ("*.ipynb",)
# The graded notebook is the grader's own output: the student's cells (a submission is at most
# 64 MiB, see autograder.grading.collect.ZipLimits) with their outputs capped.
COPY_BACK_MAX_BYTES = 96 * 2**20
RUN_IGNORE = shutil.ignore_patterns("*.ipynb", "__pycache__", "*.pyc", ".ipynb_checkpoints")


# ---------------------------------------------------------------- reading and writing safely


class NotARegularFile(OSError):
    """A path that is a link, a FIFO, a device, a socket or a folder where a file was expected."""


def read_regular(path: Path, max_bytes: int) -> bytes:
    """The bytes of the regular file ``path``, opened without following a link.

    The file is opened with ``O_NOFOLLOW | O_NONBLOCK`` relative to its folder's descriptor
    and checked with ``fstat`` on the open descriptor, not by name: a name swapped between
    a check and its use cannot make this read a link's target, a FIFO (which would block)
    or a device. Raises :class:`NotARegularFile`, or :class:`OSError` (``EFBIG``) for a
    file over ``max_bytes``.
    """
    path = Path(path)
    dfd = os.open(os.path.realpath(path.parent), os.O_RDONLY | os.O_DIRECTORY)
    try:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
        try:
            ffd = os.open(path.name, flags, dir_fd=dfd)
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise NotARegularFile(f"{path} is a link") from None
            raise
    finally:
        os.close(dfd)
    with os.fdopen(ffd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise NotARegularFile(f"{path} is not a regular file")
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise OSError(errno.EFBIG, f"{path} is larger than {max_bytes} bytes")
    return data


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a new file and a rename: a link or a FIFO that
    stood at ``path`` is replaced, never written through."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# ---------------------------------------------------------------- the gradebook's cells


@dataclass(frozen=True)
class GradebookCell:
    """One cell nbgrader knows for a chapter, as the gradebook holds it (release version)."""

    grade_id: str
    cell_type: str
    grade: bool
    solution: bool
    locked: bool
    task: bool
    points: float | None
    source: str
    checksum: str

    def metadata(self) -> dict:
        meta = {
            "grade": self.grade,
            "grade_id": self.grade_id,
            "locked": self.locked,
            "schema_version": 3,
            "solution": self.solution,
            "task": self.task,
            "checksum": self.checksum,
        }
        if self.grade or self.task:
            meta["points"] = self.points
        return meta

    @property
    def restorable(self) -> bool:
        """Put back when missing: every cell but an answer cell that is not graded itself
        (its test cells say what a missing answer earns)."""
        return self.grade or self.locked or self.task


def gradebook_cells(template: Path, chapter: str, source_notebook: bytes) -> list[GradebookCell]:
    """The cells of ``chapter`` in ``template`` (a gradebook), in the source notebook's order."""
    from nbgrader.api import Gradebook

    order = [
        c.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        for c in nbformat.reads(source_notebook.decode("utf-8"), as_version=4).cells
    ]
    with Gradebook(f"sqlite:///{template}") as gb:
        nb = gb.find_notebook(chapter, chapter)
        graded = {c.name: c for c in nb.grade_cells}
        solutions = {c.name for c in nb.solution_cells}
        tasks = {c.name: c for c in nb.task_cells}
        cells = {}
        for c in nb.source_cells:
            scored = graded.get(c.name) or tasks.get(c.name)
            cells[c.name] = GradebookCell(
                grade_id=c.name,
                cell_type=c.cell_type,
                grade=c.name in graded,
                solution=c.name in solutions,
                locked=bool(c.locked),
                task=c.name in tasks,
                points=float(scored.max_score) if scored is not None else None,
                source=c.source,
                checksum=c.checksum,
            )
    ordered = [cells.pop(gid) for gid in order if gid in cells]
    return ordered + sorted(cells.values(), key=lambda c: c.grade_id)


# ---------------------------------------------------------------- reconciling a submission

CELL_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
PUT_BACK = "# This cell was missing from the submission; the grader put the course's copy back.\n"


def sanitized(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Keep nbgrader's metadata on the last copy of each grade_id only.

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
        grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
        if not grade_id or grade_id in seen:
            del cell.metadata["nbgrader"]
        else:
            seen.add(grade_id)
    return nb


def reconcile(
    nb: nbformat.NotebookNode, cells: list[GradebookCell]
) -> tuple[nbformat.NotebookNode, list[str]]:
    """Make a submission's cells the gradebook's: the gradebook's cells and points decide.

    - every cell gets a valid, unique nbformat id (an editor may renumber or drop them);
    - a cell whose nbgrader ``grade_id`` the gradebook does not know (an extra locked
      grade cell, say) becomes a plain cell, and is reported;
    - of two cells with one ``grade_id``, the last keeps it (see :func:`sanitized`);
    - every cell the gradebook knows gets the gradebook's nbgrader metadata (flags,
      points, checksum, schema), whatever the submission's said;
    - a cell of the gradebook's that is missing (a deleted test, quiz or written answer)
      is put back, as the release had it, after the nearest cell before it that is
      present: a missing answer scores 0 for its own question only. Answer cells that
      are not graded themselves are not put back; their tests say what they earn.

    Returns the notebook and what was changed, in words for ``problems.csv``.
    """
    known = {c.grade_id: c for c in cells}
    notes: list[str] = []
    nb.nbformat, nb.nbformat_minor = 4, max(5, int(nb.get("nbformat_minor") or 0))
    ids: set[str] = set()
    for i, cell in enumerate(nb.cells):
        cid = cell.get("id")
        if not (isinstance(cid, str) and CELL_ID.match(cid)) or cid in ids:
            cid = f"cell-{i}"
            while cid in ids:
                cid += "-x"
            cell["id"] = cid
        ids.add(cid)
        if not isinstance(cell.get("metadata"), dict):
            cell["metadata"] = nbformat.NotebookNode()
    seen: set[str] = set()
    for cell in reversed(nb.cells):
        meta = cell.metadata.get("nbgrader")
        if meta is None:
            continue
        gid = meta.get("grade_id") if isinstance(meta, dict) else None
        if not isinstance(gid, str) or gid not in known:
            del cell.metadata["nbgrader"]
            if isinstance(meta, dict) and any(meta.get(k) for k in ("grade", "locked", "task")):
                notes.append(records.UNKNOWN_GRADED_CELL.format(grade_id=repr(gid)))
            continue
        if gid in seen:
            del cell.metadata["nbgrader"]
            continue
        seen.add(gid)
        cell.metadata["nbgrader"] = nbformat.from_dict(known[gid].metadata())
    index = {
        cell.metadata["nbgrader"]["grade_id"]: i
        for i, cell in enumerate(nb.cells)
        if "nbgrader" in cell.metadata
    }
    anchor = None
    for gc in cells:
        if gc.grade_id in index:
            anchor = index[gc.grade_id]
            continue
        if not gc.restorable:
            notes.append(records.ANSWER_MISSING.format(grade_id=repr(gc.grade_id)))
            continue
        if anchor is None:
            pos = min(index.values(), default=len(nb.cells))
        else:
            pos = anchor + 1
        nb.cells.insert(pos, _put_back(gc, ids))
        index = {k: (v + 1 if v >= pos else v) for k, v in index.items()}
        index[gc.grade_id] = anchor = pos
        put_back = (
            records.ANSWER_PUT_BACK
            if gc.solution
            else records.TASK_PUT_BACK
            if gc.task
            else records.TEST_PUT_BACK
            if gc.grade
            else records.CELL_PUT_BACK
        )
        notes.append(put_back.format(grade_id=repr(gc.grade_id)))
    return nb, notes


def _put_back(gc: GradebookCell, ids: set[str]) -> nbformat.NotebookNode:
    cid = f"restored-{gc.grade_id}"[:64]
    cid = re.sub(r"[^a-zA-Z0-9_-]", "-", cid)
    while cid in ids:
        cid = cid[:60] + "-x"
    ids.add(cid)
    meta = {"nbgrader": gc.metadata()}
    if gc.cell_type == "markdown":
        cell = nbformat.v4.new_markdown_cell(gc.source, metadata=meta)
    else:
        # A locked cell's source is put back by nbgrader from the gradebook anyway; an
        # answer keeps the release's text exactly, so that it counts as unanswered.
        source = gc.source if (gc.solution or not gc.locked) else PUT_BACK + gc.source
        cell = nbformat.v4.new_code_cell(source, metadata=meta)
    cell["id"] = cid
    return nbformat.from_dict(cell)


# ---------------------------------------------------------------- the job's folders


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
    course_root: Path,
    sources: dict,
    template: Path,
    sub: Submission,
    index: int,
    cells: list[GradebookCell] | None = None,
) -> Path:
    """Write the job's private course folder; the submission reconciled with ``cells``.

    What reconciling changed is added to ``sub.warnings`` (``problems.csv``).
    """
    jobs = course_root / ".grading" / "jobs"
    jobs.mkdir(parents=True, exist_ok=True)
    root = jobs / f"{index:05d}-{sub.student}"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(mode=0o700)
    for rel, data in sources[sub.chapter].items():
        if rel.startswith(HIDDEN_CHECKS):  # the grader runs its own; never in a student's folder
            continue
        path = root / "source" / sub.chapter / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    shutil.copyfile(template, root / "gradebook.db")
    dest = root / "submitted" / sub.student / sub.chapter
    dest.mkdir(parents=True)
    nb = sanitized(nbformat.read(sub.path, as_version=4))
    if cells is not None:
        nb, notes = reconcile(nb, cells)
        sub.warnings += [n for n in notes if n not in sub.warnings]
    nbformat.write(nb, dest / f"{sub.chapter}.ipynb")
    if sub.timestamp:
        (dest / "timestamp.txt").write_text(sub.timestamp)
    return root


def run_folder(root: Path, chapter: str, in_place: bool = True) -> Path:
    """The folder a job's kernel runs in: the chapter's files but its notebooks.

    A copy of the job's ``source/<chapter>/`` without notebooks (so without the source
    notebook and its solutions) and without ``checks/hidden/`` (never in the job). In the
    job's folder (``<root>/run``) when the kernel is sandboxed with namespaces (bubblewrap
    binds only this folder); with ``in_place`` False (the user-only mode, where the kernel
    reaches its folder through the real parents) a fresh folder of the system's temporary
    folder, so that no folder of the grader's has to become traversable.
    """
    if in_place:
        run = root / "run"
        run.mkdir()
    else:
        run = Path(tempfile.mkdtemp(prefix="attn-run-"))
    shutil.copytree(root / "source" / chapter, run, ignore=RUN_IGNORE, dirs_exist_ok=True)
    return run


def keep_student_outputs(root: Path, course_root: Path, sub: Submission) -> None:
    """Keep what the submission printed at grading, for the instructor only.

    Feedback never shows it (``DropStudentOutputs``); ``.grading/outputs/<student>/<chapter>.ipynb``
    is where an instructor looks when a notebook crashed. The file was written by the worker
    into the job's folder, outside every sandbox, with every output capped.
    """
    from autograder.grading.worker import STUDENT_OUTPUTS

    try:
        data = read_regular(root / STUDENT_OUTPUTS, COPY_BACK_MAX_BYTES)
    except OSError:
        return
    dest = course_root / ".grading" / "outputs" / sub.student / f"{sub.chapter}.ipynb"
    dest.parent.mkdir(parents=True, exist_ok=True)
    write_private(dest, data)


def copy_back(src: Path, dest: Path) -> list[str]:
    """Copy what the course keeps of a job's graded folder: its notebook, nothing else.

    ``src`` is the job's ``autograded/<student>/<chapter>``, which nbgrader wrote and no
    sandbox ever saw. Still, only regular files directly in it that match :data:`COPY_BACK`
    and are at most :data:`COPY_BACK_MAX_BYTES` are copied, each read with
    :func:`read_regular` and written with :func:`write_private`. Returns what was skipped.
    """
    skipped = []
    dest.mkdir(parents=True, exist_ok=True)
    try:
        entries = [e.name for e in os.scandir(src)]
    except OSError:
        return skipped
    for name in sorted(entries):
        if not any(Path(name).match(p) for p in COPY_BACK):
            continue
        try:
            data = read_regular(src / name, COPY_BACK_MAX_BYTES)
        except OSError:
            skipped.append(name)
            continue
        write_private(dest / name, data)
    return skipped
