"""Helpers of the tests in tests/project/ that several files share: the Binder configuration's files, a command run
to its end, the environment a command runs in inside the Binder image (tests/project/conftest.py builds it),
benchmarks/gpu_check.sh's lists and dry run, the JSON keys the README documents, and a benchmarks/ script loaded by
path."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


BINDER = ROOT / "binder"


INDEX_OPTION = re.compile(r"^\s*--(extra-index-url|index-url|find-links)\b|^\s*-[if]\s")


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


NOTIFICATION = "@jupyterlab/apputils-extension:notification"


NO_NEWS = {"fetchNews": "false", "checkForUpdates": False}  # JupyterLab asks about news while fetchNews is "none"


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


# --------------------------------------------------------------------------- benchmarks/gpu_check.sh, on this machine

GPU_CHECK = ROOT / "benchmarks" / "gpu_check.sh"


def listed() -> dict[str, list[str]]:
    """``gpu_check.sh --list``: its wheels, tests and benchmark lines, by kind."""
    out = subprocess.run(["bash", str(GPU_CHECK), "--list"], capture_output=True, text=True, check=True, timeout=30)
    kinds: dict[str, list[str]] = {"wheel": [], "test": [], "benchmark": []}
    for line in out.stdout.splitlines():
        kind, rest = line.split(" ", 1)
        kinds[kind].append(rest)
    return kinds


def dry_run(tmp_path: Path, python: str) -> subprocess.CompletedProcess:
    """``gpu_check.sh`` run in ``tmp_path`` with ``python`` as its PYTHON (and none of its GPU_CHECK_ settings)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_CHECK_")}
    env.update(PYTHON=python, OUT=str(tmp_path / "out"))
    return subprocess.run(["bash", str(GPU_CHECK)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)


# ---------------------------------------------------------------------------- the JSON keys the README documents

README = (ROOT / "README.md").read_text()
DOCUMENTED = set(re.findall(r"`([a-z0-9_]+)`", README)) | {
    k for group in re.findall(r"`\{([a-z0-9_, ]+)\}`", README) for k in group.replace(" ", "").split(",")
}


DATA_KEYED = {"phases"}  # maps whose keys are names from the trace, not part of the schema


def keys_of(value):
    """Every key of a JSON value, nested ones too (but not the keys of a ``DATA_KEYED`` map)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield k
            if k not in DATA_KEYED:
                yield from keys_of(v)
    elif isinstance(value, list):
        for v in value:
            yield from keys_of(v)


# --------------------------------------------------------------------------------- a benchmarks/ script, by path


def load(name: str, path: Path):
    """The script at ``path`` (benchmarks/ is no package) loaded as the module ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module
