"""The instructor's commands beyond one grading run: resuming, sharding into
PostgreSQL, feedback, the class summary and the Gradescope bundle."""

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from autograder import notebooks as nbs
from autograder.course import COURSE_ID, Course
from autograder.errors import CourseError
from autograder.grading import batch, jobs
from tests.hostile import (
    AUTO_POINTS,
    CHAPTER,
    SEQUENCE_MASK_CELLS,
    SEQUENCE_MASK_POINTS,
    TEST_CELLS,
    _wrong_sequence_mask,
    reference,
)

ROOT = Path(__file__).resolve().parent.parent
# Grading runs (the slow tests) take minutes; a hang still fails with a traceback.
pytestmark = pytest.mark.timeout(600)


def auto_score(db_url, student, chapter=CHAPTER):
    with Gradebook(db_url, course_id=COURSE_ID) as gb:
        sub = gb.find_submission(chapter, student)
        return sum(
            g.score or 0
            for nb in sub.notebooks
            for g in nb.grades
            if g.max_score and g.cell.cell_type == "code"
        )


# ---------------------------------------------------------------- sanitizing (fast)
# Collecting (zips, identities, rows) is tested in tests/grading/test_collect.py.


def test_a_duplicated_answer_cell_keeps_metadata_on_the_last_copy():
    """Does sanitizing leave exactly one cell per grade_id, the last copy?"""
    nb = reference()
    cell = next(c for c in nb.cells if nbs.nbgrader_meta(c).get("grade_id") == "sequence_mask")
    copy = nbformat.from_dict(json.loads(json.dumps(cell)))
    copy.source = "# an earlier copy"
    nb.cells.insert(nb.cells.index(cell), copy)
    ids = [nbs.nbgrader_meta(c).get("grade_id") for c in jobs.sanitized(nb).cells]
    assert ids.count("sequence_mask") == 1
    assert "nbgrader" not in copy.metadata


# A stand-in for autograder/grading/worker.py: ready at once; for the student "burner" it spends CPU
# time without end (as reading padded answers did), for anyone else it answers at once.
FAKE_WORKER = """
import json, os, sys
print(json.dumps({"ready": os.getpid()}), flush=True)
for line in sys.stdin:
    job = json.loads(line)
    while job["student"] == "burner":
        pass
    print(json.dumps({"job": job["job"], "success": False, "error": "done", "cpu": 0.0}), flush=True)
"""


def test_a_worker_over_its_cpu_limit_is_stopped_and_the_batch_goes_on(tmp_path, monkeypatch):
    """A notebook that costs the grader's worker its CPU limit: is the worker stopped at the
    limit, the notebook reported, and the next notebook graded by a fresh worker?"""
    from tqdm import tqdm

    from autograder.grading import pool
    from autograder.grading.collect import Submission

    script = tmp_path / "worker.py"
    script.write_text(FAKE_WORKER)
    monkeypatch.setattr(pool, "WORKER", script)
    nb = tmp_path / "nb.ipynb"
    nbformat.write(reference(), nb)
    subs = [Submission(name, CHAPTER, nb, f"{name}.ipynb") for name in ("burner", "honest")]
    template = tmp_path / "template.db"
    template.write_bytes(b"")
    recorded = {}

    class Ledger:
        def record(self, sub, scores, outcome):
            recorded[sub.student] = outcome

    settings = batch.Settings(jobs=1, grader_cpu_seconds=2, sandbox=False)
    stats = {"graded": 0, "problems": 0, "failed": []}
    start = time.monotonic()
    batch._grade_in_parallel(
        tmp_path / "course",
        Ledger(),
        subs,
        {CHAPTER: template},
        {CHAPTER: {f"{CHAPTER}.ipynb": nb.read_bytes()}},
        settings,
        stats,
        tqdm,
    )
    assert time.monotonic() - start < 60
    assert "more than 2 s of its own CPU time" in recorded["burner"]
    assert recorded["honest"] == "nbgrader could not grade it: done"  # the fake's answer
    assert stats["problems"] == 2
    assert not list((tmp_path / "course" / ".grading" / "jobs").iterdir())  # cleaned up


# ---------------------------------------------------------------- grading end to end (slow)


def _class(folder: Path, n_right: int, n_wrong: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n_right):
        nbformat.write(reference(), folder / f"right{i}.ipynb")
    for i in range(n_wrong):
        nbformat.write(_wrong_sequence_mask(reference()), folder / f"wrong{i}.ipynb")


