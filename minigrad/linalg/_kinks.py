"""Kinks of spectral losses: the minimum-norm subgradient, shared by the SVD and eigh.

A loss that reads tied singular values (or eigenvalues) only through themselves, not their
vectors, is a function of A there, but not differentiable when it weighs the tied members
differently: its Clarke subdifferential at A is the convex hull of the one-sided gradients
U_B diag(g) V_B^T over the orderings of the tie. That set is invariant under rotations of
the tied block (U_B, V_B) -> (U_B Q, V_B Q), so its minimum-norm element is a fixed point
of them: U_B (mean(g) I) V_B^T, i.e. the cotangent replaced by its mean over the block.
A singular value at 0 behaves like |t| (the sign flip of u or v is a symmetry), so there
the minimum-norm element drops its term. Both are linear maps of the cotangent with the
blocks held fixed, applied as one (*, k, k) matrix, so higher derivatives pass through.
"""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor


def blocks(values: np.ndarray, level: np.ndarray, blind: np.ndarray,
           zero: np.ndarray | None = None) -> np.ndarray | None:
    """The (*, k, k) averaging matrix M (g -> g M) over the tied blind members (a run of
    sorted ``values``, each within ``level`` of its neighbour, is one tie; a member the loss
    sees may sit inside it), with the rows and columns of blind ``zero`` members emptied;
    None where it would be the identity.

    >>> blocks(np.array([2.0, 2.0, 1.0]), np.array([1e-12]), np.ones(3, bool))
    array([[0.5, 0.5, 0. ],
           [0.5, 0.5, 0. ],
           [0. , 0. , 1. ]])
    """
    k = values.shape[-1]
    flat_v, flat_blind = values.reshape(-1, k), blind.reshape(-1, k)
    level = np.broadcast_to(level, values.shape[:-1] + (1,)).reshape(-1, 1)
    near = np.abs(np.diff(flat_v, axis=-1)) <= level
    drop = (np.zeros(flat_v.shape, bool) if zero is None
            else zero.reshape(-1, k) & flat_blind)
    ids = np.concatenate([np.zeros((flat_v.shape[0], 1), int),
                          np.cumsum(~near, axis=-1)], axis=-1)  # a run of ties shares an id
    M, changed = None, False
    for b in np.flatnonzero(near.any(-1) | drop.any(-1)):
        keep = flat_blind[b] & ~drop[b]
        runs = [np.flatnonzero(keep & (ids[b] == r)) for r in np.unique(ids[b][keep])]
        runs = [m for m in runs if m.size > 1]
        if not runs and not drop[b].any():
            continue
        if M is None:
            M = np.broadcast_to(np.eye(k), (flat_v.shape[0], k, k)).copy()
        for m in runs:
            M[b][np.ix_(m, m)] = 1.0 / m.size
        M[b][drop[b], :] = 0.0
        M[b][:, drop[b]] = 0.0
        changed = True
    return M.reshape(values.shape[:-1] + (k, k)) if changed else None


def apply(g: Tensor, M: np.ndarray | None) -> Tensor:
    """g M over the last axis (M from ``blocks``)."""
    if M is None:
        return g
    return (g.unsqueeze(-2) @ Tensor._make(M.astype(g.dtype))).squeeze(-2)
