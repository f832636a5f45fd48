"""What an instructor hands out and looks at after grading: feedback and a class summary.

- :func:`feedback` (:mod:`autograder.feedback`) writes one static, sanitized HTML page
  per student and chapter, for every submission in the gradebook: hidden test cells keep
  their one-line description and result, never their code (nbgrader's own feedback shows
  it, upstream #917).
- :func:`summary` tabulates every exercise of the class, worst first, as a CSV, a
  printed table and a bar chart, so an instructor sees which exercises students fail.
"""

from __future__ import annotations

import csv
from pathlib import Path

from autograder.feedback import feedback  # noqa: F401  (its home is autograder.feedback)


def summary(course, chapter: str | None, out_csv: Path, out_png: Path | None) -> list[dict]:
    """Per exercise (autograded test cell): submissions, mean score, full marks, zero; worst first."""
    from nbgrader.api import Gradebook

    rows = []
    with Gradebook(course.db_url, course_id=course.course_id) as gb:
        for assignment in gb.assignments:
            if chapter and assignment.name != chapter:
                continue
            for notebook in assignment.notebooks:
                for cell in notebook.grade_cells:
                    if cell.cell_type != "code":
                        continue  # written answers are graded by hand
                    scores = [
                        g.score or 0.0
                        for sub in gb.assignment_submissions(assignment.name)
                        for nb in sub.notebooks
                        for g in nb.grades
                        if nb.name == notebook.name and g.name == cell.name
                    ]
                    if not scores:
                        continue
                    top = cell.max_score
                    rows.append(
                        {
                            "assignment": assignment.name,
                            "exercise": cell.name,
                            "submissions": len(scores),
                            "mean_percent": round(100 * sum(scores) / (top * len(scores)), 1),
                            "full_marks_percent": round(
                                100 * sum(s == top for s in scores) / len(scores), 1
                            ),
                            "zero_percent": round(
                                100 * sum(s == 0 for s in scores) / len(scores), 1
                            ),
                            "max_score": top,
                        }
                    )
    rows.sort(key=lambda r: (r["mean_percent"], r["assignment"], r["exercise"]))
    out_csv = Path(out_csv)
    out_csv.parent.mkdir(parents=True, exist_ok=True)
    with open(out_csv, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(
            f,
            fieldnames=[
                "assignment",
                "exercise",
                "submissions",
                "mean_percent",
                "full_marks_percent",
                "zero_percent",
                "max_score",
            ],
        )
        writer.writeheader()
        writer.writerows(rows)
    print(f"{'assignment':<22}{'exercise':<40}{'n':>5}{'mean %':>9}{'full %':>9}{'zero %':>9}")
    for r in rows:
        print(
            f"{r['assignment']:<22}{r['exercise']:<40}{r['submissions']:>5}"
            f"{r['mean_percent']:>9.1f}{r['full_marks_percent']:>9.1f}{r['zero_percent']:>9.1f}"
        )
    print(f"wrote {out_csv}")
    if out_png and rows:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        labels = [f"{r['assignment']}: {r['exercise']}" for r in rows]
        fig, ax = plt.subplots(figsize=(8, 0.3 * len(rows) + 1.2))
        ax.barh(labels, [r["mean_percent"] for r in rows], color="tab:red")
        ax.invert_yaxis()  # worst on top
        ax.set_xlim(0, 100)
        ax.set_xlabel("mean score (% of the points), worst first")
        ax.set_title(f"{rows[0]['submissions']} submissions" if chapter else "all chapters")
        fig.tight_layout()
        Path(out_png).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out_png, dpi=100)
        plt.close(fig)
        print(f"wrote {out_png}")
    return rows
