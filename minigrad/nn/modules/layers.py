"""The layers with no family of their own: Identity, Linear, Dropout, Embedding, Flatten and
Unflatten, and the distance layers."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from ... import dtypes
from ..._tensor.convert import check_device
from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter


def _factory_dtype(device: Any, dtype: Any) -> np.dtype:
    """torch's factory kwargs on layers: the device can only be the CPU; the default float."""
    if device is not None:
        check_device(device)
    return dtypes.DEFAULT_FLOAT if dtype is None else dtypes.to_dtype(dtype)


def reset_affine(weight: Tensor, bias: Tensor | None, fan_in: int) -> None:
    """torch's default init of Linear and Conv layers: kaiming_uniform_ with a=sqrt(5), which
    is U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and the bias from the same range."""
    init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(bias, -bound, bound)


class Identity(Module):
    """Returns its input; accepts and ignores any constructor arguments, as torch's does."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Linear(Module):
    """y = x W^T + b with W (out_features, in_features), both drawn from
    U(-1/sqrt(in_features), 1/sqrt(in_features)) (torch's kaiming_uniform_ with a=sqrt(5)).

    >>> nn.Linear(4, 2)(mg.ones(3, 4)).shape
    (3, 2)
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        dt = _factory_dtype(device, dtype)
        self.weight = Parameter(np.empty((out_features, in_features), dt))
        if bias:
            self.bias = Parameter(np.empty(out_features, dt))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        reset_affine(self.weight, self.bias, self.in_features)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


# ---- dropout, normalisation, embeddings -------------------------------------------------------
class Dropout(Module):
    """Zero each element with probability p and scale the rest by 1/(1-p), in training mode
    only (``model.eval()`` turns it off). Seeded by ``mg.manual_seed``.

    >>> nn.Dropout(0.5).eval()(mg.ones(3)).tolist()
    [1.0, 1.0, 1.0]
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Embedding(Module):
    """A lookup table: ``weight[input]`` with weight (num_embeddings, embedding_dim) drawn from
    N(0, 1) and the ``padding_idx`` row zero (and never updated).

    >>> nn.Embedding(10, 3)(mg.tensor([[1, 2], [4, 9]])).shape
    (2, 2, 3)
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, sparse: bool = False,
                 _weight: Tensor | None = None, _freeze: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError("Padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            dt = _factory_dtype(device, dtype)
            self.weight = Parameter(np.empty((num_embeddings, embedding_dim), dt),
                                    requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError("Shape of weight does not match num_embeddings and "
                                 "embedding_dim")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        padding_idx: int | None = None, max_norm: float | None = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> Embedding:
        """An Embedding holding ``embeddings`` (2-D); ``freeze`` keeps it from training."""
        if embeddings.ndim != 2:
            raise ValueError("Embeddings parameter is expected to be 2-dimensional")
        rows, dim = embeddings.shape
        return cls(rows, dim, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=embeddings, _freeze=freeze)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        for name, default in (("padding_idx", None), ("max_norm", None), ("norm_type", 2.0),
                              ("scale_grad_by_freq", False), ("sparse", False)):
            if getattr(self, name) != default:
                s += f", {name}={getattr(self, name)}"
        return s


class CosineSimilarity(Module):
    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


# ---- shape ------------------------------------------------------------------------------------
class Flatten(Module):
    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim ``dim`` into ``unflattened_size`` (one entry may be -1).

    >>> nn.Unflatten(1, (2, 3))(mg.ones(4, 6)).shape
    (4, 2, 3)
    """

    def __init__(self, dim: int, unflattened_size: Iterable[int]) -> None:
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input: Tensor) -> Tensor:
        d = self.dim % input.ndim
        sizes = self.unflattened_size
        known = math.prod(s for s in sizes if s != -1)
        if (-1 not in sizes and known != input.shape[d]) or (
                -1 in sizes and (known == 0 or input.shape[d] % known)):
            raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to "
                               f"the size of dim {self.dim} ({input.shape[d]}) in the input "
                               "tensor")
        return input.unflatten(d, sizes)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
