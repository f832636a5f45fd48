"""Job folders (autograder.grading.jobs): what comes back from a job, and a submission reconciled
with the gradebook. All fast: no kernel, no nbgrader run."""

import os
import socket
import threading

import nbformat
import pytest
from nbgrader import utils
from nbgrader.nbgraderformat import MetadataValidator

from autograder import notebooks as nbs
from autograder.grading import jobs
from tests.hostile import CHAPTER, reference

# ---------------------------------------------------------------- reading back, writing


def test_a_regular_file_is_read(tmp_path):
    (tmp_path / "a.ipynb").write_bytes(b"{}")
    assert jobs.read_regular(tmp_path / "a.ipynb", 10) == b"{}"


@pytest.mark.parametrize("kind", ["symlink", "fifo", "folder", "socket", "dangling", "big"])
def test_nothing_but_a_regular_file_is_read(tmp_path, kind):
    """A link (to a secret, or to nothing), a FIFO (which would block), a folder, a socket or
    an oversized file where a file is read back: refused, without blocking or following."""
    (tmp_path / "secret").write_text("secret")
    path = tmp_path / "masking.ipynb"
    if kind == "symlink":
        path.symlink_to(tmp_path / "secret")
    elif kind == "dangling":
        path.symlink_to(tmp_path / "nowhere")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
        s.close()
    else:
        path.write_bytes(b"x" * 101)
    with pytest.raises(OSError):
        jobs.read_regular(path, 100)


def test_a_name_swapped_for_a_fifo_after_the_check_does_not_block(tmp_path):
    """The file checked is not the one opened (a swap between check and use): is the open
    itself what refuses the FIFO, at once?"""
    path = tmp_path / "masking.ipynb"
    os.mkfifo(path)
    done = threading.Event()

    def read():
        try:
            jobs.read_regular(path, 100)
        except OSError:
            pass
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(5), "reading a FIFO blocked"


def test_writing_replaces_a_link_never_writes_through_it(tmp_path):
    """A link (or a FIFO) standing where the grader writes: replaced, its target untouched."""
    target = tmp_path / "gradebook.db"
    target.write_bytes(b"SQLite format 3\0")
    link = tmp_path / "out.ipynb"
    link.symlink_to(target)
    jobs.write_private(link, b"{}")
    assert target.read_bytes() == b"SQLite format 3\0"
    assert not link.is_symlink() and link.read_bytes() == b"{}"
    fifo = tmp_path / "fifo.ipynb"
    os.mkfifo(fifo)
    jobs.write_private(fifo, b"{}")
    assert fifo.read_bytes() == b"{}"


def test_copy_back_copies_the_notebook_and_nothing_else(tmp_path):
    src, dest = tmp_path / "src", tmp_path / "dest"
    src.mkdir()
    (src / f"{CHAPTER}.ipynb").write_text("{}")
    (src / "link.ipynb").symlink_to("/etc/passwd")
    os.mkfifo(src / "pipe.ipynb")
    (src / "notes.txt").write_text("x")
    skipped = jobs.copy_back(src, dest)
    assert sorted(p.name for p in dest.iterdir()) == [f"{CHAPTER}.ipynb"]
    assert sorted(skipped) == ["link.ipynb", "pipe.ipynb"]


def test_the_run_folder_holds_the_chapters_files_but_no_notebook(tmp_path):
    """Does the kernel's folder get checks/ and solutions/, and no notebook (the source
    notebook holds the solutions), in the job's folder or in the system's temporary one?"""
    src = tmp_path / "job" / "source" / CHAPTER
    (src / "checks").mkdir(parents=True)
    (src / "checks" / "_core.py").write_text("x")
    (src / "solutions").mkdir()
    (src / "solutions" / "__init__.py").write_text("")
    (src / f"{CHAPTER}.ipynb").write_text("{}")
    inside = jobs.run_folder(tmp_path / "job", CHAPTER)
    outside = jobs.run_folder(tmp_path / "job", CHAPTER, in_place=False)
    try:
        for run in (inside, outside):
            files = sorted(str(p.relative_to(run)) for p in run.rglob("*") if p.is_file())
            assert files == ["checks/_core.py", "solutions/__init__.py"]
        assert inside.parent == tmp_path / "job" and not outside.is_relative_to(tmp_path)
    finally:
        import shutil

        shutil.rmtree(outside)


# ---------------------------------------------------------------- reconciling


def _cells(nb=None) -> list[jobs.GradebookCell]:
    """A chapter's gradebook cells, as generate_assignment records them (no database)."""
    out = []
    for cell in (nb or reference()).cells:
        meta = nbs.nbgrader_meta(cell)
        if not meta.get("grade_id"):
            continue
        out.append(
            jobs.GradebookCell(
                grade_id=meta["grade_id"],
                cell_type=cell.cell_type,
                grade=bool(meta.get("grade")),
                solution=bool(meta.get("solution")),
                locked=bool(meta.get("locked")),
                task=bool(meta.get("task")),
                points=float(meta["points"]) if meta.get("grade") else None,
                source=cell.source,
                checksum=utils.compute_checksum(cell),
            )
        )
    return out


