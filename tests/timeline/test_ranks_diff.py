"""Before and after folders of rank traces compared rank by rank (gpucost_lab.timeline.ranks_diff.diff_ranks and
`gpucost-lab diff DIR --after DIR`): each rank's figures are those of diff on that rank's pair alone."""

from __future__ import annotations

import json

import pytest

from gpucost_lab import timeline as tl
from gpucost_lab.cli.main import main
from gpucost_lab.simulate.config import SCENARIOS
from gpucost_lab.simulate.write import write_trace

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sides(tmp_path_factory):
    """Two ranks each side: before, the data-loader stall (num_workers=0); after, the healthy loop."""
    root = tmp_path_factory.mktemp("job")
    for side, scenario in (("before", "dataloader_stall"), ("after", "healthy")):
        (root / side).mkdir()
        for rank in (0, 1):
            write_trace(SCENARIOS[scenario], root / side / f"trace_rank{rank}.json.gz")
    return root / "before", root / "after"


def test_each_rank_is_the_diff_of_its_own_pair(sides):
    before, after = sides
    per_rank = tl.diff_ranks(before, after)
    assert list(per_rank) == [0, 1]
    for rank, result in per_rank.items():
        alone = tl.diff(before / f"trace_rank{rank}.json.gz", after / f"trace_rank{rank}.json.gz")
        assert result.to_dict() == alone.to_dict()
        step = next(line for line in result.lines if line.metric == "step_time")
        assert step.verdict == "better"  # the stall removed: the simulator's step shrinks by its data wait


def test_the_sides_must_hold_the_same_ranks(sides, tmp_path):
    before, _ = sides
    other = tmp_path / "after"
    other.mkdir()
    write_trace(SCENARIOS["healthy"], other / "trace_rank0.json.gz")
    with pytest.raises(ValueError, match=r"same ranks; only before: \[1\], only after: \[\]"):
        tl.diff_ranks(before, other)


def test_the_cli_compares_two_folders_rank_by_rank(capsys, sides):
    before, after = sides
    assert main(["diff", str(before), "--after", str(after), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["rank"] for r in out["ranks"]] == [0, 1]
    assert main(["diff", str(before), "--after", str(after)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("rank 0:\n") and "\n\nrank 1:\n" in text
