"""The built book as readers meet it: in Chromium, offline, and without leaks in the student edition.

Run after both builds, as ``make book-test`` does::

    make book && make book EDITION=student && pytest -m book tests/test_book.py

The tests carry the ``book`` marker, which plain ``pytest`` deselects (see pyproject.toml), so
the unit suite never fails for want of a fresh build. Chromium is Debian's (``/usr/bin/chromium``),
driven by Playwright; ``playwright install`` is never needed.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest

from autograder import notebooks as nbs

pytestmark = [pytest.mark.book, pytest.mark.slow, pytest.mark.timeout(600)]

ROOT = nbs.ROOT
READER = ROOT / "_build" / "html"
STUDENT = ROOT / "_build" / "student" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots"
CHROMIUM = os.environ.get("CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}  # a current phone's width in CSS pixels
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PAGES = nbs.toc_files()
CHAPTERS = [f for f in PAGES if (ROOT / f"{f}.ipynb").exists()]
SCREENSHOT_PAGES = CHAPTERS[1:3] if len(CHAPTERS) >= 3 else CHAPTERS[:2]  # masking, additive


@pytest.fixture(scope="module", autouse=True)
def _only_when_asked(request):
    """Another marker expression (`-m slow`, `-m "not gpu"`) would select these tests too."""
    if "book" not in (request.config.option.markexpr or ""):
        pytest.skip("the book tests run with `-m book` (make book-test), after both builds")


def _require_build(html_dir: Path, command: str) -> Path:
    missing = [f for f in PAGES if not (html_dir / f"{f}.html").exists()]
    if not (html_dir / "index.html").exists() or missing:
        pytest.fail(f"{html_dir} is missing or stale ({missing[:3]}); run `{command}` first")
    return html_dir


@pytest.fixture(scope="module")
def reader() -> Path:
    return _require_build(READER, "make book")


@pytest.fixture(scope="module")
def student() -> Path:
    return _require_build(STUDENT, "make book EDITION=student")


# ---------------------------------------------------------------- static HTML checks


class _Collector(HTMLParser):
    """The ids, links and images of one HTML page, and its text outside <script>/<style>."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids, self.links, self.images, self.text, self._skip = set(), [], [], [], 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name"):
            if attrs.get(key):
                self.ids.add(attrs[key])
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
        if tag == "img":
            self.images.append(attrs)
        if tag in ("script", "style"):
            self._skip += 1

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._skip -= 1

    def handle_data(self, data):
        if not self._skip:
            self.text.append(data)


def _parse(path: Path) -> _Collector:
    collector = _Collector()
    collector.feed(path.read_text(encoding="utf-8"))
    return collector


def _missing_alt(img: dict) -> bool:
    alt = (img.get("alt") or "").strip()
    src = img.get("src") or ""
    # docutils writes the image's URI as alt when none was given: that is no alt text.
    return not alt or alt == src or bool(re.fullmatch(r"\S+\.(png|jpe?g|svg|gif|webp)", alt))


@pytest.mark.parametrize("edition", ["reader", "student"])
def test_every_image_has_alt_text(edition, request):
    """Has every <img> of every page a real description (not empty, not its file name)?"""
    html_dir = request.getfixturevalue(edition)
    bad = [
        f"{page}.html: {img.get('src')}"
        for page in PAGES
        for img in _parse(html_dir / f"{page}.html").images
        if _missing_alt(img)
    ]
    assert not bad, "images without alt text (add mystnb.image.alt to the cell):\n" + "\n".join(bad)


