"""Finding and replacing the messages of a page's Markdown (autograder/i18n/markdown.py): the
messages Sphinx's gettext builder makes, each replaced in its own place."""

from __future__ import annotations

import pytest

from autograder import notebooks as nbs
from autograder.i18n import markdown, pages

EXT = pages.extensions()


@pytest.mark.parametrize("page", nbs.toc_files())
def test_every_message_is_replaced_in_place(page):
    """Does every message of every page (lists, tables, figures, glossaries, admonitions) get
    its translation in its own place: translating each one to a marked copy and reading the
    text again gives exactly the marked messages, display math untouched?"""
    path = pages.page_file(page)
    texts = (
        [path.read_text()]
        if path.suffix == ".md"
        else [c.source for c in nbs.read(path).cells if c.cell_type == "markdown"]
    )
    mark = lambda m: f"《{m}》"  # noqa: E731
    for text in texts:
        before = markdown.blocks(text, EXT)
        out, missing = markdown.translate(text, mark, EXT)
        assert not missing
        after = [b.msgid for b in markdown.blocks(out, EXT)]
        assert after == [b.msgid if b.kind == "math" else mark(b.msgid) for b in before]


def test_markdown_messages_are_those_sphinx_makes():
    text = """\
# A *title*

A paragraph
over two lines with `code` and $x$.

- item one
  continued
- item two

| a | b |
| - | - |
| `x` | c d |

```{figure} f.svg
:name: fig-f
:alt: The alt text.

The caption.
```

```{admonition} A title
:class: dropdown

Inside.
```

```python
code is not a message
```

$$
y = x
$$ (eq-y)
"""
    found = [(b.kind, b.msgid) for b in markdown.blocks(text, EXT)]
    assert found == [
        ("heading", "A *title*"),
        ("paragraph", "A paragraph over two lines with `code` and $x$."),
        ("paragraph", "item one continued"),
        ("paragraph", "item two"),
        ("cell", "a"),
        ("cell", "b"),
        ("cell", "`x`"),
        ("cell", "c d"),
        ("alt", "The alt text."),
        ("paragraph", "The caption."),
        ("title", "A title"),
        ("paragraph", "Inside."),
        ("math", "\ny = x\n"),
    ]
    out, _ = markdown.translate(text, lambda m: {"item one continued": "第一项"}.get(m), EXT)
    assert "- 第一项\n- item two" in out


def test_an_unknown_directive_is_an_error():
    with pytest.raises(markdown.UnknownDirective, match="mystery"):
        markdown.blocks("```{mystery}\ntext\n```\n", EXT)
