"""Grade a whole class: collect submissions, autograde them in parallel, merge, report.

nbgrader stays the engine (its autograde pipeline runs every notebook); this module
adds what a large class needs and nbgrader lacks:

- **parallel**: ``--jobs N`` worker processes (:mod:`autograder.worker`), each grading
  in a private course directory; only this process writes the real gradebook, so
  SQLite sees one writer and PostgreSQL (``--db``) works the same way;
- **progress**: a progress bar with the rate and an ETA;
- **limits**: a per-cell timeout (nbgrader's), a per-notebook timeout and a memory cap
  (``RLIMIT_AS`` on the worker and the kernels it starts);
- **resume**: every merged submission is recorded, with the SHA-256 of the notebook,
  in the table ``attention_graded`` of the gradebook, in the same transaction as its
  scores. A rerun skips what is recorded and unchanged, so an interrupted run goes on
  where it stopped: no submission is graded twice, none is lost;
- **collecting** (:mod:`autograder.collect`): every submitted file becomes one submission
  with one student id, whatever the upload's form;
- **problems**: a submission that cannot be graded (empty, invalid JSON, timed out,
  killed kernel, ...) gets zero on every test cell and a line in ``problems.csv``
  saying why, while the rest of the batch goes on.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import queue
import re
import resource
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import nbformat

from autograder.collect import Submission, collect, prepare  # noqa: F401  (moved; re-exported)

WORKER = Path(__file__).resolve().parent / "worker.py"


# ---------------------------------------------------------------- workers


def _limits(memory_mb: int):
    def apply():
        limit = memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


class Worker:
    def __init__(self, index: int, memory_mb: int, log_dir: Path, replies: queue.Queue):
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "PGPASSWORD", "PGPASSFILE")
        }
        env["MPLBACKEND"] = "agg"
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        env["PYTHONUNBUFFERED"] = "1"
        # One thread per kernel, always: PyTorch's OpenMP threads spin while they wait, so on
        # a busy machine two threads ran a small training loop 15-30 times slower than one,
        # and the spinning would count against the notebook's CPU-time limits. Parallelism
        # comes from --jobs.
        env["OMP_NUM_THREADS"] = "1"
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log = open(log_dir / f"worker-{index}.log", "ab")
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            env=env,
            text=True,
            start_new_session=True,
            preexec_fn=_limits(memory_mb),
        )
        self.index = index
        self.job: dict | None = None
        self.started = 0.0
        self.replies = replies
        self.ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "ready" in msg:
                self.ready.set()
            else:
                self.replies.put((self, msg))
        self.replies.put((self, None))  # the worker ended

    def send(self, job: dict) -> None:
        self.job, self.started = job, time.monotonic()
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        """Kill the worker and every kernel it started."""
        import psutil

        try:
            parent = psutil.Process(self.proc.pid)
            procs = parent.children(recursive=True) + [parent]
        except psutil.NoSuchProcess:
            procs = []
        for p in procs:
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
        self.proc.wait()
        self.log.close()

    def close_input(self) -> None:
        """Tell the worker there is no more work; it exits after its current job."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass

    def stop(self) -> None:
        try:
            self.close_input()
            self.proc.wait(timeout=30)
        except (subprocess.TimeoutExpired, BrokenPipeError, OSError):
            self.kill()
        self.log.close()


# ---------------------------------------------------------------- the gradebook


def _graded_table():
    from sqlalchemy import Column, MetaData, String, Table

    meta = MetaData()
    table = Table(
        "attention_graded",
        meta,
        Column("student", String(128), primary_key=True),
        Column("assignment", String(128), primary_key=True),
        Column("sha256", String(64), nullable=False),
        Column("outcome", String(1000), nullable=False),
        Column("graded_at", String(40), nullable=False),
    )
    return meta, table


