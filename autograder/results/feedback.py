"""Feedback pages: one static HTML page per student and chapter, whatever they handed in.

A page is built from two things the grader made, never from a file a kernel wrote: the
graded notebook the grader kept (``autograded/<student>/<chapter>/``, see
:mod:`autograder.grading.jobs`) and the gradebook (scores, and the grader's record of what
happened, the ``attention_graded`` table of :mod:`autograder.grading.ledger`).

- **Every student gets a page.** Each submission the gradebook holds for the chapter
  gets one: a notebook that could not be read, was stopped or timed out gets a page with
  its scores and, in plain words, what happened. A page that cannot be built fully (a
  cell that cannot be rendered, a notebook too big to show) says so, on the page.
- **Nothing on a page runs.** The body is rendered here (Markdown with nbconvert's
  renderer, code with Pygments), then sanitized as a whole with nh3 (the Ammonia
  sanitizer): no script, no event handler, no ``javascript:`` link, no style or form of
  a student's. The page's Content-Security-Policy allows no script at all, no request
  to anywhere, and only the page's own stylesheet (by its hash).
- **What a student learns.** Their id and the chapter, the autograded score and the
  points left for hand grading, each test cell named by the checks it runs (hidden
  ones show their one-line description and result, never their code), and the checks'
  messages. Nothing the submission printed while it was graded is shown.
- **In the chapter's language.** A page's own words are those of the language the course
  released the chapter in (the ``metadata.language`` of ``source/<chapter>/<chapter>.ipynb``,
  which ``Course(lang=...)`` and ``release --lang`` write): the ``course`` catalog
  translates every ``tr("...")`` of this module and of :mod:`autograder.grading.scores`
  (:func:`autograder.catalogs.ui_messages.tool_messages`). The course decides, not the file a
  student handed in: a submission that could not be read has no language of its own, and
  every page of a class reads the same. English pages are the source, word for word.
  The student's notebook is shown as it is, and the checks' messages are in the
  language the grader gave them (the submission's, :mod:`checks._i18n`).

Why one module: a page's renderers (nbconvert's Markdown, Pygments), its nh3 allow-list and
its CSP (which admits only the page's own stylesheet, by its hash) must agree on what a page
may hold, so they change together. Every word a student reads about a grade is a literal
``tr`` of this file, which ``make catalogs`` reads (``TOOL_MODULES``); gradescope.py says
the grader's record with the same words (:func:`in_plain_words`, :func:`translator`).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import html
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from autograder import i18n, records
from autograder import notebooks as nbs
from autograder.grading.scores import Total, is_hand_graded, joined

HIDDEN_NOTE = "# The code of these hidden tests is not shown; the result below is."
MAX_CELL_CHARS = 20_000  # of one cell's source or one output shown on a page
MAX_PAGE_CHARS = 2_000_000  # of all cells' sources and outputs shown on a page
SAFE_ID = re.compile(r"^[^/\\\0]+$")

CSS = """
body { font: 15px/1.5 system-ui, sans-serif; margin: 0 auto; max-width: 60rem;
       padding: 1rem 1.5rem 4rem; color: #1d1d1f; }
header { border-bottom: 1px solid #ccc; margin-bottom: 1rem; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; }
.who { color: #444; margin-top: 0; }
.total { font-size: 1.1rem; }
.notice { background: #fff4e5; border-left: 4px solid #e08600; padding: 0.6rem 0.9rem; }
.notice.problem { background: #fdecea; border-left-color: #c62828; }
.details { color: #555; font-size: 0.85rem; }
nav ol { padding-left: 1.5rem; }
nav .score, .cell .score { float: right; font-variant-numeric: tabular-nums; }
.cell { margin: 0.8rem 0; }
.graded { border: 1px solid #9bb6d6; border-radius: 4px; }
.graded > .heading { background: #e8f0fa; padding: 0.3rem 0.6rem; font-weight: 600; }
.graded > .content { padding: 0.3rem 0.6rem; }
.full > .heading { background: #e6f4ea; }
.partial > .heading { background: #fdecea; }
pre { background: #f6f8fa; padding: 0.5rem; overflow-x: auto; white-space: pre-wrap;
      word-break: break-word; margin: 0.3rem 0; }
pre.error { background: #fdecea; }
.cut { color: #8a5a00; font-style: italic; }
"""


def _pygments_css() -> str:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(style="default").get_style_defs(".highlight")


def _page_css() -> str:
    return CSS + _pygments_css()


def csp(style: str) -> str:
    """The page's Content-Security-Policy: nothing runs, nothing loads, one stylesheet."""
    digest = base64.b64encode(hashlib.sha256(style.encode("utf-8")).digest()).decode()
    return (
        "default-src 'none'; script-src 'none'; object-src 'none'; "
        f"style-src 'sha256-{digest}'; img-src data:; font-src 'none'; connect-src 'none'; "
        "base-uri 'none'; form-action 'none'"
    )


# ---------------------------------------------------------------- sanitizing


def sanitize(fragment: str) -> str:
    """``fragment`` with nothing that runs or loads: nh3, with the tags a page needs."""
    import nh3

    attributes = {tag: set(attrs) for tag, attrs in nh3.ALLOWED_ATTRIBUTES.items()}
    attributes["*"] = {"class", "id", "title"}
    return nh3.clean(
        fragment,
        tags=set(nh3.ALLOWED_TAGS) | {"main", "section"},
        clean_content_tags={"script", "style", "iframe", "object", "embed", "template"},
        attributes=attributes,
        url_schemes={"http", "https", "mailto"},
        strip_comments=True,
    )


# ---------------------------------------------------------------- the page's language

Tr = Callable[[str], str]


def translator(lang: str = i18n.SOURCE) -> Tr:
    """``tr(msgid)``: a message of this module in language ``lang`` (the ``course`` catalog),
    or as it is. Every message is a literal ``tr("...")``, so that ``make catalogs`` finds it;
    its fields are filled in after: ``tr("Chapter: {chapter}").format(chapter=...)``."""
    return functools.partial(i18n.gettext, lang)


# ---------------------------------------------------------------- what happened, in words


def in_plain_words(outcome: str | None, lang: str = i18n.SOURCE) -> tuple[str, bool] | None:
    """What the grader's record says happened, for a student: (text, is_a_problem).

    None when there is nothing to say (graded in full). ``lang``: the page's language; the
    record's own details (a limit the sandbox names, a file set aside) are said in it too
    (:mod:`autograder.records`), fields such as file names as they are.
    """
    tr = translator(lang)
    if not outcome or outcome.strip() == "graded":
        return None
    text = outcome.strip()
    if text.startswith("graded"):
        said = []
        for note in (n.strip() for n in text.removeprefix("graded").split(";")):
            words = _note_in_words(note, tr)
            if words and words not in said:
                said.append(words)
        if not said:
            return None
        return tr("Your notebook was graded. {what}").format(what=" ".join(said)), False
    return _problem_in_words(text, tr), True


def _note_in_words(note: str, tr: Tr) -> str | None:
    cell = re.search(r"at cell (\d+)", note)
    if note.startswith("stopped by the sandbox"):
        why = note.split(":", 1)[1].strip() if ":" in note else tr("it reached a limit")
        why = records.in_language(why, tr)
        if cell:
            words = tr("It was stopped at cell {cell} because {why}.")
        else:
            words = tr("It was stopped because {why}.")
        return (
            words.format(cell=cell[1] if cell else "", why=why)
            + " "
            + tr(
                "The tests before that point kept their points; the tests after it did not "
                "run and scored 0."
            )
        )
    if note.startswith("the kernel died"):
        if cell:
            words = tr(
                "Its Python process stopped at cell {cell} (it crashed, exited or was killed)."
            )
        else:
            words = tr("Its Python process stopped (it crashed, exited or was killed).")
        return (
            words.format(cell=cell[1] if cell else "")
            + " "
            + tr(
                "The tests before that point kept their points; the tests after it did not "
                "run and scored 0."
            )
        )
    if note.startswith("the test cells after"):
        return None
    if "of CPU time: interrupted" in note:
        return tr(
            "A cell computed for longer than a cell may and was interrupted; the tests that "
            "needed what it would have defined failed."
        )
    if "waited past the wall clock" in note:
        return tr(
            "A cell waited (a sleep, say) for longer than the grader waits, and was "
            "interrupted; the rest of your notebook was graded."
        )
    if "timed out on the wall clock" in note:
        return tr("A cell ran for longer than the grader waits, and was interrupted.")
    if note.startswith("warning:") or note.startswith("note:"):
        body = records.in_language(note.split(":", 1)[1].strip(), tr)
        return tr("Note: {what}.").format(what=body[0].upper() + body[1:] if body else body)
    return None


def _problem_in_words(text: str, tr: Tr) -> str:
    known = [
        ("the notebook file is empty", tr("The notebook you handed in is empty.")),
        (
            "not a readable notebook",
            tr("The file you handed in is not a notebook Jupyter can open."),
        ),
        ("not a notebook or a zip", tr("The file you handed in is not a notebook (.ipynb).")),
        ("zip refused", tr("The zip you handed in could not be opened safely.")),
        ("no notebook in the submission", tr("Your upload held no notebook.")),
        (
            "timed out",
            tr(
                "Your notebook ran for longer than the grader allows in total, and was stopped "
                "before it could be graded."
            ),
        ),
        (
            "stopped: the grader spent",
            tr(
                "Your notebook's answers took the grader too long to read (far more data than "
                "the checks asked for), so it was not graded."
            ),
        ),
        (
            "stopped by the sandbox",
            tr(
                "Your notebook was stopped at a limit of the grader (memory, time or disk) "
                "before it could be graded."
            ),
        ),
        (
            "kernel died",
            tr("Your notebook's Python process crashed before it could be graded."),
        ),
        (
            "cannot tell which chapter",
            tr("The grader could not tell which chapter this answers."),
        ),
    ]
    words = next(
        (w for marker, w in known if marker in text), tr("Your notebook could not be graded.")
    )
    return words + " " + tr("Every test scored 0. Ask your instructor if this is unexpected.")


# ---------------------------------------------------------------- the page


@dataclass
class Score:
    grade_id: str
    cell_type: str
    score: float
    max_score: float
    manual: bool  # graded by hand (a written answer)
    graded: bool  # False: waits for a person


@dataclass
class Page:
    student: str
    chapter: str
    title: str
    timestamp: str = ""
    scores: dict[str, Score] = field(default_factory=dict)
    late_penalty: float = 0.0
    notice: tuple[str, bool] | None = None
    partial: list[str] = field(default_factory=list)  # why the page is not complete
    budget: int = MAX_PAGE_CHARS
    lang: str = i18n.SOURCE  # the language of the page's own words

    def tr(self, msgid: str) -> str:
        """A message of this module in the page's language (see :func:`translator`)."""
        return i18n.gettext(self.lang, msgid)

    def take(self, text: str) -> tuple[str, bool]:
        """``text`` within this cell's and this page's budget; and whether it was cut."""
        limit = min(MAX_CELL_CHARS, max(self.budget, 0))
        cut = len(text) > limit
        shown = text[:limit]
        self.budget -= len(shown)
        if cut:
            self.partial.append(self.tr("some cells are too long to show in full"))
        return shown, cut


def _cut_note(text: str, shown: str, page: Page) -> str:
    words = page.tr("… {count} more characters of this cell are not shown here.")
    return f'<p class="cut">{html.escape(words.format(count=f"{len(text) - len(shown):,}"))}</p>'


def test_label(source: str, lang: str = i18n.SOURCE) -> str:
    """A test cell's name: the checks it runs (``parse_test_cell``), never "Test cell"."""
    from autograder.grading.preprocessors import BadTestCell, parse_test_cell

    try:
        calls = parse_test_cell(nbs.without_hidden_tests(source) or "pass")
    except BadTestCell:
        calls = []
    try:
        hidden = parse_test_cell(source) if nbs.HIDDEN_MARKERS[0] in source else []
    except BadTestCell:
        hidden = []

    def name(group: str) -> str:
        head, _, detail = group.partition(".")
        return f"{head} ({detail.replace('_', ' ')})" if detail else head

    tr = translator(lang)
    visible = [name(c.group) for c in calls if not c.hidden]
    secret = [name(c.group) for c in hidden if c.hidden]
    if visible:
        return tr("Checks of {checks}").format(checks=", ".join(dict.fromkeys(visible)))
    if secret:
        return tr("Hidden checks of {checks}").format(checks=", ".join(dict.fromkeys(secret)))
    return tr("Test")


def hide_hidden_tests(source: str, lang: str = i18n.SOURCE) -> str:
    """A test cell as a student may see it: the code between the hidden markers left out
    (everything after a BEGIN without its END), the description kept, and a comment
    (:data:`HIDDEN_NOTE`, in ``lang``) where code was left out."""
    begin, end = nbs.HIDDEN_MARKERS
    kept, hiding, hid = [], False, False
    for line in source.splitlines():
        if line.strip() == begin:
            hiding = hid = True
        elif line.strip() == end:
            hiding = False
        elif not hiding and line.strip():
            kept.append(line)
    tr = translator(lang)
    return "\n".join([*kept, tr(HIDDEN_NOTE)] if hid else kept)


@functools.cache
def _code_renderer():
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    return PythonLexer(), HtmlFormatter(cssclass="highlight")


def _highlight(code: str) -> str:
    from pygments import highlight

    return highlight(code, *_code_renderer())


@functools.cache
def _markdown_renderer():
    """nbconvert's Markdown renderer (mistune, with math), made once: making one costs 50 ms."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    return MarkdownWithMath(renderer=IPythonRenderer(escape=False))


def _markdown(text: str) -> str:
    return _markdown_renderer().render(text)


def _outputs(cell, page: Page) -> str:
    parts = []
    for output in cell.get("outputs", []):
        kind = output.get("output_type")
        if kind == "stream":
            text, css = str(output.get("text", "")), "stream"
        elif kind == "error":
            text, css = f"{output.get('ename', '')}: {output.get('evalue', '')}", "error"
        elif "text/plain" in output.get("data", {}):
            text, css = str(output["data"]["text/plain"]), "result"
        else:
            continue
        shown, cut = page.take(text)
        parts.append(f'<pre class="{css}">{html.escape(shown)}</pre>')
        if cut:
            parts.append(_cut_note(text, shown, page))
    return "".join(parts)


def _score_html(score: Score | None, page: Page) -> str:
    if score is None:
        return ""
    if not score.graded:
        words = page.tr("to be graded by hand ({points} points)")
        return (
            f'<span class="score">{html.escape(words.format(points=f"{score.max_score:g}"))}</span>'
        )
    return f'<span class="score">{score.score:g} / {score.max_score:g}</span>'


def _cell_html(cell, page: Page) -> tuple[str, str | None]:
    """One cell as HTML, and its entry in the list of scores (or None)."""
    meta = nbs.nbgrader_meta(cell)
    gid = meta.get("grade_id") if isinstance(meta, dict) else None
    score = page.scores.get(gid) if gid else None
    source = str(cell.get("source", ""))
    is_test = bool(meta.get("grade")) and not meta.get("solution") and cell.cell_type == "code"
    if is_test:
        label = test_label(source, page.lang)
        source = hide_hidden_tests(source, page.lang)
    elif meta.get("solution") and score is not None and score.manual:
        label = page.tr("Your written answer ({grade_id})").format(grade_id=gid)
    elif meta.get("solution"):
        label = page.tr("Your answer ({grade_id})").format(grade_id=gid)
    else:
        label = None
    shown, cut = page.take(source)
    if cell.cell_type == "markdown":
        body = _markdown(shown)
    elif cell.cell_type == "code":
        body = _highlight(shown)
    else:
        body = f"<pre>{html.escape(shown)}</pre>"
    if cut:
        body += _cut_note(source, shown, page)
    if cell.cell_type == "code" and (is_test or score is not None):
        body += _outputs(cell, page)
    if label is None and score is None:
        return f'<div class="cell">{body}</div>', None
    anchor = f"cell-{gid}"
    state = ""
    if score is not None and score.graded:
        state = " full" if score.score >= score.max_score else " partial"
    heading = f'<div class="heading">{html.escape(label or gid)} {_score_html(score, page)}</div>'
    block = (
        f'<section class="cell graded{state}" id="{html.escape(anchor)}">{heading}'
        f'<div class="content">{body}</div></section>'
    )
    entry = None
    if score is not None:
        entry = (
            f'<li><a href="#{html.escape(anchor)}">{html.escape(label or gid)}</a> '
            f"{_score_html(score, page)}</li>"
        )
    return block, entry


def page_total(page: Page) -> Total:
    """The page's score, the autograded points and the hand-graded ones apart."""
    auto = [s for s in page.scores.values() if not s.manual]
    manual = [s for s in page.scores.values() if s.manual]
    done = [s for s in manual if s.graded]
    return Total(
        auto=sum(s.score for s in auto),
        auto_max=sum(s.max_score for s in auto),
        hand_max=sum(s.max_score for s in manual),
        hand=sum(s.score for s in done),
        hand_graded_max=sum(s.max_score for s in done),
    )


def render(page: Page, nb=None) -> str:
    """The whole page: sanitized body, its own stylesheet, a CSP that lets nothing run."""
    tr = page.tr
    cells_html, entries, listed = [], [], set()
    if nb is not None:
        cells = list(nb.cells)
        for i, cell in enumerate(cells):
            if page.budget <= 0:
                page.partial.append(
                    tr(
                        "your notebook is too long to show in full: its last {count} cells "
                        "are not shown"
                    ).format(count=len(cells) - i)
                )
                break
            try:
                block, entry = _cell_html(cell, page)
            except Exception as err:  # one odd cell must not cost the whole page
                words = tr("This cell could not be shown ({error}).")
                block, entry = (
                    (
                        '<div class="cell"><p class="cut">'
                        f"{html.escape(words.format(error=type(err).__name__))}</p></div>"
                    ),
                    None,
                )
                page.partial.append(tr("cell {number} could not be shown").format(number=i + 1))
            cells_html.append(block)
            if entry is not None:
                entries.append(entry)
                listed.add(nbs.nbgrader_meta(cell).get("grade_id"))
    # Scores the notebook does not show (a notebook that could not be read, or cut short).
    for gid, score in page.scores.items():
        if gid not in listed:
            entries.append(f"<li>{html.escape(gid)} {_score_html(score, page)}</li>")

    def say(msgid: str, **fields: str) -> str:  # a message, its fields already HTML
        return html.escape(i18n.gettext(page.lang, msgid)).format(**fields)

    strong = f"<strong>{html.escape(page_total(page).words(tr))}</strong>"
    total = say("Score: {total}.", total=strong)
    if page.late_penalty:
        total += " " + say("Late penalty: −{points}.", points=f"{page.late_penalty:g}")
    notices = []
    if page.notice is not None:
        words, problem = page.notice
        css = "notice problem" if problem else "notice"
        notices.append(f'<p class="{css}">{html.escape(words)}</p>')
    if page.partial:
        reasons = html.escape(joined(list(dict.fromkeys(page.partial)), tr))
        notices.append(
            '<p class="notice">'
            + say(
                "This page could not be built fully: {reasons}. Your scores above are complete.",
                reasons=reasons,
            )
            + "</p>"
        )
    who = [
        say("Student: {student}", student=f"<strong>{html.escape(page.student)}</strong>"),
        say("Chapter: {chapter}", chapter=html.escape(page.chapter)),
    ]
    if page.timestamp:
        who.append(say("Submitted: {time}", time=html.escape(page.timestamp)))
    body = (
        f"<header><h1>{say('Feedback: {title}', title=html.escape(page.title))}</h1>"
        f'<p class="who">{" · ".join(who)}</p>'
        f'<p class="total">{total}</p>{"".join(notices)}</header>'
        f"<nav><h2>{say('Scores')}</h2><ol>{''.join(entries)}</ol></nav>"
        f"<main>{''.join(cells_html)}</main>"
    )
    style = _page_css()
    title = say("Feedback: {title}", title=html.escape(f"{page.chapter} — {page.student}"))
    return (
        f'<!DOCTYPE html>\n<html lang="{html_lang(page.lang)}"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp(style)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{title}</title>"
        f"<style>{style}</style></head>\n<body>{sanitize(body)}</body></html>\n"
    )


def html_lang(lang: str) -> str:
    """The page's ``<html lang>``: ``en``, ``zh-CN``."""
    return i18n.language(lang).locale.replace("_", "-")


# ---------------------------------------------------------------- every student


def _released(course, chapter: str):
    """The chapter's notebook as the course released it (``source/<chapter>/``), or None."""
    path = course.root / "source" / chapter / f"{chapter}.ipynb"
    try:
        return nbs.read(path) if path.is_file() else None
    except Exception:
        return None


def released_language(course, chapter: str) -> str:
    """The language the course released ``chapter`` in (its source notebook's
    ``metadata.language``, written by ``Course(lang=...)``); English where it says none."""
    nb = _released(course, chapter)
    locale = str((nb.metadata if nb is not None else {}).get("language") or "")
    codes = {lang.locale: code for code, lang in i18n.LANGUAGES.items()}
    return codes.get(locale.replace("-", "_"), i18n.SOURCE)


def _title(chapter: str, course=None) -> str:
    """The chapter's title: the first heading of its released notebook (in the language it
    was released in), else of the book's."""
    try:
        nb = _released(course, chapter) if course is not None else None
        if nb is None:
            nb = nbs.read(nbs.notebook_path(chapter))
        heading = next(c.source for c in nb.cells if c.cell_type == "markdown")
        return heading.splitlines()[0].lstrip("# ").strip() or chapter
    except (Exception, SystemExit):
        return chapter


def _outcomes(gb) -> dict[tuple[str, str], str]:
    from sqlalchemy import inspect

    from autograder.grading.ledger import _graded_table

    if "attention_graded" not in inspect(gb.engine).get_table_names():
        return {}
    _, table = _graded_table()
    return {(r.student, r.assignment): r.outcome for r in gb.db.execute(table.select()).all()}


def _graded_notebook(course, student: str, chapter: str, name: str, page: Page):
    from autograder.grading.jobs import COPY_BACK_MAX_BYTES, read_regular

    path = course.root / "autograded" / student / chapter / f"{name}.ipynb"
    if not path.exists():
        return None
    import nbformat

    try:
        data = read_regular(path, COPY_BACK_MAX_BYTES)
        return nbformat.reads(data.decode("utf-8"), as_version=4)
    except Exception as err:
        words = page.tr("your graded notebook could not be read ({error})")
        page.partial.append(words.format(error=type(err).__name__))
        return None


def feedback(
    course, chapter: str | None = None, student: str | None = None, lang: str | None = None
) -> list[Path]:
    """Write ``feedback/<student>/<chapter>/<notebook>.html`` for every submission in the
    gradebook (of ``chapter``, of ``student``, or all); return the pages written.

    ``lang``: the language of the pages' own words; by default each chapter's, the language
    the course released it in (:func:`released_language`)."""
    from nbgrader.api import Gradebook, MissingEntry

    from autograder.course import venv_on_path
    from autograder.grading.jobs import write_private

    venv_on_path()
    if lang is not None:
        i18n.language(lang)  # an unknown language is an error before any page is written
    chapters = [chapter] if chapter else nbs.chapter_names()
    written: list[Path] = []
    with Gradebook(course.db_url, course_id=course.course_id) as gb:
        outcomes = _outcomes(gb)
        for ch in chapters:
            try:
                submissions = gb.assignment_submissions(ch)
            except MissingEntry:
                continue
            title = _title(ch, course)
            words = lang or released_language(course, ch)
            for sub in submissions:
                who = sub.student.id
                if (student and who != student) or not SAFE_ID.match(who) or who in (".", ".."):
                    continue
                for nb_sub in sub.notebooks:
                    page = _page(course, ch, who, title, sub, nb_sub, outcomes, words)
                    out = course.root / "feedback" / who / ch / f"{nb_sub.name}.html"
                    out.parent.mkdir(parents=True, exist_ok=True)
                    write_private(out, page.encode("utf-8"))
                    os.chmod(out, 0o644)
                    written.append(out)
    return written


def _page(course, chapter, who, title, sub, nb_sub, outcomes, lang=i18n.SOURCE) -> str:
    page = Page(student=who, chapter=chapter, title=title, lang=lang)
    try:
        page.timestamp = str(sub.timestamp or "")
        page.late_penalty = float(sub.late_submission_penalty or 0)
        for g in nb_sub.grades:
            manual = is_hand_graded(g.cell.cell_type)  # written answers
            graded = not (g.needs_manual_grade and g.manual_score is None)
            page.scores[g.name] = Score(
                g.name, g.cell.cell_type, float(g.score or 0), float(g.max_score), manual, graded
            )
        ordered = {c.name: i for i, c in enumerate(nb_sub.notebook.source_cells)}
        page.scores = dict(sorted(page.scores.items(), key=lambda kv: ordered.get(kv[0], 1 << 30)))
    except Exception as err:  # the scores themselves: say so, and show what there is
        words = page.tr("the scores could not all be read ({error})")
        page.partial.append(words.format(error=type(err).__name__))
    page.notice = in_plain_words(outcomes.get((who, chapter)), lang)
    nb = _graded_notebook(course, who, chapter, nb_sub.name, page)
    if nb is None and not (page.notice and page.notice[1]):
        page.partial.append(page.tr("there is no graded copy of your notebook to show"))
    try:
        return render(page, nb)
    except Exception as err:  # the last resort: the scores and the reason, no notebook
        words = page.tr("your notebook could not be shown ({error})")
        page.partial.append(words.format(error=type(err).__name__))
        page.budget = MAX_PAGE_CHARS
        return render(page, None)