@pytest.fixture(scope="module")
def small_class(tmp_path_factory, released_copy):
    tmp = tmp_path_factory.mktemp("instructor")
    _class(tmp / "subs", 1, 1)
    course = released_copy(tmp / "course", [CHAPTER])  # the slow tier's one release of it
    assert course.grade(tmp / "subs", CHAPTER, tmp / "grades.csv", jobs=2) == 0
    return course, tmp


@pytest.mark.slow
def test_feedback_never_shows_hidden_test_code(small_class):
    """Does each feedback page show results and messages but no hidden test code or check files?"""
    from autograder.results.reports import feedback

    course, _ = small_class
    pages = feedback(course, CHAPTER)
    assert {p.parent.parent.name for p in pages} == {"right0", "wrong0"}
    html = (course.root / "feedback" / "wrong0" / CHAPTER / f"{CHAPTER}.html").read_text()
    hidden_source = (ROOT / "checks" / "hidden" / "masking.py").read_text()
    assert "BEGIN HIDDEN TESTS" not in html and "run_hidden" not in html
    assert "def loop_sequence_mask" in hidden_source and "loop_sequence_mask" not in html
    assert "CheckError" in html and "checks in" in html  # the failure message is there
    assert [p.name for p in (course.root / "feedback" / "wrong0" / CHAPTER).iterdir()] == [
        f"{CHAPTER}.html"
    ]


@pytest.mark.slow
def test_summary_puts_the_most_failed_exercise_first(small_class):
    """Does the summary rank exercises by mean score, with a CSV and a plot?"""
    from autograder.results.reports import summary

    course, tmp = small_class
    rows = summary(course, CHAPTER, tmp / "new" / "summary.csv", tmp / "new" / "summary.png")
    hand = [r for r in rows if r["graded_by"] == "hand"]
    assert hand and all(r["to_grade_by_hand"] == r["submissions"] for r in hand)
    rows = [r for r in rows if r["graded_by"] == "autograder"]
    worst = [r["exercise"] for r in rows if r["mean_percent"] == 50.0]
    assert sorted(worst) == sorted(SEQUENCE_MASK_CELLS)  # wrong0 fails exactly these
    assert [r["exercise"] for r in rows[: len(worst)]] == worst
    assert all(r["mean_percent"] == 100.0 for r in rows[len(worst) :])
    assert (tmp / "new" / "summary.png").stat().st_size > 1000
    assert (tmp / "new" / "summary.csv").read_text().startswith("assignment,exercise")


@pytest.mark.slow
def test_manual_scores_survive_a_regrade(small_class):
    """After a grader scored a written answer by hand, does a forced regrade keep that score?"""
    course, tmp = small_class
    written = next(
        nbs.nbgrader_meta(c)["grade_id"]
        for c in reference().cells
        if c.cell_type == "markdown" and nbs.nbgrader_meta(c).get("grade")
    )
    with Gradebook(course.db_url, course_id=COURSE_ID) as gb:
        grade = gb.find_grade(written, CHAPTER, CHAPTER, "right0")
        grade.manual_score = 1.5
        gb.db.commit()
    assert course.grade(tmp / "subs", CHAPTER, tmp / "regrade.csv", jobs=2, force=True) == 0
    assert course.last_stats["graded"] == 2  # both really graded again
    with Gradebook(course.db_url, course_id=COURSE_ID) as gb:
        assert gb.find_grade(written, CHAPTER, CHAPTER, "right0").manual_score == 1.5
        assert gb.find_grade(written, CHAPTER, CHAPTER, "wrong0").manual_score is None
    assert auto_score(course.db_url, "right0") == AUTO_POINTS
    assert auto_score(course.db_url, "wrong0") == AUTO_POINTS - SEQUENCE_MASK_POINTS


