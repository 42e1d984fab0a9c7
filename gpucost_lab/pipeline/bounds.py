"""The bounds of a measured input-pipeline run (chapter 07, ``gpucost-lab pipeline``), each with its reason.

:func:`check_run` refuses a run whose sizes would keep the command busy past about a minute on the course's 2-core
CPU, naming the input to lower and its largest value given the others; :mod:`gpucost_lab.pipeline.loader` checks each
size against its own bound as well.
"""

from __future__ import annotations

from gpucost_lab._validate import InputError, integer_at_least, too_large

# Bounds of a measured run, so that ``gpucost-lab pipeline`` ends within about a minute and well under 1 GB on the
# course's 2-core CPU. A sample's decode costs about DECODE_FIXED_PASSES + decode_passes passes of the filter (one
# pass about 16 us, the rest of the decode about 8 passes' worth: 130 us at 0 passes, 240 at 4, 1.7 ms at 100,
# measured beside other work), and a run decodes every sample of an epoch once per epoch: settings x (1 + 2 x
# repeats) epochs of batches x batch_size samples. MAX_DECODE_WORK such passes take about 50 s of one core.
MAX_BATCH_SIZE = 4096  # a batch of 4,096 is 12 MB of images and 10 MB of the MLP's activations; the chapter uses 32
MAX_BATCHES = 1000  # batches per epoch
MAX_REPEATS = 100  # timed rounds per setting
MAX_PREFETCH_FACTOR = 64  # batches each worker loads ahead (DataLoader's default is 2)
MAX_DECODE_PASSES = 100  # 1.7 ms a sample: slower than decoding a real 224 x 224 JPEG
DECODE_FIXED_PASSES = 8
MAX_DECODE_WORK = 3_000_000


def decode_work(settings: int, batch_size: int, batches: int, repeats: int, decode_passes: int) -> int:
    """The filter passes a run decodes (module constants): settings x (1 + 2 x repeats) epochs x batches x
    batch_size samples x (DECODE_FIXED_PASSES + decode_passes)."""
    return settings * (1 + 2 * repeats) * batches * batch_size * (DECODE_FIXED_PASSES + decode_passes)


def check_run(settings: int, batch_size: int, batches: int, repeats: int, decode_passes: int) -> None:
    """InputError naming the input to lower when a run of ``settings`` loader settings would decode more than
    :data:`MAX_DECODE_WORK` passes (about a minute): ``batches``, else ``batch_size``, else ``repeats``, else
    ``decode_passes``, with the largest value allowed given the others."""
    integer_at_least("batches", batches, 1, MAX_BATCHES)
    integer_at_least("repeats", repeats, 2, MAX_REPEATS)
    integer_at_least("batch_size", batch_size, 1, MAX_BATCH_SIZE)
    integer_at_least("decode_passes", decode_passes, 0, MAX_DECODE_PASSES)
    knobs = {"batches": batches, "batch_size": batch_size, "repeats": repeats, "decode_passes": decode_passes}
    if decode_work(settings, **knobs) <= MAX_DECODE_WORK:
        return
    epochs, passes, samples = 1 + 2 * repeats, DECODE_FIXED_PASSES + decode_passes, batches * batch_size
    limits = {  # integer arithmetic: each the largest value whose run is within MAX_DECODE_WORK
        "batches": MAX_DECODE_WORK // (settings * epochs * batch_size * passes),
        "batch_size": MAX_DECODE_WORK // (settings * epochs * batches * passes),
        "repeats": (MAX_DECODE_WORK // (settings * samples * passes) - 1) // 2,
        "decode_passes": MAX_DECODE_WORK // (settings * epochs * samples) - DECODE_FIXED_PASSES,
    }
    lowest = {"batches": 1, "batch_size": 1, "repeats": 2, "decode_passes": 0}
    for name, limit in limits.items():
        if limit >= lowest[name]:
            given = ", ".join(f"{k}={v}" for k, v in knobs.items() if k != name) + f" and {settings} setting(s)"
            beyond = f"the run decodes more than {MAX_DECODE_WORK:,} filter passes (about a minute)"
            raise too_large(name, knobs[name], limit, given, beyond)
    raise InputError(  # even the smallest run of these settings is too long: fewer settings
        "workers",
        f"workers must name fewer settings: {settings} settings of the smallest run decode more than "
        f"{MAX_DECODE_WORK:,} filter passes (about a minute), got {settings}",
    )
