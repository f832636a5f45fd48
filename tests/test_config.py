"""The grader's one configuration (the grading block of _config.yml, read by
autograder/config.py): every limit written once, passed down to the CLI, the scheduler, the
sandbox and the Gradescope bundle, and stated by the docs."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import zipfile
from pathlib import Path

import polib
import pytest

from autograder import cli, config, sandbox
from autograder.config import GRADESCOPE, LIMITS
from autograder.course import Course
from autograder.grading import batch, collect
from tests import lockfile

ROOT = Path(__file__).resolve().parent.parent
AUTOGRADER = ROOT / "autograder"

# ---------------------------------------------------------------- no second copy of a limit


def _limit_values() -> dict[int, str]:
    """Every number of the configuration, with the names it has there."""
    names: dict[int, list[str]] = {}
    for name, limits in (("LIMITS", LIMITS), ("GRADESCOPE", GRADESCOPE)):
        for field in dataclasses.fields(limits):
            value = getattr(limits, field.name)
            if limits is LIMITS or value != getattr(LIMITS, field.name):  # Gradescope's own
                names.setdefault(value, []).append(f"{name}.{field.name}")
    for name in ("FIRST_UID", "BOOK_CELL_TIMEOUT"):
        names.setdefault(getattr(config, name), []).append(name)
    return {value: " or ".join(f"config.{n}" for n in found) for value, found in names.items()}


# Constants that have a limit's value by chance: they are not limits. (path, name): why.
UNRELATED = {
    ("autograder/notebooks.py", "_PARSED_MAX"): "how many parsed notebooks are kept in memory",
}


# Names a limit goes by where it is passed on: a constant given to one of them is a default.
LIMIT_NAMES = {f.name for f in dataclasses.fields(config.Limits)} | {
    f.name for f in dataclasses.fields(sandbox.Limits)
}


def _number(node) -> int | None:
    """The number a constant stands for (``600``, ``"600"``), else None."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool):
            return None
        if isinstance(node.value, int | float) and float(node.value).is_integer():
            return int(node.value)
        if isinstance(node.value, str) and node.value.isdigit():
            return int(node.value)
    return None


def _target(stmt) -> str:
    target = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
    return ast.unparse(target)


def defaults_written(source: str) -> list[tuple[int, int, str]]:
    """(line, number, where) for each constant ``source`` writes where a default goes.

    A default is: a parameter's default; a class attribute (a dataclass field); a module
    constant; the value of ``default=`` or of a keyword named like a limit (``memory_mb=``);
    the fallback of ``.get(key, fallback)`` or ``getattr(obj, name, fallback)``; the last
    operand of ``x or fallback``; a dict entry under a limit's name (``"memory_mb": 3072``).
    """
    found = []

    def note(node, where):
        number = _number(node)
        if number is not None:
            found.append((node.lineno, number, where))

    tree = ast.parse(source)
    for stmt in tree.body:  # module constants
        if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
            note(stmt.value, f"the module constant {_target(stmt)}")
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            args = node.args
            for default in [*args.defaults, *args.kw_defaults]:
                if default is not None:
                    note(default, "a parameter's default")
        elif isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
                    note(stmt.value, f"the class attribute {node.name}.{_target(stmt)}")
        elif isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == "default" or keyword.arg in LIMIT_NAMES:
                    note(keyword.value, f"the argument {keyword.arg}=")
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "get" and len(node.args) == 2:
                note(node.args[1], "the fallback of .get()")
            if name == "getattr" and len(node.args) == 3:
                note(node.args[2], "the fallback of getattr()")
        elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            note(node.values[-1], "the fallback of `or`")
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value in LIMIT_NAMES:
                    note(value, f"the entry {key.value!r}")
    return found