def test_internal_links_resolve(reader):
    """Does every local <a href> of every page point at an existing file, and anchor?"""
    parsed: dict[Path, _Collector] = {}

    def page(path: Path) -> _Collector:
        if path not in parsed:
            parsed[path] = _parse(path)
        return parsed[path]

    broken, checked = [], 0
    for name in PAGES:
        source = reader / f"{name}.html"
        for href in page(source).links:
            parts = urlsplit(href)
            if parts.scheme or parts.netloc or href.startswith(("mailto:", "javascript:")):
                continue
            target = (source.parent / unquote(parts.path)).resolve() if parts.path else source
            if target.is_dir():
                target = target / "index.html"
            checked += 1
            if not target.exists():
                broken.append(f"{name}: {href} (no file)")
            elif parts.fragment and target.suffix == ".html":
                if unquote(parts.fragment) not in page(target).ids:
                    broken.append(f"{name}: {href} (no anchor)")
    assert checked > 50, f"only {checked} internal links found"
    assert not broken, "broken internal links:\n" + "\n".join(broken)


@pytest.mark.parametrize("edition", ["reader", "student"])
def test_downloads_exist(edition, request):
    """Does every chapter offer its notebook as .ipynb and as MyST .md, and do both exist?"""
    from myst_nb.core.read import read_myst_markdown_notebook

    html_dir = request.getfixturevalue(edition)
    for name in CHAPTERS:
        links = _parse(html_dir / f"{name}.html").links
        for suffix in (".ipynb", ".md"):
            href = f"../_sources/{name}{suffix}"
            assert any(link.endswith(f"_sources/{name}{suffix}") for link in links), (
                f"{name}: no {suffix} download button"
            )
            assert (html_dir / "_sources" / f"{name}{suffix}").exists(), href
        md = (html_dir / "_sources" / f"{name}.md").read_text()
        nb = nbformat.read(html_dir / "_sources" / f"{name}.ipynb", as_version=4)
        nbformat.validate(nb)
        # The .md is the same notebook: MyST-NB reads it back cell for cell.
        back = read_myst_markdown_notebook(md)
        assert _cells(back) == _cells(nb), name


def _cells(nb) -> list[tuple]:
    return [(c.cell_type, c.source.strip(), c.metadata.get("tags")) for c in nb.cells]


# ---------------------------------------------------------------- the student edition leaks nothing


SMART = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2026": "..."})


def _norm(text: str) -> str:
    """Whitespace collapsed, and Sphinx's smart quotes and dashes undone, on either side."""
    text = text.replace("---", "\u2014").replace("--", "\u2013").translate(SMART)
    return re.sub(r"\s+", " ", text).strip()


def _secrets() -> tuple[list[str], list[str], list[str], str]:
    """Solution code lines, model-answer phrases and hidden-test lines of the source notebooks,
    and the public text (everything a student may see) they are compared with."""
    code, answers, hidden, public = [], [], [], []
    for path in nbs.chapter_notebooks():
        for cell in nbs.read(path).cells:
            meta = nbs.nbgrader_meta(cell)
            if cell.cell_type == "markdown" and nbs.is_solution(cell):
                assert str(meta.get("grade_id", "")).startswith("written_"), meta
                for line in cell.source.splitlines():  # markup, list markers: not in the text
                    line = re.sub(r"^\s*([-+]|\d+\.)\s+", "", line)
                    answers += re.split(r"[*`$\[\]()_{}|#>\\]", line)
                continue
            inside, region = None, []
            for line in cell.source.splitlines():
                marker = line.strip()
                if marker in (nbs.SOLUTION_MARKERS[0], nbs.HIDDEN_MARKERS[0]):
                    inside = code if marker == nbs.SOLUTION_MARKERS[0] else hidden
                elif marker in (nbs.SOLUTION_MARKERS[1], nbs.HIDDEN_MARKERS[1]):
                    inside = None
                elif inside is not None:
                    inside.append(line)
                else:
                    region.append(line)
            public += region
    for page in PAGES:
        if (ROOT / f"{page}.md").exists():
            public.append((ROOT / f"{page}.md").read_text())
    public_text = _norm("\n".join(public))

    def distinctive(fragments, length):
        out = {_norm(f) for f in fragments}
        return sorted(f for f in out if len(f) >= length and f not in public_text)

    return distinctive(code, 16), distinctive(answers, 30), distinctive(hidden, 16), public_text


