"""Release the result (chapter 06): the release report, in Markdown or self-contained HTML.

A report states everything its numbers depend on (hardware, software, shapes, precision, seed, how
throughput was measured, the assumed price per accelerator-hour), the per-run results with their 95%
intervals, the quality parity, and the gate's decision with every check's outcome and the fallback. Each run is
a :class:`~gpucost_lab.release.candidate.CandidateResult`, the record the gate judged.

Both formats are built from the same rows, so a value reads the same in each; one format per quantity
(:mod:`gpucost_lab.formatting`):

- a quantity with an interval: 4 significant digits for its value (a geometric mean), its bounds to the same decimals
  (``"10,000 samples/s (95% CI 7,516 to 12,484)"``), and baseline and candidate in one row to the same
  decimals (``"1.0000"`` beside ``"0.8000"``); values below 0.001 or from 10^9 up in scientific
  notation, 4 significant digits each (``"1.100e-07 USD (95% CI 8.516e-08 to 1.348e-07)"``);
- memory: decimal units and the exact bytes (``"25.1 GB (25,100,000,000 bytes)"``);
- money is written ``USD``, never ``$`` (Jupyter reads ``$...$`` as mathematics).

Markdown escapes what would otherwise be read as markup (a model named ``<script>`` stays text);
HTML escapes every value and loads nothing from outside the file.
"""

from __future__ import annotations

import html
import os
import re
from dataclasses import dataclass
from pathlib import Path

from gpucost_lab._validate import InputError, non_empty_text, output_file, positive
from gpucost_lab.atomic import Pending, atomic_write_text, prepare
from gpucost_lab.formatting import format_estimates, format_memory, format_ratio, format_steps
from gpucost_lab.measure.contract import BenchmarkContract
from gpucost_lab.release.candidate import CandidateResult
from gpucost_lab.release.gate import Decision
from gpucost_lab.stats import Estimate

REPORT_SUFFIXES = (".md", ".html", ".htm")


@dataclass(frozen=True)
class ReportData:
    """Everything a release report states."""

    title: str  # the report's heading
    contract: BenchmarkContract  # the baseline's contract: hardware, software, shapes, precision, seed
    throughput_method: str  # e.g. "synchronized timing, 5 repeats x 20 steps, Student-t 95% CI"
    price_per_hour_usd: float  # the assumed price of one accelerator-hour
    baseline: CandidateResult  # the configuration compared against, with the report's fields given
    candidate: CandidateResult  # the configuration under test, with the report's fields given
    decision: Decision  # the gate's decision on this candidate against this baseline
    candidate_contract: BenchmarkContract | None = None  # the candidate's, when it changed allowed fields
    quality_target: str | None = None  # e.g. "validation accuracy >= 0.90"

    def __post_init__(self) -> None:
        non_empty_text("title", self.title)
        non_empty_text("throughput_method", self.throughput_method)
        positive("price_per_hour_usd", self.price_per_hour_usd)
        for name in ("contract", "candidate_contract"):
            value = getattr(self, name)
            if not isinstance(value, BenchmarkContract) and not (name == "candidate_contract" and value is None):
                raise InputError(name, f"{name} must be a BenchmarkContract, got {type(value).__name__}")
        if self.contract.counted_unit != "samples":
            raise InputError(
                "contract.counted_unit",
                f"contract.counted_unit must be 'samples' for a report in samples, got {self.contract.counted_unit!r}",
            )
        for name in ("baseline", "candidate"):
            if not isinstance(getattr(self, name), CandidateResult):
                raise InputError(name, f"{name} must be a CandidateResult, got {type(getattr(self, name)).__name__}")
            getattr(self, name).require_report_fields(name)
        if not isinstance(self.decision, Decision):
            raise InputError("decision", f"decision must be a Decision, got {type(self.decision).__name__}")
        if (self.decision.baseline, self.decision.candidate) != (self.baseline.name, self.candidate.name):
            raise InputError(
                "decision",
                f"decision must be about baseline {self.baseline.name!r} and candidate "
                f"{self.candidate.name!r}, got {self.decision.baseline!r} and {self.decision.candidate!r}",
            )
        if self.quality_target is not None:
            non_empty_text("quality_target", self.quality_target)


# --------------------------------------------------------------------------------------------------
# the rows both formats render


@dataclass(frozen=True)
class _Table:
    heading: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def _headline(data: ReportData) -> str:
    d = data.decision
    if d.promoted:
        return f"Decision: promote {d.candidate}; {d.to} is now in production."
    return f"Decision: fall back to {d.to}; {d.candidate} is not released."


