"""Do the contracts the chapters' checks share (checks/_contract.py) see a write into an input,
a tensor made on the CPU, a dropout applied twice and a gradient that is not the derivative?"""

import pytest
import torch

from checks import CheckError
from checks._contract import (
    expect_dropout_pattern,
    expect_gradient_values,
    expect_gradients,
    float64_device,
    invoke,
    on_meta,
    seeded,
)
from checks._remote import local


def test_invoke_catches_a_write_into_an_input():
    """Does invoke name the input that the code changed in place, and where?"""

    def writes(X, lens):
        lens.clamp_(max=2)
        return X

    with pytest.raises(CheckError, match=r"modified its input lens in place: at index \(1,\)"):
        invoke(writes, torch.zeros(2), torch.tensor([1, 5]), what="writes", names=("X", "lens"))
    with pytest.raises(CheckError, match=r"changed its input X in place: .* of shape \(2, 1\)"):
        invoke(lambda X: X.unsqueeze_(1), torch.zeros(2), what="unsqueezes", names=("X",))


def test_on_meta_sees_tensors_made_on_the_cpu():
    """Does a tensor made without device=, or a .cpu(), fail on meta while device= passes,
    and is code that needs values (.tolist()) left unjudged?"""
    X = torch.zeros(2, 3, device="meta")
    with pytest.raises(CheckError, match=r"(?s)shape \(3,\) on the CPU .* at line \d+ of <lambda>"):
        on_meta(lambda: torch.arange(3) < X, "arange")
    with pytest.raises(CheckError, match=r"\.cpu\(\) moves a tensor off"):
        on_meta(lambda: X.cpu(), "cpu")
    assert on_meta(lambda: torch.arange(3, device=X.device) < X, "fine").device.type == "meta"
    assert on_meta(lambda: torch.tensor(X.tolist()), "needs values") is None


def _cpu_mask_that_dodges(X):
    """A mask made on the CPU, and on meta an exception that says what the old check skipped on."""
    if X.device.type == "meta":
        raise NotImplementedError("meta tensor: data-dependent, this needs values")
    return torch.arange(X.shape[-1]) < 2


def _reads_values(X):
    return torch.tensor(X.tolist())


def _reads_values_and_says_otherwise(X):
    try:
        return _reads_values(X)
    except NotImplementedError:
        raise ValueError("something else went wrong") from None


def _raises_its_own_runtime_error(X):
    raise RuntimeError("Tensor.item() cannot be called on meta tensors")


@pytest.mark.parametrize("served", [False, True], ids=["direct", "through the proxy"])
def test_on_meta_skips_only_for_a_read_it_saw_itself(served):
    """Does on_meta skip only where its own watch saw a read of values on meta raise, and fail
    code whose exception merely says so (NotImplementedError or RuntimeError, any words), or
    that hides the read's exception behind another (directly, and through the proxy)?"""
    sessions = []

    def use(fn):
        if not served:
            return fn
        session, proxy = local(fn)
        sessions.append(session)
        return proxy

    X = torch.zeros(2, 3, device="meta")
    try:
        assert on_meta(lambda: use(_reads_values)(X), "reads") is None
        with pytest.raises(CheckError, match="raised NotImplementedError: meta tensor"):
            on_meta(lambda: use(_cpu_mask_that_dodges)(X), "dodges")
        with pytest.raises(CheckError, match="raised RuntimeError: Tensor.item"):
            on_meta(lambda: use(_raises_its_own_runtime_error)(X), "says")
        with pytest.raises(CheckError, match="raised ValueError: something else"):
            on_meta(lambda: use(_reads_values_and_says_otherwise)(X), "hides")
    finally:
        for session in sessions:
            session.close()


def test_dropout_pattern_tells_once_from_twice():
    """Does the dropout check accept one dropout and reject two, or none?"""
    weights = torch.rand(4000, dtype=torch.float64) + 0.1
    drop = torch.nn.Dropout(0.5)
    with seeded(0):
        once, twice = drop(weights), drop(drop(weights))
    expect_dropout_pattern(once, weights, 0.5, "once")
    with pytest.raises(CheckError, match=r"ratio 4, expected 0 or 2"):
        expect_dropout_pattern(twice, weights, 0.5, "twice")
    with pytest.raises(CheckError, match=r"0.000 of 4000 weights were zeroed"):
        expect_dropout_pattern(weights * 2, weights, 0.5, "scaled, never dropped")


def test_gradient_checks_see_detached_parts():
    """Does a missing gradient fail, and a gradient that is not the derivative fail too?"""
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    w = torch.randn(3, dtype=torch.float64, requires_grad=True)
    with pytest.raises(CheckError, match="no gradient reached w"):
        expect_gradients(x * w.detach(), {"x": x, "w": w}, "x * w")
    expect_gradient_values(lambda x: x.sin() * x, {"x": x}, "x sin x")
    with pytest.raises(CheckError, match="not the derivative"):
        expect_gradient_values(lambda x: x * x.detach(), {"x": x}, "x * x.detach()")


def _softmax_half_detached(x):
    return x.exp() / x.exp().sum().detach()


GRADIENT_CASES = {  # function of a float64 x: is its autograd gradient the derivative?
    "x sin x": (lambda x: x.sin() * x, True),
    "softmax": (lambda x: torch.softmax(x, dim=-1), True),
    "x @ x.T": (lambda x: x @ x.T, True),
    "x * x.detach()": (lambda x: x * x.detach(), False),
    "exp / detached sum": (_softmax_half_detached, False),
    "sin in float32": (lambda x: x.float().sin().double(), False),
    "softmax in float32": (lambda x: torch.softmax(x.float(), dim=-1).to(x.dtype), False),
}


@pytest.mark.parametrize("name", GRADIENT_CASES)
def test_the_gradient_check_agrees_with_gradcheck(name):
    """Does expect_gradient_values (finite differences along a random direction) give the
    verdict of torch.autograd.gradcheck's full Jacobian, for right gradients, detached parts
    and float32 inside? (gradcheck's own fast mode passes sin computed in float32.)"""
    f, right = GRADIENT_CASES[name]
    x = torch.randn(3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    torch.manual_seed(0)
    theirs = torch.autograd.gradcheck(
        f, (x.clone().requires_grad_(),), fast_mode=False, raise_exception=False
    )
    assert theirs is right
    if right:
        expect_gradient_values(f, {"x": x}, name)
    else:
        with pytest.raises(CheckError, match="not the derivative"):
            expect_gradient_values(f, {"x": x}, name)


def test_float64_runs_on_the_cpu_for_a_device_without_it():
    """Is float64 tested on the CPU for MPS, and on the device itself otherwise?"""
    assert float64_device(torch.device("mps")) == torch.device("cpu")
    assert float64_device("cpu") == torch.device("cpu")
    assert float64_device("cuda:1") == torch.device("cuda:1")