def _build_texts(html_dir: Path) -> dict[str, str]:
    """Normalised text of every content file of a build: pages (tags stripped), search index,
    downloadable sources. Theme and MathJax assets under _static are not content."""
    texts = {}
    for path in sorted(html_dir.rglob("*")):
        rel = path.relative_to(html_dir)
        if not path.is_file() or rel.parts[0] in ("_static", "_images"):
            continue
        raw = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix == ".ipynb":
            nb = nbformat.reads(raw, as_version=4)
            raw = "\n".join(
                [c.source for c in nb.cells]
                + [json.dumps(o) for c in nb.cells for o in c.get("outputs", [])]
            )
            texts[f"{rel} (cells)"] = _norm(raw)
        elif path.suffix == ".html":
            texts[f"{rel} (text)"] = _norm(html.unescape("".join(_parse(path).text)))
        texts[str(rel)] = _norm(html.unescape(raw))
    return texts


def _index_terms(html_dir: Path) -> set[str]:
    text = (html_dir / "searchindex.js").read_text()
    index = json.loads(text[text.index("(") + 1 : text.rindex(")")])
    return set(index["terms"]) | set(index["titleterms"])


def test_student_edition_contains_no_solution_text(reader, student):
    """Is no line of any solution, model answer or hidden test anywhere in the student build
    (pages, search index, downloadable .ipynb and .md), while the reader edition's pages have
    them all? (The reader's downloads are workbooks: model answers folded, no solution code.)"""
    code, answers, hidden, _ = _secrets()
    assert len(code) > 30 and len(answers) > 5 and hidden, (len(code), len(answers), len(hidden))
    student_texts = _build_texts(student)
    reader_texts = _build_texts(reader)
    leaks = [
        f"{name}: {secret!r}"
        for secret in code + answers + hidden
        for name, text in student_texts.items()
        if secret in text
    ]
    assert not leaks, "solution text in the student edition:\n" + "\n".join(leaks[:40])

    reader_pages = " ".join(t for name, t in reader_texts.items() if name.endswith("(text)"))
    reader_sources = " ".join(t for name, t in reader_texts.items() if name.endswith("(cells)"))
    for secret in code + answers:  # not vacuous: the reader edition shows every one of them
        assert secret in reader_pages, f"reader pages lack {secret!r}"
    for secret in answers:  # a model answer is in the reader's downloads, folded (<details>)
        assert secret in reader_sources, f"reader's downloadable notebooks lack {secret!r}"
    for secret in code:  # but no solution code: the downloads are workbooks
        assert secret not in reader_sources, f"reader's downloadable notebooks hold {secret!r}"
    for secret in hidden:  # hidden tests are in neither edition
        assert not any(secret in t for t in reader_texts.values()), secret


def test_student_search_index_holds_no_solution_words(reader, student):
    """Does the student search index lack every identifier that only the solutions use?"""
    from sphinx.search.en import SearchEnglish

    stem = SearchEnglish({}).stem
    code, _, _, public_text = _secrets()

    def words(text):
        return {stem(w.lower()) for w in re.findall(r"\w+", text)}

    # Names in the solution code, not in its comments or strings: prose words are too common
    # to count as leaks (the phrase test above covers the model answers).
    names = re.sub(r"#.*|\"[^\"]*\"|'[^']*'", " ", "\n".join(code))
    secret = {w for w in words(names) if len(w) > 3 and not w.isdigit()} - words(public_text)
    reader_terms, student_terms = _index_terms(reader), _index_terms(student)
    assert secret & reader_terms, "the reader's index holds no solution-only word: test is vacuous"
    assert not secret & student_terms, sorted(secret & student_terms)


def test_student_edition_keeps_the_exercises(student):
    """Does each student chapter still show every stub, and run the cells after it?"""
    for name in CHAPTERS:
        text = _norm(html.unescape("".join(_parse(student / f"{name}.html").text)))
        assert "raise NotImplementedError()" in text and "YOUR CODE HERE" in text, name
        assert "Show solution" not in text and "A model answer" not in text, name


