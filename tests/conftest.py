import os

from autograder import leave_out_iri_grammar

leave_out_iri_grammar()  # before anything imports nbformat (nbval's plugin is off: pyproject.toml)

import pytest  # noqa: E402
import torch  # noqa: E402

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


@pytest.fixture
def repo(tmp_path):
    """A copy of what the catalogs' checks read (tests/i18n: ``copy_sources``), to break."""
    from tests.i18n import copy_sources

    return copy_sources(tmp_path)


# ---------------------------------------------------------------- spreading the slow tier

# `make test-slow` runs `pytest -n 2 --dist loadfile --no-loadscope-reorder`: each file goes
# whole to one worker (its module fixtures are made once), the files in the order of the items
# the workers collect. They run longest first (LONGEST_FIRST, from the slowest durations that
# `make test-slow` lists on the 2-core machine), then the rest in file order: a long file
# started last would leave one core idle while it runs.
# (Not `--dist loadgroup`: pytest-xdist 3.8 names a group by rewriting `item._nodeid`, which
# pytest 9.2 no longer reads, so every test became a group of its own and a file's module
# fixture, a whole grading run, was made on both workers.)
LONGEST_FIRST = [
    "tests/test_autograde.py",
    "tests/test_hostile.py",
    "tests/gradescope/test_bundle.py",
    "tests/test_launch.py",
    "tests/test_workbooks.py",
    "tests/test_instructor.py",
    "tests/test_remote.py",
]


def pytest_collection_modifyitems(config, items):
    if getattr(config.option, "dist", "no") != "no" or not os.environ.get("PYTEST_XDIST_WORKER"):
        return  # only on xdist's workers, whose collection order the controller follows

    def rank(item):
        name = item.nodeid.split("::")[0]
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: each file keeps its own order