class Ledger:
    """The real gradebook, written only by this process; and the record of what is graded."""

    def __init__(self, db_url: str, course_id: str):
        from nbgrader.api import Gradebook

        from autograder.course import venv_on_path

        venv_on_path()

        self.gb = Gradebook(db_url, course_id=course_id)
        self.meta, self.table = _graded_table()
        self.meta.create_all(self.gb.engine)

    def close(self):
        self.gb.close()

    def graded(self) -> dict[tuple[str, str], str]:
        rows = self.gb.db.execute(self.table.select()).all()
        return {(r.student, r.assignment): r.sha256 for r in rows}

    def outcomes(self) -> dict[tuple[str, str], str]:
        rows = self.gb.db.execute(self.table.select()).all()
        return {(r.student, r.assignment): r.outcome for r in rows}

    def record(self, sub: Submission, scores, outcome: str) -> None:
        """Replace the student's submission with ``scores`` and mark it graded, in one commit.

        ``scores`` maps notebook -> (grades, comments) as read from a job's gradebook, or
        is None for a problem submission: zero on every grade cell. Manual scores a
        grader already gave are kept.
        """
        import warnings

        from sqlalchemy.exc import SAWarning

        with warnings.catch_warnings():
            # nbgrader's add_submission trips SQLAlchemy's autoflush warnings; they are benign.
            warnings.simplefilter("ignore", SAWarning)
            self._record(sub, scores, outcome)

    def _record(self, sub: Submission, scores, outcome: str) -> None:
        from nbgrader.api import MissingEntry

        gb, chapter = self.gb, sub.chapter
        gb.update_or_create_student(sub.student)
        manual = {}
        try:
            old = gb.find_submission(chapter, sub.student)
            for nb in old.notebooks:
                for g in nb.grades:
                    if g.manual_score is not None:
                        manual[(nb.name, g.name)] = g.manual_score
            gb.remove_submission(chapter, sub.student)
        except MissingEntry:
            pass
        kwargs = {"timestamp": sub.timestamp} if sub.timestamp else {}
        try:
            new = gb.add_submission(chapter, sub.student, **kwargs)
        except Exception:  # an unparseable timestamp: keep the grade, drop the time
            gb.db.rollback()
            new = gb.add_submission(chapter, sub.student)
        for nb in new.notebooks:
            grades, comments = (scores or {}).get(nb.name, ({}, {}))
            for g in nb.grades:
                if scores is None:
                    g.auto_score, g.needs_manual_grade = 0.0, False
                else:
                    g.auto_score, g.needs_manual_grade = grades.get(g.name, (0.0, False))
                if (nb.name, g.name) in manual:
                    g.manual_score = manual[(nb.name, g.name)]
                    g.needs_manual_grade = True
            for c in nb.comments:
                c.auto_comment = outcome if scores is None else comments.get(c.name)
        key = {"student": sub.student, "assignment": chapter}
        gb.db.execute(
            self.table.delete().where(
                (self.table.c.student == sub.student) & (self.table.c.assignment == chapter)
            )
        )
        gb.db.execute(
            self.table.insert().values(
                **key,
                sha256=sub.sha256,
                outcome=outcome[:1000],
                graded_at=datetime.now(UTC).isoformat(timespec="seconds"),
            )
        )
        gb.db.commit()


