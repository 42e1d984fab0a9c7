"""The tiers of `make test` (tests/labtools.py ``tier_of``, applied by tests/conftest.py): every kind of test lands
in exactly one, as the Makefile says: the chapters, Chromium and the hub in e2e; the grader and other slow work in
integration; the rest unit."""

from types import SimpleNamespace

import pytest
from labtools import ROOT, TIERS, tier_of


def _item(*kinds):
    return SimpleNamespace(iter_markers=lambda: [SimpleNamespace(name=kind) for kind in kinds])


@pytest.mark.parametrize(
    ("kinds", "tier"),
    [
        ((), "unit"),
        (("gpu",), "unit"),  # skipped without a device: its own script runs it on one
        (("parametrize", "skipif"), "unit"),
        (("slow",), "integration"),
        (("grading",), "integration"),
        (("grading", "slow"), "integration"),
        (("notebook",), "e2e"),
        (("browser",), "e2e"),
        (("grading", "browser"), "e2e"),  # a feedback page opened in Chromium
        (("hub", "grading", "slow"), "e2e"),  # a class on the hub
    ],
)
def test_each_kind_of_test_has_one_tier(kinds, tier):
    assert tier_of(_item(*kinds)) == tier


def test_the_makefile_runs_every_tier():
    makefile = (ROOT / "Makefile").read_text()
    assert all(f"--tier {name}" in makefile for name in TIERS)
    assert "test-unit test-integration test-e2e" in makefile
