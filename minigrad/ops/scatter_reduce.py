"""scatter_reduce: src's entries folded into a copy of a at their index by sum, prod, mean,
amax or amin (with or without a's own entry), and its gradient in minigrad ops.

The gradients are torch's: mean divides by each place's count; amax and amin share the
cotangent evenly among the entries equal to the result; prod is exact at zeros (the
product of the others, from a second, zero-free product and the place's zeros: exact at
every order up to one past the number of zeros in a place, an error beyond).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.function import Context, Function, constant
from .arith import Where
from .shape import GetItem

_AT = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum,
       "amin": np.minimum}


def _identity(reduce: str, dtype: np.dtype) -> Any:
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.kind == "b":
        return reduce == "amin"
    big = np.inf if dtype.kind == "f" else np.iinfo(dtype).max
    return -big if reduce == "amax" else big


class ScatterReduce(Function):
    """a with src[j] folded in at the place index tup[j], by ``reduce``."""

    @staticmethod
    def forward(ctx: Context, a: Any, src: Any, tup: tuple, reduce: str,
                include_self: bool) -> np.ndarray:
        x, s = a._array, src._array
        hit = np.zeros(x.shape, bool)
        hit[tup] = True
        out = x.copy()
        if not include_self:
            out[hit] = _identity(reduce, x.dtype)
        _AT[reduce].at(out, tup, s)
        count = None
        if reduce == "mean":
            count = np.zeros(x.shape, np.int64)
            np.add.at(count, tup, 1)
            count = np.where(hit, count + include_self, 1)
            out = out / count if x.dtype.kind == "f" else out // count
            out = out.astype(x.dtype, copy=False)
        ctx.tup, ctx.reduce, ctx.inc, ctx.hit, ctx.count = tup, reduce, include_self, hit, count
        if reduce in ("prod", "amax", "amin"):
            ctx.save_for_backward(a, src)
            ctx.out = out
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        tup, reduce, inc = ctx.tup, ctx.reduce, ctx.inc
        self_part = constant(np.asarray(ctx.hit & (not inc)))  # places a does not enter
        if reduce in ("sum", "mean"):
            if reduce == "mean":
                g = g / constant(ctx.count.astype(g._array.dtype))
            ga = Where.apply(self_part, 0.0, g)
            return ga, GetItem.apply(g, tup), None, None, None
        a, src = ctx.saved_tensors
        if reduce == "prod":
            fa, fs = _prod_factors(a, src, tup, inc, ctx.hit)
            ga = Where.apply(self_part, 0.0, g * fa)
            return ga, GetItem.apply(g, tup) * fs, None, None, None
        x, s, out = a._array, src._array, ctx.out
        eq_a = (x == out) & ~(ctx.hit & (not inc))
        eq_s = s == out[tup]
        n_eq = np.array(eq_a, np.int64)
        np.add.at(n_eq, tup, eq_s)
        share = g / constant(np.maximum(n_eq, 1).astype(g._array.dtype))
        ga = share * constant(eq_a.astype(g._array.dtype))
        gs = GetItem.apply(share, tup) * constant(eq_s.astype(g._array.dtype))
        return ga, gs, None, None, None


def _prod_factors(a: Any, src: Any, tup: tuple, inc: bool, hit: np.ndarray) -> tuple:
    """d out / d a and d out / d src: the product of the other entries of each place,
    as (zero-free product / the entry) x (the product of the place's zeros but this one).
    The latter is written so that it differentiates again exactly: 1; or the one other
    zero, as (sum of the place's zeros) - this entry; or, for two or more zeros, 0 whose
    first derivatives are 0 and whose second raises (``_Vanishing``). So second derivatives
    are exact at zeros, and a third that would need a product of zeros says so."""
    za, zs = a._array == 0, src._array == 0
    if not (za.any() or zs.any()):  # the common case: out / entry (out recomputed, an op)
        rest = ScatterReduce.apply(a, src, tup, "prod", inc)
        return rest / a, GetItem.apply(rest, tup) / src
    zeros = np.array(za & (inc | ~hit), np.int64)  # (an array even when 0-d)
    np.add.at(zeros, tup, zs)
    a1 = Where.apply(constant(za), 1.0, a)
    s1 = Where.apply(constant(zs), 1.0, src)
    rest = ScatterReduce.apply(a1, s1, tup, "prod", inc)  # zero-free product of each place
    zsum = ScatterReduce.apply(Where.apply(constant(~za), 0.0, a),  # = 0, with a gradient
                               Where.apply(constant(~zs), 0.0, src), tup, "sum", inc)

    def zero_product(m: np.ndarray, linear: Any) -> Any:
        """The product of m zeros of a place, given their sum ``linear`` (m = 1)."""
        out = Where.apply(constant(m == 0), 1.0, Where.apply(constant(m == 1), linear, 0.0))
        for k in np.unique(m[m >= 2]):  # m zeros: derivatives below order m vanish
            out = Where.apply(constant(m == k), _Vanishing.apply(linear, int(k) - 1), out)
        return out

    def factor(x: Any, x1: Any, zero: np.ndarray, n: np.ndarray, r: Any, zs_: Any) -> Any:
        if_zero = r * zero_product(n - 1, zs_ - x)  # the other zeros of the place
        if_not = r / x1 * zero_product(n, zs_)
        return Where.apply(constant(zero), if_zero, if_not)

    fa = factor(a, a1, za, zeros, rest, zsum)
    fs = factor(src, s1, zs, zeros[tup], GetItem.apply(rest, tup), GetItem.apply(zsum, tup))
    return fa, fs


class _Vanishing(Function):
    """0 standing for a product of two or more zero variables, whose derivatives of order
    below ``order + 1`` vanish too; the one past that raises rather than say 0."""

    @staticmethod
    def forward(ctx: Context, s: Any, order: int) -> np.ndarray:
        ctx.save_for_backward(s)
        ctx.order = order
        return np.zeros_like(s._array)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        if ctx.order == 0:
            raise RuntimeError("scatter_reduce(reduce='prod'): this derivative, at a place "
                               "where several entries are 0, is not implemented (the orders "
                               "below the number of zeros there are exact)")
        (s,) = ctx.saved_tensors
        return g * _Vanishing.apply(s, ctx.order - 1), None