def _decision_table(d: Decision) -> _Table:
    if d.cost_ratio is None or d.cost_ratio_ci95 is None:  # a Decision has both or neither
        ratio = "not compared: the contracts differ"
    else:
        low, high = d.cost_ratio_ci95
        ratio = f"{format_ratio(d.cost_ratio)} (95% CI {format_ratio(low)} to {format_ratio(high)})"
    return _Table(
        "Decision",
        ("item", "value"),
        (
            ("action", d.action),
            ("in production now", d.to),
            ("candidate", d.candidate),
            ("baseline", d.baseline),
            ("fallback when the candidate is unsafe", d.fallback),
            ("cost to target, candidate / baseline", ratio),
        ),
    )


def _checks_table(d: Decision) -> _Table:
    return _Table(
        "Checks",
        ("check", "result", "reason"),
        tuple((name, "passed" if d.checks[name] else "FAILED", reason) for name, reason in zip(d.checks, d.reasons)),
    )


def _contract_table(c: BenchmarkContract, candidate_contract: BenchmarkContract | None) -> _Table:
    shapes = ", ".join(" x ".join(str(n) for n in s) for s in c.input_shapes) or "none"
    rows = [
        ("hardware", "CPU", c.cpu_model),
        ("hardware", "CPU cores", str(c.cpu_cores)),
        ("hardware", "GPU", c.gpu_name or "none (CPU only)"),
        ("hardware", "GPU memory", "none" if c.gpu_memory_bytes is None else format_memory(c.gpu_memory_bytes)),
        ("software", "Python", c.python_version),
        ("software", "torch", c.torch_version),
        ("software", "CUDA", c.cuda_version or "none (CPU build)"),
        ("software", "threads", str(c.threads)),
        ("software", "CUDA float32 math (TF32 or IEEE)", f"matmuls {c.float32_matmul}, convolutions {c.float32_conv}"),
        ("workload", "device", c.device),
        ("workload", "model", c.model_name),
        ("workload", "parameters", f"{c.parameter_count:,}"),
        ("workload", "input shapes", shapes),
        ("workload", "precision", c.dtype),
        ("workload", "seed", str(c.seed)),
        ("workload", "warm-up steps", str(c.warmup_steps)),
        ("workload", "measured steps per repeat", str(c.measured_steps)),
        ("workload", "repeats", str(c.repeats)),
        ("workload", "synchronization", c.sync_method),
        ("workload", "counted unit", f"{c.counted_unit}, {c.units_per_step:,} per step"),
        ("workload", "contract fingerprint", c.fingerprint),
    ]
    if candidate_contract is not None:
        changes = c.diff(candidate_contract)
        said = "; ".join(f"{ch.field}: {ch.before!r} -> {ch.after!r}" for ch in changes) or "none"
        rows.append(("candidate", "changed in the candidate's contract", said))
    return _Table("Benchmark contract", ("group", "field", "value"), tuple(rows))


def _method_table(data: ReportData) -> _Table:
    method = [
        ("throughput method", data.throughput_method),
        (
            "price per accelerator-hour",
            f"{data.price_per_hour_usd:,.2f} USD: an assumption, not a measurement; every cost here scales with it",
        ),
    ]
    if data.quality_target is not None:
        method.append(("quality target", data.quality_target))
    return _Table("Method and assumptions", ("item", "value"), tuple(method))


def _shown(result: CandidateResult) -> tuple[Estimate, Estimate, float]:
    """The fields only a report reads (throughput, cost per sample, steps to target); ReportData made sure of them."""
    samples_per_s, cost_per_sample, steps = result.samples_per_s, result.cost_per_sample_usd, result.steps_to_target
    assert samples_per_s is not None and cost_per_sample is not None and steps is not None
    return samples_per_s, cost_per_sample, steps


def _results_table(b: CandidateResult, k: CandidateResult) -> _Table:
    (b_rate, b_cost, b_steps), (k_rate, k_cost, k_steps) = _shown(b), _shown(k)
    return _Table(
        "Results",
        ("measure", f"baseline: {b.name}", f"candidate: {k.name}"),
        (
            ("throughput", *format_estimates([b_rate, k_rate], "samples/s")),
            ("cost per sample", *format_estimates([b_cost, k_cost], "USD")),
            ("peak memory", format_memory(b.peak_memory_bytes), format_memory(k.peak_memory_bytes)),
            ("steps to target", format_steps(b_steps), format_steps(k_steps)),
            ("cost to target", *format_estimates([b.cost_to_target_usd, k.cost_to_target_usd], "USD")),
            ("quality parity", b.parity, k.parity),
        ),
    )