# ---------------------------------------------------------------- in Chromium


@pytest.fixture(scope="module")
def server(reader):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=reader,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        with contextlib.suppress(OSError):
            urllib.request.urlopen(url, timeout=1).close()
            break
        time.sleep(0.1)
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"no Chromium at {CHROMIUM}: apt-get install chromium (see .ci/run)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


PAGE_WAIT_MS = 300_000  # the longest any wait on a page may take (see Visit)


class Visit:
    """A page opened in a fresh context, with every request, failure and console error."""

    def __init__(self, browser, server, path, viewport=DESKTOP):
        self.server, self.requests, self.failures, self.errors = server, [], [], []
        self.context = browser.new_context(viewport=viewport)
        self.page = page = self.context.new_page()
        # In `make test` the browser shares the two cores with the slow tier: a page can take
        # more than Playwright's default 30 s to go quiet (a fresh-clone run once saw a long
        # Chinese chapter at phone width typeset for over 120 s beside the graders). A wait is
        # a limit, never a delay.
        page.set_default_timeout(PAGE_WAIT_MS)
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("requestfailed", lambda r: self.failures.append(f"{r.url} ({r.failure})"))
        page.on(
            "response",
            lambda r: r.status >= 400 and self.failures.append(f"{r.url} (HTTP {r.status})"),
        )
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.goto(f"{server}/{path}", wait_until="load")  # the page and its images
        # and what its scripts do after: MathJax's typesetting, the fonts it loads (not
        # Playwright's "networkidle": on a quiet machine, a fresh-clone run once saw a page
        # never go 500 ms without a request open, for 300 s)
        _typeset(page)
        page.evaluate("() => document.fonts.ready.then(() => true)")

    def assert_clean(self):
        here = urlsplit(self.server).netloc
        off_machine = [u for u in self.requests if urlsplit(u).netloc not in (here, "")]
        off_machine = [u for u in off_machine if not u.startswith(("data:", "blob:"))]
        assert not off_machine, f"requests off the machine: {off_machine}"
        assert not self.failures, f"failed requests: {self.failures}"
        assert not self.errors, f"console errors: {self.errors}"

    def close(self):
        self.context.close()


@pytest.fixture
def visit(browser, server):
    visits = []

    def open_(path, **kwargs):
        visits.append(Visit(browser, server, path, **kwargs))
        return visits[-1]

    yield open_
    for v in visits:
        v.close()


def _typeset(page) -> bool:
    """Wait for MathJax to typeset the page's math, if it has any (typeset math changes widths)."""
    if not page.locator(".math").count():
        return False
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
    page.evaluate("() => MathJax.startup.promise")
    return True


WIDE_EQUATIONS_JS = """() => {
  const column = document.querySelector('article.bd-article').getBoundingClientRect();
  return [...document.querySelectorAll('mjx-container[display="true"]')]
    .filter(e => e.scrollWidth > e.clientWidth + 1 || e.getBoundingClientRect().right > column.right + 1)
    .map(e => `${e.scrollWidth} px in a ${e.clientWidth} px box: ${(e.textContent || '').slice(0, 50)}`);
}"""


# Every inline formula (and the span.math that holds it, which scrolls sideways) whose content
# overflows its box, by more than the 1 px that rounding a fractional size to whole pixels
# gives: such a box scrolls, with a scrollbar under the formula. (MathJax's hidden MathML copy
# for screen readers once made every inline formula of every page overflow by 2 to 13 px.)
SCROLLING_INLINE_MATH_JS = """() => [...document.querySelectorAll('mjx-container:not([display="true"])')]
  .flatMap(e => [e, e.closest('span.math')].filter(Boolean))
  .filter(e => e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1)
  .map(e => `${e.tagName.toLowerCase()}: content ${e.scrollWidth}x${e.scrollHeight} px in a`
    + ` ${e.clientWidth}x${e.clientHeight} px box: ${(e.textContent || '').slice(0, 40)}`)"""


