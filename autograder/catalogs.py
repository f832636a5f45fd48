"""Catalogs: made from the source by Sphinx's gettext builder, updated by sphinx-intl, checked.

``make catalogs`` (:func:`update`):

1. stages the reader edition and runs Sphinx's gettext builder over it: one template
   (``.pot``) per page, since ``gettext_compact`` is off;
2. :func:`write_templates` takes out of each page's template the notes and prompts that
   ``autograder.book.editions`` adds (they are ``course.pot``'s, translated once for every
   page), adds a notebook's image alt texts and fold prompts (cell metadata, which
   Sphinx never extracts), and gives every message the place of its source
   (``book/masking.ipynb:70003`` is cell 7, line 3, as myst-nb counts); and writes the
   templates of ``course``, ``sphinx``, ``figures`` (the diagrams' labels, read out of
   ``book/figures/make_diagrams.py``: :func:`figure_messages`) and ``README`` (README.md's
   student part, :mod:`.readme`);
3. ``sphinx-intl update`` merges the templates into ``locale/<locale>/LC_MESSAGES``: new
   messages come in untranslated, changed ones fuzzy with the old translation, removed
   ones go;
4. a message with nothing to translate (a number, display math, only code) gets itself
   as its translation;
5. the CLI then writes ``README.<locale>.md`` from README.md and ``README.po``
   (:func:`.readme.write`).

:func:`problems` is what the tests check: every catalog listed in
``locale/<locale>/translated.txt`` complete (nothing untranslated or fuzzy) and in step
with the source (no message missing, none left over), and, in every catalog, each
translation keeping its message's roles, code, math and links (:func:`markup_problems`)
and the term pairs of ``terms.tsv`` (:func:`term_problems`).

Why one module: making the templates and checking the catalogs share the extractors:
:func:`source_messages` is both what a template holds and what :func:`completeness_problems`
holds a catalog to, so the two cannot drift. The checks of a translation's markup and terms
(:func:`markup` to :func:`glossary_problems`, about 170 lines) need no extractor and would
be clearer as a module of their own; not done yet because tests/test_i18n.py reaches them as
``catalogs.*`` in a dozen places.
"""

from __future__ import annotations

import ast
import json
import re
import string
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

from autograder import i18n
from autograder import notebooks as nbs
from autograder.i18n import Term, manifest, markdown, pages, readme, terms

EDITIONS = "autograder/book/editions.py"
DIAGRAMS = "book/figures/make_diagrams.py"
FIGURES = "figures"  # the domain of the diagrams' labels
SEARCH_BAR = "Search this book..."
HEADER = (
    "Translations of Attention, Step by Step: see autograder/i18n/__init__.py.\n"
    "A location in a notebook is cell * 10000 + line (as myst-nb counts); the tests name both."
)


# ---------------------------------------------------------------- the course's own messages


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
        constants = _constants(tree)
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


# ---------------------------------------------------------------- the checks' messages

CHECKS = "checks"  # the domain of the self-checks' messages (checks/_i18n.py)


def _constants(tree: ast.Module) -> dict[str, str]:
    return {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }  # fmt: skip


