"""The translatable blocks of MyST Markdown, as Sphinx's gettext builder sees them.

Sphinx (through myst-parser) makes one message of each paragraph, heading, table cell,
definition-list term, glossary term, admonition title, figure caption and image alt text:
its MyST source with the lines joined by spaces (``node.rawsource`` in
``sphinx.util.nodes.extract_messages``). :func:`blocks` finds the same messages with
markdown-it (the parser myst-parser runs), together with where each one sits in the
text, so that :func:`translate` can put a translation in its place: this is how the
downloadable notebooks, the launchable notebooks and a release get their Chinese text
from the catalogs that also translate the book's pages.

Code (fences, code cells, inline code), math, targets and comments are never messages.
A directive this module does not know raises :class:`UnknownDirective`, rather than
leaving its text silently untranslated.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

# Directives whose body is Markdown and whose argument (if any) is a title.
ADMONITIONS = {
    "admonition", "note", "tip", "hint", "important", "warning", "caution", "attention",
    "danger", "error", "seealso", "topic", "sidebar", "dropdown", "epigraph", "rubric",
}  # fmt: skip
# Directives with nothing to translate: code, math, bibliographies, raw output.
VERBATIM = {
    "code-cell", "code-block", "code", "sourcecode", "literalinclude", "math", "raw",
    "bibliography", "toctree", "tableofcontents", "include", "eval-rst", "only",
}  # fmt: skip
IMAGES = {"figure", "image"}
_PIPE = re.compile(r"(`+).*?\1|\\\||\|")  # code spans and escaped pipes are not cell borders


class UnknownDirective(ValueError):
    """A directive whose messages this module cannot find (add it to a list above)."""


@dataclass(frozen=True)
class Block:
    """One message and where its source is in the text.

    The translation replaces lines ``start`` to ``end - 1`` from column ``col`` of the first
    line (``stop`` is None: a paragraph, its later lines dropped) or the columns ``col`` to
    ``stop`` of line ``start`` (a heading, a cell, an option, a term, a title).
    """

    msgid: str
    kind: str
    start: int
    end: int
    col: int
    stop: int | None = None


@functools.cache
def _parser(extensions: frozenset[str]):
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    return create_md_parser(MdParserConfig(enable_extensions=set(extensions)), RendererHTML)


def message(text: str) -> str:
    """The msgid Sphinx makes of a node's source: its lines joined, stripped."""
    return text.replace("\n", " ").strip()


def _suffix_col(line: str, part: str) -> int:
    """Where ``part`` (a line as markdown-it saw it, indentation stripped) starts in ``line``."""
    line, part = line.rstrip(), part.rstrip()
    if part and line.endswith(part):
        return len(line) - len(part)
    raise ValueError(f"cannot place {part!r} in {line!r}")


def _cells(line: str) -> list[tuple[int, int]]:
    """Column ranges of the cells of a table row (inside its outer pipes)."""
    borders = [m.start() for m in _PIPE.finditer(line) if m.group() == "|"]
    start = 0 if not line.lstrip().startswith("|") else borders.pop(0) + 1
    spans = []
    for border in [*borders, len(line)]:
        spans.append((start, border))
        start = border + 1
    if spans and not line[spans[-1][0] :].strip():
        spans.pop()  # the text after the last pipe
    return spans


def _directive(info: str) -> tuple[str, str] | None:
    match = re.match(r"\{([\w:-]+)\}\s*(.*)$", info.strip())
    return (match[1], match[2].strip()) if match else None


def _split_options(body: list[str]) -> tuple[list[tuple[int, str, str]], int]:
    """``:name: value`` options (or a ``---`` YAML block) at the top of a directive body:
    [(line, name, value)] and the index of the body's first line of content."""
    options, i = [], 0
    if body and body[0].strip() == "---":
        i = 1
        while i < len(body) and body[i].strip() != "---":
            match = re.match(r"\s*([\w-]+):\s?(.*)$", body[i])
            if match:
                options.append((i, match[1], match[2].strip()))
            i += 1
        i += 1
    else:
        while i < len(body) and re.match(r"\s*:[\w-]+:", body[i]):
            match = re.match(r"\s*:([\w-]+):\s?(.*)$", body[i])
            options.append((i, match[1], match[2].strip()))
            i += 1
    while i < len(body) and not body[i].strip():
        i += 1
    return options, i


class _Text:
    """Lines of a (nested) text and, for each, its line in the outermost text."""

    def __init__(self, lines: list[str], where: list[int], outer: list[str]):
        self.lines, self.where, self.outer = lines, where, outer

    def sub(self, first: int, lines: list[str]) -> _Text:
        return _Text(lines, self.where[first : first + len(lines)], self.outer)

    def col(self, i: int, part: str) -> int:
        """Column in the outer line of where ``part`` starts in nested line ``i``."""
        outer, inner = self.outer[self.where[i]], self.lines[i]
        return (len(outer) - len(inner)) + _suffix_col(inner, part)


def blocks(text: str, extensions: frozenset[str]) -> list[Block]:
    """Every message of ``text`` (MyST Markdown), in order, with its place in ``text``."""
    lines = text.split("\n")
    return list(_blocks(_Text(lines, list(range(len(lines))), lines), extensions))


