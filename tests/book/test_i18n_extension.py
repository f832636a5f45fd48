"""The Sphinx extension of the translated book (autograder/book/i18n_extension.py): the
language switcher's relative links and the notice on pages not fully translated."""

from __future__ import annotations

import pytest

from autograder import i18n
from autograder import notebooks as nbs
from autograder.book.i18n_extension import switch_url
from tests.i18n import ZH

ROOT = nbs.ROOT


@pytest.mark.parametrize(
    "page, here, there, url",
    [
        ("book/masking", "en", "zh", "../zh/book/masking.html"),
        ("book/masking", "zh", "en", "../../book/masking.html"),
        ("search", "en", "zh", "zh/search.html"),
        ("search", "zh", "en", "../search.html"),
    ],
)
def test_switcher_links_are_relative(page, here, there, url):
    assert switch_url(page, i18n.language(here), i18n.language(there)) == url


def test_pages_not_fully_translated_say_so(monkeypatch):
    """Does a page whose catalog is not in translated.txt get the notice, in Chinese, and a
    complete page none?"""
    from autograder.book.i18n_extension import INCOMPLETE, incomplete, incomplete_notice

    listed = [d for d in i18n.manifest(ZH) if d != "book/masking"]
    monkeypatch.setattr(i18n, "manifest", lambda code, root=ROOT: listed)
    assert incomplete(ZH, "book/masking") and not incomplete(ZH, "book/glossary")
    assert not incomplete(ZH, "search")
    notice = incomplete_notice(ZH)
    assert i18n.gettext(ZH, INCOMPLETE) in notice and INCOMPLETE not in notice


def test_the_chinese_search_index_is_sphinx_s_in_linear_time():
    """Does the extension give the Chinese build a search language that splits and stems every
    word as Sphinx's does, its Latin words kept in a set (looked up in constant time, where
    Sphinx 7's list made indexing quadratic: half of the Chinese build)?"""
    from sphinx.search import zh

    from autograder.book import i18n_extension

    registered = {}

    class App:
        def add_config_value(self, *args, **kwargs):
            pass

        def connect(self, *args, **kwargs):
            pass

        def add_search_language(self, cls):
            registered[cls.lang] = cls

    i18n_extension.setup(App())
    ours, theirs = registered["zh"]({}), zh.SearchChinese({})
    assert isinstance(ours, zh.SearchChinese) and isinstance(ours.latin_terms, set)
    texts = ["掩蔽softmax 把 valid_lens 之外的分数设为 -1e6", "The queries, keys and values: ies"]
    for text in texts:
        assert ours.split(text) == theirs.split(text)
    words = [w for text in texts for w in ours.split(text)] + ["attention", "ies"]
    assert [ours.stem(w) for w in words] == [theirs.stem(w) for w in words]
    # A Latin word that stemming would cut below 3 letters is kept whole once it was seen.
    assert ours.stem("ies") == "ies" and registered["zh"]({}).stem("ies") == "ie"
