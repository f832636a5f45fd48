"""Draw the book's concept diagrams, one SVG per chapter's core computation, in every language.

Run from the repository root::

    python book/figures/make_diagrams.py            # rewrite every SVG, in every language
    python book/figures/make_diagrams.py --check    # exit 1 if a committed SVG differs
    python book/figures/make_diagrams.py --lang zh  # only the Chinese ones

The output is deterministic: the same matplotlib (pinned in requirements.lock) writes the same
bytes. Text is drawn as paths (``svg.fonttype: path``) with matplotlib's own DejaVu fonts, so a
browser shows it the same everywhere without any font; the element ids come from a fixed
``svg.hashsalt``; the date is left out of the metadata. ``tests/test_figures.py`` regenerates the
files and compares them with the committed ones.

Each diagram is a function registered with ``@diagram(name, title, alt)``: it writes
``book/figures/<name>.svg``. The chapter shows it with a MyST figure whose ``:alt:`` is the
``alt`` given here, word for word (the test checks that too), and the SVG carries it as its
``<desc>``.

Languages. Every label with words goes through :func:`tr`, and so do the titles: English is
the text written here; another language's comes from the gettext catalog ``figures``
(``locale/<locale>/LC_MESSAGES/figures.po``), whose messages ``make catalogs`` reads out of
this file (``autograder/catalogs/ui_messages.py``: the literal argument of every ``tr`` call and the
title of every ``@diagram``). Symbols and formulas (``q``, ``W_q``, ``(B, m, n)``,
``softmax(QKᵀ/√d) V``) are drawn as they are. The Chinese diagrams are written to
``book/figures/zh_CN/<name>.svg``, where the Chinese book finds them (Sphinx's
``figure_language_filename``, set by ``autograder/book/i18n_stage.py``); their ``<desc>`` is the
translation of the alt text from the catalog of the page that shows the figure. Chinese is
drawn with Noto Sans CJK SC from Debian's fonts-noto-cjk (``make system``), glyph by glyph
after DejaVu Sans, so that Latin letters, Greek and symbols look as in English; without that
font the generator stops with an error rather than draw empty boxes.

Diagrams are data. Every probability distribution a diagram draws (attention weights, printed or
shaded) is taken from ``DISTRIBUTIONS`` below, as the numbers the reader sees, and the test checks
that each sums to 1. ``texts_outside(fig)`` measures every text as the SVG writer lays it out;
``main`` refuses to write a diagram whose text leaves the figure or has a character no font
draws, and the test checks every one, in every language.
"""

from __future__ import annotations

import argparse
import functools
import io
import math
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure
from matplotlib.font_manager import FontPath, FontProperties, get_font
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch, Rectangle

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]  # the repository: its locale/ holds the catalogs

# Every text names its font file: matplotlib's own DejaVu Sans, the same bytes wherever the
# pinned matplotlib is installed. (By family name, a system copy of another version could win.)
# No pyplot, so importing this module changes no backend or global state.
_FONTS = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
FONT_FILES = {"normal": _FONTS / "DejaVuSans.ttf", "bold": _FONTS / "DejaVuSans-Bold.ttf"}
# Chinese: Noto Sans CJK SC, a face of the collections in Debian's fonts-noto-cjk.
_NOTO = Path("/usr/share/fonts/opentype/noto")
CJK_FONT_FILES = {
    "normal": _NOTO / "NotoSansCJK-Regular.ttc",
    "bold": _NOTO / "NotoSansCJK-Bold.ttc",
}
CJK_FAMILY = "Noto Sans CJK SC"
# The languages drawn: code (as COURSE_LANG) -> the folder of its SVGs under book/figures/
# (its locale, the `{language}` of Sphinx's figure_language_filename).
LANGUAGES = {"en": "", "zh": "zh_CN"}


# Every text is drawn at least this large (in points), so that a diagram scaled down to a
# phone's width (390 px) stays readable.
MIN_SIZE = 9.5


class FontMissing(RuntimeError):
    """A language's labels need a font that is not installed."""


@dataclass
class _Drawing:
    lang: str = "en"
    messages: set | None = None  # the msgids tr() was asked for while drawing


_NOW = _Drawing()


@contextmanager
def drawing(lang: str):
    """Draw in language ``lang`` (a key of ``LANGUAGES``) inside this block."""
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}; the diagrams are drawn in {list(LANGUAGES)}")
    before = _NOW.lang, _NOW.messages
    _NOW.lang, _NOW.messages = lang, set()
    try:
        yield _NOW
    finally:
        _NOW.lang, _NOW.messages = before


def tr(msgid: str) -> str:
    """``msgid``, a label's English, in the language being drawn: its translation in the
    catalog ``figures``, or the English where there is none yet (as Sphinx does for a page).

    ``make catalogs`` finds the messages by reading this file: call ``tr`` with a literal
    string, and fill a template's fields after it: ``tr("example {b}").format(b=b)``.
    """
    if _NOW.messages is not None:
        _NOW.messages.add(msgid)
    return _translated(msgid, _NOW.lang)


def _translated(msgid: str, lang: str) -> str:
    if lang == "en":
        return msgid
    from autograder import i18n

    return i18n.translations(lang, "figures", ROOT).get(msgid) or msgid


def translated_alt(d: Diagram, lang: str) -> str:
    """The alt text of ``d`` in ``lang``: its translation in the catalog of a page that shows
    the figure (the alt text is that page's message, not the diagrams'), or the English."""
    if lang == "en":
        return d.alt
    from autograder import i18n
    from autograder import notebooks as nbs

    for page in nbs.toc_files(ROOT):
        found = i18n.translations(lang, page, ROOT).get(d.alt)
        if found:
            return " ".join(found.split())
    return d.alt


@functools.cache
def _cjk_font(weight: str) -> FontPath:
    """The face of Noto Sans CJK SC in its collection, or :class:`FontMissing`."""
    from matplotlib import ft2font

    path = CJK_FONT_FILES[weight]
    if path.exists():
        for index in range(ft2font.FT2Font(str(path)).num_faces):
            if ft2font.FT2Font(str(path), face_index=index).family_name == CJK_FAMILY:
                return FontPath(str(path), index)
    raise FontMissing(
        f"the Chinese diagrams need the font {CJK_FAMILY} ({weight}), which is not in {path}: "
        "install Debian's fonts-noto-cjk (`make system`). Without it Chinese labels would be "
        "drawn as empty boxes, so nothing was written."
    )


def cjk_font_version() -> str:
    """The version of the Noto Sans CJK SC drawn with (another version draws other bytes)."""
    from matplotlib import ft2font

    font = _cjk_font("normal")
    names = ft2font.FT2Font(font.path, face_index=font.face_index).get_sfnt()
    version = next((v for k, v in names.items() if k[0] == 3 and k[3] == 5), b"")
    return f"{CJK_FAMILY} {version.decode('utf-16-be').split(';')[0]}"


class _WithCJK(FontProperties):
    """DejaVu Sans, then Noto Sans CJK SC for the glyphs DejaVu lacks.

    matplotlib falls back glyph by glyph through a text's list of families, each found by
    name; here each family names its file, as English texts do (a system font of the same
    name never wins), so a Chinese label keeps the English diagrams' Latin letters, Greek
    and symbols.
    """

    def __init__(self, size, weight="normal"):
        super().__init__(family=["dejavu", "cjk"], size=size)
        # a tuple: FontProperties hashes the values of its __dict__
        self._files = (("dejavu", str(FONT_FILES[weight])), ("cjk", _cjk_font(weight)))

    def get_file(self):
        family = self.get_family()
        return dict(self._files)[family[0]] if len(family) == 1 else None

    def __copy__(self):  # FontProperties.copy() would return the base class
        new = _WithCJK.__new__(_WithCJK)
        new.__dict__.update(self.__dict__)
        return new


def font(size, weight="normal"):
    if _NOW.lang == "en":
        return FontProperties(fname=FONT_FILES[weight], size=max(size, MIN_SIZE))
    return _WithCJK(max(size, MIN_SIZE), weight)


