"""Binary arithmetic and selection: + - * / ** maximum minimum where clamp.

Operands may be Tensors or Python numbers on either side; dtypes follow torch's promotion.
Backwards return full-shape gradients; the engine sums them back over broadcast dims.
On complex operands * / ** are holomorphic: their rules take the operands' conjugates
(g conj(f'), torch's convention; see ops/complex.py), and ordering ops refuse, as torch's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from .._broadcast import row_op
from ..autograd import function
from ..autograd.engine import sum_to_shape
from ..autograd.function import Context, Function, is_tensor, make_tensor
from ..autograd.grad_mode import _state
from ._base import (
    arith,
    conj,
    elementwise,
    float_operands,
    operands,
    refuse_complex,
    save_operands,
    saved_operands,
)

# numpy's functions as globals: CPython 3.11 does not cache lookups on the numpy module
# (each np.<name> is a full attribute lookup), and these are read on every op.
_add, _multiply, _subtract, _negative = np.add, np.multiply, np.subtract, np.negative


def _arr(x: Any) -> Any:
    return x._array if is_tensor(x) else x


class Add(Function):
    _numpy_forward = True

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> np.ndarray:
        return arith(_add, a, b)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        return g, g


class Sub(Function):
    _numpy_forward = True

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> np.ndarray:
        # torch refuses a bool operand even beside a float (is_tensor inlined, the kind
        # compared rather than the dtype, whose == is slow: every subtraction passes here)
        tensor = function.tensor_class
        if type(a) is bool or type(b) is bool or (
                isinstance(a, tensor) and a._array.dtype.kind == "b") or (
                isinstance(b, tensor) and b._array.dtype.kind == "b"):
            raise TypeError("subtraction with a bool operand is not supported; use ~ or ^ "
                            "instead")
        return arith(_subtract, a, b)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        if not ctx.needs_input_grad[1]:
            return g, None
        shape = ctx._next_edges[1][2]  # b's shape: a broadcast b is summed before negating
        gb = sum_to_shape(g, shape) if shape != g.shape else g
        if not _state.enabled:  # nothing records: numpy's negation, without Neg's node
            return g, make_tensor(_negative(gb._array))
        return g, -gb


class Mul(Function):
    _numpy_forward = True

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> np.ndarray:
        na, nb = ctx.needs_input_grad
        # Save only what the other side's gradient needs, so `x.mul_(2)` stays differentiable.
        save_operands(ctx, a, b, nb, na)
        return arith(_multiply, a, b)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        a, b = saved_operands(ctx)
        na, nb = ctx.needs_input_grad
        if g._array.dtype.kind == "c":
            a, b = conj(a), conj(b)
        ga = _times(g, b) if na else None
        if a is b and na:  # x * x: both products are g x
            if _state.enabled:  # the engine adds the two
                return ga, ga
            # nothing records: ga is a new array, the sum of the two made in it (the same
            # numbers: the engine would add ga + ga too), one pass and array less
            np.add(ga._array, ga._array, out=ga._array)
            return ga, None
        return ga, (_times(g, a) if nb else None)


def _times(g: Any, x: Any) -> Any:
    """g * x in a backward: numpy's product alone when nothing records (a first-order walk),
    else the recorded op, so that it differentiates again."""
    if _state.enabled:
        return g * x
    return make_tensor(_multiply(*elementwise(g, x)))


def _numpy(fn: Any, x: Any, y: Any) -> Any:
    """``fn`` (np.multiply or np.divide) of Tensors or numbers as its op would compute it
    (same promotion; integers divide as floats), without the op: nothing records."""
    return make_tensor(fn(*(float_operands(x, y) if fn is np.divide else elementwise(x, y))))


class Div(Function):
    _numpy_forward = True

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> np.ndarray:
        na, nb = ctx.needs_input_grad
        save_operands(ctx, a, b, nb, na or nb)
        x, y = float_operands(a, b)
        if type(x) is np.ndarray and type(y) is np.ndarray:
            return row_op(np.divide, x, y)
        return np.divide(x, y)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        a, b = saved_operands(ctx)
        na, nb = ctx.needs_input_grad
        if g._array.dtype.kind == "c":
            a, b = conj(a), conj(b)
        if not _state.enabled:  # nothing records: the same steps in numpy alone
            gb = None
            if nb:  # -(g a) / b^2, with the sign after: negation is exact, so bit for bit
                gb = _numpy(np.divide, _numpy(_multiply, g, a), _numpy(_multiply, b, b))
                # in place: on a 0-d array numpy returns a scalar, and a Tensor holding one
                # made the next product float32 (Python-scalar promotion)
                np.negative(gb._array, out=gb._array)
            return (_numpy(np.divide, g, b) if na else None), gb
        return (g / b if na else None), (-g * a / (b * b) if nb else None)


def _cube(x: np.ndarray) -> np.ndarray:
    y = np.multiply(x, x)
    y *= x  # (x * x) * x, as torch computes it
    return y


# Exponents with a route cheaper than np.power (which has none for small integers), the
# ones torch's pow kernel special-cases, computed as it does so that values match its.
_FAST_POW: dict[float, Any] = {
    0: lambda x: np.ones(x.shape, x.dtype),  # nan ** 0 = 1 too
    1: lambda x: np.array(x),
    2: lambda x: np.multiply(x, x),
    3: _cube,
    -1: lambda x: np.divide(1, x),
    -2: lambda x: np.divide(1, np.multiply(x, x)),
    0.5: np.sqrt,
    -0.5: lambda x: np.divide(1, np.sqrt(x)),
}


class Pow(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> np.ndarray:
        x, y = operands(a, b)
        fast = _FAST_POW.get(y) if type(y) is int or type(y) is float else None
        if fast is not None and x.dtype.kind == "f":
            save_operands(ctx, a, b, ctx.needs_input_grad[0], False)
            return fast(x)
        if x.dtype.kind in "iub" and np.any(np.asarray(y) < 0):
            raise RuntimeError("Integers to negative integer powers are not allowed")
        save_operands(ctx, a, b, any(ctx.needs_input_grad), any(ctx.needs_input_grad))
        return np.power(x, y)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        a, b = saved_operands(ctx)
        na, nb = ctx.needs_input_grad
        if g._array.dtype.kind == "c":
            a, b = conj(a), conj(b)
        if type(b) is int or type(b) is float:
            # torch's rule for a number exponent: g (b a**(b-1)), zeros for b = 0; the
            # a ** (b - 1) takes the fast route of forward when b - 1 has one.
            if b == 0:
                return make_tensor(np.zeros(a._array.shape, a._array.dtype)), None
            return g * (b * a ** (b - 1)), None
        ga = gb = None
        b_zero = np.asarray(_arr(b)) == 0
        # a ** 0 has derivative 0: skip the 0 * a**-1 (nan at a = 0, which would reach
        # through a mask into the next derivative's graph as 0 * inf).
        if na and (is_tensor(b) or not np.all(b_zero)):
            ga = g * b * a ** (b - 1)
            # torch's rule: 0 where the exponent is 0 (else 0 * 0**-1 = nan at a == 0).
            if np.any(b_zero):
                ga = Where.apply(make_tensor(~b_zero), ga, 0)
        if nb:
            base = np.asarray(_arr(a))
            # torch's rule: d/db a**b = a**b log a, taken as 0 where a == 0 and b >= 0.
            zero = (base == 0) & (np.asarray(_arr(b)) >= 0)
            log_a = a.log() if is_tensor(a) else np.log(a).item()
            gb = g * (a ** b) * log_a
            if np.any(zero):
                gb = Where.apply(make_tensor(~zero), gb, 0)
        return ga, gb


class Remainder(Function):
    """a - b floor(a / b), taking the sign of b (Python's %, torch.remainder);
    d/da = 1, d/db = -floor(a / b). (ops/binary.py's Fmod truncates instead.)"""

    fn = staticmethod(np.remainder)
    quotient = staticmethod(lambda q: q.floor())

    @classmethod
    def forward(cls, ctx: Context, a: Any, b: Any) -> np.ndarray:
        nb = ctx.needs_input_grad[1]
        save_operands(ctx, a, b, nb, nb)
        x, y = operands(a, b)
        if x.dtype.kind == "c":
            raise refuse_complex("remainder_cpu", x.dtype)
        if x.dtype.kind in "iu" and np.any(y == 0):
            raise RuntimeError("ZeroDivisionError")  # torch's error for integers
        return cls.fn(x, y)  # x % 0 is nan, as in torch

    @classmethod
    def backward(cls, ctx: Context, g: Any) -> tuple:
        na, nb = ctx.needs_input_grad
        gb = None
        if nb:
            a, b = saved_operands(ctx)
            gb = -g * cls.quotient(a / b)
        return (g if na else None), gb


class FloorDivide(Function):
    """floor(a / b). Like torch, it has no derivative: backward through it raises rather
    than quietly dropping the gradient."""

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> np.ndarray:
        x, y = operands(a, b)
        if x.dtype.kind == "c":
            raise refuse_complex("div_floor_cpu", x.dtype)
        return np.floor_divide(x, y)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        raise RuntimeError("the derivative for 'floor_divide' is not implemented; use "
                           "(a / b).floor(), whose gradient is zero, or detach the inputs")


class _Extremum(Function):
    """max(a, b) or min(a, b) elementwise (``pick``), a winning where ``wins(a, b)``; at ties
    each side gets half the gradient (torch's rule)."""

    @classmethod
    def forward(cls, ctx: Context, a: Any, b: Any) -> np.ndarray:
        x, y = operands(a, b)
        if x.dtype.kind == "c":
            raise RuntimeError(f"{cls.__name__.lower()} not implemented for complex tensors.")
        w = cls.wins(x, y) + 0.5 * (x == y)
        ctx.w = make_tensor(w.astype(x.dtype if x.dtype.kind == "f" else dtypes.DEFAULT_FLOAT))
        return cls.pick(x, y)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        return g * ctx.w, g * (1 - ctx.w)


class Maximum(_Extremum):
    wins, pick = np.greater, np.maximum


class Minimum(_Extremum):
    wins, pick = np.less, np.minimum


class Where(Function):
    """``a`` where ``cond`` holds, else ``b``; cond is a bool Tensor and gets no gradient."""

    _numpy_forward = True  # numpy alone: nothing in forward records

    @staticmethod
    def forward(ctx: Context, cond: Any, a: Any, b: Any) -> np.ndarray:
        ctx.cond = cond
        x, y = operands(a, b)
        if type(x) is np.ndarray and type(y) is np.ndarray:
            pass
        elif (type(y) is int or type(y) is float) and y == 0:  # where(mask, g, 0): relu's
            return _masked(x, cond._array, True)
        elif (type(x) is int or type(x) is float) and x == 0:
            return _masked(y, cond._array, False)
        return select(cond._array, x, y)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        _, na, nb = ctx.needs_input_grad
        return (None,
                Where.apply(ctx.cond, g, 0) if na else None,
                Where.apply(ctx.cond, 0, g) if nb else None)


_SAME_WIDTH_INT = {2: np.int16, 4: np.int32, 8: np.int64}
_MASK_FROM = 512
# From these sizes (by itemsize) select's three passes beat np.where's branches on a mixed
# mask: float32 from 8192 (7 us against 9), float64 from 65536 (the int8 mask's widening
# is buffered there).
_SELECT_FROM = {2: 8192, 4: 8192, 8: 65536}


def _masked(x: np.ndarray, cond: np.ndarray, keep: bool) -> np.ndarray:
    """np.where(cond, x, 0) (keep) or np.where(cond, 0, x), bit for bit (nan, inf and -0.0
    kept where x is taken, +0.0 elsewhere) as an AND with an all-ones mask: np.where against
    a scalar is 5x slower, and x * cond turns inf and nan into nan, not 0."""
    ints = _SAME_WIDTH_INT.get(x.dtype.itemsize) if x.dtype.kind == "f" else None
    # below _MASK_FROM elements np.where's one call beats the AND's three
    if ints is None or x.shape != cond.shape or cond.dtype.kind != "b" or x.size < _MASK_FROM:
        return np.where(cond, x, 0) if keep else np.where(cond, 0, x)
    bits = cond.astype(ints)
    if keep:
        np.negative(bits, out=bits)  # True -> all ones, False -> 0
    else:
        bits -= 1  # True -> 0, False -> all ones
    return np.bitwise_and(x.view(ints), bits, out=bits).view(x.dtype)


def select(cond: np.ndarray, x: Any, y: Any) -> np.ndarray:
    """np.where(cond, x, y), bit for bit; for same-shape float arrays of one dtype as bits,
    y ^ ((x ^ y) & M), M all ones where cond holds: np.where's loop branches on every
    element, ~4 ns each on a mask of mixed signs ((64, 128, 64) float32 1.9 ms, here 0.23;
    float64 0.5). One new array: a fresh multi-MB temporary costs its page faults again."""
    if type(x) is not np.ndarray or type(y) is not np.ndarray or x.dtype != y.dtype \
            or x.shape != cond.shape or y.shape != cond.shape or cond.dtype.kind != "b" \
            or x.dtype.kind != "f" or x.size < _SELECT_FROM.get(x.dtype.itemsize, x.size + 1):
        return np.where(cond, x, y)
    ints = _SAME_WIDTH_INT[x.dtype.itemsize]
    # True -> -1 (all ones once widened), False -> 0; by value, not the bool's byte (a
    # viewed buffer's True may be any nonzero byte)
    m = cond.astype(np.int8)
    np.negative(m, out=m)
    out = np.bitwise_xor(x.view(ints), y.view(ints))
    np.bitwise_and(out, m, out=out)
    return np.bitwise_xor(out, y.view(ints), out=out).view(x.dtype)


class Clamp(Function):
    """clip(a, lo, hi) in the dtype a and the bounds promote to (an integer a clamped at 1.5
    is float, as in torch); the gradient passes where lo <= a <= hi, else to the tensor
    bound that was taken, as in torch."""

    _numpy_forward = True  # numpy alone: nothing in forward records

    @staticmethod
    def forward(ctx: Context, a: Any, lo: Any, hi: Any) -> np.ndarray:
        x = a._array
        if x.dtype.kind == "c":
            raise NotImplementedError("clamp is not supported for complex types")
        lo_, hi_ = _arr(lo), _arr(hi)
        # A float x beside number bounds keeps its dtype (operands' rule): only an integer
        # x or an array bound may promote, so only they pay for result_dtype (~3 us).
        if x.dtype.kind != "f" or type(lo_) is np.ndarray or type(hi_) is np.ndarray:
            dt = dtypes.result_dtype(x, *[b for b in (lo_, hi_) if b is not None])
            if dt != x.dtype:
                x = x.astype(dt)
        out = x
        if lo_ is not None:
            out = np.maximum(out, np.asarray(lo_, dtype=x.dtype))
        if hi_ is not None:
            out = np.minimum(out, np.asarray(hi_, dtype=x.dtype))
        n_a, n_lo, n_hi = ctx.needs_input_grad
        if n_a or n_lo or n_hi:  # the masks only where a backward can read them
            # (a bound may broadcast x: the masks take the result's shape)
            if lo_ is None:
                keep = x <= hi_
            else:
                keep = x >= lo_ if hi_ is None else (x >= lo_) & (x <= hi_)
            ctx.keep = make_tensor(keep)
            ctx.low = make_tensor(x < lo_) if n_lo else None
            ctx.high = make_tensor(x > hi_) if n_hi else None
        # np.maximum of 0-d arrays gives a numpy scalar: asarray, since copy=False would refuse it
        return np.array(out, dtype=x.dtype) if out is x else np.asarray(out, dtype=x.dtype)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        _, n_lo, n_hi = ctx.needs_input_grad
        return (Where.apply(ctx.keep, g, 0), Where.apply(ctx.low, g, 0) if n_lo else None,
                Where.apply(ctx.high, g, 0) if n_hi else None)
