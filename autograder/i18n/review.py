"""The review of a translation: does each translation keep what its message must keep?

It owns what the tests hold every translation of every catalog to, read from the catalog
alone (no message source needed):

- :func:`markup_problems`: each translation keeps its message's roles (name and target),
  inline code, math and link targets (:func:`markup`), and opens no emphasis that
  CommonMark leaves as text; a catalog of the tools' text (:data:`.UI_DOMAINS`) keeps its
  templates' fields, and ``checks`` its format fields and code;
- :func:`term_problems`: each translation renders a listed English term as
  ``locale/<locale>/terms.tsv`` says, unless a translator comment says why not;
- :func:`glossary_problems`: ``terms.tsv`` agrees with ``book/glossary.md``.

And the two facts about a message that making the catalogs needs too: whether it has words
to translate (:func:`needs_translation`) and the fields of a template
(:func:`format_fields`, :data:`PLACEHOLDER`). Whether a catalog is complete and in step with
the source is :mod:`autograder.catalogs.audit`' (it reads the source).
"""

from __future__ import annotations

import re
import string
from pathlib import Path

from autograder import i18n
from autograder import notebooks as nbs
from autograder.i18n import Term, markdown, pages, terms

PLACEHOLDER = re.compile(r"\{\w*\}|%\(\w+\)[sd]")  # a field of a tool's template
_NOTHING = re.compile(r"\{[\w:]+\}`[^`]*`|`+[^`]*`+|\$\$.*?\$\$|\$[^$]*\$|https?://\S+", re.S)
_ROLE = re.compile(r"\{([\w:-]+)\}`([^`]*)`")
_CODE = re.compile(r"(`+)(.+?)\1", re.S)
_MATH = re.compile(r"\$\$(.+?)\$\$|\$([^$\s](?:[^$]*[^$\s])?)\$", re.S)
_LINK = re.compile(r"\]\(([^)\s]+)\)|<(https?://[^>\s]+)>|(?<![(<])(https?://[^\s)>]+)")
_IDENTIFIERS = re.compile(r"\{[^{}]*\}|[\w.]*\w\.\w+(?:\(\))?")


def needs_translation(msgid: str) -> bool:
    """Whether a message has words: not a number, display math or only code and math."""
    if msgid.startswith("\n"):  # display math, as Sphinx extracts it
        return False
    return bool(re.search(r"[^\W\d_]", _NOTHING.sub(" ", msgid)))


def format_fields(text: str) -> list[str]:
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


def pofile(code: str, domain: str, root: Path = nbs.ROOT):
    """The catalog ``domain`` of language ``code``, read by polib."""
    import polib

    return polib.pofile(str(i18n.catalog_path(code, domain, root)), wrapwidth=0)


def excerpt(msgid: str) -> str:
    """A message on one line, cut to 70 characters: how a problem names it."""
    text = " ".join(msgid.split())
    return repr(text if len(text) <= 70 else text[:67] + "...")


# ---------------------------------------------------------------- markup


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
    for entry in pofile(code, domain, root):
        if not entry.msgstr or entry.obsolete or entry.fuzzy:  # fuzzy: not used
            continue
        if entry.msgid.startswith("\n"):  # display math: itself, or nothing
            if entry.msgstr != entry.msgid:
                found.append(f"{rel}:{entry.linenum}: display math changed {excerpt(entry.msgid)}")
            continue
        if domain == i18n.CHECKS:  # plain text: its format fields and its `code` stay
            if format_fields(entry.msgstr) != format_fields(entry.msgid):
                found.append(
                    f"{rel}:{entry.linenum}: format fields {format_fields(entry.msgid)} changed "
                    f"to {format_fields(entry.msgstr)} in {excerpt(entry.msgid)}"
                )
            if markup(entry.msgstr)["code"] != markup(entry.msgid)["code"]:
                found.append(
                    f"{rel}:{entry.linenum}: inline code differs in {excerpt(entry.msgid)}"
                )
            continue
        if domain in i18n.UI_DOMAINS and PLACEHOLDER.search(entry.msgid):  # its fields stay
            want = sorted(re.findall(PLACEHOLDER, entry.msgid))
            if sorted(re.findall(PLACEHOLDER, entry.msgstr)) != want:
                found.append(f"{rel}:{entry.linenum}: placeholders {want} changed")
            continue
        if _stray_stars(entry.msgstr) > _stray_stars(entry.msgid):
            found.append(
                f"{rel}:{entry.linenum}: * or ** left as text in {excerpt(entry.msgstr)}: "
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
                    f"{excerpt(entry.msgid)}"
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
    for entry in pofile(code, domain, root):
        if not entry.msgstr or entry.obsolete or entry.fuzzy or not needs_translation(entry.msgid):
            continue
        english, chinese = _prose(entry.msgid), _prose(entry.msgstr)
        if domain == i18n.CHECKS:  # plain text: format fields and dotted names are not prose
            english, chinese = (_IDENTIFIERS.sub(" ", text) for text in (english, chinese))
        exempt = allowed(entry)
        for term in listed:
            if term.english[0].lower() in exempt or not term.pattern.search(english):
                continue
            if not any(c in chinese for c in term.chinese):
                found.append(
                    f"{rel}:{entry.linenum}: {term.english[0]!r} should be "
                    f"{' or '.join(term.chinese)} in {excerpt(entry.msgstr)} "
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
