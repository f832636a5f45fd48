"""Does the registry (checks/_core.py) find the chapter modules by itself?"""

import sys
from pathlib import Path

import checks
import checks.hidden
from checks._core import import_chapters

ROOT = Path(__file__).resolve().parent.parent


def _chapter_files(folder: Path) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_"))


def test_every_chapter_module_of_the_checks_is_imported():
    """Are checks/<chapter>.py and checks/hidden/<chapter>.py all imported, in sorted order?"""
    assert checks.CHAPTERS == _chapter_files(ROOT / "checks")
    assert checks.hidden.CHAPTERS == _chapter_files(ROOT / "checks" / "hidden")
    for name in checks.CHAPTERS:
        assert f"checks.{name}" in sys.modules
    for name in checks.hidden.CHAPTERS:
        assert f"checks.hidden.{name}" in sys.modules


def test_import_chapters_needs_no_list(tmp_path, monkeypatch):
    """Does a new module in a package get imported with nothing else to edit, private ones and
    subpackages left alone, in sorted order?"""
    package = tmp_path / "probe_chapters"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("ORDER = []\n")
    (package / "sub" / "__init__.py").write_text("raise AssertionError('a subpackage')\n")
    (package / "_private.py").write_text("raise AssertionError('a private module')\n")
    for name in ("zeta", "alpha", "mid"):
        (package / f"{name}.py").write_text(
            f"from probe_chapters import ORDER\nORDER.append({name!r})\n"
        )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        import probe_chapters

        names = import_chapters("probe_chapters", probe_chapters.__path__)
        assert names == ["alpha", "mid", "zeta"]
        assert probe_chapters.ORDER == ["alpha", "mid", "zeta"]
    finally:
        for name in [m for m in sys.modules if m.split(".")[0] == "probe_chapters"]:
            del sys.modules[name]
