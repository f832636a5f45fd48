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

Why one module: :class:`Course` is the course folder above, and its release and its grading
are two halves of one layout: :meth:`Course.grade` releases a chapter it finds missing,
autograde copies ``source/<chapter>/`` as :meth:`Course.stage_source` wrote it, and both go
through one gradebook URL, its password moved out once by :func:`without_password`.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat

from autograder import notebooks as nbs
from autograder.book import launch, questions
from autograder.config import COURSE_ID, LIMITS, config_file, nbgrader_config
from autograder.errors import CourseError
from autograder.grading.ledger import venv_on_path

IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints")


SETUP_NOTE = """\
# {title}: how to run this chapter

Open `{chapter}.ipynb` in Jupyter (JupyterLab, Notebook, VS Code) from this folder and
run the cells from the top. The folders beside it are part of the exercise: `checks/`
(the self-checks your answers must pass) and `solutions/` (modules of the earlier
chapters that this one imports). Keep them next to the notebook, and submit only the
notebook.

The notebook needs Python 3.11 or later with PyTorch, matplotlib and tqdm. On a laptop:

    python -m pip install torch matplotlib tqdm jupyterlab
    jupyter lab {chapter}.ipynb

In Colab, or anywhere the folders are missing, the notebook's first cell installs the
course itself (`pip install "{requirement}"`).
"""


def setup_note(chapter: str, lang: str = "en") -> str:
    """The README.md of a released chapter folder: what it holds and how to run it."""
    from autograder.book.i18n_stage import translate_chapter
    from autograder.i18n import gettext

    path = nbs.notebook_path(chapter)
    page = path.relative_to(nbs.ROOT).with_suffix("").as_posix()
    nb = translate_chapter(nbs.read(path), lang, page)
    heading = next((c.source for c in nb.cells if c.cell_type == "markdown"), "")
    title = heading.splitlines()[0].lstrip("# ").strip() if heading else chapter
    return gettext(lang, SETUP_NOTE).format(
        title=title, chapter=chapter, requirement=launch.course_requirement()
    )


class GradingError(RuntimeError):
    pass


def without_password(db_url: str) -> str:
    """``db_url`` without its password, which moves to this process's ``PGPASSWORD``.

    The course folder's ``nbgrader_config.py`` (and anything else written from
    ``Course.db_url``) never holds a secret: PostgreSQL's client library (libpq, under
    psycopg) takes the password from ``PGPASSWORD`` or from a passfile (``~/.pgpass``, or
    ``PGPASSFILE``; libpq ignores one that others can read). A password given in the URL
    is moved there, with a warning: a command line is visible to every user of the machine.
    """
    from sqlalchemy.engine import URL, make_url

    url = make_url(db_url)
    if url.password is None:
        return db_url
    if os.environ.get("PGPASSWORD", url.password) != url.password:
        raise CourseError(
            "the --db URL and PGPASSWORD give two different passwords; give it once, "
            "in PGPASSWORD or ~/.pgpass"
        )
    os.environ["PGPASSWORD"] = url.password
    print(
        "warning: the gradebook's password was given in its URL, which other users can see "
        "in the process list; set PGPASSWORD or use ~/.pgpass (mode 0600) instead. It is "
        "used from this process's environment and written to no file.",
        file=sys.stderr,
    )
    bare = URL.create(
        url.drivername, url.username, None, url.host, url.port, url.database, url.query
    )
    return bare.render_as_string(hide_password=False)