def _templates(path: Path) -> Iterator[tuple[str, int]]:
    """The messages of ``tr("...")`` calls in a module of ``checks`` (a string, or the name of
    a module's string constant), and of ``N_("...")`` (marked, translated later), with their
    lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    constants = _constants(tree)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id not in ("tr", "N_") or len(node.args) != 1:
            continue
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            yield arg.value, node.lineno
        elif isinstance(arg, ast.Name) and arg.id in constants:
            yield constants[arg.id], node.lineno


def check_messages(root: Path = nbs.ROOT) -> list[CourseMessage]:
    """What the self-checks say: the ``tr`` templates of ``checks/`` and every check's question
    (the first line of its docstring), hidden checks' included, and the questions' hints (the
    ``# hint`` comments of the answer cells, at their cells); each once, at its first place (a
    message said by visible checks is at a visible place)."""
    import checks
    import checks.hidden  # noqa: F401  (registers the hidden checks)
    from autograder.book import questions
    from checks._core import REGISTRY

    base = root / "checks"
    found: dict[str, CourseMessage] = {}

    def add(msgid: str, where: str, line: int, note: str, python_format: bool) -> None:
        old = found.get(msgid)
        if old is None or (_hidden(old.where) and not _hidden(where)):
            found[msgid] = CourseMessage(msgid, where, note, python_format, line=line)

    for path in sorted(base.rglob("*.py"), key=lambda p: (_hidden(str(p)), str(p))):
        rel = path.relative_to(root).as_posix()
        for msgid, line in _templates(path):
            add(msgid, rel, line, "a template of the checks", bool(_fields(msgid)))
    package = Path(checks.__file__).parent
    for items in REGISTRY.values():
        for item in items:
            code = getattr(item.fn, "__code__", None)
            file = Path(code.co_filename) if code else package / "_core.py"
            try:
                rel = (root / "checks" / file.relative_to(package)).relative_to(root).as_posix()
            except ValueError:
                rel = file.name
            line = code.co_firstlineno if code else 1
            add(item.question, rel, line, f"a check's question ({item.group})", False)
    for q in questions.questions(root):
        where = f"book/{q.chapter}.ipynb"
        for text in [*q.hints.values(), q.hint]:
            if text and text not in found:
                note = f"a hint of {q.name}'s self-check, for a wrong answer"
                found[text] = CourseMessage(text, where, note, False, line=q.cell * 10000 + 1)
    return sorted(found.values(), key=lambda m: (_kind(m.where), m.where))


def hint_messages(root: Path = nbs.ROOT) -> set[str]:
    """The questions' hints (a hidden check may say one too, as its reason)."""
    from autograder.book import questions

    return {t for q in questions.questions(root) for t in [*q.hints.values(), q.hint] if t}


def _hidden(where: str) -> bool:
    return "checks/hidden/" in where.replace("\\", "/")


def _hint(where: str) -> bool:
    """Is the message at ``where`` a question's hint (said only where ``solutions/answers.py`` is)?"""
    return where.replace("\\", "/").startswith("book/")


def _kind(where: str) -> int:
    return 2 if _hint(where) else int(_hidden(where))


