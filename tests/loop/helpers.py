"""Hand estimates of one call of each phase of the simulated training loop, shared by the tests of its costs
(tests/loop/test_costs.py) and of the loop itself (tests/loop/test_simulated.py).

From the datasheet figures the simulator uses (A100 80GB: 19.5 TFLOP/s
fp32, 2039 GB/s; kernels at 70% of the roofline bound + 2 us; pinned copies 25 GB/s, pageable 8 GB/s, disk 3 GB/s)
for 8 x Linear(2048, 2048), batch 64; one simulated microsecond is one loop millisecond (TIME_SCALE = 1000):

- a matmul: 2 x 64 x 2048 x 2048 = 536,870,912 FLOP / 19.5e12 = 27.53 us (its 17.8 MB take only 8.7 us), so
  27.53 / 0.7 + 2 = 41.33 us; forward + backward = 3 x 8 = 24 of them: 991.9 us
- fused Adam per layer: (2048^2 + 2048) x 28 bytes = 117.5 MB / 2.039e12 = 57.63 us / 0.7 + 2 = 84.32 us; x 8: 674.6
- the batch's copy: 64 x 150,528 bytes = 9.63 MB / 25e9 + 1.5 = 386.9 us
- ReLU / its gradient / the loss: 8 x 2.73 + 8 x 3.10 + 2.73 = 49.4 us
- => forward_backward (synchronized, GPU-bound) ~ 991.9 + 674.6 + 386.9 + 49.4 = 2102.8 us -> 2.10 s
- eval, one held-out batch: 8 matmuls + 8 ReLUs + the loss = 330.6 + 21.8 + 2.7 = 355.2 us -> 0.355 s
- checkpoint: 8 x (2048^2 + 2048) x 3 states x 4 bytes = 402,849,792 bytes, copied pageable at 8 GB/s (50.36 ms,
  48 copies x 7.5 us of call and DMA set-up = 0.36 ms) then written at 3 GB/s (134.28 ms): 185.0 ms -> 185.0 s
- async checkpoint: the same bytes to pinned memory at 25 GB/s: 16.11 ms -> 16.11 s blocking
- data with 4 workers: the DataLoader's __next__, 120 us -> 0.12 s; with no worker also decoding
  64 x 80 us = 5120 us: 5240 us -> 5.24 s
- logging: one loss.item() on an idle stream: 14 (op overhead) + 6 (copy call) + 3 (sync call) = 23 us -> 0.023 s

CPU durations in the simulator and every call here are jittered by +-5%, hence the tolerances.
"""

from gpucost_lab.loop.costs import TIME_SCALE

HAND_S = {
    "forward_backward": 2.1028,
    "eval_batch": 0.3552,
    "checkpoint": 185.0,
    "async_checkpoint": 402_849_792 / 25e9 * TIME_SCALE,  # 16.114 s
    "data_workers": 0.120,
    "data_no_workers": 5.240,
    "logging": 0.023,
}
