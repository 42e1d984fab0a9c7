#!/usr/bin/env bash
# Run a command with N CPU-bound busy processes beside it (default 2), to show that it does not depend on the
# machine's speed: `make test` must pass this way (issue 11).
#
#   benchmarks/under_load.sh [-n N] COMMAND [ARG...]
#   benchmarks/under_load.sh make test
#   benchmarks/under_load.sh -n 4 .venv/bin/python -m pytest tests -q
#
# The busy processes are always stopped: when the command ends, on Ctrl-C, TERM or HUP, and, should this script
# itself be killed outright, by themselves within a fraction of a second (each checks that this script is alive).
# The exit status is the command's (2 for a usage error). Each busy process carries "gpucost-lab-busy-loop" and
# this script's pid in its argv, so `pgrep -f gpucost-lab-busy-loop` finds them.
set -euo pipefail

usage() {
    echo "usage: $0 [-n N] COMMAND [ARG...]   (N busy processes beside COMMAND, default 2)" >&2
    exit 2
}

n=2
while getopts ":n:h" opt; do
    case "$opt" in
        n) n="$OPTARG" ;;
        h) usage ;;
        :) echo "$0: -$OPTARG needs a value" >&2; usage ;;
        *) echo "$0: unknown option -$OPTARG" >&2; usage ;;
    esac
done
shift $((OPTIND - 1))
[[ "$n" =~ ^[0-9]+$ ]] || { echo "$0: -n must be a whole number of busy processes, got '$n'" >&2; usage; }
[[ $# -gt 0 ]] || { echo "$0: no command given" >&2; usage; }

busy_pids=()
stop_busy() {
    local pid
    # SIGKILL, not TERM: a loop killed just after it was forked, before it exec'd sh, would otherwise lose a TERM
    # (bash holds it for a trap of its own) and run on while this script waits for it
    for pid in "${busy_pids[@]}"; do
        kill -KILL "$pid" 2>/dev/null || true
    done
    for pid in "${busy_pids[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    busy_pids=()
}
trap stop_busy EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# Pure CPU work in a plain sh loop; between bursts of ~20k iterations it checks that this script still runs.
busy_loop='while kill -0 "$1" 2>/dev/null; do i=0; while [ "$i" -lt 20000 ]; do i=$((i + 1)); done; done'
for ((k = 0; k < n; k++)); do
    sh -c "$busy_loop" gpucost-lab-busy-loop "$$" &
    busy_pids+=("$!")
done
echo "under_load: $n busy process(es) running beside: $*" >&2

status=0
"$@" || status=$?
exit "$status"
