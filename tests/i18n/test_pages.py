"""A page's translation from its catalog (autograder/i18n/pages.py): a translated chapter's
notebook is Chinese, with the English code and grading metadata."""

from __future__ import annotations

import re

import nbformat

from autograder import i18n
from autograder import notebooks as nbs
from autograder.i18n import pages
from autograder.i18n.review import needs_translation
from tests.i18n import ZH, code_cells


def test_downloads_of_translated_chapters_are_chinese_and_share_the_code():
    """Is every markdown cell and figure text of a translated chapter's notebook Chinese, and
    is every code cell, with its grading metadata, the English one?"""
    for page in i18n.manifest(ZH):
        if not page.startswith("book/") or pages.page_file(page).suffix != ".ipynb":
            continue
        english = nbs.read(pages.page_file(page))
        table = pages.lookup_for(ZH, page)
        cells, missing = pages.translate_cells(english.cells, table)
        assert not [m for m in missing if needs_translation(m)], (page, missing[:3])
        zh = nbformat.from_dict({**english, "cells": cells})
        assert code_cells(zh) == code_cells(english), page
        assert [c.cell_type for c in zh.cells] == [c.cell_type for c in english.cells]
        heading = next(c for c in zh.cells if c.cell_type == "markdown").source
        assert re.search(r"[\u4e00-\u9fff]", heading), heading
