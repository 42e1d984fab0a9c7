"""The README documents every JSON key the CLI prints, so the documented interface stays true. (``gpucost-lab plan``'s
keys, which take a measured run: tests/project/test_readme_plan.py.)
"""

import json
import re

import pytest

from gpucost_lab.cli.main import main
from gpucost_lab.measure.contract import BenchmarkContract
from gpucost_lab.timeline import example_trace

from .helpers import DOCUMENTED, README, keys_of

FIXTURE = str(example_trace("a100_alexnet_train"))


@pytest.mark.parametrize(
    "argv",
    [
        ["ledger", "--microbatch", "32"],
        ["analyze", FIXTURE],
        [
            "predict",
            "--throughput-gain",
            "0.2",
            "--steps-change",
            "0.25",
            "--baseline-hours",
            "8",
            "--window-hours",
            "9",
        ],
    ],
)
def test_every_cli_json_key_is_in_the_readme(capsys, argv):
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(keys_of(out)) - DOCUMENTED == set()


def test_simulate_keys_are_in_the_readme(capsys, tmp_path):
    assert main(["simulate", "--steps", "2", "-o", str(tmp_path / "t.json"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) - DOCUMENTED == set()
    flags = {"--" + k.replace("_", "-") for k in out["config"]}
    assert {f for f in flags if f not in README} == set()


def test_profile_to_cost_keys_are_in_the_readme():
    # a result assembled by hand (no benchmark run), with a plausibility check present
    from gpucost_lab.course.profile_to_cost import ProfileToCost
    from gpucost_lab.measure.timing import Measurement
    from gpucost_lab.roofline.bound import check_throughput, lookup
    from gpucost_lab.stats import Estimate

    contract = BenchmarkContract.capture(inputs=[(256, 1024)], device="cpu", repeats=2)
    result = ProfileToCost(
        Measurement(contract, (0.1, 0.2)),
        2.10,
        Estimate.of([1.0, 2.0]),
        1,
        "method",
        1,
        [{"name": "aten::mm", "calls": 1, "self_time_s": 0.1, "total_time_s": 0.1, "self_time_share": 1.0}],
        check_throughput(1.0, 1.0, lookup("A10").roofline("float32")),
    )
    out = result.to_dict()
    top_level = set(out) - {"contract"}
    assert top_level - DOCUMENTED == set()
    assert set(keys_of(out["plausibility"])) - DOCUMENTED == set()
    assert set(keys_of(out["top_ops"])) - DOCUMENTED == set()


def test_the_tf32_contract_fields_are_in_the_readme():
    assert {"float32_matmul", "float32_conv"} <= DOCUMENTED
    assert {"float32_matmul", "float32_conv"} <= set(BenchmarkContract.__dataclass_fields__)


def test_the_two_setup_commands_come_first():
    first_block = README.split("```bash", 1)[1].split("```", 1)[0]
    assert re.findall(r"^make (\w+)", first_block, re.M) == ["lab", "test"]
