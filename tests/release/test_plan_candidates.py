"""``gpucost-lab plan`` with a candidate that is not one of the plan's: one line naming --candidate and every candidate,
exit status 2, before anything is measured. (The plan itself: tests/release/test_plan.py.)
"""

from gpucost_lab.cli.main import main
from gpucost_lab.release.plan import CANDIDATES


def test_cli_plan_unknown_candidate(capsys):
    assert main(["plan", "--candidate", "nope"]) == 2
    err = capsys.readouterr().err
    assert "--candidate" in err and all(name in err for name in CANDIDATES)
