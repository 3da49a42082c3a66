"""Elementwise functions of one tensor, each with its gradient rule: exp and log, roots and
powers of two and ten, the trigonometric and hyperbolic functions and their inverses,
sigmoid, erf and its kin, sinc, entr, relu; rounding, casts and clones. Integer inputs give
float32 results, as in torch.

The smooth ones are ``_Unary`` rows (ops/_base.py): a numpy function and a derivative rule,
written with minigrad ops so it differentiates again. Functions of two tensors are in
ops/arith.py (arithmetic) and ops/binary.py (atan2, hypot, logaddexp, fmod)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .._kernel_registry import KERNEL_FLOATS, kernels, pass_kernel
from ..autograd.function import Context, Function, make_tensor, once_differentiable
from ._base import _Unary
from .arith import Where
from .complex import Real, sgn

_LN2, _LN10 = math.log(2.0), math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
# From this many elements relu's and sigmoid's kernels beat numpy (a kernel call's fixed cost).
_KERNEL_FROM = 2048



class Neg(Function):
    _numpy_forward = True  # numpy alone: nothing in forward records

    @staticmethod
    def forward(ctx: Context, a: Any) -> np.ndarray:
        if a._array.dtype.kind == "b":  # the kind: comparing dtypes by value is slow
            raise TypeError("negation of a bool tensor is not supported; use ~ instead")
        return np.negative(a._array)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return -g


class Abs(Function):
    """|a|; the gradient is sign(a), so 0 at a == 0 (torch's choice). A complex a gives a
    real |a| and the gradient g sgn(a) = g a / |a|, with sgn recorded (it varies)."""

    _numpy_forward = True  # numpy alone: nothing in forward records

    @staticmethod
    def forward(ctx: Context, a: Any) -> np.ndarray:
        if not ctx.needs_input_grad[0]:  # no backward will read the sign
            return np.abs(a._array)
        if a._array.dtype.kind == "c":
            ctx.sign = None
            ctx.save_for_backward(a)
        else:
            ctx.sign = make_tensor(np.sign(a._array))
        return np.abs(a._array)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        if ctx.sign is None:
            (a,) = ctx.saved_tensors
            return g * sgn(a)
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
    fn = complex_fn = np.tanh
    grad = staticmethod(lambda a, g: g * Sech2.apply(a))
    complex_grad = staticmethod(lambda a, g: g * (1 - a.tanh().square()))


def _sech2(x: np.ndarray) -> np.ndarray:
    e = np.exp(-2 * np.abs(x))
    return 4 * e / ((1 + e) * (1 + e))


class Sech2(_Unary):
    """tanh'(a) = sech(a)^2 = 4 e / (1 + e)^2 with e = exp(-2|a|): 1 - tanh(a)^2 would cancel
    to 0 once tanh rounds to +-1 (|a| > 9 in float32). d/da = -2 sech(a)^2 tanh(a)."""

    fn = staticmethod(_sech2)
    grad = staticmethod(lambda a, g: g * -2 * Sech2.apply(a) * a.tanh())


def _sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + e) for x >= 0 and e / (1 + e) below, e = exp(-|x|) (it never overflows),
    as exp(min(x, 0)) / (1 + e): the numerator is exactly 1 or e. np.where's branch per
    element on mixed signs cost 7x that second exp ((64, 128, 64) float32). Large aligned
    float32/64 arrays take numpy's exp and then one kernel pass for the rest, the same
    numbers (_layout_kernels._sigmoid_finish)."""
    if _by_kernel(x):  # numpy's exp, then the kernel's select and quotient
        return _sigmoid_kernel(x, False)
    e = np.asarray(np.exp(-np.abs(x)))  # an array, also of a 0-d x: written in place
    e += 1
    return np.divide(np.exp(np.minimum(x, 0)), e, out=e).astype(x.dtype, copy=False)


class Sigmoid(_Unary):
    fn = staticmethod(_sigmoid)
    grad = staticmethod(lambda a, g: g * SigmoidGrad.apply(a))
    complex_fn = staticmethod(lambda x: 1 / (1 + np.exp(-x)))
    complex_grad = staticmethod(lambda a, g: g * a.sigmoid() * (1 - a.sigmoid()))

    @staticmethod
    def grad_array(x: np.ndarray, g: np.ndarray) -> np.ndarray | None:
        """g times the derivative in the kernel's pass after numpy's exp (grad's numbers:
        the derivative's pass and the product's, in one), for a g laid out as x."""
        if not (_by_kernel(x) and g.dtype == x.dtype and g.shape == x.shape
                and g.flags.c_contiguous and g.flags.aligned):
            return None
        e = _exp_minus_abs(x)
        pass_kernel("sigmoid_grad", x.dtype)(g.reshape(-1), e.reshape(-1), x.dtype.type(1))
        return e


def _by_kernel(x: np.ndarray) -> bool:
    """Whether x goes to the elementwise kernels: large, aligned, C-contiguous float32/64."""
    return x.size >= _KERNEL_FROM and x.dtype in KERNEL_FLOATS and x.flags.c_contiguous \
        and x.flags.aligned


def _sigmoid_kernel(x: np.ndarray, slope: bool) -> np.ndarray:
    """sigmoid(x), or its derivative, from numpy's exp(-|x|) and one kernel pass."""
    e = _exp_minus_abs(x)
    pass_kernel("sigmoid", x.dtype)(x.reshape(-1), e.reshape(-1), x.dtype.type(1), slope)
    return e


def _exp_minus_abs(x: np.ndarray) -> np.ndarray:
    """exp(-|x|) in a new array, by numpy's SIMD exp (numba's scalar one is 10x slower)."""
    e = np.abs(x)
    np.negative(e, out=e)
    return np.exp(e, out=e)


def _sigmoid_grad(x: np.ndarray) -> np.ndarray:
    if _by_kernel(x):
        return _sigmoid_kernel(x, True)
    e = np.exp(-np.abs(x))
    return e / ((1 + e) * (1 + e))


class SigmoidGrad(_Unary):
    """sigmoid'(a) = e / (1 + e)^2 with e = exp(-|a|): s (1 - s) would cancel to 0 once s
    rounds to 1 (a > 17 in float32). d/da = sigmoid'(a) (1 - 2 sigmoid(a)) = -sigmoid'(a)
    tanh(a / 2), the last form free of cancellation near 0."""

    fn = staticmethod(_sigmoid_grad)
    grad = staticmethod(lambda a, g: -g * SigmoidGrad.apply(a) * (a * 0.5).tanh())



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
    """sin(pi a) / (pi a), 1 at a = 0 (complex a too)."""

    fn = complex_fn = staticmethod(_sinc)  # sinc(inf) = nan, as in torch
    grad = staticmethod(lambda a, g: g * SincGrad.apply(a))


class SincGrad(Function):
    """sinc'(a). Its own derivative is computed in numpy, so sinc is twice differentiable;
    a third derivative raises (once_differentiable). Complex a: sinc' is holomorphic, so
    the gradient takes the conjugate of sinc''."""

    @staticmethod
    def forward(ctx: Context, a: Any) -> np.ndarray:
        ctx.save_for_backward(a)
        return _sinc_grad(a._array)

    @staticmethod
    @once_differentiable
    def backward(ctx: Context, g: Any) -> Any:
        (a,) = ctx.saved_tensors
        return g * make_tensor(np.conj(_sinc_grad2(a._array)))


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
        neg = make_tensor(np.asarray(a._array < 0))
        return g * Where.apply(neg, 0.0, -(Where.apply(neg, 1.0, a).log() + 1))



class Relu(Function):
    @staticmethod
    def forward(ctx: Context, a: Any) -> np.ndarray:
        x = a._array
        if x.dtype.kind == "c":
            raise NotImplementedError("clamp is not supported for complex types")
        if _by_kernel(x):  # the kernel: np.maximum's numbers, and the mask
            out, mask = np.empty_like(x), np.empty(x.shape, bool)
            pass_kernel("relu", x.dtype)(x.reshape(-1), out.reshape(-1), mask.reshape(-1))
            ctx.mask = make_tensor(mask) if ctx.needs_input_grad[0] else None
            return out
        # the gradient passes where not x <= 0, at a NaN too (torch tests its output so)
        ctx.mask = make_tensor(~(x <= 0)) if ctx.needs_input_grad[0] else None
        return np.maximum(x, x.dtype.type(0))  # a zero of x's dtype: numpy's fast loop

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return Where.apply(ctx.mask, g, 0)


class Rounding(Function):
    """floor, ceil, round or trunc (``fn``): piecewise constant, so the gradient is zero
    (torch's, rather than none at all); integer tensors come back unchanged, as in torch."""

    _numpy_forward = True  # numpy alone: nothing in forward records

    @staticmethod
    def forward(ctx: Context, a: Any, fn: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        x = a._array
        if x.dtype.kind == "f":
            return np.asarray(fn(x))
        if x.dtype.kind == "c":
            raise NotImplementedError(f"{getattr(fn, '__name__', 'rounding')} is not "
                                      "supported for complex inputs")
        return x.copy()

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        return make_tensor(np.zeros_like(g._array)), None


class Cast(Function):
    """a in another dtype. Complex to real keeps the real part and warns, as torch; the
    gradient goes back cast to the source dtype (its real part for a real source)."""

    @staticmethod
    def forward(ctx: Context, a: Any, dtype: np.dtype) -> np.ndarray:
        ctx.src = a._array.dtype
        x = a._array
        if x.dtype.kind == "c" and dtype.kind != "c":
            warnings.warn("Casting complex values to real discards the imaginary part",
                          UserWarning, stacklevel=5)
            x = x.real
        return x.astype(dtype)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        if ctx.src.kind not in "fc":
            return None, None
        if g._array.dtype.kind == "c" and ctx.src.kind == "f":
            g = Real.apply(g)
        return g.to(ctx.src), None


class Clone(Function):
    _numpy_forward = True  # numpy alone: nothing in forward records

    @staticmethod
    def forward(ctx: Context, a: Any) -> np.ndarray:
        return a._array.copy()

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return g


# The rows torch also computes on complex tensors, by the same numpy function (tanh and
# sigmoid say so in their rows, with rules of their own); the others refuse complex input.
for _row in (Exp, Log, Log1p, Expm1, Sqrt, Sin, Cos, Tan, Sinh, Cosh, Asin, Acos, Atan, Asinh,
             Acosh, Atanh, Log2, Log10, Exp2):
    _row.complex_fn = _row.fn
