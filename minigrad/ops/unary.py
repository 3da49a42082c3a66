"""Elementwise functions of one tensor. Integer inputs give float32 results, as in torch.

The smooth ones are ``_Unary`` rows (ops/_base.py): a numpy function and a derivative rule."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..autograd.function import Context, Function, constant
from ._base import _Unary
from .arith import Where


class Neg(Function):
    @staticmethod
    def forward(ctx: Context, a: Any) -> np.ndarray:
        if a._array.dtype == np.bool_:
            raise TypeError("negation of a bool tensor is not supported; use ~ instead")
        return np.negative(a._array)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return -g


class Abs(Function):
    """|a|; the gradient is sign(a), so 0 at a == 0 (torch's choice)."""

    @staticmethod
    def forward(ctx: Context, a: Any) -> np.ndarray:
        ctx.sign = constant(np.sign(a._array))
        return np.abs(a._array)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return g * ctx.sign


class Exp(_Unary):
    fn = np.exp
    grad = staticmethod(lambda a, g: g * a.exp())


class Log(_Unary):
    fn = np.log
    grad = staticmethod(lambda a, g: g / a)


class Log1p(_Unary):
    """log(1 + a), exact for tiny a where log(a + 1) rounds 1 + a first."""

    fn = np.log1p
    grad = staticmethod(lambda a, g: g / (1 + a))


class Expm1(_Unary):
    """exp(a) - 1, exact for tiny a where exp(a) - 1 cancels."""

    fn = np.expm1
    grad = staticmethod(lambda a, g: g * a.exp())


class Sqrt(_Unary):
    fn = np.sqrt
    grad = staticmethod(lambda a, g: g / (2 * a.sqrt()))


class Sin(_Unary):
    fn = np.sin
    grad = staticmethod(lambda a, g: g * a.cos())


class Cos(_Unary):
    fn = np.cos
    grad = staticmethod(lambda a, g: -g * a.sin())


class Tanh(_Unary):
    fn = np.tanh
    grad = staticmethod(lambda a, g: g * Sech2.apply(a))


def _sech2(x: np.ndarray) -> np.ndarray:
    e = np.exp(-2 * np.abs(x))
    return 4 * e / ((1 + e) * (1 + e))


class Sech2(_Unary):
    """tanh'(a) = sech(a)^2 = 4 e / (1 + e)^2 with e = exp(-2|a|): 1 - tanh(a)^2 would cancel
    to 0 once tanh rounds to +-1 (|a| > 9 in float32). d/da = -2 sech(a)^2 tanh(a)."""

    fn = staticmethod(_sech2)
    grad = staticmethod(lambda a, g: g * -2 * Sech2.apply(a) * a.tanh())


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # exp(-|x|) never overflows; split by sign for both tails.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


class Sigmoid(_Unary):
    fn = staticmethod(_sigmoid)
    grad = staticmethod(lambda a, g: g * SigmoidGrad.apply(a))


def _sigmoid_grad(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return e / ((1 + e) * (1 + e))


class SigmoidGrad(_Unary):
    """sigmoid'(a) = e / (1 + e)^2 with e = exp(-|a|): s (1 - s) would cancel to 0 once s
    rounds to 1 (a > 17 in float32). d/da = sigmoid'(a) (1 - 2 sigmoid(a)) = -sigmoid'(a)
    tanh(a / 2), the last form free of cancellation near 0."""

    fn = staticmethod(_sigmoid_grad)
    grad = staticmethod(lambda a, g: -g * SigmoidGrad.apply(a) * (a * 0.5).tanh())


class Relu(Function):
    @staticmethod
    def forward(ctx: Context, a: Any) -> np.ndarray:
        x = a._array
        ctx.mask = constant(x > 0) if ctx.needs_input_grad[0] else None
        return np.maximum(x, x.dtype.type(0))  # a zero of x's dtype: numpy's fast loop

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return Where.apply(ctx.mask, g, 0)


class Rounding(Function):
    """floor, ceil, round or trunc (``fn``): piecewise constant, so the gradient is zero
    (torch's, rather than none at all); integer tensors come back unchanged, as in torch."""

    @staticmethod
    def forward(ctx: Context, a: Any, fn: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        x = a._array
        return np.asarray(fn(x)) if x.dtype.kind == "f" else x.copy()

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        return constant(np.zeros_like(g._array)), None


class Cast(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, dtype: np.dtype) -> np.ndarray:
        ctx.src = a._array.dtype
        return a._array.astype(dtype)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        return (g.to(ctx.src) if ctx.src.kind == "f" else None), None


class Clone(Function):
    @staticmethod
    def forward(ctx: Context, a: Any) -> np.ndarray:
        return a._array.copy()

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return g
