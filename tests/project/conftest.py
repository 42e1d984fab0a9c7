"""Fixtures of the tests in tests/project/: the environment Binder builds (one per test session)."""

from __future__ import annotations

import shutil
import sys
import time
from types import SimpleNamespace

import pytest

from .helpers import INDEX_OPTION, NOT_IN_A_CHECKOUT, ROOT, _freeze, _isolated_env, _run


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
