"""The course's two interactive widgets: the memory ledger (chapter 04) and the cost predictor (chapter 03).

Each function returns an ``ipywidgets.VBox`` whose outputs redraw on every change of a control. The
pictures are small HTML/SVG strings, not matplotlib figures, so that a redraw stays within the 30 ms a slider
needs to feel live while dragged; every picture has a text twin beside it: the per-block table for the ledger's
bar, a sentence for the predictor's chart. Invalid inputs show a message in the verdict area; the callback never
raises.

The parts are attributes of the returned box, for tests and for notebooks that want to read them:

- ledger: ``slider``, ``inputs`` (dict), ``precision``, ``recompute`` (none / selective / full),
  ``accumulation`` (K), ``verdict``, ``table``, ``bar``, ``result`` (the latest
  :class:`~gpucost_lab.memory.result.LedgerResult`, ``None`` while an input is invalid), and ``checkpointing``: a
  checkbox that is not displayed, kept for notebooks that tick it (ticked is ``recompute`` "full");
- predictor: ``gain``, ``steps``, ``inputs`` (dict), ``verdict``, ``table``, ``chart``, ``prediction``
  (the latest :func:`~gpucost_lab.cost.predict` dict, ``None`` while an input is invalid).

Every part carries a stable CSS class (``gpucost-ledger-verdict``, ``gpucost-predictor-chart``, ...) so a
browser test can find it. State lives in the box and in closures, never in notebook globals.

The ledger lives in :mod:`gpucost_lab.widgets.ledger` (its outputs in :mod:`~gpucost_lab.widgets.ledger_markup`),
the predictor in :mod:`gpucost_lab.widgets.predictor`, what both share in :mod:`~gpucost_lab.widgets.markup`; the
widgets, their slider ranges and choices are importable from here.
"""

from __future__ import annotations

from gpucost_lab.widgets.ledger import (
    ACCUMULATION_MAX,
    ACCUMULATION_MIN,
    MICROBATCH_MAX,
    MICROBATCH_MIN,
    RECOMPUTE_CHOICES,
    memory_ledger_widget,
    microbatch_slider_max,
)
from gpucost_lab.widgets.predictor import CHANGE_MAX, CHANGE_MIN, cost_predictor_widget

__all__ = [
    "memory_ledger_widget",
    "cost_predictor_widget",
    "microbatch_slider_max",
    "MICROBATCH_MIN",
    "MICROBATCH_MAX",
    "ACCUMULATION_MIN",
    "ACCUMULATION_MAX",
    "RECOMPUTE_CHOICES",
    "CHANGE_MIN",
    "CHANGE_MAX",
]
