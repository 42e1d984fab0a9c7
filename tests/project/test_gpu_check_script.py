"""benchmarks/gpu_check.sh, the check for a CUDA machine, on this CPU machine: its usage, its dry run with an
interpreter that has no torch, and its lists (the tests and benchmark scripts it names exist, and the CUDA tests carry
the gpu marker). The dry run with this machine's torch and the wheels it brings are
tests/project/test_gpu_check_script_runs.py.
"""

import importlib.util
import re
import subprocess
from pathlib import Path

from .helpers import GPU_CHECK as SCRIPT
from .helpers import ROOT, dry_run, listed


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
