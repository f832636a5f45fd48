"""Reading the hashed locks that `make lock` writes (pip-compile's format).

    --extra-index-url https://download.pytorch.org/whl/cpu

    torch==2.13.0+cpu \\
        --hash=sha256:6746...
        # via ...
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
DEV = ROOT / "requirements.lock"
GRADER = ROOT / "requirements-grader.lock"
# PyTorch's CPU index, written once: TORCH_INDEX in the Makefile (`make lock` puts it in both).
TORCH_INDEX = re.search(r"^TORCH_INDEX := (\S+)$", (ROOT / "Makefile").read_text(), re.M)[1]


@dataclass(frozen=True)
class Pin:
    version: str
    hashes: tuple[str, ...]


def _statements(text: str) -> list[str]:
    """The lock's statements: comments dropped, continuation lines joined."""
    text = re.sub(r"\\\n", " ", text)
    lines = (re.sub(r"(^|\s)#.*$", "", line).strip() for line in text.splitlines())
    return [line for line in lines if line]


def pins(path: Path = DEV) -> dict[str, Pin]:
    """Canonical name -> its pinned version and hashes."""
    found = {}
    for line in _statements(path.read_text()):
        if line.startswith("-"):
            continue
        requirement, *options = line.split()
        name, version = requirement.split("==")
        hashes = tuple(o.removeprefix("--hash=") for o in options if o.startswith("--hash="))
        found[canonicalize_name(name)] = Pin(version, hashes)
    return found


def options(path: Path = DEV) -> list[str]:
    """The lock's pip options (``--extra-index-url URL``), one a line."""
    return [line for line in _statements(path.read_text()) if line.startswith("-")]
