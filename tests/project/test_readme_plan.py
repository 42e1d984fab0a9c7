"""The README documents every JSON key ``gpucost-lab plan`` prints (a short measured run of the tiny-model candidate,
two rounds), as tests/project/test_readme.py checks the other commands'.
"""

import json

import pytest

from gpucost_lab.cli.main import main

from .helpers import DOCUMENTED, keys_of

pytestmark = pytest.mark.slow


def test_plan_keys_are_in_the_readme(capsys, tmp_path):
    assert (
        main(["plan", "--candidate", "tiny-model", "--rounds", "2", "--report", str(tmp_path / "r.md"), "--json"]) == 0
    )
    out = json.loads(capsys.readouterr().out)
    top_ops = [op for side in ("baseline", "candidate") for op in out[side].pop("top_ops")]
    assert set(keys_of(out)) - DOCUMENTED == set()
    assert set(keys_of(top_ops)) - DOCUMENTED == set()
