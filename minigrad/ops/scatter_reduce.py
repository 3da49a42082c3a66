"""scatter_reduce: src's entries folded into a copy of a at their index by sum, prod, mean,
amax or amin (with or without a's own entry), and its gradient in minigrad ops.

The gradients are torch's: mean divides by each place's count; amax and amin share the
cotangent evenly among the entries equal to the result; prod is exact at zeros, at
every order (the product of the others, multiplied out where entries are 0).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.function import Context, Function, make_tensor
from .arith import Where
from .shape import Cat, GetItem

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
        self_part = make_tensor(np.asarray(ctx.hit & (not inc)))  # places a does not enter
        if reduce in ("sum", "mean"):
            if reduce == "mean":
                g = g / make_tensor(ctx.count.astype(g._array.dtype))
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
        share = g / make_tensor(np.maximum(n_eq, 1).astype(g._array.dtype))
        ga = share * make_tensor(eq_a.astype(g._array.dtype))
        gs = GetItem.apply(share, tup) * make_tensor(eq_s.astype(g._array.dtype))
        return ga, gs, None, None, None


def _prod_factors(a: Any, src: Any, tup: tuple, inc: bool, hit: np.ndarray) -> tuple:
    """d out / d a and d out / d src: the product of the other entries of each place."""
    if not ((a._array == 0).any() or (src._array == 0).any()):
        rest = ScatterReduce.apply(a, src, tup, "prod", inc)  # out / entry (out recomputed)
        return rest / a, GetItem.apply(rest, tup) / src
    # With zeros, out / entry is 0/0: multiply the others out instead. The entries, sorted
    # by place, get the product of the ones before them and of the ones after them in their
    # place (segmented scans): products only, so every order of derivative is exact.
    own = np.flatnonzero(hit) if inc else np.zeros(0, np.int64)  # a's entries that enter
    ids = np.arange(hit.size).reshape(hit.shape)[tup]
    places = np.concatenate([own, np.broadcast_to(ids, src.shape).ravel()])
    order = np.argsort(places, kind="stable")
    entries = Cat.apply(0, a.reshape(-1)[own], src.reshape(-1))[order]
    ranked = places[order]
    before = _exclusive_products(entries, ranked)
    after = _exclusive_products(entries.flip(0), ranked[::-1]).flip(0)
    others = (before * after)[np.argsort(order)]  # back in the order of `places`
    n = own.size
    at = np.full(hit.size, n + src._array.size)  # a's entries that do not enter: 1
    at[own] = np.arange(n)
    one = make_tensor(np.ones(1, a._array.dtype))
    fa = Cat.apply(0, others, one)[at].reshape(hit.shape)
    return fa, others[n:].reshape(src.shape)


def _exclusive_products(x: Any, places: np.ndarray) -> Any:
    """y_i = prod x_j over the j < i with places[j] = places[i] (places sorted, so each
    place is one run), by Hillis-Steele doubling: log2(longest run) multiplies."""
    pos = np.arange(places.size)
    first = np.ones(places.size, bool)
    first[1:] = places[1:] != places[:-1]
    start = np.maximum.accumulate(np.where(first, pos, 0))  # where each entry's run begins
    y = Where.apply(make_tensor(first), 1.0, x[np.maximum(pos - 1, 0)])
    longest = int((pos - start).max(initial=0)) + 1
    k = 1
    while k < longest:
        y = y * Where.apply(make_tensor(pos - k >= start), y[np.maximum(pos - k, 0)], 1.0)
        k *= 2
    return y
