"""The Sphinx extension of every build, English or translated (``_config.yml``).

- **The language switcher.** Where the site publishes more than one language (the Sphinx
  setting ``course_languages``: a translated build lists English and its own language; the
  English build lists only English until ``_config.yml`` lists more), every page gets a
  button to the same page in each other published language, as a relative link, so that
  it works offline and wherever the site is published. The published layout (``.github/workflows/publish.yml``): English at the
  site's root, each other language in its folder (``Language.folder``: ``zh/``); the
  student edition, where a course publishes it, the same way. ``make book COURSE_LANG=zh``
  links ``zh`` inside the English build's folder to the Chinese build, so that the local
  builds have that layout too.
- **Translated builds** (Sphinx's ``language`` is not English): the download of every
  page (``.ipynb`` and ``.md`` of a notebook, the source of a Markdown page) is translated
  from the same catalogs as the page; the launch buttons open the launchable notebooks of
  that language (``<folder>/<chapter>.ipynb`` on the launch branch); the edit button opens
  the page's catalog, where its translation is edited; the tools' own tooltips are
  translated from ``course.po``.
- **The Chinese search index in linear time.** Sphinx 7's Chinese search language keeps the
  Latin words it has seen in a list and looks each new word up in it, which made indexing
  quadratic: about half of the Chinese build's time. :class:`SearchChinese` keeps them in a
  set, as Sphinx 8.1 does (sphinx-doc/sphinx#12995); the index it writes is the same.
"""

from __future__ import annotations

import re
from pathlib import Path

from autograder import i18n

SWITCHER = "language-switcher"
# On a page of a translated build whose catalog is not complete yet (not in translated.txt):
# Sphinx falls back to the English of each message without a translation.
INCOMPLETE = "This page is not fully translated yet: what is not translated is shown in English."
# What sphinx-book-theme writes into the page header in English whatever the language (it
# translates only "Launch on"): translated from course.po.
THEME_BUTTONS = [
    "Launch interactive content",
    "Launch on Binder",
    "Launch on Colab",
    "Launch on JupyterHub",
    "Source repositories",
    "Repository",
    "Suggest edit",
    "Open issue",
]
# Template strings of Sphinx and pydata-sphinx-theme that their zh_CN catalogs lack: the
# catalog sphinx.po, which Sphinx adds to its own. (sphinx-book-theme's "Toggle primary
# sidebar", "Main" and "Page" are not marked for translation in its templates.)
THEME_TEMPLATES = [
    "Color mode",
    "System Settings",
    "Skip to main content",
    "Back to top",
    "Link to this heading",
    "Link to this image",
    "© Copyright %(copyright)s.",
]


def course_language(app) -> i18n.Language:
    locale = app.config.language or "en"
    for lang in i18n.LANGUAGES.values():
        if lang.locale == locale:
            return lang
    return i18n.LANGUAGES[i18n.SOURCE]


def published(app) -> list[i18n.Language]:
    """The languages the site publishes (``course_languages``: English alone by default, so
    that the English build has no switcher to a Chinese edition that is not published)."""
    codes = list(app.config.course_languages or [i18n.SOURCE])
    return [i18n.language(code) for code in codes]


def switch_url(pagename: str, here: i18n.Language, there: i18n.Language, suffix=".html") -> str:
    """The relative URL of ``pagename`` in language ``there`` from the same page in ``here``."""
    up = "../" * pagename.count("/")  # to this language's root
    up += "../" * (len(here.folder.split("/")) if here.folder else 0)  # to the site's root
    folder = f"{there.folder}/" if there.folder else ""
    return f"{up}{folder}{pagename}{suffix}"


def _page_context(app, pagename, templatename, context, doctree):
    here = course_language(app)
    buttons = context.setdefault("header_buttons", [])
    for there in published(app):
        if there.code == here.code:
            continue
        buttons.insert(
            0,
            {
                "type": "link",
                "url": switch_url(pagename, here, there, app.builder.out_suffix),
                "text": there.name,
                "tooltip": there.name,
                "icon": "fas fa-language",
                "label": SWITCHER,
            },
        )
    _written(app).add(pagename)
    if here.code == i18n.SOURCE:
        return
    _localize_buttons(app, pagename, context, here)
    if context.get("body") and incomplete(here.code, pagename):
        context["body"] = incomplete_notice(here.code) + context["body"]


def incomplete(code: str, pagename: str) -> bool:
    """Is ``pagename`` a page of the book whose catalog is not complete in ``code``?"""
    from autograder import notebooks as nbs

    return pagename in nbs.toc_files() and pagename not in i18n.manifest(code)


