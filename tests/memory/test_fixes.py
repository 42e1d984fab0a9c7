"""gpucost_lab.memory.fixes (plan_fixes), and the CLI's fix-oom and ledger commands, against hand computations.

The course's case (chapter 04): ledger static 3.2 GB, 0.34 GB/sample (fp32), 24 GB, 10% reserve (budget 21.6 GB),
10 blocks; global batch 60 (largest microbatch 54: does not fit, peak 3.2 + 20.4 = 23.6 GB); baseline 0.1 s per
optimizer step on a device where 60 fits = 600 samples/s; 14.4e6 samples a night = 24,000 s = 6.667 h, 8 h window,
$2.10/h -> baseline night $14.00.

Per fix (precision, recomputation, fewest microbatches that fit):
  fp32, none:      K = ceil(60 / 54) = 2, microbatch 30, peak 3.2 + 0.34 x 30 = 13.4, step x (1 + 0.15) = 1.15
  fp32, selective: per sample 0.034 x (9 x 0.3 + 1) = 0.1258, 60 fits (146 max), peak 3.2 + 7.548 = 10.748, x 1.027
  fp32, full:      per sample 0.034 x (9 x 0.1 + 1) = 0.0646, peak 3.2 + 3.876 = 7.076, x 4/3
  bf16/fp16-mixed, none: 0.17 per sample, 60 fits (108 max), peak 3.2 + 10.2 = 13.4, x 1 (no speed-up credited)
  mixed, selective: peak 3.2 + 0.0629 x 60 = 6.974, x 1.027 (redundant: the mixed precision alone fits)
  mixed, full:      peak 3.2 + 0.0323 x 60 = 5.138, x 4/3 (redundant)
Run hours = 6.667 x factor: x1 6.667, x1.027 6.847, x1.15 7.667 (all inside 8 h), x4/3 8.889 (late).
"""

import json
import re
from pathlib import Path

import pytest

from gpucost_lab.cli.main import main
from gpucost_lab.memory.fixes import plan_fixes
from gpucost_lab.memory.ledger import MemoryLedger

from .helpers import COURSE

CASE = dict(step_time_s=0.1, window_hours=8.0, samples_per_night=14_400_000, price_per_hour_usd=2.10)
BASE_H = 14_400_000 / 600 / 3600  # 6.667 h

# (name, peak GB, step-time factor, fits window, needs parity check, redundant), cheapest first
COURSE_FIXES = [
    ("bf16-mixed", 13.4, 1.0, True, True, False),
    ("fp16-mixed", 13.4, 1.0, True, True, False),
    ("selective recomputation", 10.748, 1.027, True, False, False),
    ("bf16-mixed + selective recomputation", 6.974, 1.027, True, True, True),
    ("fp16-mixed + selective recomputation", 6.974, 1.027, True, True, True),
    ("accumulation x2 (microbatch 30)", 13.4, 1.15, True, False, False),
    ("full recomputation", 7.076, 4 / 3, False, False, False),
    ("bf16-mixed + full recomputation", 5.138, 4 / 3, False, True, True),
    ("fp16-mixed + full recomputation", 5.138, 4 / 3, False, True, True),
]


def test_course_case_baseline():
    plan = plan_fixes(COURSE, 60, **CASE)
    assert plan.baseline_fits is False and plan.max_microbatch == 54
    assert plan.baseline_peak_gb == pytest.approx(23.6) and plan.budget_gb == pytest.approx(21.6)
    assert plan.samples_per_s == pytest.approx(600.0)
    assert plan.baseline_run_hours == pytest.approx(6.6667, abs=1e-4)
    assert plan.baseline_run_cost_usd == pytest.approx(14.0)
    assert plan.baseline_fits_window is True


