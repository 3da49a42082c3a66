"""More elementwise Tensor methods, torch's names: trigonometric and hyperbolic functions and
their inverses, erf and kin, log2/log10/exp2, and the small composites (xlogy, logit,
addcmul, copysign ...). Integer inputs give float32 results, as in torch."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..autograd import function
from ..autograd.function import constant, is_tensor
from ..dtypes import Number
from ..ops import arith, bessel, binary, gamma, unary
from ..ops._base import NotDifferentiable, float_operands
from ._operand import arr

if TYPE_CHECKING:
    from ..tensor import Tensor

_LN2 = math.log(2.0)


class MathMethods:
    """The further elementwise methods of Tensor (mixed into it by tensor.py)."""

    def tan(self) -> Tensor:
        return unary.Tan.apply(self)

    def sinh(self) -> Tensor:
        return unary.Sinh.apply(self)

    def cosh(self) -> Tensor:
        return unary.Cosh.apply(self)

    def asin(self) -> Tensor:
        """arcsin on [-1, 1] (nan outside, as in torch)."""
        return unary.Asin.apply(self)

    def acos(self) -> Tensor:
        return unary.Acos.apply(self)

    def atan(self) -> Tensor:
        return unary.Atan.apply(self)

    def asinh(self) -> Tensor:
        return unary.Asinh.apply(self)

    def acosh(self) -> Tensor:
        return unary.Acosh.apply(self)

    def atanh(self) -> Tensor:
        return unary.Atanh.apply(self)

    arcsin, arccos, arctan = asin, acos, atan
    arcsinh, arccosh, arctanh = asinh, acosh, atanh

    def atan2(self, other: Any) -> Tensor:
        """The angle of the point (other, self) in (-pi, pi]; the gradient is 0 at the origin.

        >>> mg.atan2(mg.tensor([1.0, -1.0]), mg.tensor([0.0, -1.0])) / mg.pi
        tensor([ 0.5 , -0.75])
        """
        return binary.Atan2.apply(self, other)

    arctan2 = atan2

    def hypot(self, other: Any) -> Tensor:
        """sqrt(self^2 + other^2) without overflow; the gradient is 0 at the origin."""
        return binary.Hypot.apply(self, other)

    def logaddexp(self, other: Any) -> Tensor:
        """log(exp(self) + exp(other)), computed without overflow.

        >>> mg.tensor([1000.0, 0.0]).logaddexp(mg.tensor([1000.0, -mg.inf]))
        tensor([1000.6932,    0.    ])
        """
        return binary.LogAddExp.apply(self, other)

    def erf(self) -> Tensor:
        """2/sqrt(pi) int_0^x exp(-t^2) dt.

        >>> mg.tensor([0.0, 1.0]).erf().round(decimals=4)
        tensor([0.    , 0.8427])
        """
        return unary.Erf.apply(self)

    def erfc(self) -> Tensor:
        return unary.Erfc.apply(self)

    def erfinv(self) -> Tensor:
        """The inverse of erf on [-1, 1] (+-inf at +-1, nan outside)."""
        return unary.Erfinv.apply(self)

    def log2(self) -> Tensor:
        return unary.Log2.apply(self)

    def log10(self) -> Tensor:
        return unary.Log10.apply(self)

    def exp2(self) -> Tensor:
        return unary.Exp2.apply(self)

    def sinc(self) -> Tensor:
        """sin(pi x) / (pi x), 1 at 0 (twice differentiable everywhere)."""
        return unary.Sinc.apply(self)

    def fmod(self, other: Any) -> Tensor:
        """self - other trunc(self / other): the remainder with the sign of ``self`` (C's)."""
        return binary.Fmod.apply(self, other)

    def frac(self) -> Tensor:
        """x - trunc(x), with the sign of x; the gradient is 1."""
        return self - self.trunc()

    def deg2rad(self) -> Tensor:
        return self * (math.pi / 180)

    def rad2deg(self) -> Tensor:
        return self * (180 / math.pi)

    def xlogy(self, other: Any) -> Tensor:
        """x log(y), 0 where x == 0 unless y is nan (even at y = 0 or inf).

        >>> mg.tensor([0.0, 2.0]).xlogy(mg.tensor([0.0, 1.0]))
        tensor([0., 0.])
        """
        y = arr(other)
        with np.errstate(invalid="ignore"):
            zero = np.asarray((self._array == 0) & ((y <= 0) | np.isinf(y)))
        if np.any(zero):  # log would give -inf there (and nan in the gradient): log 1 = 0
            other = arith.Where.apply(constant(zero), 1, other)
        if not is_tensor(other):
            other = constant(np.asarray(other, dtype=self._array.dtype
                                        if self.is_floating_point() else np.float32))
        return self * other.log()

    def logit(self, eps: float | None = None) -> Tensor:
        """log(p / (1 - p)), with p clamped to [eps, 1 - eps] when ``eps`` is given."""
        p = self if eps is None else self.clamp(eps, 1 - eps)
        if not p.is_floating_point():
            p = p.float()
        return p.log() - (-p).log1p()

    def nan_to_num(self, nan: float = 0.0, posinf: float | None = None,
                   neginf: float | None = None) -> Tensor:
        """nan, +inf and -inf replaced (by 0 and the dtype's extremes unless given); they get
        no gradient, the finite entries pass it through."""
        x = self._array
        if x.dtype.kind != "f":
            return self.clone()
        filled = constant(np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf))
        return arith.Where.apply(constant(np.isfinite(x)), self, filled)

    def heaviside(self, values: Tensor) -> Tensor:
        """0 where x < 0, 1 where x > 0, ``values`` where x == 0 (no derivative, as in torch)."""
        if not is_tensor(values):
            raise TypeError("heaviside(): argument 'values' must be Tensor, not "
                            f"{type(values).__name__}")
        if values.dtype != self.dtype:
            raise RuntimeError("heaviside is not yet implemented for tensors with different "
                               "dtypes")
        return NotDifferentiable.apply("heaviside", _heaviside, self, values)

    def signbit(self) -> Tensor:
        """True where the sign bit is set (also for -0.0 and -nan)."""
        return function.make_tensor(np.signbit(self._array))

    def copysign(self, other: Any) -> Tensor:
        """|self| with the sign of ``other`` (the sign bit, so -0.0 counts as negative)."""
        dt = self._array.dtype if self.is_floating_point() else np.float32
        sign = np.where(np.signbit(arr(other)), -1.0, 1.0).astype(dt)
        return self.abs() * constant(sign)

    def addcmul(self, tensor1: Any, tensor2: Any, *, value: Number = 1) -> Tensor:
        """self + value * tensor1 * tensor2."""
        return self + value * tensor1 * tensor2

    def addcdiv(self, tensor1: Any, tensor2: Any, *, value: Number = 1) -> Tensor:
        """self + value * tensor1 / tensor2."""
        return self + value * tensor1 / tensor2

    def float_power(self, exponent: Any) -> Tensor:
        """self ** exponent in float64, whatever the operands' dtypes (torch's rule)."""
        e = exponent.double() if is_tensor(exponent) else float(exponent)
        return self.double() ** e

    def true_divide(self, other: Any) -> Tensor:
        return arith.Div.apply(self, other)

    def sgn(self) -> Tensor:
        """sign(x) for real tensors (torch's complex-aware name)."""
        return self.sign()

    def clip_(self, min: Number | None = None, max: Number | None = None) -> Tensor:
        return self.clamp_(min, max)

    def isclose(self, other: Any, rtol: float = 1e-05, atol: float = 1e-08,
                equal_nan: bool = False) -> Tensor:
        """|self - other| <= atol + rtol |other| elementwise, as a bool tensor."""
        return function.make_tensor(np.asarray(np.isclose(self._array, arr(other), rtol, atol,
                                                          equal_nan)))

    def clamp_min(self, min: Number | Tensor) -> Tensor:
        return self.clamp(min, None)

    def clamp_max(self, max: Number | Tensor) -> Tensor:
        return self.clamp(None, max)

    def absolute(self) -> Tensor:
        return self.abs()

    def negative(self) -> Tensor:
        return -self

    def positive(self) -> Tensor:
        return self

    def multiply(self, other: Any) -> Tensor:
        return self * other

    def subtract(self, other: Any, *, alpha: Number = 1) -> Tensor:
        return self - (other if alpha == 1 else other * alpha)

    def divide(self, other: Any, *, rounding_mode: str | None = None) -> Tensor:
        """self / other, rounded toward zero (``'trunc'``) or down (``'floor'``) when asked;
        integer division with a rounding mode stays integer, as in torch."""
        if rounding_mode is None:
            return arith.Div.apply(self, other)
        if rounding_mode not in ("trunc", "floor"):
            raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or "
                             f"'floor' but found '{rounding_mode}'")
        if not self.is_floating_point() and np.asarray(arr(other)).dtype.kind != "f":
            q = arith.FloorDivide.apply(self, other)  # exact for integers, no float detour
            if rounding_mode == "trunc":  # floor + 1 where the exact quotient is negative
                x, y = self._array, arr(other)
                q = q + function.make_tensor(((x % y) != 0) & ((x < 0) != (y < 0))).long()
            return q
        x, y = float_operands(self, other)
        with np.errstate(divide="ignore", invalid="ignore"):
            q = (np.trunc if rounding_mode == "trunc" else np.floor)(np.divide(x, y))
        # Piecewise constant: a zero gradient (not 0 / other, which is nan where other is)
        return unary.Rounding.apply(self, lambda _: q)

    def fmax(self, other: Any) -> Tensor:
        """Elementwise max ignoring nan (nan only where both are); the gradient goes to the
        side taken, ``self`` at ties, as in torch."""
        return _pick(self, other, np.greater_equal)

    def fmin(self, other: Any) -> Tensor:
        return _pick(self, other, np.less_equal)

    def logaddexp2(self, other: Any) -> Tensor:
        """log2(2^self + 2^other), without overflow."""
        return binary.LogAddExp.apply(self * _LN2, other * _LN2) / _LN2

    def logical_and(self, other: Any) -> Tensor:
        return function.make_tensor(np.logical_and(self._array, arr(other)))

    def logical_or(self, other: Any) -> Tensor:
        return function.make_tensor(np.logical_or(self._array, arr(other)))

    def logical_xor(self, other: Any) -> Tensor:
        return function.make_tensor(np.logical_xor(self._array, arr(other)))

    def logical_not(self) -> Tensor:
        return function.make_tensor(np.logical_not(self._array))

    def isposinf(self) -> Tensor:
        return function.make_tensor(np.isposinf(self._array))

    def isneginf(self) -> Tensor:
        return function.make_tensor(np.isneginf(self._array))

    def isreal(self) -> Tensor:
        return function.make_tensor(np.ones(self.shape, bool))

    def lgamma(self) -> Tensor:
        """log|Gamma(x)|; inf at 0 and the negative integers, its poles.

        >>> mg.tensor([1.0, 4.0, 0.5]).lgamma().round(decimals=4)
        tensor([0.    , 1.7918, 0.5724])
        """
        return gamma.Lgamma.apply(self)

    def digamma(self) -> Tensor:
        """psi(x) = d/dx log Gamma(x); -inf at 0, nan at the negative integers (torch's).

        >>> mg.tensor([1.0, 2.0]).digamma().round(decimals=4)
        tensor([-0.5772,  0.4228])
        """
        return gamma.Polygamma.apply(self, 0)

    def polygamma(self, n: int) -> Tensor:
        """psi^(n)(x), the n-th derivative of digamma (n = 0 is digamma itself).

        >>> mg.tensor([1.0, 2.0]).polygamma(1).round(decimals=4)
        tensor([1.6449, 0.6449])
        """
        n = _int_arg(n, "polygamma", "n")
        if n < 0:
            raise RuntimeError("polygamma(n, x) does not support negative n.")
        return gamma.Polygamma.apply(self, n)

    def i0(self) -> Tensor:
        """I_0(x), the modified Bessel function of the first kind of order 0.

        >>> mg.tensor([0.0, 1.0]).i0().round(decimals=4)
        tensor([1.    , 1.2661])
        """
        return bessel.BesselI.apply(self, 0, False)

    def mvlgamma(self, p: int) -> Tensor:
        """The multivariate log-gamma of dimension p: sum_i lgamma(x - i/2) + p(p-1)/4 log pi.

        >>> mg.tensor([2.0, 3.0]).mvlgamma(3).round(decimals=4)
        tensor([1.5963, 2.6949])
        """
        p = _int_arg(p, "mvlgamma", "p")
        if p < 1:
            raise RuntimeError("p has to be greater than or equal to 1")
        x = self if self._array.dtype.kind == "f" else self.to(np.float32)
        halves = function.make_tensor(-0.5 * np.arange(p, dtype=x._array.dtype))
        return (x.unsqueeze(-1) + halves).lgamma().sum(-1) + p * (p - 1) / 4 * math.log(math.pi)


def _int_arg(value: Any, fn: str, name: str) -> int:
    """value as an int, or torch's TypeError for anything else (bool included)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{fn}(): argument '{name}' must be int, not {type(value).__name__}")
    return int(value)


def _heaviside(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    # Not np.heaviside: torch's heaviside(nan) is 0 (nan > 0 is false), numpy's is nan.
    return np.where(x == 0, v, x > 0).astype(x.dtype)


def _pick(a: Tensor, b: Any, keep_a: np.ufunc) -> Tensor:
    """a where keep_a(a, b) or b is nan, else b (fmax / fmin)."""
    x, y = a._array, arr(b)
    with np.errstate(invalid="ignore"):
        take_a = np.asarray(keep_a(x, y) | np.isnan(y))
    return arith.Where.apply(constant(take_a), a, b)
