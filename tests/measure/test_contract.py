"""gpucost_lab.measure.contract: the frozen benchmark contract, captured, serialised, fingerprinted and compared
(chapter 01), and the float32 math it records (whether CUDA may run float32 on TF32 tensor cores, issue 13 item 7),
against the running environment and torch's own flags.
"""

import dataclasses
import json
import os
import platform
import subprocess
import sys

import pytest
import torch

from gpucost_lab.measure.contract import BenchmarkContract, ContractMismatch
from gpucost_lab.measure.timing import measure

from .helpers import float32_flags_restored


def test_capture_reads_the_running_environment_and_the_workload():
    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))
    x = torch.randn(32, 16)
    c = BenchmarkContract.capture(
        model=model,
        inputs=[x],
        dtype=torch.bfloat16,
        device="cpu",
        warmup_steps=3,
        measured_steps=7,
        repeats=4,
        seed=11,
    )
    assert c.cpu_cores == os.cpu_count()
    assert c.python_version == platform.python_version()
    assert c.torch_version == torch.__version__
    assert c.threads == torch.get_num_threads()
    assert c.gpu_name is None and c.device == "cpu"
    assert c.parameter_count == (16 * 8 + 8) + (8 * 4 + 4)  # 172
    assert c.input_shapes == ((32, 16),)
    assert c.units_per_step == 32  # the batch dimension, counted in samples
    assert c.dtype == "bfloat16"
    assert (c.warmup_steps, c.measured_steps, c.repeats, c.seed) == (3, 7, 4, 11)


def test_json_round_trip_keeps_value_and_fingerprint(contract):
    c = contract(counted_unit="tokens", units_per_step=256 * 128)
    back = BenchmarkContract.from_json(c.to_json())
    assert back == c
    assert back.fingerprint == c.fingerprint
    assert len(c.fingerprint) == 16 and int(c.fingerprint, 16) >= 0


def test_fingerprint_is_stable_across_processes(contract):
    c = contract()
    code = (
        "import sys; from gpucost_lab.measure.contract import BenchmarkContract; "
        "print(BenchmarkContract.from_json(sys.stdin.read()).fingerprint)"
    )
    out = subprocess.run([sys.executable, "-c", code], input=c.to_json(), capture_output=True, text=True, check=True)
    assert out.stdout.strip() == c.fingerprint


def test_any_changed_field_changes_the_fingerprint(contract):
    c = contract()
    assert dataclasses.replace(c, seed=1).fingerprint != c.fingerprint
    assert dataclasses.replace(c, input_shapes=((128, 1024),)).fingerprint != c.fingerprint


def test_diff_lists_every_changed_field_in_order(contract):
    a = contract()
    b = dataclasses.replace(a, dtype="bfloat16", seed=3, warmup_steps=0)
    assert [(d.field, d.before, d.after) for d in a.diff(b)] == [
        ("dtype", "float32", "bfloat16"),
        ("warmup_steps", 2, 0),
        ("seed", 0, 3),
    ]
    assert a.diff(a) == ()


def test_comparing_across_contracts_names_every_changed_field(contract):
    a = contract()
    b = dataclasses.replace(a, dtype="bfloat16", input_shapes=((128, 1024),))
    with pytest.raises(ContractMismatch) as err:
        a.require_same(b)
    assert "dtype" in str(err.value) and "input_shapes" in str(err.value)
    assert {c.field for c in err.value.changes} == {"dtype", "input_shapes"}


def test_the_change_under_test_can_be_allowed_by_name(contract):
    a = contract()
    a.require_same(dataclasses.replace(a, dtype="bfloat16"), allow=["dtype"])
    with pytest.raises(ContractMismatch, match="seed"):
        a.require_same(dataclasses.replace(a, dtype="bfloat16", seed=5), allow=["dtype"])
    with pytest.raises(ValueError, match="allow"):
        a.require_same(a, allow=["dtpye"])


