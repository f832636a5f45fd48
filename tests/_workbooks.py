"""What makes a notebook a workbook, as tests read it: shared by tests/test_workbooks.py (the
staged editions and the launchable notebooks) and tests/test_book.py (the built site).

A *workbook* is every notebook a student opens outside a graded release (see
``autograder.book.editions.workbook``). :func:`problems` lists what keeps a notebook from being one:

- a cell after an exercise's stub that defines (``def``, ``class``, an assignment), imports or
  loads (``%load``, ``%run``, ``exec``, ``importlib``, ``solutions.<module>``) a name the
  exercise grades, so that the self-check would test the reference instead of the student;
- a stub whose next code cell is not its self-check, or whose reference is not one explicit,
  commented step away (exercises whose reference is in ``solutions``);
- a cell that reveals a prediction's answer (tag ``reveals-answer``), or any output.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from functools import cache

from autograder import notebooks as nbs
from autograder.book import questions
from autograder.book.editions import defined_names

STUB = "raise NotImplementedError()"
MAGIC_LOADERS = re.compile(r"^\s*%+(load|run|loadpy)\b", re.M)
CALL_LOADERS = {"exec", "eval", "__import__", "compile", "import_module", "run_path"}
ATTRIBUTE_LOADERS = {"import_module", "run_path", "run_module", "exec_module", "load_module"}
CHECK_RUN = re.compile(r"checks\.run\(\s*[\"'](?P<group>[\w.]+)[\"']")


@cache
def graded(chapter: str) -> dict[str, frozenset[str]]:
    """grade_id -> the names its solution binds (functions, classes, answer variables)."""
    out = {}
    for cell in nbs.read(nbs.notebook_path(chapter)).cells:
        if cell.cell_type == "code" and nbs.is_solution(cell):
            tree = ast.parse(nbs.without_markers(cell.source))
            names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)} | {
                t.id
                for n in tree.body
                if isinstance(n, ast.Assign)
                for t in n.targets
                if isinstance(t, ast.Name)
            }
            out[nbs.nbgrader_meta(cell)["grade_id"]] = frozenset(names)
    return out


@cache
def value_answers(chapter: str) -> frozenset[str]:
    """The grade_ids whose answer is a value (questions, findings), not code."""
    return frozenset(
        nbs.nbgrader_meta(c)["grade_id"]
        for c in nbs.read(nbs.notebook_path(chapter)).cells
        if questions.is_question(c)
    )


@cache
def graded_modules(chapter: str) -> frozenset[str]:
    """The ``solutions`` modules that hold a name this chapter grades (and the answers)."""
    from solutions import SOURCES

    mods = {questions.ANSWERS_MODULE}
    names = set().union(*graded(chapter).values())
    for module, source in SOURCES.items():
        if source == chapter:
            text = (nbs.ROOT / "solutions" / f"{module}.py").read_text()
            if any(re.search(rf"^(def|class) {n}\b|^{n} =", text, re.M) for n in names):
                mods.add(module)
    return frozenset(mods)


def code_only(source: str) -> str:
    """``source`` without its comments and strings (what runs, not what it says)."""
    out = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source + "\n").readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return "\n".join(line.split("#", 1)[0] for line in source.splitlines())
    for tok in tokens:
        if tok.type not in (tokenize.COMMENT, tokenize.STRING):
            out.append(tok.string)
    return " ".join(out)


def is_stub(source: str) -> bool:
    return STUB in source and "# YOUR CODE HERE" in source


def stub_target(source: str, chapter: str, after: str = "") -> str | None:
    """The grade_id whose stub ``source`` is, if it is one. A stub that binds no name (the
    stub of a finding is the bare raise) is known by the names its self-check, ``after``, reads."""
    if not is_stub(source):
        return None
    bound = set(defined_names(source))
    for grade_id, names in graded(chapter).items():
        if names & bound:
            return grade_id
    read = set(re.findall(r"\w+", code_only(after)))
    for grade_id, names in graded(chapter).items():
        if names and names <= read:
            return grade_id
    return None


def loads(source: str) -> str | None:
    """How ``source`` loads code that is not a plain import: a magic or exec and its kin."""
    magic = MAGIC_LOADERS.search(source)
    if magic:
        return magic[0].strip()
    try:
        tree = ast.parse("\n".join(ln for ln in source.splitlines() if ln.lstrip()[:1] not in "%!"))
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in CALL_LOADERS:
                return func.id
            if isinstance(func, ast.Attribute) and func.attr in ATTRIBUTE_LOADERS:
                return func.attr
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
            if any(m.split(".")[0] in ("importlib", "runpy") for m in modules):
                return "importlib"
    return None


def _binds_or_imports(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython magics: what matters is caught by LOADERS
        tree = ast.parse("\n".join(ln for ln in source.splitlines() if ln.lstrip()[:1] not in "%!"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {alias.asname or alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in (
            "globals",
            "setattr",
        ):
            names.add("<globals>")
    return names


def _uses_graded_module(runs: str, modules) -> str | None:
    for module in modules:
        if re.search(rf"\bsolutions\s*\.\s*{module}\b", runs):
            return module
    return None


def problems(nb, chapter: str, *, where: str = "") -> list[str]:
    """Everything that keeps ``nb`` (a chapter as a student opens it) from being a workbook."""
    found = []
    cells = nb.cells
    code = [i for i, c in enumerate(cells) if c.cell_type == "code"]
    stubs = 0
    forbidden: set[str] = set()
    modules = graded_modules(chapter)
    for i, cell in enumerate(cells):
        here = f"{where}{chapter} cell {i}"
        if questions.reveals(cell):
            found.append(f"{here}: a reveals-answer cell")
        if cell.cell_type != "code":
            continue
        if cell.get("outputs"):
            found.append(f"{here}: has outputs")
        later = [cells[j] for j in code if j > i]
        after = next((c.source for c in later if not is_stub(c.source)), "")
        target = stub_target(cell.source, chapter, after)
        runs = code_only(cell.source)
        if target is None:  # an ordinary cell: it must not replace a graded name
            clash = _binds_or_imports(cell.source) & forbidden
            if clash:
                found.append(f"{here}: binds or imports {sorted(clash)} after their stub")
            how = loads(cell.source) if forbidden else None
            if how:
                found.append(f"{here}: loads code ({how}) after a stub")
            module = _uses_graded_module(runs, modules) if forbidden else None
            if module:
                found.append(f"{here}: uses solutions.{module} after a stub")
            continue
        stubs += 1
        names = graded(chapter)[target]
        if _uses_graded_module(runs, modules) or _binds_or_imports(cell.source) & names - set(
            defined_names(cell.source.split("# YOUR CODE HERE")[0])
        ):
            found.append(f"{here}: the stub of {target} uses its reference outside a comment")
        forbidden |= names
        # its self-check comes next, after the stubs of the exercises that share it
        checks_after = []
        for c in later:
            if is_stub(c.source):
                continue
            match = CHECK_RUN.search(c.source)
            if match is None:
                break
            checks_after.append(match["group"].split(".")[0])
        from checks._quiz import DECLARED

        own = {target, *names} | {g for g, n in DECLARED.items() if n in names}
        if not own & set(checks_after):
            found.append(f"{here}: the stub of {target} is not followed by its self-check")
        if target not in value_answers(chapter) and not re.search(
            rf"^# from solutions\.\w+ import .*\b{re.escape(sorted(names)[0])}\b", cell.source, re.M
        ):
            found.append(f"{here}: the stub of {target} has no commented import of its reference")
    expected = len(graded(chapter))
    if stubs != expected:
        found.append(f"{where}{chapter}: {stubs} stubs, expected {expected}")
    return found
