"""`make lab` serves JupyterLab on the course (the README's first command)."""

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=60) as r:  # a guard against a hang, not a speed target
        return r.status, r.read()


def test_make_lab_serves_the_chapters():
    port, token = _free_port(), "gpucost-test-token"
    args = f"--no-browser --ServerApp.ip=127.0.0.1 --ServerApp.token={token}"
    proc = subprocess.Popen(
        ["make", "-s", "lab", f"PORT={port}", f"LAB_ARGS={args}"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                status, _ = _get(f"http://127.0.0.1:{port}/api/status?token={token}")
                break
            except OSError:
                assert proc.poll() is None, proc.stdout.read().decode()[-2000:]
                assert time.monotonic() < deadline, "JupyterLab did not answer within 90 s"
                time.sleep(0.5)
        status, page = _get(f"http://127.0.0.1:{port}/lab/tree/chapters?token={token}")
        assert status == 200 and b"JupyterLab" in page
        _, listing = _get(f"http://127.0.0.1:{port}/api/contents/chapters?token={token}")
        names = {item["name"] for item in json.loads(listing)["content"]}
        assert "00_start_here.ipynb" in names
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
