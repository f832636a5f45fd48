"""Does a run of a group (checks/_runner.py) print each failure once, carry every detail when
quiet, and show a student no path of the grader?"""

from pathlib import Path

import pytest
import torch

import checks
from checks import CheckError
from checks._core import REGISTRY, Check

ROOT = Path(__file__).resolve().parent.parent
GROUP = "_test_checks_runner"


def register(monkeypatch, *fns, group=GROUP):
    """Register ``fns`` as the checks of a throwaway group for the length of one test."""
    monkeypatch.setitem(REGISTRY, group, [Check(group, fn, hidden=False) for fn in fns])


def call_it(fn, device):
    """Does the code under test run?"""
    fn(torch.zeros(2, device=device))


def fails_by_itself(fn, device):
    """Does a check that finds a wrong answer say so?"""
    raise CheckError("the answer is wrong")


def test_verbose_failure_prints_each_cross_once(monkeypatch, capsys):
    """With verbose=True, is each ✗ printed once and the exception a short summary?"""
    register(monkeypatch, fails_by_itself, call_it)
    with pytest.raises(CheckError) as caught:
        checks.run(GROUP, lambda x: x, devices=["cpu"], verbose=True)
    printed = capsys.readouterr().out
    assert printed.count("✗") == 1 and printed.count("the answer is wrong") == 1
    assert "✓ Does the code under test run? [cpu]" in printed
    assert str(caught.value) == f"1 of 2 checks in {GROUP!r} failed (the ✗ lines above say why)"


def test_quiet_failure_carries_every_detail(monkeypatch, capsys):
    """With verbose=False, does the exception carry every ✗ line, and nothing get printed?"""
    register(monkeypatch, fails_by_itself, call_it)
    with pytest.raises(CheckError) as caught:
        checks.run(GROUP, lambda x: x, devices=["cpu"], verbose=False)
    assert capsys.readouterr().out == ""
    assert str(caught.value) == (
        f"1 of 2 checks in {GROUP!r} failed:\n"
        "✗ Does a check that finds a wrong answer say so?\n"
        "    on cpu: the answer is wrong"
    )


def test_check_error_shows_no_grader_paths_in_a_notebook():
    """Does IPython render a CheckError as its message alone, without the checks' frames?"""
    try:
        checks.run("sequence_mask", lambda X, valid_len, value=0: X * 2, devices=["cpu"])
    except CheckError as err:
        rendered = "\n".join(err._render_traceback_())
    assert rendered.startswith("CheckError: ")
    assert "_core.py" not in rendered and str(ROOT) not in rendered
