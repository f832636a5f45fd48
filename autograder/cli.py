"""``attention-course`` (or ``python -m autograder``): export, release, grade, stage the book.

Every file a command writes goes under the course folder (``--course-dir``, ``_course/`` by
default) unless an option names another place: grades.csv, problems.csv, summary.csv and
summary.png, feedback/, gradescope/. ``make install`` writes ``.venv/bin/attention-course``,
which runs this from the clone without activating the environment.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from autograder.config import GRADESCOPE, LIMITS
from autograder.errors import CourseError


def _limit_flags(p: argparse.ArgumentParser, limits, note: str = "") -> None:
    """--cell-timeout, --notebook-timeout and --memory, their defaults from ``limits``
    (``config.LIMITS`` or ``config.GRADESCOPE``); ``note`` follows the notebook's default."""
    p.add_argument(
        "--cell-timeout",
        type=int,
        default=limits.cell_timeout,
        help=f"CPU seconds per cell (default {limits.cell_timeout})",
    )
    p.add_argument(
        "--notebook-timeout",
        type=int,
        default=limits.notebook_timeout,
        help=f"CPU seconds per notebook (default {limits.notebook_timeout}{note})",
    )
    p.add_argument(
        "--memory",
        type=int,
        default=limits.memory_mb,
        help=f"MiB per notebook (default {limits.memory_mb})",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="attention-course",
        description="Release and grade the chapters of Attention, Step by Step with nbgrader.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "export", help="regenerate solutions/ from the #@save cells of the notebooks"
    )
    p.add_argument("--check", action="store_true", help="only report drift; exit 1 if any")

    p = sub.add_parser("release", help="generate student notebooks with nbgrader")
    p.add_argument("chapters", nargs="*", help="chapters to release (default: all)")
    p.add_argument("--course-dir", type=Path, default=Path("_course"))
    p.add_argument("--db", help="gradebook URL (default: SQLite in the course folder)")
    p.add_argument(
        "--lang", default="en", help="language of the notebooks' text: en (default) or zh"
    )

    p = sub.add_parser(
        "grade",
        help="autograde submissions in parallel and write grades.csv",
        description=(
            "Autograde a folder of submissions: a flat folder of <student_id>.ipynb, "
            "nbgrader's <student>/<chapter>/ layout, an nbgrader exchange (inbound/), or an "
            "LMS download (one <student>.zip or <student>/ folder each, or one zip of them). "
            "A rerun skips submissions already graded and unchanged."
        ),
    )
    p.add_argument("submissions", type=Path, help="folder (or zip) of submissions")
    p.add_argument("--assignment", help="chapter name; inferred from the notebooks if omitted")
    p.add_argument("--course-dir", type=Path, default=Path("_course"))
    p.add_argument("--output", type=Path, help="default: grades.csv in the course folder")
    p.add_argument(
        "--problems",
        type=Path,
        help="where to list ungradable submissions (default: problems.csv beside --output)",
    )
    p.add_argument("--jobs", "-j", type=int, help="parallel graders (default: available cores)")
    p.add_argument("--db", help="gradebook URL, e.g. postgresql://user@host/db (default: SQLite)")
    _limit_flags(p, LIMITS)
    p.add_argument(
        "--wall-factor",
        type=int,
        default=LIMITS.wall_factor,
        help=f"wall-clock backstop, as a multiple of the CPU limits (default {LIMITS.wall_factor})",
    )
    p.add_argument(
        "--grader-cpu",
        type=int,
        default=LIMITS.grader_cpu_seconds,
        help="CPU seconds the grader itself may spend on one notebook's answers "
        f"(default {LIMITS.grader_cpu_seconds})",
    )
    p.add_argument("--shard", help="grade only shard i of n, as i/n (several machines, one --db)")
    p.add_argument("--force", action="store_true", help="regrade what is already graded")
    p.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run kernels without bubblewrap (only for trusted notebooks; see book/instructors.md)",
    )

    p = sub.add_parser("feedback", help="per-student HTML feedback, hidden test code left out")
    p.add_argument("chapter", nargs="?", help="one chapter (default: every graded chapter)")
    p.add_argument("--student", help="one student (default: all)")
    p.add_argument("--course-dir", type=Path, default=Path("_course"))
    p.add_argument("--db", help="gradebook URL (default: SQLite in the course folder)")
    p.add_argument(
        "--lang",
        help="language of the pages' own words, en or zh (default: each chapter's release's)",
    )

    p = sub.add_parser(
        "formgrader",
        help="grade written answers by hand: nbgrader's formgrader on the course (Jupyter Server)",
    )
    p.add_argument("--course-dir", type=Path, default=Path("_course"))
    p.add_argument("--db", help="gradebook URL (default: SQLite in the course folder)")
    p.add_argument("--port", type=int, default=8888, help="default 8888")
    p.add_argument("--ip", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser")

    p = sub.add_parser("summary", help="which exercises students fail most: table, CSV and plot")
    p.add_argument("chapter", nargs="?", help="one chapter (default: all)")
    p.add_argument("--course-dir", type=Path, default=Path("_course"))
    p.add_argument("--db", help="gradebook URL (default: SQLite in the course folder)")
    p.add_argument("--output", type=Path, help="default: summary.csv in the course folder")
    p.add_argument("--plot", type=Path, help="default: summary.png in the course folder")

    p = sub.add_parser("gradescope", help="build a Gradescope autograder bundle for a chapter")
    p.add_argument("chapter")
    p.add_argument("--course-dir", type=Path, default=Path("_course"))
    p.add_argument("--output", type=Path, help="default: _course/gradescope/<chapter>.zip")
    p.add_argument(
        "--hidden-visibility",
        default="after_published",
        choices=["hidden", "after_due_date", "after_published", "visible"],
        help="when students see the results of hidden tests (default: after_published)",
    )
    _limit_flags(p, GRADESCOPE, note=", Gradescope's own default timeout")

    p = sub.add_parser("execute", help="re-execute chapter notebooks in place (their outputs)")
    p.add_argument("notebooks", nargs="*", type=Path)

    p = sub.add_parser("stage-book", help="write an edition of the book for jupyter-book")
    p.add_argument("dest", type=Path)
    p.add_argument(
        "--edition",
        choices=["reader", "student"],
        default="reader",
        help="reader: solutions behind a toggle (default); student: no solution text at all",
    )
    p.add_argument(
        "--lang", default="en", help="language of the notebooks' text: en (default) or zh"
    )

    p = sub.add_parser(
        "launchables",
        help="write the notebooks Colab, Binder and a hub open (stubs and self-checks) to DEST",
    )
    p.add_argument("dest", type=Path)
    p.add_argument(
        "--lang", default="en", help="language of the notebooks' text: en (default) or zh"
    )

    p = sub.add_parser(
        "catalogs",
        help="update the translation catalogs from Sphinx's templates (`make catalogs`)",
    )
    p.add_argument("pot_dir", type=Path, help="where Sphinx's gettext builder wrote the .pot")
    p.add_argument("--lang", default="zh", help="the catalogs' language (default: zh)")

    args = parser.parse_args(argv)
    try:
        return _run(args)
    except CourseError as err:  # what the user can fix: its message, as SystemExit(message) says it
        print(err, file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    """The command ``args`` asks for; its exit status."""
    if args.command == "export":
        from autograder.book.export import export

        return export(check=args.check)
    if args.command == "release":
        from autograder.course import Course

        Course(args.course_dir, db_url=args.db, lang=args.lang).release(args.chapters or None)
        return 0
    if args.command == "grade":
        from autograder.course import Course

        course = Course(args.course_dir, timeout=args.cell_timeout, db_url=args.db)
        return course.grade(
            args.submissions,
            args.assignment,
            args.output or course.root / "grades.csv",
            jobs=args.jobs,
            notebook_timeout=args.notebook_timeout,
            wall_factor=args.wall_factor,
            memory_mb=args.memory,
            grader_cpu=args.grader_cpu,
            force=args.force,
            shard=args.shard,
            problems=args.problems,
            sandbox=not args.no_sandbox,
        )
    if args.command == "feedback":
        from autograder.course import Course
        from autograder.results.reports import feedback

        course = Course(args.course_dir, db_url=args.db)
        pages = feedback(course, args.chapter, args.student, args.lang)
        print(f"wrote {len(pages)} feedback page(s) under {args.course_dir / 'feedback'}")
        return 0
    if args.command == "formgrader":
        from autograder.course import Course
        from autograder.grading.formgrader import serve

        course = Course(args.course_dir, db_url=args.db)
        return serve(course, port=args.port, ip=args.ip, browser=not args.no_browser)
    if args.command == "summary":
        from autograder.course import Course
        from autograder.results.reports import summary

        course = Course(args.course_dir, db_url=args.db)
        rows = summary(
            course,
            args.chapter,
            args.output or course.root / "summary.csv",
            args.plot or course.root / "summary.png",
        )
        return 0 if rows else 1
    if args.command == "gradescope":
        from autograder.course import Course
        from autograder.gradescope.bundle import build

        course = Course(args.course_dir)
        output = args.output or course.root / "gradescope" / f"{args.chapter}.zip"
        limits = dataclasses.replace(
            GRADESCOPE,
            cell_timeout=args.cell_timeout,
            notebook_timeout=args.notebook_timeout,
            memory_mb=args.memory,
        )
        path = build(
            course, args.chapter, output, hidden_visibility=args.hidden_visibility, limits=limits
        )
        print(f"wrote {path}: upload it as the autograder of a Gradescope programming assignment")
        return 0
    if args.command == "execute":
        from autograder.book.execute import execute

        execute([p.resolve() for p in args.notebooks] or None)
        return 0
    if args.command == "stage-book":
        from autograder.book.editions import stage_book

        stage_book(args.dest, edition=args.edition, lang=args.lang)
        return 0
    if args.command == "launchables":
        from autograder.book.launchables import write_launchables

        written = write_launchables(args.dest, lang=args.lang)
        print(f"wrote {len(written)} launchable notebooks and the course package to {args.dest}")
        return 0
    if args.command == "catalogs":
        from autograder import catalogs
        from autograder.catalogs import checks_messages
        from autograder.i18n import readme

        unplaced = catalogs.write_templates(args.pot_dir)
        for line in unplaced:
            print(f"error: Sphinx and autograder.i18n.pages disagree: {line}")
        written = catalogs.update(args.pot_dir, args.lang)
        print(f"{len(written)} catalog(s) changed")
        for path in checks_messages.write_runtime(args.lang):
            print(
                f"wrote {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}"
            )
        try:
            if readme.write(args.lang):
                print(f"wrote {readme.path(args.lang).name}")
        except readme.ReadmeError as error:
            print(f"error: {error}")
            return 1
        return 1 if unplaced else 0
    return 2
