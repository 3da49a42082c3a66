"""Reductions: sum, amax/amin, max/min with indices, prod, 2-norm, cumsum."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._broadcast import binary, row_op
from .._dims import count_over, inverse_permutation, norm_dims
from .._kernel_registry import KERNEL_FLOATS, pass_kernel
from ..autograd.function import Context, Function, make_tensor
from ..autograd.grad_mode import _state
from ._base import as_float, conj, float_operands, refuse_complex
from .arith import Where
from .reduce_fast import _FAST_FROM, fast_max, fast_sum, fast_sumsq
from .shape import Cat

# numpy's functions as globals: CPython 3.11 does not cache lookups on the numpy module
# (each np.<name> is a full attribute lookup), and these are read on every op.
_empty, _asarray, _multiply, _add_reduce = np.empty, np.asarray, np.multiply, np.add.reduce


def _kept(shape: tuple[int, ...], dims: tuple[int, ...]) -> tuple[int, ...]:
    if len(dims) == len(shape):  # all of them (dims are distinct): the common loss.sum()
        return (1,) * len(shape)
    return tuple([1 if i in dims else n for i, n in enumerate(shape)])


class Sum(Function):
    _numpy_forward = True

    @staticmethod
    def forward(ctx: Context, a: Any, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
        x = a._array
        ctx.shape, ctx.dims = x.shape, dims
        if x.dtype.kind == "f":
            if x.size < _FAST_FROM:  # fast_sum's first case, without the call (a small sum)
                return _asarray(_add_reduce(x, axis=dims, keepdims=keepdim))
            return fast_sum(x, dims, keepdim)
        return x.sum(axis=dims, keepdims=keepdim, dtype=None if x.dtype.kind == "c" else np.int64)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        if not _state.enabled:  # nothing records (a first-order walk): no node to make
            return make_tensor(_spread(g._array, ctx.shape, ctx.dims)), None, None
        return SumBackward.apply(g, ctx.shape, ctx.dims), None, None


class Mean(Function):
    """sum over dims / count: one node (a sum and a divide by a number would be two)."""

    _numpy_forward = True

    @staticmethod
    def forward(ctx: Context, a: Any, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
        x = a._array  # a float or complex: the caller refuses the others, as torch does
        ctx.shape, ctx.dims = x.shape, dims
        ctx.count = count = count_over(x.shape, dims)
        if x.dtype == np.float16:  # as torch: summed and divided in float32 (65504 is
            # float16's largest: a count above it was inf, and the mean 0)
            return np.asarray(np.sum(x, axis=dims, keepdims=keepdim, dtype=np.float32)
                              / count).astype(np.float16)
        # a new array: divided in place
        out = (fast_sum(x, dims, keepdim) if x.dtype.kind == "f"
               else np.asarray(x.sum(axis=dims, keepdims=keepdim)))
        # 0 / 0 is nan for an empty slice, as torch (apply keeps numpy quiet about it)
        if not out.ndim:  # (x.mean()) numpy's scalar divide: a fifth of a 0-d array's time
            return _asarray(out[()] / count, out.dtype)
        return np.divide(out, count, out=out, casting="unsafe")

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        count = ctx.count
        if g._array.dtype == np.float16:  # a count past 65504 is inf in float16: 1 / count
            g, count = g * (1.0 / count if count else math.nan), 1
        if not _state.enabled:  # count 0 spreads nothing (the walk keeps numpy quiet)
            share = g._array / count
            return make_tensor(_spread(share, ctx.shape, ctx.dims)), None, None
        return SumBackward.apply(g / count, ctx.shape, ctx.dims), None, None


class Var(Function):
    """sum (x - mean)^2 over dims / max(count - correction, 0) of a real float x, one node;
    d/dx = 2 (x - mean) / (count - correction) (the mean's own term sums to zero).

    One centred array, squared in place: as ops (centre, square, sum, divide) var wrote two
    input-sized temporaries, and of a (1000, 1000) float64 those fresh pages cost 3x torch's
    whole var."""

    _numpy_forward = True

    @staticmethod
    def forward(ctx: Context, a: Any, dims: tuple[int, ...], correction: float,
                keepdim: bool) -> np.ndarray:
        x = a._array
        ctx.save_for_backward(a)
        ctx.dims, ctx.kept = dims, _kept(x.shape, dims)
        count = count_over(x.shape, dims)
        ctx.dof = max(count - correction, 0)  # 0: the value is inf or nan, and its gradient
        mean = fast_sum(x, dims, True)
        np.divide(mean, count, out=mean)  # 0 / 0: nan, as torch
        ctx.mean = mean  # (kept-dims shape: small) for a first-order backward
        c = np.asarray(binary(np.subtract, x, mean))  # (a 0-d x gives a scalar)
        np.multiply(c, c, out=c)
        out = fast_sum(c, dims, keepdim)
        return np.divide(out, ctx.dof, out=out)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        (a,) = ctx.saved_tensors
        # the forward's mean where nothing records; recorded, the mean is a's function again
        centred = a - (Mean.apply(a, ctx.dims, True) if _state.enabled else make_tensor(ctx.mean))
        return g.reshape(ctx.kept) * (centred * (2.0 / ctx.dof if ctx.dof else math.inf)), \
            None, None, None


# From this many elements SumBackward returns a (read-only) broadcast view, allocating
# nothing; below it, a copy is cheaper than broadcast_to.
_BROADCAST_FROM = 1 << 16


def _spread(g: np.ndarray, shape: tuple, dims: tuple) -> np.ndarray:
    """``g``, a sum over ``dims``, broadcast back to ``shape``."""
    if g.ndim:  # a 0-d g (the sum of everything) broadcasts as it is
        g = g.reshape(_kept(shape, dims))
    if math.prod(shape) >= _BROADCAST_FROM:
        return np.broadcast_to(g, shape)
    out = _empty(shape, g.dtype)  # small: a copy is cheaper than broadcast_to
    out[...] = g
    return out


class SumBackward(Function):
    """g (reduced) broadcast back to the input shape: one op instead of reshape + expand."""

    _numpy_forward = True

    @staticmethod
    def forward(ctx: Context, g: Any, shape: tuple, dims: tuple) -> np.ndarray:
        ctx.dims, ctx.gshape = dims, g._array.shape
        return _spread(g._array, shape, dims)

    @staticmethod
    def backward(ctx: Context, gg: Any) -> tuple:
        return gg.sum(ctx.dims, keepdim=True).reshape(ctx.gshape), None, None


def max_shift(a: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    """max(a) over ``dims`` (kept) of a non-empty a, the shift softmax and logsumexp are
    exact under; an infinite maximum (or NaN) shifts by 0 instead (no inf - inf)."""
    # fast_max (the same maximum, in long loops: numpy's reduce over rows of (32, 256, 256)
    # took 3.6x longer), or the ufunc's reduce itself (np.max's Python layer doubles the cost
    # on small arrays); a 0-d array is its own maximum (dim 0 is it)
    m = fast_max(a, dims, True, True) if a.ndim and dims else np.maximum.reduce(
        a, axis=dims if a.ndim else None, keepdims=True)
    if not np.isfinite(m).all():
        m = np.where(np.isfinite(m), m, 0).astype(a.dtype)
    return m


def shifted(a: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    """a - max(a) over ``dims`` (max_shift's), so that exp never overflows."""
    if a.size == 0:
        return a - np.zeros((), a.dtype)
    m = max_shift(a, dims)
    return row_op(np.subtract, a, m) if a.ndim else a - m  # (rows: the kernel's)


class Softmax(Function):
    """s = exp(x) / sum exp(x) over dims, from x - max(x); d/dx = s (g - sum(g s)).

    ``probs``, when given, are these values computed already (a fused loss that has them):
    the node is recorded all the same, so its derivative is there."""

    @staticmethod
    def forward(ctx: Context, x: Any, dims: tuple[int, ...], probs: Any) -> Any:
        ctx.dims = dims
        if probs is None:
            a = x._array if x._array.dtype.kind == "f" else as_float(x._array, "softmax")
            # a - max is a new array: exp'd in place, not into another (asarray: of a 0-d
            # array, numpy's difference is a scalar)
            probs = _asarray(shifted(a, dims))
            np.exp(probs, out=probs)
            row_op(np.divide, probs, fast_sum(probs, dims, True), out=probs)  # (as Tensor.sum)
        out = make_tensor(probs)
        ctx.save_for_backward(out)  # the output: its backward differentiates again
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        (s,) = ctx.saved_tensors
        if not _state.enabled and s._array.dtype.kind == "f" and s._array.ndim:  # in numpy:
            # nothing records
            return make_tensor(_softmax_vjp(g._array, s._array, ctx.dims)), None, None
        return s * (g - (g * s).sum(ctx.dims, keepdim=True)), None, None


class LogSumExp(Function):
    """log sum exp x over one dim (kept), as m + log1p(sum(exp(x - m)) - 1) with m the max
    and the maximum's own term entering as expm1(0) = 0, so the small terms keep their
    digits; d/dx = exp(x - y), the softmax, from the saved output y. Real floats; the
    caller takes several dims, complex and empty inputs through recorded ops (the same
    formula), which cost 4x this on (64, 128, 64) over its last dim."""

    @staticmethod
    def forward(ctx: Context, x: Any, dim: int) -> Any:
        a = x._array
        m = max_shift(a, (dim,))
        z = binary(np.subtract, a, m)
        e = np.exp(z)
        first = np.argmax(z, axis=dim, keepdims=True)  # one maximum: z is 0 there, or inf
        np.put_along_axis(e, first, np.expm1(np.take_along_axis(z, first, axis=dim)), dim)
        out = make_tensor(np.log1p(fast_sum(e, (dim,), True)) + m)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        x, y = ctx.saved_tensors
        return g * (x - y).exp(), None


class LogSoftmax(Function):
    """y = x - log sum exp x over dims, from z = x - max(x) (so z - log sum exp z, never the
    log of an underflow); d/dx = g - exp(y) sum g, from the output (exp(y) is the softmax)."""

    @staticmethod
    def forward(ctx: Context, x: Any, dims: tuple[int, ...]) -> Any:
        ctx.dims = dims
        a = x._array if x._array.dtype.kind == "f" else as_float(x._array, "log_softmax")
        z = _asarray(shifted(a, dims))  # a new array (asarray: of a 0-d one, a scalar)
        if z.size:
            row_op(np.subtract, z, np.log(fast_sum(np.exp(z), dims, True)), out=z)
        out = make_tensor(z)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        (y,) = ctx.saved_tensors
        if not _state.enabled and y._array.dtype.kind == "f" and y._array.ndim \
                and g._array.dtype == y._array.dtype:  # in numpy: nothing records
            return make_tensor(_log_softmax_vjp(g._array, y._array, ctx.dims)), None
        return g - y.exp() * g.sum(ctx.dims, keepdim=True), None


def _log_softmax_vjp(g: np.ndarray, y: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    """g - exp(y) sum(g) over ``dims``, the recorded rule's steps (so its numbers) in one new
    array, without a node per step: three passes where the ops took four and three arrays."""
    out = np.exp(y)
    row_op(np.multiply, out, fast_sum(g, dims, True), out=out)
    return np.subtract(g, out, out=out)


def _softmax_vjp(g: np.ndarray, s: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    """s (g - sum(g s)) over ``dims``, the same steps as the recorded rule (so the same
    numbers) in one new array. A g laid out otherwise than s (the gradient of a transposed
    view, as attention's scores.transpose(...).contiguous() sends back) is copied into s's
    layout first: three passes that each read it across its rows cost 2.5x more."""
    if s.flags.c_contiguous and not g.flags.c_contiguous and 0 not in g.strides:
        g = np.ascontiguousarray(g)
    out = _multiply(g, s)
    row_op(np.subtract, g, fast_sum(out, dims, True), out=out)
    return _multiply(out, s, out=out)


class Amax(Function):
    """max over dims; tied maxima share the gradient evenly (Amin: the min)."""

    _numpy_forward = True

    @staticmethod
    def forward(ctx: Context, a: Any, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
        return _extreme(ctx, a, dims, keepdim, True)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        (a,) = ctx.saved_tensors
        x = a._array
        kept = _kept(x.shape, ctx.dims)
        # (asarray: of 0-d arrays, == gives a numpy scalar)
        hit = _asarray(x == ctx.out.reshape(kept), x.dtype if x.dtype.kind == "f" else np.float32)
        ties = fast_sum(hit, ctx.dims, True)
        # g / ties over the reduced shape, then one product of the input's size
        if not _state.enabled:  # nothing records: in numpy, into the mask
            return make_tensor(np.multiply(hit, g._array.reshape(kept) / ties, out=hit)), \
                None, None
        return g.reshape(kept) / make_tensor(ties) * make_tensor(hit), None, None


class Amin(Amax):
    _numpy_forward = True

    @staticmethod
    def forward(ctx: Context, a: Any, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
        return _extreme(ctx, a, dims, keepdim, False)


def _extreme(ctx: Context, a: Any, dims: tuple[int, ...], keepdim: bool,
             is_max: bool) -> np.ndarray:
    """Amax's and Amin's forward: three arguments each, apply's quick case (a fourth, the
    direction, cost a microsecond a call)."""
    out = extreme_values(a._array, dims, keepdim, is_max)
    ctx.save_for_backward(a)  # the ties are found in backward: a forward alone is cheap
    ctx.out, ctx.dims = out, dims
    return out


def extreme_values(x: np.ndarray, dims: tuple[int, ...], keepdim: bool,
                   is_max: bool) -> np.ndarray:
    """The max (or min) of x over dims, or torch's error: Amax's forward without its node,
    for a call that records nothing (the node's context was a fifth of a small amax)."""
    if x.dtype.kind == "c":
        raise refuse_complex("max_values_cpu" if is_max else "min_values_cpu", x.dtype)
    if x.size == 0 and any(x.shape[d] == 0 for d in dims):  # an empty batch is fine
        raise RuntimeError("max()/min() of an empty tensor has no identity; it is undefined")
    return fast_max(x, dims, keepdim, is_max)


class ArgReduce(Function):
    """(values, indices) of the max (or min) along one dim; the gradient goes to the index."""

    @staticmethod
    def forward(ctx: Context, a: Any, dim: int, keepdim: bool, is_max: bool) -> tuple:
        x = a._array
        if x.dtype.kind == "c":
            raise RuntimeError(f"{'max' if is_max else 'min'}(): does not support complex input")
        d = dim  # already wrapped by the caller
        ctx.onehot = None
        if x.ndim == 0:  # the one element is the max: the gradient passes straight through
            return x.copy(), np.zeros((), np.int64)
        idx = (np.argmax if is_max else np.argmin)(x, axis=d, keepdims=True)
        vals = np.take_along_axis(x, idx, axis=d)
        shape = [1] * x.ndim
        shape[d] = x.shape[d]
        ctx.onehot = make_tensor((np.arange(x.shape[d]).reshape(shape) == idx).astype(
            x.dtype if x.dtype.kind == "f" else np.float32))
        ctx.kept = vals.shape
        if not keepdim:
            vals, idx = vals.squeeze(d), idx.squeeze(d)
        return vals, idx.astype(np.int64)

    @staticmethod
    def backward(ctx: Context, g: Any, _gi: Any) -> tuple:
        if ctx.onehot is None:
            return g, None, None, None
        return g.reshape(ctx.kept) * ctx.onehot, None, None, None


class Prod(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, dim: int | None, keepdim: bool) -> np.ndarray:
        x = a._array
        ctx.save_for_backward(a)
        ctx.dims = norm_dims(dim, x.ndim)
        ctx.kept = _kept(x.shape, ctx.dims)
        dt = np.int64 if x.dtype.kind in "biu" else x.dtype
        return np.asarray(np.prod(x, axis=ctx.dims, keepdims=keepdim, dtype=dt))

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        (a,) = ctx.saved_tensors
        g = g.reshape(ctx.kept)
        a = conj(a)  # holomorphic: g conj(d prod / da), as torch's (a real a is itself)
        if np.all(a._array != 0):
            return g * Prod.apply(a, _single(ctx.dims), True) / a, None, None
        # With zeros, P / a is 0/0: take the product of the others directly, built from
        # minigrad ops so that it differentiates again (d2/da_i da_j of a product with zeros
        # is the product of the rest, not 0).
        return g * _product_of_others(a, ctx.dims), None, None


def _product_of_others(a: Any, dims: tuple[int, ...]) -> Any:
    """prod_{j != i} a_j over ``dims`` at every i: exclusive prefix times suffix products."""
    rest = [d for d in range(a.ndim) if d not in dims]
    order = (*dims, *rest)
    moved = a.permute(*order)
    flat = moved.reshape(math.prod(moved.shape[:len(dims)]), -1)
    others = _exclusive_cumprod(flat) * _exclusive_cumprod(flat.flip(0)).flip(0)
    return others.reshape(moved.shape).permute(*inverse_permutation(order))


def _exclusive_cumprod(x: Any) -> Any:
    """y_i = prod_{j < i} x_j along dim 0, by Hillis-Steele doubling: log2(n) multiplies."""
    n = x.shape[0]
    y = Cat.apply(0, make_tensor(np.ones((1,) + x.shape[1:], x.dtype)), x[:n - 1])
    k = 1
    while k < n:
        y = Cat.apply(0, y[:k], y[k:] * y[:n - k])
        k *= 2
    return y


def _single(dims: tuple[int, ...]) -> int | None:
    return dims[0] if len(dims) == 1 else None


class Norm2(Function):
    """sqrt(sum x^2) over dims; the gradient at the zero vector is 0 (a subgradient)."""

    @staticmethod
    def forward(ctx: Context, a: Any, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
        x = a._array if a._array.dtype.kind == "f" else a._array.astype(np.float32)
        ctx.save_for_backward(a)
        kept = _kept(x.shape, dims)
        # the sums kept apart from the output (which the caller may write into): a
        # first-order backward reads them rather than summing again
        ctx.dims, ctx.kept, ctx.sumsq = dims, kept, fast_sumsq(x, dims, True)
        out = np.sqrt(ctx.sumsq)
        return out if keepdim else out.reshape([n for i, n in enumerate(x.shape)
                                                if i not in dims])

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        (a,) = ctx.saved_tensors
        if not _state.enabled:  # nothing records: the same steps in numpy alone
            n = np.asarray(np.sqrt(ctx.sumsq))
            if n.size == 1:  # one norm (a tensor's): 0-d operands, no broadcast to plan
                n = n.reshape(())
                safe = n if n != 0 else np.ones((), n.dtype)
                ga = np.multiply(g._array.reshape(()), a._array)
                return make_tensor(np.divide(ga, safe)), None, None
            safe = np.where(n == 0, np.asarray(1, n.dtype), n)
            ga = binary(np.multiply, g._array.reshape(ctx.kept), a._array)
            return make_tensor(np.divide(*float_operands(ga, safe))), None, None
        n = Norm2.apply(a, ctx.dims, True)
        safe = Where.apply(n == 0, 1, n)
        return g.reshape(ctx.kept) * a / safe, None, None


class NormP(Function):
    """(sum |a|^p)^(1/p) over dims, for a number p other than 0, 1, 2 and +-inf.

    d/da = sign(a) |a|^(p-1) / n^(p-1); 0 where n = 0 (a subgradient, as for the 2-norm).
    For 0 < p < 1 it is infinite at a zero entry of a non-zero slice: backward raises there
    (for slices the loss uses). For 1 < p < 2 the second derivative there is +inf.
    """

    @staticmethod
    def forward(ctx: Context, a: Any, dims: tuple[int, ...], keepdim: bool,
                p: float) -> np.ndarray:
        x = a._array if a._array.dtype.kind == "f" else a._array.astype(np.float32)
        ctx.save_for_backward(a)
        ctx.dims, ctx.kept, ctx.p = dims, _kept(x.shape, dims), p
        # |0|^p = inf for p < 0 (so n = 0), silently as in torch (apply quiets numpy)
        return np.asarray(np.sum(np.abs(x) ** p, axis=dims, keepdims=keepdim) ** (1 / p))

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        (a,) = ctx.saved_tensors
        p = ctx.p
        g = g.reshape(ctx.kept)
        n = NormP.apply(a, ctx.dims, True, p)
        zero = a._array == 0
        if 0 < p < 1:
            used = np.broadcast_to((n._array != 0) & (g._array != 0), zero.shape)
            if np.any(zero & used):
                raise RuntimeError(f"the {p}-norm has no derivative at a zero entry (its slope "
                                   "there is infinite for p < 1): use p >= 1, or keep the "
                                   "entries away from 0")
        flat = n == 0  # (for p < 0, any zero entry makes n = 0)
        safe = Where.apply(flat, 1, n)
        if p < 1:  # 0 ** (p - 1) is inf: those entries are masked (their slices unused or flat)
            power = Where.apply(make_tensor(zero), 0,
                                _Pow.apply(Where.apply(make_tensor(zero), 1, a), p - 1, True))
        else:
            power = _Pow.apply(a, p - 1, True)
        slope = Where.apply(flat, 0, power / safe ** (p - 1))
        return g * slope, None, None, None


class _Pow(Function):
    """sign(a) |a|^q (signed) or |a|^q, whose derivative q |a|^(q-1) (q sign(a) |a|^(q-1))
    is the other kind: +inf at 0 for q < 1, the limit. A zero cotangent passes 0 (not 0 inf);
    where sign(a) |a|^(q-1) is needed at 0 with q < 1, which has no value, backward raises."""

    @staticmethod
    def forward(ctx: Context, a: Any, q: float, signed: bool) -> np.ndarray:
        ctx.save_for_backward(a)
        ctx.q, ctx.signed = q, signed
        x = a._array
        y = np.abs(x) ** q
        if signed:  # sign(0) |0|^q: 0 for q > 0; no value for q < 0 (never read: backward)
            y = np.where(x == 0, 0, np.sign(x) * y)
        return y.astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        (a,) = ctx.saved_tensors
        q, signed = ctx.q, not ctx.signed
        x, gx = a._array, np.broadcast_to(g._array, a._array.shape)
        if signed and q < 1 and np.any((x == 0) & (gx != 0)):
            raise RuntimeError(f"sign(a) |a|^{q - 1:g} has no value at a = 0: the p-norm's "
                               "third derivative does not exist at a zero entry for 1 < p < 2")
        quiet = np.asarray(gx == 0)
        # where the cotangent is 0 the power is not needed: 1 there keeps inf (and 0 inf =
        # nan, in this product and in its derivatives) out
        base = Where.apply(make_tensor(quiet & (x == 0)), 1, a) if q < 2 else a
        return Where.apply(make_tensor(quiet), 0, g * q * _Pow.apply(base, q - 1, signed)), None, \
            None


# From this many elements cumsum's kernel beats np.cumsum (a kernel call's fixed cost).
_CUMSUM_FROM = 2048


class Cumsum(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, dim: int) -> np.ndarray:
        ctx.dim = dim
        x = a._array
        if x.size >= _CUMSUM_FROM and x.dtype in KERNEL_FLOATS and x.flags.aligned:
            # the kernel: numpy's sums in numpy's order, over (before, dim, after)
            shape = (math.prod(x.shape[:dim]), x.shape[dim], math.prod(x.shape[dim + 1:]))
            out = np.empty(x.shape, x.dtype)
            pass_kernel("cumsum", x.dtype)(x.reshape(shape), out.reshape(shape))
            return out
        dt = np.int64 if x.dtype.kind in "biu" else x.dtype
        return np.cumsum(x, axis=dim, dtype=dt)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        rev = (slice(None),) * ctx.dim + (slice(None, None, -1),)
        return Cumsum.apply(g[rev], ctx.dim)[rev], None
