"""The GPU check's records: benchmarks/gpu_record.py writes them, benchmarks/collect.py renders them as rows.

Nothing here needs CUDA: the records and pytest's JUnit XML are made up here, with the figures a row must show
written out by hand.
"""

import json
import subprocess
import sys
from pathlib import Path

from .helpers import ROOT, load

record = load("gpu_record_under_test", ROOT / "benchmarks" / "gpu_record.py")
collect = load("gpu_bench_collect", ROOT / "benchmarks" / "collect.py")

H200 = "NVIDIA H200"


# ---- gpu_record.py ------------------------------------------------------------------------------------------------

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="0" failures="1" skipped="1" tests="3" time="3.1">
<testcase classname="tests.project.test_gpu" name="test_contract_records_the_gpu" time="0.500" />
<testcase classname="tests.project.test_gpu" name="test_unsynchronized" time="1.250">
  <failure message="assert 1.4 &gt; 2">trace</failure></testcase>
<testcase classname="tests.quality.test_parity" name="test_half[fp16-amp]" time="0.000">
  <skipped type="pytest.skip" message="needs CUDA">skipped</skipped></testcase>
</testsuite></testsuites>
"""


def test_junit_outcomes_give_each_test_its_id_and_outcome(tmp_path):
    path = tmp_path / "junit.xml"
    path.write_text(JUNIT)
    result = record.junit_outcomes(path)
    assert [(t["id"], t["outcome"], t["time_s"]) for t in result["tests"]] == [
        ("tests/project/test_gpu.py::test_contract_records_the_gpu", "passed", 0.5),
        ("tests/project/test_gpu.py::test_unsynchronized", "failed", 1.25),
        ("tests/quality/test_parity.py::test_half[fp16-amp]", "skipped", 0.0),
    ]
    assert result["tests"][1]["message"] == "assert 1.4 > 2"
    assert (result["passed"], result["failed"], result["error"], result["skipped"]) == (1, 1, 0, 1)
    assert result["verdict"] == "short"  # a failure, and on a GPU a skip is short too
    path.write_text(
        JUNIT.replace('<failure message="assert 1.4 &gt; 2">trace</failure>', "").replace(
            '<skipped type="pytest.skip" message="needs CUDA">skipped</skipped>', ""
        )
    )
    assert record.junit_outcomes(path)["verdict"] == "pass"


def test_a_step_keeps_the_json_it_printed_with_the_gpu_and_strict_numbers(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUCOST_GPU_NAME", H200)
    code = 'print(\'warming up\'); print(\'{"ratio": 2.5, "interval": [NaN, Infinity], "verdict": "pass"}\')'
    status = record.main([str(tmp_path), "gpu_demo", "--timeout-s", "60", "--", sys.executable, "-c", code])
    assert status == 0
    saved = json.loads((tmp_path / "gpu_demo.json").read_text())
    assert saved["benchmark"] == "gpu_demo" and saved["device"] == H200 and saved["machine"]["gpu"] == H200
    assert saved["result"] == {"ratio": 2.5, "interval": [None, None], "verdict": "pass"}  # the last line, strict
    assert saved["exit_status"] == 0 and saved["timed_out"] is False
    first = saved["command"].split()[
        0
    ]  # the interpreter repository-relative, or its name alone: no folder of one machine
    assert not first.startswith("/") and first.endswith(Path(sys.executable).name) and " -c " in saved["command"]

    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")

    json.loads((tmp_path / "gpu_demo.json").read_text(), parse_constant=refuse)  # strict JSON: no NaN, no Infinity


def test_the_summary_names_every_step_and_passes_only_when_all_did(tmp_path):
    for name, status, result in (("gpu_a", 0, {"verdict": "pass"}), ("gpu_b", 0, {"x": 1}), ("gpu_c", 1, None)):
        saved = {"device": H200, "exit_status": status, "timed_out": False, "wall_s": 2.0, "result": result}
        (tmp_path / f"{name}.json").write_text(json.dumps(saved))
    assert record.main([str(tmp_path), "--summary", "gpu_a", "gpu_b", "gpu_c", "gpu_d"]) == 1
    summary = json.loads((tmp_path / "gpu_check.json").read_text())
    assert summary["device"] == H200
    assert [(s["step"], s["verdict"]) for s in summary["steps"]] == [
        ("gpu_a", "pass"),
        ("gpu_b", "ran"),  # no verdict of its own: it ran and printed its figures
        ("gpu_c", "failed (exit status 1)"),
        ("gpu_d", "not run"),  # no record: the time bound was spent before it
    ]
    assert summary["verdict"] == "short"
    assert record.main([str(tmp_path), "--summary", "gpu_a", "gpu_b"]) == 0
    assert json.loads((tmp_path / "gpu_check.json").read_text())["verdict"] == "pass"


# ---- collect.py: the rows -----------------------------------------------------------------------------------------


def saved(name: str, result: dict | None, exit_status: int = 0) -> dict:
    return {
        "benchmark": name,
        "device": H200,
        "command": f"python3 benchmarks/{name}.py",
        "started": "2026-12-03 10:04:59 UTC",
        "exit_status": exit_status,
        "timed_out": False,
        "load": {"load_average_1_5_15_start": [0.4, 0.3, 0.2]},
        "machine": {"cpu_model": "Made-up CPU 9000", "cpu_cores": 16, "gpu": H200},
        "versions": {"python": "3.12.3", "torch": "2.11.0+cu130"},
        "result": result,
    }


TF32 = {
    "gpu_name": H200,
    "catalog_entry": "H200",
    "highest": {"float32_matmul": "ieee", "peak": "float32", "measured_tflops": 51.23, "bound_tflops": 66.9},
    "high": {"float32_matmul": "tf32", "peak": "tf32", "measured_tflops": 402.34, "bound_tflops": 494.7},
}
TESTS = {
    "passed": 9,
    "failed": 0,
    "error": 0,
    "skipped": 0,
    "tests": [{"id": f"tests/project/test_gpu.py::test_{i}", "outcome": "passed"} for i in range(9)],
    "verdict": "pass",
}
COMPILE = {
    "comparison": {"time_ratio": 0.0521, "ci95_low": 0.0493, "ci95_high": 0.0551},
    "cold": {"compile_s": 18.43, "cache_hit": False, "max_abs_difference": 1.2e-7},
    "warm": {"compile_s": 0.352, "cache_hit": True, "max_abs_difference": 1.2e-7},
    "eager_step_s": 0.00121,
    "compiled_step_s": 0.000063,
    "break_even_steps": {"value": 16038.2, "ci95_low": 15900.0, "ci95_high": 16200.0},
    "steps": 10000,
    "verdict_over_steps": "stay eager",
    "same_function": True,
    "verdict": "pass",
}


def gpu_rows(results: dict) -> list[list[str]]:
    rows = collect.render_rows(results)
    return rows[sum(len(b.rows) for b in collect.BENCHES) :]


def test_gpu_records_render_as_their_own_rows_named_by_the_gpu():
    results = {
        "gpu_tests": saved("gpu_tests", TESTS),
        "gpu_tf32_check": saved("gpu_tf32_check", TF32),
        "gpu_compile": saved("gpu_compile", COMPILE),
    }
    tests, tf32, compiled = gpu_rows(results)  # in GPU_BENCHES's order, only those with a record
    assert tests[0].startswith(f"{H200}: the CUDA tests") and tests[1] == "9 passed, 0 failed, 0 errors, 0 skipped"
    assert tests[3] == "pass"
    assert tf32[0].startswith(f"{H200}: 8192^3 float32 matmul")
    assert (
        tf32[1]
        == "highest: ieee, 51.2 TFLOP/s of the 66.9 float32 bound; high: tf32, 402.3 TFLOP/s of the 494.7 tf32 bound"
    )
    assert tf32[3] == "pass"  # ieee then tf32 recorded, the FP32 then the TF32 peak chosen, each under its bound
    assert tf32[6] == f"Made-up CPU 9000, 16 cores, GPU {H200}"
    assert tf32[4] == "2026-12-03 10:04 UTC" and tf32[-1] == "`python3 benchmarks/gpu_tf32_check.py`"
    # 0.00121 s = 1,210 us; 0.000063 s = 63 us
    assert compiled[1] == (
        "compiled / eager step 0.052 (95% CI 0.049 to 0.055; 1,210 to 63 \u00b5s); cold compile 18.4 s, from the "
        "cache 0.35 s; break-even 16,038 steps; over 10,000 steps: stay eager"
    )
    table = collect.render_table(results)
    n = sum(len(b.rows) for b in collect.BENCHES) + 3
    assert f"{n} comparisons from {len(collect.BENCHES) + 3} benchmark runs" in table


def test_tf32_on_recorded_as_ieee_is_short():
    wrong = dict(TF32, high=dict(TF32["high"], float32_matmul="ieee"))
    (row,) = gpu_rows({"gpu_tf32_check": saved("gpu_tf32_check", wrong)})
    assert row[3] == "short"


def test_a_step_that_left_no_result_says_why():
    (row,) = gpu_rows({"gpu_compile": saved("gpu_compile", None, exit_status=1)})
    assert row[1] == "no result (exit status 1); see the check's output" and row[3] == "not run"


def test_a_failed_part_of_the_copies_benchmark_is_named():
    result = {
        "copies": {"large": {"error": "RuntimeError: out of pinned memory"}, "batch": {}},
        "asynchrony": {},
        "chapter": {},
        "errors": ["large"],
        "verdict": "short",
    }
    (row,) = gpu_rows({"gpu_pinned_copies": saved("gpu_pinned_copies", result)})
    assert row[1] == "large failed (RuntimeError: out of pinned memory)" and row[3] == "short"


def test_without_gpu_records_the_table_is_as_before():
    assert gpu_rows({}) == []
    assert f"from {len(collect.BENCHES)} benchmark runs" in collect.render_table({})


def test_saved_gpu_records_are_read_from_the_results_folder(tmp_path):
    (tmp_path / "gpu_tf32_check.json").write_text(json.dumps(saved("gpu_tf32_check", TF32)))
    (tmp_path / "gpu_check.json").write_text(json.dumps({"benchmark": "gpu_check"}))  # the summary: no row
    loaded = collect.load_results(tmp_path)
    assert set(loaded) == {"gpu_tf32_check"} and loaded["gpu_tf32_check"]["device"] == H200


def test_every_step_of_the_check_has_its_rows():
    out = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu_check.sh"), "--list"], capture_output=True, text=True, check=True
    )
    steps = ["gpu_tests"] + [line.split()[1] for line in out.stdout.splitlines() if line.startswith("benchmark ")]
    assert [b.name for b in collect.GPU_BENCHES] == steps
    for bench in collect.GPU_BENCHES:
        assert (ROOT / bench.script).is_file() and all(row.comparison and row.target for row in bench.rows)
