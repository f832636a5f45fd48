"""Stage the book for jupyter-book, in one of two editions, and serve its downloads.

The chapter notebooks under ``book/`` are nbgrader *source* notebooks: full
solutions between markers, hidden tests, model answers. ``stage_book`` writes
a copy of the book in which, for every notebook:

*Reader edition* (the default; ``make book``)

- an autograded answer cell becomes two cells: the stub nbgrader would hand
  out (shown, not executed: it raises ``NotImplementedError``), then the
  reference solution (executed, source collapsed behind "Show solution");
- a manually graded answer becomes a prompt with the model answer in a
  collapsed dropdown;
- hidden tests are removed; visible self-checks stay and run;
- ``#@save`` lines and nbgrader metadata are dropped.

In both editions a question's answer cell becomes its stub the same way, and a cell that
reveals a prediction's answer (tag ``reveals-answer``, :mod:`autograder.book.questions`) stays
only in the reader edition, folded, as the answer's demonstration.

*Student edition* (``make book EDITION=student``), for courses that grade: no
solution text at all.

- an autograded answer cell becomes its stub (shown, not executed), then a
  cell tagged ``remove-cell`` that *imports* the reference from the generated
  ``solutions`` package (``from solutions.masking import masked_softmax``),
  so that later cells still run and show their outputs. An answer that is not
  saved to ``solutions/`` (a one-line value) runs in that hidden cell as it is;
- a manually graded answer becomes the prompt alone;
- a question's test cell shows no output (the question is not answered yet), no
  reveals-answer cell is left, and a cell tagged ``answer-in-output`` shows no output;
- the hidden cells carry ``metadata.edition = "student-reference"`` and the
  Sphinx extension below drops them from the downloadable notebooks;
- launch and edit buttons (which point at the repository's source notebooks)
  are turned off.

*Workbooks.* Every notebook a student opens outside a graded release is a workbook
(:func:`workbook`): the downloads of both editions and the launchable notebooks of
:mod:`autograder.book.launch`. Each exercise's stub is followed by its self-check, which tests
the student's code: no cell defines, imports or loads a graded answer, and the reference
is one explicit step away (a commented import under the stub). Model answers are folded
(``<details>``), reveals-answer cells and outputs are left out.

This module is also a small Sphinx extension (``sphinx: extra_extensions`` in
``_config.yml``): for every notebook page it writes the workbook as the downloadable
``.ipynb`` and as a MyST Markdown copy next to it in ``_sources/``, and adds a ".md" download
button, which Jupyter Book 1 offers only for pages written in Markdown. It
also keeps the pages free of console errors: it drops sphinx-thebe's scripts
(Thebe is off, and its inline config is emitted twice), and gives them an
empty icon so that browsers do not ask for a missing ``/favicon.ico``.

In both editions the first code cell is the setup cell of :mod:`autograder.book.launch`
(tagged ``remove-cell``: it is in the downloads, not on the pages), so that a downloaded
notebook runs anywhere; and the extension points the reader edition's Colab, Binder and
JupyterHub buttons at the launchable notebooks (``repository.launch_branch``) instead of
the nbgrader sources.

Files are written only when their content changes, so that Sphinx and the
execution cache see unchanged pages as unchanged.

Why one module: :func:`edition_cells` marks the cells it writes (``metadata.edition``: stub,
reference, note, model answer, student-reference) and :func:`workbook` and the Sphinx
extension read those marks back, so the writer and the readers of that private vocabulary
change together; the extension is only where the book's downloads are made by the same
rules.
"""

from __future__ import annotations

import ast
import copy
import json
import re
import shutil
from pathlib import Path

import nbformat
import yaml

from autograder import notebooks as nbs
from autograder.book import launch, questions