def test_the_scan_finds_a_default_in_every_form():
    """Does the scan below see a limit written as a default in each way code writes one (so
    that the test cannot pass by looking in the wrong place)?"""
    planted = """
TIMEOUT = 600
def grade(timeout=600, *, memory=4096): ...
class Settings:
    wall_factor: int = 10
parser.add_argument("--memory", default=4096)
Limits(memory_mb=3072)
job.get("notebook_timeout", 600)
getattr(job, "timeout", 60)
wall = float(self.timeout or 600)
uid = int(os.environ.get("AUTOGRADER_FIRST_UID", "61000"))
bundle = {"memory_mb": 3072}
"""
    found = defaults_written(planted)
    assert sorted(line for line, _, _ in found) == [2, 3, 3, 5, 6, 7, 8, 9, 10, 11, 12], found
    innocent = "x = cid[:60]\napp.connect('page', f, priority=600)\nthread.join(10)\n"
    assert defaults_written(innocent) == []


def test_no_limit_is_written_twice():
    """Is every limit's default written only in _config.yml's grading block? A number of the
    configuration written as a default anywhere in autograder/ is a second copy that drifts
    (the Gradescope bundle once wrote its own 600 and 3072)."""
    values = _limit_values()
    copies = []
    for path in sorted(AUTOGRADER.rglob("*.py")):  # config.py included: it only reads them
        rel = path.relative_to(ROOT)
        for line, number, where in defaults_written(path.read_text()):
            if number in values and (rel.as_posix(), where.split()[-1]) not in UNRELATED:
                copies.append(f"{rel}:{line}: {number} as {where} (use {values[number]})")
    assert not copies, "\n".join(copies)


# ---------------------------------------------------------------- read from _config.yml


def _block(tmp_path, edit) -> Path:
    """A copy of _config.yml with its grading block changed by ``edit``."""
    import yaml

    whole = yaml.safe_load(config.CONFIG_FILE.read_text())
    edit(whole["grading"])
    path = tmp_path / "_config.yml"
    path.write_text(yaml.safe_dump(whole))
    return path


def test_the_configuration_is_the_grading_block_of_config_yml(tmp_path):
    """Are the values the grader uses those of _config.yml, and does a changed value there
    change what the grader reads (Gradescope's unnamed limits following the main ones)?"""
    import yaml

    block = yaml.safe_load(config.CONFIG_FILE.read_text())["grading"]
    assert dataclasses.asdict(LIMITS) == block["limits"]
    assert config.COURSE_ID == block["course_id"] and config.FIRST_UID == block["first_uid"]
    assert config.BOOK_CELL_TIMEOUT == block["book_cell_timeout"]
    for key, value in block["gradescope"].items():
        assert getattr(GRADESCOPE, key) == value

    def change(grading):
        grading["limits"]["cell_timeout"] = 61
        grading["gradescope"]["memory_mb"] = 2000

    loaded = config.load(_block(tmp_path, change))
    assert loaded["limits"].cell_timeout == 61 and loaded["gradescope"].cell_timeout == 61
    assert loaded["gradescope"].memory_mb == 2000 and loaded["limits"].memory_mb == LIMITS.memory_mb


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda g: g["limits"].update(cell_timeout="60"), "expected a positive integer, got '60'"),
        (lambda g: g["limits"].update(memory_mb=0), "grading.limits.memory_mb"),
        (lambda g: g["limits"].update(cell_timout=60), "unknown limit(s) ['cell_timout']"),
        (lambda g: g["limits"].pop("wall_factor"), "missing ['wall_factor']"),
        (lambda g: g["gradescope"].update(memory_mb=True), "grading.gradescope.memory_mb"),
        (lambda g: g.pop("first_uid"), "grading.first_uid is missing"),
        (lambda g: g.update(course_id=""), "grading.course_id: expected a name"),
    ],
)
def test_a_wrong_value_is_refused_with_what_was_expected(tmp_path, edit, said):
    """Does a missing, unknown or ill-typed value fail to load, saying which key, what it
    expects and what it found (never a default in its place)?"""
    with pytest.raises(config.ConfigError) as err:
        config.load(_block(tmp_path, edit))
    assert said in str(err.value)


# ---------------------------------------------------------------- passed down


