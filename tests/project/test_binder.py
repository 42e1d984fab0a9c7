"""Binder builds the course from binder/ alone, and every chapter runs in what it builds.

repo2docker installs binder/requirements.txt into the kernel's environment, then runs binder/postBuild from the
repository root. This test does the same in a fresh virtual environment (one per test session; pip's cache is
reused), then checks what a learner gets: the course package installed (not editable) and nothing else added
by postBuild, torch's CPU build, the widget and nbgrader extensions enabled, the server opening on the first
chapter with no news prompt (the course's JupyterLab settings installed, no news fetched, no update check), and
every chapter executing top to bottom with that environment's kernel, where the only cells that may fail are the
graded checkpoint checks (tagged `raises-exception`, unanswered as committed).

This machine cannot reach PyTorch's own index, so the test drops binder/requirements.txt's index line: pip then
resolves `torch==2.13.0` to the CPU wheel this machine provides locally (the same 2.13.0+cpu build the index
serves). Slow by nature: about a minute to install, then each chapter in a kernel of its own.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[2]
BINDER = ROOT / "binder"
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
FIRST_CHAPTER_URL = "/lab/tree/chapters/00_start_here.ipynb"
INDEX_OPTION = re.compile(r"^\s*--(extra-index-url|index-url|find-links)\b|^\s*-[if]\s")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# what a Binder checkout would not have: build outputs, caches, this machine's environment, learners' grading files
NOT_IN_A_CHECKOUT = shutil.ignore_patterns(
    ".git",
    ".venv",
    "artifacts",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".pytest_cache",
    ".hypothesis",
    ".ipynb_checkpoints",
    "gradebook.db",
    "submitted",
    "autograded",
    "feedback",
)


def _name(requirement: str) -> str:
    """The normalized project name of a requirement line or a `pip freeze` line."""
    return re.sub(r"[-_.]+", "-", re.split(r"[\s<>=!~;\[@]", requirement.strip(), maxsplit=1)[0]).lower()


def _requirements() -> list[str]:
    lines = [line.split("#", 1)[0].strip() for line in (BINDER / "requirements.txt").read_text().splitlines()]
    return [line for line in lines if line]


def _run(args, *, env=None, cwd=None, timeout=900) -> str:
    """Run a command; fail the test with the tail of its output when it fails."""
    proc = subprocess.run(
        [str(a) for a in args],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, f"{' '.join(map(str, args))} exited {proc.returncode}:\n{proc.stdout[-4000:]}"
    return proc.stdout


def _freeze(python: Path, env: dict) -> set[str]:
    out = _run([python, "-m", "pip", "freeze", "--all", "--exclude-editable"], env=env)
    return {_name(line) for line in out.splitlines() if line.strip() and not line.startswith("#")}


# --------------------------------------------------------------------------------------------------
# the files themselves (fast)


def test_requirements_pin_torch_to_the_courses_release_from_pytorchs_cpu_index():
    lines = _requirements()
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in lines
    torch = [line for line in lines if _name(line) == "torch"]
    pinned = [line for line in (ROOT / "constraints.txt").read_text().split() if _name(line) == "torch"]
    assert torch == pinned == ["torch==2.13.0"], "binder/requirements.txt pins the torch that constraints.txt pins"


def test_requirements_cover_every_dependency_of_the_package_and_the_course():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    needed = {_name(r) for r in project["dependencies"] + project["optional-dependencies"]["course"]}
    pinned = {_name(line): line for line in _requirements() if not line.startswith("-")}
    assert needed - set(pinned) == set(), "binder/requirements.txt misses dependencies of pyproject.toml"
    assert all("==" in line for line in pinned.values()), "Binder builds exact releases"


def test_postbuild_is_an_executable_bash_script():
    post_build = BINDER / "postBuild"
    assert os.access(post_build, os.X_OK), "repo2docker runs binder/postBuild directly: it must be executable"
    assert post_build.read_text().startswith("#!/usr/bin/env bash\n")
    _run(["bash", "-n", post_build])


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


NOTIFICATION = "@jupyterlab/apputils-extension:notification"
NO_NEWS = {"fetchNews": "false", "checkForUpdates": False}  # JupyterLab asks about news while fetchNews is "none"


def test_the_courses_lab_settings_turn_off_the_news_prompt_and_merge_into_what_is_there(tmp_path):
    assert json.loads((BINDER / "overrides.json").read_text()) == {NOTIFICATION: NO_NEWS}
    target = tmp_path / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    script = [sys.executable, BINDER / "install_lab_settings.py", target]
    _run(script)
    assert json.loads(target.read_text()) == {NOTIFICATION: NO_NEWS}
    # someone else's overrides: theirs kept, the course's two keys set, nothing written a second time
    theirs = {
        "@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"},
        NOTIFICATION: {"fetchNews": "none", "doNotDisturbMode": True},
    }
    target.write_text(json.dumps(theirs))
    _run(script)
    assert json.loads(target.read_text()) == {
        "@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"},
        NOTIFICATION: {"fetchNews": "false", "doNotDisturbMode": True, "checkForUpdates": False},
    }
    written = target.stat().st_mtime_ns
    assert "already set" in _run(script) and target.stat().st_mtime_ns == written
    target.write_text("{not json")
    broken = subprocess.run([str(a) for a in script], capture_output=True, text=True)
    assert broken.returncode != 0 and "not valid JSON" in broken.stderr
    assert target.read_text() == "{not json", "a file the script cannot read is left as it is"


# --------------------------------------------------------------------------------------------------
# the environment Binder builds (slow: one per session)


def _isolated_env(base: Path, venv: Path) -> dict:
    """The environment of a command run 'inside' the Binder image: its Python first on PATH, no user-level Jupyter
    or IPython settings or kernels from this machine. pip keeps its usual cache, shared across sessions."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MPLBACKEND", "VIRTUAL_ENV")}
    env.update(
        PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        VIRTUAL_ENV=str(venv),
        JUPYTER_CONFIG_DIR=str(base / "jupyter-config"),
        JUPYTER_DATA_DIR=str(base / "jupyter-data"),
        JUPYTER_RUNTIME_DIR=str(base / "jupyter-runtime"),
        IPYTHONDIR=str(base / "ipython"),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    return env


@pytest.fixture(scope="session")
def binder(tmp_path_factory):
    """A checkout of the repository and a fresh environment built from binder/requirements.txt and binder/postBuild."""
    base = tmp_path_factory.mktemp("binder")
    repo = base / "repo"
    shutil.copytree(ROOT, repo, ignore=NOT_IN_A_CHECKOUT)
    venv = base / "venv"
    _run([sys.executable, "-m", "venv", venv])
    python = venv / "bin" / "python"
    env = _isolated_env(base, venv)

    kept = [
        line for line in (repo / "binder" / "requirements.txt").read_text().splitlines() if not INDEX_OPTION.match(line)
    ]
    local_requirements = base / "requirements-without-index.txt"
    local_requirements.write_text("\n".join(kept) + "\n")
    started = time.monotonic()
    _run([python, "-m", "pip", "install", "-r", local_requirements], env=env, cwd=repo)
    before = _freeze(python, env)
    post_build_output = _run([repo / "binder" / "postBuild"], env=env, cwd=base)  # it finds the root itself
    after = _freeze(python, env)
    return SimpleNamespace(
        base=base,
        repo=repo,
        venv=venv,
        python=python,
        env=env,
        before=before,
        after=after,
        post_build_output=post_build_output,
        build_s=time.monotonic() - started,
    )


@pytest.mark.slow
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


@pytest.mark.slow
def test_postbuild_installs_the_courses_lab_settings_into_the_environment(binder):
    installed = binder.venv / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    assert json.loads(installed.read_text())[NOTIFICATION] == NO_NEWS, "no news prompt over the first chapter"
    server_config = json.loads((binder.venv / "etc" / "jupyter" / "jupyter_server_config.json").read_text())
    assert server_config["LabApp"]["news_url"] is None
    assert server_config["LabApp"]["check_for_updates_class"] == "jupyterlab.NeverCheckForUpdate"


@pytest.mark.slow
def test_torch_is_the_courses_release_and_a_cpu_build(binder):
    out = _run([binder.python, "-c", "import torch; print(torch.__version__, torch.version.cuda)"], env=binder.env)
    version, cuda = out.split()
    assert version.split("+")[0] == "2.13.0"
    assert cuda == "None", f"torch {version} is a CUDA build; Binder must get the CPU build"


@pytest.mark.slow
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


@pytest.mark.slow
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
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


# Runs inside the Binder environment: nbclient and the kernel both come from it. The chapter runs in place, in the
# checkout's chapters/ folder, as a learner's does; a last cell reports the kernel's environment.
RUNNER = textwrap.dedent("""
    import json, sys
    import nbformat
    from nbclient import NotebookClient

    path = sys.argv[1]
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import sys; print(sys.prefix)"))
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": path.rsplit("/", 1)[0]}}).execute()
    probe = nb.cells.pop()
    cells = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        cells.append({"index": i, "executed": cell.get("execution_count") is not None,
                      "tagged": "raises-exception" in cell.get("metadata", {}).get("tags", []),
                      "graded": bool(cell.get("metadata", {}).get("nbgrader", {}).get("grade")),
                      "error": f"{errors[0]['ename']}: {errors[0]['evalue']}" if errors else None})
    kernel_prefix = "".join(o.get("text", "") for o in probe.outputs if o.get("name") == "stdout").strip()
    print(json.dumps({"kernel_prefix": kernel_prefix, "cells": cells}))
""")


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.parametrize("chapter", [p.name for p in CHAPTERS])
def test_every_chapter_runs_in_the_binder_environment(binder, chapter):
    out = _run(
        [binder.python, "-c", RUNNER, binder.repo / "chapters" / chapter],
        env=binder.env,
        cwd=binder.repo / "chapters",
        timeout=1200,
    )
    result = json.loads(out.strip().splitlines()[-1])
    assert Path(result["kernel_prefix"]) == binder.venv, f"the kernel ran in {result['kernel_prefix']!r}"
    cells = result["cells"]
    assert cells and all(c["executed"] for c in cells), "every code cell ran"
    failed_untagged = [f"cell {c['index']}: {c['error']}" for c in cells if c["error"] and not c["tagged"]]
    assert failed_untagged == [], "\n".join(failed_untagged)
    # as committed the checkpoints are unanswered, so each graded check fails, and only those
    assert all(c["graded"] for c in cells if c["error"]), [c for c in cells if c["error"]]


@pytest.mark.slow
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