def test_course_case_fixes_cheapest_first_with_the_window_checked():
    fixes = plan_fixes(COURSE, 60, **CASE).fixes
    assert [f.name for f in fixes] == [row[0] for row in COURSE_FIXES]
    for f, (name, peak, factor, in_window, parity, redundant) in zip(fixes, COURSE_FIXES):
        assert f.peak_gb == pytest.approx(peak), name
        assert f.step_time_factor == pytest.approx(factor) and f.relative_cost == pytest.approx(factor), name
        assert f.run_hours == pytest.approx(BASE_H * factor), name
        assert f.run_cost_usd == pytest.approx(14.0 * factor), name
        assert (f.fits_window, f.needs_parity_check, f.redundant) == (in_window, parity, redundant), name
        assert f.peak_gb <= 21.6
    assert [f.relative_cost for f in fixes] == sorted(f.relative_cost for f in fixes)
    # at least three fixes that keep the arithmetic (no parity check) and add something
    keeps = [f for f in fixes if not f.needs_parity_check and not f.redundant]
    assert [f.name for f in keeps] == [
        "selective recomputation",
        "accumulation x2 (microbatch 30)",
        "full recomputation",
    ]
    # selective recomputation's 70% / 2.7% are a transformer's attention core's (Korthikanti et al. 2022, GPT-3
    # 175B): every fix using them says so, and none other does
    assert [f.name for f in fixes if f.assumes_transformer] == [n for n, *_ in COURSE_FIXES if "selective" in n]
    # the cheapest fix that needs neither a parity check nor a transformer's figures: chapter 04's checkpoint 04.8
    holds = next(f for f in fixes if not f.needs_parity_check and not f.assumes_transformer)
    assert holds.name == "accumulation x2 (microbatch 30)"
    accumulation = fixes[5]
    assert (accumulation.accumulation_steps, accumulation.microbatch) == (2, 30)
    assert accumulation.run_hours == pytest.approx(7.6667, abs=1e-4)  # 6.667 x 1.15
    assert accumulation.window_margin_hours == pytest.approx(8 - 7.6667, abs=1e-4)
    assert accumulation.run_cost_usd == pytest.approx(16.10)  # 14.00 x 1.15
    assert fixes[6].run_hours == pytest.approx(8.8889, abs=1e-4)  # 6.667 x 4/3: late by 0.889 h


def test_the_plan_table_is_numbered_from_1_as_its_text():
    plan = plan_fixes(COURSE, 60, **CASE)
    table = plan.table()
    assert table.index.name == "rank" and list(table.index) == list(range(1, len(COURSE_FIXES) + 1))
    assert list(table["name"]) == [row[0] for row in COURSE_FIXES]
    # the text's " 6. accumulation x2 (microbatch 30)" is the table's row 6
    assert re.search(r"^ 6\. accumulation x2 \(microbatch 30\) ", plan.text(), re.M)
    assert table.loc[6, "name"] == "accumulation x2 (microbatch 30)"


def test_the_shown_table_is_the_plan_table_in_units_with_its_notes():
    plan = plan_fixes(COURSE, 60, **CASE)
    shown = plan.shown()
    assert shown.caption == "9 fixes that fit, cheapest first"
    cells = shown.cells
    assert list(cells.index) == list(range(1, 10)) and list(cells["name"]) == [row[0] for row in COURSE_FIXES]
    # full recomputation (module doc): peak 7.076 GB, step x 4/3 = 1.333, 6.667 x 4/3 = 8.889 h, late,
    # $14.00 x 4/3 = $18.67, no note
    assert cells.loc[7].tolist() == [
        "full recomputation",
        "7.076 GB",
        "1.333",
        "1.333",
        "8.889 h",
        "LATE",
        "$18.67",
        "",
    ]
    assert cells.loc[4, "notes"] == "needs a parity check; assumes a transformer; redundant"
    assert list(cells["fits_window"]).count("in window") == 6  # x1, x1.027 and x1.15 inside 8 h
    line = next(line for line in repr(shown).splitlines() if line.startswith("7 "))
    assert re.match(r"7 +full recomputation +7\.076 GB +1\.333 +1\.333 +8\.889 h +LATE +\$18\.67$", line)
    assert plan.table().loc[7, "fits_window"] == False  # noqa: E712  (the data keeps its flag)


