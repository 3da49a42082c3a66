"""Elementwise Tensor methods: exp and log, roots, the trigonometric and hyperbolic functions
and their inverses, activations, rounding, clamp / where / masked_fill, the nan and inf
tests, and the small composites (rsqrt, lerp, addcmul, copysign ...). Integer inputs give
float32 results, as in torch.

Each method names its gradient rule in ops/unary.py (one tensor) or ops/binary.py (two);
every public method here is also a function of the package (``mg.exp is Tensor.exp``).
The arithmetic operators and their named forms (``multiply``, ``divide`` ...) are in
_tensor/arith.py, the special functions (erf, the gamma family, i0, sinc, xlogy, logit) in
_tensor/special.py."""

# mypy: disable-error-code="misc"
# (The methods take self as the Tensor they are mixed into, which mypy's check that a
# self annotation is a supertype of its class, error code misc, would refuse.)

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import dtypes
from ..autograd.function import is_tensor, make_tensor
from ..autograd.grad_mode import _state
from ..dtypes import Number
from ..ops import arith, binary, unary
from ..ops import complex as complex_ops
from ..ops._base import NotDifferentiable, refuse_complex
from ._operand import arr, fill_value, real_only

if TYPE_CHECKING:
    from ..tensor import Tensor

_LN2 = math.log(2.0)


