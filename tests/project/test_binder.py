"""Binder's files (binder/), read: the requirements pin torch to the course's release from PyTorch's CPU index and
cover every dependency of the package and the course, postBuild is an executable bash script, and the course's
JupyterLab settings turn off the news prompt and merge into what is there. What Binder builds from them is
tests/project/test_binder_environment.py; every chapter run in it, tests/project/test_binder_chapters.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import tomllib

from .helpers import BINDER, NO_NEWS, NOTIFICATION, ROOT, _name, _run


def _requirements() -> list[str]:
    lines = [line.split("#", 1)[0].strip() for line in (BINDER / "requirements.txt").read_text().splitlines()]
    return [line for line in lines if line]


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
