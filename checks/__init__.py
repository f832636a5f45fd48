"""Self-checks for the exercises of *Attention, Step by Step*.

In a chapter notebook::

    import checks
    checks.run("masked_softmax", masked_softmax)

prints one line per check and raises ``CheckError`` with a message that names
the expected against the actual shape, dtype or value if something is wrong.
"""

from checks import (  # noqa: F401  (registers the visible checks)
    efficient,
    masking,
    multihead,
    pooling,
    scoring,
    self_attention,
    transformer,
)
from checks._core import (
    CheckError,
    available_devices,
    expect_close,
    expect_tensor,
    groups,
    run,
    run_hidden,
)

__all__ = [
    "CheckError",
    "available_devices",
    "expect_close",
    "expect_tensor",
    "groups",
    "run",
    "run_hidden",
]
