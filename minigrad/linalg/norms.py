"""Matrix norms built on the differentiable SVD (torch.linalg.matrix_norm and friends)."""

from __future__ import annotations

from typing import Any

from .._dims import wrap_dim
from ..tensor import Tensor
from ._checks import norm_input
from .svd import svdvals


def _matrix_dims(A: Tensor, dim: tuple[int, int]) -> tuple[int, int]:
    """The two matrix dims, validated as torch does (out of range is an IndexError)."""
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           f"dimensions, got {A.ndim}")
    if isinstance(dim, int) or len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim}")
    r, c = (wrap_dim(d, A.ndim) for d in dim)
    if r == c:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got {tuple(dim)}")
    return r, c


def _matrix_dims_last(A: Tensor, dims: tuple[int, int]) -> Tensor:
    """Move the two matrix dims to the end (a no-op for the default (-2, -1))."""
    r, c = dims
    if (r, c) == (A.ndim - 2, A.ndim - 1):
        return A
    rest = [d for d in range(A.ndim) if d not in (r, c)]
    return A.permute(*rest, r, c)


def _keep(out: Tensor, dims: tuple[int, int], keepdim: bool) -> Tensor:
    if not keepdim:
        return out
    for d in sorted(dims):
        out = out.unsqueeze(d)
    return out


def _extreme(t: Tensor, largest: bool, what: str) -> Tensor:
    """max / min over the last dim; the max over nothing is 0 (a norm of an empty matrix, as
    in numpy and torch), the min over nothing has no value."""
    if t.shape[-1] == 0:
        if not largest:
            raise IndexError(f"linalg.matrix_norm: the smallest {what} of an empty matrix is "
                             "undefined (torch: amin() of a zero-size dim)")
        return t.sum(-1)  # zeros, still connected to the graph
    return t.amax(-1) if largest else t.amin(-1)


_ORDS = ("fro", "nuc", 2, -2, 1, -1, float("inf"), float("-inf"))


def matrix_norm(A: Tensor, ord: Any = "fro", dim: tuple[int, int] = (-2, -1),
                keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """A matrix norm over ``dim``, batched over the rest: ``'fro'`` sqrt(sum a_ij^2),
    ``'nuc'`` sum of singular values, ``2`` / ``-2`` largest / smallest singular value,
    ``1`` / ``-1`` max / min column abs-sum, ``inf`` / ``-inf`` max / min row abs-sum.

    The SVD-based ones are differentiable: d||A||_* = U Vh, d||A||_2 = u_1 v_1^T. ``dtype``
    casts A first (no narrower than A's, as in torch).

    >>> mg.linalg.matrix_norm(mg.tensor([[3.0, 0.0], [0.0, -4.0]]), "nuc")
    tensor(7.)
    """
    if not any(ord == o and isinstance(ord, str) == isinstance(o, str) for o in _ORDS):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported; use 'fro', 'nuc', "
                           "2, -2, 1, -1, inf or -inf")
    dims = _matrix_dims(A, dim)
    M = _matrix_dims_last(norm_input(A, dtype, "linalg.matrix_norm"), dims)
    if ord == "fro":
        out = M.norm("fro", dim=(-2, -1))
    elif ord == "nuc":
        out = svdvals(M).sum(-1)
    elif ord in (2, -2):
        s = svdvals(M)
        if s.shape[-1] == 0:
            out = _extreme(s, ord == 2, "singular value")
        else:
            out = s[..., 0] if ord == 2 else s[..., -1]
    elif ord in (1, -1):
        out = _extreme(M.abs().sum(-2), ord == 1, "column sum")
    elif ord in (float("inf"), float("-inf")):
        out = _extreme(M.abs().sum(-1), ord > 0, "row sum")
    else:
        raise RuntimeError(f"matrix_norm: order {ord!r} is not supported; use 'fro', 'nuc', "
                           "2, -2, 1, -1, inf or -inf")
    return _keep(out, dims, keepdim)


def nuclear_norm(A: Tensor, keepdim: bool = False) -> Tensor:
    """||A||_* = sum of the singular values of A (the convex envelope of rank), batched.

    Its gradient U Vh (the polar factor) is what makes nuclear-norm-penalised training work.

    >>> mg.linalg.nuclear_norm(mg.eye(3))
    tensor(3.)
    """
    return matrix_norm(A, "nuc", keepdim=keepdim)