def test_the_summary_is_three_short_lines():
    assert plan_fixes(COURSE, 60, **CASE).summary().splitlines() == [
        "global batch 60: peak 23.60 GB of a 21.60 GB budget: does NOT fit (largest microbatch 54)",
        "baseline 0.1 s per step = 600 samples/s",
        "a night of 14,400,000 samples takes 6.67 h and costs $14.00 at $2.10/h; the 8 h window holds",
    ]


def test_throughput_instead_of_step_time_gives_the_same_plan():
    by_time = plan_fixes(COURSE, 60, **CASE)
    by_rate = plan_fixes(COURSE, 60, **{**CASE, "step_time_s": None, "samples_per_s": 600.0})
    assert by_rate.step_time_s == pytest.approx(0.1)
    assert [f.name for f in by_rate.fixes] == [f.name for f in by_time.fixes]
    assert [f.run_hours for f in by_rate.fixes] == pytest.approx([f.run_hours for f in by_time.fixes])


def test_a_measured_mixed_precision_speedup_reorders_the_plan():
    # mixed precision at 0.6 of the step: bf16 0.6, bf16 + selective 0.6 x 1.027 = 0.6162, bf16 + full 0.6 x 4/3 = 0.8
    fixes = plan_fixes(COURSE, 60, **CASE, mixed_precision_step_time_factor=0.6).fixes
    assert [round(f.relative_cost, 4) for f in fixes] == [0.6, 0.6, 0.6162, 0.6162, 0.8, 0.8, 1.027, 1.15, 1.3333]
    assert fixes[0].name == "bf16-mixed" and fixes[-1].name == "full recomputation"


def test_global_batch_300_needs_combinations():
    # largest microbatch per (precision, recomputation) -> fewest microbatches K for 300 -> factor
    #   fp32 none 54 -> K 6 (mb 50): 1 + 5 x 0.15 = 1.75       fp32 selective 146 -> K 3 (mb 100): 1.3 x 1.027 = 1.3351
    #   fp32 full 284 -> K 2 (mb 150): 1.15 x 4/3 = 1.5333      mixed none 108 -> K 3 (mb 100): 1.3
    #   mixed selective: 0.017 x 3.7 = 0.0629/sample -> floor(18.4 / 0.0629) = 292 -> K 2 (mb 150): 1.15 x 1.027
    #     = 1.18105 (1.181 to 4 places: the float lies just under the 5)
    #   mixed full: 0.017 x 1.9 = 0.0323/sample -> 569 -> K 1: 4/3
    fixes = plan_fixes(COURSE, 300, **CASE).fixes
    got = [(f.precision, f.recomputation, f.accumulation_steps, f.microbatch, round(f.relative_cost, 4)) for f in fixes]
    assert got == [
        ("bf16-mixed", "selective", 2, 150, 1.181),
        ("fp16-mixed", "selective", 2, 150, 1.181),
        ("bf16-mixed", "none", 3, 100, 1.3),
        ("fp16-mixed", "none", 3, 100, 1.3),
        ("bf16-mixed", "full", 1, 300, 1.3333),
        ("fp16-mixed", "full", 1, 300, 1.3333),
        ("fp32", "selective", 3, 100, 1.3351),
        ("fp32", "full", 2, 150, 1.5333),
        ("fp32", "none", 6, 50, 1.75),
    ]
    assert not any(f.redundant for f in fixes)  # each one's changes are all needed at 300
    assert fixes[0].peak_gb == pytest.approx(3.2 + 0.0629 * 150)  # 12.635
    # baseline night at 300 per 0.1 s = 3,000 samples/s: 14.4e6 / 3000 = 4,800 s = 1.333 h; every fix fits 8 h
    assert all(f.fits_window for f in fixes)


