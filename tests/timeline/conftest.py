"""Fixtures shared by the tests of gpucost_lab.timeline."""

from __future__ import annotations

import pytest

from gpucost_lab import timeline as tl


@pytest.fixture(scope="module")
def real_traces():
    """The course's real traces (:data:`gpucost_lab.timeline.EXAMPLE_TRACES`), loaded once per test module."""
    return {name: tl.load_trace(tl.example_trace(name)) for name in tl.EXAMPLE_TRACES}
