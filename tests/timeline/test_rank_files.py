"""Which files a folder of rank traces holds (gpucost_lab.timeline.rank_files): folders, files and glob patterns, and a
path missing on a cluster's worker naming no file there."""

from __future__ import annotations

import pytest

from gpucost_lab.timeline.rank_files import rank_in_name, trace_files


@pytest.fixture
def nodes(tmp_path):
    """Two nodes' folders of traces, and a file that is not a trace."""
    for node, ranks in (("node-a", (0, 1)), ("node-b", (2,))):
        (tmp_path / node).mkdir()
        for r in ranks:
            (tmp_path / node / f"rank{r}.json").write_text("{}")
    (tmp_path / "node-b" / "notes.txt").write_text("")
    return tmp_path


def test_a_glob_pattern_names_every_match_in_order(nodes):
    files = trace_files(str(nodes / "node-*"))
    assert [f"{f.parent.name}/{f.name}" for f in files] == [
        "node-a/rank0.json",
        "node-a/rank1.json",
        "node-b/rank2.json",
    ]
    assert [f.name for f in trace_files(str(nodes / "node-*" / "rank[12].json"))] == ["rank1.json", "rank2.json"]


def test_a_missing_path_fails_unless_a_worker_may_hold_none(nodes):
    with pytest.raises(ValueError, match="no file or folder matches"):
        trace_files(str(nodes / "node-c*"))
    with pytest.raises(ValueError, match="no such trace file or folder"):
        trace_files(nodes / "node-c")
    assert trace_files([nodes / "node-c", str(nodes / "x*")], missing_ok=True) == []


def test_the_rank_a_name_says():
    assert [rank_in_name(n) for n in ("job_rank12.json", "Rank-3_rank_4.json.gz", "trace.json")] == [12, 4, None]