class ElementwiseMethods:
    """The elementwise methods of Tensor (mixed into it by tensor.py)."""

    def isnan(self: Tensor) -> Tensor:
        return make_tensor(np.isnan(self._array))

    def isinf(self: Tensor) -> Tensor:
        return make_tensor(np.isinf(self._array))

    def isfinite(self: Tensor) -> Tensor:
        return make_tensor(np.isfinite(self._array))

    def sign(self: Tensor) -> Tensor:
        """-1, 0 or 1; piecewise constant, so the gradient is zero (as in torch)."""
        kind = self._array.dtype.kind
        if kind == "f":  # first: the usual case
            if self.requires_grad and _state.enabled:
                return unary.Rounding.apply(self, np.sign)
            return make_tensor(np.sign(self._array))  # nothing records (np.sign never warns)
        if kind == "c":
            raise NotImplementedError("Unlike NumPy, torch.sign is not intended to support "
                                      "complex numbers. Please use torch.sgn instead.")
        if kind == "b":  # True is 1, False 0: their own signs (numpy has no bool sign)
            return make_tensor(self._array.copy())
        return make_tensor(np.sign(self._array))

    def exp(self: Tensor) -> Tensor:
        return unary.Exp.apply(self)

    def log(self: Tensor) -> Tensor:
        return unary.Log.apply(self)

    def sqrt(self: Tensor) -> Tensor:
        return unary.Sqrt.apply(self)

    def rsqrt(self: Tensor) -> Tensor:
        return 1 / self.sqrt()

    def sin(self: Tensor) -> Tensor:
        return unary.Sin.apply(self)

    def cos(self: Tensor) -> Tensor:
        return unary.Cos.apply(self)

    def tanh(self: Tensor) -> Tensor:
        return unary.Tanh.apply(self)

    def sigmoid(self: Tensor) -> Tensor:
        return unary.Sigmoid.apply(self)

    def relu(self: Tensor) -> Tensor:
        return unary.Relu.apply(self)

    def floor(self: Tensor) -> Tensor:
        """Round down; the gradient is zero, as in torch."""
        return unary.Rounding.apply(self, np.floor)

    def ceil(self: Tensor) -> Tensor:
        return unary.Rounding.apply(self, np.ceil)

    def trunc(self: Tensor) -> Tensor:
        return unary.Rounding.apply(self, np.trunc)

    fix = trunc

    def round(self: Tensor, decimals: int = 0) -> Tensor:
        """Round half to even (as torch and numpy do); the gradient is zero."""
        return unary.Rounding.apply(self, lambda x: np.round(x, decimals))

    def square(self: Tensor) -> Tensor:
        """x * x; of a bool x, int64 (torch's square is its pow(x, 2))."""
        return self * self if self._array.dtype.kind != "b" else self.long()

    def reciprocal(self: Tensor) -> Tensor:
        return 1 / self

    def log1p(self: Tensor) -> Tensor:
        """log(1 + x), accurate for tiny x (``log(x + 1)`` would round 1 + x first)."""
        return unary.Log1p.apply(self)

    def expm1(self: Tensor) -> Tensor:
        """exp(x) - 1, accurate for tiny x (``exp(x) - 1`` would cancel)."""
        return unary.Expm1.apply(self)

    def maximum(self: Tensor, other: Any) -> Tensor:
        """Elementwise max; at ties the gradient is split evenly, as in torch."""
        return arith.Maximum.apply(self, other)

    def minimum(self: Tensor, other: Any) -> Tensor:
        return arith.Minimum.apply(self, other)

    def clamp(self: Tensor, min: Number | Tensor | None = None,
              max: Number | Tensor | None = None) -> Tensor:
        """Clip to [min, max]; the gradient passes where min <= x <= max (torch's rule)."""
        if min is None and max is None:
            raise RuntimeError("clamp: at least one of 'min' or 'max' must not be None")
        return arith.Clamp.apply(self, min, max)

    clip = clamp

    def where(self: Tensor, condition: Any, other: Any) -> Tensor:
        """``self`` where ``condition`` holds, else ``other`` (torch's method form)."""
        return arith.Where.apply(bool_mask(condition), self, other)

    def masked_fill(self: Tensor, mask: Any, value: Number | Tensor) -> Tensor:
        return arith.Where.apply(bool_mask(mask), fill_value(value, self._array.dtype), self)

    def lerp(self: Tensor, end: Any, weight: Any) -> Tensor:
        return self + weight * (end - self)

    def tan(self: Tensor) -> Tensor:
        return unary.Tan.apply(self)

    def sinh(self: Tensor) -> Tensor:
        return unary.Sinh.apply(self)

    def cosh(self: Tensor) -> Tensor:
        return unary.Cosh.apply(self)

    def asin(self: Tensor) -> Tensor:
        """arcsin on [-1, 1] (nan outside, as in torch)."""
        return unary.Asin.apply(self)

    def acos(self: Tensor) -> Tensor:
        return unary.Acos.apply(self)

    def atan(self: Tensor) -> Tensor:
        return unary.Atan.apply(self)

    def asinh(self: Tensor) -> Tensor:
        return unary.Asinh.apply(self)

    def acosh(self: Tensor) -> Tensor:
        return unary.Acosh.apply(self)

    def atanh(self: Tensor) -> Tensor:
        return unary.Atanh.apply(self)

    arcsin, arccos, arctan = asin, acos, atan

    arcsinh, arccosh, arctanh = asinh, acosh, atanh

    def atan2(self: Tensor, other: Any) -> Tensor:
        """The angle of the point (other, self) in (-pi, pi]; the gradient is 0 at the origin.

        >>> mg.atan2(mg.tensor([1.0, -1.0]), mg.tensor([0.0, -1.0])) / mg.pi
        tensor([ 0.5 , -0.75])
        """
        return binary.Atan2.apply(self, other)

    arctan2 = atan2

    def hypot(self: Tensor, other: Any) -> Tensor:
        """sqrt(self^2 + other^2) without overflow; the gradient is 0 at the origin."""
        return binary.Hypot.apply(self, other)

    def logaddexp(self: Tensor, other: Any) -> Tensor:
        """log(exp(self) + exp(other)), computed without overflow.

        >>> mg.tensor([1000.0, 0.0]).logaddexp(mg.tensor([1000.0, -mg.inf]))
        tensor([1000.6932,    0.    ])
        """
        return binary.LogAddExp.apply(self, other)

    def log2(self: Tensor) -> Tensor:
        return unary.Log2.apply(self)

    def log10(self: Tensor) -> Tensor:
        return unary.Log10.apply(self)

    def exp2(self: Tensor) -> Tensor:
        return unary.Exp2.apply(self)

    def fmod(self: Tensor, other: Any) -> Tensor:
        """self - other trunc(self / other): the remainder with the sign of ``self`` (C's)."""
        return binary.Fmod.apply(self, other)

    def frac(self: Tensor) -> Tensor:
        """x - trunc(x), with the sign of x; the gradient is 1."""
        return self - self.trunc()

    @real_only
    def deg2rad(self: Tensor) -> Tensor:
        return self * (math.pi / 180)

    @real_only
    def rad2deg(self: Tensor) -> Tensor:
        return self * (180 / math.pi)

    def nan_to_num(self: Tensor, nan: float = 0.0, posinf: float | None = None,
                   neginf: float | None = None) -> Tensor:
        """nan, +inf and -inf replaced (by 0 and the dtype's extremes unless given); they get
        no gradient, the finite entries pass it through."""
        x = self._array
        if x.dtype.kind != "f":
            return self.clone()
        filled = make_tensor(np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf))
        return arith.Where.apply(make_tensor(np.isfinite(x)), self, filled)

    @real_only
    def heaviside(self: Tensor, values: Tensor) -> Tensor:
        """0 where x < 0, 1 where x > 0, ``values`` where x == 0 (no derivative, as in torch)."""
        if not is_tensor(values):
            raise TypeError("heaviside(): argument 'values' must be Tensor, not "
                            f"{type(values).__name__}")
        if values.dtype != self.dtype:
            raise RuntimeError("heaviside is not yet implemented for tensors with different "
                               "dtypes")
        return NotDifferentiable.apply("heaviside", _heaviside, self, values)

    @real_only
    def signbit(self: Tensor) -> Tensor:
        """True where the sign bit is set (also for -0.0 and -nan)."""
        return make_tensor(np.signbit(self._array))

    @real_only
    def copysign(self: Tensor, other: Any) -> Tensor:
        """|self| with the sign of ``other`` (the sign bit, so -0.0 counts as negative)."""
        dt = self._array.dtype if self.is_floating_point() else dtypes.DEFAULT_FLOAT
        sign = np.where(np.signbit(arr(other)), -1.0, 1.0).astype(dt)
        return self.abs() * make_tensor(sign)

    def addcmul(self: Tensor, tensor1: Any, tensor2: Any, *, value: Number = 1) -> Tensor:
        """self + value * tensor1 * tensor2."""
        return self + value * tensor1 * tensor2

    def addcdiv(self: Tensor, tensor1: Any, tensor2: Any, *, value: Number = 1) -> Tensor:
        """self + value * tensor1 / tensor2."""
        return self + value * tensor1 / tensor2

    def sgn(self: Tensor) -> Tensor:
        """sign(x) for real tensors; z / |z| (0 at 0) for complex ones, as torch's."""
        if self._array.dtype.kind == "c":
            return complex_ops.sgn(self)
        return self.sign()

    def clamp_min(self: Tensor, min: Number | Tensor) -> Tensor:
        return self.clamp(min, None)

    def clamp_max(self: Tensor, max: Number | Tensor) -> Tensor:
        return self.clamp(None, max)

    @real_only
    def fmax(self: Tensor, other: Any) -> Tensor:
        """Elementwise max ignoring nan (nan only where both are); the gradient goes to the
        side taken, ``self`` at ties, as in torch."""
        return _pick(self, other, np.greater_equal)

    @real_only
    def fmin(self: Tensor, other: Any) -> Tensor:
        return _pick(self, other, np.less_equal)

    def logaddexp2(self: Tensor, other: Any) -> Tensor:
        """log2(2^self + 2^other), without overflow (real only, as torch's)."""
        for x in (self, other):
            if arr(x).dtype.kind == "c":
                raise refuse_complex("logaddexp2", arr(x).dtype)
        return binary.LogAddExp.apply(self * _LN2, other * _LN2) / _LN2

    @real_only
    def isposinf(self: Tensor) -> Tensor:
        return make_tensor(np.isposinf(self._array))

    @real_only
    def isneginf(self: Tensor) -> Tensor:
        return make_tensor(np.isneginf(self._array))

    def isreal(self: Tensor) -> Tensor:
        return make_tensor(np.isreal(self._array))

def bool_mask(x: Any) -> Tensor:
    """``x`` (a condition or mask) as a bool Tensor; any other dtype is refused."""
    t = x if is_tensor(x) else make_tensor(np.asarray(x))
    if t._array.dtype != np.bool_:
        raise TypeError(f"expected a bool condition/mask, got dtype {t._array.dtype}")
    return t



def _heaviside(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    # Not np.heaviside: torch's heaviside(nan) is 0 (nan > 0 is false), numpy's is nan.
    return np.where(x == 0, v, x > 0).astype(x.dtype)


def _pick(a: Tensor, b: Any, keep_a: np.ufunc) -> Tensor:
    """a where keep_a(a, b) or b is nan, else b (fmax / fmin)."""
    x, y = a._array, arr(b)
    with np.errstate(invalid="ignore"):
        take_a = np.asarray(keep_a(x, y) | np.isnan(y))
    return arith.Where.apply(make_tensor(take_a), a, b)
