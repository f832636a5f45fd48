"""The real gradebook, written only by the grading process, and the record of what is graded.

Workers grade in private course folders with gradebooks of their own; :class:`Ledger`
merges each finished job into the course's gradebook (SQLite or PostgreSQL) in one
transaction, with the SHA-256 of the notebook in the table ``attention_graded``, so that a
rerun skips what is graded and unchanged. :func:`venv_on_path` prepares a process (this
one, the CLI's, the feedback pages') for nbgrader's ``Gradebook``.
"""

from __future__ import annotations

import functools
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

from autograder.grading.collect import Submission


def venv_on_path() -> None:
    """Prepare this process for nbgrader's Gradebook.

    A new gradebook asks ``alembic`` (from PATH: make it this environment's) for the
    schema's head revision, in a subprocess that costs 2 to 4 s of CPU. The answer depends
    only on the installed nbgrader: it is read here, in this process, from nbgrader's own
    migration scripts (what that subprocess reads), once per process.
    """
    import nbgrader.api

    bindir = str(Path(sys.executable).parent)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = os.pathsep.join([bindir, os.environ.get("PATH", "")])
    if not hasattr(nbgrader.api.get_alembic_version, "cache_info"):
        nbgrader.api.get_alembic_version = functools.cache(alembic_head)


def alembic_head() -> str:
    """The head revision of nbgrader's gradebook schema (``alembic heads``, in process)."""
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR

    return ScriptDirectory(ALEMBIC_DIR).get_current_head()


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
    # When the submission was handed in, as far as anyone can tell: the LMS's (or nbgrader's)
    # timestamp, else the notebook's date in the zip it came in. A table of its own, so that a
    # gradebook written before it existed gains it without a migration.
    Table(
        "attention_submitted",
        meta,
        Column("student", String(128), primary_key=True),
        Column("assignment", String(128), primary_key=True),
        Column("submitted_at", String(40), nullable=False),
        Column("source", String(40), nullable=False),
    )
    return meta, table


def submitted(sub: Submission) -> tuple[str, str]:
    """(time, source) of a submission: ``lms`` where the LMS gives one, ``zip`` where the
    file's date in its zip does, else ``("", "")``."""
    if sub.timestamp:
        return sub.timestamp, "lms"
    if sub.file_time:
        return sub.file_time, "zip"
    return "", ""


class Ledger:
    """The real gradebook, written only by this process; and the record of what is graded."""

    def __init__(self, db_url: str, course_id: str):
        from nbgrader.api import Gradebook

        venv_on_path()

        self.gb = Gradebook(db_url, course_id=course_id)
        self.meta, self.table = _graded_table()
        self.meta.create_all(self.gb.engine)

    def close(self):
        self.gb.close()

    def graded(self) -> dict[tuple[str, str], str]:
        rows = self.gb.db.execute(self.table.select()).all()
        return {(r.student, r.assignment): r.sha256 for r in rows}

    def times(self) -> dict[tuple[str, str], dict[str, str]]:
        """Per (student, assignment): ``submitted_at`` and its ``source``, and ``graded_at``."""
        times: dict[tuple[str, str], dict[str, str]] = {}
        for r in self.gb.db.execute(self.table.select()).all():
            times[(r.student, r.assignment)] = {"graded_at": r.graded_at}
        for r in self.gb.db.execute(self.meta.tables["attention_submitted"].select()).all():
            row = times.setdefault((r.student, r.assignment), {"graded_at": ""})
            row.update(submitted_at=r.submitted_at, source=r.source)
        return times

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
        times = self.meta.tables["attention_submitted"]
        for table in (self.table, times):
            gb.db.execute(
                table.delete().where(
                    (table.c.student == sub.student) & (table.c.assignment == chapter)
                )
            )
        when, source = submitted(sub)
        gb.db.execute(times.insert().values(**key, submitted_at=when[:40], source=source))
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