@pytest.mark.slow
def test_an_interrupted_run_resumes_without_regrading_or_losing(tmp_path, released_copy):
    """Killed mid-run and restarted, is every submission graded exactly once, none lost?

    Three students, graded one at a time (-j 1) in name order: the run is killed once the
    first is recorded, while the second is being graded and the third waits. The restart
    must skip the first, and grade the one it interrupted and the one it never started."""
    _class(tmp_path / "subs", 2, 1)  # right0, right1, wrong0
    course_dir = tmp_path / "course"
    released_copy(course_dir, [CHAPTER])  # the slow tier's one release of it
    cmd = [
        sys.executable,
        "-m",
        "autograder",
        "grade",
        str(tmp_path / "subs"),
        "--assignment",
        CHAPTER,
        "--course-dir",
        str(course_dir),
        "--output",
        str(tmp_path / "g.csv"),
        "-j",
        "1",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    log = open(tmp_path / "first-run.log", "wb")
    proc = subprocess.Popen(
        cmd, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    db = course_dir / "gradebook.db"
    deadline = time.monotonic() + 300
    graded_before = 0
    while time.monotonic() < deadline and proc.poll() is None:
        try:  # read-only, so as not to touch the grader's database
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
                graded_before = con.execute("SELECT COUNT(*) FROM attention_graded").fetchone()[0]
        except sqlite3.Error:
            graded_before = 0
        if graded_before >= 1:
            break
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)  # the grader and its workers, as a crash would
    proc.wait()
    log.close()
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:  # what the killed run left
        done = con.execute("SELECT COUNT(*) FROM attention_graded").fetchone()[0]
    assert 1 <= graded_before <= done < 3, (tmp_path / "first-run.log").read_text()[-3000:]
    out = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"graded {3 - done}, problems 0, skipped {done} " in out.stdout, out.stdout
    ledger = batch.Ledger(f"sqlite:///{db}", COURSE_ID)
    try:
        assert len(ledger.graded()) == 3
    finally:
        ledger.close()
    for i in range(2):
        assert auto_score(f"sqlite:///{db}", f"right{i}") == AUTO_POINTS
    assert auto_score(f"sqlite:///{db}", "wrong0") == AUTO_POINTS - SEQUENCE_MASK_POINTS


# ---------------------------------------------------------------- PostgreSQL (slow)


PG_SECRET = "pw-7f3a9c-never-in-a-file"


def test_a_gradebook_password_never_lands_in_the_course_folder(tmp_path, monkeypatch):
    """A password in --db: is it moved to PGPASSWORD and kept out of nbgrader_config.py?"""
    monkeypatch.delenv("PGPASSWORD", raising=False)
    course = Course(tmp_path, db_url=f"postgresql+psycopg://grader:{PG_SECRET}@db.example/gb")
    course.write_config()
    config = (tmp_path / "nbgrader_config.py").read_text()
    assert PG_SECRET not in config and PG_SECRET not in course.db_url
    assert "postgresql+psycopg://grader@db.example/gb" in config
    assert os.environ["PGPASSWORD"] == PG_SECRET
    with pytest.raises(CourseError, match="two different passwords"):
        Course(tmp_path, db_url="postgresql+psycopg://grader:other@db.example/gb")


def _postgres_bin() -> Path | None:
    """Debian's PostgreSQL server binaries (`make system` installs the package)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return found[-1].parent if found else None


@pytest.fixture(scope="module")
def postgres():
    bindir = _postgres_bin()
    if bindir is None:
        pytest.skip(
            "no PostgreSQL server: /usr/lib/postgresql/*/bin/initdb is missing "
            "(`make system` installs Debian's postgresql)"
        )
    runas = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    data = Path(tempfile.mkdtemp(prefix="pg-"))
    data.chmod(0o777)
    if runas:
        shutil.chown(data, "postgres")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    subprocess.run(
        [
            *runas,
            str(bindir / "initdb"),
            "-D",
            str(data / "db"),
            "--auth-local=trust",  # the fixture's own psql, over the socket
            "--auth-host=scram-sha-256",  # the grader, over TCP: the password is checked
            "-U",
            "postgres",
        ],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            *runas,
            str(bindir / "pg_ctl"),
            "-D",
            str(data / "db"),
            "-w",
            "-l",
            str(data / "log"),
            "-o",
            f"-p {port} -k {data} -c listen_addresses=127.0.0.1",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    try:
        subprocess.run(
            [str(bindir / "psql"), "-h", str(data), "-p", str(port), "-U", "postgres"],
            input=f"CREATE DATABASE gradebook;\nALTER USER postgres PASSWORD '{PG_SECRET}';\n",
            check=True,
            capture_output=True,
            text=True,
        )
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/gradebook"
    finally:
        subprocess.run(
            [*runas, str(bindir / "pg_ctl"), "-D", str(data / "db"), "-m", "fast", "stop"],
            capture_output=True,
        )
        shutil.rmtree(data, ignore_errors=True)


SNOOP = """\
import os, pathlib
found = [os.environ.get("PGPASSWORD"), os.environ.get("PGPASSFILE")]
for path in [pathlib.Path.home() / ".pgpass", *map(pathlib.Path, {configs!r})]:
    try:
        found.append(path.read_text()[:2000])
    except Exception as err:
        found.append(type(err).__name__)
print("SNOOPED", found)
"""


@pytest.mark.slow
def test_two_shards_grade_into_one_postgresql_gradebook(postgres, tmp_path, monkeypatch):
    """Do two machines' shards (--shard 1/2, 2/2) fill one password-protected PostgreSQL
    gradebook, each once, with the password from PGPASSWORD only: in no file of the
    course folders, and not where a submission's kernel looks for it?

    Two students, one for each shard (name order: snoop, then wrong0): snoop, the reference
    with a cell that looks for the password, and a wrong answer."""
    monkeypatch.setenv("PGPASSWORD", PG_SECRET)
    _class(tmp_path / "subs", 0, 1)
    snoop = reference()
    configs = [str(tmp_path / f"machine{i}" / "nbgrader_config.py") for i in (1, 2)]
    snoop.cells.append(nbformat.v4.new_code_cell(SNOOP.format(configs=configs)))
    nbformat.write(snoop, tmp_path / "subs" / "snoop.ipynb")
    graded = []
    for i in (1, 2):  # two "machines": separate course folders, one database
        course = Course(tmp_path / f"machine{i}", db_url=postgres)
        assert (
            course.grade(tmp_path / "subs", CHAPTER, tmp_path / f"g{i}.csv", jobs=1, shard=f"{i}/2")
            == 0
        )
        graded.append(course.last_stats["graded"])
    assert graded == [1, 1]  # each machine its own shard, none graded twice
    ledger = batch.Ledger(postgres, COURSE_ID)
    try:
        assert len(ledger.graded()) == 2
    finally:
        ledger.close()
    assert auto_score(postgres, "wrong0") == AUTO_POINTS - SEQUENCE_MASK_POINTS
    assert auto_score(postgres, "snoop") == AUTO_POINTS
    rows = (tmp_path / "g2.csv").read_text().splitlines()
    assert len(rows) == 3  # the header and both students, from the shared database
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert PG_SECRET.encode() not in path.read_bytes(), path
    # what it printed is kept for the instructor only (never in the autograded notebook)
    (snooped,) = tmp_path.glob("machine*/.grading/outputs/snoop/masking.ipynb")
    assert "SNOOPED [None, None" in snooped.read_text()  # the cell ran, and found nothing


# ---------------------------------------------------------------- Gradescope (slow)


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind, expected_score",
    [("wrong", AUTO_POINTS - SEQUENCE_MASK_POINTS), ("missing", 0.0), ("empty", 0.0)],
)
def test_gradescope_bundle_writes_results_json(small_class, tmp_path, kind, expected_score):
    """Does run_autograder, pointed at a fake /autograder (AUTOGRADER_ROOT), grade a wrong,
    a missing and an empty submission? (tests/gradescope/test_bundle.py runs the bundle exactly as
    Gradescope does, for a perfect and an untouched one.)"""
    from autograder.gradescope.bundle import build

    course, _ = small_class
    bundle = build(course, CHAPTER, tmp_path / "bundle.zip")
    root = tmp_path / "autograder"
    with zipfile.ZipFile(bundle) as z:
        z.extractall(root / "source")
    for name in ("run_autograder", "setup.sh"):
        (root / "source" / name).chmod(0o755)
    (root / "submission").mkdir()
    if kind == "wrong":  # renamed, next to a draft: the one with the graded cells is graded
        nbformat.write(_wrong_sequence_mask(reference()), root / "submission" / "renamed.ipynb")
        nbformat.write(nbformat.v4.new_notebook(), root / "submission" / "Attempt1.ipynb")
    elif kind == "empty":
        (root / "submission" / f"{CHAPTER}.ipynb").write_bytes(b"")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(AUTOGRADER_ROOT=str(root), PYTHON=sys.executable)
    run = subprocess.run(
        [str(root / "source" / "run_autograder")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == expected_score
    assert {"score", "output", "visibility", "tests"} <= results.keys()
    names = [t["name"] for t in results["tests"]]
    assert names == list(TEST_CELLS)
    for test in results["tests"]:
        assert {"name", "score", "max_score", "status", "output", "visibility"} <= test.keys()
        hidden = TEST_CELLS[test["name"]][1]
        assert test["visibility"] == ("after_published" if hidden else "visible")
        assert "run_hidden" not in test["output"]
    if kind in ("missing", "empty"):  # said as the feedback page says it, to the student
        said = {"missing": "Your upload held no notebook.", "empty": "is empty."}[kind]
        assert said in results["output"] and "Every test scored 0." in results["output"]
    if kind == "wrong":
        assert (
            "Note: 2 notebooks (Attempt1.ipynb, renamed.ipynb): graded renamed.ipynb"
            in (results["output"])
        )
