"""An nbgrader course directory built from the book: release and grade.

Layout of the course directory (``_course/`` by default), as nbgrader expects::

    nbgrader_config.py
    gradebook.db
    source/<chapter>/<chapter>.ipynb   + checks/ (visible and hidden) + solutions/ (earlier chapters)
    release/<chapter>/<chapter>.ipynb  + checks/ (visible only)      + solutions/ (earlier chapters)
    submitted/<student>/<chapter>/<chapter>.ipynb
    autograded/<student>/<chapter>/...

``autograde`` copies every non-notebook file of ``source/<chapter>/`` into the
folder where it runs a submission, over whatever the student sent. So the
grader always runs its own ``checks`` (hidden ones included), never a copy the
student edited, and the kernel sees only the ``solutions`` modules of earlier
chapters, never the answers to the chapter being graded.
"""

from __future__ import annotations

import csv
import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

from autograder import notebooks as nbs

COURSE_ID = "attention-step-by-step"
CONFIG = """\
# Written by `python -m autograder`; edits are overwritten.
c = get_config()  # noqa: F821
c.CourseDirectory.root = {root!r}
c.CourseDirectory.course_id = {course_id!r}
# Students' notebooks may name another kernel; always grade with this environment's.
c.Execute.kernel_name = "python3"
c.Execute.timeout = {timeout}
c.Execute.allow_errors = True
c.Execute.interrupt_on_timeout = True
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
"""
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints")


class GradingError(RuntimeError):
    pass