COPIED = ["_config.yml", "_toc.yml", "references.bib"]
STATIC = ["_static", "_vendor", "benchmarks/results"]  # results: recorded GPU figures
EDITIONS = ("reader", "student")
INTERNAL = "student-reference"  # metadata.edition of the student edition's hidden cells
# metadata.edition of the cells that only the book's pages show (workbooks leave them out)
REFERENCE = "reference"  # the reader edition's solution, behind "Show solution"
NOTE = "outputs-note"  # the note after a stub that the outputs below it are the reference's
STUB = "stub"  # metadata.edition of a stub; metadata.reference: the import of its reference
MODEL_ANSWER = "model-answer"  # the reader edition's written answer with its model answer
REVEALED_PROMPTS = {"code_prompt_show": "Show the result", "code_prompt_hide": "Hide the result"}
KEEP = ("mystnb", "tags")  # code-cell metadata kept in the .md download
# Shown after every stub: the outputs that follow it (the self-check's ✓ included) are the
# reference solution's, not the stub's, which raises NotImplementedError.
OUTPUTS_NOTE = {
    "reader": '*The outputs below come from the reference solution (under "Show solution"), '
    "not from this stub: the stub raises `NotImplementedError` until you fill it in, in your "
    "copy of the notebook.*",
    "student": "*The outputs below come from the course's reference solution, which this edition "
    "does not show, not from this stub: the stub raises `NotImplementedError` until you fill it "
    "in, in your copy of the notebook.*",
}
# The student edition's title, and the .md download's tooltip (translated: autograder.i18n).
STUDENT_TITLE = "{title} (student edition)"
MYST_TOOLTIP = "Download as MyST Markdown"


def stub_source(source: str) -> str:
    """The source nbgrader's ``generate_assignment`` hands to students."""
    from nbgrader.preprocessors import ClearSolutions

    cell = nbformat.v4.new_code_cell(source)
    ClearSolutions()._replace_solution_region(cell, "python")
    return nbs.strip_lines(cell.source, lambda s: bool(nbs.SAVE_LINE.match(s)))


def _tagged(cell, *tags):
    cell.metadata["tags"] = sorted(set(cell.metadata.get("tags", [])) | set(tags))
    return cell


def _is_code(line: str) -> bool:
    return bool(line.strip()) and not line.strip().startswith("#")


