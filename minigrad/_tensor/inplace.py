"""In-place methods (``add_``, ``mul_``, ``copy_`` ... and ``+=``): each computes out of place
and hands the result to ``autograd.views.inplace``, which writes it and keeps the graph right."""

# mypy: disable-error-code="misc"
# (The methods take self as the Tensor they are mixed into, which mypy's check that a
# self annotation is a supertype of its class, error code misc, would refuse.)

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..autograd import function, views
from ..autograd.function import is_tensor
from ..dtypes import Number
from ..ops import shape
from ._operand import fill_value

if TYPE_CHECKING:
    from ..tensor import Tensor


class InplaceMethods:
    """The inplace methods of Tensor (mixed into it by tensor.py)."""

    def add_(self: Tensor, other: Any, alpha: Number = 1) -> Tensor:
        return views.inplace(self, lambda s: s + (other if alpha == 1 else other * alpha),
                             (other,))

    def sub_(self: Tensor, other: Any, alpha: Number = 1) -> Tensor:
        return views.inplace(self, lambda s: s - (other if alpha == 1 else other * alpha),
                             (other,))

    def mul_(self: Tensor, other: Any) -> Tensor:
        return views.inplace(self, lambda s: s * other, (other,))

    def div_(self: Tensor, other: Any, *, rounding_mode: str | None = None) -> Tensor:
        return views.inplace(self, lambda s: s.div(other, rounding_mode=rounding_mode),
                             (other,))

    def clamp_(self: Tensor, min: Number | None = None, max: Number | None = None) -> Tensor:
        return views.inplace(self, lambda s: s.clamp(min, max))

    def clip_(self: Tensor, min: Number | None = None, max: Number | None = None) -> Tensor:
        return self.clamp_(min, max)

    def pow_(self: Tensor, exponent: Any) -> Tensor:
        return views.inplace(self, lambda s: s ** exponent, (exponent,))

    def neg_(self: Tensor) -> Tensor:
        return views.inplace(self, lambda s: -s)

    def abs_(self: Tensor) -> Tensor:
        return views.inplace(self, lambda s: s.abs())

    def exp_(self: Tensor) -> Tensor:
        return views.inplace(self, lambda s: s.exp())

    def sqrt_(self: Tensor) -> Tensor:
        return views.inplace(self, lambda s: s.sqrt())

    def relu_(self: Tensor) -> Tensor:
        return views.inplace(self, lambda s: s.relu())

    def sigmoid_(self: Tensor) -> Tensor:
        return views.inplace(self, lambda s: s.sigmoid())

    def tanh_(self: Tensor) -> Tensor:
        return views.inplace(self, lambda s: s.tanh())

    def masked_fill_(self: Tensor, mask: Any, value: Number | Tensor) -> Tensor:
        return views.inplace(self, lambda s: s.masked_fill(mask, value), (value,))

    def copy_(self: Tensor, src: Any) -> Tensor:
        """Copy ``src`` (broadcast, cast to this dtype) into this tensor."""
        src_t = src if is_tensor(src) else function.tensor_class(src)
        return views.inplace(self,
            lambda s: shape.CopyInto.apply(s, src_t.to(self.dtype)), (src_t,))

    def fill_(self: Tensor, value: Number) -> Tensor:
        value = fill_value(value, self._array.dtype)
        return views.inplace(self, lambda s: shape.CopyInto.apply(s, value))

    def zero_(self: Tensor) -> Tensor:
        return self.fill_(0)

    def uniform_(self: Tensor, from_: float = 0.0, to: float = 1.0, **kwargs: Any) -> Tensor:
        """Fill with samples from U[from, to) of the global generator (torch's keyword
        ``from`` is accepted too)."""
        lo = kwargs.pop("from", from_)
        if kwargs:
            raise TypeError(f"uniform_() got an unexpected keyword argument "
                            f"{next(iter(kwargs))!r}")
        return _random_fill(self, lambda rng, s: rng.uniform(lo, to, s))

    def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
        """Fill with samples from N(mean, std^2) of the global generator."""
        return _random_fill(self, lambda rng, s: rng.normal(mean, std, s))

    def addcmul_(self: Tensor, tensor1: Any, tensor2: Any, *, value: Number = 1) -> Tensor:
        """self += value * tensor1 * tensor2 (Adam's second-moment update)."""
        return views.inplace(self, lambda s: s.addcmul(tensor1, tensor2, value=value),
                             (tensor1, tensor2))

    def addcdiv_(self: Tensor, tensor1: Any, tensor2: Any, *, value: Number = 1) -> Tensor:
        """self += value * tensor1 / tensor2 (Adam's step)."""
        return views.inplace(self, lambda s: s.addcdiv(tensor1, tensor2, value=value),
                             (tensor1, tensor2))

    def lerp_(self: Tensor, end: Any, weight: Any) -> Tensor:
        return views.inplace(self, lambda s: s.lerp(end, weight), (end, weight))

    def clamp_min_(self: Tensor, min: Any) -> Tensor:
        return views.inplace(self, lambda s: s.clamp_min(min), (min,))

    def clamp_max_(self: Tensor, max: Any) -> Tensor:
        return views.inplace(self, lambda s: s.clamp_max(max), (max,))

    def nan_to_num_(self: Tensor, nan: float = 0.0, posinf: float | None = None,
                    neginf: float | None = None) -> Tensor:
        return views.inplace(self, lambda s: s.nan_to_num(nan, posinf, neginf))

    def log_(self: Tensor) -> Tensor:
        return views.inplace(self, lambda s: s.log())

    def reciprocal_(self: Tensor) -> Tensor:
        return views.inplace(self, lambda s: s.reciprocal())

    def square_(self: Tensor) -> Tensor:
        return views.inplace(self, lambda s: s.square())

    def floor_(self: Tensor) -> Tensor:
        return views.inplace(self, lambda s: s.floor())

    def ceil_(self: Tensor) -> Tensor:
        return views.inplace(self, lambda s: s.ceil())

    def round_(self: Tensor, decimals: int = 0) -> Tensor:
        return views.inplace(self, lambda s: s.round(decimals))

    def trunc_(self: Tensor) -> Tensor:
        return views.inplace(self, lambda s: s.trunc())

    def __iadd__(self: Tensor, o: Any) -> Tensor:
        return self.add_(o)

    def __isub__(self: Tensor, o: Any) -> Tensor:
        return self.sub_(o)

    def __imul__(self: Tensor, o: Any) -> Tensor:
        return self.mul_(o)

    def __itruediv__(self: Tensor, o: Any) -> Tensor:
        return self.div_(o)

    def __ipow__(self: Tensor, o: Any) -> Tensor:
        return self.pow_(o)


def _random_fill(t: Tensor, draw: Any) -> Tensor:
    """Write ``draw(rng, shape)`` (from the global generator) into ``t``, outside autograd's
    view of the values: it is a fresh sample, not a function of the old ones."""
    from ..creation import rng_of  # creation is built on Tensor

    values = np.asarray(draw(rng_of(None), t.shape), dtype=t.dtype)
    return views.inplace(t, lambda s: shape.CopyInto.apply(s, values))