def read_job_scores(job_root: Path, chapter: str, student: str):
    """Scores and comments of a finished job, from its private gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{job_root / 'gradebook.db'}") as gb:
        sub = gb.find_submission(chapter, student)
        scores = {}
        for nb in sub.notebooks:
            grades = {g.name: (g.auto_score, g.needs_manual_grade) for g in nb.grades}
            comments = {c.name: c.auto_comment for c in nb.comments}
            scores[nb.name] = (grades, comments)
        return scores


# ---------------------------------------------------------------- the run


@dataclass
class Settings:
    jobs: int
    cell_timeout: int = 60  # CPU seconds per cell (wall clock without the sandbox)
    notebook_timeout: int = 600  # CPU seconds per notebook (wall clock without the sandbox)
    # The wall-clock backstop, as a multiple of the two limits above: only a notebook that
    # sleeps or waits (not one on a busy machine) should ever reach it.
    wall_factor: int = 10
    memory_mb: int = 4096
    force: bool = False
    shard: tuple[int, int] = (1, 1)
    sandbox: bool = True  # every kernel in bubblewrap (autograder.sandbox)
    run_demos: bool = False  # run the demo cells too (benchmarks/chapters.py: the cost before)


def parse_shard(text: str | None) -> tuple[int, int]:
    if not text:
        return (1, 1)
    match = re.fullmatch(r"(\d+)/(\d+)", text)
    if not match or not 1 <= int(match[1]) <= int(match[2]):
        raise SystemExit(f"--shard must look like i/n with 1 <= i <= n, got {text!r}")
    return int(match[1]), int(match[2])


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


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


def _outcome_of(reply: dict) -> str:
    text = (reply.get("error") or "") + "\n" + (reply.get("log") or "")
    if reply.get("killed"):
        return f"stopped by the sandbox: {reply['killed']}"
    if "DeadKernelError" in text or "Kernel died" in text or "kernel died" in text.lower():
        return "the kernel died while running the notebook (crash, os._exit or kill?)"
    lines = [ln for ln in (reply.get("error") or "").strip().splitlines() if ln.strip()]
    return "nbgrader could not grade it: " + (lines[-1][:300] if lines else "unknown error")


def run(course, submissions: list[Submission], settings: Settings, log=print) -> dict:
    """Grade ``submissions`` (already collected and prepared) into the course's gradebook."""
    from tqdm import tqdm

    course_root = course.root
    ledger = Ledger(course.db_url, course.course_id)
    try:
        done = {} if settings.force else ledger.graded()
        i, n = settings.shard
        ordered = sorted(submissions, key=lambda s: (s.chapter or "", s.student))
        mine = [s for k, s in enumerate(ordered) if k % n == i - 1]
        todo = [s for s in mine if done.get((s.student, s.chapter)) != s.sha256 or not s.sha256]
        skipped = len(mine) - len(todo)
        if skipped:
            log(f"resuming: {skipped} submission(s) already graded and unchanged, skipped")
        problems = [s for s in todo if s.problem]
        for sub in problems:
            if sub.chapter:
                ledger.record(sub, None, sub.problem)
        gradable = [s for s in todo if not s.problem]
        stats = {
            "graded": 0,
            "problems": len(problems),
            "skipped": skipped,
            "failed": [(sub, sub.problem) for sub in problems],
            "changed": [],
        }
        if gradable:
            chapters = sorted({s.chapter for s in gradable})
            templates = {ch: course.template_gradebook(ch) for ch in chapters}
            sources = {ch: snapshot(course_root / "source" / ch) for ch in chapters}
            before = _listing(course_root)
            retry: list = []
            _grade_in_parallel(
                course_root, ledger, gradable, templates, sources, settings, stats, tqdm, retry
            )
            if retry:  # once more, alone: the machine may have been busy, not the notebook slow
                log(f"{len(retry)} notebook(s) hit a wall-clock limit: grading them again, alone")
                first = {id(sub): why for sub, why in retry}
                alone = dataclasses.replace(settings, jobs=1)
                stats_alone = {"graded": 0, "problems": 0, "failed": []}
                subs = [sub for sub, _ in retry]
                _grade_in_parallel(
                    course_root, ledger, subs, templates, sources, alone, stats_alone, tqdm
                )
                stats["graded"] += stats_alone["graded"]
                stats["problems"] += stats_alone["problems"]
                again = {id(sub): why for sub, why in stats_alone["failed"]}
                for sub in subs:
                    second = again.get(id(sub), "graded in full")
                    stats["failed"].append((sub, f"{first[id(sub)]}; retried alone: {second}"))
            # A submission may write outside its folder. The jobs used the in-memory copy of
            # the source, so no grade was affected; put the grader's files back and say so.
            for ch in chapters:
                stats["changed"] += restore(course_root / "source" / ch, sources[ch])
            after = _listing(course_root)
            stats["changed"] += sorted(
                f"{rel} (written during grading)"
                for rel, t in after.items()
                if before.get(rel) != t
            )
        return stats
    finally:
        ledger.close()


