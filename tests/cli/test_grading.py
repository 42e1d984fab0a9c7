"""``gpucost-lab grade-class`` (gpucost_lab.cli.grading): one line and exit 2 for bad input, in this process.

The installed command's refusal is in test_grading_installed_command.py, a small class of the real lab graded in
test_grading_class.py.
"""

from pathlib import Path

import nbformat

from gpucost_lab.cli.main import main

from .helpers import LAB, MALFORMED, RELEASE

# ------------------------------------------------------------------------------------------- bad input


def _bad_inputs(tmp_path: Path) -> list:
    (tmp_path / "empty").mkdir()
    (tmp_path / "a_file.ipynb").write_text(MALFORMED)
    (tmp_path / "class" / "alice").mkdir(parents=True)
    nbformat.write(nbformat.read(RELEASE, as_version=4), tmp_path / "class" / "alice" / f"{LAB}.ipynb")
    cls = str(tmp_path / "class")
    return [
        ([str(tmp_path / "missing")], "SUBMITTED_DIR", "does not exist"),
        ([str(tmp_path / "a_file.ipynb")], "SUBMITTED_DIR", "is not a directory"),
        ([str(tmp_path / "empty")], "SUBMITTED_DIR", "holds no submission"),
        ([cls, "--workers", "0"], "--workers", "must be a whole number >= 1, got 0"),
        ([cls, "--workers", "-3"], "--workers", "got -3"),
        ([cls, "--workers", "two"], "--workers", "invalid int value: 'two'"),
        ([cls, "--timeout", "0"], "--timeout", "from 1 to 3600, got 0"),
        ([cls, "--feedback", str(tmp_path / "a_file.ipynb")], "--feedback", "is not a folder"),
        ([cls, "--assignment", "no_such_lab"], "--assignment", "allowed: optimization_plan, profile_training_loop"),
        ([cls, "--source-root", str(tmp_path / "missing")], "--source-root", "is not a directory"),
    ]


def test_bad_input_is_one_line_naming_the_field_and_exit_2(tmp_path, capsys):
    for argv, field, said in _bad_inputs(tmp_path):
        try:
            code = main(["grade-class", *argv, "--json"])
        except SystemExit as exit_:  # argparse's own errors (a flag that is not a number)
            code = exit_.code
        captured = capsys.readouterr()
        assert code == 2, argv
        assert captured.out == ""
        lines = captured.err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("gpucost-lab grade-class: error: "), captured.err
        assert field in lines[0] and said in lines[0], lines[0]
        assert "Traceback" not in captured.err
