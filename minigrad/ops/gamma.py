"""The gamma family: lgamma = log|Gamma|, digamma = lgamma', and polygamma(n) = digamma's
n-th derivative. Each one's derivative is the next, so every order differentiates."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._kernel_registry import kernels
from ..autograd.function import Context, Function
from ._base import _Unary, as_float


def _lgamma(x: np.ndarray) -> np.ndarray:
    return kernels("gamma").lgamma(x)


def _polygamma(n: int, x: np.ndarray) -> np.ndarray:
    return kernels("gamma").polygamma(n, x)


class Polygamma(Function):
    """psi^(n)(a), the (n + 1)-th derivative of lgamma (n = 0: digamma)."""

    @staticmethod
    def forward(ctx: Context, a: Any, n: int) -> np.ndarray:
        ctx.save_for_backward(a)
        ctx.n = n
        return _polygamma(n, as_float(a._array, "polygamma"))

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        (a,) = ctx.saved_tensors
        return g * Polygamma.apply(a, ctx.n + 1), None


class Lgamma(_Unary):
    fn = staticmethod(_lgamma)
    grad = staticmethod(lambda a, g: g * Polygamma.apply(a, 0))
