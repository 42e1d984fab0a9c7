"""ServeConfig: every knob's range, every bad value an InputError naming its field."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucost_lab._validate import InputError
from gpucost_lab.serve.config import (
    MAX_BATCH_LIMIT,
    MAX_COLD_START_MS,
    MAX_LAYERS,
    MAX_PAUSE_MS,
    MAX_WAIT_MS_LIMIT,
    MAX_WIDTH,
    ServeConfig,
)

BAD = [
    ("max_batch", 0),
    ("max_batch", MAX_BATCH_LIMIT + 1),
    ("max_batch", 2.5),
    ("max_batch", True),
    ("max_wait_ms", -1.0),
    ("max_wait_ms", MAX_WAIT_MS_LIMIT + 1),
    ("max_wait_ms", float("nan")),
    ("max_wait_ms", "5"),
    ("stall", "gc"),
    ("stall", None),
    ("pause_every", 0),
    ("pause_ms", 0.0),
    ("pause_ms", MAX_PAUSE_MS * 2),
    ("pause_ms", float("inf")),
    ("cold_start_ms", -0.5),
    ("cold_start_ms", MAX_COLD_START_MS + 1),
    ("seed", -1),
    ("seed", 2**63),
    ("input_width", 0),
    ("hidden_width", MAX_WIDTH + 1),
    ("layers", 0),
    ("layers", MAX_LAYERS + 1),
    ("output_width", "wide"),
]


@pytest.mark.parametrize(("name", "value"), BAD)
def test_bad_value_names_its_field(name, value):
    with pytest.raises(InputError) as caught:
        ServeConfig(**{name: value})
    assert caught.value.field == name
    assert str(caught.value).startswith(name)
    assert repr(value) in str(caught.value)


def test_defaults_are_a_server_without_batching_or_fault():
    config = ServeConfig()
    assert (config.max_batch, config.stall, config.cold_start_ms) == (1, "none", 0.0)


def test_integral_floats_become_ints_and_frozen():
    config = ServeConfig(max_batch=4.0, max_wait_ms=2)
    assert config.max_batch == 4 and type(config.max_batch) is int
    assert config.max_wait_ms == 2.0 and type(config.max_wait_ms) is float
    with pytest.raises(AttributeError):
        config.max_batch = 8


@given(
    max_batch=st.integers(1, MAX_BATCH_LIMIT),
    max_wait_ms=st.floats(0, MAX_WAIT_MS_LIMIT),
    stall=st.sampled_from(["none", "serialize", "pause"]),
    layers=st.integers(1, MAX_LAYERS),
)
def test_every_value_in_range_is_taken_and_round_trips(max_batch, max_wait_ms, stall, layers):
    config = ServeConfig(max_batch=max_batch, max_wait_ms=max_wait_ms, stall=stall, layers=layers)
    assert ServeConfig(**config.to_dict()) == config
