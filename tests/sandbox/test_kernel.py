"""The sandbox's kernel manager (autograder/sandbox/kernel.py) on a real sandboxed kernel."""

import pytest

from autograder import sandbox
from autograder.sandbox import SandboxKernelManager

pytestmark = pytest.mark.timeout(60)


@pytest.mark.slow
def test_a_wall_clock_interrupt_stops_the_cell_not_the_sandboxed_kernel(tmp_path):
    """nbclient interrupts a cell past its wall clock through the kernel manager: in the
    sandbox, does that interrupt the cell (KeyboardInterrupt) and leave the kernel running
    the next cell? (jupyter_client signals the process group of bubblewrap, which then
    ended the whole sandbox: "retried alone: the kernel died".) And did the kernel import
    the course's heavy modules before its first cell, binding no name the notebook sees?"""
    import asyncio
    import shutil

    from autograder.sandbox import check_available

    if shutil.which("bwrap") is None:
        pytest.skip("needs bubblewrap")
    check_available()

    async def run():
        km = SandboxKernelManager(
            kernel_name="python3", uid=sandbox.FIRST_UID + 7 if _root() else None
        )
        await km.start_kernel(cwd=str(tmp_path))
        kc = km.client()
        kc.start_channels()
        try:
            await kc.wait_for_ready(timeout=60)
            probe = kc.execute(
                "",
                user_expressions={
                    "loaded": f"sorted(set({sandbox.PRELOAD!r}) & set(__import__('sys').modules))",
                    "names": "sorted(k for k in globals() if not k.startswith('_'))",
                },
            )
            reply = await kc.get_shell_msg(timeout=30)
            while reply["parent_header"].get("msg_id") != probe:
                reply = await kc.get_shell_msg(timeout=30)
            found = reply["content"]["user_expressions"]
            assert found["loaded"]["data"]["text/plain"] == repr(sorted(sandbox.PRELOAD))
            assert found["names"]["data"]["text/plain"] == repr(
                ["In", "Out", "exit", "get_ipython", "open", "quit"]
            )
            msg_id = kc.execute("import time; time.sleep(600)")
            await asyncio.sleep(2)
            await km.interrupt_kernel()
            reply = await kc.get_shell_msg(timeout=30)
            while reply["parent_header"].get("msg_id") != msg_id:
                reply = await kc.get_shell_msg(timeout=30)
            assert reply["content"]["ename"] == "KeyboardInterrupt"
            assert await km.is_alive()
            again = kc.execute("x = 41 + 1")
            reply = await kc.get_shell_msg(timeout=30)
            assert reply["parent_header"]["msg_id"] == again
            assert reply["content"]["status"] == "ok"
        finally:
            kc.stop_channels()
            await km.shutdown_kernel(now=True)

    asyncio.run(run())


def _root() -> bool:
    import os

    return os.geteuid() == 0
