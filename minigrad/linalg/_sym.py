"""The symmetric matrix a hermitian routine reads from one triangle of its input."""

from __future__ import annotations

import numpy as np

from ..autograd.function import Context, Function
from ..tensor import Tensor


class _FromTriangle(Function):
    """tril(A) + tril(A, -1)^T (or from triu); the gradient is sym(g) = (g + g^T) / 2, the
    symmetric gradient torch gives its hermitian routines (eigh, cholesky)."""

    @staticmethod
    def forward(ctx: Context, A: Tensor, lower: bool) -> np.ndarray:
        a = A._array
        t = np.tril(a) if lower else np.triu(a)
        strict = np.tril(a, -1) if lower else np.triu(a, 1)
        return t + np.swapaxes(strict, -1, -2)

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> tuple:
        return (g + g.mT) * 0.5, None


def from_triangle(A: Tensor, lower: bool = True) -> Tensor:
    """The symmetric matrix held in A's lower (or upper) triangle, batched."""
    return _FromTriangle.apply(A, bool(lower))
