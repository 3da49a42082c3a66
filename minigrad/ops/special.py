"""More elementwise math: the trigonometric and hyperbolic families, erf and its kin,
log2/log10/exp2, sinc, and the binary atan2, hypot, logaddexp and fmod.

Smooth functions of one tensor are ``_Unary`` rows (ops/_base.py); their derivative rules
are minigrad ops, so they differentiate again.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._kernel_registry import kernels
from ..autograd.function import Context, Function, constant, once_differentiable
from ._base import _Unary, float_operands, save_operands, saved_operands
from .arith import Remainder, Where

_LN2, _LN10 = math.log(2.0), math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _erf(x: np.ndarray) -> np.ndarray:
    return kernels("erf").erf(x)


def _erfc(x: np.ndarray) -> np.ndarray:
    return kernels("erf").erfc(x)


def _erfinv(x: np.ndarray) -> np.ndarray:
    return kernels("erf").erfinv(x)


def _erfcx(x: np.ndarray) -> np.ndarray:
    return kernels("erf").erfcx(x)


def _erfcx_slope(x: np.ndarray) -> np.ndarray:
    return kernels("erf").erfcx_slope(x)


class Tan(_Unary):
    fn = np.tan
    grad = staticmethod(lambda a, g: g / (a.cos() * a.cos()))


class Sinh(_Unary):
    fn = np.sinh
    grad = staticmethod(lambda a, g: g * a.cosh())


class Cosh(_Unary):
    fn = np.cosh
    grad = staticmethod(lambda a, g: g * a.sinh())


class Asin(_Unary):
    fn = np.arcsin
    grad = staticmethod(lambda a, g: g / (1 - a * a).sqrt())


class Acos(_Unary):
    fn = np.arccos
    grad = staticmethod(lambda a, g: -g / (1 - a * a).sqrt())


class Atan(_Unary):
    fn = np.arctan
    grad = staticmethod(lambda a, g: g / (1 + a * a))


class Asinh(_Unary):
    fn = np.arcsinh
    grad = staticmethod(lambda a, g: g / (a * a + 1).sqrt())


class Acosh(_Unary):
    fn = np.arccosh
    grad = staticmethod(lambda a, g: g / ((a - 1).sqrt() * (a + 1).sqrt()))


class Atanh(_Unary):
    fn = np.arctanh
    grad = staticmethod(lambda a, g: g / (1 - a * a))


class Log2(_Unary):
    fn = np.log2
    grad = staticmethod(lambda a, g: g / (a * _LN2))


class Log10(_Unary):
    fn = np.log10
    grad = staticmethod(lambda a, g: g / (a * _LN10))


class Exp2(_Unary):
    fn = np.exp2
    grad = staticmethod(lambda a, g: g * Exp2.apply(a) * _LN2)


class Erf(_Unary):
    """erf(a) = 2/sqrt(pi) int_0^a exp(-t^2) dt; erf'(a) = 2/sqrt(pi) exp(-a^2)."""

    fn = staticmethod(_erf)
    grad = staticmethod(lambda a, g: g * _TWO_OVER_SQRT_PI * (-(a * a)).exp())


class Erfc(_Unary):
    """1 - erf(a), without the cancellation for large a."""

    fn = staticmethod(_erfc)
    grad = staticmethod(lambda a, g: -g * _TWO_OVER_SQRT_PI * (-(a * a)).exp())


class Erfcx(_Unary):
    """exp(a^2) erfc(a), without its overflow and underflow."""

    fn = staticmethod(_erfcx)
    grad = staticmethod(lambda a, g: g * ErfcxSlope.apply(a))


class ErfcxSlope(_Unary):
    """erfcx'(a) = 2a erfcx(a) - 2/sqrt(pi) (kept exact for large a, where that cancels; the
    next derivative, 2 erfcx(a) + 2a erfcx'(a), cancels there too: it keeps ~16 - 2 log10 a
    digits)."""

    fn = staticmethod(_erfcx_slope)
    grad = staticmethod(lambda a, g: g * (2.0 * Erfcx.apply(a) + 2.0 * a * ErfcxSlope.apply(a)))


class Erfinv(_Unary):
    """The inverse of erf on (-1, 1); erfinv'(a) = sqrt(pi)/2 exp(erfinv(a)^2)."""

    fn = staticmethod(_erfinv)
    grad = staticmethod(lambda a, g: g / _TWO_OVER_SQRT_PI * (Erfinv.apply(a) ** 2).exp())


