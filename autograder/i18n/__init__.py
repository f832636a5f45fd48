"""The course in other languages: gettext catalogs over the one English source.

The English notebooks and pages under ``book/`` are the only source of text, code, checks
and grades. A translation is a set of gettext catalogs, one per page of the book and one
for the text the course's tools write (``course.po``)::

    locale/zh_CN/LC_MESSAGES/book/<page>.po   the messages of book/<page>.ipynb or .md
    locale/zh_CN/LC_MESSAGES/course.po        notes, prompts, titles and READMEs of autograder/,
                                              and the words of the feedback pages
    locale/zh_CN/LC_MESSAGES/README.po        the student part of README.md (README.zh-CN.md)
    locale/zh_CN/LC_MESSAGES/sphinx.po        strings of Sphinx's and the themes' templates
    locale/zh_CN/LC_MESSAGES/figures.po       the diagrams' labels (book/figures/make_diagrams.py)
    locale/zh_CN/LC_MESSAGES/checks.po        what the self-checks say (checks/_i18n.py)
    locale/zh_CN/translated.txt               the catalogs that must be complete (tests)
    locale/zh_CN/terms.tsv                    the term pairs every translation keeps to

This is the layout Sphinx reads with ``gettext_compact = False`` (a page's messages are in
the catalog named after its document), so the Chinese pages come from Sphinx's own
``language`` and ``locale_dirs``; the same catalogs translate the markdown cells of the
downloadable notebooks, the launchable notebooks and a release
(:func:`autograder.i18n.pages.translate_notebook`). Code cells, checks, solutions and grade
cells are shared by every language and never copied.

- :mod:`.markdown` finds the messages of MyST Markdown (as Sphinx does) and replaces them;
- :mod:`.pages` lists the messages of every page and translates notebooks;
- :mod:`.readme` makes the translated README (``README.zh-CN.md``) from README.md's student
  part and its catalog;
- :mod:`.review` checks that a translation keeps its message's markup and the term pairs.

Elsewhere, because they read more than this package: :mod:`autograder.catalogs` makes the
templates from every message source (the tools, the diagrams, the checks), updates the
catalogs (``make catalogs``) and checks them;
:mod:`autograder.book.i18n_stage` translates a staged book and
:mod:`autograder.book.i18n_extension` is the Sphinx extension of every build (switcher,
translated downloads). This package imports only :mod:`autograder.notebooks` of the grader.
"""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from autograder import notebooks as nbs


@dataclass(frozen=True)
class Language:
    code: str  # what COURSE_LANG and --lang take
    locale: str  # Sphinx's `language` and the catalogs' folder
    name: str  # in the language itself, for the language switcher
    folder: str  # where its edition is published, relative to the English site's root


SOURCE = "en"
LANGUAGES = {
    "en": Language("en", "en", "English", ""),
    "zh": Language("zh", "zh_CN", "中文", "zh"),
}
LOCALE = "locale"
COURSE = "course"  # the domain of the tools' own messages
SPHINX = "sphinx"  # the strings of Sphinx's and the themes' templates
FIGURES = "figures"  # the diagrams' labels
CHECKS = "checks"  # the self-checks' messages (checks/_i18n.py)
# The catalogs of the tools' text, not of a page: plain text, not MyST (and their templates'
# fields must stay).
UI_DOMAINS = (COURSE, SPHINX, FIGURES, CHECKS)
MANIFEST = "translated.txt"  # in locale/<locale>/
TERMS = "terms.tsv"
# Where a translated image is (Sphinx's `figure_language_filename`, set in a translated build):
# book/figures/zh_CN/masking.svg for book/figures/masking.svg. make_diagrams.py draws the
# diagrams there; a translated build, download or release shows it where it exists.
FIGURE_LANGUAGE_FILENAME = "{path}{language}/{basename}{ext}"


def language(code: str) -> Language:
    try:
        return LANGUAGES[code]
    except KeyError:
        known = ", ".join(LANGUAGES)
        raise ValueError(f"unknown language {code!r}; the languages are {known}") from None


def catalog_dir(code: str, root: Path = nbs.ROOT) -> Path:
    return root / LOCALE / language(code).locale / "LC_MESSAGES"


def catalog_path(code: str, domain: str, root: Path = nbs.ROOT) -> Path:
    """``locale/<locale>/LC_MESSAGES/<domain>.po``; a page's domain is its document name."""
    return catalog_dir(code, root) / f"{domain}.po"


@functools.cache
def _read(path: Path, stamp: float) -> dict[str, str]:
    import polib

    return {
        e.msgid: e.msgstr
        for e in polib.pofile(str(path))
        if e.msgstr and not e.fuzzy and not e.obsolete
    }


def translations(code: str, domain: str, root: Path = nbs.ROOT) -> dict[str, str]:
    """The usable translations of a catalog (not fuzzy, not empty): msgid -> msgstr.

    The source language, and a catalog that does not exist yet, translate nothing.
    """
    if code == SOURCE:
        return {}
    path = catalog_path(code, domain, root)
    if not path.exists():  # a Gradescope bundle carries its catalog as JSON (no polib there)
        shipped = path.with_suffix(".json")
        return json.loads(shipped.read_text(encoding="utf-8")) if shipped.exists() else {}
    return _read(path, os.stat(path).st_mtime_ns)


def gettext(code: str, msgid: str, root: Path = nbs.ROOT) -> str:
    """``msgid`` (a message of the course's tools) in language ``code``, or as it is."""
    return translations(code, COURSE, root).get(msgid, msgid)


def localized_figure(path: Path, code: str) -> Path:
    """The image file ``path`` in language ``code``: its translation where it exists (found
    as Sphinx finds it, with ``FIGURE_LANGUAGE_FILENAME``), else ``path`` itself."""
    if code == SOURCE:
        return path
    parent = f"{path.parent}/"
    translated = Path(
        FIGURE_LANGUAGE_FILENAME.format(
            root=str(path.with_suffix("")), ext=path.suffix, path=parent,
            basename=path.stem, docpath="", language=language(code).locale,
        )
    )  # fmt: skip
    return translated if translated.is_file() else path


def manifest(code: str, root: Path = nbs.ROOT) -> list[str]:
    """The catalogs that must be complete: ``locale/<locale>/translated.txt``, one a line."""
    path = root / LOCALE / language(code).locale / MANIFEST
    if not path.exists():
        return []
    lines = [line.split("#", 1)[0].strip() for line in path.read_text().splitlines()]
    return [line for line in lines if line]


@dataclass(frozen=True)
class Term:
    english: tuple[str, ...]  # the forms that count: "query", "queries"
    chinese: tuple[str, ...]  # accepted renderings, the first one the glossary's
    glossary: str  # the entry of book/glossary.md it belongs to, or ""
    line: int

    @property
    def pattern(self) -> re.Pattern:
        forms = "|".join(
            r"[\s-]+".join(re.escape(w) for w in re.split(r"[\s-]+", f)) for f in self.english
        )
        return re.compile(rf"(?<![\w-])(?:{forms})(?![\w-])", re.IGNORECASE)


def terms(code: str, root: Path = nbs.ROOT) -> list[Term]:
    """``locale/<locale>/terms.tsv``: english forms | chinese renderings | glossary entry."""
    path = root / LOCALE / language(code).locale / TERMS
    found = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        english, chinese, glossary = (line.split("\t") + ["", ""])[:3]
        found.append(
            Term(
                tuple(f.strip() for f in english.split("|")),
                tuple(c.strip() for c in chinese.split("|")),
                glossary.strip(),
                n,
            )
        )
    return found
