"""Collecting a class's submissions (autograder.grading.collect): identities, uploads, zips, rows.

All fast: no nbgrader run. The end-to-end check that every file gets a row in grades.csv
is ``test_every_file_gets_a_row_and_a_reason`` (slow).
"""

import csv
import unicodedata
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.course import COURSE_ID, Course
from autograder.errors import CourseError
from autograder.grading import collect, tables
from tests.hostile import AUTO_POINTS, CHAPTER, reference

ROOT = Path(__file__).resolve().parents[2]


def _blank() -> str:
    return nbformat.writes(nbformat.v4.new_notebook())


def _flat(folder: Path, names: list[str], text: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / f"{name}.ipynb").write_text(text or _blank(), encoding="utf-8")
    return folder


def _students(found) -> list[str]:
    return sorted(s.student for s in found)


# ---------------------------------------------------------------- identity


def test_unicode_names_keep_their_letters(tmp_path):
    """Do Chinese and accented names keep their letters (NFC), each its own student?"""
    found = collect.collect(
        _flat(tmp_path / "in", ["张伟", "李娜", "José García"]), CHAPTER, tmp_path
    )
    assert _students(found) == sorted(["张伟", "李娜", "José_García"])
    assert all(unicodedata.is_normalized("NFC", s.student) for s in found)
    collect.check_identities(found)  # no clash


def test_a_decomposed_name_is_the_composed_one():
    """Is 'José' typed with a combining accent (NFD) the same id as the composed one?"""
    assert collect.student_id("Jose\u0301") == collect.student_id("Jos\u00e9") == "Jos\u00e9"


def test_punctuation_is_replaced_not_dropped():
    """Is 'alice!' kept apart from 'alice', and a path or glob character never in an id?"""
    assert collect.student_id("alice!") == "alice_" != collect.student_id("alice")
    for name in ("../evil", "a/b", "x*[y]?", "a+b", ".hidden", "   "):
        sid = collect.student_id(name)
        assert sid and not set(sid) & set("/\\*?[]+ ") and not sid.startswith(".")


@pytest.mark.parametrize(
    "names",
    [
        ["José García", "José_García"],  # space and underscore
        ["Ada", "ada"],  # one folder on a case-insensitive disk
        ["alice!", "alice?"],  # both end as alice_
    ],
)
def test_two_names_on_one_id_are_refused_naming_both(tmp_path, names):
    """Do two different names that map to one id stop the run, naming both files?"""
    found = collect.collect(_flat(tmp_path / "in", names), CHAPTER, tmp_path / "s")
    with pytest.raises(collect.IdentityError) as err:
        collect.check_identities(found)
    message = str(err.value)
    assert "same student id" in message
    for name in names:
        assert f"{name}.ipynb" in message


def test_one_student_twice_in_a_chapter_is_refused(tmp_path):
    """Is a student with a notebook and a zip for the same chapter refused, not overwritten?"""
    _flat(tmp_path / "in", ["ada"])
    with zipfile.ZipFile(tmp_path / "in" / "ada.zip", "w") as z:
        z.writestr(f"{CHAPTER}.ipynb", _blank())
    found = collect.collect(tmp_path / "in", CHAPTER, tmp_path / "s")
    with pytest.raises(collect.IdentityError, match=r"ada submitted masking twice: 'ada.ipynb'"):
        collect.check_identities(found)


def test_a_student_in_two_chapters_is_one_student(tmp_path):
    """In nbgrader's layout, is ada/masking + ada/attention_pooling one student, no clash?"""
    for chapter in (CHAPTER, "attention_pooling"):
        (tmp_path / "in" / "ada" / chapter).mkdir(parents=True)
        (tmp_path / "in" / "ada" / chapter / f"{chapter}.ipynb").write_text(_blank())
    found = collect.collect(tmp_path / "in", None, tmp_path / "s")
    assert sorted((s.student, s.chapter) for s in found) == [
        ("ada", "attention_pooling"),
        ("ada", CHAPTER),
    ]
    collect.check_identities(found)


# ---------------------------------------------------------------- several notebooks


