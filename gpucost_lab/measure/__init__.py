"""Measure honestly (chapters 01 and 03): the frozen benchmark contract (:mod:`.contract`), the device and how to
synchronize it (:mod:`.device`, :mod:`.async_device`), synchronized timing with uncertainty (:mod:`.timing`), the
interleaved A/B comparison (:mod:`.compare`), the check for unsynchronized timing (:mod:`.sync_check`) and a profiler
window of a step function (:mod:`.profiling`). Import each name from its module.
"""
