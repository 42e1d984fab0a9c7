#!/usr/bin/env bash
# Prepared GPU check, run on a machine with CUDA (one short script, under 5 minutes).
# It installs the project, runs the test suite (GPU tests included), then the worked example on the GPU,
# the synchronized-vs-unsynchronized comparison, TF32 off/on (recorded field, chosen peak), and the memory ledger's
# whole-step peak against torch.cuda.max_memory_allocated (plain, accumulation, full recomputation). Results go to
# $OUT when set, else ./artifacts.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-artifacts}"
mkdir -p "$out"
python3 -m pip install --quiet -e ".[test]" 2>&1 | tail -n 3
python3 -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; print(torch.__version__, torch.cuda.get_device_name())"
python3 -m pytest -q tests 2>&1 | tee "$out/pytest.log" | tail -n 5
gpucost-lab profile-to-cost --device cuda --json > "$out/profile_to_cost_cuda.json"
python3 benchmarks/sync_vs_unsync.py --json > "$out/sync_vs_unsync.json"
python3 benchmarks/tf32_check.py > "$out/tf32_check.json"
# memory ledger on CUDA: ledger peak vs torch.cuda.max_memory_allocated per (model, microbatch, accumulation, recompute)
python3 benchmarks/ledger_accuracy.py --device cuda > "$out/ledger_accuracy_cuda.json"
cat "$out/profile_to_cost_cuda.json" "$out/sync_vs_unsync.json" "$out/tf32_check.json" "$out/ledger_accuracy_cuda.json"
