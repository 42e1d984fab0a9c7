"""``gpucost-lab plan`` (gpucost_lab.cli.release): every input checked before the plan runs, the registry's errors
naming --registry (the messages json and the registry give, written out), and a decision recorded only when its
write is committed. The plan itself (minutes) is tested in tests/release/test_plan.py.
"""

import json
import os

import pytest

from gpucost_lab.cli.release import FlagRegistry
from gpucost_lab.release.gate import CHECKS, Decision
from gpucost_lab.release.registry import Registry

from .helpers import assert_one_line_naming


@pytest.mark.parametrize(
    "argv,flag",
    [
        (["plan", "--report", "."], "--report"),  # a folder, refused before the plan runs
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, flag):
    assert_one_line_naming(capsys, argv, flag)


def test_a_registry_that_is_not_json_is_refused_before_the_plan_and_left_as_it_was(tmp_path, capsys):
    path = tmp_path / "registry.json"
    path.write_text("not json")
    line = assert_one_line_naming(capsys, ["plan", "--registry", str(path)], "--registry")
    with pytest.raises(json.JSONDecodeError) as caught:
        json.loads("not json")
    assert line == (
        f"gpucost-lab plan: error: --registry: release registry '{path}' is not valid JSON ({caught.value}); it was "
        f"left untouched, restore it from a backup"
    )
    assert path.read_text() == "not json" and os.listdir(tmp_path) == ["registry.json"]


def test_a_json_file_that_is_no_registry_is_refused_naming_the_flag(tmp_path, capsys):
    path = tmp_path / "registry.json"
    path.write_text("[]")
    line = assert_one_line_naming(capsys, ["plan", "--registry", str(path)], "--registry")
    assert line.endswith("must be a JSON object with format 'gpucost-lab release registry', got '[]'")


def test_the_flag_registry_records_only_when_its_write_is_committed(tmp_path):
    path = tmp_path / "registry.json"
    registry = FlagRegistry(str(path))
    decision = Decision("promote", "c", "c", "b", "b", ("ok",) * len(CHECKS), dict.fromkeys(CHECKS, True), None, None)
    entry = registry.record(decision)
    assert entry["decision"]["candidate"] == "c"
    assert not path.exists() and registry.pending is not None  # prepared: waits for the report's write
    registry.pending.commit()
    assert Registry(path).current() == "c" and os.listdir(tmp_path) == ["registry.json"]