@pytest.mark.parametrize("name", PAGES)
def test_page_in_chromium(name, visit):
    """Does the page load offline with no errors, typeset its math, fit every display equation
    in the text column (eq. 6.2 once lost its upper limit past the edge), keep every inline
    formula inside its box (no scrollbar under it), and load every figure and fit it?"""
    v = visit(f"{name}.html")
    page = v.page
    if _typeset(page):
        untypeset = page.evaluate(
            "() => [...document.querySelectorAll('.math')]"
            ".filter(e => !e.querySelector('mjx-container')).map(e => e.textContent.slice(0, 60))"
        )
        assert page.locator("mjx-container").count() > 0
        assert not untypeset, f"math left untypeset: {untypeset[:5]}"
        wide = page.evaluate(WIDE_EQUATIONS_JS)
        assert not wide, "wider than the column:\n" + "\n".join(wide)
        scrolling = page.evaluate(SCROLLING_INLINE_MATH_JS)
        assert not scrolling, "inline formulas that scroll:\n" + "\n".join(scrolling[:10])
    text = page.evaluate("() => document.querySelector('main').innerText")
    assert "$$" not in text, "raw $$ in the page"
    images = page.evaluate(
        "() => [...document.images].map(i => ({src: i.getAttribute('src'), alt: i.alt,"
        " ok: i.complete && i.naturalWidth > 0}))"
    )
    if name in SCREENSHOT_PAGES:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"{Path(name).name}.png"), full_page=True)
    v.assert_clean()
    assert all(i["ok"] for i in images), [i["src"] for i in images if not i["ok"]]
    assert not [i for i in images if _missing_alt(i)], [i["src"] for i in images if _missing_alt(i)]
    assert_figures_fit(page, name, DESKTOP)


def test_solution_toggle_opens_and_closes(visit):
    """Does "Show solution" reveal the reference code, and "Hide solution" hide it again?"""
    v = visit(f"{CHAPTERS[1]}.html")  # masking
    toggle = v.page.locator("details.hide.above-input").first
    code = toggle.locator("div.cell_input, .highlight").first
    summary = toggle.locator("summary")
    assert toggle.get_attribute("open") is None and not code.is_visible()
    assert summary.inner_text().strip().startswith("Show solution")
    summary.click()
    v.page.wait_for_function("e => e.open", arg=toggle.element_handle())
    assert code.is_visible() and "Hide solution" in summary.inner_text()
    summary.click()
    v.page.wait_for_function("e => !e.open", arg=toggle.element_handle())
    assert not code.is_visible()
    v.assert_clean()


def _search(visit, page: str) -> list[str]:
    """The links the search page ``page`` (with its ``?q=``) lists, from the local index."""
    v = visit(page)
    v.page.locator("#search-results ul.search li").first.wait_for()
    links = v.page.eval_on_selector_all(
        "#search-results ul.search li a", "as => as.map(a => a.getAttribute('href'))"
    )
    v.assert_clean()
    return links


def test_search_finds_masked_softmax(visit):
    """Does the search page, from the local search index, find masked_softmax in Masking?"""
    links = _search(visit, "search.html?q=masked_softmax")
    assert any("masking.html" in href for href in links), links


def test_launch_buttons(reader, student, tmp_path):
    """Does every reader page with code (the chapters and the introduction) link to Binder and
    Colab for a notebook of the launchable tree (on the branch of notebooks without solutions),
    with a JupyterHub button only if a hub is set, while the student edition has none?"""
    import yaml

    from autograder.book import launchables

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    branch = config["repository"]["launch_branch"]
    hub = (config.get("launch_buttons") or {}).get("jupyterhub_url")
    tree = {p.name for p in launchables.write_launchables(tmp_path / "launch")}
    for name in [PAGES[0], *CHAPTERS]:
        links = _parse(reader / f"{name}.html").links
        notebook = f"{Path(name).name}.ipynb"
        assert notebook in tree, notebook
        for host in ("mybinder.org", "colab.research.google.com"):
            assert any(
                host in link and unquote(link).endswith(notebook) and branch in unquote(link)
                for link in links
            ), (name, host)
        hubs = [link for link in links if "/hub/user-redirect/git-pull" in link]
        assert bool(hubs) == bool(hub), (name, hubs)
        student_links = _parse(student / f"{name}.html").links
        assert not any("mybinder.org" in link or "colab." in link for link in student_links)


