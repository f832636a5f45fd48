"""Does the crash attribution (checks/_crash.py) tell a crash of the code under test from a
crash of a check itself, name the call and the line that crashed, and bound what it shows?"""

import json
import os
import sysconfig
import textwrap
from pathlib import Path

import pytest
import torch

import checks
from checks import CheckError, CheckInternalError
from checks._core import REGISTRY, Check
from checks._crash import calling, excerpt, is_harness_file, raised_by_code_under_test

ROOT = Path(__file__).resolve().parent.parent
GROUP = "_test_checks_crash"
NOTEBOOK_CELL = "/tmp/ipykernel_123/456.py"  # how IPython names the file of a notebook cell


def register(monkeypatch, *fns, group=GROUP):
    """Register ``fns`` as the checks of a throwaway group for the length of one test."""
    monkeypatch.setitem(REGISTRY, group, [Check(group, fn, hidden=False) for fn in fns])


def compiled_in(filename: str, source: str) -> dict:
    """Compile ``source`` as if it were the file ``filename``; return what it defines."""
    namespace = {"torch": torch, "CheckError": CheckError, "calling": calling}
    exec(compile(textwrap.dedent(source), filename, "exec"), namespace)
    return namespace


# Checks as if written in checks/ (the file need not exist: frames are told apart by file name).
HARNESS = compiled_in(
    str(ROOT / "checks" / "_simulated_chapter.py"),
    """
    def call_it(fn, device):
        \"\"\"Does the code under test run?\"\"\"
        fn(torch.zeros(2, device=device))


    def call_a_module(cls, device):
        \"\"\"Does the module run?\"\"\"
        cls()(torch.zeros(2, device=device))


    def harness_divides_by_zero(fn, device):
        \"\"\"Does a check with a bug of its own report it as a bug of the check?\"\"\"
        fn(torch.zeros(2, device=device))
        return 1 / 0


    def harness_adds_mismatched_tensors(fn, device):
        \"\"\"Does a check whose own tensor code fails report it as a bug of the check?\"\"\"
        fn(torch.zeros(2, device=device))
        return torch.zeros(2) + torch.zeros(3)


    def harness_not_implemented(fn, device):
        \"\"\"Does a check that hits an operation torch lacks report it as a bug of the check?\"\"\"
        raise NotImplementedError("an operator this device lacks")


    def helper(a, b):
        return a + b


    def harness_bad_call(fn, device):
        \"\"\"Does a check that calls its own helper wrongly report it as a bug of the check?\"\"\"
        fn(torch.zeros(2, device=device))
        return helper(1)


    def harness_crash_inside_calling():
        with calling("nothing under test"):
            return 1 / 0
    """,
)
call_it = HARNESS["call_it"]


# ---------------------------------------------------------------- whose file is it?


@pytest.mark.parametrize(
    "filename",
    [
        str(ROOT / "checks" / "_core.py"),
        str(ROOT / "checks" / "_crash.py"),
        str(ROOT / "checks" / "hidden" / "masking.py"),
        torch.__file__,
        torch.nn.functional.__file__,
        json.__file__,
        os.path.join(sysconfig.get_paths()["stdlib"], "contextlib.py"),
        "<frozen importlib._bootstrap>",
    ],
)
def test_harness_files_are_checks_torch_and_the_standard_library(filename):
    """Are the checks package, PyTorch and the standard library classified as the harness?"""
    assert is_harness_file(filename)


@pytest.mark.parametrize(
    "filename",
    [
        str(ROOT / "tests" / "wrong" / "masking.py"),
        str(ROOT / "solutions" / "masking.py"),
        NOTEBOOK_CELL,
        "<string>",
        os.path.join(sysconfig.get_paths()["stdlib"], "site-packages", "solutions", "masking.py"),
        os.path.join(sysconfig.get_paths()["platstdlib"], "site-packages", "solutions", "x.py"),
        os.path.join(sysconfig.get_paths()["purelib"], "solutions", "masking.py"),
        "/usr/lib/python3/dist-packages/solutions/masking.py",
    ],
)
def test_code_under_test_is_everything_else(filename):
    """Are a notebook cell, tests/wrong, and solutions/ (installed or not) the code under test?"""
    assert not is_harness_file(filename)


def test_internal_error_is_not_a_check_error():
    """Is CheckInternalError kept apart from CheckError, so that no test mistakes it for a catch?"""
    assert not issubclass(CheckInternalError, CheckError)
    assert not issubclass(CheckError, CheckInternalError)


# ---------------------------------------------------------------- crashes of the code under test


def test_crash_of_a_function_under_test_is_a_failure(monkeypatch):
    """Does a function that raises fail the check with its exception's type, message and line?"""

    def student(x):
        return x + torch.zeros(3)

    register(monkeypatch, call_it)
    with pytest.raises(CheckError) as caught:
        checks.run(GROUP, student, devices=["cpu"], verbose=False)
    message = str(caught.value)
    assert "✗ Does the code under test run?" in message
    assert "on cpu: student raised RuntimeError: The size of tensor a (2) must match" in message
    assert "of student: return x + torch.zeros(3)" in message


