"""Do the checks give the same verdicts when the code under test runs in another process?

At grading, every check runs in the grader against proxies of the notebook's objects
(:mod:`checks._remote`). Here the other process is a plain Python process serving the
reference solutions, the known-wrong answers and the unusual answers: each must get the
verdict (and the message) it gets when it is called directly.
"""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch

import checks
import checks._remote
import tests.unusual
from checks._core import REGISTRY
from checks._errors import CheckError
from checks._remote import Session
from checks._runner import _run
from tests._sweep import first_only, one_per
from tests.wrong import load

ROOT = Path(__file__).resolve().parent.parent
WRONG = load()
UNUSUAL = tests.unusual.load()
checks.groups()
ANSWERS = {"vector_sum_answer", "vector_sum_finding"}
# Functions served by both kinds of kernel: another process (the socket), and this one
# (checks._remote.local, the self-check's). Each misbehaves in one way a check must see.
HELPERS = """
import numpy
import torch


def zero_everything(X, valid_lens):
    X.zero_()
    valid_lens.zero_()
    return torch.zeros_like(X)


def grow_in_place(X):
    X.unsqueeze_(0)
    return X


class ZeroesItsWeights(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.W = torch.nn.Linear(3, 3)

    def forward(self, X):
        with torch.no_grad():
            self.W.weight.zero_()
            self.W.bias.zero_()
        return self.W(X)


def loud(X):
    raise ValueError("line 1\\n" + "\\n".join(f"secret line {i} \\x1b[31m\\u202e" for i in range(70)))


def numpy_fifteen():
    return numpy.float64(15.0)


def numpy_int_fifteen():
    return numpy.int64(15)


def tensor_fifteen():
    return torch.tensor(15.0)


def numpy_true():
    return numpy.bool_(True)
"""

SERVER = """
import sys
sys.path.insert(0, {root!r})
import torch
import tests.unusual
from checks._serve import serve
from tests.wrong import load, reference

WRONG, UNUSUAL = load(), tests.unusual.load()
exec({helpers!r})


def crash(x):
    y = x * 2
    return y.no_such_method()


class Targets(dict):
    def __missing__(self, key):
        kind, _, name = key.partition(":")
        if kind == "ref":
            return lambda: reference(name)
        if kind == "wrong":
            return lambda: WRONG[int(name)].implementation()
        if kind == "unusual":
            return lambda: UNUSUAL[int(name)].implementation()
        if kind == "crash":
            return lambda: crash
        if kind == "dropout":
            return lambda: torch.nn.functional.dropout
        if kind == "helper":
            return lambda: globals()[name]
        raise NameError(f"name {{key!r}} is not defined")


serve({path!r}, Targets())
"""


@pytest.fixture(scope="module")
def session():
    folder = tempfile.mkdtemp(prefix="attn-")
    path = os.path.join(folder, "s")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    script = os.path.join(folder, "server.py")  # a file, so that its lines can be shown
    Path(script).write_text(SERVER.format(root=str(ROOT), path=path, helpers=HELPERS))
    process = subprocess.Popen([sys.executable, script])
    listener.settimeout(120)
    conn, _ = listener.accept()
    conn.settimeout(300)
    session = Session(conn)
    yield session
    session.close()
    process.wait(timeout=30)
    listener.close()
    shutil.rmtree(folder)


def verdict(group, fn):
    try:
        _run(group, fn, ["cpu"], False)
    except CheckError as err:
        return str(err)
    return None


GROUPS = sorted(g for g in REGISTRY if g not in ANSWERS)


# The quick loop sends one group through the proxy; test_solutions.py runs one per chapter
# directly, and every group in `make test`.
@pytest.mark.parametrize("group", one_per(GROUPS, first_only, ids=str))
def test_the_reference_passes_every_group_through_the_proxy(session, group):
    """Does the reference, running in another process, pass this group (hidden ones too)?"""
    assert verdict(group, session.target("ref:" + group.split(".")[0])) is None


def test_a_crash_in_the_other_process_names_its_line(session):
    """Is a crash of the code under test reported with its type, message and line?"""
    from checks._crash import calling

    fn = session.target("crash:")
    with pytest.raises(CheckError) as caught:
        with calling("crash(x)", fn):
            fn(torch.ones(2))
    text = str(caught.value)
    assert "crash(x) raised AttributeError" in text and "no_such_method" in text
    assert "return y.no_such_method()" in text


