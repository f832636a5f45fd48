"""The launchable notebooks: the tree that Colab, Binder and a course's JupyterHub open.

``python -m autograder launchables DEST`` writes it (see :mod:`autograder.book.launch` for the
tree, and for the setup cell each notebook starts with). Each chapter's notebook is the
workbook of its student edition (:func:`autograder.book.editions.workbook`) with the setup cell
and plain figures, in the language asked for. This module sits above both
:mod:`autograder.book.editions` (the workbooks) and :mod:`autograder.book.launch` (the setup cell,
the links), which editions itself uses: so neither of those imports the other's caller.
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import nbformat

from autograder import notebooks as nbs
from autograder.book import launch
from autograder.book.editions import edition_cells, is_myst_notebook, read_page, workbook
from autograder.book.i18n_stage import translate_chapter
from autograder.i18n import gettext


def launchable(
    nb: nbformat.NotebookNode, root: Path = nbs.ROOT, lang: str = "en", page: str = ""
) -> nbformat.NotebookNode:
    """A chapter as Colab, Binder and a hub open it: the workbook of the student edition (see
    :func:`autograder.book.editions.workbook`), with the setup cell and plain figures. ``lang``:
    its language, from the catalogs of ``page`` (``book/<chapter>``, autograder.i18n)."""
    nb = copy.deepcopy(nb)
    nb.cells = edition_cells(nb, "student")
    nb = workbook(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":  # the book's page metadata means nothing here
            cell.metadata = {k: v for k, v in cell.metadata.items() if k in ("tags", "mystnb")}
    nb.cells = launch.with_setup(nb.cells, root)
    nb = translate_chapter(nb, lang, page, root)
    launch.with_plain_figures(nb)
    return nb


def intro_notebook(root: Path = nbs.ROOT, lang: str = "en") -> nbformat.NotebookNode | None:
    """The introduction (a MyST notebook) as a notebook with the setup cell, if it has code."""
    path = root / f"{nbs.toc_files(root)[0]}.md"
    if not path.exists() or not is_myst_notebook(path.read_text()):
        return None
    nb = workbook(read_page(path))
    for i, cell in enumerate(nb.cells):  # the page's cells have no ids: the same on every build
        cell.id = f"intro-{i}"
    nb.cells = launch.with_setup(nb.cells, root)
    return translate_chapter(nb, lang, nbs.toc_files(root)[0], root)


def write_launchables(dest: Path, root: Path = nbs.ROOT, lang: str = "en") -> list[Path]:
    """Write the launchable tree (see the module docstring) to ``dest``; return the notebooks.
    ``lang``: their language (the publishing workflow writes Chinese to ``zh/``)."""
    dest = Path(dest).resolve()
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for name in launch.COPIED:
        src = root / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=launch.IGNORE)
        elif src.exists():
            shutil.copy(src, dest / name)
    for package in ("checks", "solutions"):
        shutil.copytree(root / package, dest / package, ignore=launch.IGNORE)
    repo = launch.repository(root)
    hub = (launch.config(root).get("launch_buttons") or {}).get("jupyterhub_url")
    hub_link = (
        launch.nbgitpuller_link(hub, root)
        if hub
        else f"`{launch.nbgitpuller_link('https://HUB', root)}`, with your hub's address for HUB"
    )
    (dest / "README.md").write_text(
        gettext(lang, launch.README, root).format(
            url=repo["url"],
            branch=repo["branch"],
            hub_link=hub_link,
            requirement=launch.course_requirement(root),
        )
    )
    written = []
    intro = intro_notebook(root, lang)
    if intro is not None:
        target = dest / f"{Path(nbs.toc_files(root)[0]).name}.ipynb"
        nbformat.write(intro, target)
        written.append(target)
    for path in nbs.chapter_notebooks(root):
        page = path.relative_to(root).with_suffix("").as_posix()
        nb = launchable(nbs.read(path), root, lang, page)
        target = dest / path.name
        nbformat.write(nb, target)
        launch.with_plain_figures(nbs.read(path), dest, lang)  # the image files the notebook shows
        written.append(target)
    return written
