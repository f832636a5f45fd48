import os

import pytest
import torch

os.environ.setdefault("MPLBACKEND", "agg")

from checks import available_devices  # noqa: E402
from tests._shared import released, released_copy  # noqa: E402, F401  (the slow tier's shared release)
from tests.skips import SkipAudit, in_ci  # noqa: E402


def pytest_configure(config):
    """Every skip is listed (`-ra`) and audited: see tests/skips.py."""
    config.pluginmanager.register(SkipAudit(ci=in_ci()), "skip-audit")


def device_params():
    """Every available device; CUDA devices carry the gpu marker."""
    return [
        pytest.param(d, id=str(d), marks=[pytest.mark.gpu] if d.type == "cuda" else [])
        for d in available_devices()
    ]


@pytest.fixture(params=device_params())
def device(request) -> torch.device:
    return request.param


# ---------------------------------------------------------------- spreading the slow tier

# `make test-slow` runs `pytest -n 2 --dist loadgroup --no-loadscope-reorder`: each group of
# tests goes whole to one worker, in the order of the items. A test without an `xdist_group`
# mark gets its file as its group (module fixtures are made once, as with `--dist loadfile`);
# tests/test_autograde.py marks one group per chapter, so that its batches, the slow tier's
# largest cost, fill whichever worker is free. Groups run longest first (the order of
# LONGEST_FIRST, from the slowest durations that `make test-slow` lists on the 2-core machine),
# then the chapters' batches, largest first, then the rest in file order: a long test started
# last would leave one core idle while it runs.
LONGEST_FIRST = [
    "tests/test_hostile.py",
    "tests/test_gradescope.py",
    "tests/test_launch.py",
    "tests/test_instructor.py",
    "tests/test_remote.py",
    "tests/test_load.py",
]


def _group(item) -> str | None:
    marks = [m for m in item.iter_markers("xdist_group")]
    if not marks:
        return None
    return str(marks[0].args[0] if marks[0].args else marks[0].kwargs.get("name", "default"))


@pytest.hookimpl(tryfirst=True)  # before xdist reads the marks
def pytest_collection_modifyitems(config, items):
    if not getattr(config.option, "loadgroup", False):  # set on xdist workers only
        return
    for item in items:
        if _group(item) is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    sizes: dict[str, int] = {}
    for item in items:
        sizes[_group(item)] = sizes.get(_group(item), 0) + 1

    def rank(item):
        name = _group(item)
        if name in LONGEST_FIRST:
            return (0, LONGEST_FIRST.index(name), "")
        if name.startswith("autograde-"):
            return (1, -sizes[name], name)
        return (2, 0, "")

    items.sort(key=rank)  # stable: each group keeps its own order
