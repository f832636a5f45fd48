"""Collect a class's submissions: unpack uploads, pick each student's notebook, name students.

Every submitted file ends as exactly one :class:`Submission` with one student id:

- **identity**: a student id is the submitted name (file, folder or zip stem), in Unicode
  NFC, with its letters and digits kept in any script (``张伟``, ``José``); whitespace and
  characters that are unsafe in a path or a glob become ``_``. Two different names that
  end as one id (``José García`` and ``José_García``; ``Ada`` and ``ada``, which one folder
  on a case-insensitive disk) are refused by :func:`check_identities`, naming both files:
  nothing is overwritten silently.
- **uploads**: a zip holding several notebooks gives the one named after the chapter, or
  else the only one carrying the chapter's graded cells, with a warning; with no such
  one the submission is a problem (a zero and a line in ``problems.csv``). A class zip
  whose members sit under one top folder is unwrapped. Zips are read member by member
  with caps on the total size, the number of files and the compression ratio
  (:class:`ZipLimits`): a zip bomb is refused, never unpacked.
- **resubmissions**: several submissions of one student for one chapter are resolved by
  :func:`choose_newest` (the newest by the LMS's time, else by the notebook's date in its
  zip), with a warning naming the file graded and the files set aside, with their times.
- **chapter**: from ``--assignment``, the folder layout, the notebook's graded cells, its
  file name, or, for a notebook that cannot be read, the one chapter of the rest of the
  batch; see :func:`resolve_chapters`.

Why one module: every step from an upload to a :class:`Submission` (unpacking, picking a
notebook, naming the student, telling the chapter, keeping the newest) fills in or refuses
the same records, and each decides from what an earlier one kept: :func:`extract` keeps a
member's date in its zip because :func:`choose_newest` orders by it. The zip reader
(:class:`ZipLimits` to :func:`_unwrap`, about 110 lines) is the one part that stands alone,
and would move out if another command came to unpack uploads.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import time
import unicodedata
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from autograder import notebooks as nbs
from autograder import records
from autograder.errors import CourseError

EXCHANGE_DIR = re.compile(
    r"^(?P<student>[^+]+)\+(?P<assignment>[^+]+)\+(?P<timestamp>[^+]+)(\+.*)?$"
)
SKIP_PARTS = {"__MACOSX", ".ipynb_checkpoints"}
JUNK_NAMES = {".DS_Store", "Thumbs.db", "desktop.ini"}
MAX_ID_LENGTH = 100


@dataclass
class Submission:
    """One notebook to grade: whose, for which chapter, from where."""

    student: str
    chapter: str | None
    path: Path
    origin: str
    timestamp: str | None = None
    problem: str | None = None
    sha256: str = ""
    name: str = ""  # the name the student id was made from, as submitted
    warnings: list[str] = field(default_factory=list)
    # The notebook's date in the zip it came in (ISO, the zipping machine's local time), where
    # it came in one. Not the gradebook's timestamp (``timestamp``: the LMS's or nbgrader's).
    file_time: str | None = None


class IdentityError(CourseError):
    """Two different submitted names map to one student id, or one student twice."""


# ---------------------------------------------------------------- identity


def _keep(char: str) -> bool:
    return unicodedata.category(char)[0] in "LNM" or char in "_.@-"


def student_id(name: str) -> str:
    """The student id of a submitted name: NFC, letters and digits of any script kept.

    Whitespace and every other character (``/ \\ + * ? [ ] ! …``) become ``_``; leading
    dots are dropped (no hidden folders). A name with nothing left gets an id made from
    its hash, so that it still differs from every other name.
    """
    text = unicodedata.normalize("NFC", name).strip()
    cleaned = "".join(c if _keep(c) else "_" for c in text).lstrip(".")
    if not cleaned.strip("_."):
        digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:10]
        cleaned = f"student-{digest}"
    return cleaned[:MAX_ID_LENGTH]


def check_identities(subs: list[Submission]) -> None:
    """Refuse the batch if two different names share an id, or one student one chapter twice.

    Ids equal up to case count as one (a case-insensitive disk keeps one folder for
    both). Raises :class:`IdentityError` listing every clash and how to resolve it.
    """
    by_id: dict[str, list[Submission]] = {}
    for sub in subs:
        by_id.setdefault(sub.student.casefold(), []).append(sub)
    clashes = []
    for group in by_id.values():
        names = sorted({s.name or s.student for s in group})
        if len(names) > 1 or len({s.student for s in group}) > 1:
            files = ", ".join(sorted(repr(s.origin) for s in group))
            ids = ", ".join(sorted({s.student for s in group}))
            clashes.append(f"different names {names} become the same student id ({ids}): {files}")
            continue
        seen: dict[str | None, list[Submission]] = {}
        for sub in group:
            seen.setdefault(sub.chapter, []).append(sub)
        for chapter, same in seen.items():
            if len(same) > 1:
                files = ", ".join(sorted(f"{s.origin!r} ({_when(s)})" for s in same))
                what = chapter or "an unknown chapter"
                forms = {s.origin for s in same}
                if len({unicodedata.normalize("NFC", o) for o in forms}) < len(forms):
                    files += " (one name written in two Unicode forms)"
                clashes.append(
                    f"student {same[0].student} submitted {what} twice: {files}; the newest "
                    "is graded only where every copy has an LMS time, or every copy a date in "
                    "its zip, and no two are the same"
                )
    if clashes:
        raise IdentityError(
            "refusing to grade: submissions would overwrite each other.\n  "
            + "\n  ".join(clashes)
            + "\nRename the files or folders so that each student has one name and one "
            "submission per chapter, then grade again."
        )


# ---------------------------------------------------------------- zips


@dataclass(frozen=True)
class ZipLimits:
    """What one zip may unpack to. A zip over any cap is refused, not truncated."""

    max_total_bytes: int
    max_files: int
    max_member_bytes: int = 64 * 2**20  # a notebook bigger than this is not homework
    max_ratio: float = 100.0  # uncompressed / compressed, for members over ratio_floor
    ratio_floor: int = 2**20


STUDENT_ZIP = ZipLimits(max_total_bytes=256 * 2**20, max_files=2000)
CLASS_ZIP = ZipLimits(max_total_bytes=4 * 2**30, max_files=50_000)
WANTED = (".ipynb", ".zip")  # what is unpacked; the rest of an upload is never written
CHUNK = 2**20


def _size(n: float) -> str:
    return f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} KiB"


class ZipRefused(ValueError):
    """A zip that leaves its folder or exceeds a :class:`ZipLimits` cap."""


def extract(zip_path: Path, dest: Path, limits: ZipLimits = STUDENT_ZIP) -> Path:
    """Unpack the notebooks (and nested zips) of ``zip_path`` into ``dest``, within ``limits``.

    The declared sizes are checked first, then every member is read in chunks and
    counted, so a zip that lies about its sizes is stopped too. Paths leaving ``dest``
    are refused. Raises :class:`ZipRefused` or :class:`zipfile.BadZipFile`.
    """
    dest.mkdir(parents=True, exist_ok=True)
    root = dest.resolve()
    with zipfile.ZipFile(zip_path) as archive:
        members = archive.infolist()
        if len(members) > limits.max_files:
            raise ZipRefused(f"{len(members)} files, more than the {limits.max_files} allowed")
        declared = sum(m.file_size for m in members)
        if declared > limits.max_total_bytes:
            raise ZipRefused(
                f"unpacks to {_size(declared)}, more than the "
                f"{_size(limits.max_total_bytes)} allowed"
            )
        total = 0
        for member in members:
            target = (dest / member.filename).resolve()
            if not target.is_relative_to(root):
                raise ZipRefused(f"a path outside the archive: {member.filename}")
            if member.is_dir() or not member.filename.lower().endswith(WANTED):
                continue
            if member.file_size > limits.max_member_bytes:
                raise ZipRefused(
                    f"{member.filename} unpacks to {_size(member.file_size)}, more "
                    f"than the {_size(limits.max_member_bytes)} allowed per file"
                )
            if member.file_size > limits.ratio_floor and member.file_size > limits.max_ratio * max(
                member.compress_size, 1
            ):
                raise ZipRefused(
                    f"{member.filename} is compressed {member.file_size / max(member.compress_size, 1):.0f}"
                    f" to 1, more than {limits.max_ratio:.0f} to 1 (a zip bomb?)"
                )
            target.parent.mkdir(parents=True, exist_ok=True)
            written = 0
            with archive.open(member) as src, open(target, "wb") as out:
                while chunk := src.read(CHUNK):
                    written += len(chunk)
                    total += len(chunk)
                    if written > member.file_size or total > limits.max_total_bytes:
                        out.close()
                        target.unlink()
                        raise ZipRefused(f"{member.filename} unpacks to more than it declares")
                    out.write(chunk)
            # The member's date in the zip, kept as the file's (as unzip does): a submission's
            # time where the LMS gives none (Submission.file_time).
            try:
                stamp = time.mktime((*member.date_time, 0, 0, -1))
                os.utime(target, (stamp, stamp))
            except (OverflowError, ValueError, OSError):
                pass
    return dest


def _unwrap(folder: Path) -> Path:
    """A class download whose members sit under one top folder: that folder.

    Only when the top holds nothing but that folder and the folder holds more than one
    submission; one student's folder with one notebook stays a student.
    """
    while True:
        entries = [
            p for p in folder.iterdir() if p.name not in SKIP_PARTS and p.name not in JUNK_NAMES
        ]
        if len(entries) != 1 or not entries[0].is_dir():
            return folder
        inner = entries[0]
        items = [
            p
            for p in inner.iterdir()
            if p.name not in SKIP_PARTS
            and p.name not in JUNK_NAMES
            and (p.is_dir() or p.suffix.lower() in WANTED)
        ]
        if len(items) < 2 and not (inner / "inbound").is_dir():
            return folder
        folder = inner


# ---------------------------------------------------------------- picking a notebook


@functools.cache
def chapter_grade_ids() -> dict[str, frozenset[str]]:
    """Each chapter's graded cells (grade_ids), read once per process."""
    return {
        ch: frozenset(
            nbs.nbgrader_meta(c)["grade_id"]
            for c in nbs.read(nbs.notebook_path(ch)).cells
            if nbs.nbgrader_meta(c).get("grade_id") and nbs.nbgrader_meta(c).get("grade")
        )
        for ch in nbs.chapter_names()
    }


