"""``gpucost-lab serve-bench`` given awkward values, found by search (as tests/cli/test_bad_input_property.py searches
the other commands): every value of every flag is accepted within the README's ranges or refused in one line."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucost_lab.serve import instances

from .helpers import Accepted, _flag_values, _options, check_outcome, run_capped

pytestmark = pytest.mark.slow


def test_every_flag_given_an_awkward_value_is_accepted_within_its_range_or_one_line(monkeypatch):
    """As tests/cli/test_bad_input_property.py searches the other commands: any value of any flag is either
    accepted (the command reaches serve_instances, stopped there, with a configuration within the README's ranges)
    or refused in one line with exit status 2."""

    def stop_here(config, instances, **kwargs):
        raise Accepted({"config": config, "instances": instances})

    monkeypatch.setattr(instances, "serve_instances", stop_here)
    options = [a for a in _options("serve-bench") if a.option_strings]

    @st.composite
    def invocations(draw):
        chosen = draw(st.lists(st.sampled_from(options), min_size=1, max_size=3, unique_by=lambda a: a.dest))
        argv = ["serve-bench"]
        for action in chosen:
            value = draw(_flag_values("serve-bench", action))
            argv += [action.option_strings[-1]] if value is None else [action.option_strings[-1], value]
        return [*argv, "--json"]

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(invocations())
    def case(argv):
        code, out, err, accepted = run_capped(argv)
        check_outcome("serve-bench", argv, code, out, err)
        if code == 0:
            assert accepted is not None, (argv, out)
            config = accepted["config"]
            assert 1 <= accepted["instances"] <= instances.MAX_INSTANCES
            assert 1 <= config.max_batch <= 256 and 0 <= config.max_wait_ms <= 1000

    case()
