"""Per-phase percentiles of the server's request records (chapter 08, "Profile the service"): which phase holds the
tail.

:func:`phase_percentiles` takes the records of ``Service.phases()`` (a column per phase of
:data:`gpucost_lab.serve.app.PHASE_FIELDS`, in ms) and gives one row per phase: each quantile's value and its
distribution-free 95% interval (``percentiles.latency_percentiles``: LoadGen's order statistic, Conover's interval),
and how far the tail stands above the middle, ``p99_over_p50``. An end the records cannot bound (too few requests
for the tail) is NaN, as is every figure of a table made from no records. :func:`noisiest_phase` names the phase
whose p99 stands furthest above its p50 in milliseconds: where a stall or a pause sits, the tail of one phase moves
while its middle does not.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from gpucost_lab._validate import InputError, fraction
from gpucost_lab.serve.app import PHASE_FIELDS
from gpucost_lab.serve.percentiles import DEFAULT_QUANTILES, latency_percentiles, quantile_name

PHASES = tuple(field.removesuffix("_ms") for field in PHASE_FIELDS)
TABLE_QUANTILES = (0.5, 0.99)


def _quantile_names(quantiles: object) -> list[str]:
    if isinstance(quantiles, (str, bytes)) or not isinstance(quantiles, Sequence) or not quantiles:
        raise InputError("quantiles", f"quantiles must be a non-empty sequence of numbers in (0, 1), got {quantiles!r}")
    checked = sorted(fraction(f"quantiles[{i}]", q, include_zero=False) for i, q in enumerate(quantiles))
    names = [quantile_name(q) for q in checked]
    if len(set(names)) != len(names):
        raise InputError("quantiles", f"quantiles must not repeat, got {list(quantiles)!r}")
    return names


def _column(phases: pd.DataFrame, field: str) -> list[float]:
    """The ``field`` column as floats, refused unless every value is a finite number of ms >= 0."""
    values = pd.to_numeric(phases[field], errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(~np.isfinite(values) | (values < 0))
    if bad.size:
        row = phases.index[bad[0]]
        raise InputError(
            f"phases[{field!r}]",
            f"phases[{field!r}] must hold finite milliseconds >= 0, got {phases[field].iloc[bad[0]]!r} at row {row!r}",
        )
    return values.tolist()


def phase_percentiles(phases: pd.DataFrame, quantiles: Sequence[float] = TABLE_QUANTILES) -> pd.DataFrame:
    """One row per phase (index ``phase``: ``receive_decode``, ``preprocess``, ``queue``, ``model``,
    ``serialize``, ``send``), for each quantile (ascending) the columns ``pNN_ms``, ``pNN_ci95_low`` and
    ``pNN_ci95_high`` (NaN for an end too few requests bound), then the highest quantile's value over the lowest's
    (``p99_over_p50`` by default; NaN where the lower is 0). ``phases``: records with a column per
    :data:`~gpucost_lab.serve.app.PHASE_FIELDS` (others are ignored), as ``Service.phases()`` gives them."""
    if not isinstance(phases, pd.DataFrame):
        raise InputError("phases", f"phases must be a DataFrame of phase records, got {type(phases).__name__}")
    missing = [field for field in PHASE_FIELDS if field not in phases.columns]
    if missing:
        raise InputError("phases", f"phases must have the columns {list(PHASE_FIELDS)}; missing {missing}")
    names = _quantile_names(quantiles)
    columns = [f"{name}_{part}" for name in names for part in ("ms", "ci95_low", "ci95_high")]
    ratio = f"{names[-1]}_over_{names[0]}" if len(names) > 1 else None
    rows = []
    for field in PHASE_FIELDS:
        values = _column(phases, field)
        row = dict.fromkeys(columns, math.nan)
        if values:
            figures = latency_percentiles(values, sorted(float(q) for q in quantiles))
            for name, p in figures.items():
                row[f"{name}_ms"] = p.value
                row[f"{name}_ci95_low"] = p.ci95_low if p.low_rank is not None else math.nan
                row[f"{name}_ci95_high"] = p.ci95_high if p.high_rank is not None else math.nan
        if ratio is not None:
            low, high = row[f"{names[0]}_ms"], row[f"{names[-1]}_ms"]
            row[ratio] = high / low if low > 0 else math.nan
        rows.append(row)
    table = pd.DataFrame(rows, index=pd.Index(PHASES, name="phase"))
    return table[columns + ([ratio] if ratio is not None else [])]


def noisiest_phase(table: pd.DataFrame) -> str:
    """The service phase (a row of :func:`phase_percentiles`' table other than ``queue``) whose p99 stands furthest
    above its own p50, as a ratio (``p99_over_p50``): a noisy phase, not merely a slow one. A slow phase has a high
    p50 too, and on an overloaded machine every phase's spread in ms grows with its time; the ratio does not. The
    queue is left out: its swings are the wait behind other requests' phases, an effect and not a cause (a request
    queued behind a stalled one waits for the stall). Phases with a p50 of 0 have no ratio and are left out too."""
    if not isinstance(table, pd.DataFrame) or "p99_over_p50" not in table.columns:
        raise InputError("table", "table must be phase_percentiles' table with the column p99_over_p50")
    ratio = table["p99_over_p50"].drop(index="queue", errors="ignore").dropna()
    if ratio.empty:
        raise InputError("table", "table must hold at least one phase with a p50 above 0 and a p99 (it has none)")
    return str(ratio.idxmax())


def percentiles_json(table: pd.DataFrame, quantiles: Sequence[float] = DEFAULT_QUANTILES) -> dict[str, dict | None]:
    """The table as the serve-bench command's JSON: per phase ``{pNN: {value, ci95_low, ci95_high, verdict}}`` (an
    unbounded end None, "bounded" when both ends are), or None for a phase without records."""
    names = _quantile_names(quantiles)
    out: dict[str, dict | None] = {}
    for phase, row in table.iterrows():
        if all(math.isnan(row[f"{name}_ms"]) for name in names):
            out[str(phase)] = None
            continue
        figures = {}
        for name in names:
            low, high = row[f"{name}_ci95_low"], row[f"{name}_ci95_high"]
            figures[name] = {
                "value": float(row[f"{name}_ms"]),
                "ci95_low": None if math.isnan(low) else float(low),
                "ci95_high": None if math.isnan(high) else float(high),
                "verdict": "bounded" if not (math.isnan(low) or math.isnan(high)) else "inconclusive",
            }
        out[str(phase)] = figures
    return out
