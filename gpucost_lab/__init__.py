"""gpucost_lab: measure, explain and price a training workload."""

__version__ = "0.1.0"
