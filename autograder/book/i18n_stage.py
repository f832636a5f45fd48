"""A translated book: what ``stage-book --lang`` changes in the staged copy.

Sphinx translates the pages itself (``language`` and ``locale_dirs``), so the staged
notebooks keep their English markdown. Three things Sphinx cannot reach are translated
here, in the staged copy:

- the notes and prompts ``autograder.book.editions`` writes into the notebooks (``course.po``);
- a code cell's figure caption, image alt text and fold prompts (``metadata.mystnb``);
- the title, the solution folds' prompts and the footer in ``_config.yml``.

Its figures are the translated diagrams (``book/figures/zh_CN/<name>.svg``, drawn by
``book/figures/make_diagrams.py`` from the catalog ``figures``): Sphinx's
``figure_language_filename`` picks, for every image a page shows, the file of the build's
language where there is one.

The page catalogs are copied into the stage (``locale/``), where Sphinx compiles them,
so that nothing is ever written into the repository's ``locale/``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import yaml

from autograder import i18n
from autograder import notebooks as nbs
from autograder.book import launch
from autograder.i18n import pages
from autograder.i18n.pages import translate_notebook

SEARCH_WORDS = "locale/search-words.txt"  # in the stage


def localize_config(
    text: str,
    code: str,
    edition: str,
    root: Path = nbs.ROOT,
    dest: Path | None = None,
    *,
    student_title: str = "{title}",
) -> str:
    """The staged ``_config.yml`` of an edition in language ``code`` (staged in ``dest``).
    ``student_title``: the student edition's title, a template of the book's
    (``autograder.book.editions.STUDENT_TITLE``, which stages the book)."""
    if code == i18n.SOURCE:
        return text
    source = yaml.safe_load((root / "_config.yml").read_text())
    config = yaml.safe_load(text)
    tr = lambda msgid: i18n.gettext(code, msgid, root)  # noqa: E731
    title = tr(source["title"])
    config["title"] = tr(student_title).format(title=title) if edition == "student" else title
    config["author"] = tr(source["author"])
    sphinx = config.setdefault("sphinx", {}).setdefault("config", {})
    sphinx["language"] = i18n.language(code).locale
    sphinx["locale_dirs"] = [i18n.LOCALE]
    sphinx["gettext_compact"] = False
    sphinx["figure_language_filename"] = i18n.FIGURE_LANGUAGE_FILENAME
    published = sphinx.get("course_languages") or [i18n.SOURCE]
    sphinx["course_languages"] = list(dict.fromkeys([*published, code]))
    if dest is not None and code == "zh":  # the search index's words: jieba, and our terms
        sphinx["html_search_options"] = {"dict": str(Path(dest).resolve() / SEARCH_WORDS)}
    for key in ("nb_code_prompt_show", "nb_code_prompt_hide"):
        if sphinx.get(key):
            sphinx[key] = tr(sphinx[key])
    html = config.get("html") or {}
    if html.get("extra_footer"):
        html["extra_footer"] = tr(html["extra_footer"].strip())
    return f"# Staged by `python -m autograder stage-book --lang {code}`.\n" + yaml.safe_dump(
        config, allow_unicode=True, sort_keys=False
    )


def localize_notebook(
    nb: nbformat.NotebookNode, code: str, page: str, root: Path = nbs.ROOT
) -> nbformat.NotebookNode:
    """A staged notebook with the editions' notes and the cells' figure texts translated
    (its own markdown stays English: Sphinx translates it)."""
    if code == i18n.SOURCE:
        return nb
    course = pages.lookup_for(code, None, root)
    page_and_course = pages.lookup_for(code, page, root)
    nb.cells, _ = pages.translate_cells(nb.cells, course, root, metadata=page_and_course)
    nb.metadata["language"] = i18n.language(code).locale
    return nb


def search_words(code: str, root: Path = nbs.ROOT) -> str:
    """jieba's user dictionary: the Chinese terms of ``terms.tsv``, so that the search index
    holds 有效长度 and 注意力汇聚 as words (jieba's own dictionary splits them)."""
    words = sorted({c for term in i18n.terms(code, root) for c in term.chinese if " " not in c})
    return "".join(f"{word} 100000 n\n" for word in words)


def stage_catalogs(dest: Path, code: str, root: Path = nbs.ROOT) -> None:
    """Copy the catalogs into ``dest/locale`` (only those that changed) and write the
    search index's dictionary."""
    if code == i18n.SOURCE:
        return
    words = Path(dest) / SEARCH_WORDS
    text = search_words(code, root)
    if not words.exists() or words.read_text(encoding="utf-8") != text:
        words.parent.mkdir(parents=True, exist_ok=True)
        words.write_text(text, encoding="utf-8")
    src = i18n.catalog_dir(code, root)
    target = Path(dest) / i18n.LOCALE / i18n.language(code).locale / "LC_MESSAGES"
    for path in sorted(src.rglob("*.po")):
        out = target / path.relative_to(src)
        if not out.exists() or out.read_bytes() != path.read_bytes():
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, out)


def translate_chapter(
    nb: nbformat.NotebookNode, code: str, page: str, root: Path = nbs.ROOT
) -> nbformat.NotebookNode:
    """``nb`` (a chapter, in any edition) in language ``code``: translated
    (:func:`autograder.i18n.pages.translate_notebook`), and its setup cell, if it has one,
    choosing that language for the self-checks (:func:`autograder.book.launch.with_language`)."""
    if code == i18n.SOURCE:
        return nb
    nb = translate_notebook(nb, code, page, root)
    launch.with_language(nb, code)
    return nb
