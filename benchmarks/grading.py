"""Benchmark: plain sequential `nbgrader autograde` against `python -m autograder grade`.

Both grade the same synthetic class, in one run, side by side: the reference answers,
untouched stubs and every known-wrong answer of the chosen chapter, repeated to at
least ``--submissions`` notebooks. It prints both times and their ratio, the
per-submission floor (a kernel start plus ``import torch``, measured in the same run),
whether the scores are identical, and what the measured costs imply for more cores.

    python benchmarks/grading.py                  # 40 submissions of "masking"
    python benchmarks/grading.py --submissions 80 --chapter self_attention --jobs 2

Not a test: run it by hand (``make bench-grading``); it takes a few minutes.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nbformat  # noqa: E402

from autograder import notebooks as nbs  # noqa: E402
from autograder.course import COURSE_ID, Course  # noqa: E402
from autograder.grading import batch  # noqa: E402


def synthetic_class(chapter: str, count: int, release: Path) -> dict[str, nbformat.NotebookNode]:
    from tests.wrong import load

    reference = nbs.read(nbs.notebook_path(chapter))
    kinds = [("reference", reference), ("blank", nbs.read(release / chapter / f"{chapter}.ipynb"))]
    for wrong in load():
        nb = nbs.read(nbs.notebook_path(chapter))
        cells = [c for c in nb.cells if nbs.nbgrader_meta(c).get("grade_id") == wrong.target]
        if cells:
            cells[0].source = wrong.inject(cells[0].source)
            kinds.append((f"wrong_{wrong.name}", nb))
    return {f"s{i:03d}_{kinds[i % len(kinds)][0]}": kinds[i % len(kinds)][1] for i in range(count)}


def floor_seconds(repeats: int = 3) -> float:
    """Median time to start a Python kernel and run `import torch` in it."""
    from jupyter_client.manager import start_new_kernel

    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        km, kc = start_new_kernel(kernel_name="python3")
        kc.execute_interactive("import torch", timeout=120)
        times.append(time.perf_counter() - start)
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return statistics.median(times)


def scores(db_url: str, chapter: str) -> dict:
    from nbgrader.api import Gradebook

    out = {}
    with Gradebook(db_url, course_id=COURSE_ID) as gb:
        for sub in gb.assignment_submissions(chapter):
            for nb in sub.notebooks:
                for g in nb.grades:
                    out[(sub.student.id, g.name)] = g.auto_score
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapter", default="masking")
    parser.add_argument("--submissions", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=batch.default_jobs())
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-grading-"))
    try:
        plain = Course(work / "plain")
        plain.release([args.chapter])
        notebooks = synthetic_class(args.chapter, args.submissions, plain.root / "release")
        flat = work / "flat"
        flat.mkdir()
        for student, nb in notebooks.items():
            dest = plain.root / "submitted" / student / args.chapter
            dest.mkdir(parents=True)
            nbformat.write(nb, dest / f"{args.chapter}.ipynb")
            nbformat.write(nb, flat / f"{student}.ipynb")
        print(f"{len(notebooks)} submissions of {args.chapter!r}; {args.jobs} job(s) for ours")

        floor = floor_seconds()
        start = time.perf_counter()
        plain.nbgrader("autograde", args.chapter, "--force")
        plain.nbgrader("export", f"--to={work / 'plain.csv'}")  # ours writes grades.csv too
        t_plain = time.perf_counter() - start

        ours = Course(work / "ours")
        ours.release([args.chapter])
        ours.template_gradebook(args.chapter)  # part of release, not of grading
        start = time.perf_counter()
        ours.grade(flat, args.chapter, work / "grades.csv", jobs=args.jobs)
        t_ours = time.perf_counter() - start

        a, b = scores(plain.db_url, args.chapter), scores(ours.db_url, args.chapter)
        same = a == b and len(a) > 0
        n = len(notebooks)
        print()
        print(f"{'':38}{'total':>9}{'per notebook':>14}")
        print(f"{'plain nbgrader autograde + export':38}{t_plain:8.1f}s{t_plain / n:13.2f}s")
        print(f"{'python -m autograder grade (+ export)':38}{t_ours:8.1f}s{t_ours / n:13.2f}s")
        print(f"{'floor: kernel start + import torch':38}{'':9}{floor:13.2f}s")
        print(f"speed-up: {t_plain / t_ours:.2f}x   identical scores: {'yes' if same else 'NO'}")
        if not same:
            diff = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))[:10]
            print("differences (first 10):", diff)
        work_per_nb = t_plain / n  # one core's worth of work per notebook, near enough
        print(
            "scaling: each notebook costs about "
            f"{work_per_nb:.1f} s of one core; with J workers on J free cores a class of N takes "
            f"about N x {work_per_nb:.1f} s / J, e.g. 500 notebooks: "
            f"{500 * work_per_nb / 16 / 60:.1f} min on 16 cores, {500 * work_per_nb / 64 / 60:.1f} min on 64"
            " (the single-writer merge costs milliseconds per notebook, far from the limit)."
        )
        return 0 if same else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