def _grade_ids_of(path: Path) -> set[str]:
    import json

    try:
        data = json.loads(path.read_bytes())
        return {
            c.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            for c in data.get("cells", [])
            if isinstance(c, dict)
        } - {None}
    except Exception:  # unreadable: carries no graded cells
        return set()


def notebooks_in(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.rglob("*.ipynb")
        if p.is_file()
        and not SKIP_PARTS & set(p.relative_to(folder).parts)
        and not p.name.startswith("._")
    )


def pick(
    notebooks: list[Path], chapter: str | None, grade_ids: dict[str, frozenset[str]] | None = None
) -> tuple[Path | None, str | None, list[str]]:
    """Choose the notebook to grade among ``notebooks``: (path, problem, warnings).

    One notebook: that one. Several: the one named after the chapter (any chapter when
    ``chapter`` is unknown), else the only one carrying the chapter's graded cells, and
    a warning naming the others; with none or several such, a problem. ``grade_ids``
    (chapter -> its graded cells' ids) defaults to the book's chapters.
    """
    if not notebooks:
        return None, "no notebook in the submission", []
    if len(notebooks) == 1:
        return notebooks[0], None, []
    chapters = [chapter] if chapter else nbs.chapter_names()
    names = ", ".join(str(p.name) for p in notebooks)
    named = [p for p in notebooks if p.stem.casefold() in {c.casefold() for c in chapters}]
    if len(named) == 1:
        said = records.SEVERAL_NOTEBOOKS.format(
            count=len(notebooks), names=names, chosen=named[0].name
        )
        return named[0], None, [said]
    ids = grade_ids if grade_ids is not None else chapter_grade_ids()
    carrying = [
        p for p in named or notebooks if any(_grade_ids_of(p) & ids.get(c, set()) for c in chapters)
    ]
    if len(carrying) == 1:
        said = records.SEVERAL_NOTEBOOKS_CARRYING.format(
            count=len(notebooks), names=names, chosen=carrying[0].name
        )
        return carrying[0], None, [said]
    target = f"{chapter}.ipynb" if chapter else "a chapter"
    return (
        None,
        f"{len(notebooks)} notebooks ({names}) and not one that is named {target} or is the "
        "only one with its graded cells: keep one notebook in the upload",
        [],
    )