class Course:
    def __init__(
        self,
        root: Path = Path("_course"),
        *,
        timeout: int = LIMITS.cell_timeout,
        db_url: str | None = None,
        lang: str = "en",
    ):
        self.root = Path(root).resolve()
        self.lang = lang  # the released notebooks' language (autograder.i18n); grading is the same
        self.timeout = timeout
        self.course_id = COURSE_ID
        self.db_url = (
            without_password(db_url) if db_url else f"sqlite:///{self.root / 'gradebook.db'}"
        )

    # ------------------------------------------------------------ nbgrader
    def write_config(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        cfg = nbgrader_config(self.root, self.db_url, cell_timeout=self.timeout)
        (self.root / "nbgrader_config.py").write_text(config_file(cfg))

    def _template_path(self, chapter: str) -> Path:
        notebook = self.root / "source" / chapter / f"{chapter}.ipynb"
        digest = hashlib.sha256(notebook.read_bytes()).hexdigest()[:16]
        return self.root / ".grading" / "templates" / f"{chapter}-{digest}.db"

    def template_gradebook(self, chapter: str) -> Path:
        """A gradebook holding only ``chapter``'s assignment, for the grading workers to copy.

        :meth:`release` writes it; it is made here only for a course released before
        the source notebook changed.
        """
        path = self._template_path(chapter)
        if not path.exists():
            self._generate(chapter, f"sqlite:///{path.with_suffix('.partial')}", scratch=True)
            path.with_suffix(".partial").rename(path)
        return path

    def _generate(self, chapter: str, db_url: str, *, scratch: bool = False) -> None:
        """nbgrader's ``generate_assignment``, in this process (no notebook is executed).

        With ``scratch``, only the gradebook ``db_url`` is written: the release folder
        is generated in a throwaway course directory.
        """
        from nbgrader.apps import NbGraderAPI
        from nbgrader.coursedir import CourseDirectory

        root = self.root
        if scratch:
            root = self.root / ".grading" / "templates" / f"scratch-{chapter}"
            shutil.rmtree(root, ignore_errors=True)
            shutil.copytree(self.root / "source" / chapter, root / "source" / chapter)
            db = Path(db_url.removeprefix("sqlite:///"))
            db.parent.mkdir(parents=True, exist_ok=True)
            db.unlink(missing_ok=True)
        venv_on_path()
        cfg = nbgrader_config(root, db_url)
        api = NbGraderAPI(coursedir=CourseDirectory(config=cfg), config=cfg)
        result = api.generate_assignment(chapter, force=True)
        if scratch:
            shutil.rmtree(root, ignore_errors=True)
        if not result.get("success"):
            raise GradingError(
                f"nbgrader generate_assignment {chapter} failed:\n{result.get('log', '')}"
                f"\n{result.get('error', '')}"
            )

    def nbgrader(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """Run an nbgrader command in the course directory, without the repository on the path."""
        self.write_config()
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

    def export_grades(self, output: Path) -> None:
        """nbgrader's ``export`` (its CSV format), in this process."""
        from nbgrader.api import Gradebook
        from nbgrader.plugins import CsvExportPlugin

        venv_on_path()
        output.parent.mkdir(parents=True, exist_ok=True)
        with Gradebook(self.db_url, COURSE_ID) as gb:
            CsvExportPlugin(to=str(output)).export(gb)

    # ------------------------------------------------------------ release
    def stage_source(self, chapter: str) -> Path:
        """Write ``source/<chapter>/``: the notebook, all checks, earlier chapters' solutions."""
        from autograder.book.i18n_stage import translate_chapter

        notebook = nbs.notebook_path(chapter)
        src = self.root / "source" / chapter
        if src.exists():
            shutil.rmtree(src)
        src.mkdir(parents=True)
        nb = nbs.read(notebook)
        # A cell that would show a prediction's answer is the reader edition's, never a
        # student's (autograder.book.questions).
        nb.cells = [c for c in nb.cells if not questions.reveals(c)]
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.source = nbs.strip_lines(cell.source, lambda s: bool(nbs.SAVE_LINE.match(s)))
        # The setup cell: a no-op in the released folder (and under the grader), which has
        # checks/ and solutions/ beside the notebook; it installs the course where the notebook
        # is opened alone (uploaded to Colab, say). It marks the notebook as graded: the
        # questions' self-checks say only "recorded", even where the course is installed.
        nb.cells = launch.with_setup(nb.cells, graded=True)
        page = notebook.relative_to(nbs.ROOT).with_suffix("").as_posix()
        nb = translate_chapter(nb, self.lang, page)  # markdown only: code and grades are shared
        launch.with_plain_figures(nb, src, self.lang)  # Jupyter renders Markdown, not MyST
        launch.with_plain_dropdowns(nb)  # and <details>, not MyST dropdowns (a folded hint)
        nbformat.write(nb, src / notebook.name)
        shutil.copytree(nbs.ROOT / "checks", src / "checks", ignore=IGNORE)
        self._stage_solutions(chapter, src / "solutions")
        (src / "README.md").write_text(setup_note(chapter, self.lang))
        return src

    def _stage_solutions(self, chapter: str, dest: Path) -> None:
        """Copy the generated modules of the chapters before ``chapter``.

        Never ``solutions/answers.py``, the questions' keys for self-study: it is in no
        chapter's ``SOURCES``, and :meth:`_verify_release` refuses a release that holds it.
        """
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
        chapters = chapters or nbs.chapter_names()
        for chapter in chapters:
            nbs.notebook_path(chapter)  # an unknown name: CourseError, before anything is written
        self.write_config()
        released = []
        for chapter in chapters:
            self.stage_source(chapter)
            self._generate(chapter, self.db_url)
            self.template_gradebook(chapter)
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
        keys = path.parent / "solutions" / f"{questions.ANSWERS_MODULE}.py"
        if keys.exists() or questions.REVEALS_TAG in text:
            raise GradingError(f"{path.parent} holds the questions' keys or a revealing cell")

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

    def grade(
        self,
        submissions: Path,
        assignment: str | None,
        output: Path,
        *,
        jobs: int | None = None,
        cell_timeout: int | None = None,
        notebook_timeout: int = LIMITS.notebook_timeout,
        wall_factor: int | None = None,
        memory_mb: int = LIMITS.memory_mb,
        grader_cpu: int | None = None,
        force: bool = False,
        shard: str | None = None,
        problems: Path | None = None,
        sandbox: bool = True,
        run_demos: bool = False,
    ) -> int:
        """Collect, autograde in parallel, and export ``grades.csv`` (see autograder.grading.batch)."""
        from autograder.grading import batch, collect, tables

        output = Path(output).resolve()
        problems = Path(problems).resolve() if problems else output.with_name("problems.csv")
        for folder in {output.parent, problems.parent}:  # before grading, not after it
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise CourseError(f"cannot write the results into {folder}: {err}") from err
        if sandbox:
            from autograder.sandbox import SandboxUnavailable, check_available

            try:
                check_available()
            except SandboxUnavailable as err:
                raise CourseError(f"cannot grade in a sandbox: {err}") from err
        scratch = self.root / ".grading" / "collected"
        shutil.rmtree(scratch, ignore_errors=True)
        entries = collect.collect(Path(submissions), assignment, scratch)
        if not entries:
            print(f"no submissions found in {submissions}", file=sys.stderr)
            return 1
        for sub in entries:
            collect.prepare(sub, self.infer_chapter_of)
        collect.resolve_chapters(entries)
        entries = collect.choose_newest(entries)
        collect.check_identities(entries)
        unknown = {s.chapter for s in entries if s.chapter} - set(nbs.chapter_names())
        if unknown:
            raise CourseError(f"unknown chapter(s): {', '.join(sorted(unknown))}")
        self.write_config()
        chapters = sorted({s.chapter for s in entries if s.chapter})
        missing = [ch for ch in chapters if not (self.root / "release" / ch).is_dir()]
        if missing:
            self.release(missing)
        settings = batch.Settings(
            jobs=jobs or batch.default_jobs(),
            cell_timeout=cell_timeout or self.timeout,
            notebook_timeout=notebook_timeout,
            wall_factor=wall_factor or batch.Settings.wall_factor,
            memory_mb=memory_mb,
            grader_cpu_seconds=grader_cpu or batch.Settings.grader_cpu_seconds,
            force=force,
            shard=batch.parse_shard(shard),
            sandbox=sandbox,
            run_demos=run_demos,
        )
        start = time.monotonic()
        stats = batch.run(self, entries, settings, log=lambda m: print(m, file=sys.stderr))
        self.last_stats = stats
        elapsed = time.monotonic() - start
        kept = tables.unassigned_rows(output)  # rows the gradebook does not hold
        self.export_grades(output)
        tables.add_unassigned_rows(output, entries, kept)
        ledger = batch.Ledger(self.db_url, self.course_id)
        try:
            tables.add_times(output, ledger.times())
        finally:
            ledger.close()
        tables.write_problems(problems, stats["failed"], entries)
        print(
            f"graded {stats['graded']}, problems {stats['problems']}, skipped {stats['skipped']} "
            f"in {elapsed:.1f} s with {settings.jobs} job(s)"
        )
        self._print_summary(output, {(s.student, s.chapter) for s in entries})
        if stats["changed"]:
            print(
                "warning: files in the course folder changed while grading (a submission writing "
                "outside its folder?). Grading used a private copy; the grader's own files were "
                "restored:",
                file=sys.stderr,
            )
            for line in stats["changed"]:
                print(f"  {line}", file=sys.stderr)
        warned = [s for s in entries if s.warnings]
        if warned:
            print(f"{len(warned)} submission(s) with a warning; see {problems}:")
            for sub in warned:
                for warning in sub.warnings:
                    print(f"  {sub.student:<24} {sub.chapter or '?':<20} {warning}")
        if stats["failed"]:
            print(
                f"{len(stats['failed'])} submission(s) could not be graded fully; see {problems}:"
            )
            for sub, problem in stats["failed"]:
                print(f"  {sub.student:<24} {sub.chapter or '?':<20} {problem}")
        return 0

    def infer_chapter_of(self, nb) -> str | None:
        """The chapter whose graded cells a notebook shares most, if any."""
        ids = {c.get("metadata", {}).get("nbgrader", {}).get("grade_id") for c in nb.cells}
        best = max(nbs.chapter_names(), key=lambda ch: len(ids & self.grade_ids(ch)))
        return best if ids & self.grade_ids(best) else None

    def _print_summary(self, path: Path, graded: set[tuple[str, str]]) -> None:
        """Each submission of the batch with its score, the hand-graded points named."""
        from nbgrader.api import Gradebook, MissingEntry

        from autograder.grading.scores import total_of

        print(f"wrote {path}")
        with Gradebook(self.db_url, COURSE_ID) as gb:
            for student, chapter in sorted(graded, key=lambda k: (k[1] or "", k[0])):
                if not chapter:
                    continue  # a zero row of its own in grades.csv, and a line in problems.csv
                try:
                    sub = gb.find_submission(chapter, student)
                except MissingEntry:  # another shard's
                    continue
                total = total_of(g for nb in sub.notebooks for g in nb.grades)
                print(f"  {student:<24} {chapter:<20} {total}")