def _grade_parser_defaults() -> dict:
    """What ``attention-course grade`` hands the course when no flag is given."""
    seen = {}

    def grade(self, *args, **kwargs):
        seen.update(kwargs, cell_timeout=self.timeout)
        return 0

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Course, "grade", grade)
        assert cli.main(["grade", "subs", "--course-dir", str(ROOT / "_never")]) == 0
    return seen


def test_the_cli_course_scheduler_and_sandbox_default_to_the_configuration():
    """Do `grade`'s flags, Course, batch.Settings and the sandbox's Limits all start from
    config.LIMITS?"""
    seen = _grade_parser_defaults()
    assert seen["cell_timeout"] == LIMITS.cell_timeout
    assert seen["notebook_timeout"] == LIMITS.notebook_timeout
    assert seen["memory_mb"] == LIMITS.memory_mb
    assert seen["wall_factor"] == LIMITS.wall_factor
    assert seen["grader_cpu"] == LIMITS.grader_cpu_seconds
    settings = batch.Settings(jobs=1)
    for name in ("cell_timeout", "notebook_timeout", "wall_factor", "memory_mb"):
        assert getattr(settings, name) == getattr(LIMITS, name), name
    assert settings.grader_cpu_seconds == LIMITS.grader_cpu_seconds
    kernel = sandbox.Limits()
    assert (kernel.memory_mb, kernel.cpu_seconds, kernel.cell_cpu_seconds) == (
        LIMITS.memory_mb,
        LIMITS.notebook_timeout,
        LIMITS.cell_timeout,
    )
    for name in ("processes", "file_mb", "folder_mb", "folder_files"):
        assert getattr(kernel, name) == getattr(LIMITS, name), name


def test_a_flag_overrides_the_configuration(monkeypatch):
    """Does a flag win over the configuration's default?"""
    seen = {}

    def grade(self, *args, **kwargs):
        seen.update(kwargs, cell_timeout=self.timeout)
        return 0

    monkeypatch.setattr(Course, "grade", grade)
    flags = ["--cell-timeout", "7", "--notebook-timeout", "70", "--memory", "700"]
    flags += ["--wall-factor", "3", "--grader-cpu", "9"]
    assert cli.main(["grade", "subs", "--course-dir", str(ROOT / "_never"), *flags]) == 0
    assert (seen["cell_timeout"], seen["notebook_timeout"], seen["memory_mb"]) == (7, 70, 700)
    assert (seen["wall_factor"], seen["grader_cpu"]) == (3, 9)


def test_nbgrader_is_configured_in_one_place(tmp_path):
    """Is the course's nbgrader_config.py the configuration the grader builds in process, with
    the course id and the gradebook of the configuration?"""
    from traitlets.config import Config

    course = Course(tmp_path / "course", timeout=17)
    course.write_config()
    written = Config()
    text = (course.root / "nbgrader_config.py").read_text()
    exec(compile(text, "nbgrader_config.py", "exec"), {"get_config": lambda: written})
    built = config.nbgrader_config(course.root, course.db_url, cell_timeout=17)
    assert written == built
    assert built.CourseDirectory.course_id == config.COURSE_ID
    assert built.CourseDirectory.db_url == f"sqlite:///{course.root / 'gradebook.db'}"
    assert built.Execute.timeout == 17


# ---------------------------------------------------------------- the Gradescope bundle


def test_the_gradescope_bundle_writes_the_configuration(tmp_path, monkeypatch):
    """Does bundle.json carry config.GRADESCOPE's limits (and the course's cell timeout)?"""
    from autograder.gradescope import bundle

    source = tmp_path / "course" / "source" / "masking"
    source.mkdir(parents=True)
    (source / "masking.ipynb").write_text("{}")
    template = tmp_path / "template.db"
    template.write_bytes(b"")
    course = Course(tmp_path / "course")
    monkeypatch.setattr(type(course), "template_gradebook", lambda self, chapter: template)
    out = bundle.build(course, "masking", tmp_path / "masking.zip")
    with zipfile.ZipFile(out) as archive:
        written = json.loads(archive.read("bundle.json"))
        assert {"autograder/config.py", "_config.yml"} <= set(archive.namelist())
    assert written["notebook_timeout"] == GRADESCOPE.notebook_timeout
    assert written["memory_mb"] == GRADESCOPE.memory_mb
    assert written["cell_timeout"] == LIMITS.cell_timeout
    assert bundle._BundleCourse.course_id == config.COURSE_ID