# ---------------------------------------------------------------- collecting


def collect(source: Path, assignment: str | None, scratch: Path) -> list[Submission]:
    """Find every submission under ``source``, in any of the forms the README lists.

    - an nbgrader exchange: ``inbound/<student>+<chapter>+<timestamp>/`` (latest wins);
    - nbgrader's layout: ``<student>/<chapter>/<notebook>.ipynb``;
    - an LMS download: one ``<student>.zip`` or ``<student>/`` folder per student, or
      one zip of those (with or without a top folder);
    - a flat folder of ``<student>.ipynb``.

    Every notebook, zip and folder found gives one :class:`Submission`; one that cannot
    be graded carries its ``problem``.
    """
    source = Path(source)
    unzipped = source.is_file() and source.suffix.lower() == ".zip"  # files keep their dates
    if unzipped:
        try:
            source = _unwrap(extract(source, scratch / "download", CLASS_ZIP))
        except (zipfile.BadZipFile, ZipRefused) as err:
            raise CourseError(f"cannot unpack {source}: {err}") from err
    if not source.is_dir():
        raise CourseError(f"{source} is not a folder (or zip) of submissions")
    inbound = next((p for p in [source / "inbound", *source.glob("*/inbound")] if p.is_dir()), None)
    if inbound is not None:
        return _collect_exchange(inbound, assignment)
    found: list[Submission] = []
    for path in sorted(p for p in source.iterdir() if p.is_file()):
        if path.name.startswith("._") or path.name in JUNK_NAMES:
            continue
        if path.suffix.lower() == ".ipynb":
            sub = _sub(path.stem, assignment, path, path.name)
            sub.file_time = file_time(path) if unzipped else None
            found.append(sub)
        elif path.suffix.lower() == ".zip":
            sub = _sub(path.stem, assignment, path, path.name)
            try:
                folder = extract(path, scratch / "zips" / _scratch_name(path.name))
            except (zipfile.BadZipFile, ZipRefused, OSError) as err:
                sub.problem = f"zip refused: {err}"
                found.append(sub)
                continue
            found.append(_from_folder(sub, folder, unzipped=True))
        else:  # a PDF, a .py, a notebook saved as .txt: the student still gets a row
            sub = _sub(path.stem, assignment, path, path.name)
            sub.problem = f"not a notebook or a zip ({path.suffix or 'no extension'})"
            found.append(sub)
    chapter_names = set(nbs.chapter_names())
    for folder in sorted(p for p in source.iterdir() if p.is_dir() and p.name not in SKIP_PARTS):
        chapter_dirs = [d for d in folder.iterdir() if d.is_dir() and d.name in chapter_names]
        if chapter_dirs:  # nbgrader's submitted/<student>/<chapter>/ layout
            for chapter_dir in sorted(chapter_dirs):
                if assignment and chapter_dir.name != assignment:
                    continue
                stamp = chapter_dir / "timestamp.txt"
                sub = _sub(
                    folder.name,
                    chapter_dir.name,
                    chapter_dir,
                    f"{folder.name}/{chapter_dir.name}/",
                    stamp.read_text().strip() if stamp.exists() else None,
                )
                found.append(_from_folder(sub, chapter_dir, unzipped))
        else:
            found.append(
                _from_folder(
                    _sub(folder.name, assignment, folder, f"{folder.name}/"), folder, unzipped
                )
            )
    return found


