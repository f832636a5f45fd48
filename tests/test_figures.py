"""The concept diagrams: generated, reproducible, and shown with alt text.

``book/figures/make_diagrams.py`` draws every SVG in ``book/figures/``. These tests regenerate
them and compare bytes with the committed files (a drift check, like the one of ``solutions/``),
and check how the chapters show them: a MyST figure with a label and real alt text.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys

import pytest

from autograder import notebooks as nbs

FIGURES = nbs.ROOT / "book" / "figures"
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


def test_committed_diagrams_equal_a_fresh_generation(gen):
    """Does every SVG in book/figures/ equal, byte for byte, what make_diagrams.py draws now?"""
    committed = sorted(p.stem for p in FIGURES.glob("*.svg"))
    assert committed == sorted(gen.DIAGRAMS), "an SVG without its generator, or one not generated"
    stale = [
        name
        for name, d in gen.DIAGRAMS.items()
        if (FIGURES / f"{name}.svg").read_bytes() != gen.render(d)
    ]
    assert not stale, f"stale diagrams {stale}: run python book/figures/make_diagrams.py"


def test_generation_is_deterministic_and_font_free(gen):
    """Do two renderings agree, with no date, no <text> needing a font, and the alt as <desc>?"""
    d = gen.DIAGRAMS["masking"]
    first, second = gen.render(d), gen.render(d)
    assert first == second
    svg = first.decode()
    assert "<text" not in svg and "dc:date" not in svg
    assert f"<dc:description>{d.alt}</dc:description>" in svg


def test_drift_is_detected(gen, tmp_path, monkeypatch):
    """If a committed SVG is edited by hand, does `make_diagrams.py --check` fail and name it?"""
    for path in FIGURES.glob("*.svg"):
        shutil.copy(path, tmp_path / path.name)
    (tmp_path / "masking.svg").write_bytes(
        (tmp_path / "masking.svg").read_bytes().replace(b"#b7dfb0", b"#00ff00")
    )
    monkeypatch.setattr(gen, "HERE", tmp_path)
    assert gen.main(["--check", "masking", "bilinear_attention"]) == 1
    assert gen.main(["--check", "bilinear_attention"]) == 0


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


def test_diagrams_draw_their_declared_numbers(gen, monkeypatch):
    """Does each diagram take its weights from the declared data (change the data, and the
    drawing changes), so that the sum checked above is the sum drawn?"""
    for name, constant, other in [
        ("attention_pooling", "POOLING_WEIGHTS", ("0.25", "0.25", "0.25", "0.25")),
        ("masking", "MASKING_WEIGHTS", ("0.50", "0.25", "0.25", "0", "0")),
        ("dot_product_attention", "SDPA_WEIGHTS", (("0.2",) * 5,) * 3),
    ]:
        before = gen.render(gen.DIAGRAMS[name])
        monkeypatch.setattr(gen, constant, other)
        assert gen.render(gen.DIAGRAMS[name]) != before, f"{name} ignores {constant}"
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


def test_no_text_leaves_a_diagram(gen):
    """Does every text of every diagram, measured as the SVG writer lays it out, stay inside the
    figure (the dot-product diagram once cut the last ")" of its shapes line)?"""
    outside = {name: gen.check(d) for name, d in gen.DIAGRAMS.items()}
    assert not any(outside.values()), {name: o for name, o in outside.items() if o}


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