class Course:
    def __init__(self, root: Path = Path("_course"), *, timeout: int = 60):
        self.root = Path(root).resolve()
        self.timeout = timeout

    # ------------------------------------------------------------ nbgrader
    def _write_config(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        text = CONFIG.format(root=str(self.root), course_id=COURSE_ID, timeout=self.timeout)
        (self.root / "nbgrader_config.py").write_text(text)

    def nbgrader(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """Run an nbgrader command in the course directory, without the repository on the path."""
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env["MPLBACKEND"] = "agg"
        # nbgrader runs `alembic` (gradebook migrations) from PATH: use this environment's.
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        result = subprocess.run(
            [sys.executable, "-m", "nbgrader", *args],
            cwd=self.root,
            env=env,
            capture_output=True,
            text=True,
        )
        if check and result.returncode != 0:
            raise GradingError(
                f"nbgrader {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
            )
        return result

    # ------------------------------------------------------------ release
    def stage_source(self, chapter: str) -> Path:
        """Write ``source/<chapter>/``: the notebook, all checks, earlier chapters' solutions."""
        notebook = nbs.notebook_path(chapter)
        src = self.root / "source" / chapter
        if src.exists():
            shutil.rmtree(src)
        src.mkdir(parents=True)
        nb = nbs.read(notebook)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.source = nbs.strip_lines(cell.source, lambda s: bool(nbs.SAVE_LINE.match(s)))
        nbformat.write(nb, src / notebook.name)
        shutil.copytree(nbs.ROOT / "checks", src / "checks", ignore=IGNORE)
        self._stage_solutions(chapter, src / "solutions")
        return src

    def _stage_solutions(self, chapter: str, dest: Path) -> None:
        """Copy the generated modules of the chapters before ``chapter``."""
        from solutions import SOURCES

        order = nbs.chapter_names()
        earlier = set(order[: order.index(chapter)])
        modules = [m for m, source in SOURCES.items() if source in earlier]
        dest.mkdir()
        listing = ", ".join(modules) or "none yet"
        (dest / "__init__.py").write_text(
            f'"""Course modules from the chapters before {chapter}: {listing}."""\n'
        )
        for module in modules:
            shutil.copy(nbs.ROOT / "solutions" / f"{module}.py", dest / f"{module}.py")

    def release(self, chapters: list[str] | None = None) -> list[Path]:
        """Generate the student notebooks of ``chapters`` (default: all) with nbgrader."""
        self._write_config()
        released = []
        for chapter in chapters or nbs.chapter_names():
            self.stage_source(chapter)
            self.nbgrader("generate_assignment", chapter, "--force")
            out = self.root / "release" / chapter
            shutil.rmtree(out / "checks" / "hidden", ignore_errors=True)
            self._verify_release(out / f"{chapter}.ipynb")
            released.append(out)
            print(f"released {chapter}: {out}")
        return released

    @staticmethod
    def _verify_release(path: Path) -> None:
        text = path.read_text()
        for marker in (*nbs.SOLUTION_MARKERS, *nbs.HIDDEN_MARKERS, "run_hidden"):
            if marker in text:
                raise GradingError(f"{path} still contains {marker!r}")

    # ------------------------------------------------------------ grading
    @functools.cache  # noqa: B019  (a Course lives for one command)
    def grade_ids(self, chapter: str) -> frozenset[str]:
        """grade_ids of the chapter's graded cells, read once per chapter."""
        return frozenset(
            {
                nbs.nbgrader_meta(c)["grade_id"]
                for c in nbs.read(nbs.notebook_path(chapter)).cells
                if nbs.nbgrader_meta(c).get("grade_id")
            }
        )

    def infer_chapter(self, path: Path) -> str | None:
        """The chapter whose graded cells a submitted notebook shares most, if any."""
        try:
            nb = json.loads(path.read_text())
            ids = {c.get("metadata", {}).get("nbgrader", {}).get("grade_id") for c in nb["cells"]}
        except (ValueError, KeyError, TypeError, AttributeError):
            return None
        best = max(nbs.chapter_names(), key=lambda ch: len(ids & self.grade_ids(ch)))
        return best if ids & self.grade_ids(best) else None

    def collect(self, submissions: Path, assignment: str | None) -> list[tuple[str, str, Path]]:
        """(student, chapter, notebook) for a flat folder or an nbgrader ``submitted`` layout."""
        submissions = Path(submissions)
        if not submissions.is_dir():
            raise SystemExit(f"{submissions} is not a folder of submissions")
        found = []
        flat = sorted(submissions.glob("*.ipynb"))
        if flat:
            for path in flat:
                chapter = assignment or self.infer_chapter(path)
                if chapter is None:
                    print(
                        f"skipped {path.name}: cannot tell which chapter it answers "
                        "(not a notebook of this course?); pass --assignment",
                        file=sys.stderr,
                    )
                    continue
                found.append((path.stem, chapter, path))
            return found
        for student_dir in sorted(p for p in submissions.iterdir() if p.is_dir()):
            for chapter_dir in sorted(p for p in student_dir.iterdir() if p.is_dir()):
                if assignment and chapter_dir.name != assignment:
                    continue
                notebooks = sorted(chapter_dir.glob("*.ipynb"))
                if notebooks:
                    found.append((student_dir.name, chapter_dir.name, notebooks[0]))
        return found

    def grade(self, submissions: Path, assignment: str | None, output: Path) -> int:
        entries = self.collect(submissions, assignment)
        if not entries:
            print(f"no submissions found in {submissions}", file=sys.stderr)
            return 1
        chapters = sorted({chapter for _, chapter, _ in entries})
        unknown = set(chapters) - set(nbs.chapter_names())
        if unknown:
            raise SystemExit(f"unknown chapter(s): {', '.join(sorted(unknown))}")
        self._write_config()
        missing = [ch for ch in chapters if not (self.root / "release" / ch).is_dir()]
        if missing:
            self.release(missing)
        for student, chapter, path in entries:
            dest = self.root / "submitted" / student / chapter
            dest.mkdir(parents=True, exist_ok=True)
            # Only the notebook travels: a student's own checks/ or solutions/ never reach the grader.
            shutil.copyfile(path, dest / f"{chapter}.ipynb")
        for chapter in chapters:
            students = {s for s, ch, _ in entries if ch == chapter}
            others = sorted(
                p.name
                for p in (self.root / "submitted").iterdir()
                if (p / chapter).is_dir() and p.name not in students
            )
            # One nbgrader process grades every student of this run; the others are left alone.
            args = ["autograde", chapter, "--force"]
            if others:
                args.append(f"--CourseDirectory.student_id_exclude={','.join(others)}")
            result = self.nbgrader(*args, check=False)
            if result.returncode != 0:
                print(
                    f"nbgrader reported errors for {chapter}:\n{result.stderr[-3000:]}",
                    file=sys.stderr,
                )
        output = Path(output).resolve()
        self.nbgrader("export", f"--to={output}")
        self._print_summary(output, {(s, ch) for s, ch, _ in entries})
        return 0

    @staticmethod
    def _print_summary(path: Path, graded: set[tuple[str, str]]) -> None:
        with open(path, newline="") as f:
            rows = [r for r in csv.DictReader(f) if (r["student_id"], r["assignment"]) in graded]
        print(f"wrote {path}")
        for row in rows:
            score, top = float(row["score"]), float(row["max_score"])
            print(f"  {row['student_id']:<24} {row['assignment']:<20} {score:5.1f} / {top:.1f}")
