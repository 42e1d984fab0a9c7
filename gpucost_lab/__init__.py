"""gpucost_lab: measure, explain and price a training workload.

Bad input anywhere raises :class:`InputError` (a ValueError) naming the field in ``err.field``.
"""

from gpucost_lab._validate import InputError

__version__ = "0.1.0"
__all__ = ["InputError", "__version__"]