def _zip(path: Path, members: dict[str, str | bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def test_a_zip_with_a_draft_grades_the_chapter_notebook_and_warns(tmp_path):
    """Attempt1.ipynb next to masking.ipynb: is masking.ipynb graded, with a warning?"""
    _zip(tmp_path / "in" / "bob.zip", {"Attempt1.ipynb": _blank(), "masking.ipynb": _blank()})
    for assignment in (CHAPTER, None):
        (sub,) = collect.collect(tmp_path / "in", assignment, tmp_path / f"s{assignment}")
        assert sub.path.name == "masking.ipynb" and sub.problem is None
        assert sub.warnings and "Attempt1.ipynb" in sub.warnings[0]


def test_a_zip_picks_the_only_notebook_with_graded_cells(tmp_path):
    """Neither is named masking: is the one carrying masking's graded cells the one graded?"""
    answer = nbformat.writes(reference())
    _zip(tmp_path / "in" / "carol.zip", {"Attempt1.ipynb": _blank(), "final.ipynb": answer})
    (sub,) = collect.collect(tmp_path / "in", CHAPTER, tmp_path / "s")
    assert sub.path.name == "final.ipynb" and sub.problem is None
    assert "graded cells" in sub.warnings[0]


def test_pick_takes_the_graded_cells_it_is_given(tmp_path):
    """Gradescope's bundle has no book: does pick use the grade ids it is handed?"""
    draft, final = _flat(tmp_path, ["draft", "final"]) / "draft.ipynb", tmp_path / "final.ipynb"
    final.write_text(nbformat.writes(reference()))
    ids = {CHAPTER: frozenset({"test_sequence_mask"})}
    assert collect.pick([draft, final], CHAPTER, ids)[0] == final
    assert collect.pick([draft, final], CHAPTER, {CHAPTER: frozenset({"nothing"})})[0] is None


def test_a_zip_with_two_candidates_is_a_problem_not_a_guess(tmp_path):
    """Two notebooks that both (or neither) answer the chapter: is it a problem, never a pick?"""
    answer = nbformat.writes(reference())
    _zip(tmp_path / "in" / "dan.zip", {"a.ipynb": _blank(), "b.ipynb": _blank()})
    _zip(tmp_path / "in" / "eve.zip", {"v1.ipynb": answer, "v2.ipynb": answer})
    found = {s.student: s for s in collect.collect(tmp_path / "in", CHAPTER, tmp_path / "s")}
    for who in ("dan", "eve"):
        assert found[who].problem and "keep one notebook" in found[who].problem


# ---------------------------------------------------------------- zips


def test_a_class_zip_with_a_top_folder_is_unwrapped(tmp_path):
    """A class zip of 'Class Download/<student>...': are the students the students?"""
    inner = tmp_path / "ada.zip"
    _zip(inner, {"hw/masking.ipynb": _blank()})
    download = _zip(
        tmp_path / "class.zip",
        {
            "Class Download/bob.ipynb": _blank(),
            "Class Download/ada.zip": inner.read_bytes(),
            "Class Download/grace/masking.ipynb": _blank(),
            "__MACOSX/Class Download/._bob.ipynb": b"junk",
        },
    )
    found = collect.collect(download, CHAPTER, tmp_path / "s")
    assert _students(found) == ["ada", "bob", "grace"]


def test_one_students_folder_in_a_zip_stays_one_student(tmp_path):
    """A zip holding only 'ada/masking.ipynb' is ada's, not a student named masking."""
    download = _zip(tmp_path / "one.zip", {"ada/masking.ipynb": _blank()})
    assert _students(collect.collect(download, CHAPTER, tmp_path / "s")) == ["ada"]


def test_a_zip_bomb_is_refused_by_its_ratio(tmp_path):
    """A 20 MiB run of zeros in a zip of a few KiB: is it refused before it is written?"""
    bomb = _zip(tmp_path / "in" / "eve.zip", {"masking.ipynb": b"0" * (20 * 2**20)})
    assert bomb.stat().st_size < 100_000
    (sub,) = collect.collect(tmp_path / "in", CHAPTER, tmp_path / "s")
    assert sub.problem and "to 1" in sub.problem and "zip bomb" in sub.problem
    assert not list((tmp_path / "s").rglob("*.ipynb"))


def test_zip_caps_on_total_size_and_file_count(tmp_path):
    """Are the total-size and file-count caps enforced, and nothing over them kept?"""
    many = _zip(tmp_path / "many.zip", {f"n{i}.ipynb": "{}" for i in range(30)})
    small = collect.ZipLimits(max_total_bytes=10_000, max_files=20)
    with pytest.raises(collect.ZipRefused, match="30 files, more than the 20"):
        collect.extract(many, tmp_path / "a", small)
    big = _zip(tmp_path / "big.zip", {"a.ipynb": bytes(range(256)) * 100})
    with pytest.raises(collect.ZipRefused, match="unpacks to 25 KiB, more than the 20 KiB allowed"):
        collect.extract(big, tmp_path / "b", collect.ZipLimits(max_total_bytes=20_000, max_files=5))
    assert not list((tmp_path / "b").rglob("*.ipynb"))


def test_a_class_zip_bomb_stops_the_run_with_a_message(tmp_path):
    """A class download that is a bomb: a clear refusal, not 500 MiB on the disk."""
    bomb = _zip(tmp_path / "class.zip", {"Class/ada.ipynb": b"0" * (20 * 2**20)})
    with pytest.raises(CourseError, match="cannot unpack .*zip bomb"):
        collect.collect(bomb, CHAPTER, tmp_path / "s")


def test_collect_refuses_a_zip_that_escapes_its_folder(tmp_path):
    """Is a zip with a ../ path reported as a problem instead of being unpacked?"""
    _zip(tmp_path / "in" / "mallory.zip", {"../../escaped.ipynb": _blank()})
    (sub,) = collect.collect(tmp_path / "in", CHAPTER, tmp_path / "s" / "t")
    assert sub.problem and "outside the archive" in sub.problem
    assert not list(tmp_path.rglob("escaped.ipynb"))


def test_only_notebooks_and_zips_are_unpacked(tmp_path):
    """Is the rest of an upload (data, scripts) never written to the disk?"""
    _zip(
        tmp_path / "in" / "ada.zip",
        {"masking.ipynb": _blank(), "data.bin": b"x" * 1000, "checks/hidden/masking.py": "x"},
    )
    (sub,) = collect.collect(tmp_path / "in", CHAPTER, tmp_path / "s")
    written = sorted(p.name for p in (tmp_path / "s").rglob("*") if p.is_file())
    assert written == ["masking.ipynb"] and sub.problem is None


# ---------------------------------------------------------------- the forms of a download


def test_collect_reads_an_nbgrader_exchange_and_keeps_the_latest(tmp_path):
    """From an exchange's inbound/, is each student's latest submission the one collected?"""
    inbound = tmp_path / COURSE_ID / "inbound"
    for stamp in ("2026-11-01 10:00:00.000000 UTC", "2026-11-02 09:00:00.000000 UTC"):
        folder = inbound / f"ada+{CHAPTER}+{stamp}"
        folder.mkdir(parents=True)
        (folder / f"{CHAPTER}.ipynb").write_text(_blank())
    found = collect.collect(tmp_path, None, tmp_path / "scratch")
    assert [(s.student, s.chapter, s.timestamp) for s in found] == [
        ("ada", CHAPTER, "2026-11-02 09:00:00.000000 UTC")
    ]
    # The rule, the file graded and the file set aside, with their times.
    (warning,) = found[0].warnings
    assert "graded the newest by the LMS time" in warning
    assert "(LMS time 2026-11-02 09:00:00), and set aside inbound/ada+masking+2026-11-01" in warning
    assert warning.endswith("(LMS time 2026-11-01 10:00:00)")


def test_a_resubmission_in_a_class_zip_is_chosen_by_its_date(tmp_path):
    """In a class zip holding ada.ipynb and ada/ (a late resubmission), is the newer file, by
    its date in the zip, graded, and the older one named as set aside?"""
    with zipfile.ZipFile(tmp_path / "class.zip", "w") as z:
        old = zipfile.ZipInfo("class/ada.ipynb", date_time=(2026, 11, 1, 10, 0, 0))
        new = zipfile.ZipInfo(f"class/ada/{CHAPTER}.ipynb", date_time=(2026, 11, 3, 8, 0, 0))
        bob = zipfile.ZipInfo("class/bob.ipynb", date_time=(2026, 11, 2, 8, 0, 0))
        for info in (old, new, bob):
            z.writestr(info, _blank())
    found = collect.choose_newest(collect.collect(tmp_path / "class.zip", CHAPTER, tmp_path / "s"))
    collect.check_identities(found)  # no clash left
    ada = next(s for s in found if s.student == "ada")
    assert ada.origin == f"ada/{CHAPTER}.ipynb" and ada.file_time == "2026-11-03T08:00:00"
    assert ada.warnings == [
        f"2 submissions of {CHAPTER}: graded the newest by the zip time, ada/{CHAPTER}.ipynb "
        "(zip time 2026-11-03 08:00:00), and set aside ada.ipynb (zip time 2026-11-01 10:00:00)"
    ]
    assert _students(found) == ["ada", "bob"]


def test_copies_that_cannot_be_ordered_are_refused_with_their_times(tmp_path):
    """A loose notebook (no time) and a zip (a date): no stated rule orders them. Refused?"""
    _flat(tmp_path / "in", ["ada"])
    with zipfile.ZipFile(tmp_path / "in" / "ada.zip", "w") as z:
        z.writestr(zipfile.ZipInfo(f"{CHAPTER}.ipynb", (2026, 11, 3, 8, 0, 0)), _blank())
    found = collect.choose_newest(collect.collect(tmp_path / "in", CHAPTER, tmp_path / "s"))
    assert len(found) == 2
    with pytest.raises(collect.IdentityError) as err:
        collect.check_identities(found)
    assert "'ada.ipynb' (no time)" in str(err.value)
    assert "(zip time 2026-11-03 08:00:00)" in str(err.value)


def test_collect_reads_an_lms_download_of_zips_and_folders(tmp_path):
    """Are one zip per student (nested, with __MACOSX junk) and one folder per student both read?"""
    _zip(
        tmp_path / "in" / "ada_1234.zip",
        {"__MACOSX/._masking.ipynb": "junk", "homework/masking.ipynb": _blank()},
    )
    _flat(tmp_path / "in" / "grace", ["my notebook"])
    found = collect.collect(tmp_path / "in", CHAPTER, tmp_path / "scratch")
    by_student = {s.student: s for s in found}
    assert set(by_student) == {"ada_1234", "grace"}
    assert by_student["ada_1234"].path.name == "masking.ipynb"
    assert by_student["ada_1234"].origin == "ada_1234.zip:homework/masking.ipynb"
    assert all(s.problem is None and not s.warnings for s in found)


def test_a_file_that_is_no_notebook_still_gives_a_row(tmp_path):
    """A PDF handed in instead of a notebook: a submission with a problem, not silence."""
    _flat(tmp_path / "in", ["ada"])
    (tmp_path / "in" / "bob.pdf").write_bytes(b"%PDF-1.4")
    (tmp_path / "in" / ".DS_Store").write_bytes(b"junk")
    found = {s.student: s for s in collect.collect(tmp_path / "in", CHAPTER, tmp_path / "s")}
    assert set(found) == {"ada", "bob"}
    assert found["bob"].problem == "not a notebook or a zip (.pdf)"


def test_collect_reads_nbgrader_layout_and_flat_folders(tmp_path):
    """Are <student>/<chapter>/x.ipynb and a flat <student>.ipynb both collected?"""
    (tmp_path / "layout" / "ada" / CHAPTER).mkdir(parents=True)
    (tmp_path / "layout" / "ada" / CHAPTER / "whatever.ipynb").write_text(_blank())
    _flat(tmp_path / "flat", ["grace"])
    layout = collect.collect(tmp_path / "layout", None, tmp_path / "s1")
    flat = collect.collect(tmp_path / "flat", CHAPTER, tmp_path / "s2")
    assert [(s.student, s.chapter) for s in layout] == [("ada", CHAPTER)]
    assert [(s.student, s.chapter) for s in flat] == [("grace", CHAPTER)]


# ---------------------------------------------------------------- a chapter and a row for each


def _prepared(folder: Path, assignment=None):
    course = Course(folder / "course")
    found = collect.collect(folder / "in", assignment, folder / "s")
    for sub in found:
        collect.prepare(sub, course.infer_chapter_of)
    collect.resolve_chapters(found)
    return {s.student: s for s in found}


def test_an_unreadable_notebook_takes_the_batchs_chapter(tmp_path):
    """Without --assignment, does an invalid notebook still get the class's chapter (a zero row)?"""
    _flat(tmp_path / "in", ["ada"], nbformat.writes(reference()))
    (tmp_path / "in" / "bob.ipynb").write_text("{ not json")
    (tmp_path / "in" / "cid.ipynb").write_bytes(b"")
    subs = _prepared(tmp_path)
    assert subs["ada"].chapter == CHAPTER and subs["ada"].problem is None
    for who in ("bob", "cid"):
        assert subs[who].chapter == CHAPTER and subs[who].problem
        assert "the chapter of the rest of the batch" in subs[who].warnings[0]


def test_a_file_named_after_a_chapter_is_that_chapter(tmp_path):
    """An invalid masking.ipynb in a student's folder, in a mixed batch: is it masking?"""
    (tmp_path / "in" / "bob").mkdir(parents=True)
    (tmp_path / "in" / "bob" / "masking.ipynb").write_text("{ not json")
    subs = _prepared(tmp_path)
    assert subs["bob"].chapter == CHAPTER and subs["bob"].problem.startswith("not a readable")


def test_rows_for_notebooks_without_a_chapter(tmp_path):
    """Does grades.csv get a zero row for a file whose chapter nobody can tell?"""
    grades = tmp_path / "grades.csv"
    grades.write_text(
        "assignment,duedate,timestamp,student_id,last_name,first_name,email,raw_score,"
        "late_submission_penalty,score,max_score\nmasking,,,ada,,,,10.0,0.0,10.0,10.0\n"
    )
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "zed.ipynb").write_text("{ not json")
    subs = _prepared(tmp_path)
    subs["zed"].chapter = None  # as in a batch of several chapters
    assert tables.add_unassigned_rows(grades, list(subs.values())) == 1
    rows = list(csv.DictReader(grades.open()))
    assert [(r["student_id"], r["assignment"], r["score"]) for r in rows] == [
        ("ada", "masking", "10.0"),
        ("zed", "", "0.0"),
    ]
    tables.write_problems(tmp_path / "p" / "problems.csv", [(subs["zed"], "why")], subs.values())
    assert "zed,,zed.ipynb,why" in (tmp_path / "p" / "problems.csv").read_text()


# ---------------------------------------------------------------- end to end (slow)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_every_file_gets_a_row_and_a_reason(tmp_path):
    """A messy class without --assignment: one row per file, zeros and reasons, output folder made."""
    src = tmp_path / "in"
    _flat(src, ["张伟"], nbformat.writes(reference()))
    (src / "李娜.ipynb").write_text("{ not json", encoding="utf-8")
    _zip(
        src / "bob.zip", {"Attempt1.ipynb": _blank(), "masking.ipynb": nbformat.writes(reference())}
    )
    out = tmp_path / "not" / "yet" / "grades.csv"
    course = Course(tmp_path / "course")
    assert course.grade(src, None, out, jobs=2) == 0
    rows = {r["student_id"]: r for r in csv.DictReader(out.open(encoding="utf-8"))}
    assert set(rows) == {"张伟", "李娜", "bob"}
    assert {k: float(r["score"]) for k, r in rows.items()} == {
        "张伟": AUTO_POINTS,
        "李娜": 0.0,
        "bob": AUTO_POINTS,
    }
    problems = list(csv.DictReader((out.parent / "problems.csv").open(encoding="utf-8")))
    reasons = {(p["student_id"], p["problem"].split(" ")[0]) for p in problems}
    assert ("李娜", "not") in reasons  # not a readable notebook
    assert ("bob", "warning:") in reasons  # the draft was left out, and said so
