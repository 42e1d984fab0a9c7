#!/usr/bin/env bash
# The check for a CUDA machine: the CUDA tests and the CUDA benchmarks, in at most 8 minutes, every result as JSON.
#
#   benchmarks/gpu_check.sh --prepare   on a machine with a package index: the wheels below, into .whl/ (ignored)
#   benchmarks/gpu_check.sh             on the GPU machine, from a copy of this working tree with .whl/ beside it
#   benchmarks/gpu_check.sh --list      the wheels, tests and benchmarks it runs, one a line
#
# The GPU machine has Python 3.12 with torch, numpy, pandas, scipy, matplotlib and pytest, and no network. The check:
#   1. stops itself after 8 minutes (timeout; GPU_CHECK_LIMIT_S to change it), each step below at its own limit;
#   2. without CUDA, says so in one line on stderr and exits 2 (the dry run on a CPU machine);
#   3. installs .whl/*.whl into a scratch folder (no index, no dependencies) and puts it and this working tree on
#      PYTHONPATH: the package is the working tree's, nothing is installed from the project;
#   4. runs the CUDA tests, then each CUDA benchmark, through benchmarks/gpu_record.py, which writes its record
#      (NAME.json, the GPU's name as "device") to $OUT when set, else to artifacts/gpu/;
#   5. writes gpu_check.json, every step's verdict, and exits 0 when all passed, 1 when one did not (124: out of time).
# Copied into benchmarks/results/, the records render as rows of their own, named by GPU (benchmarks/collect.py).
set -euo pipefail
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$self")/.."

PYTHON=${PYTHON:-python3}
LIMIT_S=${GPU_CHECK_LIMIT_S:-480}
SITE=${GPU_CHECK_SITE:-/tmp/gpucost-site}

# What the CUDA paths import that the GPU machine may lack, at .venv's versions: gpucost_lab.timeline (the CLI)
# imports ijson and msgspec; tests/conftest.py imports hypothesis (which needs sortedcontainers).
WHEELS=(msgspec==0.23.0 ijson==3.6.0 hypothesis==6.170.17 sortedcontainers==2.4.0)
PLATFORMS=(manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64)

# The CUDA tests: tests/project/test_gpu.py (marker gpu) and the tests elsewhere that skip without CUDA.
TESTS=(
    tests/project/test_gpu.py
    tests/loop/test_phases.py::test_memory_sampler_sees_a_tensor_on_cuda
    tests/loop/test_phases.py::test_phase_timer_synchronizes_cuda_by_default
    tests/quality/test_parity.py::test_half_precision_on_cuda_reaches_the_target_with_parity
    tests/course/test_profile_to_cost.py::test_on_cuda_the_worked_example_is_bounded_by_the_tf32_peak_when_allowed
)
TESTS_LIMIT_S=150

# The CUDA benchmarks, in order: record name, limit in seconds, then $PYTHON's arguments.
BENCHMARKS=(
    "gpu_profile_to_cost 60 -m gpucost_lab profile-to-cost --device cuda --json"
    "gpu_sync_vs_unsync 60 benchmarks/sync_vs_unsync.py --device cuda --json"
    "gpu_tf32_check 60 benchmarks/tf32_check.py"
    "gpu_ledger_accuracy 90 benchmarks/ledger_accuracy.py --device cuda"
    "gpu_pinned_copies 90 benchmarks/gpu_pinned_copies.py"
    "gpu_compile 150 benchmarks/gpu_compile.py"
)

prepare() {
    local platform_args=() p
    for p in "${PLATFORMS[@]}"; do platform_args+=(--platform "$p"); done
    rm -rf .whl
    mkdir .whl
    "$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        "${platform_args[@]}" -d .whl "${WHEELS[@]}"
    ls -1 .whl
    echo "gpu_check: ${#WHEELS[@]} wheels in .whl/ ($(du -sh .whl | cut -f1)); carry .whl to the GPU machine" >&2
}

list() {
    local w t b
    for w in "${WHEELS[@]}"; do echo "wheel $w"; done
    for t in "${TESTS[@]}"; do echo "test $t"; done
    for b in "${BENCHMARKS[@]}"; do echo "benchmark $b"; done
}

case "${1:-}" in
    --prepare) prepare; exit 0 ;;
    --list) list; exit 0 ;;
    "") ;;
    *) echo "usage: $0 [--prepare | --list]" >&2; exit 2 ;;
esac

# 1. the time bound: the check runs again under timeout, which stops it (and what it started) at LIMIT_S
if [[ -z ${GPU_CHECK_BOUNDED:-} ]]; then
    export GPU_CHECK_BOUNDED=1
    exec timeout --kill-after=10 "$LIMIT_S" bash "$self"
fi

# 2. a CUDA device, or one line and exit 2
probe='import torch
print(torch.cuda.get_device_name() if torch.cuda.is_available() else "", torch.__version__, torch.version.cuda, sep="|")'
found=$("$PYTHON" -c "$probe" 2>/dev/null | tail -n 1) || found=""
IFS='|' read -r gpu torch_version cuda_version <<<"$found"
if [[ -z $gpu ]]; then
    echo "gpu_check: no CUDA device ($PYTHON: torch.cuda.is_available() is not True); run it on a machine with one" >&2
    exit 2
fi
export GPUCOST_GPU_NAME=$gpu PYTHONUNBUFFERED=1

# 3. the wheels into a scratch folder; the working tree's package on PYTHONPATH
missing=()
for w in "${WHEELS[@]}"; do
    name=${w%%==*}
    compgen -G ".whl/${name//-/_}-${w##*==}-*.whl" >/dev/null || missing+=("$w")
done
if ((${#missing[@]})); then
    echo "gpu_check: .whl/ lacks ${missing[*]}: run benchmarks/gpu_check.sh --prepare where pip reaches an index" >&2
    exit 2
fi
"$PYTHON" -m pip install --quiet --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"
"$PYTHON" -c 'import gpucost_lab.cli.main, hypothesis' || { echo "gpu_check: gpucost_lab does not import" >&2; exit 2; }

out=${OUT:-artifacts/gpu}
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/gpu_*.json
echo "gpu_check: $gpu, torch $torch_version, CUDA $cuda_version; results in $out"

# 4. the steps: each stopped at its limit, or at what is left of the bound (20 s kept for the summary)
names=()
deadline=$((LIMIT_S - 20))
step() {  # NAME LIMIT_S [--pytest] -- COMMAND...
    local name=$1 limit=$2 left=$((deadline - SECONDS))
    shift 2
    names+=("$name")
    if ((left < 15)); then
        echo "== $name: not run, the time bound is spent" >&2
        return 0
    fi
    ((limit < left)) || limit=$left
    echo "== $name (at most $limit s)" >&2
    "$PYTHON" benchmarks/gpu_record.py "$out" "$name" --timeout-s "$limit" "$@" || true
}

step gpu_tests "$TESTS_LIMIT_S" --pytest -- "$PYTHON" -m pytest -p no:cacheprovider -q "${TESTS[@]}"
for b in "${BENCHMARKS[@]}"; do
    read -r name limit args <<<"$b"
    read -ra argv <<<"$args"
    step "$name" "$limit" -- "$PYTHON" "${argv[@]}"
done

# 5. the summary, and the exit status
"$PYTHON" benchmarks/gpu_record.py "$out" --summary "${names[@]}"
