"""The symmetric matrix a hermitian routine reads from one triangle of its input."""

from __future__ import annotations

import numpy as np

from ..autograd.function import Context, Function
from ..tensor import Tensor


class _FromTriangle(Function):
    """tril(A) + tril(A, -1)^H (or from triu; a complex diagonal's real part); the gradient
    is (g + g^H) / 2, the hermitian gradient torch gives its hermitian routines (eigh,
    cholesky)."""

    @staticmethod
    def forward(ctx: Context, A: Tensor, lower: bool) -> np.ndarray:
        a = A._array
        t = np.tril(a) if lower else np.triu(a)
        strict = np.tril(a, -1) if lower else np.triu(a, 1)
        if a.dtype.kind == "c":
            strict = strict.conj()
            idx = np.arange(a.shape[-1])
            t[..., idx, idx] = t[..., idx, idx].real  # (t is tril's copy)
        return t + np.swapaxes(strict, -1, -2)

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> tuple:
        return (g + (g.mH if g._array.dtype.kind == "c" else g.mT)) * 0.5, None


def from_triangle(A: Tensor, lower: bool = True) -> Tensor:
    """The symmetric matrix held in A's lower (or upper) triangle, batched."""
    return _FromTriangle.apply(A, bool(lower))