def _tables(data: ReportData) -> list[_Table]:
    return [
        _decision_table(data.decision),
        _checks_table(data.decision),
        _contract_table(data.contract, data.candidate_contract),
        _method_table(data),
        _results_table(data.baseline, data.candidate),
    ]


# --------------------------------------------------------------------------------------------------
# Markdown


_MD_ALWAYS = re.compile(r"([\\`*_\[\]|~])")
_MD_TAG = re.compile(r"<(?=[A-Za-z/!?])")  # would open an HTML tag or an autolink
_MD_ENTITY = re.compile(r"&(?=[A-Za-z#])")  # would start an entity such as &lt;


def _md(text: str) -> str:
    """Escape ``text`` so that Markdown shows it as typed, on one line (safe in a table cell)."""
    text = " ".join(str(text).split())
    text = _MD_ALWAYS.sub(r"\\\1", text)
    text = _MD_TAG.sub(r"\\<", text)
    return _MD_ENTITY.sub(r"\\&", text)


def render_markdown(data: ReportData) -> str:
    """The report as GitHub-flavoured Markdown."""
    if not isinstance(data, ReportData):
        raise InputError("data", f"data must be a ReportData, got {type(data).__name__}")
    lines = [f"# {_md(data.title)}", "", f"**{_md(_headline(data))}**", ""]
    for table in _tables(data):
        lines += [
            f"## {_md(table.heading)}",
            "",
            "| " + " | ".join(_md(h) for h in table.header) + " |",
            "|" + "|".join(" --- " for _ in table.header) + "|",
        ]
        lines += ["| " + " | ".join(_md(cell) for cell in row) + " |" for row in table.rows]
        lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# HTML

_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #1a1a1a; }
table { border-collapse: collapse; margin: 0.5rem 0 1.5rem; }
th, td { border: 1px solid #bbb; padding: 0.3rem 0.6rem; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
.headline { font-weight: bold; padding: 0.6rem; border-left: 0.4rem solid; }
.promote { border-color: #2e7d32; background: #e8f5e9; }
.fallback { border-color: #c62828; background: #ffebee; }
"""


def _h(text: str) -> str:
    return html.escape(str(text), quote=True)


def render_html(data: ReportData) -> str:
    """The report as one self-contained HTML page: inline style, no scripts, nothing loaded from outside."""
    if not isinstance(data, ReportData):
        raise InputError("data", f"data must be a ReportData, got {type(data).__name__}")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f"<title>{_h(data.title)}</title>",
        f"<style>{_STYLE}</style>",
        "</head>",
        "<body>",
        f"<h1>{_h(data.title)}</h1>",
        f'<p class="headline {_h(data.decision.action)}">{_h(_headline(data))}</p>',
    ]
    for table in _tables(data):
        parts += [
            f"<h2>{_h(table.heading)}</h2>",
            "<table>",
            "<thead><tr>" + "".join(f'<th scope="col">{_h(h)}</th>' for h in table.header) + "</tr></thead>",
            "<tbody>",
        ]
        parts += ["<tr>" + "".join(f"<td>{_h(cell)}</td>" for cell in row) + "</tr>" for row in table.rows]
        parts += ["</tbody>", "</table>"]
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)


def report_path(path: str | os.PathLike, name: str = "path") -> Path:
    """``path`` as a Path if a report can be written there (ValueError naming ``name`` if not): a suffix of
    :data:`REPORT_SUFFIXES`, and see :func:`~gpucost_lab._validate.output_file`."""
    if Path(path).suffix.lower() not in REPORT_SUFFIXES:
        raise InputError(name, f"{name} must end with one of {', '.join(REPORT_SUFFIXES)}, got {str(path)!r}")
    return output_file(name, path)


def write_report(data: ReportData, path: str | os.PathLike) -> Path:
    """Write the report atomically: Markdown for ``.md``, HTML for ``.html`` or ``.htm``. Returns the path."""
    path = report_path(path)
    text = render_markdown(data) if path.suffix.lower() == ".md" else render_html(data)
    return atomic_write_text(path, text)


def write_report_pending(data: ReportData, path: str | os.PathLike) -> Pending:
    """:func:`write_report` up to the rename: the report in its temporary file, put in place by ``.commit()``
    (:class:`~gpucost_lab.atomic.Pending`), for a report written together with another file."""
    path = report_path(path)
    text = render_markdown(data) if path.suffix.lower() == ".md" else render_html(data)
    return prepare(path, lambda f: f.write(text), "x", encoding="utf-8", newline="\n")


__all__ = [
    "REPORT_SUFFIXES",
    "ReportData",
    "render_html",
    "render_markdown",
    "report_path",
    "write_report_pending",
    "write_report",
]
