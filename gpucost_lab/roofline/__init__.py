"""The roofline (chapter 04): how fast a step could run on a given accelerator (:mod:`.bound`, importable from here,
without torch); the drawing and the kernels placed on it in :mod:`.plot`, imported by its own path.
"""

from gpucost_lab.roofline.bound import (
    Accelerator,
    LayerCost,
    PeakChoice,
    PlausibilityCheck,
    Roofline,
    bounding_peak,
    bytes_per_element,
    catalog,
    catalog_table,
    check_throughput,
    count_flops,
    dtype_name,
    find_accelerator,
    linear_layer_cost,
    lookup,
)

__all__ = [
    "Accelerator",
    "LayerCost",
    "PeakChoice",
    "PlausibilityCheck",
    "Roofline",
    "bounding_peak",
    "bytes_per_element",
    "catalog",
    "catalog_table",
    "check_throughput",
    "count_flops",
    "dtype_name",
    "find_accelerator",
    "linear_layer_cost",
    "lookup",
]
