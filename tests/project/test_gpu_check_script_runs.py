"""benchmarks/gpu_check.sh on this CPU machine, in fresh processes that import torch and the package: without CUDA
the check stops at once in one line on stderr with exit status 2, and the wheels it brings are exactly what its code
imports beyond the GPU machine's own packages. (Its usage and its lists: tests/project/test_gpu_check_script.py.)
"""

import json
import re
import subprocess
import sys
from importlib import metadata

import pytest
import torch

from .helpers import ROOT, dry_run, listed

pytestmark = pytest.mark.slow


# what the GPU machine has installed (the script's header): these and everything they require
ON_GPU_MACHINE = ("torch", "numpy", "pandas", "scipy", "matplotlib", "pytest")

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="the dry run is for a machine without CUDA")


@no_cuda
def test_without_cuda_the_check_says_so_in_one_line_and_exits_2(tmp_path):
    proc = dry_run(tmp_path, sys.executable)  # torch imports here, and sees no CUDA device
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("gpu_check: no CUDA device") and sys.executable in lines[0]
    assert proc.stdout == ""
    assert not (tmp_path / "out").exists()  # nothing measured, nothing written


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