def _sinc(x: np.ndarray) -> np.ndarray:
    return np.sinc(x).astype(x.dtype, copy=False)


def _sinc_grad(x: np.ndarray) -> np.ndarray:
    """sinc'(x) = (cos(pi x) - sinc(x)) / x, and its limit 0 at x = 0."""
    safe = np.where(x == 0, 1, x)
    return np.where(x == 0, 0, (np.cos(np.pi * x) - np.sinc(x)) / safe).astype(x.dtype)


def _sinc_grad2(x: np.ndarray) -> np.ndarray:
    """sinc''(x) = -pi^2 sinc(x) - 2 sinc'(x) / x, and its limit -pi^2/3 at x = 0."""
    safe = np.where(x == 0, 1, x)
    out = -np.pi ** 2 * np.sinc(x) - 2 * _sinc_grad(x) / safe
    return np.where(x == 0, -np.pi ** 2 / 3, out).astype(x.dtype)


class Sinc(_Unary):
    """sin(pi a) / (pi a), 1 at a = 0."""

    fn = staticmethod(_sinc)  # sinc(inf) = nan, as in torch
    grad = staticmethod(lambda a, g: g * SincGrad.apply(a))


class SincGrad(Function):
    """sinc'(a). Its own derivative is computed in numpy, so sinc is twice differentiable;
    a third derivative raises (once_differentiable)."""

    @staticmethod
    def forward(ctx: Context, a: Any) -> np.ndarray:
        ctx.save_for_backward(a)
        return _sinc_grad(a._array)

    @staticmethod
    @once_differentiable
    def backward(ctx: Context, g: Any) -> Any:
        (a,) = ctx.saved_tensors
        return g * constant(_sinc_grad2(a._array))


def _safe(mask: Any, x: Any) -> Any:
    return Where.apply(constant(mask), 1, x)


class _Binary(Function):
    """fn(a, b) elementwise on float operands (integers become float32), both saved."""

    fn: Callable[[np.ndarray, np.ndarray], np.ndarray]

    @classmethod
    def forward(cls, ctx: Context, a: Any, b: Any) -> np.ndarray:
        save_operands(ctx, a, b, True, True)
        return cls.fn(*float_operands(a, b))


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
    for equal infinities, where a - b is nan)."""

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> np.ndarray:
        save_operands(ctx, a, b, True, True)
        x, y = float_operands(a, b)
        ctx.tie = constant(np.broadcast_to(x == y, np.broadcast_shapes(np.shape(x),
                                                                      np.shape(y))))
        return np.logaddexp(x, y)  # nan in, nan out

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        a, b = saved_operands(ctx)
        d = Where.apply(ctx.tie, 0, a - b)
        wa = Where.apply(ctx.tie, 0.5, d.sigmoid())
        na, nb = ctx.needs_input_grad
        return (g * wa if na else None), (g * (1 - wa) if nb else None)


class Fmod(Remainder):
    """a - b trunc(a / b), with the sign of a (C's fmod); d/da = 1, d/db = -trunc(a / b)."""

    fn = staticmethod(np.fmod)
    quotient = staticmethod(lambda q: q.trunc())


class NotDifferentiable(Function):
    """``fn`` of the inputs' arrays, for a function torch gives no derivative: backward
    through it raises, rather than quietly dropping the gradient."""

    @staticmethod
    def forward(ctx: Context, name: str, fn: Callable, *args: Any) -> np.ndarray:
        ctx.fn_name = name  # not ctx.name: ctx is the node, whose name() it would hide
        return np.asarray(fn(*[getattr(a, "_array", a) for a in args]))

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        raise RuntimeError(f"the derivative for '{ctx.fn_name}' is not implemented")


class Entr(Function):
    """-x log x; its slope -(log x + 1) is +inf at 0 (torch's too) and 0 below, where the
    value is the constant -inf."""

    @staticmethod
    def forward(ctx: Context, a: Any) -> np.ndarray:
        ctx.save_for_backward(a)
        x = a._array
        out = -x * np.log(x)
        return np.where(x < 0, -np.inf, np.where(x == 0, 0.0, out)).astype(x.dtype)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (a,) = ctx.saved_tensors
        neg = constant(np.asarray(a._array < 0))
        return g * Where.apply(neg, 0.0, -(Where.apply(neg, 1.0, a).log() + 1))
