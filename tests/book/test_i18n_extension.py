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
