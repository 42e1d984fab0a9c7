"""gpucost_lab.timeline.readable: a view's table made readable, against the widest gap of the AlexNet trace read by
hand from the file and a small table written here.
"""

from __future__ import annotations

import re

import pytest

from gpucost_lab.timeline import example_trace


def test_readable_tables_measure_from_the_trace_s_start_and_keep_the_source_table(tmp_path):
    import pandas as pd

    from gpucost_lab.timeline import gaps, load_trace
    from gpucost_lab.timeline.readable import readable

    trace = load_trace(example_trace("a100_alexnet_train"))
    table = gaps(trace, top=1)
    shown = readable(table, trace)
    # the widest gap by hand from the file: it starts 31,366,717 us after the first event and lasts 10,033,725 us;
    # it is rank 1, the table's index (the readable table keeps it), under the table's own column names
    cells = shown.cells
    assert list(cells.index) == [1] and cells.index.name == "rank"
    assert list(cells.columns) == list(table.columns)
    assert cells.loc[1, ["start_us", "duration_us"]].tolist() == ["31.37 s", "10.03 s"]  # 4 significant digits
    assert cells.loc[1, "after"] == "cask_cudnn::computeOffsetsKernel<…>(…)"
    assert shown.data.loc[1, "start_us"] == 31_366_717.0  # the offset, in the view's own unit
    assert "start_us" in table.columns and table.loc[1, "duration_us"] == 10_033_725.0  # the source is untouched
    assert re.search(r"^1 +31\.37 s +10\.03 s ", repr(shown), re.M)  # the text twin, one line per row
    small = readable(pd.DataFrame({"name": ["x"], "total_us": [0.4], "share": [0.1234]}))
    # 0.4 us = 400 ns; a share as a percentage with one decimal
    assert small.cells.to_dict("records") == [{"name": "x", "total_us": "400.0 ns", "share": "12.3%"}]


def test_a_table_that_is_not_a_dataframe_is_refused():
    from gpucost_lab._validate import InputError
    from gpucost_lab.timeline.readable import readable

    with pytest.raises(InputError, match="^table must be a pandas DataFrame"):
        readable([1, 2])