def _blocks(text: _Text, extensions: frozenset[str]) -> Iterator[Block]:
    tokens = _parser(extensions).parse("\n".join(text.lines))
    row = cell = 0
    for i, token in enumerate(tokens):
        if token.type == "tr_open":
            row, cell = token.map[0], 0
        elif token.type in ("th_open", "td_open"):
            inline = tokens[i + 1]
            spans = _cells(text.lines[row])
            if inline.content.strip():
                col0, col1 = spans[cell]
                raw = text.lines[row][col0:col1]
                col0 += len(raw) - len(raw.lstrip())
                col1 -= len(raw) - len(raw.rstrip())
                outer = text.col(row, text.lines[row]) + col0
                yield Block(
                    message(inline.content), "cell", text.where[row], text.where[row] + 1,
                    outer, outer + col1 - col0,
                )  # fmt: skip
            cell += 1
        elif token.type in ("paragraph_open", "heading_open", "dt_open"):
            inline = tokens[i + 1]
            if not inline.content.strip():
                continue
            first = inline.content.split("\n")[0]
            start, end = token.map
            col = text.col(start, first)
            if token.type == "paragraph_open":
                kind, stop = "paragraph", None
                end = start + len(inline.content.split("\n"))
            else:
                kind, end = token.type.removesuffix("_open"), start + 1
                stop = col + len(first.rstrip())
                if token.type == "heading_open" and not token.markup.startswith("#"):
                    raise ValueError(f"line {text.where[start] + 1}: use # headings: {first!r}")
            yield Block(
                message(inline.content), kind, text.where[start], text.where[end - 1] + 1, col, stop
            )
        elif token.type in ("math_block", "math_block_label", "amsmath"):
            # Sphinx's message is the math as written (not joined); it translates to itself.
            start, end = token.map
            yield Block(token.content, "math", text.where[start], text.where[end - 1] + 1, 0)
        elif token.type in ("fence", "colon_fence"):
            yield from _directive_blocks(text, token, extensions)
        elif token.type == "inline" and token.children:
            for child in token.children:
                if child.type == "image" and child.content:
                    raise ValueError(
                        f"Markdown images are not supported, use {{figure}}: {child.content!r}"
                    )


def _directive_blocks(text: _Text, token, extensions) -> Iterator[Block]:
    parsed = _directive(token.info)
    if parsed is None:
        return  # a code block
    name, argument = parsed
    if name in VERBATIM:
        return
    first = token.map[0]
    body = token.content.split("\n")
    if body and body[-1] == "":
        body.pop()
    body_text = text.sub(first + 1, body)
    if name == "glossary":
        options, at = _split_options(body)
        yield from _glossary(body_text, at, extensions)
        return
    if name in IMAGES or name in ADMONITIONS:
        options, at = _split_options(body)
        if name in ADMONITIONS and argument:
            fence = text.lines[first]
            col = text.col(first, fence) + fence.rindex(argument)
            yield Block(
                message(argument),
                "title",
                text.where[first],
                text.where[first] + 1,
                col,
                col + len(argument),
            )
        for line, option, value in options:
            if option == "alt" and value:
                col = body_text.col(line, body[line]) + body[line].rindex(value)
                w = body_text.where[line]
                yield Block(value, "alt", w, w + 1, col, col + len(value))
        yield from _blocks(body_text.sub(at, body[at:]), extensions)
        return
    raise UnknownDirective(
        f"line {text.where[first] + 1}: the directive {{{name}}} is not known to "
        "autograder.i18n.markdown: add it to ADMONITIONS (a Markdown body) or VERBATIM"
    )


def _glossary(body: _Text, at: int, extensions) -> Iterator[Block]:
    """Sphinx's glossary: unindented lines are terms, indented ones their definition,
    dedented by the indentation of its first line and parsed as MyST."""
    i = at
    lines = body.lines
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if line[0] not in " \t":
            col = body.col(i, line)
            yield Block(
                message(line),
                "term",
                body.where[i],
                body.where[i] + 1,
                col,
                col + len(line.rstrip()),
            )
            i += 1
            continue
        j = i
        while j < len(lines) and (not lines[j].strip() or lines[j][0] in " \t"):
            j += 1
        indent = len(line) - len(line.lstrip())
        definition = [ln[indent:] for ln in lines[i:j]]
        yield from _blocks(body.sub(i, definition), extensions)
        i = j


def translate(
    text: str, lookup: Callable[[str], str | None], extensions: frozenset[str]
) -> tuple[str, list[Block]]:
    """``text`` with every block that ``lookup`` translates replaced by its translation;
    and the blocks it did not translate."""
    lines = text.split("\n")
    missing = []
    for block in sorted(blocks(text, extensions), key=lambda b: (b.start, b.col), reverse=True):
        if block.kind == "math":
            continue  # display math is the same in every language
        msgstr = lookup(block.msgid)
        if not msgstr:
            missing.append(block)
            continue
        if "\n" in msgstr:
            raise ValueError(f"a translation spans lines: {msgstr!r}")
        first = lines[block.start]
        if block.stop is None:
            lines[block.start : block.end] = [first[: block.col] + msgstr]
        else:
            lines[block.start] = first[: block.col] + msgstr + first[block.stop :]
    return "\n".join(lines), missing[::-1]
