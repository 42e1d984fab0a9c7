"""Synchronized versus unsynchronized timing of the worked example on the current device.

On CUDA the unsynchronized clock stops when the kernels are queued, so it reports a throughput far
above the synchronized one and, often, above the roofline bound. On the CPU the two agree, since
torch runs CPU operators synchronously. Prints one JSON object with both measurements and the ratio.
"""

from __future__ import annotations

import argparse
import json

from gpucost_lab.course.profile_to_cost import LinearWorkload
from gpucost_lab.measure.contract import BenchmarkContract
from gpucost_lab.measure.timing import measure, measure_unsynchronized
from gpucost_lab.roofline.bound import check_throughput, count_flops, find_accelerator


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    contract = BenchmarkContract.capture(
        inputs=[(256, 1024)],
        device=args.device,
        warmup_steps=5,
        measured_steps=20,
        repeats=5,
        model_name="Linear(1024, 1024)",
        parameter_count=1024 * 1025,
    )
    work = LinearWorkload.build(contract.device)
    synced = measure(work.step, contract)
    unsynced = measure_unsynchronized(work.step, contract)
    flops_per_sample = count_flops(work.step) / 256
    acc = find_accelerator(contract.gpu_name)
    result = {
        "device": contract.device,
        "gpu_name": contract.gpu_name,
        "synchronized_samples_per_second": synced.units_per_s.to_dict(),
        "unsynchronized_samples_per_second": unsynced.units_per_s.to_dict(),
        "unsynchronized_over_synchronized": unsynced.units_per_s_geomean / synced.units_per_s_geomean,
        "roofline_check_unsynchronized": (
            check_throughput(unsynced.units_per_s_geomean, flops_per_sample, acc.roofline("float32")).to_dict()
            if acc
            else None
        ),
    }
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
