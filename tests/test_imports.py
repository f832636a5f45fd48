"""The import graph of autograder/, checks/ and solutions/: no circles, and the layers each
package's docstring declares (autograder/__init__.py, checks/__init__.py) are kept.

Every import counts: at the top of a module or inside a function, ``from . import x``, and
``importlib.import_module("a.b")`` with a constant name. An import inside a function is no
way around a circle: it only moves the failure from import time to the first call.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

from autograder import notebooks as nbs

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("autograder", "checks", "solutions")
# What each package may import of the others (its docstring says so too).
OTHERS = {"autograder": {"checks", "solutions"}, "checks": {"solutions"}, "solutions": set()}
# The one module of checks that reads solutions (checks/__init__.py's docstring).
READS_SOLUTIONS = {"checks._workbook"}


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted name -> file, for every module of the packages (a package is its __init__)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _owner(name: str, known) -> str | None:
    """The module of ours that importing ``name`` runs (``a.b.c`` may be ``a.b``'s attribute)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(name: str, source: str, known, is_package: bool = False) -> dict[str, int]:
    """The modules of ours that module ``name`` imports: ``{module: first line}``."""
    found: dict[str, int] = {}

    def add(target: str | None, line: int) -> None:
        owner = _owner(target, known) if target else None
        if owner and owner != name:
            found.setdefault(owner, line)

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            for alias in node.names:  # `from a import b`: the submodule a.b, or a itself
                add(f"{module}.{alias.name}", node.lineno)
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            first = node.args[0]
            if called in ("import_module", "__import__") and isinstance(first, ast.Constant):
                if isinstance(first.value, str):
                    add(first.value, node.lineno)
    return found


@functools.cache
def graph(root: Path = ROOT) -> dict[str, dict[str, int]]:
    """Module -> the modules of ours it imports, each with the line of its first import."""
    known = modules(root)
    return {
        name: imports_of(name, path.read_text(), known, path.name == "__init__.py")
        for name, path in known.items()
    }


def components(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """The groups of modules that import each other (each strongly connected component of
    more than one module, or a module importing itself), by Tarjan's algorithm."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # recursive: the graph has under a hundred modules
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in edges.get(v, {}):
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(found)


def circles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """One circle (``[a, b, ..., a]``) through each group of :func:`components`: a shortest
    way back to its first module."""
    found = []
    for component in components(edges):
        start, members = component[0], set(component)
        paths = {start: [start]}
        queue = [start]
        while queue:
            v = queue.pop(0)
            for w in sorted(edges.get(v, {})):
                if w == start:
                    queue = []
                    found.append([*paths[v], start])
                    break
                if w in members and w not in paths:
                    paths[w] = [*paths[v], w]
                    queue.append(w)
    return found


def _describe(circle: list[str], edges) -> str:
    steps = [f"{a} imports {b} (line {edges[a][b]})" for a, b in zip(circle, circle[1:])]
    return " -> ".join(circle) + ": " + "; ".join(steps)


def test_no_module_imports_itself_back():
    """Does no module of autograder/, checks/ or solutions/ import, through any chain of
    imports (in functions too), a module that imports it?"""
    edges = graph()
    found = [
        f"{len(group)} modules import each other ({', '.join(group)}); for example "
        + _describe(circle, edges)
        for group, circle in zip(components(edges), circles(edges), strict=True)
    ]
    assert not found, "import circles:\n" + "\n".join(found)


def test_the_circle_finder_finds_circles():
    """Does the test above see a circle, including one closed by an import in a function or
    by importlib, and name it (so that it cannot pass by not looking)?"""
    known = {"p", "p.a", "p.b", "p.c", "p.d"}
    sources = {
        "p.a": "from p import b\n",
        "p.b": "def f():\n    from p.c import thing\n",
        "p.c": "import importlib\nimportlib.import_module('p.a')\n",
        "p.d": "from . import a\n",
    }
    edges = {name: imports_of(name, text, known) for name, text in sources.items()}
    assert edges["p.d"] == {"p.a": 1}
    assert circles(edges) == [["p.a", "p.b", "p.c", "p.a"]]
    message = _describe(circles(edges)[0], edges)
    assert "p.b imports p.c (line 2)" in message and "p.c imports p.a (line 2)" in message
    edges["p.c"] = {}
    assert circles(edges) == []


# ---------------------------------------------------------------- the declared layers


def declared_layers(package: str) -> list[tuple[str, list[str]]]:
    """The layer table of ``package``'s docstring: ``[(layer, [module, ...]), ...]``, lowest
    first, each module's name relative to the package."""
    doc = ast.get_docstring(ast.parse((ROOT / package / "__init__.py").read_text())) or ""
    tables = re.findall(r"::\n\n((?: {4}[a-z]+ {2,}\S.*\n)+)", doc + "\n")
    assert len(tables) == 1, f"{package}/__init__.py's docstring has no layer table (or two)"
    return [(line.split()[0], line.split()[1:]) for line in tables[0].splitlines()]


def layer_of(package: str) -> dict[str, int]:
    """Module (dotted, in full) -> its layer's rank in ``package``; ``*`` in the table stands
    for every module not named (the checks of each chapter)."""
    layers = declared_layers(package)
    names = [m for m in modules() if m == package or m.startswith(package + ".")]
    ranks: dict[str, int] = {}
    wildcard = None
    for rank, (_, members) in enumerate(layers):
        for member in members:
            if member == "*":
                wildcard = rank
                continue
            full = package if member == "__init__" else f"{package}.{member}"
            assert full in names, f"{package}'s layer table names {member}, which is no module"
            assert full not in ranks, f"{package}'s layer table names {member} twice"
            ranks[full] = rank
    for name in names:
        if name not in ranks:
            assert wildcard is not None, f"{name} is in no layer of {package}'s docstring"
            ranks[name] = wildcard
    return ranks


@pytest.mark.parametrize("package", ["autograder", "checks"])
def test_imports_follow_the_declared_layers(package):
    """Does every module of the package import only modules of its own layer or below, as the
    package's docstring declares, and of the other packages only what it may?"""
    edges = graph()
    ranks = layer_of(package)
    layers = [name for name, _ in declared_layers(package)]
    wrong = []
    for module, imported in sorted(edges.items()):
        if module not in ranks:
            continue
        for target, line in sorted(imported.items()):
            other = target.split(".")[0]
            if other != package:
                allowed = other in OTHERS[package]
                if other == "solutions" and package == "checks":
                    allowed = module in READS_SOLUTIONS
                if not allowed:
                    wrong.append(f"{module} imports {target} (line {line}): not allowed")
            elif ranks[target] > ranks[module]:
                wrong.append(
                    f"{module} ({layers[ranks[module]]}) imports {target} "
                    f"({layers[ranks[target]]}, a layer above) at line {line}"
                )
    assert not wrong, "\n".join(wrong)


def package_graph(edges: dict[str, dict[str, int]], package: str = "autograder"):
    """The graph of ``package``'s parts: each subpackage as one node (``autograder.grading``
    for all of its modules), each module beside them as its own; an edge for every import
    between two parts, with the first import that makes it."""

    def part(name: str) -> str | None:
        if not name.startswith(package + "."):
            return None
        first = ".".join(name.split(".")[:2])
        return first

    parts: dict[str, dict[str, int]] = {}
    for module, imported in edges.items():
        mine = part(module)
        if mine is None:
            continue
        parts.setdefault(mine, {})
        for target, line in imported.items():
            theirs = part(target)
            if theirs is not None and theirs != mine:
                parts[mine].setdefault(theirs, line)
    return parts


def test_no_two_packages_import_each_other():
    """Do the packages of autograder/ (grading, sandbox, book, ...) and the modules beside them
    import each other in no circle, counting every module of a package as the package?"""
    edges = package_graph(graph())
    assert {"autograder.grading", "autograder.sandbox", "autograder.book"} <= set(edges)
    found = [", ".join(group) for group in components(edges)]
    assert not found, "packages that import each other:\n" + "\n".join(found)


def test_the_package_check_sees_a_circle_between_packages():
    """Does the package graph close a circle made by two modules of two packages, each of them
    in no circle of modules (so that the test above cannot pass by not looking)?"""
    edges = {
        "autograder.book.launch": {"autograder.grading.jobs": 1},
        "autograder.grading.collect": {"autograder.book.questions": 3},
        "autograder.book.questions": {},
        "autograder.grading.jobs": {},
    }
    assert components(edges) == []
    assert components(package_graph(edges)) == [["autograder.book", "autograder.grading"]]


def test_a_solutions_module_imports_only_earlier_chapters():
    """Does a module of solutions/ import only modules of its own chapter or earlier ones
    (the layers of solutions/ are the chapters, in reading order), and nothing of the
    tooling?"""
    from solutions import SOURCES

    order = {chapter: i for i, chapter in enumerate(nbs.chapter_names())}
    edges = graph()
    wrong = []
    for module, imported in sorted(edges.items()):
        if not module.startswith("solutions."):
            continue
        own = order.get(SOURCES.get(module.removeprefix("solutions.")), len(order))
        for target, line in imported.items():
            if not target.startswith("solutions"):
                wrong.append(f"{module} imports {target} (line {line})")
                continue
            theirs = order.get(SOURCES.get(target.removeprefix("solutions.")), -1)
            if theirs > own:
                wrong.append(f"{module} imports {target} of a later chapter (line {line})")
    assert not wrong, "\n".join(wrong)


def test_the_layer_check_sees_an_import_upwards(monkeypatch):
    """Does the layer test fail on an import that runs against the table (a module of the
    ground layer importing the command line)?"""
    real = graph()
    planted = {**real, "autograder.config": {**real["autograder.config"], "autograder.cli": 1}}
    monkeypatch.setitem(globals(), "graph", lambda root=ROOT: planted)
    with pytest.raises(AssertionError, match=r"autograder.config \(ground\) imports "):
        test_imports_follow_the_declared_layers("autograder")


# ---------------------------------------------------------------- the length of a module

# A module of autograder/ or checks/ longer than this (in lines, as `wc -l` counts them) gives,
# in a paragraph of its docstring that starts with WHY, the reason its code is one module.
LONG_MODULE = 300
WHY = "Why one module:"


def test_a_long_module_says_why_it_is_one():
    """Does every module of autograder/ and checks/ (their subpackages too) longer than
    LONG_MODULE lines have a paragraph in its docstring, "Why one module: ...", that says why
    its code belongs in one file?"""
    paragraph = re.compile(rf"(?:\A|\n\n){re.escape(WHY)} \S")
    silent = []
    for name, path in modules().items():
        if name.split(".")[0] not in ("autograder", "checks"):
            continue
        text = path.read_text()
        length = len(text.splitlines())
        if length > LONG_MODULE and not paragraph.search(ast.get_docstring(ast.parse(text)) or ""):
            silent.append(f"{path.relative_to(ROOT)} ({length} lines)")
    assert not silent, (
        f"modules over {LONG_MODULE} lines whose docstring has no paragraph {WHY!r} "
        "(say why the code belongs together, or split it):\n" + "\n".join(silent)
    )
