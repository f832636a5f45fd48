"""The translation catalogs: their templates, made from every message source, the catalogs
updated from them (``make catalogs``), and what the tests hold them to.

The package's modules: :mod:`.ui_messages` reads the tools', the theme's and the diagrams'
messages; :mod:`.checks_messages` the self-checks' (and writes their run-time tables); this
module makes the templates and updates the catalogs; :mod:`.audit` lists what is wrong with a
catalog (what the tests reject). It sits above everything else of the grader but the command
line, because its extractors read the course, the book and ``checks``.

:func:`update` (with the CLI's ``catalogs`` command):

1. ``make catalogs`` stages the reader edition and runs Sphinx's gettext builder over it: one
   template (``.pot``) per page, since ``gettext_compact`` is off;
2. :func:`write_templates` takes out of each page's template the notes and prompts that
   ``autograder.book.editions`` adds (they are ``course.pot``'s, translated once for every
   page), adds a notebook's image alt texts and fold prompts (cell metadata, which
   Sphinx never extracts), and gives every message the place of its source
   (``book/masking.ipynb:70003`` is cell 7, line 3, as myst-nb counts); and writes the
   templates of the catalogs that are no page's (:data:`UI`: ``course``, ``sphinx``,
   ``figures``, :mod:`.ui_messages`; ``checks``, :mod:`.checks_messages`) and ``README``
   (README.md's student part, :mod:`autograder.i18n.readme`);
3. ``sphinx-intl update`` merges the templates into ``locale/<locale>/LC_MESSAGES``: new
   messages come in untranslated, changed ones fuzzy with the old translation, removed
   ones go; every entry then takes its template's source locations (``#:``), which
   sphinx-intl leaves as they were in a catalog whose messages did not change;
4. a message with nothing to translate (a number, display math, only code) gets itself
   as its translation;
5. the CLI then writes the checks' run-time tables (:func:`.checks_messages.write_runtime`)
   and ``README.<locale>.md`` from README.md and ``README.po``
   (:func:`autograder.i18n.readme.write`).

:func:`source_messages` is what a template holds, and so what
:func:`.audit.completeness_problems` holds a catalog to: the two cannot drift.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from autograder import i18n
from autograder import notebooks as nbs
from autograder.catalogs import checks_messages, ui_messages
from autograder.i18n import pages, readme
from autograder.i18n.review import needs_translation

HEADER = (
    "Translations of Attention, Step by Step: see autograder/i18n/__init__.py.\n"
    "A location in a notebook is cell * 10000 + line (as myst-nb counts); the tests name both."
)
# The messages of each catalog that is no page's, by domain (i18n.UI_DOMAINS, in this order).
UI = {
    i18n.COURSE: ui_messages.course_messages,
    i18n.SPHINX: lambda root=None: ui_messages.theme_messages(),
    i18n.FIGURES: ui_messages.figure_messages,
    i18n.CHECKS: checks_messages.check_messages,
}


def source_messages(domain: str, root: Path = nbs.ROOT) -> list[pages.Message]:
    """The messages of catalog ``domain`` in the source, in order, each with its place."""
    if domain == readme.DOMAIN:
        return readme.messages(root)
    if domain in UI:
        return [pages.Message(m.msgid, m.where, m.line, kind=domain) for m in UI[domain](root)]
    return pages.page_messages(domain, root)


# ---------------------------------------------------------------- templates


def _occurrence(message: pages.Message) -> tuple[str, str]:
    line = message.line if message.cell is None else message.cell * 10000 + message.line
    return (message.file, str(line))


def write_templates(pot_dir: Path, root: Path = nbs.ROOT) -> list[str]:
    """Rewrite the page templates Sphinx wrote under ``pot_dir`` (see the module docstring)
    and write those of :data:`UI` and ``README``; return where Sphinx and
    :mod:`autograder.i18n.pages` disagree (a message one of them finds and the other does not), which must
    not happen."""
    import polib

    ours = {m.msgid for m in ui_messages.course_messages(root) if m.staged}
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
    """``<domain>.pot`` of a catalog that is not a page's (:data:`UI`)."""
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
    """``README.pot``: the messages of README.md's student part (:mod:`autograder.i18n.readme`)."""
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


def update(pot_dir: Path, code: str, root: Path = nbs.ROOT) -> list[Path]:
    """sphinx-intl update, then give every entry its template's source locations (sphinx-intl
    leaves a catalog whose messages did not change as it was, its ``#:`` lines naming where
    the messages were) and fill in the messages with nothing to translate."""
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
        places = {(e.msgctxt, e.msgid): e.occurrences for e in polib.pofile(str(pot))}
        po.header = HEADER
        po.metadata_is_fuzzy = False
        po.metadata["Project-Id-Version"] = "Attention, Step by Step"
        domain = path.relative_to(i18n.catalog_dir(code, root)).with_suffix("").as_posix()
        for entry in po:
            where = places.get((entry.msgctxt, entry.msgid))
            if where is not None and entry.occurrences != where:
                entry.occurrences = where
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
