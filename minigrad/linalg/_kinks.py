"""Kinks of spectral losses: the minimum-norm subgradient, shared by the SVD and eigh.

A loss that reads tied singular values (or eigenvalues) only through themselves, not their
vectors, is a function of A there, but not differentiable when it weighs the tied members
differently: its Clarke subdifferential at A is the convex hull of the one-sided gradients
U_B diag(g) V_B^T over the orderings of the tie. That set is invariant under rotations of
the tied block (U_B, V_B) -> (U_B Q, V_B Q), so its minimum-norm element is a fixed point
of them: U_B (mean(g) I) V_B^T, i.e. the cotangent replaced by its mean over the block.
A singular value at 0 behaves like |t| (the sign flip of u or v is a symmetry), so there
the minimum-norm element drops its term. Both are applied only where the cotangent shows a
kink (it varies over a tie, or is nonzero at s = 0), as a constant correction: a kink has no
second derivative, and a smooth loss's higher derivatives must pass untouched.
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import make_tensor
from ..tensor import Tensor


def subgradient(g: Tensor, values: np.ndarray, level: np.ndarray, noise: np.ndarray,
                zero: np.ndarray | None = None) -> Tensor:
    """g with the minimum-norm subgradient taken where the loss has a kink: over each tie
    (a run of sorted ``values``, each within ``level`` of its neighbour) along which g
    varies by more than ``noise``, its mean; at a ``zero`` member where |g| > noise, 0.
    Only kinks are touched, and by a constant: a smooth loss (g equal over its ties, 0 at
    s = 0) keeps g and every higher derivative through it.

    >>> g = mg.tensor([1.0, 0.0, 0.5])
    >>> subgradient(g, np.array([2.0, 2.0, 1.0]), np.array([1e-12]), np.array(1e-15))
    tensor([0.5, 0.5, 0.5])
    """
    k = values.shape[-1]
    a = g._array.reshape(-1, k)
    flat_v = values.reshape(-1, k)
    level = np.broadcast_to(level, values.shape[:-1] + (1,)).reshape(-1, 1)
    noise = np.broadcast_to(noise, values.shape[:-1]).reshape(-1)
    near = np.abs(np.diff(flat_v, axis=-1)) <= level
    jumps = near & (np.abs(np.diff(a, axis=-1)) > noise[:, None])
    drop = (np.zeros(a.shape, bool) if zero is None
            else zero.reshape(-1, k) & (np.abs(a) > noise[:, None]))
    fix = None
    for b in np.flatnonzero(jumps.any(-1) | drop.any(-1)):
        fix = np.zeros_like(a) if fix is None else fix
        new = np.where(drop[b], 0.0, a[b])
        ids = np.concatenate([[0], np.cumsum(~near[b])])  # a run of ties shares an id
        for r in np.unique(ids):
            m = ids == r
            if m.sum() > 1:
                new[m] = new[m].mean()
        fix[b] = new - a[b]
    return g if fix is None else g + make_tensor(fix.reshape(g.shape).astype(g.dtype))