def _grade_in_parallel(
    course_root, ledger, gradable, templates, sources, settings, stats, tqdm, retry=None
):
    """Grade ``gradable`` in ``settings.jobs`` workers, recording each result in ``ledger``.

    With a list ``retry``, a notebook that hit a wall-clock limit (a busy machine can do
    that to correct work) is not recorded but appended to it, to be graded again alone.
    """
    replies: queue.Queue = queue.Queue()
    wall_limit = settings.notebook_timeout * (settings.wall_factor if settings.sandbox else 1)
    log_dir = course_root / ".grading" / "logs"
    workers = [
        Worker(k, settings.memory_mb, log_dir, replies)
        for k in range(min(settings.jobs, len(gradable)))
    ]
    pending = list(enumerate(gradable))
    bar = tqdm(
        total=len(gradable),
        desc="grading",
        unit="nb",
        file=sys.stderr,
        mininterval=0.5,
        smoothing=0.1,
    )

    def finish(worker, sub, root, reply, outcome=None):
        wall = (outcome or "").startswith("timed out") or (reply or {}).get("wall_timeouts")
        if wall and retry is not None:
            retry.append((sub, outcome or f"{reply['wall_timeouts']} cell(s) hit the wall clock"))
            shutil.rmtree(root, ignore_errors=True)
            bar.update(1)
            return
        if outcome is None and reply and reply.get("success"):
            try:
                scores = read_job_scores(root, sub.chapter, sub.student)
            except Exception as err:  # nbgrader said success but left no submission
                scores, outcome = None, f"no grades recorded ({type(err).__name__}: {err})"
        else:
            scores = None
            outcome = outcome or _outcome_of(reply or {})
        if scores is not None:
            dest = course_root / "autograded" / sub.student / sub.chapter
            if dest.exists():
                shutil.rmtree(dest)
            copy_back(root / "autograded" / sub.student / sub.chapter, dest)
            keep_student_outputs(root, course_root, sub)
            reply = reply or {}
            notes = [n for n in (reply.get("killed"), reply.get("events")) if n]
            if reply.get("wall_timeouts"):
                notes.append(f"{reply['wall_timeouts']} cell(s) timed out on the wall clock")
            ledger.record(sub, scores, "graded; " + "; ".join(notes) if notes else "graded")
            stats["graded"] += 1
            if notes:  # graded as far as it ran, and reported
                stats["failed"].append((sub, "graded, but " + "; ".join(notes)))
        else:
            ledger.record(sub, None, outcome)
            stats["failed"].append((sub, outcome))
            stats["problems"] += 1
        shutil.rmtree(root, ignore_errors=True)
        bar.update(1)

    def assign(worker):
        if not pending:
            return
        index, sub = pending.pop(0)
        root = _job_root(course_root, sources, templates[sub.chapter], sub, index)
        worker.sub, worker.root = sub, root
        worker.send(
            {
                "job": index,
                "root": str(root),
                "chapter": sub.chapter,
                "student": sub.student,
                "cell_timeout": settings.cell_timeout,
                "notebook_timeout": settings.notebook_timeout,
                "wall_factor": settings.wall_factor,
                "memory_mb": settings.memory_mb,
                "sandbox": settings.sandbox,
                "run_demos": settings.run_demos,
                "slot": worker.index,
            }
        )

    try:
        for worker in workers:
            if not worker.ready.wait(timeout=120):
                raise RuntimeError(f"grading worker {worker.index} did not start; see {log_dir}")
            assign(worker)
        busy = {w for w in workers if w.job is not None}
        while busy:
            try:
                worker, reply = replies.get(timeout=0.5)
            except queue.Empty:
                worker, reply = None, None
            now = time.monotonic()
            if worker is None:  # look for a notebook over its time
                for w in list(busy):
                    if now - w.started > wall_limit:
                        w.kill()
                        finish(
                            w,
                            w.sub,
                            w.root,
                            None,
                            f"timed out: the notebook ran longer than {wall_limit:.0f} s "
                            "(wall clock)",
                        )
                        busy.discard(w)
                        workers[w.index] = fresh = Worker(
                            w.index, settings.memory_mb, log_dir, replies
                        )
                        fresh.ready.wait(timeout=120)
                        if pending:
                            assign(fresh)
                            busy.add(fresh)
                continue
            if worker not in busy:
                continue  # a late message from a worker we killed
            busy.discard(worker)
            if reply is None:  # the worker process itself died (memory cap, signal)
                finish(
                    worker,
                    worker.sub,
                    worker.root,
                    None,
                    "the grading process died (memory limit or a signal)",
                )
                workers[worker.index] = worker = Worker(
                    worker.index, settings.memory_mb, log_dir, replies
                )
                worker.ready.wait(timeout=120)
            else:
                finish(worker, worker.sub, worker.root, reply)
                worker.job = None
            if pending:
                assign(worker)
                busy.add(worker)
    finally:
        bar.close()
        for worker in workers:  # all at once: each takes a moment to shut down
            worker.close_input()
        for worker in workers:
            worker.stop()


def write_problems(path: Path, failed, subs=()) -> None:
    """``problems.csv``: every submission not graded fully, and every warning, with why."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["student_id", "assignment", "origin", "problem"])
        for sub, problem in failed:
            writer.writerow([sub.student, sub.chapter or "", sub.origin, problem])
        for sub in subs:
            for warning in sub.warnings:
                writer.writerow([sub.student, sub.chapter or "", sub.origin, f"warning: {warning}"])


def add_unassigned_rows(path: Path, subs) -> int:
    """Give ``grades.csv`` a zero row for each submission no chapter could be told for.

    nbgrader's export lists (assignment, student) pairs of the gradebook; a notebook whose
    chapter is unknown (an unreadable file in a batch of several chapters) is in none, so
    it gets a row here, with an empty assignment. Returns how many rows were added.
    """
    missing = [s for s in subs if not s.chapter]
    if not missing:
        return 0
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        fields, rows = reader.fieldnames, list(reader)
    for sub in missing:
        row = dict.fromkeys(fields, "")
        row.update(student_id=sub.student, raw_score="0.0", score="0.0")
        rows.append(row)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return len(missing)
