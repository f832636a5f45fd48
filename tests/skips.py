"""Every skip names its reason, and CI fails on a skip it does not expect.

A skipped test is a test that did not run: on a developer's machine that may be fine (no
PostgreSQL server, no bubblewrap), but in CI, where `make system` installs everything, it
means a proof has silently stopped. ``SkipAudit`` (registered by ``tests/conftest.py``)
collects every skip with its reason; pytest's ``-ra`` (in ``addopts``) prints them. Then:

- a skip without a reason (``pytest.skip()``, a bare ``@pytest.mark.skip``) fails the run,
  anywhere;
- with ``CI`` set (``.ci/run`` and GitHub Actions set ``CI=true``), a skip whose reason
  matches none of ``EXPECTED_IN_CI`` fails the run: CI lacks only what no CI machine has.
"""

from __future__ import annotations

import os
import re

import pytest

# What no CI machine has: a GPU (CUDA or Apple's MPS). Anything else CI installs.
EXPECTED_IN_CI = (
    r"^no CUDA device\b",
    r"^no MPS device\b",
    r"^no peak-memory counter on (cuda|mps)\b",
)
# What pytest writes when a skip was given no reason.
NO_REASON = {"", "unconditional skip"}


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def skip_reason(report: pytest.TestReport) -> str:
    """The reason a skipped test's report gives (pytest stores "Skipped: <reason>", or
    "Skipped" alone for ``pytest.skip()``)."""
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr or "")
    return re.sub(r"^Skipped(:|$)", "", text).strip()


def unexpected(reason: str, *, ci: bool) -> str | None:
    """Why a skip with ``reason`` fails the run, or None when it may pass."""
    if reason in NO_REASON:
        return "a skip must name its reason"
    if ci and not any(re.search(p, reason) for p in EXPECTED_IN_CI):
        return "not expected in CI (tests/skips.py: EXPECTED_IN_CI)"
    return None


class SkipAudit:
    """A pytest plugin: fail the session on a reason-less skip, or in CI an unexpected one."""

    def __init__(self, ci: bool):
        self.ci = ci
        self.failures: list[tuple[str, str, str]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and not hasattr(report, "wasxfail"):
            reason = skip_reason(report)
            why = unexpected(reason, ci=self.ci)
            if why:
                self.failures.append((report.nodeid, reason, why))

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.failures and session.exitstatus in (pytest.ExitCode.OK, 5):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.failures:
            return
        terminalreporter.section("skips that fail the run", red=True)
        for nodeid, reason, why in self.failures:
            terminalreporter.write_line(f"{nodeid}: {reason!r}: {why}")