def _fields(text: str) -> list[str]:
    """The replacement fields of a str.format template, as written (``{n:.3g}``, ``{x!r}``)."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError:
        return ["<not a template>"]
    return sorted(
        "{" + name + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}"
        for _, name, spec, conv in parsed
        if name is not None
    )


def runtime_tables(code: str, root: Path = nbs.ROOT) -> dict[Path, dict[str, str]]:
    """What ``checks/_i18n.py`` reads at run time, from the ``checks`` catalog: the translated
    messages of the visible checks in ``checks/_messages/<locale>.json``, those that only the
    hidden checks say in ``checks/hidden/_messages/<locale>.json``, and the questions' hints
    beside the self-study keys, in ``solutions/_messages/<locale>.json`` (never in a release,
    as the keys: a hint names a wrong answer)."""
    locale = i18n.language(code).locale
    done = i18n.translations(code, CHECKS, root)
    tables: tuple[dict, dict, dict] = ({}, {}, {})  # visible, hidden, hints
    hints = hint_messages(root)
    for m in check_messages(root):
        if done.get(m.msgid):
            tables[_kind(m.where)][m.msgid] = done[m.msgid]
            if m.msgid in hints and _hidden(m.where):  # a hidden check's reason, and a hint
                tables[2][m.msgid] = done[m.msgid]
    return {
        root / "checks" / "_messages" / f"{locale}.json": tables[0],
        root / "checks" / "hidden" / "_messages" / f"{locale}.json": tables[1],
        root / "solutions" / "_messages" / f"{locale}.json": tables[2],
    }


def runtime_text(table: dict[str, str]) -> str:
    return json.dumps(table, ensure_ascii=False, indent=0, sort_keys=True) + "\n"


def write_runtime(code: str, root: Path = nbs.ROOT) -> list[Path]:
    """Write :func:`runtime_tables` where they differ; return the files written."""
    written = []
    for path, table in runtime_tables(code, root).items():
        text = runtime_text(table)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


UI = {
    "course": course_messages,
    "sphinx": lambda root=None: theme_messages(),
    FIGURES: figure_messages,
    CHECKS: check_messages,
}


# ---------------------------------------------------------------- templates


def _occurrence(message: pages.Message) -> tuple[str, str]:
    line = message.line if message.cell is None else message.cell * 10000 + message.line
    return (message.file, str(line))


def write_templates(pot_dir: Path, root: Path = nbs.ROOT) -> list[str]:
    """Rewrite the page templates Sphinx wrote under ``pot_dir`` (see the module docstring)
    and write those of ``course``, ``sphinx`` and ``README``; return where Sphinx and
    :mod:`.pages` disagree (a message one of them finds and the other does not), which must
    not happen."""
    import polib

    ours = {m.msgid for m in course_messages(root) if m.staged}
    unplaced = []
    for page in nbs.toc_files(root):
        path = pot_dir / f"{page}.pot"
        pot = polib.pofile(str(path), wrapwidth=0)
        found = pages.page_messages(page, root)
        places: dict[str, list[pages.Message]] = {}
        for m in found:
            places.setdefault(m.msgid, []).append(m)
        entries, order = [], {m.msgid: i for i, m in reversed(list(enumerate(found)))}
        for entry in pot:
            if entry.msgid in ours:
                continue
            if entry.msgid in places:
                entry.occurrences = [_occurrence(m) for m in places[entry.msgid]]
            else:
                unplaced.append(f"{page}: {entry.msgid[:80]!r}")
            entries.append(entry)
        sphinx_has = {e.msgid for e in entries}
        for m in found:
            if m.kind not in pages.SPHINX_MISSES and m.msgid not in sphinx_has:
                unplaced.append(f"{m.where}: Sphinx has no message {m.msgid[:80]!r}")
        for m in found:
            if m.kind in pages.SPHINX_MISSES and m.msgid not in sphinx_has:
                sphinx_has.add(m.msgid)
                entries.append(
                    polib.POEntry(msgid=m.msgid, msgstr="", occurrences=[_occurrence(m)])
                )
        for entry in entries:
            if any(m.kind in pages.SPHINX_MISSES for m in places.get(entry.msgid, [])):
                entry.comment = "cell metadata (mystnb): " + ", ".join(
                    sorted({m.kind for m in places[entry.msgid]})
                )
        entries.sort(key=lambda e: order.get(e.msgid, len(order)))
        pot[:] = entries
        pot.header = HEADER
        pot.save(str(path))
    for domain in UI:
        write_ui_template(pot_dir, domain, root)
    write_readme_template(pot_dir, root)
    return unplaced


def write_ui_template(pot_dir: Path, domain: str, root: Path = nbs.ROOT) -> None:
    """``<domain>.pot`` of a catalog that is not a page's: ``course``, ``sphinx``, ``figures``."""
    import polib

    entries: dict[str, polib.POEntry] = {}
    for m in UI[domain](root):  # a message said in several places is one entry
        entry = entries.get(m.msgid)
        if entry is None:
            entries[m.msgid] = polib.POEntry(
                msgid=m.msgid,
                msgstr="",
                occurrences=[(m.where, str(m.line))],
                comment=m.note,
                flags=["python-brace-format"] if m.python_format else [],
            )
        else:
            entry.occurrences.append((m.where, str(m.line)))
            if m.note not in entry.comment.split("; "):
                entry.comment += f"; {m.note}"
    _save_template(pot_dir / f"{domain}.pot", list(entries.values()))


def write_readme_template(pot_dir: Path, root: Path = nbs.ROOT) -> None:
    """``README.pot``: the messages of README.md's student part (:mod:`.readme`)."""
    import polib

    entries: dict[str, polib.POEntry] = {}
    for m in readme.messages(root):
        entry = entries.setdefault(m.msgid, polib.POEntry(msgid=m.msgid, msgstr=""))
        entry.occurrences.append(_occurrence(m))
    _save_template(pot_dir / f"{readme.DOMAIN}.pot", list(entries.values()))


def _save_template(path: Path, entries: list) -> None:
    import polib

    pot = polib.POFile(wrapwidth=0)
    pot.header = HEADER
    pot.metadata = {"Content-Type": "text/plain; charset=UTF-8"}
    pot.extend(entries)
    pot.save(str(path))


# ---------------------------------------------------------------- updating the catalogs


_NOTHING = re.compile(r"\{[\w:]+\}`[^`]*`|`+[^`]*`+|\$\$.*?\$\$|\$[^$]*\$|https?://\S+", re.S)


