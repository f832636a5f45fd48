"""Where a chapter runs: the setup cell, the launchable notebooks and the launch links.

A student opens a chapter in one of five places: Colab, Binder, a course's
JupyterHub, a download from the book, or a folder released by the instructor.
In each, the notebook's first code cell is the **setup cell** written here. It
does nothing where the course's modules (``checks``, ``solutions``) and what
they need are importable, and otherwise installs the course with ``%pip``
from the repository named in ``_config.yml`` at the book's version (the tag
``v<version>`` of ``pyproject.toml``). The environment variable
``ATTENTION_COURSE_PACKAGE`` (a path, a wheel or any pip requirement)
replaces that source; the offline tests use it.

The setup cell installs nothing where the course imports. After an install it says
"restart" only if pip changed a package that the kernel had already imported (Colab may
hold an older torch, say); a fresh install of the course needs no restart. It then makes
an exercise left unfinished say so in one line (:mod:`checks._workbook`). In a released
chapter folder it also sets ``ATTENTION_COURSE_GRADED`` (:mod:`checks._quiz`): the
questions' self-checks say only that an answer was recorded, even where the course is
installed beside the release (a release uploaded to Colab).

``python -m autograder launchables DEST`` (:mod:`autograder.book.launchables`) writes the tree
that Colab, Binder and JupyterHub open (published by ``.github/workflows/publish.yml`` to
the branch ``repository.launch_branch``)::

    <chapter>.ipynb     workbooks (autograder.book.editions.workbook): stubs and self-checks that
                        test the student's code, the reference one explicit step away
    intro.ipynb         the introduction's code (check your setup and your GPU)
    checks/             the visible self-checks (not checks/hidden)
    solutions/          the reference modules the chapters import
    pyproject.toml, binder/, README.md, LICENSE, LICENSE-text

The notebooks sit next to ``checks/`` and ``solutions/``, so a kernel started
there (Binder, a hub that pulled the branch with nbgitpuller) imports them
without installing anything; Colab, which opens the notebook alone, installs.

Why one module: the setup cell and the launch links are both made from ``repository:`` of
``_config.yml`` and the version tag of ``pyproject.toml`` (:func:`repository`), so a change
of where the course lives is one change here. The MyST-to-Markdown rewrites
(:func:`plain_figures`, :func:`plain_dropdowns`) are the other thing a notebook opened
outside the book needs, and are used where such notebooks are made: the release and the
launchables (the dropdowns in the workbooks too).
"""

from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path
from urllib.parse import urlencode

import nbformat
import yaml

from autograder import notebooks as nbs

ENV = "ATTENTION_COURSE_PACKAGE"
SETUP_TAG = "course-setup"  # the setup cell's metadata.tags carry it (and remove-cell, for pages)
# What a chapter imports: the course's two packages and their dependencies (pyproject.toml).
NEEDED = ("checks", "solutions", "torch", "matplotlib", "tqdm")
COPIED = ["pyproject.toml", "LICENSE", "LICENSE-text", "binder"]
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints", "hidden")


