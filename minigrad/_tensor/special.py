"""The special functions as Tensor methods, torch.special's members that are also Tensor
methods: the error function and its inverse, the gamma family (lgamma, digamma, polygamma,
mvlgamma), the Bessel function i0, sinc, and xlogy and logit (the logarithms that need a
care of their own at 0). Their gradient rules are in ops/unary.py, ops/gamma.py and
ops/bessel.py; every public method here is also a function of the package
(``mg.erf is Tensor.erf``) and of ``mg.special`` where torch has it there."""

# mypy: disable-error-code="misc"
# (The methods take self as the Tensor they are mixed into, which mypy's check that a
# self annotation is a supertype of its class, error code misc, would refuse.)

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import dtypes
from ..autograd.function import is_tensor, make_tensor
from ..ops import arith, bessel, gamma, unary
from ._operand import arr, real_only

if TYPE_CHECKING:
    from ..tensor import Tensor


class SpecialMethods:
    """The special-function methods of Tensor (mixed into it by tensor.py)."""

    def erf(self: Tensor) -> Tensor:
        """2/sqrt(pi) int_0^x exp(-t^2) dt.

        >>> mg.tensor([0.0, 1.0]).erf().round(decimals=4)
        tensor([0.    , 0.8427])
        """
        return unary.Erf.apply(self)

    def erfc(self: Tensor) -> Tensor:
        return unary.Erfc.apply(self)

    def erfinv(self: Tensor) -> Tensor:
        """The inverse of erf on [-1, 1] (+-inf at +-1, nan outside)."""
        return unary.Erfinv.apply(self)

    def sinc(self: Tensor) -> Tensor:
        """sin(pi x) / (pi x), 1 at 0 (twice differentiable everywhere)."""
        return unary.Sinc.apply(self)

    @real_only
    def xlogy(self: Tensor, other: Any) -> Tensor:
        """x log(y), 0 where x == 0 unless y is nan (even at y = 0 or inf).

        >>> mg.tensor([0.0, 2.0]).xlogy(mg.tensor([0.0, 1.0]))
        tensor([0., 0.])
        """
        y = arr(other)
        with np.errstate(invalid="ignore"):
            zero = np.asarray((self._array == 0) & ((y <= 0) | np.isinf(y)))
        if np.any(zero):  # log would give -inf there (and nan in the gradient): log 1 = 0
            other = arith.Where.apply(make_tensor(zero), 1, other)
        if not is_tensor(other):
            other = make_tensor(np.asarray(other, dtype=self._array.dtype
                                        if self.is_floating_point() else dtypes.DEFAULT_FLOAT))
        return self * other.log()

    @real_only
    def logit(self: Tensor, eps: float | None = None) -> Tensor:
        """log(p / (1 - p)), with p clamped to [eps, 1 - eps] when ``eps`` is given."""
        p = self if eps is None else self.clamp(eps, 1 - eps)
        if not p.is_floating_point():
            p = p.float()
        return p.log() - (-p).log1p()

    def lgamma(self: Tensor) -> Tensor:
        """log|Gamma(x)|; inf at 0 and the negative integers, its poles.

        >>> mg.tensor([1.0, 4.0, 0.5]).lgamma().round(decimals=4)
        tensor([0.    , 1.7918, 0.5724])
        """
        return gamma.Lgamma.apply(self)

    def digamma(self: Tensor) -> Tensor:
        """psi(x) = d/dx log Gamma(x); -inf at 0, nan at the negative integers (torch's).

        >>> mg.tensor([1.0, 2.0]).digamma().round(decimals=4)
        tensor([-0.5772,  0.4228])
        """
        return gamma.Polygamma.apply(self, 0)

    def polygamma(self: Tensor, n: int) -> Tensor:
        """psi^(n)(x), the n-th derivative of digamma (n = 0 is digamma itself).

        >>> mg.tensor([1.0, 2.0]).polygamma(1).round(decimals=4)
        tensor([1.6449, 0.6449])
        """
        n = _int_arg(n, "polygamma", "n")
        if n < 0:
            raise RuntimeError("polygamma(n, x) does not support negative n.")
        return gamma.Polygamma.apply(self, n)

    def i0(self: Tensor) -> Tensor:
        """I_0(x), the modified Bessel function of the first kind of order 0.

        >>> mg.tensor([0.0, 1.0]).i0().round(decimals=4)
        tensor([1.    , 1.2661])
        """
        return bessel.BesselI.apply(self, 0, False)

    @real_only
    def mvlgamma(self: Tensor, p: int) -> Tensor:
        """The multivariate log-gamma of dimension p: sum_i lgamma(x - i/2) + p(p-1)/4 log pi.

        >>> mg.tensor([2.0, 3.0]).mvlgamma(3).round(decimals=4)
        tensor([1.5963, 2.6949])
        """
        p = _int_arg(p, "mvlgamma", "p")
        if p < 1:
            raise RuntimeError("p has to be greater than or equal to 1")
        x = self if self._array.dtype.kind == "f" else self.to(dtypes.DEFAULT_FLOAT)
        halves = make_tensor(-0.5 * np.arange(p, dtype=x._array.dtype))
        return (x.unsqueeze(-1) + halves).lgamma().sum(-1) + p * (p - 1) / 4 * math.log(math.pi)

def _int_arg(value: Any, fn: str, name: str) -> int:
    """value as an int, or torch's TypeError for anything else (bool included)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{fn}(): argument '{name}' must be int, not {type(value).__name__}")
    return int(value)
