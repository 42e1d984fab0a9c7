"""What the course itself adds around the library: the chapters' auto-graded checkpoints (:mod:`.checkpoints`, their
truths by question id in :mod:`.questions`), per-learner lab variants (:mod:`.variants`), the chapters' temporary
folders (:mod:`.scratch`) and the worked example of chapter 01 as one call (:mod:`.profile_to_cost`). Import each
name from its module.
"""