def needs_translation(msgid: str) -> bool:
    """Whether a message has words: not a number, display math or only code and math."""
    if msgid.startswith("\n"):  # display math, as Sphinx extracts it
        return False
    return bool(re.search(r"[^\W\d_]", _NOTHING.sub(" ", msgid)))


def update(pot_dir: Path, code: str, root: Path = nbs.ROOT) -> list[Path]:
    """sphinx-intl update, then fill in the messages with nothing to translate."""
    import polib

    lang = i18n.language(code)
    subprocess.run(
        [
            Path(sys.executable).with_name("sphinx-intl"), "update", "--pot-dir", str(pot_dir),
            "--locale-dir", str(root / i18n.LOCALE), "--language", lang.locale,
            "--line-width", "0", "--no-obsolete", "--jobs", "1",
        ],
        check=True,
    )  # fmt: skip
    written = []
    for path in sorted(i18n.catalog_dir(code, root).rglob("*.po")):
        pot = pot_dir / path.relative_to(i18n.catalog_dir(code, root)).with_suffix(".pot")
        if not pot.exists():  # a page that left the book
            path.unlink()
            written.append(path)
            continue
        po = polib.pofile(str(path), wrapwidth=0)
        po.header = HEADER
        po.metadata_is_fuzzy = False
        po.metadata["Project-Id-Version"] = "Attention, Step by Step"
        domain = path.relative_to(i18n.catalog_dir(code, root)).with_suffix("").as_posix()
        for entry in po:
            if (not entry.msgstr or entry.fuzzy) and not needs_translation(entry.msgid):
                entry.msgstr = entry.msgid  # a number or a formula: itself, never fuzzy
                entry.flags = [f for f in entry.flags if f != "fuzzy"]
                entry.previous_msgid = entry.previous_msgctxt = None
            if domain not in UI:  # babel takes a role's or a formula's braces for a template
                entry.flags = [f for f in entry.flags if not f.startswith("python")]
        text = po.__unicode__()
        if text != path.read_text(encoding="utf-8"):
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


# ---------------------------------------------------------------- checks


def catalogs(code: str, root: Path = nbs.ROOT) -> list[str]:
    """The domains of every catalog there is: ``course`` and ``book/<page>``."""
    base = i18n.catalog_dir(code, root)
    return sorted(p.relative_to(base).with_suffix("").as_posix() for p in base.rglob("*.po"))


def source_messages(domain: str, root: Path = nbs.ROOT) -> list[pages.Message]:
    if domain == readme.DOMAIN:
        return readme.messages(root)
    if domain in UI:
        return [pages.Message(m.msgid, m.where, m.line, kind=domain) for m in UI[domain](root)]
    return pages.page_messages(domain, root)


def _po(code: str, domain: str, root: Path):
    import polib

    return polib.pofile(str(i18n.catalog_path(code, domain, root)), wrapwidth=0)


def _excerpt(msgid: str) -> str:
    text = " ".join(msgid.split())
    return repr(text if len(text) <= 70 else text[:67] + "...")


def completeness_problems(code: str, domain: str, root: Path = nbs.ROOT) -> list[str]:
    """Untranslated, fuzzy, missing and left-over messages of one catalog, each with where
    its English is (chapter, cell and line) and where its entry is in the catalog."""
    path = i18n.catalog_path(code, domain, root)
    rel = path.relative_to(root)
    if not path.exists():
        return [f"{rel}: no catalog (run `make catalogs`)"]
    source = source_messages(domain, root)
    where = {}
    for m in source:
        where.setdefault(m.msgid, m.where)
    found = []
    entries = {}
    for entry in _po(code, domain, root):
        if entry.obsolete:
            found.append(f"{rel}:{entry.linenum}: obsolete entry {_excerpt(entry.msgid)}")
            continue
        entries[entry.msgid] = entry
        if entry.msgid not in where:
            found.append(
                f"{rel}:{entry.linenum}: {_excerpt(entry.msgid)} is no longer in the source "
                "(run `make catalogs`)"
            )
        elif entry.fuzzy:
            found.append(
                f"{where[entry.msgid]}: fuzzy ({rel}:{entry.linenum}) {_excerpt(entry.msgid)}"
            )
        elif not entry.msgstr:
            found.append(
                f"{where[entry.msgid]}: untranslated ({rel}:{entry.linenum}) {_excerpt(entry.msgid)}"
            )
    for msgid, place in where.items():
        if msgid not in entries:
            found.append(f"{place}: not in {rel} (run `make catalogs`) {_excerpt(msgid)}")
    return found


