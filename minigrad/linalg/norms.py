"""Matrix norms built on the differentiable SVD (torch.linalg.matrix_norm and friends)."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from .svd import svdvals


def _matrix_dims_last(A: Tensor, dim: tuple[int, int]) -> Tensor:
    """Move the two matrix dims to the end (a no-op for the default (-2, -1))."""
    if A.ndim < 2:
        raise RuntimeError(f"matrix_norm: the input must have at least 2 dimensions, got {A.ndim}")
    r, c = (d % A.ndim for d in dim)
    if r == c:
        raise RuntimeError(f"matrix_norm: dims must be different, got {dim}")
    if (r, c) == (A.ndim - 2, A.ndim - 1):
        return A
    rest = [d for d in range(A.ndim) if d not in (r, c)]
    return A.permute(*rest, r, c)


def _keep(out: Tensor, A: Tensor, dim: tuple[int, int], keepdim: bool) -> Tensor:
    if not keepdim:
        return out
    for d in sorted(d % A.ndim for d in dim):
        out = out.unsqueeze(d)
    return out


def matrix_norm(A: Tensor, ord: Any = "fro", dim: tuple[int, int] = (-2, -1),
                keepdim: bool = False) -> Tensor:
    """A matrix norm over ``dim``, batched over the rest: ``'fro'`` sqrt(sum a_ij^2),
    ``'nuc'`` sum of singular values, ``2`` / ``-2`` largest / smallest singular value,
    ``1`` / ``-1`` max / min column abs-sum, ``inf`` / ``-inf`` max / min row abs-sum.

    The SVD-based ones are differentiable: d||A||_* = U Vh, d||A||_2 = u_1 v_1^T.

    >>> mg.linalg.matrix_norm(mg.tensor([[3.0, 0.0], [0.0, -4.0]]), "nuc")
    tensor(7.)
    """
    M = _matrix_dims_last(A, dim)
    if ord == "fro":
        out = M.norm("fro", dim=(-2, -1))
    elif ord == "nuc":
        out = svdvals(M).sum(-1)
    elif ord in (2, -2):
        s = svdvals(M)
        out = s[..., 0] if ord == 2 else s[..., -1]
    elif ord in (1, -1):
        col = M.abs().sum(-2)
        out = col.amax(-1) if ord == 1 else col.amin(-1)
    elif ord in (float("inf"), float("-inf")):
        row = M.abs().sum(-1)
        out = row.amax(-1) if ord > 0 else row.amin(-1)
    else:
        raise RuntimeError(f"matrix_norm: order {ord!r} is not supported; use 'fro', 'nuc', "
                           "2, -2, 1, -1, inf or -inf")
    return _keep(out, A, dim, keepdim)


def nuclear_norm(A: Tensor, keepdim: bool = False) -> Tensor:
    """||A||_* = sum of the singular values of A (the convex envelope of rank), batched.

    Its gradient U Vh (the polar factor) is what makes nuclear-norm-penalised training work.

    >>> mg.linalg.nuclear_norm(mg.eye(3))
    tensor(3.)
    """
    return matrix_norm(A, "nuc", keepdim=keepdim)
