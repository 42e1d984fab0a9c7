"""``torch.compile`` on a GPU (chapter 07, section 5): launch overhead removed, the compile priced.

The chapter's model, ``ManySmallOps(layers=24, width=64)`` (192 small elementwise operators per forward, each a
kernel launch on a GPU), on a batch of 32, on the device:

- ``cold``: ``compile_model`` into a fresh, empty cache folder (nothing cached: what a fresh machine pays);
- ``warm``: after ``torch._dynamo.reset()``, ``compile_model`` again into the same folder (the cache serves it);
- ``comparison``: eager against compiled forward steps, interleaved (``compare_steps``: 5 ABBA/BAAB rounds in a
  seeded order, 50 steps per block after 5 warm-up steps);
- ``price``: ``price_compile`` with the cold compile spread over 10,000 steps at the course's price: the break-even
  steps with their interval, and the cost per sample and verdict at 100 to 100,000 steps.

Target (the verdict): the compiled step faster (interval below 1) and the same function (largest difference from
eager at most 1e-4). ``--device cpu`` is a dry run. Prints one JSON line.

    python3 benchmarks/gpu_compile.py [--device cuda]
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile

import torch

from gpucost_lab.measure.compare import compare_steps
from gpucost_lab.measure.contract import BenchmarkContract
from gpucost_lab.pipeline.launch_overhead import ManySmallOps, compile_model, forward_step, price_compile

BATCH, LAYERS, WIDTH, STEPS = 32, 24, 64, 10_000
SAME_FUNCTION_ABS = 1e-4


def compiled_result(result) -> dict:
    out = result.to_dict()
    out["cache_dir"] = "a fresh temporary folder"  # no folder of one machine in a record
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="cpu: a dry run")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("gpu_compile: no CUDA device here (torch.cuda.is_available() is False)", file=sys.stderr)
        return 2
    device = args.device
    model = ManySmallOps(layers=LAYERS, width=WIDTH).to(device)
    x = torch.randn(BATCH, WIDTH, generator=torch.Generator().manual_seed(0)).to(device)
    cache = tempfile.mkdtemp(prefix="gpucost-compile-")
    try:
        compiled, cold = compile_model(model, x, cache)
        torch._dynamo.reset()
        compiled, warm = compile_model(model, x, cache)
        contract = BenchmarkContract.capture(
            model=model,
            inputs=[x],
            device=device,
            warmup_steps=5,
            measured_steps=50,
            repeats=5,
            model_name=f"ManySmallOps({LAYERS} x {WIDTH})",
        )
        cmp = compare_steps(forward_step(model, x), forward_step(compiled, x), contract, order_seed=0)
        price = price_compile(cmp, cold.compile_s, steps=STEPS)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    be = price.break_even_steps
    table = price.table().reset_index()
    same = max(cold.max_abs_difference, warm.max_abs_difference) <= SAME_FUNCTION_ABS
    result = {
        "benchmark": "gpu_compile",
        "device": torch.cuda.get_device_name() if device == "cuda" else "cpu (dry run)",
        "torch": torch.__version__,
        "model": f"ManySmallOps(layers={LAYERS}, width={WIDTH}), batch {BATCH}",
        "eager_operators_per_step": model.operators_per_step,
        "cold": compiled_result(cold),
        "warm": compiled_result(warm),
        "comparison": cmp.to_dict(),
        "eager_step_s": price.eager_step_s,
        "compiled_step_s": price.compiled_step_s,
        # None: never (the saving's interval reaches 0)
        "break_even_steps": {k: None if math.isinf(v) else v for k, v in be._asdict().items()},
        "price_per_hour_usd": price.price_per_hour_usd,
        "verdict_over_steps": price.verdict(),
        "steps": STEPS,
        "by_steps": table.to_dict(orient="records"),
        "same_function": same,
        "targets": {
            "comparison": "compiled step faster than eager (interval below 1)",
            "same_function": f"largest difference from eager <= {SAME_FUNCTION_ABS:g}",
        },
        "verdict": "pass" if cmp.ci95_high < 1 and same else "short",
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
