"""Stage the book for jupyter-book: the reader edition of every chapter.

The chapter notebooks under ``book/`` are nbgrader *source* notebooks: full
solutions between markers, hidden tests, model answers. Readers should see
each exercise as a student does, with the reference solution one click away.
``stage_book`` writes a copy of the book in which, for every notebook:

- an autograded answer cell becomes two cells: the stub nbgrader would hand
  out (shown, not executed: it raises ``NotImplementedError``), then the
  reference solution (executed, source collapsed behind "Show solution");
- a manually graded answer becomes a prompt with the model answer in a
  collapsed dropdown;
- hidden tests are removed; visible self-checks stay and run;
- ``#@save`` lines and nbgrader metadata are dropped.

Files are written only when their content changes, so that Sphinx and the
execution cache see unchanged pages as unchanged.
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import nbformat
from nbgrader.preprocessors import ClearSolutions

from autograder import notebooks as nbs

COPIED = ["_config.yml", "_toc.yml", "references.bib"]
STATIC = ["_static", "_vendor"]


def stub_source(source: str) -> str:
    """The source nbgrader's ``generate_assignment`` hands to students."""
    cell = nbformat.v4.new_code_cell(source)
    ClearSolutions()._replace_solution_region(cell, "python")
    return nbs.strip_lines(cell.source, lambda s: bool(nbs.SAVE_LINE.match(s)))


def _tagged(cell, *tags):
    cell.metadata["tags"] = sorted(set(cell.metadata.get("tags", [])) | set(tags))
    return cell


def _is_code(line: str) -> bool:
    return bool(line.strip()) and not line.strip().startswith("#")


def reader_cells(nb: nbformat.NotebookNode) -> list:
    cells = []
    for original in nb.cells:
        cell = copy.deepcopy(original)
        cell.metadata.pop("nbgrader", None)
        if original.cell_type == "code" and nbs.is_solution(original):
            stub = copy.deepcopy(cell)
            stub.source, stub.outputs, stub.execution_count = stub_source(original.source), [], None
            if "id" in stub:
                stub.id = f"{original.id}-stub"
            solution = cell
            solution.source = nbs.without_markers(original.source)
            cells += [_tagged(stub, "skip-execution"), _tagged(solution, "hide-input")]
        elif original.cell_type == "markdown" and nbs.is_solution(original):
            cell.source = (
                "**Your answer:** write it in your copy of the notebook, then compare.\n\n"
                "```{admonition} A model answer\n:class: dropdown\n\n"
                f"{original.source.strip()}\n```"
            )
            cells.append(cell)
        elif original.cell_type == "code" and nbs.is_test(original):
            visible = nbs.without_hidden_tests(original.source)
            if any(_is_code(line) for line in visible.splitlines()):
                cell.source = visible
                cells.append(cell)
        elif original.cell_type == "code":
            cell.source = nbs.strip_lines(original.source, lambda s: bool(nbs.SAVE_LINE.match(s)))
            cells.append(cell)
        else:
            cells.append(cell)
    return cells


def _write_if_changed(path: Path, data: bytes) -> None:
    if path.exists() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _sync_tree(src: Path, dest: Path) -> None:
    for path in src.rglob("*"):
        if path.is_file():
            target = dest / path.relative_to(src)
            if not target.exists() or target.stat().st_size != path.stat().st_size:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)


def stage_book(dest: Path, root: Path = nbs.ROOT) -> None:
    dest = dest.resolve()
    dest.mkdir(parents=True, exist_ok=True)
    for name in COPIED:
        _write_if_changed(dest / name, (root / name).read_bytes())
    for name in STATIC:
        if (root / name).is_dir():
            _sync_tree(root / name, dest / name)
    for path in sorted((root / "book").rglob("*")):
        if not path.is_file() or ".ipynb_checkpoints" in path.parts:
            continue
        target = dest / path.relative_to(root)
        if path.suffix == ".ipynb":
            nb = nbs.read(path)
            nb.cells = reader_cells(nb)
            _write_if_changed(target, nbformat.writes(nb).encode())
        else:
            _write_if_changed(target, path.read_bytes())