@pytest.mark.parametrize("edition", ["reader", "student"])
def test_every_download_is_a_workbook(edition, request):
    """Is every chapter's download (.ipynb and .md) of the built site a workbook: each stub
    followed by its self-check, the reference a commented import away, no cell after a stub that
    defines, imports or loads a graded name, no output, no revealing cell? And does the
    introduction's download start with the setup cell?"""
    from myst_nb.core.read import read_myst_markdown_notebook

    from autograder.book import launch
    from tests import _workbooks

    html_dir = request.getfixturevalue(edition)
    found = []
    for name in CHAPTERS:
        sources = html_dir / "_sources" / f"{name}"
        nb = nbformat.read(sources.with_suffix(".ipynb"), as_version=4)
        md = read_myst_markdown_notebook(sources.with_suffix(".md").read_text())
        for form, book in (("ipynb", nb), ("md", md)):
            found += _workbooks.problems(book, Path(name).name, where=f"{edition} .{form}: ")
    assert not found, "\n".join(found)
    intro = html_dir / "_sources" / PAGES[0]
    for book in (
        nbformat.read(intro.with_suffix(".ipynb"), as_version=4),
        read_myst_markdown_notebook(intro.with_suffix(".md").read_text()),
    ):
        code = [c for c in book.cells if c.cell_type == "code"]
        assert launch.is_setup(code[0]) and code[0].source.strip() == launch.setup_source().strip()


def test_revealing_cells_are_in_the_reader_edition_only(reader, student):
    """Is the code of every cell that reveals a prediction on the reader's pages, and nowhere
    in the student build (pages, search index, downloads)?"""
    from tests.test_workbooks import REVEALED_BY

    code = []
    for path in nbs.chapter_notebooks():
        for cell in nbs.read(path).cells:
            if cell.cell_type == "code" and cell.get("id") in {
                i for ids in REVEALED_BY.values() for i in ids
            }:
                lines = [ln for ln in cell.source.splitlines() if len(ln.strip()) > 25]
                code += [_norm(ln) for ln in lines if not ln.lstrip().startswith("#")]
    assert len(code) >= len(REVEALED_BY)
    student_texts = _build_texts(student)
    reader_pages = " ".join(t for n, t in _build_texts(reader).items() if n.endswith("(text)"))
    for line in code:
        assert line in reader_pages, line
        assert not [n for n, t in student_texts.items() if line in t], line


# ---------------------------------------------------------------- at a phone's width

# Every element of the article that reaches past the right edge of the box that clips it (the
# nearest ancestor whose overflow-x is not visible, else the window). Inside a box that scrolls
# sideways an element can be scrolled into view; that box is itself checked like any other.
CLIPPED_JS = """() => {
  const width = document.documentElement.clientWidth;
  const clipped = [];
  for (const e of document.querySelectorAll('article.bd-article *')) {
    const r = e.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    // MathJax's copy for screen readers is clipped away on purpose: not seen, not cut off.
    if (e.closest('mjx-assistive-mml') || getComputedStyle(e).visibility === 'hidden') continue;
    let a = e.parentElement, box = null, scrolls = false;
    while (a && a !== document.documentElement) {
      const overflow = getComputedStyle(a).overflowX;
      if (overflow !== 'visible') {
        box = a.getBoundingClientRect();
        scrolls = overflow === 'auto' || overflow === 'scroll';
        break;
      }
      a = a.parentElement;
    }
    if (scrolls) continue;  // reachable by scrolling its box (itself checked as an element)
    const limit = box ? box.right : width;  // a clipping box is itself checked against its own
    if (r.right > limit + 1) {
      const cls = typeof e.className === 'string' && e.className.trim()
        ? '.' + e.className.trim().split(/ +/).join('.') : '';
      const text = (e.innerText || '').slice(0, 40).replace(/\\n/g, ' ');
      clipped.push(`${e.tagName.toLowerCase()}${cls} "${text}": right edge ${Math.round(r.right)} > ${Math.round(limit)}`);
    }
  }
  return {scrollWidth: document.documentElement.scrollWidth, width, clipped};
}"""

