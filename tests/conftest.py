import os

import pytest
import torch

os.environ.setdefault("MPLBACKEND", "agg")

from checks import available_devices  # noqa: E402
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
