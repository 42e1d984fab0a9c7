"""gpucost_lab.timeline.readable: a view's table made readable, against the widest gap of the AlexNet trace read by
hand from the file and a small table written here.
"""

from __future__ import annotations

from gpucost_lab.timeline import example_trace


def test_readable_tables_measure_from_the_trace_s_start_and_keep_the_source_table(tmp_path):
    import pandas as pd

    from gpucost_lab.timeline import gaps, load_trace
    from gpucost_lab.timeline.readable import readable

    trace = load_trace(example_trace("a100_alexnet_train"))
    table = gaps(trace, top=1)
    shown = readable(table, trace)
    # the widest gap by hand from the file: it starts 31,366,717 us after the first event and lasts 10,033,725 us;
    # it is rank 1, the table's index (the readable table keeps it)
    assert list(shown.index) == [1] and shown.index.name == "rank"
    assert shown.loc[1, ["start", "duration"]].tolist() == ["31.367 s", "10.034 s"]
    assert shown.loc[1, "after"] == "cask_cudnn::computeOffsetsKernel<…>(…)"
    assert "start_us" in table.columns and table.loc[1, "duration_us"] == 10_033_725.0  # the source is untouched
    small = readable(pd.DataFrame({"name": ["x"], "total_us": [0.4], "share": [0.1234]}))
    assert small.to_dict("records") == [{"name": "x", "total": "<1 µs", "share": "12.3%"}]
