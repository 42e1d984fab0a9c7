"""``gpucost-lab`` assembled (gpucost_lab.cli.main): the commands the README documents, one flag per library field,
argparse's errors in one line, and the exit status and JSON of what a command answers.
"""

import dataclasses
import re
from pathlib import Path

import pytest

from gpucost_lab.cli import main as cli

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def test_the_commands_are_those_the_readme_documents_and_help_lists_them_all(capsys):
    documented = re.findall(r"\*\*`gpucost-lab ([a-z-]+)", README)  # the CLI reference's headings
    assert len(documented) == 14 and set(cli.COMMANDS) == set(documented)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--help"])
    assert exit_.value.code == 0
    listed = re.search(r"\{([a-z,-]+)\}", capsys.readouterr().out)
    assert listed is not None and set(listed[1].split(",")) == set(documented)


def test_a_field_names_one_flag_whatever_command_reports_it():
    for command in cli.COMMANDS.values():
        for field, flag in command.flags.items():
            assert cli.FLAGS[field] == flag, (command.name, field)


def test_an_argparse_error_is_one_line_without_the_usage_block(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["ledger", "--microbatch", "eight"])
    assert exit_.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "gpucost-lab ledger: error: argument --microbatch: invalid int value: 'eight'\n"


def _answering(monkeypatch, out: dict, text: str, exit_status=None):
    """``predict`` stood in for by a command that answers ``out`` (``text`` without --json)."""
    changes = {"run": lambda args: (out, text)}
    if exit_status is not None:
        changes["exit_status"] = exit_status
    monkeypatch.setitem(cli.COMMANDS, "predict", dataclasses.replace(cli.COMMANDS["predict"], **changes))


PREDICT = ["predict", "--throughput-gain", "0.2", "--steps-change", "0.25"]


def test_the_answer_is_its_text_or_one_json_line_and_its_commands_exit_status(capsys, monkeypatch):
    _answering(monkeypatch, {"passed": False, "score": 3}, "NOT PASSED: 3 points", exit_status=lambda out: 1)
    assert cli.main(PREDICT) == 1
    assert capsys.readouterr().out == "NOT PASSED: 3 points\n"
    assert cli.main([*PREDICT, "--json"]) == 1
    assert capsys.readouterr().out == '{"passed": false, "score": 3}\n'


def test_an_answer_that_is_not_a_finite_number_is_the_packages_error_not_the_inputs(capsys, monkeypatch):
    _answering(monkeypatch, {"relative_cost": float("nan")}, "relative cost nan")
    assert cli.main(PREDICT) == 0 and capsys.readouterr().out == "relative cost nan\n"  # the text needs no JSON
    assert cli.main([*PREDICT, "--json"]) == 70  # sysexits.h EX_SOFTWARE
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    # json.dumps(nan, allow_nan=False)'s own message
    said = "ValueError: Out of range float values are not JSON compliant; the full report is in "
    assert captured.err.startswith(f"gpucost-lab predict: internal error (not your input): {said}"), captured.err
    Path(captured.err.rsplit(" ", 1)[-1].strip()).unlink()
