"""The instructor's CSV files that a grading run writes besides nbgrader's export.

- ``problems.csv`` (:func:`write_problems`): every submission not graded fully, and every
  warning, with why and when; a record across runs;
- ``grades.csv``, completed after nbgrader's export: a zero row for each submission no
  chapter could be told for (:func:`add_unassigned_rows`, with :func:`unassigned_rows` kept
  from an earlier file), and when each submission was handed in and graded
  (:func:`add_times`).

:meth:`autograder.course.Course.grade` calls them after :func:`autograder.grading.batch.run`;
this module reads and writes files only, and imports nothing of the grader's.
"""

from __future__ import annotations

import csv
from pathlib import Path

PROBLEM_FIELDS = ["student_id", "assignment", "origin", "problem", "recorded_at"]


def now() -> str:
    """This moment, as the records write it: ISO 8601 in UTC, to the second."""
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds")


def write_problems(path: Path, failed, subs=(), when: str | None = None) -> None:
    """``problems.csv``: every submission not graded fully, and every warning: why, and when.

    A record across runs: the rows already in the file (an earlier run's, such as a late
    file set aside) are kept, this run's are added with ``recorded_at`` (``when``, default
    now), and a row that is already there (the same student, chapter, file and problem) is
    not repeated, so it keeps the time it was first seen.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    if path.exists():
        with open(path, newline="", encoding="utf-8") as f:
            rows = [{k: r.get(k) or "" for k in PROBLEM_FIELDS} for r in csv.DictReader(f)]
    seen = {tuple(r[k] for k in PROBLEM_FIELDS[:-1]) for r in rows}
    found = [(sub.student, sub.chapter or "", sub.origin, problem) for sub, problem in failed]
    found += [
        (sub.student, sub.chapter or "", sub.origin, f"warning: {warning}")
        for sub in subs
        for warning in sub.warnings
    ]
    when = when or now()
    for key in found:
        if key not in seen:
            seen.add(key)
            rows.append(dict(zip(PROBLEM_FIELDS, (*key, when), strict=True)))
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=PROBLEM_FIELDS)
        writer.writeheader()
        writer.writerows(rows)


def unassigned_rows(path: Path) -> list[dict]:
    """The rows of an earlier ``grades.csv`` with no chapter (see :func:`add_unassigned_rows`):
    the gradebook does not hold them, so a new export would lose them."""
    if not Path(path).exists():
        return []
    with open(path, newline="", encoding="utf-8") as f:
        return [r for r in csv.DictReader(f) if not r.get("assignment")]


def add_unassigned_rows(path: Path, subs, kept=()) -> int:
    """Give ``grades.csv`` a zero row for each submission no chapter could be told for.

    nbgrader's export lists (assignment, student) pairs of the gradebook; a notebook whose
    chapter is unknown (an unreadable file in a batch of several chapters) is in none, so
    it gets a row here, with an empty assignment; so do the rows ``kept`` from an earlier
    run's file (:func:`unassigned_rows`) for students not in this batch. Returns how many
    rows were added.
    """
    missing = [s for s in subs if not s.chapter]
    ids = {s.student for s in missing}
    kept = [r for r in kept if r.get("student_id") not in ids]
    if not missing and not kept:
        return 0
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        fields, rows = reader.fieldnames, list(reader)
    for old in kept:
        rows.append({k: old.get(k, "") for k in fields})
    for sub in missing:
        row = dict.fromkeys(fields, "")
        row.update(student_id=sub.student, raw_score="0.0", score="0.0")
        rows.append(row)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return len(missing) + len(kept)


def add_times(path: Path, times: dict[tuple[str, str], dict[str, str]]) -> None:
    """Complete ``grades.csv`` with when each submission was handed in and graded.

    ``timestamp`` (nbgrader's column) holds the LMS's time where it gave one; where it gave
    none, the notebook's date in its zip (``times``, from :meth:`Ledger.times`). Two columns
    are added: ``timestamp_source`` (``lms``, ``zip``, or empty where nothing tells) and
    ``graded_at`` (when the grader recorded the grade, UTC).
    """
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        fields, rows = list(reader.fieldnames or []), list(reader)
    for extra in ("timestamp_source", "graded_at"):
        if extra not in fields:
            fields.append(extra)
    for row in rows:
        known = times.get((row.get("student_id", ""), row.get("assignment", "")), {})
        if not row.get("timestamp") and known.get("submitted_at"):
            row["timestamp"] = known["submitted_at"]
        if row.get("timestamp") and not row.get("timestamp_source"):
            row["timestamp_source"] = known.get("source") or "lms"
        row["graded_at"] = known.get("graded_at") or row.get("graded_at", "")
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
