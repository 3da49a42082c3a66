"""How the SVD backward treats repeated and zero singular values: the tie policy.

``"exact"`` (the default) returns the true gradient of every loss that has one, at ties too,
and raises where none exists; ``"zero"`` takes each 0/0 pole term as 0 without looking
further (right for losses blind to how a tie splits, e.g. U @ Vh or a function of S alone,
and cheaper); ``"lorentzian"`` replaces every pole 1/x, x = s_j - s_i, s_j + s_i or s_i,
by x / (x^2 + eps) (Liao et al., PRX 9, 031041: the tensor-network habit; an approximation
everywhere, never an error). The policy in force when the SVD runs is the one its backward
uses.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

_KINDS = ("exact", "zero", "lorentzian")


class TiePolicy(NamedTuple):
    """``kind`` is "exact", "zero" or "lorentzian"; ``eps`` is the Lorentzian's width."""

    kind: str = "exact"
    eps: float = 0.0


_local = threading.local()


def _check(kind: str, eps: float | None) -> TiePolicy:
    if kind not in _KINDS:
        raise ValueError(f"tie policy must be one of {_KINDS}, got {kind!r}")
    if kind == "lorentzian":
        if eps is None or not eps > 0 or eps != eps or eps == float("inf"):
            raise ValueError(f"the lorentzian tie policy needs a finite eps > 0, got {eps!r}")
        return TiePolicy(kind, float(eps))
    if eps is not None:
        raise ValueError(f"eps only applies to the lorentzian policy, not {kind!r}")
    return TiePolicy(kind)


@contextmanager
def tie_policy(kind: str = "exact", eps: float | None = None) -> Iterator[TiePolicy]:
    """Choose, for the SVDs computed inside the block, how their backward treats ties.

    >>> A = mg.eye(3, dtype=mg.float64, requires_grad=True)
    >>> with mg.linalg.tie_policy("lorentzian", eps=1e-12):
    ...     U, S, Vh = mg.linalg.svd(A)
    >>> (U * S).sum().backward(); A.grad.shape
    (3, 3)
    """
    policy = _check(kind, eps)
    old = current()
    _local.policy = policy
    try:
        yield policy
    finally:
        _local.policy = old


def current() -> TiePolicy:
    """The policy in force in this thread."""
    return getattr(_local, "policy", _DEFAULT)


def resolve(ties: str | TiePolicy | None) -> TiePolicy:
    """The policy an ``svd(..., ties=...)`` call asks for (None: the one in force)."""
    if ties is None:
        return current()
    if isinstance(ties, TiePolicy):
        return _check(ties.kind, ties.eps if ties.kind == "lorentzian" else None)
    if isinstance(ties, str):
        return _check(ties, None)
    raise TypeError(f"ties must be 'exact', 'zero' or a TiePolicy, got {type(ties).__name__}")


_DEFAULT = TiePolicy()
