"""What the course itself adds around the library: the chapters' auto-graded checkpoints (:mod:`.checkpoints`),
per-learner lab variants (:mod:`.variants`) and the worked example of chapter 01 as one call
(:mod:`.profile_to_cost`). Import each name from its module.
"""