RC = {
    "svg.fonttype": "path",
    "svg.hashsalt": "attention-step-by-step",
    "svg.image_inline": True,
    "text.parse_math": False,
    "path.simplify": False,
}

# Colours: one per role, used the same way in every diagram.
QUERY = "#cfe3f7"  # blue: queries
KEY = "#fde2c4"  # orange: keys
VALUE = "#d8efd3"  # green: values
WEIGHT = "#f6c9c9"  # red: scores and weights
OP = "#eeeeee"  # grey: operations
OUT = "#e6dcf2"  # purple: outputs
EDGE = "#444444"
HEADS = ["#9ecae1", "#fdae6b", "#a1d99b"]  # one colour per head


@dataclass
class Diagram:
    name: str
    title: str
    alt: str
    draw: object


DIAGRAMS: dict[str, Diagram] = {}


def diagram(name: str, title: str, alt: str):
    def register(fn):
        DIAGRAMS[name] = Diagram(name, title, " ".join(alt.split()), fn)
        return fn

    return register


# ---------------------------------------------------------------- the numbers the diagrams draw


def rounded_distribution(scores, decimals=2):
    """The softmax of ``scores``, rounded to ``decimals`` so that the shown numbers sum to 1.

    Rounding each weight on its own can make the printed numbers sum to 0.99 or 1.01; the
    largest-remainder rule rounds down, then gives the missing units to the largest remainders.
    Returns strings, as drawn.
    """
    exps = [math.exp(s) for s in scores]
    unit = 10**decimals
    exact = [unit * e / sum(exps) for e in exps]
    units = [math.floor(x) for x in exact]
    by_remainder = sorted(range(len(exact)), key=lambda i: units[i] - exact[i])
    for i in by_remainder[: unit - sum(units)]:
        units[i] += 1
    return tuple(f"{u / unit:.{decimals}f}" for u in units)


# Attention pooling: four made-up scores a(q, k_i), and the weights drawn, their softmax.
POOLING_SCORES = (-1.0, 0.5, -0.2, -2.0)
POOLING_WEIGHTS = rounded_distribution(POOLING_SCORES)
# Masking: one row of scores, of which the first MASKING_VALID keys are valid.
MASKING_SCORES = ("1.2", "0.3", "2.0", "0.7", "1.5")
MASKING_VALID = 3
MASKING_WEIGHTS = rounded_distribution([float(s) for s in MASKING_SCORES[:MASKING_VALID]]) + (
    ("0",) * (len(MASKING_SCORES) - MASKING_VALID)
)
# Scaled dot-product attention: the weights A shaded in the diagram, one row per query.
SDPA_WEIGHTS = (
    ("0.1", "0.5", "0.2", "0.1", "0.1"),
    ("0.6", "0.1", "0.1", "0.1", "0.1"),
    ("0.2", "0.2", "0.2", "0.3", "0.1"),
)

# Every distribution a diagram draws, by diagram: tests/test_figures.py checks that each sums to 1.
DISTRIBUTIONS: dict[str, tuple[tuple[str, ...], ...]] = {
    "attention_pooling": (POOLING_WEIGHTS,),
    "masking": (MASKING_WEIGHTS,),
    "dot_product_attention": SDPA_WEIGHTS,
}


# ---------------------------------------------------------------- drawing helpers

SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")  # "k1".translate(SUB) == "k₁"


def canvas(width, height):
    """A figure whose data coordinates are inches, origin at the bottom left."""
    fig = Figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig, ax


def box(ax, x, y, w, h, text="", fc=OP, size=11, ec=EDGE, lw=1.0, round_=0.06, **kw):
    """A rounded box centred at (x, y)."""
    ax.add_patch(
        FancyBboxPatch(
            (x - w / 2, y - h / 2),
            w,
            h,
            boxstyle=f"round,pad=0,rounding_size={round_}",
            fc=fc,
            ec=ec,
            lw=lw,
        )
    )
    if text:
        ax.text(x, y, text, ha="center", va="center", fontproperties=font(size), **kw)


def arrow(ax, start, end, text=None, offset=(0, 0.12), size=10, color=EDGE, style="-|>", **kw):
    ax.add_patch(
        FancyArrowPatch(
            start,
            end,
            arrowstyle=style,
            mutation_scale=11,
            color=color,
            lw=1.1,
            shrinkA=0,
            shrinkB=0,
            **kw,
        )
    )
    if text:
        mx, my = (start[0] + end[0]) / 2 + offset[0], (start[1] + end[1]) / 2 + offset[1]
        ax.text(mx, my, text, ha="center", va="center", fontproperties=font(size), color="#222222")


def grid(ax, x, y, rows, cols, cell=0.22, fc=OP, labels=None, size=9, ec=EDGE, lw=0.8):
    """A matrix of rows × cols cells whose top-left corner is (x, y).

    ``fc`` is one colour or a function (i, j) -> colour; ``labels`` a function (i, j) -> text.
    Returns (left, bottom, right, top).
    """
    for i in range(rows):
        for j in range(cols):
            colour = fc(i, j) if callable(fc) else fc
            ax.add_patch(
                Rectangle((x + j * cell, y - (i + 1) * cell), cell, cell, fc=colour, ec=ec, lw=lw)
            )
            if labels is not None:
                text = labels(i, j)
                if text:
                    ax.text(
                        x + (j + 0.5) * cell,
                        y - (i + 0.5) * cell,
                        text,
                        ha="center",
                        va="center",
                        fontproperties=font(size),
                    )
    return x, y - rows * cell, x + cols * cell, y


def label(ax, x, y, text, size=11, ha="center", va="center", fontweight="normal", **kw):
    ax.text(x, y, text, ha=ha, va=va, fontproperties=font(size, fontweight), **kw)


# ---------------------------------------------------------------- the diagrams


@diagram(
    "attention_pooling",
    "Attention pooling: queries, keys and values",
    """A query q is compared with each of four keys k1 to k4 by a scoring function a(q, k_i).
    A softmax over the four scores turns them into attention weights α1 to α4, which are
    non-negative and sum to one, drawn as bars of different lengths. Each weight multiplies the
    value v_i filed under its key, and the sum of the weighted values is the output f(q).""",
)
def attention_pooling():
    fig, ax = canvas(5.6, 3.7)
    rows = [2.75, 2.1, 1.45, 0.8]
    weights = [float(w) for w in POOLING_WEIGHTS]  # the softmax of POOLING_SCORES, as shown
    box(ax, 0.5, 3.4, 0.62, 0.36, tr("query q"), QUERY, size=10)
    label(ax, 1.25, 3.4, tr("keys"), size=10, color="#555555")
    label(ax, 4.15, 3.4, tr("values"), size=10, color="#555555")
    ax.plot([0.5, 0.5], [3.22, rows[-1]], color=EDGE, lw=1.1)
    for i, (y, w) in enumerate(zip(rows, weights, strict=True)):
        ax.plot([0.5, 0.83], [y, y], color=EDGE, lw=1.1)
        box(ax, 1.25, y, 0.5, 0.36, f"k{i + 1}".translate(SUB), KEY)
        arrow(ax, (1.5, y), (1.78, y))
        box(ax, 2.18, y, 0.8, 0.36, f"a(q, k{i + 1})".translate(SUB), WEIGHT, size=10)
        # the weight, as a bar
        ax.add_patch(
            Rectangle((3.0, y - 0.13), 0.7 * w / max(weights), 0.26, fc="#d9534f", ec="none")
        )
        label(
            ax,
            3.0,
            y + 0.25,
            f"α{i + 1}".translate(SUB) + f" = {POOLING_WEIGHTS[i]}",
            size=9,
            ha="left",
        )
        label(ax, 3.86, y, "×", size=12)
        box(ax, 4.15, y, 0.5, 0.36, f"v{i + 1}".translate(SUB), VALUE)
        arrow(ax, (4.4, y), (4.78, 1.78), color="#777777")
    # the softmax brace over the scores
    ax.plot(
        [2.62, 2.72, 2.72, 2.62],
        [rows[0] + 0.18, rows[0] + 0.18, rows[-1] - 0.18, rows[-1] - 0.18],
        color=EDGE,
        lw=1.0,
    )
    label(ax, 2.86, 0.34, tr("softmax over the keys:\nα ≥ 0, Σα = 1"), size=9, color="#333333")
    box(ax, 5.0, 1.78, 0.44, 0.44, "Σ", OP, size=14)
    arrow(ax, (5.0, 1.56), (5.0, 0.75))
    box(ax, 5.0, 0.55, 0.95, 0.36, "f(q) = Σ αᵢ vᵢ", OUT, size=9)
    return fig


