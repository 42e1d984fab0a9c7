"""gpucost_lab.timeline.plot's picture rendered: no gap label overlaps the title or another label once the figure is
drawn, and every colour the legend names shows in the picture's pixels (the legend names only what is drawn).
(What is drawn, read off the figure without rendering it: tests/timeline/test_plot.py.)
"""

import matplotlib
import pytest

matplotlib.use("Agg")

from gpucost_lab.simulate.config import SCENARIOS  # noqa: E402
from gpucost_lab.timeline.plot import plot_timeline  # noqa: E402

from .helpers import simulated_trace as _trace  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("end_ms,top", [(None, 3), (20, 3), (45, 3), (None, 10), (8, 3)])
def test_no_gap_label_overlaps_the_title_or_another_label(tmp_path, end_ms, top):
    fig = plot_timeline(_trace(tmp_path), end_ms=end_ms, top_gaps=top)
    ax = fig.axes[0]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    title = ax.title.get_window_extent(renderer)
    boxes = [t.get_window_extent(renderer) for t in ax.texts]
    assert boxes, "some gap is labelled"
    for i, box in enumerate(boxes):
        assert not box.overlaps(title), (ax.texts[i].get_text(), box, title)
        assert box.y1 <= ax.get_window_extent(renderer).y1, "labels sit inside the axes, below its top edge"
        for other in boxes[i + 1 :]:
            assert not box.overlaps(other)


def _pixels_of(fig, ax, colour: str) -> int:
    """How many pixels inside ``ax`` are drawn in ``colour`` (within 2 of each 0-255 channel)."""
    import numpy as np

    fig.canvas.draw()
    image = np.asarray(fig.canvas.buffer_rgba())[..., :3].astype(int)
    box = ax.get_window_extent()
    height = image.shape[0]
    inside = image[int(height - box.y1) + 1 : int(height - box.y0) - 1, int(box.x0) + 1 : int(box.x1) - 1]
    target = np.array([round(255 * c) for c in matplotlib.colors.to_rgb(colour)])
    return int((np.abs(inside - target) <= 2).all(axis=-1).sum())


@pytest.mark.parametrize("scenario,end_ms", [("dataloader_stall", 45), ("dataloader_stall", None), ("item_sync", None)])
def test_the_legend_names_only_what_is_drawn_and_every_colour_it_names_is_seen(tmp_path, scenario, end_ms):
    from gpucost_lab.timeline.plot import COLOURS

    trace = _trace(tmp_path, SCENARIOS[scenario])
    fig = plot_timeline(trace, end_ms=end_ms, top_gaps=3)
    ax = fig.axes[0]
    named = [t.get_text() for t in ax.get_legend().get_texts()]
    events = trace.events[trace.events["dur_us"] > 0]
    start_ms = (events["ts_us"] - trace.events["ts_us"].min()) / 1e3
    in_window = events[start_ms < end_ms] if end_ms is not None else events
    assert set(named) == set(in_window["kind"]) & set(COLOURS)  # the kinds with an event in the window
    for kind in named:  # each colour the legend names shows in the picture, not hidden under another kind's bars
        assert _pixels_of(fig, ax, COLOURS[kind]) > 0, kind