def _scratch_name(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _sub(name, chapter, path, origin, timestamp=None) -> Submission:
    name = unicodedata.normalize("NFC", name)
    return Submission(student_id(name), chapter, path, origin, timestamp, name=name)


def _from_folder(sub: Submission, folder: Path, unzipped: bool = False) -> Submission:
    """``sub`` graded by the notebook :func:`pick` chooses in ``folder``; ``unzipped``: the
    folder was unpacked from a zip, whose dates the files keep (``file_time``)."""
    notebook, problem, warnings = pick(notebooks_in(folder), sub.chapter)
    sub.warnings += warnings
    if notebook is None:
        sub.path, sub.problem = folder, problem
    else:
        sep = ":" if sub.origin.endswith(".zip") else ""
        sub.path, sub.origin = notebook, f"{sub.origin}{sep}{notebook.relative_to(folder)}"
        if unzipped:
            sub.file_time = file_time(notebook)
    return sub


def file_time(path: Path) -> str:
    """A file's modification time, ISO 8601 to the second, in this machine's local time."""
    from datetime import datetime

    return datetime.fromtimestamp(path.stat().st_mtime).isoformat(timespec="seconds")


def _collect_exchange(inbound: Path, assignment: str | None) -> list[Submission]:
    """The newest submission of each student and chapter by nbgrader's timestamp; the others
    are set aside, and named with their times in a warning (see :func:`choose_newest`)."""
    found: list[Submission] = []
    for folder in sorted(inbound.iterdir()):
        match = EXCHANGE_DIR.match(folder.name)
        if not folder.is_dir() or not match:
            continue
        if assignment and match["assignment"] != assignment:
            continue
        sub = _sub(
            match["student"],
            match["assignment"],
            folder,
            f"inbound/{folder.name}/",
            match["timestamp"],
        )
        found.append(_from_folder(sub, folder))
    return choose_newest(found)


# ---------------------------------------------------------------- resubmissions


def submitted_time(sub: Submission):
    """(rule, time) of a submission, for ordering resubmissions: ``("LMS", t)`` from the LMS's
    (or nbgrader's) timestamp, ``("zip", t)`` from the notebook's date in its zip, else None.
    Times are naive datetimes (an LMS's in UTC, a zip's in the zipping machine's time)."""
    from datetime import datetime

    if sub.timestamp:
        try:
            from nbgrader.utils import parse_utc

            return "LMS", parse_utc(sub.timestamp).replace(tzinfo=None)
        except Exception:  # an LMS's timestamp nbgrader cannot read: no order from it
            return None
    if sub.file_time:
        return "zip", datetime.fromisoformat(sub.file_time)
    return None


def _when(sub: Submission) -> str:
    known = submitted_time(sub)
    return f"{known[0]} time {known[1].isoformat(sep=' ')}" if known else "no time"


def choose_newest(subs: list[Submission]) -> list[Submission]:
    """One submission per student and chapter where a student handed in several: the newest.

    The rule: the newest by the LMS's timestamp where every copy has one, else by the
    notebook's date in its zip where every copy has one. The chosen submission carries a
    warning naming the file graded and the files set aside, each with its time (a line in
    problems.csv). Copies that cannot be ordered so (a copy without a time, two with the same
    time) are all kept, and :func:`check_identities` refuses them, naming each with its time.
    """
    groups: dict[tuple[str, str, str | None], list[Submission]] = {}
    for sub in subs:
        groups.setdefault((sub.student, sub.name, sub.chapter), []).append(sub)
    kept: list[Submission] = []
    for group in groups.values():
        times = [submitted_time(s) for s in group]
        rules = {t[0] for t in times if t}
        if len(group) == 1 or None in times or len(rules) > 1:
            kept += group
            continue
        ordered = sorted(zip(times, group, strict=True), key=lambda ts: ts[0][1], reverse=True)
        if ordered[0][0][1] == ordered[1][0][1]:  # a tie: no newest
            kept += group
            continue
        chosen, aside = ordered[0][1], [s for _, s in ordered[1:]]
        (rule,) = rules
        chosen.warnings.append(
            records.RESUBMITTED.format(
                count=len(group),
                chapter=chosen.chapter or "this chapter",
                rule=rule,
                chosen=f"{chosen.origin} ({_when(chosen)})",
                aside=", ".join(f"{s.origin} ({_when(s)})" for s in aside),
            )
        )
        kept.append(chosen)
    return kept


# ---------------------------------------------------------------- reading


def prepare(sub: Submission, infer) -> None:
    """Read the notebook: its SHA-256, ``sub.problem`` if it cannot be graded, its chapter.

    ``infer(nb)`` names the chapter of a notebook whose chapter is not known yet (or None).
    """
    import nbformat

    if sub.problem:
        return
    data = sub.path.read_bytes()
    sub.sha256 = hashlib.sha256(data).hexdigest()
    if not data.strip():
        sub.problem = "the notebook file is empty"
        return
    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
    except Exception as err:  # invalid JSON, not a notebook, bad encoding
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        sub.problem = f"not a readable notebook ({type(err).__name__}: {first[:200]})"
        return
    if sub.chapter is None:
        sub.chapter = infer(nb)


# ---------------------------------------------------------------- chapters


def resolve_chapters(subs: list[Submission]) -> None:
    """Give every submission a chapter where one can be told, so that it gets a row.

    Called after :func:`prepare` (which reads the graded cells). A
    submission still without one takes its file name if that is a chapter's, else the
    one chapter of the rest of the batch; it keeps a problem saying so. Only in a batch
    of several chapters does an unreadable, unnamed notebook stay without a chapter.
    """
    names = {c.casefold(): c for c in nbs.chapter_names()}
    for sub in subs:
        if sub.chapter is None and sub.path.suffix == ".ipynb":
            sub.chapter = names.get(sub.path.stem.casefold())
    batch = {s.chapter for s in subs if s.chapter}
    for sub in subs:
        if sub.chapter is None and len(batch) == 1:
            (sub.chapter,) = batch
            sub.warnings.append(records.COUNTED_AS.format(chapter=sub.chapter))
        if sub.chapter is None and not sub.problem:
            sub.problem = "cannot tell which chapter this notebook answers; pass --assignment"
