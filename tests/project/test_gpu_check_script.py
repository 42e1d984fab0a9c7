"""benchmarks/gpu_check.sh, the check for a CUDA machine, on this CPU machine: its dry run and its lists.

Without CUDA the check stops at once in one line on stderr with exit status 2; the tests and benchmark scripts it
names exist; the wheels it brings are exactly what its code imports beyond the GPU machine's own packages.
"""

import importlib.util
import json
import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_check.sh"
# what the GPU machine has installed (the script's header): these and everything they require
ON_GPU_MACHINE = ("torch", "numpy", "pandas", "scipy", "matplotlib", "pytest")

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="the dry run is for a machine without CUDA")


def listed() -> dict[str, list[str]]:
    """``gpu_check.sh --list``: its wheels, tests and benchmark lines, by kind."""
    out = subprocess.run(["bash", str(SCRIPT), "--list"], capture_output=True, text=True, check=True, timeout=30)
    kinds: dict[str, list[str]] = {"wheel": [], "test": [], "benchmark": []}
    for line in out.stdout.splitlines():
        kind, rest = line.split(" ", 1)
        kinds[kind].append(rest)
    return kinds


def dry_run(tmp_path: Path, python: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_CHECK_")}
    env.update(PYTHON=python, OUT=str(tmp_path / "out"))
    return subprocess.run(["bash", str(SCRIPT)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)


@pytest.mark.slow  # a fresh process that imports torch, or a long computation: `make test` runs it
@no_cuda
def test_without_cuda_the_check_says_so_in_one_line_and_exits_2(tmp_path):
    proc = dry_run(tmp_path, sys.executable)  # torch imports here, and sees no CUDA device
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("gpu_check: no CUDA device") and sys.executable in lines[0]
    assert proc.stdout == ""
    assert not (tmp_path / "out").exists()  # nothing measured, nothing written


def test_an_interpreter_without_torch_is_the_same_one_line(tmp_path):
    fake = tmp_path / "python-without-torch"
    fake.write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'torch'\" >&2\nexit 1\n")
    fake.chmod(0o755)
    proc = dry_run(tmp_path, str(fake))
    assert proc.returncode == 2
    assert len(proc.stderr.splitlines()) == 1 and "no CUDA device" in proc.stderr
    assert "ModuleNotFoundError" not in proc.stderr  # the interpreter's own complaint is not a second line


def test_an_unknown_option_is_a_usage_error():
    proc = subprocess.run(["bash", str(SCRIPT), "--everything"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and proc.stderr.startswith("usage: ")


def test_the_lists_name_tests_and_benchmarks_that_exist():
    kinds = listed()
    assert "tests/project/test_gpu.py" in kinds["test"]
    for test in kinds["test"]:
        path, _, name = test.partition("::")
        assert (ROOT / path).is_file(), test
        if name:
            source = (ROOT / path).read_text(encoding="utf-8")
            assert re.search(rf"^def {re.escape(name)}\(", source, re.M), f"{test}: no such test function"
            body = source[source.index(f"def {name}(") :].split("\ndef ", 1)[0]
            assert "cuda" in body, f"{test}: not a CUDA test"
    names = []
    for line in kinds["benchmark"]:
        name, limit, *args = line.split()
        names.append(name)
        assert name.startswith("gpu_") and int(limit) > 0, line
        if args[0] == "-m":
            assert (ROOT / args[1] / "__main__.py").is_file(), line
        else:
            assert args[0].startswith("benchmarks/") and (ROOT / args[0]).is_file(), line
    assert len(set(names)) == len(names) == len(kinds["benchmark"])
    # every new GPU benchmark helper is run by the check (gpu_record.py runs the steps, gpu_figures.py renders)
    helpers = {p.name for p in (ROOT / "benchmarks").glob("gpu_*.py")} - {"gpu_record.py", "gpu_figures.py"}
    run = {Path(line.split()[2]).name for line in kinds["benchmark"]}
    assert helpers <= run


def test_the_cuda_tests_carry_the_gpu_marker_that_pyproject_declares():
    assert re.search(r'^\s*"gpu: ', (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M)
    spec = importlib.util.spec_from_file_location("gpu_tests_for_markers", ROOT / "tests" / "project" / "test_gpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert "gpu" in [mark.name for mark in module.pytestmark]


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _required_by(names) -> set[str]:
    """The distributions ``names`` are and require (recursively, extras left out), as installed here."""
    seen, todo = set(), [_canonical(n) for n in names]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        todo += [_canonical(re.match(r"[A-Za-z0-9._-]+", r).group()) for r in requires if "extra ==" not in r]
    return seen


PROBE = r"""
import importlib.util, json, sys
from importlib import metadata
root, machine, files = sys.argv[1], sys.argv[2].split(","), sys.argv[3:]
for name in machine:
    __import__(name)
before = set(sys.modules)
sys.path[:0] = [root, root + "/benchmarks", root + "/tests"]
import gpucost_lab.cli.main  # `python3 -m gpucost_lab profile-to-cost`
for i, path in enumerate(files):
    relative = path[len(root) + 1:].split("/")
    if relative[0] == "tests" and len(relative) == 3:  # tests/<package>/test_x.py, as pytest imports it
        importlib.import_module(f"{relative[1]}.{relative[2][:-3]}")
        continue
    spec = importlib.util.spec_from_file_location(f"_probe_{i}", path)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
dists = metadata.packages_distributions()
new = {m.split(".")[0] for m in set(sys.modules) - before}
print(json.dumps(sorted({d for m in new for d in dists.get(m, [])})))
"""


@pytest.mark.slow
def test_the_wheels_are_what_the_check_imports_beyond_the_gpu_machines_packages():
    kinds = listed()
    files = [ROOT / "tests" / "conftest.py"]
    files += [ROOT / t.partition("::")[0] for t in kinds["test"]]
    files += [ROOT / line.split()[2] for line in kinds["benchmark"] if line.split()[2] != "-m"]
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(ROOT), ",".join(ON_GPU_MACHINE), *map(str, dict.fromkeys(files))],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    imported = {_canonical(d) for d in json.loads(out.stdout.splitlines()[-1])} - {"gpucost-lab"}
    wheels = {_canonical(w.split("==")[0]) for w in kinds["wheel"]}
    assert imported - _required_by(ON_GPU_MACHINE) == wheels  # each one needed, none missing
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+==[0-9][A-Za-z0-9.]*", w) for w in kinds["wheel"])  # pinned
