"""gpucost_lab.course.scratch in a real IPython kernel: restarted and then shut down the way JupyterLab does it
(jupyter_client's KernelManager, asked to exit rather than killed), each of its processes removes its chapter's
scratch folder. The kernel runs with TMPDIR set to a folder of the test's own, so whatever it leaves behind is there
to see. (The scratch folder in plain processes is test_scratch.py.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .helpers import _left

pytestmark = pytest.mark.slow

KERNEL_TIMEOUT_S = 120  # a guard against a hang, not a speed target


def _kernel_folder(client, chapter: str) -> Path:
    """Run a chapter's cell in the kernel: its scratch folder, with a file in it."""
    code = (
        "from gpucost_lab.course.scratch import scratch_folder\n"
        f"workdir = scratch_folder({chapter!r})\n"
        "(workdir / 'registry.json').write_text('{}')\n"
        "print(workdir)"
    )
    out: list[str] = []
    reply = client.execute_interactive(
        code,
        timeout=KERNEL_TIMEOUT_S,
        output_hook=lambda msg: out.append(msg["content"].get("text", "")) if msg["msg_type"] == "stream" else None,
    )
    assert reply["content"]["status"] == "ok", reply["content"]
    return Path("".join(out).strip())


def test_a_kernel_restarted_then_shut_down_leaves_no_folder(tmp_path):
    from jupyter_client.manager import KernelManager

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MPLBACKEND")}
    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(env={**env, "TMPDIR": str(tmp_path)}, cwd=str(tmp_path))
    try:
        client = manager.client()
        client.start_channels()
        client.wait_for_ready(timeout=KERNEL_TIMEOUT_S)
        before = _kernel_folder(client, "06")
        assert before.parent == tmp_path and (before / "registry.json").is_file()
        manager.restart_kernel(now=False)  # JupyterLab's "Restart Kernel": the kernel is asked to exit
        client.wait_for_ready(timeout=KERNEL_TIMEOUT_S)
        assert not before.exists(), "the restarted kernel's old process removed its folder"
        after = _kernel_folder(client, "06")
        assert after != before and after.is_dir()
        client.stop_channels()
        manager.shutdown_kernel(now=False)  # "Shut Down Kernel", or closing the server
    finally:
        if manager.has_kernel:
            manager.shutdown_kernel(now=True)
    assert not manager.is_alive()
    assert _left(tmp_path) == [], "no scratch folder outlives its kernel"