def test_the_gradescope_command_passes_its_flags_over_the_configuration(monkeypatch):
    """Does `attention-course gradescope` build with config.GRADESCOPE, each flag replacing
    its value?"""
    seen = []
    from autograder.gradescope import bundle

    monkeypatch.setattr(bundle, "build", lambda *a, limits, **k: seen.append(limits) or "z")
    course = ["--course-dir", str(ROOT / "_never")]
    assert cli.main(["gradescope", "masking", *course]) == 0
    assert cli.main(["gradescope", "masking", *course, "--memory", "2048"]) == 0
    assert seen == [GRADESCOPE, dataclasses.replace(GRADESCOPE, memory_mb=2048)]


# ---------------------------------------------------------------- the docs


INSTRUCTORS = ROOT / "book" / "instructors.md"
CATALOG = ROOT / "locale" / "zh_CN" / "LC_MESSAGES" / "book" / "instructors.po"


def _stated() -> dict[str, str]:
    """What book/instructors.md says of each default, as patterns over its text (a space
    matches any line break)."""
    student, whole = collect.STUDENT_ZIP, collect.CLASS_ZIP
    assert student.max_member_bytes == whole.max_member_bytes
    stated = {
        "cell_timeout": rf"`--cell-timeout` \(default {LIMITS.cell_timeout}\)",
        "notebook_timeout": rf"`--notebook-timeout` \(default {LIMITS.notebook_timeout}\)",
        "wall_factor": rf"`--wall-factor` \(default {LIMITS.wall_factor}\)",
        "grader_cpu_seconds": rf"`--grader-cpu` \(default {LIMITS.grader_cpu_seconds}\)",
        "memory_mb": rf"`--memory` \(default {LIMITS.memory_mb} MiB\)",
        "folder": rf"{LIMITS.folder_mb} MiB and {LIMITS.folder_files:,} files at most",
        "uid": rf"as uid {config.FIRST_UID} with rlimits",
        # the zips' caps (autograder.grading.collect, where they are defined)
        "zips": rf"a student's at {student.max_total_bytes // 2**20} MiB and "
        rf"{student.max_files:,} files, a class's at {whole.max_total_bytes // 2**30} GiB and "
        rf"{whole.max_files:,} files, {student.max_member_bytes // 2**20} MiB per notebook, "
        rf"and a compression ratio of {student.max_ratio:g}:1",
    }
    return {name: pattern.replace(" ", r"\s+") for name, pattern in stated.items()}


def test_the_instructors_page_states_the_configuration():
    """Does book/instructors.md give each default as config.py has it (and the CPU index as the
    Makefile names it)?"""
    text = INSTRUCTORS.read_text()
    missing = [name for name, pattern in _stated().items() if not re.search(pattern, text)]
    assert not missing, f"book/instructors.md does not state these as the code has them: {missing}"
    index = lockfile.TORCH_INDEX
    assert f"--extra-index-url {index}" in text


def test_the_chinese_page_states_the_same_numbers():
    """Does the Chinese translation of each paragraph that states a default carry the same
    numbers as the English one (a stale translation would state an old limit)?"""
    stated = list(_stated().values())
    checked = 0
    for entry in polib.pofile(str(CATALOG)):
        if not any(re.search(p, entry.msgid) for p in stated):
            continue
        checked += 1
        numbers = re.findall(r"\d[\d,]*", entry.msgid)
        assert not entry.fuzzy and entry.msgstr, entry.msgid[:80]
        assert sorted(numbers) == sorted(re.findall(r"\d[\d,]*", entry.msgstr)), entry.msgid[:80]
    assert checked >= 3