@diagram(
    "masking",
    "Masking: a mask by broadcasting, and a softmax over the valid keys",
    """Top: a row of positions 0 to 4, of shape (1, 5), is compared with a column of valid
    lengths 2 and 3, of shape (2, 1); broadcasting gives a (2, 5) boolean mask whose row i is
    True for the first valid_len[i] positions and False for the padding. Bottom: one row of
    scores; the masked positions are set to minus infinity, and the softmax gives them a weight
    of exactly zero, so the weight is shared among the valid keys only.""",
)
def masking():
    fig, ax = canvas(5.6, 4.3)
    c = 0.36
    # positions row and lengths column
    label(ax, 1.55 + 2.5 * c, 4.12, tr("positions, (1, 5)"), size=10)
    grid(ax, 1.55, 3.95, 1, 5, c, fc=OP, labels=lambda i, j: str(j), size=10)
    label(ax, 0.55, 3.05, "valid_len\n(2, 1)", size=10)
    grid(ax, 0.95, 3.4, 2, 1, c, fc=KEY, labels=lambda i, j: "23"[i], size=10)
    label(ax, 1.42, 3.05, "<", size=14)
    valid = [2, 3]
    grid(
        ax,
        1.55,
        3.4,
        2,
        5,
        c,
        fc=lambda i, j: "#b7dfb0" if j < valid[i] else "#eeeeee",
        labels=lambda i, j: "T" if j < valid[i] else "F",
        size=10,
    )
    label(
        ax,
        1.55 + 5 * c + 0.12,
        3.05,
        tr("mask, (2, 5):\nT = valid key,\nF = padding"),
        size=10,
        ha="left",
    )
    ax.plot([0.2, 5.4], [2.45, 2.45], color="#bbbbbb", lw=0.8, ls="--")
    # one row through the masked softmax
    scores, valid = MASKING_SCORES, MASKING_VALID
    label(ax, 0.7, 2.0, tr("scores\nrow 1"), size=10)
    grid(ax, 1.55, 2.18, 1, 5, c, fc=WEIGHT, labels=lambda i, j: scores[j], size=9)
    arrow(ax, (1.55 + 2.5 * c, 1.8), (1.55 + 2.5 * c, 1.42), tr("mask: F → −∞"), offset=(1.05, 0))
    label(ax, 0.7, 1.2, tr("masked"), size=10)
    grid(
        ax,
        1.55,
        1.38,
        1,
        5,
        c,
        fc=lambda i, j: WEIGHT if j < valid else "#eeeeee",
        labels=lambda i, j: scores[j] if j < valid else "−∞",
        size=9,
    )
    arrow(
        ax,
        (1.55 + 2.5 * c, 1.0),
        (1.55 + 2.5 * c, 0.62),
        tr("softmax over the row"),
        offset=(1.25, 0),
    )
    label(ax, 0.7, 0.4, tr("weights"), size=10)
    weights = MASKING_WEIGHTS
    grid(
        ax,
        1.55,
        0.58,
        1,
        5,
        c,
        fc=lambda i, j: "#e7a3a3" if j < valid else "#ffffff",
        labels=lambda i, j: weights[j],
        size=9,
    )
    label(ax, 1.55 + 5 * c + 0.12, 0.4, tr("padding: exactly 0"), size=10, ha="left")
    return fig


@diagram(
    "additive_attention",
    "Additive attention: every query paired with every key by broadcasting",
    """Three projected queries form a column of shape (B, m, 1, h) and four projected keys a
    row of shape (B, 1, n, h), each a vector of h hidden units. Adding them broadcasts to a
    grid of shape (B, m, n, h): cell (i, j) holds W_q q_i + W_k k_j. tanh acts on every
    entry, and the vector w_v maps the h units of each cell to one number, giving the scores
    of shape (B, m, n). The (B, m, n, h) grid is the large intermediate tensor.""",
)
def additive_attention():
    fig, ax = canvas(5.2, 4.2)
    m, n, c = 3, 4, 0.42

    def stack(x, y, fc, text=None):
        """One h-vector: a cell with two shadows behind it, for the h axis."""
        for k in (2, 1):
            ax.add_patch(
                Rectangle((x + 0.05 * k, y + 0.05 * k), c * 0.8, c * 0.8, fc=fc, ec=EDGE, lw=0.6)
            )
        ax.add_patch(Rectangle((x, y), c * 0.8, c * 0.8, fc=fc, ec=EDGE, lw=0.8))
        if text:
            label(ax, x + 0.4 * c, y + 0.4 * c, text, size=9)

    # keys row, top
    gx, gy = 1.55, 2.65  # bottom-left of the grid's top row
    label(ax, gx + n * c / 2, 3.95, tr("keys  (B, 1, n, h)"), size=10)
    for j in range(n):
        stack(gx + j * c, 3.35, KEY, f"k{j + 1}".translate(SUB))
    # queries column, left
    label(ax, 0.5, gy - c, tr("queries\n(B, m, 1, h)"), size=10)
    for i in range(m):
        stack(1.0, gy - i * c, QUERY, f"q{i + 1}".translate(SUB))
    label(ax, 1.42, 3.55, "+", size=16)
    # the grid
    for i in range(m):
        for j in range(n):
            stack(gx + j * c, gy - i * c, "#e3dcc8")
    label(
        ax,
        gx + n * c + 0.25,
        gy - 0.2,
        tr("(B, m, n, h)\ncell (i, j):\nW_q qᵢ + W_k kⱼ"),
        size=9,
        ha="left",
    )
    # tanh and w_v
    y0 = gy - m * c + 0.2
    arrow(ax, (gx + n * c / 2, y0), (gx + n * c / 2, y0 - 0.45))
    label(ax, gx + n * c / 2 + 0.15, y0 - 0.22, tr("tanh, then · w_v  (h → 1)"), size=10, ha="left")
    sy = y0 - 0.55
    grid(ax, gx, sy, m, n, c * 0.8, fc=WEIGHT)
    label(ax, gx + n * c * 0.8 + 0.2, sy - m * c * 0.4, tr("scores\n(B, m, n)"), size=10, ha="left")
    return fig


def _matrix(ax, x, y, rows, cols, cell, fc, name, shape, above=True, size=10):
    grid(ax, x, y, rows, cols, cell, fc=fc)
    cx = x + cols * cell / 2
    if above:
        label(ax, cx, y + 0.22, name, size=size + 1)
        label(ax, cx, y - rows * cell - 0.17, shape, size=size - 1, color="#333333")
    return x + cols * cell