# Every visible image of the article: its box, its natural size, the width of the box it sits
# in, and the width the page means it to have (the width a high-DPI figure carries in its
# attributes or inline style; else its natural width).
# Every figure of the article, as drawn: its box, its natural size, the width the page means it
# to have and the width of the column it sits in.
IMAGES_JS = """() => [...document.querySelectorAll('article.bd-article img')]
  .filter(i => i.getBoundingClientRect().width > 0)
  .map(i => {
    const r = i.getBoundingClientRect();
    let p = i.parentElement;
    while (getComputedStyle(p).display.startsWith('inline')) p = p.parentElement;
    const s = getComputedStyle(p);
    const column = p.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
    const intended = parseFloat(i.style.width) || parseFloat(i.getAttribute('width')) || i.naturalWidth;
    return {src: i.getAttribute('src'), width: r.width, height: r.height, left: r.left,
            right: r.right, naturalWidth: i.naturalWidth, naturalHeight: i.naturalHeight,
            intended, column};
  })"""


def assert_figures_fit(page, name: str, viewport: dict) -> None:
    """Is every figure of the page inside the column, in proportion, no larger than the page
    means it to be and no smaller than it must be? A chapter page must have figures to measure
    (so that a selector that finds none fails, not passes). Each page test asks it of the page
    it has loaded, at its own width: the phone's and the desktop's."""
    figures, bad = page.evaluate(IMAGES_JS), []
    if name in CHAPTERS:
        assert figures, f"{name}: no figure measured"
    for i in figures:
        where = f"{name}: {i['src']}"
        ratio, natural = i["height"] / i["width"], i["naturalHeight"] / i["naturalWidth"]
        if abs(ratio - natural) > 0.02 * natural:
            bad.append(f"{where} drawn {i['width']:.0f}x{i['height']:.0f}, out of proportion")
        if i["left"] < -1 or i["right"] > viewport["width"] + 1:
            bad.append(f"{where} spans {i['left']:.0f}..{i['right']:.0f}, off the page")
        if i["width"] > i["intended"] + 1:
            bad.append(f"{where} drawn {i['width']:.0f} px wide, meant {i['intended']:.0f}")
        if i["width"] < min(i["intended"], i["column"]) - 2:
            bad.append(f"{where} drawn {i['width']:.0f} px wide in a {i['column']:.0f} px column")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("name", PAGES)
def test_nothing_is_cut_off_at_phone_width(name, visit):
    """At 390 px, does the page never scroll sideways, can every table, code block and output
    be read in full (scrolling inside its own box if it is wide), and does every figure fit?"""
    v = visit(f"{name}.html", viewport=PHONE)
    _typeset(v.page)
    assert_figures_fit(v.page, name, PHONE)
    result = v.page.evaluate(CLIPPED_JS)
    assert result["width"] <= PHONE["width"], result["width"]
    assert result["scrollWidth"] <= result["width"], (
        f"the page is {result['scrollWidth']} px wide at a width of {result['width']} px"
    )
    assert not result["clipped"], "cut off at 390 px:\n" + "\n".join(result["clipped"][:15])
    if name in SCREENSHOT_PAGES or name == "book/multi_head_attention":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        v.page.screenshot(path=str(SCREENSHOTS / f"{Path(name).name}-phone.png"), full_page=True)


