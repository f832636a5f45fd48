"""``python -m autograder``: export, release and grade."""

from __future__ import annotations

import argparse
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m autograder",
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

    p = sub.add_parser("grade", help="autograde submissions and write grades.csv")
    p.add_argument(
        "submissions", type=Path, help="nbgrader-style folder or flat folder of <student_id>.ipynb"
    )
    p.add_argument("--assignment", help="chapter name; inferred from the notebooks if omitted")
    p.add_argument("--course-dir", type=Path, default=Path("_course"))
    p.add_argument("--output", type=Path, default=Path("grades.csv"))

    p = sub.add_parser("execute", help="re-execute chapter notebooks in place (their outputs)")
    p.add_argument("notebooks", nargs="*", type=Path)

    p = sub.add_parser("stage-book", help="write the reader edition of the book for jupyter-book")
    p.add_argument("dest", type=Path)

    args = parser.parse_args(argv)
    if args.command == "export":
        from autograder.export import export

        return export(check=args.check)
    if args.command == "release":
        from autograder.course import Course

        Course(args.course_dir).release(args.chapters or None)
        return 0
    if args.command == "grade":
        from autograder.course import Course

        return Course(args.course_dir).grade(args.submissions, args.assignment, args.output)
    if args.command == "execute":
        from autograder.execute import execute

        execute([p.resolve() for p in args.notebooks] or None)
        return 0
    if args.command == "stage-book":
        from autograder.editions import stage_book

        stage_book(args.dest)
        return 0
    return 2
