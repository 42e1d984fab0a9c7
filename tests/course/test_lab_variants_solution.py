"""Lab 1's solution run in this process for 40 learners and the self-study job, every check cell of the source
(hidden checks included) after it: it passes them all, whichever phase is a learner's largest overhead."""

import nbformat
import pytest
from labtools import is_check, meta, source_path

from gpucost_lab.course.variants import lab_variant

pytestmark = pytest.mark.slow

LAB1 = source_path("profile_training_loop")


def _solution_failures(learner: str) -> list[str]:
    """Lab 1's solution run as ``learner`` (the lab's numbers from that id), then every check cell of the source,
    hidden checks included, in the same process: the grade ids of the checks that fail."""
    import contextlib
    import io
    import os

    from gpucost_lab.course.variants import LEARNER_ENV
    from gpucost_lab.grading.checks import split_hidden

    ns, failed = {}, []
    old = os.environ.get(LEARNER_ENV)
    os.environ[LEARNER_ENV] = learner
    try:
        for cell in nbformat.read(LAB1, as_version=4).cells:
            if cell.cell_type != "code":
                continue
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(split_hidden(cell.source)[0], dict(ns) if is_check(cell) else ns)
            except Exception:  # noqa: BLE001  (a check that fails, or a solution cell that does)
                failed.append(meta(cell).get("grade_id"))
    finally:
        os.environ.pop(LEARNER_ENV) if old is None else os.environ.__setitem__(LEARNER_ENV, old)
    return failed


def test_the_solution_passes_every_check_for_every_kind_of_learner():
    # 40 ids and the self-study job: the solution decides its lever from its own balance, so it passes whichever
    # phase is a learner's largest overhead (eval for some ids, checkpoint for most): both kinds are among them
    from gpucost_lab.grading.truth import lab_balance

    learners = ["", *(f"learner{i}" for i in range(40))]
    kinds = set()
    for learner in learners:
        seconds = lab_balance(lab_variant("profile_training_loop", learner or None).loop()).set_index("phase")
        kinds.add(seconds["seconds"].drop("forward_backward").idxmax())
        assert _solution_failures(learner) == [], learner
    assert kinds == {"eval", "checkpoint"}