def test_a_batch_that_fits_lists_as_is_first_and_the_rest_as_redundant():
    plan = plan_fixes(COURSE, 40, **CASE)  # 3.2 + 13.6 = 16.8 GB fits
    assert plan.baseline_fits and plan.fixes[0].name == "as is"
    assert plan.fixes[0].relative_cost == 1.0 and not plan.fixes[0].redundant
    assert all(f.redundant for f in plan.fixes[1:])


def test_nothing_fits_when_static_memory_alone_is_over_budget():
    plan = plan_fixes(MemoryLedger(static_gb=30.0, activation_gb_per_sample=0.34), 60, **CASE)
    assert plan.fixes == () and "no fix fits" in plan.text()


def test_a_mixed_precision_baseline_tries_no_other_precision():
    fixes = plan_fixes(COURSE.with_precision("bf16-mixed"), 300, **CASE).fixes
    assert {f.precision for f in fixes} == {"bf16-mixed"}
    assert not any(f.needs_parity_check for f in fixes)


@pytest.mark.parametrize(
    "kwargs,field",
    [
        (dict(step_time_s=None), "step_time_s"),
        (dict(samples_per_s=600.0), "samples_per_s"),
        (dict(step_time_s=0.0), "step_time_s"),
        (dict(window_hours=0.0), "window_hours"),
        (dict(samples_per_night=-1), "samples_per_night"),
        (dict(price_per_hour_usd=0), "price_per_hour_usd"),
        (dict(mixed_precision_step_time_factor=0), "mixed_precision_step_time_factor"),
    ],
)
def test_bad_plan_inputs_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        plan_fixes(COURSE, 60, **{**CASE, **kwargs})


# --- the command line ------------------------------------------------------------------------------------------


