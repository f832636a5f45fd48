"""The messages of the course's own text, which no page holds: what the catalogs ``course``,
``sphinx`` and ``figures`` translate.

- :func:`course_messages` (``course``): the book's title and authors, the folds' prompts and
  footer of ``_config.yml``, the notes and titles that :mod:`autograder.book.editions` adds
  to a staged page, the READMEs of a release and of the launchable notebooks, the theme's
  buttons, and the words of the feedback pages (:func:`tool_messages`: every
  ``tr("...")`` of :data:`TOOL_MODULES`);
- :func:`theme_messages` (``sphinx``): the strings of Sphinx's and the themes' templates
  that their own zh_CN catalogs leave in English;
- :func:`figure_messages` (``figures``): the diagrams' labels and titles, read out of
  ``book/figures/make_diagrams.py``.

Each message is a :class:`CourseMessage`, with the file and line that say it and a note for
the translator. The self-checks' messages (the catalog ``checks``) are
:mod:`autograder.catalogs.checks_messages`'s; :mod:`autograder.catalogs` writes the templates.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import yaml

from autograder import notebooks as nbs
from autograder.i18n.review import PLACEHOLDER

EDITIONS = "autograder/book/editions.py"
DIAGRAMS = "book/figures/make_diagrams.py"
SEARCH_BAR = "Search this book..."


@dataclass(frozen=True)
class CourseMessage:
    msgid: str
    where: str  # the file that says it
    note: str = ""  # for the translator
    python_format: bool = False
    staged: bool = False  # written into the staged pages (not part of any page's catalog)
    line: int = 1  # where in that file


def course_messages(root: Path = nbs.ROOT) -> list[CourseMessage]:
    """What the course's tools write for readers: edition notes, titles, prompts, READMEs,
    the words of the feedback pages (:func:`tool_messages`)."""
    from autograder import course
    from autograder.book import editions, launch
    from autograder.book.i18n_extension import INCOMPLETE, THEME_BUTTONS

    config = yaml.safe_load((root / "_config.yml").read_text())
    sphinx = (config.get("sphinx") or {}).get("config") or {}
    found = [
        CourseMessage(config["title"], "_config.yml", "the book's title"),
        CourseMessage(config["author"], "_config.yml", "the book's authors"),
        CourseMessage(SEARCH_BAR, "jupyter-book", "the search box (jupyter-book's default text)"),
        CourseMessage(
            editions.STUDENT_TITLE,
            "autograder/book/editions.py",
            "the student edition's title",
            python_format=True,
        ),  # fmt: skip
    ]
    for key in ("nb_code_prompt_show", "nb_code_prompt_hide"):
        if sphinx.get(key):
            found.append(CourseMessage(sphinx[key], "_config.yml", f"{key}: a solution's fold"))
    footer = (config.get("html") or {}).get("extra_footer")
    if footer:
        found.append(CourseMessage(footer.strip(), "_config.yml", "html.extra_footer (HTML)"))
    for edition, note in editions.OUTPUTS_NOTE.items():
        found.append(CourseMessage(note, EDITIONS, f"after a stub ({edition})", staged=True))
    for edition, text in editions.YOUR_ANSWER.items():
        found.append(CourseMessage(text, EDITIONS, f"a written answer ({edition})", staged=True))
    found += [
        CourseMessage(editions.MODEL_ANSWER_TITLE, EDITIONS, "a model answer's title", staged=True),
        CourseMessage(
            editions.MODEL_ANSWER_SUMMARY, EDITIONS, "a model answer's fold in a workbook"
        ),
        CourseMessage(editions.MYST_TOOLTIP, "autograder/book/editions.py", "the .md download button"),
        CourseMessage(
            course.SETUP_NOTE, "autograder/course.py", "README.md of a released chapter",
            python_format=True,
        ),
        CourseMessage(
            launch.README, "autograder/book/launch.py", "README.md of the launchable notebooks",
            python_format=True,
        ),
    ]  # fmt: skip
    found.append(
        CourseMessage(
            INCOMPLETE, "autograder/book/i18n_extension.py", "a page not fully translated"
        )
    )
    found += [
        CourseMessage(m, "sphinx-book-theme", "a button of the page's header")
        for m in THEME_BUTTONS
    ]
    return found + tool_messages(root)


# The tools whose every `tr("...")` (or `say("...")`, `page.tr("...")`) is a message of
# `course`: the feedback page and the words of a score.
TOOL_MODULES = {
    "autograder/results/feedback.py": "a feedback page",
    "autograder/grading/scores.py": "a score, on a feedback page",
    "autograder/records.py": "what the grader recorded, on a feedback page",
    "autograder/gradescope/bundle.py": "Gradescope's results, as a student sees them",
}
TOOL_CALLS = {"tr", "say", "N_"}


class ToolMessageError(ValueError):
    """A ``tr(...)`` of a tool that ``make catalogs`` cannot read."""


def tool_messages(root: Path = nbs.ROOT) -> list[CourseMessage]:
    """The messages of :data:`TOOL_MODULES`, as xgettext finds them: the literal first argument
    (or a module constant's name) of every call of ``tr``, ``say`` or ``<x>.tr``, in the order
    of the file. Any other argument is an error: its text could not be translated."""
    found = []
    for rel, note in TOOL_MODULES.items():
        tree = ast.parse((root / rel).read_text(encoding="utf-8"), filename=rel)
        constants = string_constants(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name not in TOOL_CALLS:
                continue
            arg = node.args[0] if node.args else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                msgid = arg.value
            elif isinstance(arg, ast.Name) and arg.id in constants:
                msgid = constants[arg.id]
            else:
                raise ToolMessageError(
                    f"{rel}:{node.lineno}: {name}() takes a literal string (or a module "
                    "constant), so that `make catalogs` can read it; fill in its fields after "
                    'it: tr("Chapter: {chapter}").format(chapter=chapter)'
                )
            template = bool(PLACEHOLDER.search(msgid))
            found.append(CourseMessage(msgid, rel, note, template, line=node.lineno))
    return sorted(found, key=lambda m: (list(TOOL_MODULES).index(m.where), m.line))


def theme_messages() -> list[CourseMessage]:
    """Strings of Sphinx's and the themes' templates that their own zh_CN catalogs leave in
    English: the catalog ``sphinx.po``, which Sphinx adds to its own translations."""
    from autograder.book.i18n_extension import THEME_TEMPLATES

    return [CourseMessage(m, "pydata-sphinx-theme", "a template string") for m in THEME_TEMPLATES]


class FigureMessageError(ValueError):
    """A label of book/figures/make_diagrams.py that ``make catalogs`` cannot read."""


def _is_call(node, name: str) -> bool:
    return isinstance(node, ast.Call) and getattr(node.func, "id", "") == name


def figure_messages(root: Path = nbs.ROOT) -> list[CourseMessage]:
    """The words of the diagrams (``book/figures/make_diagrams.py``), as xgettext would find
    them: the literal argument of every ``tr(...)`` call and the title of every
    ``@diagram(name, title, alt)``, in the order of the file, each with its line and its
    diagram. (The alt text is a message of the page that shows the figure, not one of these.)
    A ``tr`` whose argument is not a literal string is an error: its text could not be
    translated."""
    path = root / DIAGRAMS
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for top in tree.body:
        if not isinstance(top, ast.FunctionDef):
            continue
        where = f"a label drawn by {top.name}()"
        for decorator in top.decorator_list:
            if _is_call(decorator, "diagram"):
                name, title = decorator.args[0].value, decorator.args[1]
                where = f"a label of {name}.svg"
                note = f"the title of {name}.svg"
                found.append(CourseMessage(title.value, DIAGRAMS, note, line=title.lineno))
        for node in ast.walk(top):
            if not _is_call(node, "tr"):
                continue
            arg = node.args[0] if len(node.args) == 1 and not node.keywords else None
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                raise FigureMessageError(
                    f"{DIAGRAMS}:{node.lineno}: tr() takes one literal string, so that "
                    "`make catalogs` can read it; fill in a template's fields after it: "
                    'tr("example {b}").format(b=b)'
                )
            template = bool(PLACEHOLDER.search(arg.value))
            found.append(CourseMessage(arg.value, DIAGRAMS, where, template, line=arg.lineno))
    return sorted(found, key=lambda m: m.line)


def string_constants(tree: ast.Module) -> dict[str, str]:
    """The module constants of ``tree`` that are strings: name -> value."""
    return {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }  # fmt: skip
