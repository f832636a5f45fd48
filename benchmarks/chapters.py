"""Benchmark: each chapter's run time, and what grading one submission of it costs.

For every chapter of ``_toc.yml`` it measures, one after the other in one run:

- **run**: the notebook executed top to bottom in a fresh kernel, as a reader, nbval and
  ``make outputs`` do (wall clock, and the kernel's CPU time);
- **graded**: the reference notebook graded alone (``--jobs 1``, sandboxed) as the grader
  does, with demo cells skipped;
- **with demos**: the same, with the demo cells (training loops, benchmarks) run too: the
  cost before demos were skipped at grading.

    python benchmarks/chapters.py                 # every chapter
    python benchmarks/chapters.py masking         # some

Not a test: run it by hand on a quiet machine; it takes a few minutes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder import notebooks as nbs  # noqa: E402
from autograder.config import BOOK_CELL_TIMEOUT  # noqa: E402
from autograder.course import Course  # noqa: E402


def run_notebook(path: Path) -> tuple[float, float]:
    """Execute ``path`` in a fresh kernel started in its folder; (wall, kernel CPU) seconds."""
    import nbformat
    import psutil
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    os.environ["PYTHONPATH"] = str(ROOT)  # the kernel imports checks and solutions from here
    client = NotebookClient(
        nb,
        timeout=BOOK_CELL_TIMEOUT,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    start = time.perf_counter()
    with client.setup_kernel():
        pid = client.km.provisioner.process.pid
        kernel = psutil.Process(pid)
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        times = kernel.cpu_times()
    wall = time.perf_counter() - start
    return wall, times.user + times.system


def grade_alone(chapter: str, run_demos: bool) -> float:
    """Wall seconds to grade the chapter's reference notebook alone, sandboxed."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        course = Course(tmp / "course")
        subs = tmp / "subs"
        subs.mkdir()
        shutil.copy(nbs.notebook_path(chapter), subs / "reference.ipynb")
        course.release([chapter])
        start = time.perf_counter()
        rc = course.grade(subs, chapter, tmp / "grades.csv", jobs=1, run_demos=run_demos)
        elapsed = time.perf_counter() - start
        problems = (tmp / "problems.csv").read_text().splitlines()[1:]
        if rc != 0 or problems:
            raise RuntimeError(f"{chapter}: exit {rc}, problems {problems}")
        return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", help="default: every chapter")
    args = parser.parse_args()
    chapters = args.chapters or nbs.chapter_names()
    print(
        f"{os.cpu_count()} cores, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, "
        f"1-minute load average at start {os.getloadavg()[0]:.2f}"
    )
    print(f"{'chapter':<24}{'run (wall)':>12}{'run (CPU)':>12}{'graded':>10}{'with demos':>12}")
    for chapter in chapters:
        wall, cpu = run_notebook(nbs.notebook_path(chapter))
        graded = grade_alone(chapter, run_demos=False)
        before = grade_alone(chapter, run_demos=True)
        print(f"{chapter:<24}{wall:>11.1f}s{cpu:>11.1f}s{graded:>9.1f}s{before:>11.1f}s")
    print(f"1-minute load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