def test_a_name_the_notebook_lacks_is_the_students_name_error(session):
    """Does a target that is not defined in the notebook come back as its NameError?"""
    from checks._errors import CrashInCodeUnderTest

    with pytest.raises(CrashInCodeUnderTest) as caught:
        session.target("nothing")
    assert caught.value.type_name == "NameError"


def test_random_state_travels_to_the_kernel_and_never_back(session):
    """Does dropout in the other process draw what it would draw here under the same seed,
    go on drawing fresh masks, and leave the grader's own random state alone?"""
    remote = session.target("dropout:")
    x = torch.ones(1000)
    torch.manual_seed(3)
    first, second = remote(x, 0.5, True), remote(x, 0.5, True)
    mine = torch.rand(3)  # the grader's stream: not advanced by the kernel's draws
    torch.manual_seed(3)
    here = torch.nn.functional.dropout(x, 0.5, True)
    again = torch.nn.functional.dropout(x, 0.5, True)
    torch.manual_seed(3)
    assert torch.equal(first, here) and torch.equal(second, again)
    assert not torch.equal(first, second)
    assert torch.equal(mine, torch.rand(3))


def test_gradients_come_back_through_the_proxy(session):
    """Does backward through a remote module reach its parameter mirrors and the inputs?"""
    cls = session.target("ref:MultiHeadAttention")
    module = cls(4, 2, 0.0).eval()
    q = torch.randn(2, 1, 4, requires_grad=True)
    k = torch.randn(2, 5, 4, requires_grad=True)
    v = torch.randn(2, 5, 4)
    out = module(q, k, v, torch.tensor([2, 5]))
    out.sum().backward()
    assert q.grad is not None and k.grad is not None and v.grad is None
    names = [n for n, p in module.named_parameters() if p.grad is not None]
    assert names == [n for n, _ in module.named_parameters()] and len(names) == 4
    with torch.no_grad():  # a change made here reaches the module there before its next call
        module.W_o.weight.zero_()
    assert torch.equal(module(q, k, v, None), torch.zeros(2, 1, 4))


def test_gradients_through_the_proxy_equal_those_computed_here(session):
    """Is the vector-Jacobian product that comes back exactly the one torch computes here,
    for an upstream gradient that is not all ones, on every input that asks for one?"""
    from solutions.masking import masked_softmax

    X = torch.randn(2, 3, 5, dtype=torch.float64, requires_grad=True)
    R = torch.randn(2, 3, 5, dtype=torch.float64)
    lens = torch.tensor([2, 4])
    (session.target("ref:masked_softmax")(X, lens) * R).sum().backward()
    there, X.grad = X.grad, None
    (masked_softmax(X, lens) * R).sum().backward()
    torch.testing.assert_close(there, X.grad, rtol=1e-12, atol=1e-12)


LOCAL_HELPERS: dict = {}
exec(compile(HELPERS, str(ROOT / "tests" / "_helpers_served.py"), "exec"), LOCAL_HELPERS)


@pytest.fixture(params=["socket", "local"])
def served(request, session):
    """``served(name)``: a proxy of a helper, from another process or from this one."""
    sessions = []

    def proxy(name):
        if request.param == "socket":
            return session.target(f"helper:{name}")
        local_session, fn = checks._remote.local(LOCAL_HELPERS[name])
        sessions.append(local_session)
        return fn

    yield proxy
    for local_session in sessions:
        local_session.close()


def test_the_code_under_test_never_changes_the_checks_tensors(served):
    """A function that zeroes its input and its lengths in place and returns zeros: do the
    checks' tensors stay as they were (so a reference computed after the call is right), and
    is each change recorded, so that expect_unchanged still reports it?"""
    from checks._mutation import expect_unchanged, mutation_of

    X, lens = torch.randn(2, 3, 4), torch.tensor([1, 3])
    X_before, lens_before = X.clone(), lens.clone()
    out = served("zero_everything")(X, lens)
    assert torch.equal(out, torch.zeros(2, 3, 4))
    assert torch.equal(X, X_before) and torch.equal(lens, lens_before)
    assert mutation_of(X)[0] == "value" and mutation_of(lens)[0] == "value"
    with pytest.raises(CheckError, match=r"X was modified in place: at index \(0, 0, 0\)"):
        expect_unchanged(X_before, X, "X")
    with pytest.raises(CheckError, match="valid_lens was modified in place"):
        expect_unchanged(lens_before, lens, "valid_lens")
    assert mutation_of(torch.randn(2)) is None


