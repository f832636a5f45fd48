"""The concept diagrams: generated, reproducible, translated, and shown with alt text.

``book/figures/make_diagrams.py`` draws every SVG in ``book/figures/``, in English, and in
Chinese in ``book/figures/zh_CN/`` (labels from the catalog ``figures``). These tests regenerate
them and compare bytes with the committed files (a drift check, like the one of ``solutions/``),
check every language's drawing (numbers, text inside the figure, a font for every character),
and check how the chapters show them: a MyST figure with a label and real alt text.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys

import pytest

from autograder import notebooks as nbs
from tests._sweep import first_only, one_per

FIGURES = nbs.ROOT / "book" / "figures"
LANGS = ["en", "zh"]
FIGURE_DIRECTIVE = re.compile(r"```\{figure\}\s+(?P<path>\S+)\n(?P<options>(?::[^\n]*\n)*)")


def _load_generator():
    spec = importlib.util.spec_from_file_location("make_diagrams", FIGURES / "make_diagrams.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gen():
    return _load_generator()


def _figures_in_chapters() -> list[tuple[str, str, dict[str, str]]]:
    """(notebook, figure path, {option: value}) for every MyST figure in a markdown cell."""
    found = []
    for path in nbs.chapter_notebooks():
        for cell in nbs.read(path).cells:
            if cell.cell_type != "markdown":
                continue
            for match in FIGURE_DIRECTIVE.finditer(cell.source + "\n"):
                options = dict(
                    re.match(r":(\w+):\s*(.*)", line).groups()
                    for line in match["options"].splitlines()
                )
                found.append((path.name, match["path"], options))
    return found


@pytest.mark.parametrize("lang", one_per(LANGS, first_only, ids=str))
def test_committed_diagrams_equal_a_fresh_generation(gen, lang):
    """Does every SVG in book/figures/ (English) and book/figures/zh_CN/ (Chinese) equal, byte
    for byte, what make_diagrams.py draws now?"""
    assert set(gen.LANGUAGES) == set(LANGS)
    folder = FIGURES / gen.LANGUAGES[lang]
    committed = sorted(p.stem for p in folder.glob("*.svg"))
    assert committed == sorted(gen.DIAGRAMS), "an SVG without its generator, or one not generated"
    stale = [
        name
        for name, d in gen.DIAGRAMS.items()
        if gen.svg_path(name, lang).read_bytes() != gen.render(d, lang)
    ]
    font = "" if lang == "en" else f" (drawn here with {gen.cjk_font_version()})"
    assert not stale, f"stale diagrams {stale} ({lang}{font}): run book/figures/make_diagrams.py"


def test_generation_is_deterministic_and_font_free(gen):
    """Do two renderings agree, with no date, no <text> needing a font, and the alt as <desc>?"""
    d = gen.DIAGRAMS["masking"]
    first, second = gen.render(d), gen.render(d)
    assert first == second
    svg = first.decode()
    assert "<text" not in svg and "dc:date" not in svg
    assert f"<dc:description>{d.alt}</dc:description>" in svg


def test_chinese_diagrams_carry_the_chinese_alt_and_draw_chinese_with_a_cjk_font(gen):
    """Is the Chinese SVG's <desc> the alt text's translation from the chapter's catalog (not a
    second copy of it), its language zh-CN, its text paths (no <text>), with Chinese glyphs from
    Noto Sans CJK SC and Latin ones from DejaVu Sans, as in English?"""
    from autograder.i18n import pages

    d = gen.DIAGRAMS["masking"]
    svg = gen.render(d, "zh").decode()
    alt = pages.lookup_for("zh", "book/masking")(d.alt)
    assert alt and re.search(r"[\u4e00-\u9fff]", alt)
    assert f"<dc:description>{alt}</dc:description>" in svg
    assert "<dc:language>zh-CN</dc:language>" in svg and "<text" not in svg
    assert "NotoSansCJKsc-Regular" in svg and "DejaVuSans-" in svg
    english = gen.render(d).decode()
    assert "NotoSansCJK" not in english and "<dc:language>" not in english


def test_a_missing_cjk_font_is_a_clear_error(gen, monkeypatch, tmp_path, capsys):
    """Without Noto Sans CJK, does drawing Chinese stop with an error that says which package
    to install, and write nothing, while English still draws?"""
    monkeypatch.setattr(
        gen, "CJK_FONT_FILES", {w: tmp_path / "none.ttc" for w in ("normal", "bold")}
    )
    gen._cjk_font.cache_clear()
    try:
        with pytest.raises(gen.FontMissing, match="fonts-noto-cjk"):
            gen.render(gen.DIAGRAMS["masking"], "zh")
        monkeypatch.setattr(gen, "HERE", tmp_path)
        assert gen.main(["--lang", "zh", "masking"]) == 1
        assert "install Debian's fonts-noto-cjk" in capsys.readouterr().out
        assert not list(tmp_path.rglob("*.svg"))
        assert gen.render(gen.DIAGRAMS["masking"], "en")
    finally:
        gen._cjk_font.cache_clear()


@pytest.mark.filterwarnings("ignore:Glyph 57344")  # matplotlib's own warning of the same
def test_a_character_no_font_draws_is_caught(gen):
    """Is a label with a character that neither DejaVu Sans nor Noto Sans CJK has (it would
    show as an empty box) a problem that `make_diagrams.py` refuses to write?"""
    import matplotlib

    def tofu():
        fig, ax = gen.canvas(2.0, 1.0)
        gen.label(ax, 1.0, 0.5, "键 \ue000")
        return fig

    for lang, lost in [("zh", "\ue000"), ("en", "键\ue000")]:  # English has no CJK font
        with matplotlib.rc_context(gen.RC), gen.drawing(lang):
            assert gen.missing_glyphs(tofu())[0].endswith(f"no font draws: {lost}")
    assert gen.check(gen.Diagram("tofu", "t", "a", tofu), "zh")


def test_drift_is_detected(gen, tmp_path, monkeypatch, capsys):
    """If a committed SVG, English or Chinese, is edited by hand, does `make_diagrams.py
    --check` fail and name it (and the font the Chinese ones are drawn with)?"""
    shutil.copytree(FIGURES, tmp_path, dirs_exist_ok=True)
    for path in (tmp_path / "masking.svg", tmp_path / "zh_CN" / "bilinear_attention.svg"):
        data = path.read_bytes()
        path.write_bytes(data.replace(b"#b7dfb0", b"#00ff00").replace(b"#f2e6a6", b"#0f0"))
    monkeypatch.setattr(gen, "HERE", tmp_path)
    assert gen.main(["--check", "masking", "bilinear_attention"]) == 1
    stale, font = capsys.readouterr().out.splitlines()
    assert stale.endswith(": masking.svg, zh_CN/bilinear_attention.svg"), stale
    assert "Noto Sans CJK SC Version" in font
    assert gen.main(["--check", "--lang", "zh", "masking"]) == 0


def test_every_diagram_is_shown_with_a_label_and_alt_text(gen):
    """Is every diagram in a chapter, as a figure with a unique :name: and real :alt: text,
    and does every figure a chapter shows exist?"""
    figures = _figures_in_chapters()
    shown = {}
    for notebook, path, options in figures:
        assert (nbs.ROOT / "book" / path).is_file(), f"{notebook}: {path} does not exist"
        alt = options.get("alt", "").strip()
        assert len(alt.split()) >= 8 and not alt.endswith(".svg"), f"{notebook}: {path} alt {alt!r}"
        assert options.get("name", "").startswith("fig-"), f"{notebook}: {path} has no :name:"
        shown.setdefault(path.removeprefix("figures/").removesuffix(".svg"), []).append(notebook)
    names = [options["name"] for _, _, options in figures]
    assert len(names) == len(set(names)), "figure labels must be unique"
    missing = sorted(set(gen.DIAGRAMS) - set(shown))
    assert not missing, f"diagrams no chapter shows: {missing}"
    for name, d in gen.DIAGRAMS.items():
        assert len(d.alt.split()) >= 20, f"{name}: the alt text should describe the diagram"


# ---------------------------------------------------------------- diagrams are data


def test_every_drawn_distribution_sums_to_one(gen):
    """Does every probability distribution a diagram draws sum to 1, as the reader sees it
    (the printed or shaded numbers, not the unrounded ones), with no negative weight?"""
    from decimal import Decimal

    assert set(gen.DISTRIBUTIONS) <= set(gen.DIAGRAMS), "a distribution of no diagram"
    assert gen.DISTRIBUTIONS, "no distribution declared: the test would be vacuous"
    for name, rows in gen.DISTRIBUTIONS.items():
        for row in rows:
            numbers = [Decimal(x) for x in row]
            assert min(numbers) >= 0, f"{name}: a negative weight in {row}"
            assert sum(numbers) == 1, f"{name}: {' + '.join(row)} = {sum(numbers)}, not 1"


@pytest.mark.parametrize("lang", LANGS)
def test_diagrams_draw_their_declared_numbers(gen, monkeypatch, lang):
    """Does each diagram, in each language, take its weights from the declared data (change
    the data, and the drawing changes), so that the sum checked above is the sum drawn?"""
    for name, constant, other in [
        ("attention_pooling", "POOLING_WEIGHTS", ("0.25", "0.25", "0.25", "0.25")),
        ("masking", "MASKING_WEIGHTS", ("0.50", "0.25", "0.25", "0", "0")),
        ("dot_product_attention", "SDPA_WEIGHTS", (("0.2",) * 5,) * 3),
    ]:
        before = gen.render(gen.DIAGRAMS[name], lang)
        monkeypatch.setattr(gen, constant, other)
        assert gen.render(gen.DIAGRAMS[name], lang) != before, f"{name} ignores {constant}"
        monkeypatch.undo()


@pytest.mark.parametrize(
    "scores", [(-1.0, 0.5, -0.2, -2.0), (0.0, 0.0, 0.0), (3.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)]
)
def test_rounded_distribution_sums_to_one(gen, scores):
    """Does the rounding of a softmax for display keep the shown sum at exactly 1, each shown
    weight within one unit of the last digit of the exact one?"""
    import math
    from decimal import Decimal

    shown = gen.rounded_distribution(scores)
    exact = [math.exp(s) / sum(math.exp(t) for t in scores) for s in scores]
    assert sum(Decimal(x) for x in shown) == 1, shown
    assert all(abs(float(x) - e) < 0.01 for x, e in zip(shown, exact, strict=True)), shown


# Words the Chinese diagrams keep: code identifiers, function names and abbreviations (and
# subscripted symbols such as W_q, matched below).
SYMBOL_WORDS = {
    "cls", "FFN", "logits", "max", "permute", "reshape", "softmax", "tanh", "transpose_output",
    "valid_len",
}  # fmt: skip


@pytest.mark.parametrize("lang", one_per(LANGS, first_only, ids=str))
def test_no_text_leaves_a_diagram_and_every_word_is_a_message(gen, lang):
    """Does every text of every diagram, in each language, measured as the SVG writer lays it
    out, stay inside the figure (the dot-product diagram once cut the last ")" of its shapes
    line), with a font for every character? Are the messages `make catalogs` reads out of
    make_diagrams.py exactly those the diagrams ask tr() for, and does no Chinese diagram keep
    an English word but symbols?"""
    import matplotlib
    from matplotlib.text import Text

    from autograder.catalogs import ui_messages

    problems, drawn = {}, set()
    for name, d in gen.DIAGRAMS.items():
        with matplotlib.rc_context(gen.RC), gen.drawing(lang) as now:
            fig = d.draw()  # as gen.check(d, lang) does
            found = gen.texts_outside(fig) + gen.missing_glyphs(fig)
            drawn |= now.messages | {d.title}
        words = {w for t in fig.findobj(Text) for w in re.findall(r"[A-Za-z_]{3,}", t.get_text())}
        english = {w for w in words - SYMBOL_WORDS if not re.fullmatch(r"[A-Za-z]{1,2}_\w", w)}
        if lang != "en" and english:
            found.append(f"English left in the {lang} diagram: {sorted(english)}")
        if found:
            problems[name] = found
    assert not problems, problems
    messages = {m.msgid for m in ui_messages.figure_messages()}
    assert messages == drawn, (sorted(messages - drawn), sorted(drawn - messages))


def test_text_past_the_edge_is_caught(gen):
    """Does the check see a text that reaches one point past the right edge, and does
    `make_diagrams.py` refuse to write such a diagram?"""
    import matplotlib

    def too_wide():
        fig, ax = gen.canvas(2.0, 1.0)
        gen.label(ax, 0.1, 0.5, "(B, m, n) × (B, n, v) → (B, m, v)", ha="left")
        return fig

    with matplotlib.rc_context(gen.RC):
        assert gen.texts_outside(too_wide())
        fig, ax = gen.canvas(2.0, 1.0)
        gen.label(ax, 1.0, 0.5, "(B, m)")
        assert not gen.texts_outside(fig)
    bad = gen.Diagram("too_wide", "t", "a", too_wide)
    assert gen.check(bad) and "spans x" in gen.check(bad)[0]


# ---------------------------------------------------------------- labels are messages


def test_a_label_make_catalogs_cannot_read_is_an_error(tmp_path):
    """Is a tr() whose argument is not a literal string an error naming its line?"""
    from autograder.catalogs import ui_messages

    path = tmp_path / ui_messages.DIAGRAMS
    path.parent.mkdir(parents=True)
    text = (FIGURES / "make_diagrams.py").read_text()
    path.write_text(text.replace('tr("runs once")', 'tr(f"runs {1}x")'))
    line = 1 + text[: text.index('tr("runs once")')].count("\n")
    with pytest.raises(ui_messages.FigureMessageError, match=f"make_diagrams.py:{line}: tr"):
        ui_messages.figure_messages(tmp_path)
