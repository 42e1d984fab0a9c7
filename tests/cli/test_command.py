"""The Command record (gpucost_lab.cli.command): its defaults, ``--json``, and the contract every group module's
commands keep (a parser named after the command, ``--json`` last, each path among its arguments).
"""

import argparse
import dataclasses

import pytest

from gpucost_lab.cli.command import Command, add_json_flag, answered
from gpucost_lab.cli.main import COMMANDS


def _parser(sub):
    return sub.add_parser("x")


def _run(args):
    return {}, ""


def test_a_command_needs_only_its_name_parser_and_run():
    command = Command("x", _parser, _run)
    assert command.flags == {} and command.paths == () and command.checks == ()
    assert command.nested_input == "input"
    assert command.exit_status({"passed": False}) == 0  # not a verdict: every answer exits 0


def test_answered_is_exit_status_0_for_every_answer():
    assert [answered(out) for out in ({}, {"passed": False}, {"errors": 3})] == [0, 0, 0]


def test_a_command_is_frozen():
    command = Command("x", _parser, _run)
    with pytest.raises(dataclasses.FrozenInstanceError):
        command.name = "y"  # type: ignore[misc]


def test_the_json_flag_is_off_unless_given_and_added_last():
    parser = argparse.ArgumentParser()
    parser.add_argument("--top", type=int, default=10)
    add_json_flag(parser)
    assert parser.parse_args([]).json is False and parser.parse_args(["--json"]).json is True
    last = parser._actions[-1]
    assert last.option_strings == ["--json"] and last.help == "print one JSON object"
    other = argparse.ArgumentParser()
    add_json_flag(other, "print the rows as JSON")
    assert other._actions[-1].help == "print the rows as JSON"


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_adds_its_own_parser_with_json_last(name):
    command = COMMANDS[name]
    sub = argparse.ArgumentParser(prog="gpucost-lab").add_subparsers()
    parser = command.add_parser(sub)
    assert list(sub.choices) == [name] and sub.choices[name] is parser
    assert parser._actions[-1].option_strings == ["--json"]
    dests = {action.dest for action in parser._actions}
    assert set(command.paths) <= dests  # else the empty-path check would look at an argument that is not there