def run_json(capsys, *argv):
    assert main([*argv, "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    return json.loads(out)


def test_fix_oom_course_case(capsys):
    out = run_json(capsys, "fix-oom", "--global-batch", "60")  # the other defaults are the course's case
    assert out["baseline_fits"] is False and out["baseline_fits_window"] is True
    names = [f["name"] for f in out["fixes"]]
    assert names == [row[0] for row in COURSE_FIXES]
    assert [f["fits_window"] for f in out["fixes"]] == [row[3] for row in COURSE_FIXES]
    assert [f["relative_cost"] for f in out["fixes"]] == pytest.approx([row[2] for row in COURSE_FIXES])
    text_out = main(["fix-oom", "--global-batch", "60"]) == 0 and capsys.readouterr().out
    assert "9 fixes that fit, cheapest first" in text_out and "LATE" in text_out and "parity check" in text_out


def test_fix_oom_with_a_throughput_and_a_parameter_count(capsys):
    # 200e6 parameters x 16 B (adamw) = 3.2 GB: the course ledger again; 600 samples/s = 0.1 s per step of 60
    out = run_json(capsys, "fix-oom", "--global-batch", "60", "--params", "200000000", "--samples-per-s", "600")
    assert out["step_time_s"] == pytest.approx(0.1)
    assert [f["name"] for f in out["fixes"]] == [row[0] for row in COURSE_FIXES]


@pytest.mark.parametrize(
    "argv,flag,words",
    [
        (["ledger", "--microbatch", "8", "--precision", "fp8"], "--precision", ["fp8", "bf16-mixed"]),
        (["ledger", "--microbatch", "8", "--optimizer", "adam"], "--optimizer", ["adam", "sgd-momentum"]),
        (["ledger", "--microbatch", "8", "--recompute", "some"], "--recompute", ["some", "selective"]),
        (["ledger", "--microbatch", "8", "--accumulation", "0"], "--accumulation", ["0", "integer in [1,"]),
        (["ledger", "--global-batch", "60", "--accumulation", "61"], "--accumulation", ["61", "[1, 60]"]),
        (["ledger", "--global-batch", "0"], "--global-batch", ["0", "integer in [1,"]),
        (["ledger", "--global-batch", "60", "--microbatch", "30"], "--global-batch", ["60", "--microbatch"]),
        (["ledger", "--microbatch", "8", "--params", "0"], "--params", ["0", "[1,"]),
        (["ledger", "--microbatch", "8", "--params", "1e9"], "--params", ["1e9", "int"]),
        (["ledger", "--microbatch", "8", "--params", "100", "--static-gb", "3"], "--static-gb", ["--params"]),
        (["ledger", "--microbatch", "8", "--optimizer", "sgd"], "--optimizer", ["--params", "'sgd'"]),
        (["ledger", "--microbatch", "8", "--microbatch-overhead", "1"], "--microbatch-overhead", ["1.0", "[0, 1)"]),
        (["ledger", "--microbatch", "8", "--selective-saving", "-0.5"], "--selective-saving", ["-0.5", "[0, 1)"]),
        (["fix-oom"], "--global-batch", ["required"]),
        (["fix-oom", "--global-batch", "60", "--step-time-s", "-1"], "--step-time-s", ["-1", "> 0"]),
        (
            ["fix-oom", "--global-batch", "60", "--step-time-s", "0.1", "--samples-per-s", "600"],
            "--step-time-s",
            ["--samples-per-s", "exactly one"],
        ),
        (["fix-oom", "--global-batch", "60", "--samples-per-night", "0"], "--samples-per-night", ["0", "> 0"]),
        (["fix-oom", "--global-batch", "60", "--window-hours", "nan"], "--window-hours", ["nan", "finite"]),
        (["fix-oom", "--global-batch", "60", "--price-per-hour", "0"], "--price-per-hour", ["0", "> 0"]),
        (
            ["fix-oom", "--global-batch", "60", "--mixed-precision-step-time-factor", "0"],
            "--mixed-precision-step-time-factor",
            ["0", "> 0"],
        ),
        (["fix-oom", "--global-batch", "60", "--precision", "tf32"], "--precision", ["tf32", "fp16-mixed"]),
        (["fix-oom", "--global-batch", "60", "--price-per-hour", "1e308"], "--price-per-hour", ["1e+308", "1e+06"]),
        (
            ["fix-oom", "--global-batch", "60", "--samples-per-s", "1e-300", "--samples-per-night", "1e308"],
            "--samples-per-night",
            ["1e+308", "overflow"],
        ),
    ],
)
def test_bad_input_is_one_line_naming_the_flag_and_exit_2(capsys, argv, flag, words):
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and flag in lines[0] and "Traceback" not in captured.err
    assert all(w in lines[0] for w in words), lines[0]


# --- the README documents every key ----------------------------------------------------------------------------

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()
DOCUMENTED = set(re.findall(r"`([a-z0-9_]+)`", README)) | {
    k for group in re.findall(r"`\{([a-z0-9_, ]+)\}`", README) for k in group.replace(" ", "").split(",")
}


def keys_of(value):
    if isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from keys_of(v)
    elif isinstance(value, list):
        for v in value:
            yield from keys_of(v)


@pytest.mark.parametrize(
    "argv",
    [
        ["ledger", "--microbatch", "32"],
        [
            "ledger",
            "--global-batch",
            "60",
            "--recompute",
            "selective",
            "--params",
            "200000000",
            "--precision",
            "bf16-mixed",
        ],
        ["fix-oom", "--global-batch", "60"],
    ],
)
def test_every_key_is_in_the_readme(capsys, argv):
    out = run_json(capsys, *argv)
    assert set(keys_of(out)) - DOCUMENTED == set()
    for flag in (
        "--params",
        "--precision",
        "--optimizer",
        "--accumulation",
        "--recompute",
        "--global-batch",
        "--microbatch-overhead",
        "--selective-saving",
        "--step-time-s",
        "--samples-per-s",
        "--samples-per-night",
        "--mixed-precision-step-time-factor",
        "gpucost-lab fix-oom",
    ):
        assert flag in README, flag
