"""Does the check runner tell a crash of the code under test from a crash of a check itself?

And does it print each failure once, and find the chapter modules by itself?
"""

import json
import os
import sys
import sysconfig
import textwrap
from pathlib import Path

import numpy
import pytest
import torch

import checks
import checks.hidden
from checks import CheckError, CheckInternalError
from checks._core import REGISTRY, Check, import_chapters
from checks._crash import calling, is_harness_file, raised_by_code_under_test

ROOT = Path(__file__).resolve().parent.parent
GROUP = "_test_checks_core"
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


    def fails_by_itself(fn, device):
        \"\"\"Does a check that finds a wrong answer say so?\"\"\"
        raise CheckError("the answer is wrong")


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
fails_by_itself = HARNESS["fails_by_itself"]


# ---------------------------------------------------------------- whose file is it?


@pytest.mark.parametrize(
    "filename",
    [
        str(ROOT / "checks" / "_core.py"),
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


# ---------------------------------------------------------------- each ✗ printed once


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


# ---------------------------------------------------------------- chapter modules found, not listed


def _chapter_files(folder: Path) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_"))


def test_every_chapter_module_of_the_checks_is_imported():
    """Are checks/<chapter>.py and checks/hidden/<chapter>.py all imported, in sorted order?"""
    assert checks.CHAPTERS == _chapter_files(ROOT / "checks")
    assert checks.hidden.CHAPTERS == _chapter_files(ROOT / "checks" / "hidden")
    for name in checks.CHAPTERS:
        assert f"checks.{name}" in sys.modules
    for name in checks.hidden.CHAPTERS:
        assert f"checks.hidden.{name}" in sys.modules


def test_import_chapters_needs_no_list(tmp_path, monkeypatch):
    """Does a new module in a package get imported with nothing else to edit, private ones and
    subpackages left alone, in sorted order?"""
    package = tmp_path / "probe_chapters"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("ORDER = []\n")
    (package / "sub" / "__init__.py").write_text("raise AssertionError('a subpackage')\n")
    (package / "_private.py").write_text("raise AssertionError('a private module')\n")
    for name in ("zeta", "alpha", "mid"):
        (package / f"{name}.py").write_text(
            f"from probe_chapters import ORDER\nORDER.append({name!r})\n"
        )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        import probe_chapters

        names = import_chapters("probe_chapters", probe_chapters.__path__)
        assert names == ["alpha", "mid", "zeta"]
        assert probe_chapters.ORDER == ["alpha", "mid", "zeta"]
    finally:
        for name in [m for m in sys.modules if m.split(".")[0] == "probe_chapters"]:
            del sys.modules[name]


# ---------------------------------------------------------------- the properties every answer has


def test_check_error_shows_no_grader_paths_in_a_notebook():
    """Does IPython render a CheckError as its message alone, without the checks' frames?"""
    try:
        checks.run("sequence_mask", lambda X, valid_len, value=0: X * 2, devices=["cpu"])
    except CheckError as err:
        rendered = "\n".join(err._render_traceback_())
    assert rendered.startswith("CheckError: ")
    assert "_core.py" not in rendered and str(ROOT) not in rendered


def test_expect_close_names_the_largest_error_and_the_tolerance():
    """Does a mismatch report the largest absolute error, where it is, and the tolerance?"""
    from checks._expect import expect_close

    expected = torch.tensor([[0.25, 0.75], [0.5, 0.5]], dtype=torch.float64)
    actual = expected + torch.tensor([[0.0, 0.0], [0.0, 3e-6]], dtype=torch.float64)
    with pytest.raises(CheckError) as caught:
        expect_close(actual, expected, "weights", atol=1e-7, rtol=1e-7)
    message = str(caught.value)
    assert "largest absolute error 3e-06 at (1, 1)" in message
    assert "tolerance 1e-07 + 1e-07·|expected|" in message
    assert "expected 0.5, actual 0.500003" in message


def test_invoke_catches_a_write_into_an_input():
    """Does invoke name the input that the code changed in place, and where?"""
    from checks._contract import invoke

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
    from checks._contract import on_meta

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
    from checks._contract import on_meta
    from checks._remote import local

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
    from checks._crash import excerpt

    out = excerpt(text)
    assert shown in out and hidden not in out
    assert len(out) < 480 and out.count("\n") <= 3
    assert not any(c in out for c in "\x1b\u202e\u202c\x00\r")


def test_dropout_pattern_tells_once_from_twice():
    """Does the dropout check accept one dropout and reject two, or none?"""
    from checks._contract import expect_dropout_pattern, seeded

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
    from checks._contract import expect_gradient_values, expect_gradients

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
    from checks._contract import expect_gradient_values

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
    from checks._contract import float64_device

    assert float64_device(torch.device("mps")) == torch.device("cpu")
    assert float64_device("cpu") == torch.device("cpu")
    assert float64_device("cuda:1") == torch.device("cuda:1")


@pytest.mark.parametrize("answer", ["ab", "", "  ", "abcd", "e", "(b)", 2, None, ...])
def test_expect_choice_takes_exactly_one_of_the_letters(answer):
    """Does expect_choice refuse several letters, none, another letter or a non-string?"""
    from checks._expect import expect_choice

    with pytest.raises(CheckError, match="answer_9_9"):
        expect_choice(answer, "abcd", "answer_9_9")
    assert expect_choice(" B ", "abcd", "answer_9_9") == "b"


@pytest.mark.parametrize(
    "answer",
    ["30", float("nan"), float("inf"), True, None, [30], 10**400, torch.tensor(True)]
    + [torch.tensor([1.0, 2.0]), torch.tensor(1 + 2j), numpy.bool_(True), numpy.array([30.0])],
    ids=repr,
)
def test_expect_number_refuses_what_is_not_a_finite_number(answer):
    """Does expect_number refuse strings, NaN, infinity, booleans (also as a tensor or NumPy),
    lists, arrays, complex numbers and an int too large for a float?"""
    from checks._expect import expect_number

    with pytest.raises(CheckError, match="answer_9_9"):
        expect_number(answer, "answer_9_9")


@pytest.mark.parametrize(
    "answer",
    [30, 30.0, numpy.float64(30.0), numpy.float32(30.0), numpy.int64(30), torch.tensor(30.0)]
    + [torch.tensor([30]), numpy.array(30.0)[()]],
    ids=repr,
)
def test_expect_number_takes_numbers_in_every_form(answer):
    """Are ints, floats, NumPy scalars and one-element real tensors all the number 30?"""
    from checks._expect import expect_number

    assert expect_number(answer, "answer_9_9") == 30.0
