"""Grade a whole class: collect submissions, autograde them in parallel, merge, report.

nbgrader stays the engine (its autograde pipeline runs every notebook); this module
adds what a large class needs and nbgrader lacks:

- **parallel**: ``--jobs N`` worker processes (:mod:`autograder.grading.worker`), each grading
  in a private course directory; only this process writes the real gradebook, so
  SQLite sees one writer and PostgreSQL (``--db``) works the same way;
- **progress**: a progress bar with the rate and an ETA;
- **limits**: a per-cell timeout (nbgrader's), a per-notebook timeout and a memory cap
  (``RLIMIT_AS`` on the worker and the kernels it starts);
- **resume**: every merged submission is recorded, with the SHA-256 of the notebook,
  in the table ``attention_graded`` of the gradebook, in the same transaction as its
  scores. A rerun skips what is recorded and unchanged, so an interrupted run goes on
  where it stopped: no submission is graded twice, none is lost;
- **collecting** (:mod:`autograder.grading.collect`): every submitted file becomes one submission
  with one student id, whatever the upload's form;
- **problems**: a submission that cannot be graded (empty, invalid JSON, timed out, ...)
  gets zero on every test cell and a line in ``problems.csv`` saying why, while the rest
  of the batch goes on; one whose kernel stopped (a crash, or a limit of the sandbox)
  keeps the points its test cells earned before the stop, and the stop is reported;
- **the grader's own CPU**: a worker that spends more than ``grader_cpu_seconds`` of its
  own CPU time (not its kernels') on one notebook, reading what the kernel sends, is
  stopped and replaced; that notebook is a problem, the batch goes on.

Its parts: collecting and unpacking submissions (:mod:`autograder.grading.collect`), job folders
and what comes back from them (:mod:`autograder.grading.jobs`), the sandbox
(:mod:`autograder.sandbox`), the worker processes (:mod:`autograder.grading.pool`,
:mod:`autograder.grading.worker`) and the gradebook merge (:mod:`autograder.grading.ledger`).

Why one module: :func:`run`, :func:`_grade_in_parallel` and :func:`_record` are one loop
over one run's ``stats``, its ``retry`` list and one :class:`Ledger`, so that each result is
recorded once, as it completes, by the one thread that writes the gradebook. The CSV files
made from its results are written by :mod:`autograder.grading.tables`.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import sys
from dataclasses import dataclass

from autograder.config import LIMITS
from autograder.errors import CourseError
from autograder.grading.collect import Submission
from autograder.grading.jobs import (
    _job_root,
    _listing,
    copy_back,
    gradebook_cells,
    keep_student_outputs,
    restore,
    run_folder,
    snapshot,
)
from autograder.grading.ledger import Ledger, read_job_scores
from autograder.grading.pool import Pool

# ---------------------------------------------------------------- the run


@dataclass
class Settings:
    jobs: int
    # The limits (what each means: autograder.config.Limits), by default the configuration's.
    cell_timeout: int = LIMITS.cell_timeout
    notebook_timeout: int = LIMITS.notebook_timeout
    wall_factor: int = LIMITS.wall_factor
    memory_mb: int = LIMITS.memory_mb
    grader_cpu_seconds: int = LIMITS.grader_cpu_seconds
    force: bool = False
    shard: tuple[int, int] = (1, 1)
    # True: every kernel in bubblewrap (autograder.sandbox); "user": another user and rlimits
    # only, where a container forbids namespaces (Gradescope); False: trusted code only.
    sandbox: bool | str = True
    run_demos: bool = False  # run the demo cells too (benchmarks/chapters.py: the cost before)


def parse_shard(text: str | None) -> tuple[int, int]:
    if not text:
        return (1, 1)
    match = re.fullmatch(r"(\d+)/(\d+)", text)
    if not match or not 1 <= int(match[1]) <= int(match[2]):
        raise CourseError(f"--shard must look like i/n with 1 <= i <= n, got {text!r}")
    return int(match[1]), int(match[2])


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


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
        earlier = []  # the problems of what is skipped, from the record: problems.csv keeps them
        if skipped:
            log(f"resuming: {skipped} submission(s) already graded and unchanged, skipped")
            outcomes, waiting = ledger.outcomes(), {id(s) for s in todo}
            for sub in mine:
                problem = recorded_problem(outcomes.get((sub.student, sub.chapter)))
                if id(sub) not in waiting and problem:
                    earlier.append((sub, problem))
        problems = [s for s in todo if s.problem]
        for sub in problems:
            if sub.chapter:
                ledger.record(sub, None, sub.problem)
        gradable = [s for s in todo if not s.problem]
        stats = {
            "graded": 0,
            "problems": len(problems),
            "skipped": skipped,
            "failed": earlier + [(sub, sub.problem) for sub in problems],
            "changed": [],
        }
        if gradable:
            chapters = sorted({s.chapter for s in gradable})
            templates = {ch: course.template_gradebook(ch) for ch in chapters}
            sources = {ch: snapshot(course_root / "source" / ch) for ch in chapters}
            cells = {
                ch: gradebook_cells(templates[ch], ch, sources[ch][f"{ch}.ipynb"])
                for ch in chapters
            }
            before = _listing(course_root)
            # Graded again alone only where that can help: a notebook that hit the wall clock
            # while computing, in a batch of several at once.
            retry: list | None = [] if settings.jobs > 1 else None
            _grade_in_parallel(
                course_root,
                ledger,
                gradable,
                templates,
                sources,
                settings,
                stats,
                tqdm,
                retry,
                cells,
            )
            if retry:  # once more, alone: the machine may have been busy, not the notebook slow
                log(f"{len(retry)} notebook(s) hit a wall-clock limit: grading them again, alone")
                first = {id(sub): why for sub, why in retry}
                alone = dataclasses.replace(settings, jobs=1)
                stats_alone = {"graded": 0, "problems": 0, "failed": []}
                subs = [sub for sub, _ in retry]
                _grade_in_parallel(
                    course_root,
                    ledger,
                    subs,
                    templates,
                    sources,
                    alone,
                    stats_alone,
                    tqdm,
                    None,
                    cells,
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


def recorded_problem(outcome: str | None) -> str | None:
    """The line problems.csv had for a submission, from the grader's record of its outcome
    (:meth:`Ledger.record`): so that a resumed run, which skips it, still reports it."""
    if not outcome or outcome.strip() == "graded":
        return None
    if not outcome.startswith("graded"):
        return outcome
    notes = [n.strip() for n in outcome.removeprefix("graded").split(";")]
    notes = [n for n in notes if n and not n.startswith("warning:")]
    return "graded, but " + "; ".join(notes) if notes else None


def _notes(reply: dict) -> list[str]:
    """What happened to a graded notebook that the instructor should know, in words."""
    notes = []
    killed, cell = reply.get("killed"), reply.get("stopped_cell")
    if cell:
        why = (
            f"stopped by the sandbox at cell {cell}: {killed}"
            if killed
            else f"the kernel died at cell {cell} (a crash, os._exit or a kill)"
        )
        notes.append(
            f"{why}; the test cells after the stop scored 0, those before it kept their points"
        )
    elif killed:
        notes.append(f"stopped by the sandbox: {killed}")
    if reply.get("events"):
        notes.append(reply["events"])
    if reply.get("wall_timeouts"):
        notes.append(f"{reply['wall_timeouts']} cell(s) timed out on the wall clock")
    if reply.get("waited"):
        notes.append(
            f"{reply['waited']} cell(s) waited past the wall clock without computing (a sleep "
            "or a blocked read): interrupted, and the rest of the notebook graded"
        )
    return notes


def _grade_in_parallel(
    course_root,
    ledger,
    gradable,
    templates,
    sources,
    settings,
    stats,
    tqdm,
    retry=None,
    cells=None,
):
    """Grade ``gradable`` on ``settings.jobs`` slots, recording each result in ``ledger``.

    Each job is prepared and graded in a thread of a :class:`autograder.grading.pool.Pool` (one
    worker process per slot); this thread alone records the results, as they complete. With
    a list ``retry``, a notebook that hit a wall-clock limit while computing (a busy machine
    can do that to correct work) is not recorded but appended to it, to be graded again
    alone. A worker past the wall clock, or past ``settings.grader_cpu_seconds`` of its own
    CPU time on one notebook, is killed and replaced; the batch goes on.
    """
    from concurrent.futures import as_completed

    wall_limit = settings.notebook_timeout * (settings.wall_factor if settings.sandbox else 1)
    bar = tqdm(
        total=len(gradable),
        desc="grading",
        unit="nb",
        file=sys.stderr,
        mininterval=0.5,
        smoothing=0.1,
    )
    pool = Pool(
        min(settings.jobs, len(gradable)), settings.memory_mb, course_root / ".grading" / "logs"
    )

    def grade_one(index, sub):  # in a pool thread
        root = run = None
        try:
            root = _job_root(
                course_root,
                sources,
                templates[sub.chapter],
                sub,
                index,
                (cells or {}).get(sub.chapter),
            )
            run = run_folder(root, sub.chapter, in_place=settings.sandbox != "user")
        except Exception as err:  # a notebook nbformat cannot write back, say
            return sub, root, run, None, f"could not be prepared for grading: {err}"[:1000]
        job = {
            "job": index,
            "root": str(root),
            "run": str(run),
            "chapter": sub.chapter,
            "student": sub.student,
            "cell_timeout": settings.cell_timeout,
            "notebook_timeout": settings.notebook_timeout,
            "wall_factor": settings.wall_factor,
            "memory_mb": settings.memory_mb,
            "sandbox": settings.sandbox,
            "run_demos": settings.run_demos,
        }
        reply, outcome = pool.run(job, wall_limit, settings.grader_cpu_seconds)
        return sub, root, run, reply, outcome

    try:
        futures = [pool.executor.submit(grade_one, i, sub) for i, sub in enumerate(gradable)]
        for future in as_completed(futures):
            _record(course_root, ledger, stats, retry, *future.result())
            bar.update(1)
    except BaseException:  # Ctrl-C, or a worker that cannot start: stop now, not after the jobs
        pool.close(now=True)
        raise
    else:
        pool.close()
    finally:
        bar.close()


def _record(course_root, ledger, stats, retry, sub, root, run, reply, outcome) -> None:
    """Record one job's result in the gradebook and ``stats`` (or in ``retry``), then
    remove its folders."""
    try:
        if reply and reply.get("cpu") is not None:  # the worker's own CPU seconds, for tests
            stats.setdefault("grader_cpu", {})[sub.student] = reply["cpu"]
        wall = (outcome or "").startswith("timed out") or (reply or {}).get("wall_timeouts")
        if wall and retry is not None:
            retry.append((sub, outcome or f"{reply['wall_timeouts']} cell(s) hit the wall clock"))
            return
        scores = None
        if outcome is None and reply and reply.get("success"):
            try:
                scores = read_job_scores(root, sub.chapter, sub.student)
            except Exception as err:  # nbgrader said success but left no submission
                outcome = f"no grades recorded ({type(err).__name__}: {err})"
        else:
            outcome = outcome or _outcome_of(reply or {})
        if scores is not None:
            dest = course_root / "autograded" / sub.student / sub.chapter
            if dest.exists():
                shutil.rmtree(dest)
            copy_back(root / "autograded" / sub.student / sub.chapter, dest)
            keep_student_outputs(root, course_root, sub)
            notes = _notes(reply or {})
            said = notes + [f"warning: {w}" for w in sub.warnings]  # for the feedback page
            ledger.record(sub, scores, "; ".join(["graded", *said]))
            stats["graded"] += 1
            if notes:  # graded as far as it ran, and reported
                stats["failed"].append((sub, "graded, but " + "; ".join(notes)))
        else:
            ledger.record(sub, None, outcome)
            stats["failed"].append((sub, outcome))
            stats["problems"] += 1
    finally:
        for folder in (root, run):
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
