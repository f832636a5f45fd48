"""What an instructor hands out and looks at after grading: feedback and a class summary.

- :func:`feedback` (:mod:`autograder.results.feedback`) writes one static, sanitized HTML page
  per student and chapter, for every submission in the gradebook: hidden test cells keep
  their one-line description and result, never their code (nbgrader's own feedback shows
  it, upstream #917).
- :func:`summary` tabulates every exercise of the class, worst first, as a CSV, a
  printed table and a bar chart, so an instructor sees which exercises students fail.
"""

from __future__ import annotations

import csv
from pathlib import Path

from autograder.grading.scores import is_hand_graded
from autograder.results.feedback import feedback  # noqa: F401  (its home is autograder.results.feedback)


def _percent(part: float, whole: float) -> float | str:
    return round(100 * part / whole, 1) if whole else ""


def summary(course, chapter: str | None, out_csv: Path, out_png: Path | None) -> list[dict]:
    """Per exercise: submissions, mean score, full marks, zero; worst first.

    Autograded test cells first; then the written answers (``graded_by`` is ``hand``), with
    how many still wait for a person (``to_grade_by_hand``) and the mean of those graded.
    """
    from nbgrader.api import Gradebook

    rows = []
    with Gradebook(course.db_url, course_id=course.course_id) as gb:
        for assignment in gb.assignments:
            if chapter and assignment.name != chapter:
                continue
            for notebook in assignment.notebooks:
                for cell in notebook.grade_cells:
                    grades = [
                        g
                        for sub in gb.assignment_submissions(assignment.name)
                        for nb in sub.notebooks
                        for g in nb.grades
                        if nb.name == notebook.name and g.name == cell.name
                    ]
                    hand = is_hand_graded(cell.cell_type)
                    # A written answer's mean is over the answers graded so far.
                    scores = [
                        g.score or 0.0 for g in grades if not hand or g.manual_score is not None
                    ]
                    if not grades:
                        continue
                    top = cell.max_score
                    pending = len(grades) - len(scores)  # written answers not graded yet
                    rows.append(
                        {
                            "assignment": assignment.name,
                            "exercise": cell.name,
                            "graded_by": "hand" if hand else "autograder",
                            "submissions": len(grades),
                            "to_grade_by_hand": pending,
                            "mean_percent": _percent(sum(scores), top * len(scores)),
                            "full_marks_percent": _percent(
                                sum(s == top for s in scores), len(scores)
                            ),
                            "zero_percent": _percent(sum(s == 0 for s in scores), len(scores)),
                            "max_score": top,
                        }
                    )
    # Worst first; written answers not graded yet (no mean) last.
    rows.sort(
        key=lambda r: (
            r["mean_percent"] == "",
            r["mean_percent"] or 0,
            r["assignment"],
            r["exercise"],
        )
    )
    out_csv = Path(out_csv)
    out_csv.parent.mkdir(parents=True, exist_ok=True)
    with open(out_csv, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(
            f,
            fieldnames=[
                "assignment",
                "exercise",
                "graded_by",
                "submissions",
                "to_grade_by_hand",
                "mean_percent",
                "full_marks_percent",
                "zero_percent",
                "max_score",
            ],
        )
        writer.writeheader()
        writer.writerows(rows)
    print(f"{'assignment':<22}{'exercise':<40}{'n':>5}{'mean %':>9}{'full %':>9}{'zero %':>9}")
    auto = [r for r in rows if r["graded_by"] == "autograder"]
    for r in auto:
        print(
            f"{r['assignment']:<22}{r['exercise']:<40}{r['submissions']:>5}"
            f"{r['mean_percent']:>9.1f}{r['full_marks_percent']:>9.1f}{r['zero_percent']:>9.1f}"
        )
    for r in rows:
        if r["graded_by"] == "hand":
            mean = f", mean {r['mean_percent']:.1f} %" if r["mean_percent"] != "" else ""
            print(
                f"{r['assignment']:<22}{r['exercise']:<40} graded by hand ({r['max_score']:g} "
                f"points): {r['submissions'] - r['to_grade_by_hand']} of {r['submissions']} "
                f"graded{mean}"
            )
    print(f"wrote {out_csv}")
    rows = auto + [r for r in rows if r["graded_by"] == "hand"]
    if out_png and auto:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        labels = [f"{r['assignment']}: {r['exercise']}" for r in auto]
        fig, ax = plt.subplots(figsize=(8, 0.3 * len(auto) + 1.2))
        ax.barh(labels, [r["mean_percent"] for r in auto], color="tab:red")
        ax.invert_yaxis()  # worst on top
        ax.set_xlim(0, 100)
        ax.set_xlabel("mean score (% of the points), worst first")
        ax.set_title(
            f"{auto[0]['submissions']} submissions, autograded exercises"
            if chapter
            else "all chapters, autograded exercises"
        )
        fig.tight_layout()
        Path(out_png).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out_png, dpi=100)
        plt.close(fig)
        print(f"wrote {out_png}")
    return rows