@diagram(
    "dot_product_attention",
    "Scaled dot-product attention as two matrix products",
    """Top row: the queries Q, an m by d matrix, times the transposed keys K transposed, d by
    n, give the scores, m by n, divided by the square root of d. An arrow down: a masked
    softmax over each row (over the keys) turns the scores into attention weights. Bottom row:
    the weights, m by n, times the values V, n by v, give the output, m by v: one weighted
    average of the values per query. With a batch every shape gains a leading B.""",
)
def dot_product_attention():
    fig, ax = canvas(5.6, 3.9)
    c = 0.2
    x = 0.35
    x = _matrix(ax, x, 3.45, 3, 4, c, QUERY, "Q", "m × d")
    label(ax, x + 0.2, 3.15, "·", size=18)
    x = _matrix(ax, x + 0.4, 3.45, 4, 5, c, KEY, "Kᵀ", "d × n")
    label(ax, x + 0.25, 3.15, "/ √d", size=11)
    label(ax, x + 0.62, 3.15, "=", size=14)
    sx = x + 0.85
    x = _matrix(ax, sx, 3.45, 3, 5, c, WEIGHT, tr("scores S"), "m × n")
    arrow(ax, (sx + 2.5 * c, 2.4), (sx + 2.5 * c, 1.95))
    label(
        ax,
        sx + 2.5 * c + 0.15,
        2.18,
        tr("masked softmax over\neach row (the keys)"),
        size=9,
        ha="left",
    )

    def shade(i, j):
        a = float(SDPA_WEIGHTS[i][j])
        return (1.0, 1 - 0.75 * a / 0.6, 1 - 0.75 * a / 0.6)

    x = _matrix(ax, sx, 1.55, 3, 5, c, shade, tr("weights A"), "m × n")
    label(ax, sx - 0.3, 1.25, "=", size=14)
    ox = sx - 0.55 - 3 * c
    _matrix(ax, ox, 1.55, 3, 3, c, OUT, tr("output"), "m × v")
    label(ax, x + 0.22, 1.25, "·", size=18)
    _matrix(ax, x + 0.42, 1.55, 5, 3, c, VALUE, "V", "n × v")
    label(
        ax,
        0.35,
        0.3,
        tr("scores: (B, m, d) × (B, d, n) → (B, m, n)\noutput: (B, m, n) × (B, n, v) → (B, m, v)"),
        size=9.5,
        ha="left",
        color="#333333",
    )
    return fig


@diagram(
    "bilinear_attention",
    "Bilinear attention: a matrix between the query and the key",
    """Top: for one pair, the row vector q transposed, 1 by d_q, times the matrix W, d_q by
    d_k, gives a row of size d_k: the query carried into the key space; times the key k,
    d_k by 1, it gives one score. Bottom: batched, the queries (B, m, d_q) times W give
    (B, m, d_k), and times the transposed keys (B, d_k, n) they give the scores (B, m, n),
    with two matrix products and no (m, n, h) intermediate. The sizes d_q and d_k may differ.""",
)
def bilinear_attention():
    fig, ax = canvas(5.9, 3.5)
    c = 0.18
    y = 3.1
    x = _matrix(ax, 0.3, y, 1, 3, c, QUERY, "qᵀ", "1 × d_q")
    label(ax, x + 0.17, y - 0.1, "·", size=18)
    x = _matrix(ax, x + 0.34, y, 3, 4, c, "#f2e6a6", "W", "d_q × d_k")
    label(ax, x + 0.17, y - 0.1, "·", size=18)
    x = _matrix(ax, x + 0.34, y, 4, 1, c, KEY, "k", "d_k × 1")
    label(ax, x + 0.25, y - 0.1, "=", size=14)
    x = _matrix(ax, x + 0.5, y, 1, 1, c, WEIGHT, tr("score"), "1 × 1")
    label(
        ax,
        x + 0.3,
        y - 0.1,
        tr("qᵀW: the query carried\ninto the key space"),
        size=9,
        ha="left",
        color="#333333",
    )
    ax.plot([0.2, 5.7], [1.95, 1.95], color="#bbbbbb", lw=0.8, ls="--")
    y = 1.55
    x = _matrix(ax, 0.3, y, 3, 3, c, QUERY, "Q", "(B, m, d_q)")
    label(ax, x + 0.17, y - 0.27, "·", size=18)
    x = _matrix(ax, x + 0.34, y, 3, 4, c, "#f2e6a6", "W", "(d_q, d_k)")
    label(ax, x + 0.2, y - 0.27, "→", size=14)
    x = _matrix(ax, x + 0.4, y, 3, 4, c, "#e9eef6", "QW", "(B, m, d_k)")
    label(ax, x + 0.17, y - 0.27, "·", size=18)
    x = _matrix(ax, x + 0.34, y, 4, 4, c, KEY, "Kᵀ", "(B, d_k, n)")
    label(ax, x + 0.2, y - 0.27, "→", size=14)
    _matrix(ax, x + 0.4, y, 3, 4, c, WEIGHT, "S", "(B, m, n)")
    return fig


@diagram(
    "self_attention",
    "From one query to self-attention",
    """Three panels. Left, attention pooling: one query q attends over keys and values that
    come from elsewhere, and gives one output. Middle, an attention layer: m queries, from one
    source such as a decoder, attend over n keys and values from another source, such as an
    encoder, and give m outputs. Right, self-attention: the queries, keys and values are all
    projections of the same input X, Q = X W_Q, K = X W_K and V = X W_V, so every item of the
    sequence attends to every item of the same sequence and the output has one row per item.""",
)
def self_attention():
    fig, ax = canvas(6.0, 3.9)
    # panel titles
    cols = [1.0, 3.0, 5.0]
    for x, t in zip(
        cols, [tr("1. pooling"), tr("2. attention layer"), tr("3. self-attention")], strict=True
    ):
        label(ax, x, 3.7, t, size=11, fontweight="bold")
    for x in (2.0, 4.0):
        ax.plot([x, x], [0.15, 3.8], color="#cccccc", lw=0.8)
    # 1: one query, given keys/values
    box(ax, 0.55, 3.05, 0.6, 0.34, "q", QUERY, size=10)
    box(ax, 1.45, 3.05, 0.75, 0.34, tr("k, v pairs"), KEY, size=9)
    att = [(x, 1.95) for x in cols]
    for x, y in att[:1]:
        box(ax, x, y, 1.3, 0.42, tr("softmax(a(q, kᵢ))\nweights · v"), OP, size=9)
    arrow(ax, (0.55, 2.88), (0.75, 2.17))
    arrow(ax, (1.45, 2.88), (1.25, 2.17))
    box(ax, 1.0, 0.95, 1.1, 0.34, tr("one output"), OUT, size=10)
    arrow(ax, (1.0, 1.74), (1.0, 1.12))
    label(ax, 1.0, 0.45, tr("query: (1, d)\nkeys: (n, d)"), size=9, color="#333333")
    # 2: m queries from one source, keys and values from another
    box(ax, 2.5, 3.05, 0.75, 0.34, tr("decoder"), "#f4f4f4", size=9)
    box(ax, 3.5, 3.05, 0.75, 0.34, tr("encoder"), "#f4f4f4", size=9)
    box(ax, 2.5, 2.55, 0.6, 0.3, "Q", QUERY, size=10)
    box(ax, 3.3, 2.55, 0.4, 0.3, "K", KEY, size=10)
    box(ax, 3.75, 2.55, 0.4, 0.3, "V", VALUE, size=10)
    arrow(ax, (2.5, 2.88), (2.5, 2.7))
    arrow(ax, (3.5, 2.88), (3.3, 2.7))
    arrow(ax, (3.5, 2.88), (3.75, 2.7))
    box(ax, 3.0, 1.95, 1.5, 0.42, "softmax(QKᵀ/√d) V", OP, size=9)
    for x0 in (2.5, 3.3, 3.75):
        arrow(ax, (x0, 2.4), (3.0 + (x0 - 3.1) * 0.5, 2.17))
    box(ax, 3.0, 0.95, 1.1, 0.34, tr("m outputs"), OUT, size=10)
    arrow(ax, (3.0, 1.74), (3.0, 1.12))
    label(ax, 3.0, 0.45, "Q: (m, d)\nK, V: (n, d), (n, v)", size=9, color="#333333")
    # 3: all from X
    box(ax, 5.0, 3.15, 0.8, 0.3, "X", "#f4f4f4", size=10)
    for x0, t, fc in ((4.45, "XW_Q", QUERY), (5.0, "XW_K", KEY), (5.55, "XW_V", VALUE)):
        box(ax, x0, 2.55, 0.5, 0.3, t, fc, size=8)
        arrow(ax, (5.0 + (x0 - 5.0) * 0.4, 3.0), (x0, 2.7))
        arrow(ax, (x0, 2.4), (5.0 + (x0 - 5.0) * 0.5, 2.17))
    box(ax, 5.0, 1.95, 1.5, 0.42, "softmax(QKᵀ/√d) V", OP, size=9)
    box(ax, 5.0, 0.95, 1.1, 0.34, tr("N outputs"), OUT, size=10)
    arrow(ax, (5.0, 1.74), (5.0, 1.12))
    label(ax, 5.0, 0.45, tr("X: (N, D_X)\nweights: (N, N)"), size=9, color="#333333")
    return fig