def test_from_dict_rejects_missing_and_unknown_fields(contract):
    d = contract().to_dict()
    del d["seed"]
    d["colour"] = "blue"
    with pytest.raises(ValueError, match="seed.*colour|missing.*seed"):
        BenchmarkContract.from_dict(d)


@pytest.mark.parametrize(
    "field,value",
    [
        ("repeats", 1),
        ("measured_steps", 0),
        ("warmup_steps", -1),
        ("units_per_step", 0),
        ("counted_unit", "images"),
    ],
)
def test_bad_fields_are_named(contract, field, value):
    with pytest.raises(ValueError, match=field):
        dataclasses.replace(contract(), **{field: value})


def test_unknown_device_is_refused(contract):
    with pytest.raises(ValueError, match="device"):
        contract(device="tpu")


def test_json_is_plain(contract):
    d = json.loads(contract().to_json())
    assert d["input_shapes"] == [[256, 1024]]


# -- the float32 math recorded -----------------------------------------------------------------------------------------
@pytest.fixture
def flags():
    """The float32 precision flags are process-wide: every test that sets one gets all of them back."""
    with float32_flags_restored():
        yield


def test_torch_defaults_are_recorded(flags, contract):
    torch.set_float32_matmul_precision("highest")
    torch.backends.cudnn.allow_tf32 = True
    c = contract()
    assert (c.float32_matmul, c.float32_conv) == ("ieee", "tf32")
    assert c.to_dict()["float32_matmul"] == "ieee"


@pytest.mark.parametrize("precision,recorded", [("highest", "ieee"), ("high", "tf32"), ("medium", "tf32")])
def test_matmul_precision_is_recorded_on_any_device_and_dtype(flags, contract, precision, recorded):
    torch.set_float32_matmul_precision(precision)
    assert torch.backends.cuda.matmul.allow_tf32 == (recorded == "tf32")  # torch keeps the two in step
    assert contract().float32_matmul == recorded
    assert contract(dtype="bfloat16").float32_matmul == recorded


def test_allow_tf32_flags_are_recorded(flags, contract):
    torch.set_float32_matmul_precision("highest")
    torch.backends.cuda.matmul.allow_tf32 = True
    assert torch.get_float32_matmul_precision() == "high"
    torch.backends.cudnn.allow_tf32 = False
    c = contract()
    assert (c.float32_matmul, c.float32_conv) == ("tf32", "ieee")


@pytest.mark.skipif(not hasattr(torch.backends, "fp32_precision"), reason="torch < 2.9 has no fp32_precision")
def test_the_newer_fp32_precision_setting_is_recorded(flags, contract):
    torch.backends.cuda.matmul.fp32_precision = "tf32"
    assert contract().float32_matmul == "tf32"
    torch.backends.cuda.matmul.fp32_precision = "ieee"
    torch.backends.fp32_precision = "tf32"  # the global setting, inherited by cuDNN convolutions
    torch.backends.cudnn.conv.fp32_precision = "none"
    assert contract().float32_conv == "tf32"


def test_a_tf32_change_is_a_contract_change(flags, contract):
    torch.set_float32_matmul_precision("highest")
    off = contract()
    torch.set_float32_matmul_precision("high")
    on = contract()
    assert [c.field for c in off.diff(on)] == ["float32_matmul"]
    assert off.fingerprint != on.fingerprint
    assert BenchmarkContract.from_json(on.to_json()) == on
    with pytest.raises(ContractMismatch, match="float32_matmul: 'ieee' -> 'tf32'"):
        off.require_same(on)
    off.require_same(on, allow=["float32_matmul"])
    # flipping the flag after the contract was frozen: the measurement refuses, naming the field
    with pytest.raises(ContractMismatch, match="float32_matmul"):
        measure(lambda: None, off)


@pytest.mark.parametrize("field,value", [("float32_matmul", "high"), ("float32_conv", True)])
def test_bad_float32_math_values_are_named(contract, field, value):
    with pytest.raises(ValueError, match=field):
        dataclasses.replace(contract(), **{field: value})
