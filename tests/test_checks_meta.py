"""checks/_meta.py: a meta-device check never imports torch._dynamo (about 2 s of CPU in
every graded kernel), and computes what it computed before."""

import subprocess
import sys

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def _fresh(code: str) -> str:
    """Run ``code`` in a new interpreter (this one may have imported torch._dynamo already)."""
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip()


def test_a_hidden_meta_check_does_not_import_the_compiler():
    """Do masked_softmax's hidden checks (which run it on the meta device, through the
    proxies, as grading does) pass without importing torch._dynamo?"""
    out = _fresh(
        "import sys, checks\n"
        "from solutions.masking import masked_softmax\n"
        "checks.groups()\n"
        "from checks._core import REGISTRY\n"
        "groups = [g for g in REGISTRY if g.split('.')[0] == 'masked_softmax']\n"
        "assert len(groups) >= 3, groups\n"
        "for g in groups:\n"
        "    checks.run_hidden(g, masked_softmax, verbose=False)\n"
        "print('torch._dynamo' in sys.modules)"
    )
    assert out == "False"


def test_meta_references_compute_what_they_did():
    """Under the device watch, do references that PyTorch wraps for the compiler (lt,
    masked_fill, where) give the same shapes and dtypes on meta as on the CPU, with the
    wrappers filled and no compiler imported?"""
    out = _fresh(
        "import sys, torch\n"
        "from checks._meta import skip_dynamo_import\n"
        "from checks._watch import _DeviceWatch\n"
        "def run(device):\n"
        "    x = torch.ones(2, 5, device=device)\n"
        "    mask = torch.arange(5, device=device)[None, :] < torch.tensor([[2], [3]], device=device)\n"
        "    y = torch.where(mask, x.masked_fill(~mask, float('-inf')), x * 2)\n"
        "    return y.shape, y.dtype, mask.dtype\n"
        "with _DeviceWatch():\n"
        "    on_meta = run('meta')\n"
        "assert on_meta == run('cpu'), on_meta\n"
        "print('torch._dynamo' in sys.modules, skip_dynamo_import())"
    )
    assert out == "False 0"  # the watch filled the wrappers once; a second call does nothing


def test_the_fill_finds_wrappers_and_runs_once():
    """Does the first call fill many wrappers (PyTorch wraps hundreds of references), and
    the next fill none?"""
    out = _fresh(
        "import torch\nfrom checks._meta import skip_dynamo_import\n"
        "print(skip_dynamo_import(), skip_dynamo_import())"
    )
    first, second = map(int, out.split())
    assert first >= 100 and second == 0, out
