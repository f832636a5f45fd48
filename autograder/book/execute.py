"""Re-execute the chapter notebooks in place, so that their committed outputs are current.

``make outputs`` runs this; nbval (in ``make test``) then proves that a fresh
run reproduces the committed outputs.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbval.plugin import coalesce_streams

from autograder import notebooks as nbs
from autograder.config import BOOK_CELL_TIMEOUT

KEEP_CELL_METADATA = ("tags", "nbgrader", "mystnb")  # mystnb: alt text and figure captions
# Figures at twice the pixel density, with their display size in the output's metadata (which
# the book writes as the image's width and height): sharp on high-DPI screens and phones,
# the same size on the page. nbval compares no image data, so it needs no such setting.
KERNEL_ARGUMENTS = ["--InlineBackend.figure_formats=retina"]
NOTEBOOK_METADATA = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}


def normalize(nb: nbformat.NotebookNode) -> None:
    """Drop metadata the book does not need, so that re-running changes nothing else."""
    nb.metadata = nbformat.from_dict(NOTEBOOK_METADATA)
    for cell in nb.cells:
        cell.metadata = nbformat.from_dict(
            {k: v for k, v in cell.metadata.items() if k in KEEP_CELL_METADATA}
        )
        if cell.cell_type == "code":
            # One stream per name, with progress bars' carriage returns applied: what a reader sees.
            cell.outputs = coalesce_streams(cell.outputs)


def execute(paths: list[Path] | None = None, timeout: int = BOOK_CELL_TIMEOUT) -> None:
    """Run each notebook of ``paths`` (default: every chapter) top to bottom in a fresh kernel,
    in its own folder, and write it back with its outputs, normalized (:func:`normalize`)."""
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(nbs.ROOT), os.environ.get("PYTHONPATH", "")) if p
    )
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    for path in paths or nbs.chapter_notebooks():
        nb = nbs.read(path)
        start = time.perf_counter()
        NotebookClient(
            nb,
            timeout=timeout,
            kernel_name="python3",
            record_timing=False,
            extra_arguments=KERNEL_ARGUMENTS,
            resources={"metadata": {"path": str(path.parent)}},
        ).execute()
        normalize(nb)
        nbformat.write(nb, path)
        shown = path.relative_to(nbs.ROOT) if path.is_relative_to(nbs.ROOT) else path
        print(f"executed {shown} in {time.perf_counter() - start:.1f} s")
