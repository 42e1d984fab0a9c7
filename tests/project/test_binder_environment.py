"""Binder builds the course from binder/ alone.

repo2docker installs binder/requirements.txt into the kernel's environment, then runs binder/postBuild from the
repository root. The ``binder`` fixture (tests/project/conftest.py) does the same in a fresh virtual environment (one
per test session; pip's cache is reused); the tests here check what a learner gets: the course package installed (not
editable) and nothing else added by postBuild, torch's CPU build, the widget and nbgrader extensions enabled, the
server opening on the first chapter with no news prompt (the course's JupyterLab settings installed, no news fetched,
no update check), and the CLI working from any folder. binder/start runs the labs as the self-study job whatever
Binder's random user name (in this checkout, a fresh process).

This machine cannot reach PyTorch's own index, so the fixture drops binder/requirements.txt's index line: pip then
resolves `torch==2.13.0` to the CPU wheel this machine provides locally (the same 2.13.0+cpu build the index
serves). Slow by nature: about a minute to install.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from labtools import stop_group

from .helpers import BINDER, NO_NEWS, NOTIFICATION, _run

# the first test builds the Binder environment: a pip install, 81 s quiet
pytestmark = [pytest.mark.binder, pytest.mark.slow, pytest.mark.timeout(900)]

FIRST_CHAPTER_URL = "/lab/tree/chapters/00_start_here.ipynb"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def test_start_runs_the_labs_as_the_self_study_job_whatever_binder_s_random_user_name(tmp_path):
    start = BINDER / "start"
    assert os.access(start, os.X_OK), "repo2docker runs binder/start directly: it must be executable"
    env = {"PATH": os.environ["PATH"], "JUPYTERHUB_USER": "jovyan-3f9a1c2e"}  # a Binder session's throw-away name
    code = "from gpucost_lab.course.variants import current_learner; print(current_learner())"
    out = subprocess.run([str(start), sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "None"
    # a learner who set their own id keeps it
    env["GPUCOST_LAB_LEARNER"] = "alice"
    out = subprocess.run([str(start), sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "alice"


def test_postbuild_installs_the_course_package_alone_and_not_editable(binder):
    assert binder.after - binder.before == {"gpucost-lab"}, (
        "everything but the package itself must come from binder/requirements.txt"
    )
    where = _run(
        [binder.python, "-c", "import gpucost_lab; print(gpucost_lab.__file__)"], env=binder.env, cwd=binder.base
    ).strip()
    assert Path(where).is_relative_to(binder.venv), f"gpucost_lab imported from {where}, not from the environment"
    assert not (binder.repo / "build").exists() and not list(binder.repo.glob("*.egg-info")), (
        "postBuild leaves no build output in the learner's file browser"
    )


def test_postbuild_installs_the_courses_lab_settings_into_the_environment(binder):
    installed = binder.venv / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    assert json.loads(installed.read_text())[NOTIFICATION] == NO_NEWS, "no news prompt over the first chapter"
    server_config = json.loads((binder.venv / "etc" / "jupyter" / "jupyter_server_config.json").read_text())
    assert server_config["LabApp"]["news_url"] is None
    assert server_config["LabApp"]["check_for_updates_class"] == "jupyterlab.NeverCheckForUpdate"


def test_torch_is_the_courses_release_and_a_cpu_build(binder):
    out = _run([binder.python, "-c", "import torch; print(torch.__version__, torch.version.cuda)"], env=binder.env)
    version, cuda = out.split()
    assert version.split("+")[0] == "2.13.0"
    assert cuda == "None", f"torch {version} is a CUDA build; Binder must get the CPU build"


def test_widget_and_nbgrader_extensions_are_enabled(binder):
    jupyter = binder.venv / "bin" / "jupyter"
    lab = ANSI.sub("", _run([jupyter, "labextension", "list"], env=binder.env, cwd=binder.repo))
    for extension in ("@jupyter-widgets/jupyterlab-manager", "@jupyter/nbgrader"):
        assert re.search(rf"{re.escape(extension)} v\S+ enabled OK", lab), lab
    server = ANSI.sub("", _run([jupyter, "server", "extension", "list"], env=binder.env, cwd=binder.repo))
    assert re.search(r"nbgrader\.server_extensions\.validate_assignment enabled", server), server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(port: int, path: str) -> tuple[int, str, bytes]:
    """One GET on loopback, redirects not followed: (status, Location header, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)  # a guard against a hang, not a speed target
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.getheader("Location", ""), response.read()
    finally:
        conn.close()


@pytest.mark.parametrize("command", ["lab", "server", "notebook"])
def test_the_server_opens_on_the_first_chapter(binder, command):
    port, token = _free_port(), "gpucost-binder-test"
    proc = subprocess.Popen(
        [
            binder.venv / "bin" / "jupyter",
            command,
            "--no-browser",
            "--allow-root",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            f"--ServerApp.token={token}",
        ],
        cwd=binder.repo,
        env=binder.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                status, location, _ = _get(port, f"/?token={token}")
                break
            except OSError:
                assert proc.poll() is None, proc.stdout.read().decode()[-3000:]
                assert time.monotonic() < deadline, f"jupyter {command} did not answer within 90 s"
                time.sleep(0.3)
        assert status in (301, 302) and location.split("?")[0] == FIRST_CHAPTER_URL, (status, location)
        status, _, page = _get(port, f"{FIRST_CHAPTER_URL}?token={token}")
        assert status == 200 and b"JupyterLab" in page
        if command != "notebook":  # JupyterLab's page: no news prompt (the settings' default), no news, no update check
            status, _, body = _get(port, f"/lab/api/settings/{NOTIFICATION}?token={token}")
            schema = json.loads(body)["schema"]["properties"]
            assert {key: schema[key]["default"] for key in NO_NEWS} == NO_NEWS, "postBuild's overrides.json in effect"
            config = json.loads(re.search(rb'id="jupyter-config-data"[^>]*>(.*?)</script>', page, re.S).group(1))
            assert config["news"] == {"disabled": True}, "LabApp.news_url is None"
            status, _, body = _get(port, f"/lab/api/update?token={token}")
            assert status == 200 and json.loads(body)["notification"] is None, "NeverCheckForUpdate"
    finally:
        stop_group(proc)


def test_the_cli_works_non_editable_from_any_directory(binder, tmp_path):
    """The installed (not editable) package: its CLI from an unrelated folder, and grading from inside the course."""
    cli = binder.venv / "bin" / "gpucost-lab"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ledger = json.loads(_run([cli, "ledger", "--microbatch", "32", "--json"], env=binder.env, cwd=elsewhere))
    assert ledger["max_microbatch"] == 54 and ledger["budget_gb"] == pytest.approx(21.6)
    trace = elsewhere / "t.json.gz"
    _run(
        [cli, "simulate", "--scenario", "dataloader_stall", "--steps", "3", "-o", trace], env=binder.env, cwd=elsewhere
    )
    assert json.loads(_run([cli, "analyze", trace, "--json"], env=binder.env, cwd=elsewhere))["steps"] == 3
    # grading needs the course's solutions/: found by walking up from the learner's folder inside the checkout
    lab = binder.repo / "labs" / "profile_training_loop"
    proc = subprocess.run(
        [str(cli), "grade", "profile_training_loop.ipynb", "--json"],
        env=binder.env,
        cwd=lab,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 1, proc.stderr  # the unanswered release grades, and fails
    assert json.loads(proc.stdout)["max_score"] == 16
