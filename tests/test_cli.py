"""The command line (autograder/cli.py) and its launcher (autograder/attention-course.sh):
a command that runs without an activated environment, and outputs under the course folder."""

import shutil
import subprocess
import sys
from pathlib import Path

from autograder import cli
from autograder.course import Course

ROOT = Path(__file__).resolve().parent.parent


def test_the_launcher_runs_from_any_folder_without_activating(tmp_path):
    """Does .venv/bin/attention-course (as `make install` writes it) find the clone and its
    Python with no activated environment, no PYTHONPATH and another working folder?"""
    clone = tmp_path / "clone"
    clone.mkdir()
    for entry in ROOT.iterdir():  # a clone of the tree, with a .venv of its own
        if entry.name not in {".venv", ".git"}:
            (clone / entry.name).symlink_to(entry)
    bin_dir = clone / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").symlink_to(sys.executable)
    shutil.copy(ROOT / "autograder" / "attention-course.sh", bin_dir / "attention-course")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    result = subprocess.run(
        [str(bin_dir / "attention-course"), "--help"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "usage: attention-course" in result.stdout and "formgrader" in result.stdout
    assert not list(elsewhere.iterdir())


def test_the_makefile_installs_the_launcher():
    makefile = (ROOT / "Makefile").read_text()
    assert "$(BIN)/attention-course: autograder/attention-course.sh" in makefile
    assert "install: $(VENV)/.installed $(BIN)/attention-course" in makefile


def test_grade_writes_under_the_course_folder_by_default(tmp_path, monkeypatch):
    """Do grades.csv (and problems.csv beside it) default to the course folder, not the
    working folder?"""
    seen = {}

    def grade(self, submissions, assignment, output, **kwargs):
        seen.update(output=output, problems=kwargs["problems"])
        return 0

    monkeypatch.setattr(Course, "grade", grade)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["grade", "subs", "--course-dir", "course"]) == 0
    assert seen["output"] == (tmp_path / "course" / "grades.csv")
    assert seen["problems"] is None  # Course.grade puts it beside grades.csv


def test_summary_writes_under_the_course_folder_by_default(tmp_path, monkeypatch):
    seen = {}

    def summary(course, chapter, out_csv, out_png):
        seen.update(csv=out_csv, png=out_png)
        return [{}]

    import autograder.results.reports

    monkeypatch.setattr(autograder.results.reports, "summary", summary)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["summary", "--course-dir", "c"]) == 0
    assert seen == {"csv": tmp_path / "c" / "summary.csv", "png": tmp_path / "c" / "summary.png"}


def test_gitignore_covers_what_commands_leave_behind():
    """Are the outputs a command may leave in a clone (run from its root with an old habit, or
    `pip install .`'s build folders) ignored by git?"""
    names = ["problems.csv", "summary.csv", "summary.png", "grades.csv", "build/x", "a.egg-info/x"]
    result = subprocess.run(
        ["git", "check-ignore", "--no-index", *names],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert sorted(result.stdout.split()) == sorted(names)


def test_python_m_autograder_is_the_command_line(tmp_path):
    """Does ``python -m autograder`` (what the Makefile runs) run cli.main, with its status?"""
    run = [sys.executable, "-m", "autograder"]
    result = subprocess.run([*run, "--help"], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0 and "usage: attention-course" in result.stdout
    argv = [*run, "release", "no_such_chapter", "--course-dir", str(tmp_path / "c")]
    result = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 1 and result.stderr.startswith("no chapter named 'no_such_chapter'")


def test_a_problem_the_user_can_fix_is_one_message_and_status_1(tmp_path, capsys):
    """An unknown chapter, an output folder that cannot be made: the library raises CourseError,
    and the command line alone turns it into its message on stderr (no traceback) and exit
    status 1."""
    argv = ["release", "masking", "no_such_chapter", "--course-dir", str(tmp_path / "c")]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("no chapter named 'no_such_chapter'; the chapters are: "), err
    assert "masking" in err
    assert "Traceback" not in err
    assert not (tmp_path / "c").exists()  # nothing written, not even for the known chapter
    (tmp_path / "a-file").write_text("")
    output = tmp_path / "a-file" / "grades.csv"  # its folder cannot be made
    argv = ["grade", str(tmp_path), "--course-dir", str(tmp_path / "c"), "--output", str(output)]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"cannot write the results into {output.parent}: "), err
    assert "Traceback" not in err


def test_library_code_never_exits():
    """Only the command line decides an exit status: no module of autograder/ raises SystemExit
    or calls sys.exit outside an entry point (``__main__.py``, ``if __name__ == "__main__"``);
    a typed error, autograder.errors.CourseError, says what went wrong."""
    import ast

    def entry_point(node) -> bool:  # `if __name__ == "__main__":`, a script's own exit
        test = node.test if isinstance(node, ast.If) else None
        return isinstance(test, ast.Compare) and getattr(test.left, "id", "") == "__name__"

    offenders = []
    for path in sorted((ROOT / "autograder").rglob("*.py")):
        if path.name == "__main__.py":
            continue
        tree = ast.parse(path.read_text())
        tree.body = [n for n in tree.body if not entry_point(n)]
        for node in ast.walk(tree):
            name = ""
            if isinstance(node, ast.Raise) and node.exc is not None:
                target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                name = getattr(target, "id", "")
            elif isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Attribute) and func.attr == "exit":
                    name = f"{getattr(func.value, 'id', '')}.exit"
            if name in ("SystemExit", "sys.exit"):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}")
    assert not offenders, offenders
