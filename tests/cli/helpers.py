"""Helpers of the tests in tests/cli/: a command's JSON answer, a refusal in one line, and the installed script."""

import json
import sys
from pathlib import Path

from gpucost_lab.cli.main import main

SCRIPT = Path(sys.executable).with_name("gpucost-lab")


def run_json(capsys, *argv):
    """The JSON object ``gpucost-lab ARGV --json`` prints in this process (exit status 0, one line)."""
    assert main([*argv, "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1  # one JSON object on one line
    return json.loads(out)


def assert_one_line_naming(capsys, argv, flag):
    """``gpucost-lab ARGV`` refused: exit status 2, nothing on stdout, one stderr line naming ``flag``; that line."""
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's own errors (missing or unparsable flags) exit directly
        code = exit_.code
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and flag in lines[0] and "Traceback" not in captured.err
    return lines[0]
