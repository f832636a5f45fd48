"""What the tests reject in the catalogs of a language: :func:`problems`.

- every catalog listed in ``locale/<locale>/translated.txt`` complete (nothing untranslated
  or fuzzy) and in step with the source (no message missing, none left over):
  :func:`completeness_problems`, which holds a catalog to the messages its template is made
  of (:func:`autograder.catalogs.source_messages`), each problem named at its English
  (chapter, cell and line) and at its entry;
- in every catalog, each translation keeping its message's roles, code, math and links and
  the term pairs of ``terms.tsv``, which agree with the glossary
  (:mod:`autograder.i18n.review`, which reads the catalogs alone).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from autograder import i18n
from autograder import notebooks as nbs
from autograder.catalogs import source_messages
from autograder.i18n import review
from autograder.i18n.review import excerpt, pofile


def catalogs(code: str, root: Path = nbs.ROOT) -> list[str]:
    """The domains of every catalog there is: ``course`` and ``book/<page>``."""
    base = i18n.catalog_dir(code, root)
    return sorted(p.relative_to(base).with_suffix("").as_posix() for p in base.rglob("*.po"))


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
    for entry in pofile(code, domain, root):
        if entry.obsolete:
            found.append(f"{rel}:{entry.linenum}: obsolete entry {excerpt(entry.msgid)}")
            continue
        entries[entry.msgid] = entry
        if entry.msgid not in where:
            found.append(
                f"{rel}:{entry.linenum}: {excerpt(entry.msgid)} is no longer in the source "
                "(run `make catalogs`)"
            )
        elif entry.fuzzy:
            found.append(
                f"{where[entry.msgid]}: fuzzy ({rel}:{entry.linenum}) {excerpt(entry.msgid)}"
            )
        elif not entry.msgstr:
            found.append(
                f"{where[entry.msgid]}: untranslated ({rel}:{entry.linenum}) {excerpt(entry.msgid)}"
            )
    for msgid, place in where.items():
        if msgid not in entries:
            found.append(f"{place}: not in {rel} (run `make catalogs`) {excerpt(msgid)}")
    return found


def problems(code: str, root: Path = nbs.ROOT) -> Iterator[str]:
    """Everything the tests reject (see the module docstring)."""
    every = catalogs(code, root)
    for domain in i18n.manifest(code, root):
        yield from completeness_problems(code, domain, root)
    for domain in every:
        yield from review.markup_problems(code, domain, root)
        yield from review.term_problems(code, domain, root)
    yield from review.glossary_problems(code, root)
