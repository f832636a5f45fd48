"""Do the checks give the same verdicts when the code under test runs in another process?

At grading, every check runs in the grader against proxies of the notebook's objects
(:mod:`checks._remote`). Here the other process is a plain Python process serving the
reference solutions, the known-wrong answers and the unusual answers: each must get the
verdict (and the message) it gets when it is called directly.
"""

import io
import os
import pickle
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch

import checks
import tests.unusual
from checks._core import REGISTRY, CheckError, _run
from checks._remote import MAX_FRAME, RemoteError, Session, _recv
from tests.wrong import load

ROOT = Path(__file__).resolve().parent.parent
WRONG = load()
UNUSUAL = tests.unusual.load()
checks.groups()
ANSWERS = {"vector_sum_answer", "vector_sum_finding"}
SERVER = """
import sys
sys.path.insert(0, {root!r})
import torch
import tests.unusual
from checks._remote import serve
from tests.wrong import load, reference

WRONG, UNUSUAL = load(), tests.unusual.load()


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
    Path(script).write_text(SERVER.format(root=str(ROOT), path=path))
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


@pytest.mark.parametrize("group", GROUPS)
def test_the_reference_passes_every_group_through_the_proxy(session, group):
    """Does the reference, running in another process, pass this group (hidden ones too)?"""
    assert verdict(group, session.target("ref:" + group.split(".")[0])) is None


def test_a_crash_in_the_other_process_names_its_line(session):
    """Is a crash of the code under test reported with its type, message and line?"""
    from checks._core import calling

    fn = session.target("crash:")
    with pytest.raises(CheckError) as caught:
        with calling("crash(x)", fn):
            fn(torch.ones(2))
    text = str(caught.value)
    assert "crash(x) raised AttributeError" in text and "no_such_method" in text
    assert "return y.no_such_method()" in text


def test_a_name_the_notebook_lacks_is_the_students_name_error(session):
    """Does a target that is not defined in the notebook come back as its NameError?"""
    from checks._core import CrashInCodeUnderTest

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


def _frame(payload: bytes) -> socket.socket:
    a, b = socket.socketpair()
    a.sendall(len(payload).to_bytes(8, "big") + payload)
    a.close()
    return b


def test_a_pickled_object_is_refused():
    """Is a message that would run code when unpickled refused, not executed?"""

    class Evil:
        def __reduce__(self):
            return (os.system, ("touch /tmp/attention-evil",))

    buf = io.BytesIO()
    torch.save({"out": Evil()}, buf, pickle_module=pickle)
    with pytest.raises(RemoteError, match="not data"):
        _recv(_frame(buf.getvalue()))
    assert not os.path.exists("/tmp/attention-evil")


def test_an_oversized_message_is_refused():
    """Is a message over the size limit refused before it is read?"""
    a, b = socket.socketpair()
    a.sendall((MAX_FRAME + 1).to_bytes(8, "big"))
    with pytest.raises(RemoteError, match="more than"):
        _recv(b)
    a.close()


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
