"""Elementwise functions of two tensors beyond the arithmetic of ops/arith.py: atan2, hypot,
logaddexp and fmod. Integer operands become float32, as in torch; the derivative rules are
minigrad ops, so they differentiate again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..autograd.function import Context, Function, make_tensor
from ._base import conj, float_operands, refuse_complex, save_operands, saved_operands
from .arith import Remainder, Where


def _real(xy: tuple, name: str) -> tuple:
    """The operands of a function torch has no complex version of (``name``), checked."""
    if xy[0].dtype.kind == "c":
        raise refuse_complex(name, xy[0].dtype)
    return xy


def _safe(mask: Any, x: Any) -> Any:
    return Where.apply(make_tensor(mask), 1, x)


class _Binary(Function):
    """fn(a, b) elementwise on float operands (integers become float32), both saved."""

    fn: Callable[[np.ndarray, np.ndarray], np.ndarray]

    @classmethod
    def forward(cls, ctx: Context, a: Any, b: Any) -> np.ndarray:
        save_operands(ctx, a, b, True, True)
        return cls.fn(*_real(float_operands(a, b), cls.__name__.lower()))


class Atan2(_Binary):
    """atan2(a, b), the angle of the point (b, a); d/da = b / r^2, d/db = -a / r^2, taken as 0
    at the origin (a subgradient; the limit does not exist)."""

    fn = staticmethod(np.arctan2)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        a, b = saved_operands(ctx)
        r2 = a * a + b * b
        r2 = _safe(r2._array == 0, r2)
        na, nb = ctx.needs_input_grad
        return (g * b / r2 if na else None), (-g * a / r2 if nb else None)


class Hypot(_Binary):
    """sqrt(a^2 + b^2) without overflow; the gradient (a, b) / h is 0 at the origin (a
    subgradient, as for the 2-norm)."""

    fn = staticmethod(np.hypot)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        a, b = saved_operands(ctx)
        h = Hypot.apply(a, b)
        h = _safe(h._array == 0, h)
        na, nb = ctx.needs_input_grad
        return (g * a / h if na else None), (g * b / h if nb else None)


class LogAddExp(Function):
    """log(exp(a) + exp(b)) without overflow; d/da = sigmoid(a - b), 1/2 where a == b (also
    for equal infinities, where a - b is nan). Complex: torch's branch of the logarithm
    (``logaddexp_complex``) and d/da = exp(a - out), its conjugate in the gradient."""

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> np.ndarray:
        save_operands(ctx, a, b, True, True)
        x, y = float_operands(a, b)
        if x.dtype.kind == "c":
            ctx.tie = None
            return logaddexp_complex(x, y)
        ctx.tie = make_tensor(np.broadcast_to(x == y, np.broadcast_shapes(np.shape(x),
                                                                      np.shape(y))))
        return np.logaddexp(x, y)  # nan in, nan out

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        a, b = saved_operands(ctx)
        na, nb = ctx.needs_input_grad
        if ctx.tie is None:  # complex: holomorphic, so g times the conjugate derivative
            out = LogAddExp.apply(a, b)
            return (g * conj((a - out).exp()) if na else None), (
                g * conj((b - out).exp()) if nb else None)
        d = Where.apply(ctx.tie, 0, a - b)
        wa = Where.apply(ctx.tie, 0.5, d.sigmoid())
        return (g * wa if na else None), (g * (1 - wa) if nb else None)


def logaddexp_complex(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """log(e^x + e^y) for complex x, y on torch's branch: m + log1p(e^(n - m)), m the operand
    of larger real part (x at a tie) and n the other, so the imaginary part is Im m plus an
    angle in (-pi/2, pi/2], not reduced to (-pi, pi]; nan + nan i where either has a nan,
    n where both real parts are -inf, log(e^x + e^y) where both are +inf."""
    x, y = np.broadcast_arrays(x, y)
    swap = x.real < y.real
    hi, lo = np.where(swap, y, x), np.where(swap, x, y)
    with np.errstate(all="ignore"):
        out = hi + np.log1p(np.exp(lo - hi))
        inf = np.isinf(lo.real) & (lo.real == hi.real)
        if inf.any():
            out = np.where(inf, np.where(lo.real < 0, lo, np.log(np.exp(lo) + np.exp(hi))), out)
    out = np.where(np.isnan(x) | np.isnan(y), complex(np.nan, np.nan), out)
    return out.astype(x.dtype, copy=False)


class Fmod(Remainder):
    """a - b trunc(a / b), with the sign of a (C's fmod); d/da = 1, d/db = -trunc(a / b)."""

    fn = staticmethod(np.fmod)
    quotient = staticmethod(lambda q: q.trunc())

