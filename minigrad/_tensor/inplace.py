"""In-place methods (``add_``, ``mul_``, ``copy_`` ... and ``+=``): each computes out of place
and hands the result to ``autograd.views.inplace``, which writes it and keeps the graph right."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..autograd import function, views
from ..autograd.function import is_tensor
from ..dtypes import Number
from ..ops import shape

if TYPE_CHECKING:
    from ..tensor import Tensor


class InplaceMethods:
    """The inplace methods of Tensor (mixed into it by tensor.py)."""

    def add_(self, other: Any, alpha: Number = 1) -> Tensor:
        return views.inplace(self, lambda s: s + (other if alpha == 1 else other * alpha),
                             (other,))

    def sub_(self, other: Any, alpha: Number = 1) -> Tensor:
        return views.inplace(self, lambda s: s - (other if alpha == 1 else other * alpha),
                             (other,))

    def mul_(self, other: Any) -> Tensor:
        return views.inplace(self, lambda s: s * other, (other,))

    def div_(self, other: Any) -> Tensor:
        return views.inplace(self, lambda s: s / other, (other,))

    def clamp_(self, min: Number | None = None, max: Number | None = None) -> Tensor:
        return views.inplace(self, lambda s: s.clamp(min, max))

    def clip_(self, min: Number | None = None, max: Number | None = None) -> Tensor:
        return self.clamp_(min, max)

    def pow_(self, exponent: Any) -> Tensor:
        return views.inplace(self, lambda s: s ** exponent, (exponent,))

    def neg_(self) -> Tensor:
        return views.inplace(self, lambda s: -s)

    def abs_(self) -> Tensor:
        return views.inplace(self, lambda s: s.abs())

    def exp_(self) -> Tensor:
        return views.inplace(self, lambda s: s.exp())

    def sqrt_(self) -> Tensor:
        return views.inplace(self, lambda s: s.sqrt())

    def relu_(self) -> Tensor:
        return views.inplace(self, lambda s: s.relu())

    def sigmoid_(self) -> Tensor:
        return views.inplace(self, lambda s: s.sigmoid())

    def tanh_(self) -> Tensor:
        return views.inplace(self, lambda s: s.tanh())

    def masked_fill_(self, mask: Any, value: Number | Tensor) -> Tensor:
        return views.inplace(self, lambda s: s.masked_fill(mask, value), (value,))

    def copy_(self, src: Any) -> Tensor:
        """Copy ``src`` (broadcast, cast to this dtype) into this tensor."""
        src_t = src if is_tensor(src) else function.tensor_class(src)
        return views.inplace(self,
            lambda s: shape.CopyInto.apply(s, src_t.to(self.dtype)), (src_t,))

    def fill_(self, value: Number) -> Tensor:
        return views.inplace(self, lambda s: shape.CopyInto.apply(s, value))

    def zero_(self) -> Tensor:
        return self.fill_(0)

    def uniform_(self, from_: float = 0.0, to: float = 1.0, **kwargs: Any) -> Tensor:
        """Fill with samples from U[from, to) of the global generator (torch's keyword
        ``from`` is accepted too)."""
        lo = kwargs.pop("from", from_)
        if kwargs:
            raise TypeError(f"uniform_() got an unexpected keyword argument "
                            f"{next(iter(kwargs))!r}")
        return _random_fill(self, lambda rng, s: rng.uniform(lo, to, s))

    def normal_(self, mean: float = 0.0, std: float = 1.0) -> Tensor:
        """Fill with samples from N(mean, std^2) of the global generator."""
        return _random_fill(self, lambda rng, s: rng.normal(mean, std, s))

    def addcmul_(self, tensor1: Any, tensor2: Any, *, value: Number = 1) -> Tensor:
        """self += value * tensor1 * tensor2 (Adam's second-moment update)."""
        return views.inplace(self, lambda s: s.addcmul(tensor1, tensor2, value=value),
                             (tensor1, tensor2))

    def addcdiv_(self, tensor1: Any, tensor2: Any, *, value: Number = 1) -> Tensor:
        """self += value * tensor1 / tensor2 (Adam's step)."""
        return views.inplace(self, lambda s: s.addcdiv(tensor1, tensor2, value=value),
                             (tensor1, tensor2))

    def lerp_(self, end: Any, weight: Any) -> Tensor:
        return views.inplace(self, lambda s: s.lerp(end, weight), (end, weight))

    def clamp_min_(self, min: Any) -> Tensor:
        return views.inplace(self, lambda s: s.clamp_min(min), (min,))

    def clamp_max_(self, max: Any) -> Tensor:
        return views.inplace(self, lambda s: s.clamp_max(max), (max,))

    def nan_to_num_(self, nan: float = 0.0, posinf: float | None = None,
                    neginf: float | None = None) -> Tensor:
        return views.inplace(self, lambda s: s.nan_to_num(nan, posinf, neginf))

    def log_(self) -> Tensor:
        return views.inplace(self, lambda s: s.log())

    def reciprocal_(self) -> Tensor:
        return views.inplace(self, lambda s: s.reciprocal())

    def square_(self) -> Tensor:
        return views.inplace(self, lambda s: s.square())

    def floor_(self) -> Tensor:
        return views.inplace(self, lambda s: s.floor())

    def ceil_(self) -> Tensor:
        return views.inplace(self, lambda s: s.ceil())

    def round_(self, decimals: int = 0) -> Tensor:
        return views.inplace(self, lambda s: s.round(decimals))

    def trunc_(self) -> Tensor:
        return views.inplace(self, lambda s: s.trunc())

    def __iadd__(self, o: Any) -> Tensor:
        return self.add_(o)

    def __isub__(self, o: Any) -> Tensor:
        return self.sub_(o)

    def __imul__(self, o: Any) -> Tensor:
        return self.mul_(o)

    def __itruediv__(self, o: Any) -> Tensor:
        return self.div_(o)

    def __ipow__(self, o: Any) -> Tensor:
        return self.pow_(o)


def _random_fill(t: Tensor, draw: Any) -> Tensor:
    """Write ``draw(rng, shape)`` (from the global generator) into ``t``, outside autograd's
    view of the values: it is a fresh sample, not a function of the old ones."""
    from ..creation import rng_of  # creation is built on Tensor

    values = np.asarray(draw(rng_of(None), t.shape), dtype=t.dtype)
    return views.inplace(t, lambda s: shape.CopyInto.apply(s, values))