@diagram(
    "multi_head_attention",
    "Multi-head attention: split into heads, attend, merge",
    """A tensor X of shape (B, T, d), here two examples of four positions whose d features
    are split into three coloured groups of d/h, one group per head. reshape gives
    (B, T, h, d/h); permute gives (B, h, T, d/h); reshape again gives (B·h, T, d/h): six
    small matrices, entry b·h + i holding head i of example b. One batched attention call
    handles all six, and transpose_output undoes the steps to give back (B, T, d), the heads'
    outputs concatenated along the features, before the output projection W_o.""",
)
def multi_head_attention():
    fig, ax = canvas(5.6, 4.5)
    T, h, c = 4, 3, 0.16
    dh = 2  # cells per head
    ax_ = 2.2  # the arrows' x
    label(ax, 0.35, 4.35, "X: (B, T, d)", size=11, ha="left")
    for b in range(2):
        x0 = 0.35 + b * 1.35
        grid(ax, x0, 4.1, T, h * dh, c, fc=lambda i, j: HEADS[j // dh])
        label(ax, x0 + h * dh * c / 2, 4.1 - T * c - 0.14, tr("example {b}").format(b=b), size=9)
    label(ax, 3.1, 3.8, tr("d features in h groups\nof d/h, one per head"), size=9, ha="left")
    arrow(ax, (ax_, 3.25), (ax_, 2.95))
    label(ax, ax_ + 0.12, 3.1, tr("reshape, permute: (B, h, T, d/h)"), size=9, ha="left")
    label(
        ax,
        0.35,
        2.78,
        tr("reshape: (B·h, T, d/h), the heads become batch entries"),
        size=10,
        ha="left",
    )
    for k in range(2 * h):
        b, i = divmod(k, h)
        x0 = 0.45 + k * 0.85
        grid(ax, x0, 2.55, T, dh, c, fc=HEADS[i])
        label(ax, x0 + dh * c / 2, 2.55 - T * c - 0.15, f"{k} = {b}·h + {i}", size=8)
    arrow(ax, (ax_, 1.72), (ax_, 1.45))
    box(ax, ax_, 1.25, 3.8, 0.36, tr("one batched attention: softmax(QKᵀ/√(d/h)) V"), OP, size=9.5)
    arrow(ax, (ax_, 1.07), (ax_, 0.8))
    label(ax, ax_ + 0.12, 0.93, tr("transpose_output: heads side by side"), size=9, ha="left")
    for b in range(2):
        x0 = 0.35 + b * 1.35
        grid(ax, x0, 0.72, T, h * dh, c, fc=lambda i, j: HEADS[j // dh])
    label(ax, 3.1, 0.4, tr("(B, T, d), then W_o"), size=10, ha="left")
    return fig


@diagram(
    "transformer_block",
    "Post-norm against pre-norm transformer blocks",
    """Two blocks side by side, data flowing upwards. Post-norm, left: X goes into multi-head
    attention, the result is added to X along a residual connection, then layer normalisation
    LN1; the same again with the feed-forward network and LN2. Every residual sum passes
    through a layer normalisation. Pre-norm, right: LN1 normalises the input of the attention
    and LN2 the input of the feed-forward network, and the residual path from X to the output
    is made of additions only.""",
)
def transformer_block():
    fig, ax = canvas(5.2, 4.75)
    bw, bh, step = 1.6, 0.34, 0.26

    def add(x, y):
        ax.add_patch(Circle((x, y), 0.12, fc="white", ec=EDGE, lw=1.0))
        label(ax, x, y, "+", size=11)

    def column(cx, title, order):
        label(ax, cx, 4.58, title, size=12, fontweight="bold")
        label(ax, cx, 0.12, "X: (B, T, d)", size=10)
        res_x = cx + bw / 2 + 0.25
        y = 0.28  # top of what is drawn so far
        start = y
        for kind, text, fc in order:
            if kind == "branch":  # the residual connection leaves here
                start = y + 0.1
                ax.plot([cx], [start], "o", ms=3, color=EDGE)
            elif kind == "box":
                arrow(ax, (cx, y), (cx, y + step))
                y += step + bh
                box(ax, cx, y - bh / 2, bw, bh, text, fc, size=10)
            elif kind == "add":
                arrow(ax, (cx, y), (cx, y + step))
                y += step + 0.12
                add(cx, y)
                ax.plot([cx, res_x, res_x], [start, start, y], color=EDGE, lw=1.1)
                arrow(ax, (res_x, y), (cx + 0.12, y))
                y += 0.12
        arrow(ax, (cx, y), (cx, y + 0.2))
        label(ax, cx, y + 0.33, tr("output: (B, T, d)"), size=10)

    post = [
        ("branch", "", None),
        ("box", tr("multi-head attention"), QUERY),
        ("add", "", None),
        ("box", tr("LayerNorm LN1"), "#f2e6a6"),
        ("branch", "", None),
        ("box", "FFN", VALUE),
        ("add", "", None),
        ("box", tr("LayerNorm LN2"), "#f2e6a6"),
    ]
    pre = [
        ("branch", "", None),
        ("box", tr("LayerNorm LN1"), "#f2e6a6"),
        ("box", tr("multi-head attention"), QUERY),
        ("add", "", None),
        ("branch", "", None),
        ("box", tr("LayerNorm LN2"), "#f2e6a6"),
        ("box", "FFN", VALUE),
        ("add", "", None),
    ]
    column(1.15, tr("post-norm"), post)
    column(3.75, tr("pre-norm"), pre)
    return fig


@diagram(
    "encoder_decoder",
    "The transformer encoder–decoder, with cross-attention",
    """Left, the encoder: source tokens, embedded and with the positional encoding added, pass
    through N encoder blocks, each multi-head self-attention and a feed-forward network; its
    output, one vector per source position, is the memory. Right, the decoder: target tokens
    shifted right, embedded and position-encoded, pass through N decoder blocks, each causal
    (masked) self-attention, then cross-attention whose queries come from the decoder and
    whose keys and values are the encoder's memory, then a feed-forward network; a linear
    layer and a softmax give the next token's probabilities. Every sublayer has a residual
    connection and a layer normalisation.""",
)
def encoder_decoder():
    fig, ax = canvas(5.6, 4.0)
    bw, bh = 1.75, 0.34
    ex, dx = 1.3, 4.0

    def stack(cx, y0, items):
        ys = []
        y = y0
        for text, fc in items:
            box(ax, cx, y, bw, bh, text, fc, size=10)
            ys.append(y)
            y += bh + 0.24
        for a, b in zip(ys, ys[1:]):
            arrow(ax, (cx, a + bh / 2), (cx, b - bh / 2))
        return ys

    label(ax, ex, 3.85, tr("encoder"), size=12, fontweight="bold")
    label(ax, dx, 3.85, tr("decoder"), size=12, fontweight="bold")
    label(ax, ex, 0.15, tr("source tokens"), size=10)
    label(ax, dx, 0.15, tr("target tokens, shifted right"), size=10)
    y0 = 0.68
    ey = stack(
        ex, y0, [(tr("embedding + PE"), "#f4f4f4"), (tr("self-attention"), QUERY), ("FFN", VALUE)]
    )
    dy = stack(
        dx,
        y0,
        [
            (tr("embedding + PE"), "#f4f4f4"),
            (tr("causal self-attention"), QUERY),
            (tr("cross-attention"), KEY),
            ("FFN", VALUE),
            (tr("linear + softmax"), OUT),
        ],
    )
    arrow(ax, (ex, 0.3), (ex, y0 - bh / 2))
    arrow(ax, (dx, 0.3), (dx, y0 - bh / 2))
    # "N ×" frames around the repeated blocks, labelled on the outer side
    for cx, lo, hi, side in ((ex, ey[1], ey[2], -1), (dx, dy[1], dy[3], 1)):
        ax.add_patch(
            FancyBboxPatch(
                (cx - bw / 2 - 0.1, lo - bh / 2 - 0.1),
                bw + 0.2,
                hi - lo + bh + 0.2,
                boxstyle="round,pad=0,rounding_size=0.08",
                fc="none",
                ec="#888888",
                lw=1.0,
                ls="--",
            )
        )
        label(ax, cx + side * (bw / 2 + 0.17), (lo + hi) / 2, "N×", size=10, ha="center")
    # the encoder's output, the memory, is the keys and values of every cross-attention
    my = ey[2] + bh / 2 + 0.5
    box(ax, ex, my, 1.1, 0.32, tr("memory"), "#f4f4f4", size=10)
    arrow(ax, (ex, ey[2] + bh / 2), (ex, my - 0.16))
    mid = (ex + bw / 2 + dx - bw / 2) / 2
    ax.plot([ex + 0.55, mid, mid], [my, my, dy[2]], color=EDGE, lw=1.1)
    arrow(ax, (mid, dy[2]), (dx - bw / 2 - 0.1, dy[2]))
    label(ax, mid + 0.08, my + 0.22, tr("keys, values"), size=9)
    label(ax, dx + 0.1, (dy[1] + dy[2]) / 2, tr("queries"), size=9, ha="left")
    arrow(ax, (dx, dy[4] + bh / 2), (dx, dy[4] + bh / 2 + 0.18))
    label(ax, dx, dy[4] + bh / 2 + 0.32, tr("next-token probabilities"), size=10)
    label(
        ax,
        ex,
        my + 0.62,
        tr("every sublayer: residual\nconnection + LayerNorm"),
        size=9,
        color="#333333",
    )
    return fig


@diagram(
    "efficient_attention",
    "Tiling and the online softmax",
    """Left: the m by n matrix of scores is never stored. It is cut into tiles; one block of
    queries is processed against the key blocks K1, K2, K3, K4 in turn, and only the current
    tile of scores is held in fast memory. Right: for each query the kernel keeps a running
    maximum μ, a running sum ℓ and an unnormalised output o. After each key block it updates
    μ to the larger of μ and the block's maximum, rescales ℓ and o by exp(μ − μ′) and adds the
    block's terms; after the last block the output is o divided by ℓ. The extra memory is a
    few numbers per query instead of an m by n matrix.""",
)
def efficient_attention():
    fig, ax = canvas(5.8, 3.9)
    c = 0.2
    x0, y0 = 0.75, 3.35
    rows, cols = 8, 12
    label(ax, x0 + cols * c / 2, 3.62, tr("scores, m × n: never stored whole"), size=10)

    def fc(i, j):
        if 2 <= i < 4:
            if j < 6:
                return "#e7a3a3"  # done
            if j < 9:
                return "#d9534f"  # in fast memory now
            return "#f7dede"
        return "#f4f4f4"

    grid(ax, x0, y0, rows, cols, c, fc=fc, lw=0.5)
    for k in range(1, 4):
        ax.plot([x0 + 3 * k * c] * 2, [y0, y0 - rows * c], color=EDGE, lw=1.2)
    for k in range(1, 4):
        ax.plot([x0, x0 + cols * c], [y0 - 2 * k * c] * 2, color=EDGE, lw=1.2)
    for k in range(4):
        label(ax, x0 + (3 * k + 1.5) * c, y0 - rows * c - 0.15, f"K{k + 1}".translate(SUB), size=10)
    label(ax, x0 - 0.1, y0 - 3 * c, tr("query\nblock"), size=9, ha="right")
    arrow(ax, (x0, y0 - rows * c - 0.45), (x0 + cols * c, y0 - rows * c - 0.45))
    label(ax, x0 + cols * c / 2, y0 - rows * c - 0.65, tr("key blocks, one after another"), size=9)
    label(ax, x0 + 7.5 * c, y0 - 3 * c, tr("now"), size=8, color="white", fontweight="bold")
    # the running state
    rx = 3.55
    label(ax, rx + 1.0, 3.62, tr("per query: μ, ℓ, o"), size=10, fontweight="bold")
    steps = [
        ("μ′ = max(μ, max s)", "#f4f4f4"),
        ("ℓ′ = e^(μ−μ′) ℓ + Σ e^(s−μ′)", "#f4f4f4"),
        ("o′ = e^(μ−μ′) o + Σ e^(s−μ′) v", "#f4f4f4"),
    ]
    y = 3.15
    for text, colour in steps:
        box(ax, rx + 1.0, y, 2.3, 0.34, text, colour, size=9)
        y -= 0.5
    label(
        ax,
        rx + 1.0,
        y + 0.12,
        tr("after each key block (s: its scores)"),
        size=8.5,
        color="#333333",
    )
    arrow(ax, (rx + 1.0, y - 0.05), (rx + 1.0, y - 0.4))
    box(ax, rx + 1.0, y - 0.6, 2.3, 0.36, tr("after the last: output o / ℓ"), OUT, size=9.5)
    label(ax, rx + 1.0, y - 1.15, tr("extra memory: a few numbers\nper query, not m × n"), size=9)
    return fig


@diagram(
    "kv_cache",
    "One decoding step without and with a KV cache",
    """Two panels show step 5 of writing text, when the model has read the tokens x0 to x4 and
    must score the next one, in one attention layer. Left, without a cache: the step computes
    the queries, keys and values of all 5 positions and the whole causal triangle of 15 scores,
    although only the last row is needed. Right, with a cache: the keys and values of x0 to x3
    are kept from earlier steps; the step computes the query, key and value of x4 alone, and one
    row of 5 scores.""",
)
def kv_cache():
    fig, ax = canvas(5.8, 3.9)
    c = 0.27
    cached = {KEY: "#fdf1e2", VALUE: "#eef8ec"}  # the pale colours of what the cache keeps

    def panel(x0, with_cache):
        gx = x0 + 0.45  # the left edge of the keys' columns
        top = 3.3
        title = tr("with a cache") if with_cache else tr("without a cache")
        label(ax, gx + 2.5 * c, 3.7, title, size=11, fontweight="bold")
        # the scores: the causal triangle, or only its last row
        for i in range(5):
            for j in range(5):
                if with_cache and i < 4:
                    continue
                colour = WEIGHT if j <= i else "#f4f4f4"
                ax.add_patch(
                    Rectangle((gx + j * c, top - (i + 1) * c), c, c, fc=colour, ec=EDGE, lw=0.7)
                )
        # the queries: a column, or one cell
        for i in range(5):
            if not with_cache or i == 4:
                ax.add_patch(Rectangle((x0, top - (i + 1) * c), c, c, fc=QUERY, ec=EDGE, lw=0.7))
        label(ax, x0 + c / 2, top + 0.14, "Q", size=10)
        label(ax, gx + 5 * c + 0.08, top - 4.5 * c, tr("scores"), size=9.5, ha="left")
        # keys and values: all computed again, or four kept and one new
        ys = []
        for row, (name, colour) in enumerate([("K", KEY), ("V", VALUE)]):
            y = top - 5 * c - 0.22 - row * (c + 0.08)
            ys.append(y)
            for j in range(5):
                fc = cached[colour] if with_cache and j < 4 else colour
                ax.add_patch(Rectangle((gx + j * c, y - c), c, c, fc=fc, ec=EDGE, lw=0.7))
            label(ax, gx - 0.12, y - c / 2, name, size=10, ha="right")
        side = tr("← new") if with_cache else tr("computed\nagain")
        label(ax, gx + 5 * c + 0.08, (ys[0] + ys[1] - c) / 2, side, size=9.5, ha="left")
        bottom = ys[1] - c
        if with_cache:
            ax.add_patch(
                FancyBboxPatch(
                    (gx - 0.04, bottom - 0.05),
                    4 * c + 0.08,
                    ys[0] - bottom + 0.1,
                    boxstyle="round,pad=0,rounding_size=0.04",
                    fc="none",
                    ec="#888888",
                    lw=1.0,
                    ls="--",
                )
            )
            label(ax, gx + 2 * c, bottom - 0.22, tr("the cache"), size=9.5, color="#555555")
        # the tokens read so far
        for j in range(5):
            faded = with_cache and j < 4
            colour = "#aaaaaa" if faded else "#222222"
            label(ax, gx + (j + 0.5) * c, 0.5, f"x{j}".translate(SUB), size=10, color=colour)
        if with_cache:
            computed = tr("computed: 1 position, 5 scores")
        else:
            computed = tr("computed: 5 positions, 15 scores")
        label(ax, gx + 2.5 * c, 0.15, computed, size=9.5)

    panel(0.3, with_cache=False)
    panel(3.15, with_cache=True)
    ax.plot([2.95, 2.95], [0.05, 3.8], color="#bbbbbb", lw=0.8, ls="--")
    return fig


@diagram(
    "modern_attention",
    "Multi-head, grouped-query and multi-query attention: who reads which keys and values",
    """Three panels side by side, each with eight query heads numbered 0 to 7 in a row at the
    top and the key and value heads they read in a row below, joined by lines. Multi-head
    attention: eight key–value heads, each query head joined to its own. Grouped-query
    attention with g = 2: two key–value heads; query heads 0 to 3 are joined to head 0 and
    query heads 4 to 7 to head 1, so head i uses group i // 4. Multi-query attention: one
    key–value head, joined to all eight query heads. Under each panel, the numbers a layer
    stores per token in its KV cache: 2 · 8 · d/h, 2 · 2 · d/h and 2 · 1 · d/h.""",
)
def modern_attention():
    fig, ax = canvas(6.3, 2.75)
    h, cell, gap = 8, 0.22, 0.02
    panels = [(tr("multi-head"), 8), (tr("grouped-query"), 2), (tr("multi-query"), 1)]
    top, bottom = 2.05, 0.95  # the centres of the query row and the key-value row
    for k, (name, g) in enumerate(panels):
        left = 0.15 + k * 2.1
        width = h * cell + (h - 1) * gap
        centre = left + width / 2
        label(ax, centre, 2.58, name, size=11, fontweight="bold")
        label(ax, centre, 2.36, tr("h = 8 query heads, g = {g}").format(g=g), size=9.5)
        xs = [left + cell / 2 + i * (cell + gap) for i in range(h)]
        for i, x in enumerate(xs):
            box(ax, x, top, cell, cell, str(i), QUERY, size=9.5, round_=0.03)
        # key-value heads: g boxes spread under their groups of h/g query heads
        group = h // g
        kv = []
        for j in range(g):
            first, last = xs[j * group], xs[(j + 1) * group - 1]
            w = last - first + cell
            x = (first + last) / 2
            kv.append(x)
            box(
                ax,
                x,
                bottom,
                w,
                cell,
                f"K,V {j}" if w > 0.5 else str(j),
                KEY,
                size=9.5,
                round_=0.03,
            )
        for i, x in enumerate(xs):
            j = i // group
            ax.plot(
                [x, x if g == h else kv[j]], [top - cell / 2, bottom + cell / 2], color=EDGE, lw=0.8
            )
        # one message, drawn as two lines one under the other
        lines = tr("KV cache per token\nand layer: 2 · {g} · d/h").format(g=g).split("\n")
        for y, line in zip((0.55, 0.3), lines, strict=True):
            label(ax, centre, y, line, size=9.5)
    return fig


@diagram(
    "vision_attention",
    "From an image to a class token's attention map",
    """Top left: an image cut into a grid of 3 by 3 patches, numbered 0 to 8 row by row, with a
    red shape in patch 3, a blue shape in patch 2 and a green one in patch 7. Each patch is
    flattened into its C·p·p pixel values and mapped by one linear layer W_E to a token; the
    position of patch n, row n // 3 and column n % 3, is added to it. A class token, cls, is
    put in front of the nine patch tokens. All ten go through self-attention, whose queries,
    keys and values are projections of the tokens. The class token's row of attention weights
    holds one weight per patch; drawn back on the 3 by 3 grid (bottom left) it is an attention
    map, dark on the patches of the red and the blue shape and light elsewhere. The class
    token's output goes to the classifier.""",
)
def vision_attention():
    fig, ax = canvas(6.0, 3.9)
    c = 0.42  # one patch

    def image_grid(x, y, shade=None):
        """The 3 × 3 patches, top-left corner (x, y); shade: patch -> colour of an attention map."""
        for n in range(9):
            r, col = divmod(n, 3)
            fc = shade(n) if shade else "#262626"
            ax.add_patch(
                Rectangle((x + col * c, y - (r + 1) * c), c, c, fc=fc, ec="#888888", lw=0.8)
            )
        return x + 1.5 * c, y - 1.5 * c  # the centre

    # the image, its shapes and the numbers of its patches
    x0, y0 = 0.35, 3.35
    label(ax, x0 + 1.5 * c, 3.62, tr("image: 3 × 3 patches"), size=10)
    image_grid(x0, y0)
    shapes = {3: "#f22626", 2: "#3366ff", 7: "#40bf40"}
    for n, colour in shapes.items():
        r, col = divmod(n, 3)
        ax.add_patch(
            Rectangle(
                (x0 + col * c + 0.19, y0 - (r + 1) * c + 0.05), 0.18, 0.18, fc=colour, ec="none"
            )
        )
    for n in range(9):
        r, col = divmod(n, 3)
        label(
            ax,
            x0 + col * c + 0.07,
            y0 - r * c - 0.08,
            str(n),
            size=9.5,
            color="white",
            ha="left",
            va="top",
        )
    # flatten and embed
    arrow(ax, (1.75, 2.72), (2.2, 2.72))
    label(ax, 1.97, 3.28, tr("flatten,\n× W_E"), size=9.5)
    # the tokens: cls, then patches 0 to 8
    tx, ty, tw = 2.3, 2.72, 0.33
    box(ax, tx + 0.25, ty, 0.46, 0.36, "cls", OUT, size=10)
    for n in range(9):
        fc = shapes.get(n, QUERY)
        box(ax, tx + 0.56 + (n + 0.5) * tw, ty, tw - 0.04, 0.36, str(n), QUERY, size=10)
        if n in shapes:
            ax.add_patch(
                Rectangle((tx + 0.56 + n * tw + 0.04, ty - 0.17), tw - 0.12, 0.05, fc=fc, ec="none")
            )
    right = tx + 0.56 + 9 * tw
    label(ax, (tx + right) / 2, 3.28, tr("tokens, in the order of the patches"), size=10)
    label(
        ax,
        (tx + right) / 2,
        2.3,
        tr("+ the position of patch n: row n // 3, column n % 3"),
        size=9.5,
    )
    # self-attention
    arrow(ax, ((tx + right) / 2, 2.12), ((tx + right) / 2, 1.86))
    box(
        ax,
        (tx + right) / 2,
        1.62,
        right - tx,
        0.44,
        tr("self-attention: queries, keys, values\nare projections of the tokens"),
        OP,
        size=9.5,
    )
    # the class token's weights, back on the grid
    weight = {3: "#b2182b", 2: "#d6604d", 7: "#fbe3d6"}
    mx, my = 0.35, 1.45
    image_grid(mx, my, shade=lambda n: weight.get(n, "#fdf2ec"))
    label(ax, mx + 1.5 * c, 0.1, tr("attention map"), size=10)
    arrow(ax, (tx + 0.2, 1.38), (1.75, 0.95))
    label(
        ax,
        2.5,
        0.82,
        tr("the class token's weights:\none per patch, summing to 1,\ndrawn on the grid"),
        size=9.5,
        ha="left",
    )
    # the classifier
    arrow(ax, (right - 0.55, 1.38), (right - 0.55, 1.0))
    box(ax, right - 0.55, 0.75, 1.1, 0.44, tr("cls output\n→ classifier"), OUT, size=9.5)
    return fig


@diagram(
    "decoder_masks",
    "The encoder–decoder transformer: the decoder's two attentions and their masks",
    """Left, the encoder: the source tokens, shape (B, S), go through the encoder blocks once,
    and give the memory H, shape (B, S, d), one vector per source token. Right, one decoder
    block: its input is the target shifted right, starting with bos, shape (B, T). Its causal
    self-attention has weights of shape (T, T) that are lower triangular, so position t sees
    the positions up to t only. Its cross-attention takes its queries from the decoder and its
    keys and values from the memory H; its weights have shape (T, S), and the columns of the
    padded source tokens are masked. An FFN follows, and a linear layer gives the logits, shape
    (B, T, V). During greedy decoding the memory is computed once and reused at every step.""",
)
def decoder_masks():
    fig, ax = canvas(6.0, 4.4)
    bw, bh = 1.75, 0.36
    ex, ew, dx = 0.8, 1.3, 3.1  # the encoder column's centre and width, the decoder's centre
    T, S, valid = 4, 5, 3  # target positions, source tokens, valid source tokens
    c = 0.15  # grid cell
    label(ax, ex, 4.2, tr("encoder"), size=11, fontweight="bold")
    label(ax, dx, 4.2, tr("decoder block"), size=11, fontweight="bold")
    # the encoder: runs once, gives the memory
    box(ax, ex, 0.45, ew, 0.42, tr("source tokens\n(B, S)"), "#f4f4f4", size=10)
    arrow(ax, (ex, 0.66), (ex, 1.07))
    box(ax, ex, 1.25, ew, bh, tr("encoder blocks"), OP, size=10)
    arrow(ax, (ex, 1.43), (ex, 2.12))
    label(ax, ex + 0.1, 1.78, tr("runs once"), size=9, ha="left", color="#333333")
    box(ax, ex, 2.35, ew, 0.46, tr("memory H\n(B, S, d)"), KEY, size=10)
    # the decoder block
    box(ax, dx, 0.45, bw, 0.42, tr("target, shifted right\n(B, T)"), "#f4f4f4", size=10)
    ys = [1.25, 2.35, 3.2]
    items = [(tr("causal self-attention"), QUERY), (tr("cross-attention"), KEY), ("FFN", VALUE)]
    arrow(ax, (dx, 0.66), (dx, ys[0] - bh / 2))
    for (text, fc), y in zip(items, ys, strict=True):
        box(ax, dx, y, bw, bh, text, fc, size=10)
    for a, b in zip(ys, ys[1:]):
        arrow(ax, (dx, a + bh / 2), (dx, b - bh / 2))
    label(ax, dx + 0.1, (ys[0] + ys[1]) / 2, tr("queries"), size=9, ha="left")
    arrow(ax, (dx, ys[2] + bh / 2), (dx, 3.72))
    label(ax, dx, 3.9, "logits (B, T, V)", size=10)
    # the memory is the keys and values of the cross-attention
    left, right = ex + ew / 2, dx - bw / 2
    arrow(ax, (left, ys[1]), (right, ys[1]))
    label(ax, (left + right) / 2, ys[1] + 0.3, tr("keys and\nvalues"), size=9)
    # the two weight matrices, with their masks
    gx = 4.6
    for y, cols, fc, text in [
        (ys[0], T, lambda i, j: WEIGHT if j <= i else "#eeeeee", tr("(T, T): causal")),
        (ys[1], S, lambda i, j: WEIGHT if j < valid else "#eeeeee", tr("(T, S): source padding")),
    ]:
        grid(ax, gx, y + T * c / 2, T, cols, c, fc=fc, lw=0.6)
        label(ax, gx + cols * c / 2, y + T * c / 2 + 0.17, text, size=9.5)
        ax.plot([dx + bw / 2, gx - 0.08], [y, y], color="#999999", lw=0.9, ls=":")
    return fig


# ---------------------------------------------------------------- writing


def svg_path(name: str, lang: str = "en", here: Path | None = None) -> Path:
    """``book/figures/<name>.svg``, or ``book/figures/<locale>/<name>.svg`` in another language."""
    return (here or HERE) / LANGUAGES[lang] / f"{name}.svg"


def render(d: Diagram, lang: str = "en") -> bytes:
    with matplotlib.rc_context(RC), drawing(lang):
        fig = d.draw()
        title, alt = _translated(d.title, lang), translated_alt(d, lang)
        metadata = {"Date": None, "Title": title, "Description": alt}
        if lang != "en":
            metadata["Language"] = LANGUAGES[lang].replace("_", "-")
        buffer = io.BytesIO()
        fig.savefig(buffer, format="svg", metadata=metadata)
    return buffer.getvalue()


def texts_outside(fig) -> list[str]:
    """Every text of ``fig`` that reaches past the figure's edges, the SVG's viewBox.

    Each text is measured as the SVG writer lays it out (text as paths, 72 points per inch),
    not as the PNG writer would: their widths differ by a few points on a long line.
    """
    from matplotlib.backends.backend_svg import RendererSVG
    from matplotlib.text import Text

    dpi = fig.dpi
    fig.set_dpi(72)  # savefig(format="svg") draws at 72 dpi: one unit is one point
    try:
        width, height = fig.get_figwidth() * 72, fig.get_figheight() * 72
        renderer = RendererSVG(width, height, io.StringIO(), image_dpi=72)
        outside = []
        for text in fig.findobj(Text):
            if not text.get_visible() or not text.get_text():
                continue
            box = text.get_window_extent(renderer)
            if box.x0 < 0 or box.y0 < 0 or box.x1 > width or box.y1 > height:
                outside.append(
                    f"{text.get_text()!r} spans x {box.x0:.1f}..{box.x1:.1f} and "
                    f"y {box.y0:.1f}..{box.y1:.1f} pt in a {width:.1f} x {height:.1f} pt figure"
                )
        return outside
    finally:
        fig.set_dpi(dpi)


def missing_glyphs(fig) -> list[str]:
    """Every text of ``fig`` with a character none of its fonts has (drawn as an empty box)."""
    from matplotlib.font_manager import fontManager
    from matplotlib.text import Text

    missing = []
    for text in fig.findobj(Text):
        prop = text.get_fontproperties()
        fonts = [get_font(f) for f in fontManager._find_fonts_by_props(prop)]
        lost = sorted(
            {c for c in text.get_text() if not c.isspace()}
            - {c for c in text.get_text() for f in fonts if f.get_char_index(ord(c))}
        )
        if lost:
            missing.append(f"{text.get_text()!r} has characters no font draws: {''.join(lost)}")
    return missing


def check(d: Diagram, lang: str = "en") -> list[str]:
    """What is wrong with the drawing of ``d``: texts that leave the figure, characters that
    no font draws."""
    with matplotlib.rc_context(RC), drawing(lang):
        fig = d.draw()
        return texts_outside(fig) + missing_glyphs(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    parser.add_argument("--png", metavar="DIR", help="also write PNG previews into DIR")
    parser.add_argument(
        "--lang", choices=list(LANGUAGES), action="append", help="only these languages"
    )
    parser.add_argument("names", nargs="*", help="only these diagrams")
    args = parser.parse_args(argv)
    stale, broken = [], []
    for lang in args.lang or list(LANGUAGES):
        for name, d in DIAGRAMS.items():
            if args.names and name not in args.names:
                continue
            path = svg_path(name, lang)
            shown = path.relative_to(HERE).as_posix()
            try:
                problems = check(d, lang)
            except FontMissing as error:
                print(f"error: {error}")
                return 1
            if problems:
                broken.append(f"{shown}: " + "; ".join(problems))
                continue
            data = render(d, lang)
            if args.check:
                if not path.exists() or path.read_bytes() != data:
                    stale.append(shown)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
            if args.png:
                with matplotlib.rc_context(RC), drawing(lang):
                    fig = d.draw()
                    png = Path(args.png) / LANGUAGES[lang] / f"{name}.png"
                    png.parent.mkdir(parents=True, exist_ok=True)
                    fig.savefig(png, dpi=100)
    if broken:
        print("text outside the figure or without a font (not written):", *broken, sep="\n  ")
    if stale:
        print("stale diagrams (run python book/figures/make_diagrams.py):", ", ".join(stale))
        if any("/" in path for path in stale):  # a translated one: its font may have changed
            print(f"(the translated ones are drawn with {cjk_font_version()} here)")
    return 1 if broken or stale else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))  # autograder.i18n reads the catalogs
    sys.exit(main())