def test_crash_in_a_notebook_cell_is_a_failure(monkeypatch):
    """Does a forward defined in a notebook cell that raises count as the student's crash?"""
    Module = compiled_in(
        NOTEBOOK_CELL,
        """
        class Module(torch.nn.Module):
            def forward(self, x):
                raise RuntimeError("my forward is broken")
        """,
    )["Module"]

    register(monkeypatch, HARNESS["call_a_module"])
    with pytest.raises(CheckError, match="Module raised RuntimeError: my forward is broken"):
        checks.run(GROUP, Module, devices=["cpu"], verbose=False)


def test_crash_inside_solutions_is_a_failure(monkeypatch):
    """Does an exception raised in a solutions/ module (a helper the student's code calls, or
    the reference itself) count as a crash of the code under test, not of the check?"""
    from solutions.masking import masked_softmax

    register(monkeypatch, call_it)  # masked_softmax(zeros(2), device) rejects its input
    with pytest.raises(CheckError, match="masked_softmax raised (ValueError|TypeError)"):
        checks.run(GROUP, masked_softmax, devices=["cpu"], verbose=False)


def test_wrong_signature_is_a_failure(monkeypatch):
    """Is a function that cannot take the arguments the check passes the student's crash?

    Python raises that TypeError at the call, in the check's frame, before any line
    of the code under test runs.
    """

    def student():
        return None

    register(monkeypatch, call_it)
    with pytest.raises(CheckError, match=r"student raised TypeError: .*student\(\) takes 0"):
        checks.run(GROUP, student, devices=["cpu"], verbose=False)


def test_wrong_forward_signature_is_a_failure(monkeypatch):
    """Is a module whose forward takes other arguments the student's crash, not the check's?"""
    Module = compiled_in(
        NOTEBOOK_CELL,
        """
        class Module(torch.nn.Module):
            def forward(self):
                return None
        """,
    )["Module"]
    register(monkeypatch, HARNESS["call_a_module"])
    with pytest.raises(CheckError, match=r"Module raised TypeError: Module.forward\(\) takes 1"):
        checks.run(GROUP, Module, devices=["cpu"], verbose=False)


def test_type_error_of_the_check_itself_is_internal(monkeypatch):
    """Is a TypeError from a bad call in the check's own code still the check's bug?"""
    register(monkeypatch, HARNESS["harness_bad_call"])
    with pytest.raises(CheckInternalError, match="helper\\(\\) missing 1 required"):
        checks.run(GROUP, lambda x: x, devices=["cpu"], verbose=False)


def test_not_implemented_stub_says_so(monkeypatch):
    """Does an exercise stub that raises NotImplementedError say that it is not implemented yet?"""

    def stub(x):
        raise NotImplementedError

    register(monkeypatch, call_it)
    with pytest.raises(CheckError, match="stub is not implemented yet"):
        checks.run(GROUP, stub, devices=["cpu"], verbose=False)


def test_calling_names_the_input_that_crashed():
    """Does calling() turn a crash of the code under test into a CheckError naming the call?"""

    def student(x):
        return x.reshape(3)

    with pytest.raises(CheckError) as caught:
        with calling("student(zeros(2))", student):
            student(torch.zeros(2))
    assert str(caught.value).startswith("student(zeros(2)) raised RuntimeError: shape '[3]'")
    assert isinstance(caught.value.__cause__, RuntimeError)


def test_calling_lets_harness_crashes_through():
    """Does calling() leave an exception of the harness alone, for the runner to report as its own?"""
    with pytest.raises(ZeroDivisionError):
        HARNESS["harness_crash_inside_calling"]()


# ---------------------------------------------------------------- crashes of a check itself


@pytest.mark.parametrize(
    "bug", ["harness_divides_by_zero", "harness_adds_mismatched_tensors", "harness_not_implemented"]
)
def test_crash_of_a_check_itself_is_an_internal_error(monkeypatch, bug):
    """Does a check that crashes in its own code (or in torch called from it) raise
    CheckInternalError, naming the check and the exception and asking for a report?"""
    bug = HARNESS[bug]
    register(monkeypatch, bug)
    with pytest.raises(CheckInternalError) as caught:
        checks.run(GROUP, lambda x: x, devices=["cpu"], verbose=False)
    message = str(caught.value)
    assert repr(bug.__doc__.splitlines()[0]) in message and bug.__name__ in message
    assert f"with {type(caught.value.__cause__).__name__}: " in message
    assert "itself failed on cpu" in message and "please report it" in message
    assert raised_by_code_under_test(caught.value.__cause__) is False


@pytest.mark.parametrize(
    "text, shown, hidden",
    [
        ("\n".join(f"line {i}" for i in range(71)), "line 3", "line 4"),
        ("x" * 5000, "x" * 100, "x" * 401),
        ("red \x1b[31mtext\x1b[0m and \u202eevil\u202c, a\x00b\rc", "red text and evil", "\x1b"),
    ],
    ids=["71 lines", "one long line", "control characters"],
)
def test_excerpt_bounds_and_sanitizes(text, shown, hidden):
    """Does excerpt keep four lines and 400 characters at most, count what it cut, and drop
    escape sequences, bidirectional overrides and other control characters?"""
    out = excerpt(text)
    assert shown in out and hidden not in out
    assert len(out) < 480 and out.count("\n") <= 3
    assert not any(c in out for c in "\x1b\u202e\u202c\x00\r")