def test_a_change_of_shape_in_place_is_reported_as_such(served):
    """Is unsqueeze_ on the input reported with the shapes, the checks' tensor unchanged?"""
    from checks._contract import invoke

    X = torch.randn(2, 3)
    with pytest.raises(
        CheckError,
        match=r"changed its input X in place: it was torch.float32 of "
        r"shape \(2, 3\) and is now torch.float32 of shape \(1, 2, 3\)",
    ):
        invoke(served("grow_in_place"), X, what="grow(X)", names=("X",))
    assert X.shape == (2, 3)


def test_a_forward_that_changes_its_weights_is_undone_and_reported(served):
    """A forward that zeroes its own weights: are they put back (the checks' references from
    the module's parameters stay right), and does invoke report it?"""
    from checks._contract import invoke

    module = served("ZeroesItsWeights")()
    weight = module.W.weight.detach().clone()
    with pytest.raises(
        CheckError, match=r"changed the module's own tensors in place \(W.bias, W.weight\)"
    ):
        invoke(module, torch.randn(2, 3), what="the forward", names=("X",))
    assert torch.equal(module.W.weight.detach(), weight)
    assert torch.equal(module.state_dict()["W.weight"], weight)


def test_an_exception_shows_a_bounded_sanitized_excerpt(served):
    """An exception whose message carries 71 lines (a file the code read): does the failure
    show at most a few short lines of it, without escape or bidirectional-control characters?"""
    from checks._crash import calling

    with pytest.raises(CheckError) as caught:
        with calling("loud(X)", None):
            served("loud")(torch.zeros(1))
    text = str(caught.value)
    assert "loud(X) raised ValueError: line 1" in text
    assert "secret line 2" in text and "secret line 10" not in text
    assert "more characters not shown" in text and len(text) < 800
    assert "\x1b" not in text and "\u202e" not in text


@pytest.mark.parametrize("name", ["numpy_fifteen", "numpy_int_fifteen", "tensor_fifteen"])
def test_a_number_is_a_number_wherever_the_check_runs(served, name):
    """Do numpy.float64(15.0), numpy.int64(15) and torch.tensor(15.0) pass the form and the key
    of question 2.2 (answer 15), through either kernel, as they do when called directly?"""
    answer = served(name)
    assert verdict("quiz_2_2", answer) is None and verdict("quiz_2_2.key", answer) is None
    direct = LOCAL_HELPERS[name]
    from checks._expect import expect_number

    assert expect_number(direct(), "answer_2_2") == 15.0


def test_a_numpy_bool_is_not_a_number(served):
    """Is numpy.bool_(True) refused as a number, as True is?"""
    assert "should be a finite number" in verdict("quiz_2_2", served("numpy_true"))


def test_a_crash_report_that_is_not_the_protocol_is_refused():
    """Does a crash report of another form (a lying kernel) become a RemoteError, and a long
    one an excerpt?"""
    from checks._remote import _crash_from
    from checks._wire import RemoteError

    assert isinstance(_crash_from(("__crash__", "x", "y", "", False, False)), RemoteError)
    report = {
        "type": "E" * 500,
        "message": "x\n" * 10_000,
        "where": "w" * 10_000,
        "not_implemented": False,
        "check_error": True,
        "watches": "not a list",
    }
    err = _crash_from(report)
    assert isinstance(err, CheckError) and len(str(err)) < 600 and err.watch_reports == []


@pytest.mark.slow
@pytest.mark.parametrize(
    "index", range(len(WRONG)), ids=lambda i: f"{WRONG[i].target}-{WRONG[i].name}"
)
def test_a_wrong_answer_fails_through_the_proxy(session, index):
    """Does each known-wrong answer, running in another process, fail with its message?"""
    wrong = WRONG[index]
    for group, fragment in wrong.failures:
        message = verdict(group, session.target(f"wrong:{index}"))
        assert message is not None and fragment in message, (group, message)


@pytest.mark.slow
@pytest.mark.parametrize(
    "index", range(len(UNUSUAL)), ids=lambda i: f"{UNUSUAL[i].target}-{UNUSUAL[i].name}"
)
def test_an_unusual_answer_passes_through_the_proxy(session, index):
    """Does each correct, unusual answer, running in another process, pass every group?"""
    answer = UNUSUAL[index]
    for group in (g for g in REGISTRY if g.split(".")[0] == answer.target):
        assert verdict(group, session.target(f"unusual:{index}")) is None, group
