"""Release the result (chapter 06): a release gate that promotes a candidate only when it is safe
(:mod:`~gpucost_lab.release.gate`), and a registry that remembers what is in production
(:mod:`~gpucost_lab.release.registry`). Both sides of a decision are :class:`~gpucost_lab.runs.CandidateResult`.
"""

from ..atomic import atomic_write, atomic_write_text
from ..formatting import format_bytes, format_hours, format_ratio
from ..runs import CandidateResult
from .gate import ACTIONS, CHECKS, Decision, gate
from .registry import REGISTRY_FORMAT, REGISTRY_VERSION, Registry

__all__ = [
    "ACTIONS",
    "CHECKS",
    "REGISTRY_FORMAT",
    "REGISTRY_VERSION",
    "CandidateResult",
    "Decision",
    "Registry",
    "atomic_write",
    "atomic_write_text",
    "format_bytes",
    "format_hours",
    "format_ratio",
    "gate",
]