def defined_names(source: str) -> list[str]:
    """Top-level names a cell binds: functions, classes, assignments and imports."""
    names = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                names.append(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names += [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
    return list(dict.fromkeys(names))


def reference_import(original) -> str | None:
    """``from solutions.<module> import <names>``: the reference of a ``#@save`` answer cell."""
    module = nbs.saved_module(original)
    if module is None:
        return None
    if questions.is_question(original):
        module = questions.ANSWERS_MODULE
    names = ", ".join(sorted(defined_names(nbs.without_markers(original.source)), key=str.lower))
    return f"from solutions.{module} import {names}"


def reference_source(original) -> str:
    """What the student edition runs, unseen, in place of a solution cell."""
    line = reference_import(original)
    if line is None:
        return nbs.without_markers(original.source)  # not in solutions/: run it as it is
    return f"{line}  # the reference, in place of the stub above"


def _stub_cell(original, cell):
    stub = copy.deepcopy(cell)
    stub.source, stub.outputs, stub.execution_count = stub_source(original.source), [], None
    if "id" in stub:
        stub.id = f"{original.id}-stub"
    stub.metadata["edition"] = STUB
    reference = None if questions.is_question(original) else reference_import(original)
    if reference:
        stub.metadata["reference"] = reference
    return _tagged(stub, "skip-execution")


def _outputs_note(original, edition):
    note = nbformat.v4.new_markdown_cell(OUTPUTS_NOTE[edition])
    note.metadata["edition"] = NOTE
    if "id" in original:
        note.id = f"{original.id}-note"
    else:
        note.pop("id", None)
    return note


def _revealed(cell):
    """A reveals-answer cell as the reader edition shows it: after the answer, its output folded."""
    if cell.cell_type == "code":
        tags = set(cell.metadata.get("tags", []))
        if not tags & {"hide-output", "hide-cell", "remove-output", "remove-cell"}:
            _tagged(cell, "hide-output")
        mystnb = cell.metadata.setdefault("mystnb", {})
        for key, value in REVEALED_PROMPTS.items():
            mystnb.setdefault(key, value)
    return cell


def edition_cells(nb: nbformat.NotebookNode, edition: str = "reader") -> list:
    if edition not in EDITIONS:
        raise ValueError(f"unknown edition {edition!r}; the editions are {EDITIONS}")
    student = edition == "student"
    cells = []
    for original in nb.cells:
        cell = copy.deepcopy(original)
        cell.metadata.pop("nbgrader", None)
        if questions.reveals(original):
            if not student:
                cells.append(_revealed(cell))
        elif original.cell_type == "code" and nbs.is_solution(original):
            stub = _stub_cell(original, cell)
            note = _outputs_note(original, edition)
            if student:
                hidden = nbformat.v4.new_code_cell(reference_source(original))
                hidden.metadata = {"tags": ["remove-cell"], "edition": INTERNAL}
                if "id" in cell:
                    hidden.id = original.id
                else:
                    hidden.pop("id", None)
                # A question shows no output here (not answered yet): no note about outputs.
                cells += [stub, hidden] if questions.is_question(original) else [stub, note, hidden]
            else:
                cell.source = nbs.without_markers(original.source)
                cell.metadata["edition"] = REFERENCE
                cells += [stub, note, _tagged(cell, "hide-input")]
        elif original.cell_type == "markdown" and nbs.is_solution(original):
            if student:
                cell.source = YOUR_ANSWER["student"]
            else:
                cell.source = (
                    f"{YOUR_ANSWER['reader']}\n\n"
                    f"```{{admonition}} {MODEL_ANSWER_TITLE}\n:class: dropdown\n\n"
                    f"{original.source.strip()}\n```"
                )
                cell.metadata["edition"] = MODEL_ANSWER
            cells.append(cell)
        elif original.cell_type == "code" and nbs.is_test(original):
            visible = nbs.without_hidden_tests(original.source)
            if any(_is_code(line) for line in visible.splitlines()):
                cell.source = visible
                if student and _runs_a_question(visible):  # unanswered here: nothing to show
                    cell.outputs, cell.execution_count = [], None
                cells.append(cell)
        elif original.cell_type == "code":
            cell.source = nbs.strip_lines(original.source, lambda s: bool(nbs.SAVE_LINE.match(s)))
            tags = cell.metadata.get("tags", [])
            if student and questions.ANSWER_IN_OUTPUT_TAG in tags:  # the reference's output
                cell.outputs, cell.execution_count = [], None
            cells.append(cell)
        else:
            cells.append(cell)
    return cells


YOUR_ANSWER = {
    "reader": "**Your answer:** write it in your copy of the notebook, then compare.",
    "student": "**Your answer:** write it in your copy of the notebook.",
}
MODEL_ANSWER_TITLE = "A model answer"
# Its fold in a workbook (downloads, launchables): translated from `course` (i18n.pages).
MODEL_ANSWER_SUMMARY = "A model answer (open it once you have written yours)"


def _runs_a_question(source: str) -> bool:
    from checks._quiz import is_question

    groups = re.findall(r'checks\.run\(\s*["\']([\w.]+)["\']', source)
    return any(is_question(group) for group in groups)


def edition_config(text: str, edition: str) -> str:
    """The staged ``_config.yml``: as written for the reader; trimmed for students."""
    if edition == "reader":
        return text
    config = yaml.safe_load(text)
    config["title"] = STUDENT_TITLE.format(title=config.get("title", "")).strip()
    config.pop("launch_buttons", None)  # they open the source notebooks, solutions included
    html = config.setdefault("html", {})
    html["use_edit_page_button"] = False
    return "# Staged by `python -m autograder stage-book --edition student`.\n" + yaml.safe_dump(
        config, allow_unicode=True, sort_keys=False
    )


def _sync_tree(src: Path, dest: Path) -> None:
    for path in src.rglob("*"):
        if path.is_file():
            target = dest / path.relative_to(src)
            if not target.exists() or target.stat().st_size != path.stat().st_size:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)


def stage_book(
    dest: Path, root: Path = nbs.ROOT, edition: str = "reader", lang: str = "en"
) -> None:
    """Write an edition of the book to ``dest``; ``lang``: its language (autograder.i18n)."""
    from autograder.book import i18n_stage

    if edition not in EDITIONS:
        raise ValueError(f"unknown edition {edition!r}; the editions are {EDITIONS}")
    dest = dest.resolve()
    dest.mkdir(parents=True, exist_ok=True)
    for name in COPIED:
        data = (root / name).read_bytes()
        if name == "_config.yml":
            text = edition_config(data.decode(), edition)
            data = i18n_stage.localize_config(
                text, lang, edition, root, dest, student_title=STUDENT_TITLE
            ).encode()
        nbs.write_if_changed(dest / name, data)
    for name in STATIC:
        if (root / name).is_dir():
            _sync_tree(root / name, dest / name)
    for path in sorted((root / "book").rglob("*")):
        if not path.is_file() or {".ipynb_checkpoints", "__pycache__"} & set(path.parts):
            continue  # Jupyter's and Python's caches (book/figures/make_diagrams.py is imported)
        target = dest / path.relative_to(root)
        if path.suffix == ".ipynb":
            nb = nbs.read(path)
            # The setup cell (autograder.book.launch) comes first, so that the downloadable notebook
            # runs anywhere; its tag remove-cell keeps it off the pages.
            nb.cells = launch.with_setup(edition_cells(nb, edition), root)
            page = path.relative_to(root).with_suffix("").as_posix()
            nb = i18n_stage.localize_notebook(nb, lang, page, root)
            nbs.write_if_changed(target, nbformat.writes(nb).encode())
        elif path.suffix == ".md" and is_myst_notebook(path.read_text()):
            # A page written as a MyST notebook (the introduction) gets the setup cell too.
            nbs.write_if_changed(target, with_setup_cell(path.read_text(), root).encode())
        else:
            nbs.write_if_changed(target, path.read_bytes())
    i18n_stage.stage_catalogs(dest, lang, root)


def is_myst_notebook(text: str) -> bool:
    """Is ``text`` a MyST Markdown notebook (front matter with a kernelspec)?"""
    if not text.startswith("---\n"):
        return False
    front = text.split("\n---\n", 1)[0]
    return "kernelspec:" in front


def with_setup_cell(text: str, root: Path = nbs.ROOT) -> str:
    """A MyST notebook with the setup cell as its first code cell, after its title."""
    cell = launch.setup_cell(root)
    tags = json.dumps(cell.metadata["tags"])
    block = f"```{{code-cell}} ipython3\n:tags: {tags}\n\n{cell.source}\n```\n"
    lines = text.splitlines(keepends=True)
    end = lines.index("---\n", 1) + 1  # the front matter's closing line
    at = next((i + 1 for i in range(end, len(lines)) if lines[i].startswith("# ")), end)
    return "".join([*lines[:at], "\n", block, *lines[at:]])


# ---------------------------------------------------------------- downloads (Sphinx extension)


PAGE_ONLY = (INTERNAL, REFERENCE, NOTE)  # metadata.edition of cells no workbook holds
REFERENCE_STEP = (
    "# To go on with the course's reference instead of your own, remove the # below:\n# {line}"
)
# A model answer's fold (its title may be translated: the cell is marked MODEL_ANSWER).
_ADMONITION = re.compile(
    r"```\{admonition\} (?P<title>[^\n]*)\n:class: dropdown\n\n(?P<body>.*)\n```$", re.DOTALL
)


def workbook(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A staged chapter (either edition) as a student runs it: see the module docstring.

    Stubs, then self-checks that test the student's code; the reference one explicit step
    away, under each stub; no reference solution, revealing cell, note about outputs or
    output; a model answer and a hint folded in ``<details>``, which Jupyter and Colab show
    closed.
    """
    nb = copy.deepcopy(nb)
    cells = []
    for cell in nb.cells:
        edition = cell.metadata.get("edition")
        if edition in PAGE_ONLY or questions.reveals(cell):
            continue
        if edition == STUB:
            reference = cell.metadata.pop("reference", None)
            if reference:
                cell.source = f"{cell.source}\n\n\n{REFERENCE_STEP.format(line=reference)}"
            tags = [t for t in cell.metadata.get("tags", []) if t != "skip-execution"]
            cell.metadata["tags"] = tags
            if not tags:
                del cell.metadata["tags"]
        if edition == MODEL_ANSWER:
            match = _ADMONITION.search(cell.source)
            if match:
                cell.source = (
                    cell.source[: match.start()]
                    + f"<details><summary>{MODEL_ANSWER_SUMMARY}</summary>\n\n"
                    f"{match['body']}\n\n</details>"
                )
        if cell.cell_type == "markdown":  # a hint: folded, as the book shows it
            cell.source = launch.plain_dropdowns(cell.source)
        cell.metadata.pop("edition", None)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cells.append(cell)
    nb.cells = cells
    return nb


def downloadable(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook a reader downloads from a page of either edition: its workbook."""
    return workbook(nb)


def to_myst(nb: nbformat.NotebookNode) -> str:
    """The notebook as a MyST Markdown notebook (jupytext's ``md:myst``), without outputs.

    Each code cell keeps only the metadata in :data:`KEEP` (its tags and figure options);
    the notebook keeps its kernel, and its code cells are ``ipython3`` as in the book.
    """
    import jupytext

    kernel = nb.metadata.get("kernelspec") or {
        "display_name": "Python 3",
        "language": "python",
        "name": "python3",
    }
    text = nbformat.v4.new_notebook(
        metadata={
            "kernelspec": {
                k: kernel[k] for k in ("display_name", "language", "name") if k in kernel
            },
            "language_info": {"name": "python", "pygments_lexer": "ipython3"},
        }
    )
    for cell in nb.cells:
        cell = copy.deepcopy(cell)
        cell.pop("id", None)
        if cell.cell_type == "code":
            cell.metadata = {k: v for k, v in cell.metadata.items() if k in KEEP and v}
            cell.outputs, cell.execution_count = [], None
        else:
            cell.metadata = {}
        text.cells.append(cell)
    return jupytext.writes(text, fmt="md:myst")


def _notebook_docs(app):
    """Every page that is a notebook: a chapter (.ipynb) or a MyST notebook (.md)."""
    for docname in sorted(app.env.found_docs):
        path = Path(app.env.doc2path(docname))
        if path.suffix == ".ipynb" or (path.suffix == ".md" and is_myst_notebook(path.read_text())):
            yield docname, path


def read_page(path: Path) -> nbformat.NotebookNode:
    """A notebook page as a notebook, whether written as .ipynb or as a MyST notebook."""
    if path.suffix == ".ipynb":
        return nbs.read(path)
    from myst_nb.core.read import read_myst_markdown_notebook

    return read_myst_markdown_notebook(path.read_text())


def _is_thebe(script) -> bool:
    filename = str(getattr(script, "filename", "") or "")
    body = str(getattr(script, "attributes", {}).get("body", ""))
    return filename.endswith("sphinx-thebe.js") or "THEBE_JS_URL" in body


def _page_context(app, pagename, templatename, context, doctree):
    # Thebe is off (launch_buttons.thebe: false), but sphinx-thebe still adds its loader, and
    # its inline `const THEBE_JS_URL` twice: a console error on every page. Drop both.
    if "script_files" in context:
        context["script_files"] = [s for s in context["script_files"] if not _is_thebe(s)]
    # The book has no icon: say so, or every browser asks the server for /favicon.ico (a 404).
    context["metatags"] = context.get("metatags", "") + '\n<link rel="icon" href="data:,">'
    _retarget_launch_buttons(app, pagename, context)
    if not str(context.get("sourcename", "")).endswith(".ipynb"):
        return
    for group in context.get("header_buttons", []):
        if group.get("label") == "download-buttons":
            url = f"{context['pathto']('_sources', 1)}/{pagename}.md"
            button = {
                "type": "link",
                "url": url,
                "text": ".md",
                "tooltip": MYST_TOOLTIP,
                "icon": "fas fa-file-lines",
                "label": "download-myst-button",
            }
            group["buttons"].insert(1, button)


def _retarget_launch_buttons(app, pagename, context):
    """Point Colab, Binder and JupyterHub at the launchable notebook, not the nbgrader source.

    sphinx-book-theme links them to ``book/<chapter>.ipynb`` on ``repository.branch``: the
    source with every solution and hidden test, which needs the course installed. The
    launchable notebooks (``python -m autograder launchables``) are published to
    ``repository.launch_branch`` by the publishing workflow.
    """
    urls = launch.launch_urls(Path(pagename).name)
    for group in context.get("header_buttons", []):
        if group.get("label") == "launch-buttons":
            for button in group.get("buttons", []):
                if button.get("text") in urls:
                    button["url"] = urls[button["text"]]


def _write_downloads(app, exception):
    from autograder.book import i18n_extension

    if exception is not None or app.builder.format != "html":
        return
    sources = Path(app.outdir) / "_sources"
    for docname, path in _notebook_docs(app):
        nb = downloadable(read_page(path))
        nb = i18n_extension.translate_download(app, docname, nb)  # the build's language
        target = sources / f"{docname}.ipynb"
        nbs.write_if_changed(target, nbformat.writes(nb).encode())
        nbs.write_if_changed(target.with_suffix(".md"), to_myst(nb).encode())


def setup(app):
    app.connect("html-page-context", _page_context, priority=600)
    app.connect("build-finished", _write_downloads)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