def incomplete_notice(code: str) -> str:
    """The note at the top of a page that is not fully translated (its text from course.po)."""
    import html

    text = html.escape(i18n.gettext(code, INCOMPLETE))
    return (
        '<div class="admonition warning translation-incomplete" lang="'
        f'{i18n.language(code).locale.replace("_", "-")}"><p>{text}</p></div>\n'
    )


def _localize_buttons(app, pagename, context, here):
    from autograder.book import launch

    if context.get("theme_search_bar_text"):  # jupyter-book's default, whatever the language
        context["theme_search_bar_text"] = i18n.gettext(here.code, context["theme_search_bar_text"])
    repo = launch.repository()
    catalog = f"{i18n.LOCALE}/{here.locale}/LC_MESSAGES/{pagename}.po"
    launch_urls = (
        launch.launch_urls(f"{here.folder}/{Path(pagename).name}")
        if str(context.get("sourcename", "")).endswith(".ipynb")
        else {}
    )
    for group in context.get("header_buttons", []):
        for button in [group, *group.get("buttons", [])]:
            for key in ("tooltip", "text"):
                if button.get(key):
                    button[key] = i18n.gettext(here.code, button[key])
            if group.get("label") == "launch-buttons" and button.get("text") in launch_urls:
                button["url"] = launch_urls[button["text"]]
            if button.get("label") == "source-edit-button":
                button["url"] = f"{repo['url']}/edit/{repo['branch']}/{catalog}"


def _same_tab(app, exception):
    """sphinx-book-theme opens every header link in a new tab; the switcher stays in this one."""
    if exception is not None or app.builder.format != "html":
        return
    pattern = re.compile(
        r'(<a href="[^"]*") target="_blank"(\s+class="btn btn-sm btn-' + SWITCHER + ")"
    )
    for pagename in sorted(_written(app)):
        path = Path(app.builder.get_outfilename(pagename))
        if path.exists():
            text = path.read_text(encoding="utf-8")
            fixed = pattern.sub(r"\1\2", text)
            if fixed != text:
                path.write_text(fixed, encoding="utf-8")
    _written(app).clear()


def _written(app) -> set[str]:
    """The pages this build wrote (not kept in the environment between builds)."""
    if not hasattr(app, "_i18n_written"):
        app._i18n_written = set()
    return app._i18n_written


def _translate_sources(app, exception):
    """The downloadable source of each Markdown page, in the build's language."""
    from autograder import notebooks as nbs
    from autograder.i18n.pages import translate_text

    here = course_language(app)
    if exception is not None or app.builder.format != "html" or here.code == i18n.SOURCE:
        return
    sources = Path(app.outdir) / "_sources"
    for docname in sorted(app.env.found_docs):
        path = Path(app.env.doc2path(docname))
        if path.suffix != ".md":
            continue
        target = sources / f"{docname}.md"
        text = translate_text(path.read_text(encoding="utf-8"), here.code, docname)
        nbs.write_if_changed(target, text.encode())


def translate_download(app, docname: str, nb):
    """A notebook's download (``autograder.book.editions``) in the build's language."""
    from autograder.book.i18n_stage import translate_chapter

    return translate_chapter(nb, course_language(app).code, docname)


def _toctree_captions(app, doctree):
    """The captions of the book's parts, which sphinx-external-toc adds to the root page
    after Sphinx has translated it: translated here from the root page's catalog."""
    from sphinx import addnodes

    here = course_language(app)
    if here.code == i18n.SOURCE:
        return
    table = i18n.translations(here.code, app.env.docname)
    for node in doctree.findall(addnodes.toctree):
        caption = node.get("caption")
        if caption and table.get(caption):
            node["caption"] = table[caption]


class _LatinTerms(set):
    """A set that Sphinx 7's ``SearchChinese.split`` can fill: it calls ``extend``."""

    extend = set.update


def _search_chinese():
    """Sphinx's Chinese search language with its Latin words in a set (see the docstring)."""
    from sphinx.search import zh

    class SearchChinese(zh.SearchChinese):
        def __init__(self, options: dict[str, str]) -> None:
            self.latin_terms = _LatinTerms()  # Sphinx 7: a list shared by the class
            super().__init__(options)

    return SearchChinese


def setup(app):
    app.add_config_value("course_languages", [i18n.SOURCE], "html", types=[list])
    app.add_search_language(_search_chinese())
    app.connect("doctree-read", _toctree_captions, priority=400)
    app.connect("html-page-context", _page_context, priority=700)  # after editions' (600)
    app.connect("build-finished", _same_tab)
    app.connect("build-finished", _translate_sources, priority=600)  # after Sphinx's copy
    return {"parallel_read_safe": True, "parallel_write_safe": True}
