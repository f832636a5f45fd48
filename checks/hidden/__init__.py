"""Hidden checks: the grader runs these; the student release does not contain them.

They compare against independent references (explicit loops, PyTorch built-ins,
mathematical properties), never against the reference solution.
"""

from checks.hidden import (  # noqa: F401  (registers the hidden checks)
    efficient,
    masking,
    multihead,
    pooling,
    scoring,
    self_attention,
    transformer,
)
