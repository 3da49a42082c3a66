"""How the SVD backward treats repeated and zero singular values: the tie policy.

``"exact"`` (the default) returns the true gradient of every loss that has one, at ties too,
and raises where none exists; ``"zero"`` takes each 0/0 pole term as 0 without looking
further (right for losses blind to how a tie splits, e.g. U @ Vh or a function of S alone,
and cheaper); ``"lorentzian"`` replaces every pole 1/x, x = s_j - s_i, s_j + s_i or s_i,
by x / (x^2 + eps) (Liao et al., PRX 9, 031041: the tensor-network habit; an approximation
everywhere, never an error). The policy in force when the SVD runs is the one its backward
uses.

A kink is where the loss is a function of A but not differentiable: a function of the
singular values (or eigenvalues) alone that weighs tied members differently (the largest
of them: the spectral norm at a multiple top value), or that changes with a singular value
at 0 (which behaves like |t|: the nuclear norm at a rank-deficient A). ``kinks`` says what
the backward returns there, under every kind: ``"subgradient"`` (the default) the
minimum-norm element of the Clarke subdifferential, as ``max`` (a tie split evenly) and
``abs`` (0 at 0) do: the cotangent of the tied values replaced by its mean over the tie, a
zero singular value's term dropped. It is basis-independent and deterministic, and what
subgradient training (orthogonal init then spectral normalisation, robust PCA and matrix
completion started at 0) expects. ``"raise"`` raises LinAlgError instead, for code that
must know it met one. A loss whose value depends on an arbitrary basis (a truncation inside
a tie, ``U[:, 0]`` at a tie) is not a function of A at all: that is an error under either.
Near a tie (distinct values closer than sqrt(eps) times the largest, or a value that close
to 0) such a loss is a function of A, and "exact" returns its gradient with an
``IllConditionedWarning``: the vectors it reads are right only to ~eps s_1 / gap, and the
warning states the gradient's relative error that follows (that much where the loss moves
with the pair's rotation at the cotangents' scale, more where it is nearly flat along it);
``warnings.simplefilter("error", mg.linalg.IllConditionedWarning)`` raises it instead, as
a LinAlgError. (A loss that reads one member of such a pair only, ``U[:, 0]`` or ``U[:, :k]``
cut between them, takes the same formula without a warning: its numerator is not checked.)
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

_KINDS = ("exact", "zero", "lorentzian")
_KINKS = ("subgradient", "raise")


class TiePolicy(NamedTuple):
    """``kind`` is "exact", "zero" or "lorentzian"; ``eps`` is the Lorentzian's width;
    ``kinks`` is "subgradient" or "raise". (Internally "local" rebuilds a recorded exact
    pass's formula: its first-order limits, 0 where it looked downstream.)"""

    kind: str = "exact"
    eps: float = 0.0
    kinks: str = "subgradient"


_local = threading.local()


def _check(kind: str, eps: float | None, kinks: str = "subgradient") -> TiePolicy:
    if kind not in _KINDS:
        raise ValueError(f"tie policy must be one of {_KINDS}, got {kind!r}")
    if kinks not in _KINKS:
        raise ValueError(f"kinks must be one of {_KINKS}, got {kinks!r}")
    if kind == "lorentzian":
        if eps is None or not eps > 0 or eps != eps or eps == float("inf"):
            raise ValueError(f"the lorentzian tie policy needs a finite eps > 0, got {eps!r}")
        return TiePolicy(kind, float(eps), kinks)
    if eps is not None:
        raise ValueError(f"eps only applies to the lorentzian policy, not {kind!r}")
    return TiePolicy(kind, 0.0, kinks)


@contextmanager
def tie_policy(kind: str = "exact", eps: float | None = None,
               kinks: str = "subgradient") -> Iterator[TiePolicy]:
    """Choose, for the SVDs (and eigh) computed inside the block, how their backward treats
    ties, and what it returns at a kink.

    >>> A = mg.eye(3, dtype=mg.float64, requires_grad=True)
    >>> with mg.linalg.tie_policy("lorentzian", eps=1e-12):
    ...     U, S, Vh = mg.linalg.svd(A)
    >>> (U * S).sum().backward(); A.grad.shape
    (3, 3)
    >>> B = mg.eye(2, dtype=mg.float64, requires_grad=True)
    >>> mg.linalg.matrix_norm(B, 2).backward(); B.grad   # the spectral norm at I: I / n
    tensor([[0.5, 0. ],
            [0. , 0.5]], dtype=minigrad.float64)
    """
    policy = _check(kind, eps, kinks)
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
        return _check(ties.kind, ties.eps if ties.kind == "lorentzian" else None, ties.kinks)
    if isinstance(ties, str):
        return _check(ties, None, current().kinks)
    raise TypeError(f"ties must be 'exact', 'zero' or a TiePolicy, got {type(ties).__name__}")


_DEFAULT = TiePolicy()
