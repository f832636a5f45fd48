"""Artefacts of the slow tier made once per test run and shared by every test that reads them.

A release of the course costs nbgrader's ``generate_assignment`` and a template gradebook
per chapter (about 6 CPU seconds each). Tests that grade need a course folder of their own
(grading writes its gradebook), but not a release of their own: :func:`released` makes the
release of a set of chapters once per test run, and :func:`released_copy` copies it into a
test's folder, where ``Course.grade`` finds the chapters released and goes straight to
grading.

Under pytest-xdist every worker is its own process with its own session fixtures, so each
artefact is made under a file lock in the folder that all workers of the run share (the
parent of the workers' ``basetemp``): the first worker to ask makes it, the others wait and
read it. A run that is not distributed uses its own ``basetemp``. Each run starts from a
fresh ``basetemp``, so nothing is ever read from an earlier run.

The artefacts are read-only: copy them (:func:`released_copy`) before writing.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest
from filelock import FileLock

from autograder import notebooks as nbs
from autograder.course import Course


def shared_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder that every process of this test run can read and write."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def made_once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]):
    """``folder/name``, made by ``make(path)`` by the first process of the run that asks."""
    root = shared_folder(tmp_path_factory)
    path, done = root / name, root / f"{name}.done"
    with FileLock(str(root / f"{name}.lock")):
        if not done.exists():
            shutil.rmtree(path, ignore_errors=True)  # a half-made one (its maker failed)
            make(path)
            done.touch()
    return path


def _key(chapters: Iterable[str] | None) -> tuple[str, ...]:
    order = nbs.chapter_names()
    chosen = order if chapters is None else list(chapters)
    unknown = set(chosen) - set(order)
    if unknown:
        raise ValueError(f"no chapter(s) {sorted(unknown)}; the chapters are {order}")
    return tuple(c for c in order if c in chosen)


@pytest.fixture(scope="session")
def released(tmp_path_factory) -> Callable[..., Path]:
    """``released(chapters=None, lang="en")``: the root of a course folder with ``chapters``
    (default: every chapter) released in language ``lang``, made once per test run. Read it,
    never write into it; to grade, take a :func:`released_copy`."""

    def get(chapters: Iterable[str] | None = None, lang: str = "en") -> Path:
        key = _key(chapters)
        name = "release-all" if key == tuple(nbs.chapter_names()) else "release-" + "-".join(key)
        if lang != "en":
            name = name.replace("release-", f"release-{lang}-", 1)

        def make(path: Path) -> None:
            Course(path, lang=lang).release(list(key))

        return made_once(tmp_path_factory, name, make)

    return get


@pytest.fixture(scope="session")
def released_copy(released) -> Callable[..., Course]:
    """``released_copy(dest, chapters=None, lang="en", **course_options)``: a ``Course`` at
    ``dest`` with ``chapters`` (default: all) already released in ``lang``, copied from
    :func:`released`; the same folder, gradebook and templates that ``Course(dest, lang=lang,
    ...).release(chapters)`` would make."""

    def copy(
        dest: Path, chapters: Iterable[str] | None = None, lang: str = "en", **options
    ) -> Course:
        shutil.copytree(released(chapters, lang), dest)
        # its nbgrader_config.py is rewritten before each use
        return Course(dest, lang=lang, **options)

    return copy