def _ids(nb):
    return [nbs.nbgrader_meta(c).get("grade_id") for c in nb.cells if nbs.nbgrader_meta(c)]


def _valid(nb):
    MetadataValidator().validate_nb(nb)
    nbformat.validate(nb)


def _by_id(nb, gid):
    return next(c for c in nb.cells if nbs.nbgrader_meta(c).get("grade_id") == gid)


def test_an_untouched_notebook_is_left_as_it_is():
    nb, notes = jobs.reconcile(reference(), _cells())
    assert notes == [] and _ids(nb) == [c.grade_id for c in _cells()]
    _valid(nb)


@pytest.mark.parametrize("points", [5, 0])
def test_an_extra_graded_cell_is_ignored_and_reported(points):
    """An extra locked grade cell (from an editor, a copy, a student): a plain cell, reported,
    whatever its points."""
    nb = reference()
    extra = nbformat.v4.new_code_cell("assert True")
    extra.metadata["nbgrader"] = {
        "grade": True,
        "grade_id": "extra",
        "locked": True,
        "points": points,
        "schema_version": 3,
        "solution": False,
    }
    nb.cells.insert(3, extra)
    nb, notes = jobs.reconcile(nb, _cells())
    assert "nbgrader" not in nb.cells[3].metadata
    assert notes == [
        "a cell marked for grading that the course does not have ('extra') was ignored: graded "
        "as a plain cell"
    ]
    _valid(nb)


@pytest.mark.parametrize(
    "deleted",
    [
        ["quiz_2_1", "test_quiz_2_1"],  # nbgrader 0.9.6: KeyError, the whole notebook fails
        ["test_sequence_mask", "hidden_sequence_mask_values"],
        ["sequence_mask", "test_sequence_mask"],
        ["written_masking_empty_rows"],
        ["quiz_2_2"],
    ],
)
def test_deleted_cells_are_put_back_where_they_were(deleted):
    """Deleted cells of the gradebook's, alone or next to each other: every graded cell is
    back, in the course's order, right after the cell before it; a deleted answer that is not
    graded itself stays deleted (its tests fail) and is reported."""
    nb = reference()
    for gid in deleted:
        nb.cells.remove(_by_id(nb, gid))
    nb, notes = jobs.reconcile(nb, _cells())
    expected = [c.grade_id for c in _cells() if c.restorable or c.grade_id not in deleted]
    assert _ids(nb) == expected
    assert len(notes) == len(deleted)
    for gid in deleted:
        assert any(repr(gid) in n for n in notes)
    _valid(nb)


def test_a_restored_test_follows_its_answer():
    nb = reference()
    nb.cells.remove(_by_id(nb, "test_masked_softmax"))
    nb, _ = jobs.reconcile(nb, _cells())
    index = nb.cells.index(_by_id(nb, "masked_softmax"))
    assert nbs.nbgrader_meta(nb.cells[index + 1])["grade_id"] == "test_masked_softmax"


def test_the_gradebooks_metadata_replaces_the_submissions():
    """Changed checksums, schema versions and points, cell ids renumbered (some invalid,
    some repeated): the gradebook's metadata, valid unique ids, and the answers unchanged."""
    nb = reference()
    for i, cell in enumerate(nb.cells):
        cell["id"] = "same" if i % 3 == 0 else f"bad id {i}!"
        meta = cell.metadata.get("nbgrader")
        if meta:
            meta.update(checksum="0" * 32, schema_version=1, points=99)
    nb, notes = jobs.reconcile(nb, _cells())
    assert notes == []
    ids = [c["id"] for c in nb.cells]
    assert len(set(ids)) == len(ids) and all(jobs.CELL_ID.match(i) for i in ids)
    for gc in _cells():
        meta = _by_id(nb, gc.grade_id).metadata["nbgrader"]
        assert meta["checksum"] == gc.checksum and meta["schema_version"] == 3
        assert meta.get("points") == gc.points
    assert _by_id(nb, "sequence_mask").source == _by_id(reference(), "sequence_mask").source
    _valid(nb)


def test_a_duplicated_cell_keeps_its_metadata_on_the_last_copy():
    nb = reference()
    cell = _by_id(nb, "sequence_mask")
    copy = nbformat.reads(nbformat.writes(nb), 4).cells[nb.cells.index(cell)]
    copy.source = "# an earlier copy"
    nb.cells.insert(nb.cells.index(cell), copy)
    nb, _ = jobs.reconcile(nb, _cells())
    assert _ids(nb).count("sequence_mask") == 1
    assert "nbgrader" not in nb.cells[nb.cells.index(cell) - 1].metadata
    _valid(nb)


@pytest.mark.parametrize("chapter", nbs.chapter_names())
def test_every_chapters_own_notebook_reconciles_unchanged(chapter):
    """Does every chapter's notebook, as the book has it, pass reconciling with no change to
    report, and stay valid for nbgrader?"""
    nb = nbs.read(nbs.notebook_path(chapter))
    before = _ids(nb)
    nb, notes = jobs.reconcile(nb, _cells(nbs.read(nbs.notebook_path(chapter))))
    assert notes == [] and _ids(nb) == before
    _valid(nb)
