"""Release the result (chapter 06): a release gate that promotes a candidate only when it is safe
(:mod:`~gpucost_lab.release.gate`), and a registry that remembers what is in production
(:mod:`~gpucost_lab.release.registry`). Both sides of a decision are
:class:`~gpucost_lab.release.candidate.CandidateResult`.
"""

from gpucost_lab.release.candidate import CandidateResult
from gpucost_lab.release.gate import ACTIONS, CHECKS, Decision, gate
from gpucost_lab.release.registry import REGISTRY_FORMAT, REGISTRY_VERSION, Registry

__all__ = [
    "ACTIONS",
    "CHECKS",
    "REGISTRY_FORMAT",
    "REGISTRY_VERSION",
    "CandidateResult",
    "Decision",
    "Registry",
    "gate",
]
