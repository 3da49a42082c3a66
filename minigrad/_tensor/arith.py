"""Tensor operators: arithmetic, comparisons and logic, matrix products, and their named forms
(``multiply``, ``divide``, ``logical_and`` ...). Each is a one-line delegation to a Function
in ops/ (comparisons have no gradient and build no graph)."""

# mypy: disable-error-code="misc"
# (The methods take self as the Tensor they are mixed into, which mypy's check that a
# self annotation is a supertype of its class, error code misc, would refuse.)

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..autograd import function
from ..autograd.function import is_tensor, make_tensor
from ..dtypes import Number
from ..ops import arith, matmul, unary
from ..ops._base import float_operands, operands, refuse_complex
from ._operand import arr

if TYPE_CHECKING:
    from ..tensor import Tensor


# The operators' applies bound once: reading a classmethod off its class builds a bound
# method per call, through a lookup CPython 3.11 does not cache.
_add, _sub, _mul, _div = (arith.Add.apply, arith.Sub.apply, arith.Mul.apply,
                          arith.Div.apply)


class ArithMethods:
    """The arith methods of Tensor (mixed into it by tensor.py)."""

    def __add__(self: Tensor, o: Any) -> Tensor:
        return _add(self, o)

    def __radd__(self: Tensor, o: Any) -> Tensor:
        return _add(o, self)

    def __sub__(self: Tensor, o: Any) -> Tensor:
        return _sub(self, o)

    def __rsub__(self: Tensor, o: Any) -> Tensor:
        return _sub(o, self)

    def __mul__(self: Tensor, other: Any) -> Tensor:
        return _mul(self, other)

    def __rmul__(self: Tensor, o: Any) -> Tensor:
        return _mul(o, self)

    def __truediv__(self: Tensor, other: Any) -> Tensor:
        return _div(self, other)

    def __rtruediv__(self: Tensor, o: Any) -> Tensor:
        return _div(o, self)

    def __pow__(self: Tensor, exponent: Any) -> Tensor:
        return arith.Pow.apply(self, exponent)

    def __rpow__(self: Tensor, o: Any) -> Tensor:
        return arith.Pow.apply(o, self)

    def __neg__(self: Tensor) -> Tensor:
        return unary.Neg.apply(self)

    def __pos__(self: Tensor) -> Tensor:
        return self

    def __abs__(self: Tensor) -> Tensor:
        return unary.Abs.apply(self)

    def __matmul__(self: Tensor, o: Any) -> Tensor:
        return self.matmul(o)

    def __rmatmul__(self: Tensor, o: Any) -> Tensor:
        return tensor_like(o, self).matmul(self)

    def add(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
        """self + alpha * other (torch's ``add``)."""
        return arith.Add.apply(self, other if alpha == 1 else other * alpha)

    def sub(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
        """self - alpha * other (torch's ``sub``)."""
        return arith.Sub.apply(self, other if alpha == 1 else other * alpha)

    mul = __mul__
    pow = __pow__
    neg = __neg__
    abs = __abs__

    def __floordiv__(self: Tensor, other: Any) -> Tensor:
        """floor(self / other); like torch, backward through it raises (it has no derivative)."""
        return arith.FloorDivide.apply(self, other)

    def __rfloordiv__(self: Tensor, o: Any) -> Tensor:
        return arith.FloorDivide.apply(o, self)

    def __mod__(self: Tensor, other: Any) -> Tensor:
        """self - other * floor(self / other), with the sign of ``other`` (torch.remainder,
        Python's %)."""
        return arith.Remainder.apply(self, other)

    def __rmod__(self: Tensor, o: Any) -> Tensor:
        return arith.Remainder.apply(o, self)

    floor_divide = __floordiv__
    remainder = __mod__

    def __eq__(self: Tensor, other: Any) -> Tensor:  # type: ignore[override]
        return _constant(np.equal, self, other)

    def __ne__(self: Tensor, other: Any) -> Tensor:  # type: ignore[override]
        return _constant(np.not_equal, self, other)

    def __lt__(self: Tensor, other: Any) -> Tensor:
        return _constant(np.less, self, other, "lt_cpu")

    def __le__(self: Tensor, other: Any) -> Tensor:
        return _constant(np.less_equal, self, other, "le_cpu")

    def __gt__(self: Tensor, other: Any) -> Tensor:
        return _constant(np.greater, self, other, "gt_cpu")

    def __ge__(self: Tensor, other: Any) -> Tensor:
        return _constant(np.greater_equal, self, other, "ge_cpu")

    def __and__(self: Tensor, o: Any) -> Tensor:
        return _constant(np.bitwise_and, self, o)

    def __or__(self: Tensor, o: Any) -> Tensor:
        return _constant(np.bitwise_or, self, o)

    def __xor__(self: Tensor, o: Any) -> Tensor:
        return _constant(np.bitwise_xor, self, o)

    def __invert__(self: Tensor) -> Tensor:
        return make_tensor(np.invert(self._array))

    eq, ne, lt, le, gt, ge = __eq__, __ne__, __lt__, __le__, __gt__, __ge__

    def allclose(self: Tensor, other: Any, rtol: float = 1e-5, atol: float = 1e-8,
                 equal_nan: bool = False) -> bool:
        """Whether |self - other| <= atol + rtol |other| everywhere (nan equal to nan only
        with ``equal_nan``)."""
        return bool(np.allclose(self._array, arr(other), rtol, atol, equal_nan))

    def equal(self: Tensor, other: Tensor) -> bool:
        return self.shape == other.shape and bool(np.array_equal(self._array, other._array))

    def matmul(self: Tensor, other: Any) -> Tensor:
        """Matrix product with batch broadcasting; 1-D operands as in torch.matmul."""
        other = tensor_like(other, self)
        if self.ndim == 0 or other.ndim == 0:
            raise RuntimeError("both arguments to matmul need to be at least 1D")
        a = self.unsqueeze(0) if self.ndim == 1 else self
        b = other.unsqueeze(-1) if other.ndim == 1 else other
        out = matmul.MatMul.apply(a, b)
        if self.ndim == 1:  # first: -2 is still the added row dim
            out = out.squeeze(-2)
        if other.ndim == 1:
            out = out.squeeze(-1)
        return out

    def mm(self: Tensor, mat2: Tensor) -> Tensor:
        return self.matmul(mat2)

    def bmm(self: Tensor, mat2: Tensor) -> Tensor:
        """Batched matrix product of (b, n, m) and (b, m, p) tensors; no broadcasting."""
        for name, t in (("batch1", self), ("batch2", mat2)):
            if t.ndim != 3:
                raise RuntimeError(f"{name} must be a 3D tensor")
        b, _, m = self.shape
        if mat2.shape[:2] != (b, m):
            raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                               f"[{b}, {m}] but got: [{mat2.shape[0]}, {mat2.shape[1]}].")
        return matmul.MatMul.apply(self, mat2)

    def dot(self: Tensor, other: Tensor) -> Tensor:
        return (self * other).sum()

    def multiply(self: Tensor, other: Any) -> Tensor:
        return self * other

    def subtract(self: Tensor, other: Any, *, alpha: Number = 1) -> Tensor:
        return self - (other if alpha == 1 else other * alpha)

    def divide(self: Tensor, other: Any, *, rounding_mode: str | None = None) -> Tensor:
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
                q = q + make_tensor(((x % y) != 0) & ((x < 0) != (y < 0))).to(q.dtype)
            return q
        x, y = float_operands(self, other)
        with np.errstate(divide="ignore", invalid="ignore"):
            q = (np.trunc if rounding_mode == "trunc" else np.floor)(np.divide(x, y))
        if not self.is_floating_point():  # an integer self by a float other: nothing to
            return make_tensor(q)  # differentiate (Rounding would hand self back unchanged)
        # Piecewise constant: a zero gradient (not 0 / other, which is nan where other is)
        return unary.Rounding.apply(self, lambda _: q)

    div = divide

    def true_divide(self: Tensor, other: Any) -> Tensor:
        return arith.Div.apply(self, other)

    def negative(self: Tensor) -> Tensor:
        return -self

    def positive(self: Tensor) -> Tensor:
        return self

    def absolute(self: Tensor) -> Tensor:
        return self.abs()

    def float_power(self: Tensor, exponent: Any) -> Tensor:
        """self ** exponent in float64 (complex128 when either is complex), whatever the
        operands' dtypes (torch's rule)."""
        cplx = self.is_complex() or np.iscomplexobj(arr(exponent))
        wide = np.dtype(np.complex128 if cplx else np.float64)
        e = exponent.to(wide) if is_tensor(exponent) else (complex if cplx else float)(exponent)
        return self.to(wide) ** e

    def logical_and(self: Tensor, other: Any) -> Tensor:
        return make_tensor(np.logical_and(self._array, arr(other)))

    def logical_or(self: Tensor, other: Any) -> Tensor:
        return make_tensor(np.logical_or(self._array, arr(other)))

    def logical_xor(self: Tensor, other: Any) -> Tensor:
        return make_tensor(np.logical_xor(self._array, arr(other)))

    def logical_not(self: Tensor) -> Tensor:
        return make_tensor(np.logical_not(self._array))

    def isclose(self: Tensor, other: Any, rtol: float = 1e-05, atol: float = 1e-08,
                equal_nan: bool = False) -> Tensor:
        """|self - other| <= atol + rtol |other| elementwise, as a bool tensor."""
        return make_tensor(np.asarray(np.isclose(self._array, arr(other), rtol, atol,
                                                          equal_nan)))


def tensor_like(x: Any, ref: Tensor) -> Tensor:
    """``x`` as a Tensor; a float array or number takes ``ref``'s dtype (torch's weak scalars)."""
    if isinstance(x, function.tensor_class):  # is_tensor, inlined: matmul passes here
        return x
    arr = np.asarray(x)
    return make_tensor(arr.astype(ref.dtype) if arr.dtype.kind == "f" else arr)


def _constant(fn: Callable, a: Any, b: Any, ordering: str = "") -> Tensor:
    """Apply a numpy function that has no gradient (comparisons, floor division). An
    ordering comparison (torch's kernel name ``ordering``) refuses complex numbers, which
    numpy orders and torch does not."""
    x, y = operands(a, b)
    if ordering and x.dtype.kind == "c":
        raise refuse_complex(ordering, x.dtype)
    return make_tensor(np.asarray(fn(x, y)))