def test_wide_tables_scroll_at_phone_width(visit):
    """Is the last column of the widest table (Ch. 7's mask conventions, "True means")
    reachable at 390 px by scrolling the table's own box?"""
    v = visit("book/multi_head_attention.html", viewport=PHONE)
    _typeset(v.page)
    header = v.page.locator("article.bd-article th", has_text="means").first
    box = header.evaluate_handle("e => e.closest('.pst-scrollable-table-container')")
    header.scroll_into_view_if_needed()
    r = header.bounding_box()
    assert r is not None and r["x"] >= 0 and r["x"] + r["width"] <= PHONE["width"] + 1, r
    overflow = box.evaluate("b => b && getComputedStyle(b).overflowX")
    assert overflow in ("auto", "scroll"), f"the table's box does not scroll sideways: {overflow}"


# ---------------------------------------------------------------- the Chinese edition
# Its reader edition, built by `make book COURSE_LANG=zh EDITION=reader` into _build/zh/html and
# linked as zh/ inside the English build, as publish.yml publishes it; the same browser.

CHINESE = ROOT / "_build" / "zh" / "html"


@pytest.fixture(scope="module")
def chinese(reader) -> Path:
    _require_build(CHINESE, "make book COURSE_LANG=zh EDITION=reader")
    assert (reader / "zh").resolve() == CHINESE.resolve(), "zh/ is not the Chinese build"
    return CHINESE


@pytest.mark.parametrize("name", PAGES)
def test_chinese_page_at_phone_width(name, chinese, visit):
    """Does the Chinese page load offline with no console error, say it is Chinese, typeset its
    math and never scroll sideways at 390 px?"""
    v = visit(f"zh/{name}.html", viewport=PHONE)
    assert v.page.evaluate("() => document.documentElement.lang") == "zh-CN"
    _typeset(v.page)
    result = v.page.evaluate(CLIPPED_JS)
    assert result["scrollWidth"] <= result["width"] <= PHONE["width"], (
        f"the page is {result['scrollWidth']} px wide at a width of {result['width']} px"
    )
    assert not result["clipped"], "cut off at 390 px:\n" + "\n".join(result["clipped"][:15])
    v.assert_clean()


def test_chinese_text_is_drawn_with_a_cjk_font(chinese, visit):
    """Is the first paragraph of a Chinese chapter drawn with a CJK font, every glyph of it?
    (Chromium's own account of the fonts it used for the node's text.)"""
    v = visit("zh/book/masking.html")
    cdp = v.context.new_cdp_session(v.page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument")["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": "article.bd-article p"})
    # the paragraph's own text (its code spans are nodes of their own, in a monospace font)
    text = v.page.locator("article.bd-article p").first.evaluate(
        "p => [...p.childNodes].filter(n => n.nodeType === 3).map(n => n.data).join('')"
    )
    chinese = len(re.findall(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]", text))
    fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node["nodeId"]})["fonts"]
    assert chinese > 50, text[:80]
    drawn = sum(f["glyphCount"] for f in fonts if "CJK" in f["familyName"])
    assert drawn >= chinese, f"{chinese} Chinese characters, {drawn} drawn by a CJK font: {fonts}"
    v.assert_clean()


def test_the_language_switcher_leads_to_the_same_page(chinese, visit):
    """From an English chapter, does the switcher open the same chapter in Chinese, and from
    there lead back to the English one?"""
    v = visit("book/masking.html")
    v.page.locator("a", has_text="中文").first.click()
    v.page.wait_for_url("**/zh/book/masking.html")
    assert v.page.evaluate("() => document.documentElement.lang") == "zh-CN"
    assert "掩蔽" in v.page.title()
    v.page.locator("a", has_text="English").first.click()
    v.page.wait_for_url("**/book/masking.html")
    assert "/zh/" not in v.page.url and "Masking" in v.page.title()
    v.assert_clean()


def test_chinese_search_finds_a_chinese_term(chinese, visit):
    """Does the Chinese search page find 掩蔽 (a word, segmented by jieba) in the Masking chapter?"""
    links = _search(visit, "zh/search.html?q=掩蔽")
    assert any("masking.html" in href for href in links), links
