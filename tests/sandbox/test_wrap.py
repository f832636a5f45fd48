"""The command that wraps a kernel (autograder/sandbox/wrap.py), built without running it: what
bubblewrap binds and unshares, the environment given exactly, the rlimits from the limits, the
user switched with no way back, and the folders :func:`prepare` makes. That the wrapped kernel
really runs so is tests/sandbox/test_kernel.py's, and the hostile corpus's."""

from __future__ import annotations

import stat

import pytest

from autograder.sandbox import wrap


def _after(args: list[str], flag: str) -> list[list[str]]:
    """The two values after each ``flag`` of a bwrap command line (``--bind src dest``)."""
    return [args[i + 1 : i + 3] for i, a in enumerate(args) if a == flag]


def test_bubblewrap_binds_only_the_kernels_folders_and_unshares_the_network(tmp_path):
    limits = wrap.Limits(memory_mb=512, cpu_seconds=10, processes=40, file_mb=8)
    box = wrap.Sandbox(
        tmp_path / "work", tmp_path / "ipc", uid=64000, limits=limits, grader_dir=tmp_path / "g"
    )
    args = box.command(["python", "-m", "ipykernel"], {"HOME": "/tmp", "LANG": "C.UTF-8"})
    head, _, tail = " ".join(args).partition(" -- ")
    assert head.startswith("bwrap --die-with-parent --new-session --clearenv")
    assert {"--unshare-pid", "--unshare-net", "--unshare-ipc"} <= set(head.split())
    binds = _after(args, "--bind")
    assert binds == [[str(tmp_path / "ipc")] * 2, [str(tmp_path / "work")] * 2]
    assert [str(tmp_path / "g")] * 2 in _after(args, "--ro-bind")  # the grader's: read only
    assert _after(args, "--setenv") == [["HOME", "/tmp"], ["LANG", "C.UTF-8"]]
    assert args[args.index("--chdir") + 1] == str(tmp_path / "work")
    assert f"--as={512 * 2**20}" in tail and f"--cpu={10 + wrap.RLIMIT_CPU_MARGIN}" in tail
    assert "--nproc=40" in tail and f"--fsize={8 * 2**20}" in tail
    assert "setpriv --reuid=64000 --regid=64000 --clear-groups --no-new-privs" in tail
    assert tail.endswith("-- python -m ipykernel")


def test_without_a_uid_it_maps_to_nobody_in_a_user_namespace(tmp_path):
    args = wrap.Sandbox(tmp_path / "w", tmp_path / "i").command(["k"], {})
    assert args[args.index("--unshare-user") : args.index("--unshare-user") + 5] == [
        "--unshare-user", "--uid", "65534", "--gid", "65534",
    ]  # fmt: skip
    assert "setpriv" not in args


def test_without_namespaces_another_user_is_required_and_the_environment_is_exact(tmp_path):
    with pytest.raises(wrap.SandboxUnavailable, match="must run as root"):
        wrap.Sandbox(tmp_path, tmp_path, namespaces=False).command(["k"], {})
    args = wrap.Sandbox(tmp_path, tmp_path, uid=64001, namespaces=False).command(["k"], {"A": "1"})
    assert "bwrap" not in args and args[:1] == ["prlimit"]
    assert args[-4:] == ["env", "-i", "A=1", "k"]
    assert "--reuid=64001" in args


def test_parents_are_made_traversable_except_the_systems(tmp_path):
    assert wrap._parents("/tmp/a/b/c") == [
        "--perms", "0755", "--dir", "/tmp/a", "--perms", "0755", "--dir", "/tmp/a/b",
    ]  # fmt: skip
    assert wrap._parents("/usr/x") == []  # /usr is bound read-only already


def test_prepare_gives_a_private_kernel_folder_and_a_grader_folder_it_cannot_list(tmp_path):
    ipc, grader = wrap.prepare(tmp_path, uid=None)
    try:
        assert stat.S_IMODE(ipc.stat().st_mode) == 0o700
        assert stat.S_IMODE(grader.stat().st_mode) == 0o711
        assert len(str(grader)) < 60  # room for a socket's name in 107 bytes
    finally:
        ipc.rmdir()
        grader.rmdir()
