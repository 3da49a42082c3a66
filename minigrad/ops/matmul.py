"""Matrix product of (batched) matrices; batch dims broadcast and the engine un-broadcasts."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.function import Context, Function
from ._base import operands


class MatMul(Function):
    """a @ b for a (*, m, k) and b (*, k, n); d/da = g b^T, d/db = a^T g."""

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> np.ndarray:
        na, nb = ctx.needs_input_grad
        ctx.save_for_backward(a if nb else None, b if na else None)
        x, y = operands(a, b)
        if x.shape[-1] != y.shape[-2]:
            raise RuntimeError(
                f"mat1 and mat2 shapes cannot be multiplied ({x.shape[-2]}x{x.shape[-1]} "
                f"and {y.shape[-2]}x{y.shape[-1]})"
            )
        return np.matmul(_blasable(x), _blasable(y))

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        a, b = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        return (g @ b.mT if na else None), (a.mT @ g if nb else None)


def _blasable(x: np.ndarray) -> np.ndarray:
    """A contiguous copy of a strided stack of matrices: numpy's batched matmul falls back
    to a slow loop on such views (2x slower for 3x3 stacks), and the copy costs O(n^2)."""
    return x if x.ndim < 3 or x.flags.c_contiguous else np.ascontiguousarray(x)
