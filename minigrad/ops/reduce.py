"""Reductions: sum, amax/amin, max/min with indices, prod, 2-norm, cumsum."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..autograd.function import Context, Function, constant
from .arith import Where
from .shape import wrap_dim

_ALL = [tuple(range(n)) for n in range(33)]


def norm_dims(dim: int | Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    """Reduction dims as sorted non-negative ints; None, like an empty tuple in torch, means
    all of them."""
    if isinstance(dim, (int, np.integer)):
        dims: Sequence[int] = (dim,)
    elif dim is None or len(dim) == 0:
        return _ALL[ndim] if ndim < 33 else tuple(range(ndim))
    else:
        dims = dim
    wrapped = {wrap_dim(d, ndim) for d in dims}
    return tuple(sorted(wrapped)) if ndim else ()


def _kept(shape: tuple[int, ...], dims: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if i in dims else n for i, n in enumerate(shape))


class Sum(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
        x = a.data
        ctx.shape, ctx.dims = x.shape, dims
        if x.dtype.kind == "f":
            return x.sum(axis=dims, keepdims=keepdim)
        return x.sum(axis=dims, keepdims=keepdim, dtype=np.int64)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        return SumBackward.apply(g, _kept(ctx.shape, ctx.dims), ctx.shape), None, None


class SumBackward(Function):
    """g (reduced) broadcast back to the input shape: one op instead of reshape + expand."""

    @staticmethod
    def forward(ctx: Context, g: Any, kept: tuple, shape: tuple) -> np.ndarray:
        ctx.kept, ctx.gshape = kept, g.data.shape
        src = g.data.reshape(kept)
        if math.prod(shape) >= 1 << 16:
            return np.broadcast_to(src, shape)
        out = np.empty(shape, g.data.dtype)  # small: a copy is cheaper than broadcast_to
        out[...] = src
        return out

    @staticmethod
    def backward(ctx: Context, gg: Any) -> tuple:
        dims = tuple(i for i, n in enumerate(ctx.kept) if n == 1 and gg.shape[i] != 1)
        return gg.sum(dims, keepdim=True).reshape(ctx.gshape), None, None


class Amax(Function):
    """max (or min) over dims; tied maxima share the gradient evenly."""

    @staticmethod
    def forward(ctx: Context, a: Any, dims: tuple[int, ...], keepdim: bool,
                is_max: bool) -> np.ndarray:
        x = a.data
        if x.size == 0:
            raise RuntimeError("max()/min() of an empty tensor has no identity; it is undefined")
        out = (np.max if is_max else np.min)(x, axis=dims, keepdims=True)
        mask = x == out
        ctx.w = constant((mask / mask.sum(axis=dims, keepdims=True)).astype(
            x.dtype if x.dtype.kind == "f" else np.float32))
        ctx.kept = out.shape
        return out if keepdim else out.reshape(tuple(
            n for i, n in enumerate(x.shape) if i not in dims))

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        return g.reshape(ctx.kept) * ctx.w, None, None, None


class ArgReduce(Function):
    """(values, indices) of the max (or min) along one dim; the gradient goes to the index."""

    @staticmethod
    def forward(ctx: Context, a: Any, dim: int, keepdim: bool, is_max: bool) -> tuple:
        x = a.data
        d = dim  # already wrapped by the caller
        if x.ndim == 0:
            return x.copy(), np.zeros((), np.int64)
        idx = (np.argmax if is_max else np.argmin)(x, axis=d, keepdims=True)
        vals = np.take_along_axis(x, idx, axis=d)
        shape = [1] * x.ndim
        shape[d] = x.shape[d]
        ctx.onehot = constant((np.arange(x.shape[d]).reshape(shape) == idx).astype(
            x.dtype if x.dtype.kind == "f" else np.float32))
        ctx.kept = vals.shape
        if not keepdim:
            vals, idx = vals.squeeze(d), idx.squeeze(d)
        return vals, idx.astype(np.int64)

    @staticmethod
    def backward(ctx: Context, g: Any, _gi: Any) -> tuple:
        if not hasattr(ctx, "onehot"):
            return g, None, None, None
        return g.reshape(ctx.kept) * ctx.onehot, None, None, None


class Prod(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, dim: int | None, keepdim: bool) -> np.ndarray:
        x = a.data
        ctx.save_for_backward(a)
        ctx.dims = norm_dims(dim, x.ndim)
        ctx.kept = _kept(x.shape, ctx.dims)
        dt = np.int64 if x.dtype.kind in "biu" else x.dtype
        return np.asarray(np.prod(x, axis=ctx.dims, keepdims=keepdim, dtype=dt))

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        (a,) = ctx.saved_tensors
        g = g.reshape(ctx.kept)
        x = a.data
        if np.all(x != 0):
            return g * Prod.apply(a, _single(ctx.dims), True) / a, None, None
        # With zeros present, the product of the others, computed directly (first order only).
        moved = np.moveaxis(x, ctx.dims, range(len(ctx.dims)))
        flat = moved.reshape((-1,) + moved.shape[len(ctx.dims):])
        before = np.concatenate([np.ones_like(flat[:1]), np.cumprod(flat, 0)[:-1]])
        after = np.concatenate([np.cumprod(flat[::-1], 0)[::-1][1:], np.ones_like(flat[:1])])
        others = np.moveaxis((before * after).reshape(moved.shape), range(len(ctx.dims)),
                             ctx.dims)
        return g * constant(others), None, None


def _single(dims: tuple[int, ...]) -> int | None:
    return dims[0] if len(dims) == 1 else None


class Norm2(Function):
    """sqrt(sum x^2) over dims; the gradient at the zero vector is 0 (a subgradient)."""

    @staticmethod
    def forward(ctx: Context, a: Any, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
        x = a.data if a.data.dtype.kind == "f" else a.data.astype(np.float32)
        ctx.save_for_backward(a)
        ctx.dims, ctx.kept = dims, _kept(x.shape, dims)
        return np.asarray(np.sqrt(np.sum(x * x, axis=dims, keepdims=keepdim)))

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        (a,) = ctx.saved_tensors
        n = Norm2.apply(a, ctx.dims, True)
        safe = Where.apply(n == 0, 1, n)
        return g.reshape(ctx.kept) * a / safe, None, None


class Cumsum(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, dim: int) -> np.ndarray:
        ctx.dim = dim
        dt = np.int64 if a.data.dtype.kind in "biu" else a.data.dtype
        return np.cumsum(a.data, axis=dim, dtype=dt)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        rev = (slice(None),) * ctx.dim + (slice(None, None, -1),)
        return Cumsum.apply(g[rev], ctx.dim)[rev], None
