"""Elementwise Tensor methods: exp/log/trig and activations, rounding, clamp/where/masked_fill,
and the composites built from them (rsqrt, square, lerp ...)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..autograd import function
from ..autograd.function import is_tensor
from ..dtypes import Number
from ..ops import arith, unary

if TYPE_CHECKING:
    from ..tensor import Tensor


class ElementwiseMethods:
    """The elementwise methods of Tensor (mixed into it by tensor.py)."""

    def isnan(self) -> Tensor:
        return function.make_tensor(np.isnan(self._array))

    def isinf(self) -> Tensor:
        return function.make_tensor(np.isinf(self._array))

    def isfinite(self) -> Tensor:
        return function.make_tensor(np.isfinite(self._array))

    def sign(self) -> Tensor:
        """-1, 0 or 1; piecewise constant, so the gradient is zero (as in torch)."""
        if self._array.dtype.kind == "f":
            return unary.Rounding.apply(self, np.sign)
        return function.make_tensor(np.sign(self._array))

    def exp(self) -> Tensor:
        return unary.Exp.apply(self)

    def log(self) -> Tensor:
        return unary.Log.apply(self)

    def sqrt(self) -> Tensor:
        return unary.Sqrt.apply(self)

    def rsqrt(self) -> Tensor:
        return 1 / self.sqrt()

    def sin(self) -> Tensor:
        return unary.Sin.apply(self)

    def cos(self) -> Tensor:
        return unary.Cos.apply(self)

    def tanh(self) -> Tensor:
        return unary.Tanh.apply(self)

    def sigmoid(self) -> Tensor:
        return unary.Sigmoid.apply(self)

    def relu(self) -> Tensor:
        return unary.Relu.apply(self)

    def floor(self) -> Tensor:
        """Round down; the gradient is zero, as in torch."""
        return unary.Rounding.apply(self, np.floor)

    def ceil(self) -> Tensor:
        return unary.Rounding.apply(self, np.ceil)

    def trunc(self) -> Tensor:
        return unary.Rounding.apply(self, np.trunc)

    fix = trunc

    def round(self, decimals: int = 0) -> Tensor:
        """Round half to even (as torch and numpy do); the gradient is zero."""
        return unary.Rounding.apply(self, lambda x: np.round(x, decimals))

    def square(self) -> Tensor:
        return self * self

    def reciprocal(self) -> Tensor:
        return 1 / self

    def log1p(self) -> Tensor:
        """log(1 + x), accurate for tiny x (``log(x + 1)`` would round 1 + x first)."""
        return unary.Log1p.apply(self)

    def expm1(self) -> Tensor:
        """exp(x) - 1, accurate for tiny x (``exp(x) - 1`` would cancel)."""
        return unary.Expm1.apply(self)

    def maximum(self, other: Any) -> Tensor:
        """Elementwise max; at ties the gradient is split evenly, as in torch."""
        return arith.Maximum.apply(self, other)

    def minimum(self, other: Any) -> Tensor:
        return arith.Minimum.apply(self, other)

    def clamp(self, min: Number | Tensor | None = None,
              max: Number | Tensor | None = None) -> Tensor:
        """Clip to [min, max]; the gradient passes where min <= x <= max (torch's rule)."""
        if min is None and max is None:
            raise RuntimeError("clamp: at least one of 'min' or 'max' must not be None")
        return arith.Clamp.apply(self, min, max)

    clip = clamp

    def where(self, condition: Any, other: Any) -> Tensor:
        """``self`` where ``condition`` holds, else ``other`` (torch's method form)."""
        return arith.Where.apply(bool_mask(condition), self, other)

    def masked_fill(self, mask: Any, value: Number | Tensor) -> Tensor:
        return arith.Where.apply(bool_mask(mask), value, self)

    def lerp(self, end: Any, weight: Any) -> Tensor:
        return self + weight * (end - self)


def bool_mask(x: Any) -> Tensor:
    """``x`` (a condition or mask) as a bool Tensor; any other dtype is refused."""
    t = x if is_tensor(x) else function.make_tensor(np.asarray(x))
    if t._array.dtype != np.bool_:
        raise TypeError(f"expected a bool condition/mask, got dtype {t._array.dtype}")
    return t