def project(root: Path = nbs.ROOT) -> dict:
    """``[project]`` of pyproject.toml: the distribution's name and version."""
    with open(root / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def config(root: Path = nbs.ROOT) -> dict:
    """The book's ``_config.yml``."""
    return yaml.safe_load((root / "_config.yml").read_text())


def repository(root: Path = nbs.ROOT) -> dict:
    """``repository:`` of ``_config.yml``, with the launch branch and the version tag."""
    repo = dict(config(root).get("repository") or {})
    repo["url"] = repo["url"].rstrip("/").removesuffix(".git")
    repo.setdefault("branch", "main")
    repo.setdefault("launch_branch", "notebooks")
    repo["tag"] = f"v{project(root)['version']}"
    return repo


def course_requirement(root: Path = nbs.ROOT) -> str:
    """The pip requirement of the course at the book's version, from its repository."""
    repo = repository(root)
    return f"{project(root)['name']} @ git+{repo['url']}@{repo['tag']}"


GRADED_LINES = """\
# A graded release: the questions' self-checks confirm only an answer's form (checks/_quiz.py).
os.environ["{env}"] = "1"
"""


def setup_source(root: Path = nbs.ROOT, *, graded: bool = False) -> str:
    """The setup cell's code (see the module docstring); ``graded`` for a released chapter."""
    from checks._quiz import GRADED_ENV

    needed = ", ".join(f'"{m}"' for m in NEEDED)
    graded_lines = GRADED_LINES.format(env=GRADED_ENV) if graded else ""
    return f"""\
# Setup: makes the course's modules (checks, solutions) importable. Where they already are
# (a course folder, Binder, a hub, a laptop with the course installed) it installs nothing;
# elsewhere (Colab, a lone download) it installs the course with pip, once per environment.
import importlib.metadata
import importlib.util
import os
import site
import subprocess
import sys

{graded_lines}needed = ({needed})
if not all(importlib.util.find_spec(m) for m in needed):
    course = os.environ.get("{ENV}") or "{course_requirement(root)}"
    print(f"Installing the course: pip install {{course}}")
    before = {{d.name: d.version for d in importlib.metadata.distributions()}}
    pip = [sys.executable, "-m", "pip", "install", "--quiet", course]
    result = subprocess.run(pip, capture_output=True, text=True)
    if result.returncode != 0:
        print(result.stdout, result.stderr)
        raise ModuleNotFoundError("the course did not install: see pip's messages above")
    site.addsitedir(site.getusersitepackages())  # where pip installs if the environment is read-only
    importlib.invalidate_caches()
    after = {{d.name: d.version for d in importlib.metadata.distributions()}}
    changed = {{name for name, version in after.items() if before.get(name, version) != version}}
    owners = importlib.metadata.packages_distributions()
    in_use = sorted(m for m in sys.modules if changed & set(owners.get(m, ())))
    if in_use:  # only then: a kernel keeps the modules it has imported
        print(f"pip replaced {{', '.join(in_use)}}, which this kernel had already imported: "
              "restart the kernel (Colab: Runtime > Restart session), then run this cell again.")
    else:
        print("Installed; no restart needed.")
try:  # an exercise left unfinished says so in one line, not in a long traceback
    from checks._workbook import explain_unfinished
except ImportError:  # an older course installed
    pass
else:
    explain_unfinished()"""


def setup_cell(root: Path = nbs.ROOT, *, graded: bool = False) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(setup_source(root, graded=graded))
    cell.metadata = {"tags": ["remove-cell", SETUP_TAG]}  # the book's pages do not show it
    cell.id = SETUP_TAG
    return cell


def is_setup(cell) -> bool:
    return SETUP_TAG in cell.get("metadata", {}).get("tags", [])


LANGUAGE_LINE = (
    'os.environ.setdefault("{env}", "{code}")  # the self-checks\' language, where none is set\n'
)


def with_language(nb: nbformat.NotebookNode, code: str) -> None:
    """Have the setup cell of ``nb`` (a notebook in language ``code``) choose that language for
    the self-checks' messages where nothing else did (``COURSE_LANG``, checks/_i18n.py): in
    Colab, the kernel cannot know its notebook. The setup cell is the tools', not the book's:
    every code cell of the book stays the same in every language."""
    from checks._i18n import ENV

    for cell in nb.cells:
        if cell.cell_type == "code" and is_setup(cell) and ENV not in cell.source:
            line = LANGUAGE_LINE.format(env=ENV, code=code)
            head, sep, tail = cell.source.partition("\nneeded = (")
            cell.source = (
                f"{head}\n{line.rstrip()}{sep}{tail}" if sep else cell.source + "\n" + line
            )


def with_setup(cells: list, root: Path = nbs.ROOT, *, graded: bool = False) -> list:
    """``cells`` with the setup cell as the first code cell, after the title (replacing any
    earlier setup cell); ``graded`` for a released chapter."""
    rest = [c for c in cells if not is_setup(c)]
    cell = setup_cell(root, graded=graded)
    if rest and "id" not in rest[0]:  # nbformat < 4.5: no cell ids
        del cell["id"]
    at = 1 if rest and rest[0].cell_type == "markdown" else 0
    return [*rest[:at], cell, *rest[at:]]


# ---------------------------------------------------------------- launch links


def _org_repo(url: str) -> tuple[str, str]:
    parts = url.split("github.com/", 1)[-1].split("/")
    return parts[0], parts[1]


def launch_urls(chapter: str, root: Path = nbs.ROOT) -> dict[str, str]:
    """The Colab, Binder and JupyterHub (nbgitpuller) links of a chapter's launchable notebook."""
    cfg = config(root)
    repo = repository(root)
    buttons = cfg.get("launch_buttons") or {}
    org, name = _org_repo(repo["url"])
    branch, path = repo["launch_branch"], f"{chapter}.ipynb"
    ui = {"classic": "tree", "jupyterlab": "lab/tree"}[buttons.get("notebook_interface", "classic")]
    urls = {}
    if buttons.get("colab_url"):
        urls["Colab"] = (
            f"{buttons['colab_url'].rstrip('/')}/github/{org}/{name}/blob/{branch}/{path}"
        )
    if buttons.get("binderhub_url"):
        hub = buttons["binderhub_url"].rstrip("/")
        urls["Binder"] = f"{hub}/v2/gh/{org}/{name}/{branch}?urlpath={ui}/{path}"
    if buttons.get("jupyterhub_url"):
        query = urlencode(
            {"repo": repo["url"], "urlpath": f"{ui}/{name}/{path}", "branch": branch}, safe="/"
        )
        urls["JupyterHub"] = (
            f"{buttons['jupyterhub_url'].rstrip('/')}/hub/user-redirect/git-pull?{query}"
        )
    return urls


def nbgitpuller_link(hub: str, root: Path = nbs.ROOT, chapter: str | None = None) -> str:
    """A link that pulls the launchable notebooks into a hub user's home and opens one (or all)."""
    repo = repository(root)
    _, name = _org_repo(repo["url"])
    target = f"lab/tree/{name}/{chapter}.ipynb" if chapter else f"lab/tree/{name}"
    query = urlencode(
        {"repo": repo["url"], "urlpath": target, "branch": repo["launch_branch"]}, safe="/"
    )
    return f"{hub.rstrip('/')}/hub/user-redirect/git-pull?{query}"


# ---------------------------------------------------------------- the launchable notebooks

_FIGURE = re.compile(
    r"```\{figure\}[ \t]+(?P<path>\S+)\n(?P<options>(?::[\w-]+:[^\n]*\n)*)\n?(?P<caption>.*?)\n?```",
    re.DOTALL,
)


def plain_figures(source: str) -> tuple[str, list[str]]:
    """MyST ``{figure}`` directives as plain Markdown images with their alt text and caption.

    Jupyter, Colab and VS Code render Markdown, not MyST: the book's figures would show as a
    block of directive text there. Returns the new source and the image paths it uses.
    """
    paths = []

    def plain(match: re.Match) -> str:
        options = dict(re.findall(r"^:([\w-]+):[ \t]*(.*)$", match["options"], re.MULTILINE))
        paths.append(match["path"])
        alt = options.get("alt", "").replace("[", "(").replace("]", ")")
        caption = match["caption"].strip()
        return f"![{alt}]({match['path']})" + (f"\n\n*{caption}*" if caption else "")

    return _FIGURE.sub(plain, source), paths


# A folded MyST block: ```{dropdown} Title or ```{admonition} Title with :class: dropdown.
_DROPDOWN = re.compile(
    r"^(?P<fence>`{3,})\{(?P<name>dropdown|admonition)\}[ \t]*(?P<title>[^\n]*)\n"
    r"(?P<options>(?::[\w-]+:[^\n]*\n)*)\n?(?P<body>.*?)\n(?P=fence)[ \t]*$",
    re.DOTALL | re.MULTILINE,
)


def plain_dropdowns(source: str) -> str:
    """MyST dropdowns (an exercise's hint, a model answer) as HTML ``<details>``.

    Jupyter and Colab show a MyST directive as a block of text, so a hint meant to stay
    folded would lie open; ``<details>`` is shown closed. An admonition without the
    ``dropdown`` class is left as it is.
    """

    def fold(match: re.Match) -> str:
        classes = re.findall(r"^:class:[ \t]*(.*)$", match["options"], re.MULTILINE)
        if match["name"] != "dropdown" and "dropdown" not in " ".join(classes).split():
            return match[0]
        return (
            f"<details><summary>{match['title'].strip()}</summary>\n\n{match['body']}\n\n</details>"
        )

    return _DROPDOWN.sub(fold, source)


def with_plain_dropdowns(nb: nbformat.NotebookNode) -> None:
    """Rewrite the dropdowns of ``nb``'s markdown cells in place (see :func:`plain_dropdowns`)."""
    for cell in nb.cells:
        if cell.cell_type == "markdown" and "```{" in cell.source:
            cell.source = plain_dropdowns(cell.source)


def with_plain_figures(
    nb: nbformat.NotebookNode, dest: Path | None = None, lang: str = "en"
) -> list[str]:
    """Rewrite ``nb``'s figures in place (see :func:`plain_figures`), copying the image files
    the book keeps in ``book/figures/`` into ``dest`` if given, in language ``lang`` where
    there is a translated one (``book/figures/zh_CN/x.svg`` as ``figures/x.svg``, so that the
    notebook's own paths stay); return the paths used."""
    from autograder.i18n import localized_figure

    used = []
    for cell in nb.cells:
        if cell.cell_type == "markdown" and "{figure}" in cell.source:
            cell.source, paths = plain_figures(cell.source)
            used += paths
    if dest is not None:
        for rel in used:
            src = localized_figure(nbs.ROOT / "book" / rel, lang)
            if src.is_file():
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(src, dest / rel)
    return used


README = """\
# Attention, Step by Step: the notebooks to run

Generated by `python -m autograder launchables` from {url} (branch `{branch}`); do not
edit here. Colab, Binder and a course's JupyterHub open the chapters from this branch: each
notebook has its exercises' stubs, each followed by its self-check, which tests your code (the
course's reference is one commented import away), and no solution, hidden test or output. The
checks of the questions say whether an answer is right, with a hint if it is not.

- **Colab** or **Binder**: the launch buttons of the book's pages.
- **A JupyterHub** with nbgitpuller: {hub_link}
- **A laptop**: `pip install "{requirement}"`, then open a notebook with `jupyter lab`.

The first cell of each notebook installs the course where it is missing. The code is under
the MIT licence (LICENSE), the text under CC BY-SA 4.0 (LICENSE-text).
"""
