"""gpucost_lab.timeline.weight_upload: the A100 AlexNet trace's host-to-device copies are the one-time upload of the
weights (chapter 02, section 5), against the hand count of torchvision's AlexNet (tests/timeline/helpers.py,
``ALEXNET_TENSORS``: 16 float32 tensors, 61,100,840 parameters, 244,403,360 bytes).
"""

from __future__ import annotations

import pytest
from torch import nn

from gpucost_lab import InputError
from gpucost_lab.timeline.weight_upload import alexnet, weight_copies

from .helpers import ALEXNET_TENSORS


@pytest.fixture(scope="module")
def trace(real_traces):
    return real_traces["a100_alexnet_train"]


def test_the_model_is_torchvision_s_alexnet_by_hand():
    model = alexnet()
    assert [p.numel() for p in model.parameters()] == ALEXNET_TENSORS
    assert sum(ALEXNET_TENSORS) == 61_100_840
    assert all(p.is_meta for p in model.parameters())  # nothing allocated


def test_each_copy_is_one_weight_tensor_in_order_inside_the_upload_annotation(trace):
    table = weight_copies(trace, alexnet())
    assert list(table["bytes"]) == [4 * n for n in ALEXNET_TENSORS]
    assert table["same_bytes"].all()
    assert set(table["copy"]) == {"Memcpy HtoD (Pageable -> Device)"}
    assert set(table["annotation"]) == {"[param|cuda]"}  # the benchmark's "move the model to cuda" phase
    assert list(table["parameter"][:2]) == ["features.0.weight", "features.0.bias"]


def test_a_model_that_is_not_the_trace_s_does_not_match(trace):
    table = weight_copies(trace, nn.Linear(4, 2))
    assert not table["same_bytes"].any()
    assert list(table["parameter"][:2]) == ["weight", "bias"] and table["parameter"].iloc[2] == ""


def test_bad_input_names_the_field(trace):
    with pytest.raises(InputError) as err:
        weight_copies("trace.json", alexnet())
    assert err.value.field == "trace"
    with pytest.raises(InputError) as err:
        weight_copies(trace, "alexnet")
    assert err.value.field == "model"