PLACEHOLDER = re.compile(r"\{\w*\}|%\(\w+\)[sd]")
_ROLE = re.compile(r"\{([\w:-]+)\}`([^`]*)`")
_CODE = re.compile(r"(`+)(.+?)\1", re.S)
_MATH = re.compile(r"\$\$(.+?)\$\$|\$([^$\s](?:[^$]*[^$\s])?)\$", re.S)
_LINK = re.compile(r"\]\(([^)\s]+)\)|<(https?://[^>\s]+)>|(?<![(<])(https?://[^\s)>]+)")


def _role_target(name: str, text: str) -> str:
    match = re.search(r"<([^<>]+)>\s*$", text)
    return match[1].strip() if match else text.strip()


def markup(text: str) -> dict[str, list[str]]:
    """The parts of a message a translation must keep: roles (name and target), inline code,
    math and link targets; sorted, so that their order may change."""
    roles = [f"{{{n}}}`{_role_target(n, t)}`" for n, t in _ROLE.findall(text)]
    rest = _ROLE.sub(" ", text)
    code = [m[2] for m in _CODE.finditer(rest)]
    rest = _CODE.sub(" ", rest)
    math = [a or b for a, b in _MATH.findall(rest)]
    rest = _MATH.sub(" ", rest)
    links = [a or b or c for a, b, c in _LINK.findall(rest)]
    return {
        "role": sorted(roles),
        "code": sorted(code),
        "math": sorted(math),
        "link": sorted(links),
    }


def _stray_stars(text: str) -> int:
    """Asterisks that markdown-it leaves in a message's text: emphasis that did not form."""
    tokens = markdown._parser(pages.extensions()).parseInline(text)
    return sum(
        child.content.count("*")
        for token in tokens
        for child in token.children or []
        if child.type == "text"
    )


def markup_problems(code: str, domain: str, root: Path = nbs.ROOT) -> list[str]:
    """Translations that lost, changed or added a role, inline code, math or a link."""
    path = i18n.catalog_path(code, domain, root)
    rel = path.relative_to(root)
    found = []
    for entry in _po(code, domain, root):
        if not entry.msgstr or entry.obsolete or entry.fuzzy:  # fuzzy: not used
            continue
        if entry.msgid.startswith("\n"):  # display math: itself, or nothing
            if entry.msgstr != entry.msgid:
                found.append(f"{rel}:{entry.linenum}: display math changed {_excerpt(entry.msgid)}")
            continue
        if domain == CHECKS:  # plain text: its format fields and its `code` stay
            if _fields(entry.msgstr) != _fields(entry.msgid):
                found.append(
                    f"{rel}:{entry.linenum}: format fields {_fields(entry.msgid)} changed to "
                    f"{_fields(entry.msgstr)} in {_excerpt(entry.msgid)}"
                )
            if markup(entry.msgstr)["code"] != markup(entry.msgid)["code"]:
                found.append(
                    f"{rel}:{entry.linenum}: inline code differs in {_excerpt(entry.msgid)}"
                )
            continue
        if domain in UI and PLACEHOLDER.search(entry.msgid):  # a template: its fields stay
            want = sorted(re.findall(PLACEHOLDER, entry.msgid))
            if sorted(re.findall(PLACEHOLDER, entry.msgstr)) != want:
                found.append(f"{rel}:{entry.linenum}: placeholders {want} changed")
            continue
        if _stray_stars(entry.msgstr) > _stray_stars(entry.msgid):
            found.append(
                f"{rel}:{entry.linenum}: * or ** left as text in {_excerpt(entry.msgstr)}: "
                "CommonMark does not open or close emphasis between a punctuation mark and a "
                "letter, so write **学习目标**：, not **学习目标：**"
            )
        source, target = markup(entry.msgid), markup(entry.msgstr)
        for kind in source:
            if source[kind] != target[kind]:
                lost = [x for x in source[kind] if x not in target[kind]]
                added = [x for x in target[kind] if x not in source[kind]]
                found.append(
                    f"{rel}:{entry.linenum}: {kind} differs (missing {lost}, extra {added}) in "
                    f"{_excerpt(entry.msgid)}"
                )
    return found


