"""The modified Bessel functions of the first kind I_n (torch's i0, i1) and their scaled
forms exp(-|x|) I_n (i0e, i1e), for integer n >= 0.

I_n' = (I_(n-1) + I_(n+1)) / 2 with I_(-1) = I_1, so the derivative of an order is two
other orders and every derivative is exact, at x = 0 too (where I_1 / x, the other common
form, is 0 / 0). The scaled form's derivative has the extra -sign(x) exp(-|x|) I_n: at the
kink of i0e at 0 that is torch's choice for |x|, sign(0) = 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._kernel_registry import kernels
from ..autograd.function import Context, Function
from ._base import as_float


def _bessel_i(n: int, x: np.ndarray, scaled: bool) -> np.ndarray:
    return kernels("bessel").bessel_i(n, x, scaled)


class BesselI(Function):
    """I_n(a), or exp(-|a|) I_n(a) when ``scaled``."""

    @staticmethod
    def forward(ctx: Context, a: Any, n: int, scaled: bool) -> np.ndarray:
        ctx.save_for_backward(a)
        ctx.n, ctx.scaled = n, scaled
        return _bessel_i(n, as_float(a._array, "bessel_i"), scaled)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        (a,) = ctx.saved_tensors
        n, scaled = ctx.n, ctx.scaled
        d = (BesselI.apply(a, abs(n - 1), scaled) + BesselI.apply(a, n + 1, scaled)) * 0.5
        if scaled:
            d = d - a.sign() * BesselI.apply(a, n, scaled)
        return g * d, None, None
