"""TF32 on and off on CUDA: what the contract records and which peak bounds a float32 matmul.

For each float32 matmul precision ("highest": IEEE FP32; "high": TF32 allowed) it captures a contract,
times a synchronized 8192 x 8192 float32 matmul, and holds it against the peak ``bounding_peak`` picks,
and against the FP32 peak for comparison: with TF32 on, a correct timing is above the FP32 peak. It
also runs ``profile_to_cost.run`` with TF32 on. Prints one JSON object. Needs CUDA.
"""

from __future__ import annotations

import json

import torch

from gpucost_lab.course import profile_to_cost
from gpucost_lab.measure.contract import BenchmarkContract
from gpucost_lab.measure.timing import measure
from gpucost_lab.roofline.bound import bounding_peak, check_throughput, find_accelerator

N = 8192


def main() -> None:
    before = torch.get_float32_matmul_precision()
    acc = find_accelerator(torch.cuda.get_device_name())
    a = torch.randn(N, N, device="cuda")
    result = {"gpu_name": torch.cuda.get_device_name(), "catalog_entry": acc.name if acc else None}
    try:
        for precision in ("highest", "high"):
            torch.set_float32_matmul_precision(precision)
            c = BenchmarkContract.capture(inputs=[(N, N)], device="cuda", warmup_steps=3, measured_steps=10, repeats=3)
            rows_per_s = measure(lambda: a @ a, c).units_per_s_geomean  # a row of the product is 2 N^2 FLOPs
            peak = bounding_peak(c)
            row = {
                "float32_matmul": c.float32_matmul,
                "float32_conv": c.float32_conv,
                "peak": peak.precision,
                "reason": peak.reason,
                "measured_tflops": rows_per_s * 2 * N * N / 1e12,
            }
            if acc:
                row["bound_tflops"] = acc.peak_flops_per_s(peak.precision) / 1e12
                row["check"] = check_throughput(rows_per_s, 2 * N * N, acc.roofline(peak.precision), peak=peak).message
                row["against_fp32_peak"] = check_throughput(rows_per_s, 2 * N * N, acc.roofline("float32")).message
            result[precision] = row
        ptc = profile_to_cost.run(device="cuda", repeats=2)  # still "high"
        result["profile_to_cost_high"] = {
            "float32_matmul": ptc.measurement.contract.float32_matmul,
            "plausibility": ptc.plausibility.to_dict() if ptc.plausibility else None,
        }
    finally:
        torch.set_float32_matmul_precision(before)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