# ---------------------------------------------------------------- term pairs


def _prose(text: str) -> str:
    """Text without code, math, link targets and role targets (a role's title stays)."""

    def title(match):
        inner = match[2]
        return re.sub(r"<[^<>]+>\s*$", "", inner) if "<" in inner else inner

    text = _ROLE.sub(lambda m: " " + (title(m) if m[1] == "term" else "") + " ", text)
    text = _CODE.sub(" ", text)
    text = _MATH.sub(" ", text)
    return re.sub(r"\]\([^)]*\)|https?://\S+", " ", text)


_IDENTIFIERS = re.compile(r"\{[^{}]*\}|[\w.]*\w\.\w+(?:\(\))?")


def allowed(entry) -> set[str]:
    """Terms a translator comment lets an entry render otherwise: ``# terms: value, key``
    (with the reason after a dash), for the rare word that is not the listed term."""
    found = set()
    for line in (entry.tcomment or "").splitlines():
        match = re.match(r"\s*terms:\s*([^—-]+)", line)
        if match:
            found |= {t.strip().lower() for t in match[1].split(",") if t.strip()}
    return found


def term_problems(code: str, domain: str, root: Path = nbs.ROOT) -> list[str]:
    """Translations that render a listed English term otherwise than ``terms.tsv`` says."""
    path = i18n.catalog_path(code, domain, root)
    rel = path.relative_to(root)
    found = []
    listed = terms(code, root)
    for entry in _po(code, domain, root):
        if not entry.msgstr or entry.obsolete or entry.fuzzy or not needs_translation(entry.msgid):
            continue
        english, chinese = _prose(entry.msgid), _prose(entry.msgstr)
        if domain == CHECKS:  # plain text: format fields and dotted names are not prose
            english, chinese = (_IDENTIFIERS.sub(" ", text) for text in (english, chinese))
        exempt = allowed(entry)
        for term in listed:
            if term.english[0].lower() in exempt or not term.pattern.search(english):
                continue
            if not any(c in chinese for c in term.chinese):
                found.append(
                    f"{rel}:{entry.linenum}: {term.english[0]!r} should be "
                    f"{' or '.join(term.chinese)} in {_excerpt(entry.msgstr)} "
                    "(or say why not in a translator comment: `# terms: "
                    f"{term.english[0]} - why`)"
                )
    return found


def glossary_problems(code: str, root: Path = nbs.ROOT) -> list[str]:
    """Does ``terms.tsv`` agree with book/glossary.md: every glossary entry listed, and the
    Chinese name the glossary gives (``Chinese: ...``) the first rendering of its terms?"""
    entries = [
        b for b in markdown.blocks((root / "book/glossary.md").read_text(), pages.extensions(root))
    ]
    glossary, current = {}, []
    for block in entries:
        if block.kind == "term":
            current.append(block.msgid)
        elif block.kind == "paragraph" and current:
            for term in current:
                glossary[term] = block.msgid
            current = []
    listed = terms(code, root)
    found = []
    by_entry: dict[str, list[Term]] = {}
    for term in listed:
        if term.glossary:
            by_entry.setdefault(term.glossary, []).append(term)
            if term.glossary not in glossary:
                found.append(f"terms.tsv:{term.line}: no glossary entry {term.glossary!r}")
            elif f"{term.chinese[0]}" not in glossary[term.glossary].split("Chinese:", 1)[-1]:
                found.append(
                    f"terms.tsv:{term.line}: {term.chinese[0]} is not the Chinese the glossary "
                    f"gives for {term.glossary!r}"
                )
    for entry in glossary:
        if entry not in by_entry:
            found.append(f"book/glossary.md: {entry!r} has no line in terms.tsv")
    return found


def problems(code: str, root: Path = nbs.ROOT) -> Iterator[str]:
    """Everything the tests reject (see the module docstring)."""
    every = catalogs(code, root)
    for domain in manifest(code, root):
        yield from completeness_problems(code, domain, root)
    for domain in every:
        yield from markup_problems(code, domain, root)
        yield from term_problems(code, domain, root)
    yield from glossary_problems(code, root)
