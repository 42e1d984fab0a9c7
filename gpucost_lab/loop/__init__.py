"""The training loop by phase (chapter 05, "profile to decision"): the phase profile and its decision (:mod:`.phases`),
the simulated loop a learner instruments (:mod:`.simulated`) and what each of its calls costs (:mod:`.costs`), and
what timing phases with synchronizations costs (:mod:`.phase_timing`). Import each name from its module.
"""
