"""benchmarks/under_load.sh (issue 11): N busy processes beside a command, always stopped, its exit status passed on.

The busy processes are found through /proc by the marker and the script's pid that each carries in its argv, so other
runs of the script on the same machine (the suite itself may run under it) are not counted.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "under_load.sh"
MARKER = "gpucost-lab-busy-loop"

pytestmark = pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs Linux /proc")

# Run as the command under the script: prints its parent's pid (the script's) and how many live busy loops carry it.
COUNTER = f"""
import os
from pathlib import Path
script = os.getppid()
n = 0
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        argv = Path(f"/proc/{{pid}}/cmdline").read_bytes().split(b"\\0")
        state = Path(f"/proc/{{pid}}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        continue
    if {MARKER!r}.encode() in argv and str(script).encode() in argv and state != "Z":
        n += 1
print(script, n)
"""


def busy_loops_of(script_pid: int) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if MARKER.encode() in argv and str(script_pid).encode() in argv:
            found.append(int(pid))
    return found


def under_load(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("n", [2, 3, 0])
def test_n_busy_processes_run_beside_the_command_and_none_is_left(n):
    args = ["-n", str(n)] if n != 2 else []  # 2 is the default
    done = under_load(*args, sys.executable, "-c", COUNTER)
    assert done.returncode == 0, done.stderr
    script_pid, running = map(int, done.stdout.split())
    assert running == n
    assert busy_loops_of(script_pid) == []


@pytest.mark.parametrize(
    "command, status",
    [(["true"], 0), (["false"], 1), (["sh", "-c", "exit 3"], 3), (["sh", "-c", "kill -TERM $$"], 128 + 15)],
)
def test_the_exit_status_is_the_commands(command, status):
    assert under_load(*command).returncode == status


@pytest.mark.parametrize("args", [[], ["-n", "two", "true"], ["-x", "true"], ["-n"]])
def test_a_usage_error_is_status_2_and_says_usage(args):
    done = under_load(*args)
    assert done.returncode == 2 and "usage:" in done.stderr


def test_busy_processes_stop_by_themselves_if_the_script_is_killed_outright():
    proc = subprocess.Popen([str(SCRIPT), "sleep", "60"], stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 30  # a guard against a hang only; the loops start within milliseconds
        while len(busy_loops_of(proc.pid)) < 2:
            assert time.monotonic() < deadline, "the busy processes never started"
            time.sleep(0.02)
        proc.kill()  # SIGKILL: no trap runs, the loops notice the script is gone
        proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        while busy_loops_of(proc.pid):
            assert time.monotonic() < deadline, "busy processes outlived the script"
            time.sleep(0.02)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the orphaned `sleep 60` (and the loops, should the test fail)
        except ProcessLookupError:
            pass
