"""gpucost_lab.simulate.write: the trace file, byte-identical for a seed, gzip without a time or a name, refused
suffixes and folders, and the names the package gathers from its modules. (The ground-truth phase totals against
the annotations of the heavy scenario's trace: tests/simulate/test_heavy_scenario.py.)
"""

import dataclasses
import gzip
import json

import pytest

from gpucost_lab.simulate.config import ROOFLINE_EFFICIENCY, SCENARIOS, SimConfig
from gpucost_lab.simulate.trace import TRACE_START_US
from gpucost_lab.simulate.write import write_trace

from .helpers import SMALL


# ----------------------------------------------------------------------------------------------- determinism
@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_same_config_writes_identical_bytes_and_another_seed_does_not(tmp_path, suffix):
    config = SCENARIOS["item_sync"]
    a = write_trace(config, tmp_path / f"a{suffix}").read_bytes()
    b = write_trace(config, tmp_path / f"b{suffix}").read_bytes()
    other = write_trace(dataclasses.replace(config, seed=1), tmp_path / f"c{suffix}").read_bytes()
    assert a == b
    assert a != other
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"a{suffix}", f"b{suffix}", f"c{suffix}"]  # no temp


def test_gzip_has_no_mtime_and_no_file_name_and_holds_the_json(tmp_path):
    gz = write_trace(SMALL, tmp_path / "t.json.gz").read_bytes()
    assert gz[:3] == b"\x1f\x8b\x08"
    assert gz[3] & 0x08 == 0  # FNAME flag unset
    assert gz[4:8] == b"\x00\x00\x00\x00"  # MTIME 0
    assert gzip.decompress(gz) == write_trace(SMALL, tmp_path / "t.json").read_bytes()
    assert json.loads(gzip.decompress(gz))["traceEvents"]


def test_write_trace_rejects_other_suffixes_and_missing_folders(tmp_path):
    with pytest.raises(ValueError, match="path must end with .json or .json.gz"):
        write_trace(SMALL, tmp_path / "trace.txt")
    with pytest.raises(ValueError, match="existing folder"):
        write_trace(SMALL, tmp_path / "missing" / "trace.json")
    path = write_trace(SMALL, str(tmp_path / "trace.json"))
    assert path == tmp_path / "trace.json" and json.loads(path.read_text())["schemaVersion"] == 1


def test_the_package_holds_the_public_names_of_its_modules():
    import gpucost_lab.simulate as package
    from gpucost_lab.simulate import config, run, trace, write

    for module in (config, run, trace, write):
        assert all(getattr(package, name) is getattr(module, name) for name in module.__all__)
    assert sorted(package.__all__) == sorted(n for m in (config, run, trace, write) for n in m.__all__)
    assert ROOFLINE_EFFICIENCY == 0.7 and TRACE_START_US == 1_000_000 and SCENARIOS["healthy"] == SimConfig()
