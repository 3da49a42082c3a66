"""Layers, activations, containers and losses (torch.nn names, signatures and defaults)."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from .. import dtypes
from .._tensor.convert import check_device
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter


def _factory_dtype(device: Any, dtype: Any) -> np.dtype:
    """torch's factory kwargs on layers: the device can only be the CPU; the default float."""
    if device is not None:
        check_device(device)
    return dtypes.DEFAULT_FLOAT if dtype is None else dtypes.to_dtype(dtype)


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
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_features
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


# ---- activations ----------------------------------------------------------------------------
class _Inplace(Module):
    """An activation with torch's ``inplace`` flag."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ReLU(_Inplace):
    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input, self.inplace)


class ReLU6(_Inplace):
    def forward(self, input: Tensor) -> Tensor:
        return F.relu6(input, self.inplace)


class SiLU(_Inplace):
    def forward(self, input: Tensor) -> Tensor:
        return F.silu(input, self.inplace)


class Mish(_Inplace):
    def forward(self, input: Tensor) -> Tensor:
        return F.mish(input, self.inplace)


class SELU(_Inplace):
    def forward(self, input: Tensor) -> Tensor:
        return F.selu(input, self.inplace)


class Hardsigmoid(_Inplace):
    def forward(self, input: Tensor) -> Tensor:
        return F.hardsigmoid(input, self.inplace)


class Hardswish(_Inplace):
    def forward(self, input: Tensor) -> Tensor:
        return F.hardswish(input, self.inplace)


class Tanh(Module):
    def forward(self, input: Tensor) -> Tensor:
        return input.tanh()


class Sigmoid(Module):
    def forward(self, input: Tensor) -> Tensor:
        return input.sigmoid()


class LogSigmoid(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.logsigmoid(input)


class Softsign(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.softsign(input)


class Tanhshrink(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.tanhshrink(input)


class GELU(Module):
    """x Phi(x), or its tanh approximation with ``approximate="tanh"``."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class LeakyReLU(Module):
    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class CELU(ELU):
    def forward(self, input: Tensor) -> Tensor:
        return F.celu(input, self.alpha, self.inplace)


class Softplus(Module):
    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    def __init__(self, min_val: float = -1.0, max_val: float = 1.0,
                 inplace: bool = False) -> None:
        super().__init__()
        if max_val <= min_val:
            raise ValueError(f"max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return (f"min_val={self.min_val}, max_val={self.max_val}"
                + (", inplace=True" if self.inplace else ""))


class Threshold(Module):
    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return (f"threshold={self.threshold}, value={self.value}"
                + (", inplace=True" if self.inplace else ""))


class GLU(Module):
    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class PReLU(Module):
    """x for x > 0, else a x with a learned slope a (one, or one per channel), init 0.25."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(np.full(num_parameters, init, _factory_dtype(device, dtype)))

    def reset_parameters(self) -> None:
        init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class _SoftmaxBase(Module):
    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_SoftmaxBase):
    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim)


class LogSoftmax(_SoftmaxBase):
    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim)


class Softmin(_SoftmaxBase):
    def forward(self, input: Tensor) -> Tensor:
        return F.softmin(input, self.dim)


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


def _shape_tuple(shape: int | Iterable[int]) -> tuple[int, ...]:
    return (shape,) if isinstance(shape, int) else tuple(shape)


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` dims, then scale by ``weight`` (ones)
    and shift by ``bias`` (zeros).

    >>> nn.LayerNorm(4)(mg.randn(2, 4)).shape
    (2, 4)
    """

    def __init__(self, normalized_shape: int | Iterable[int], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        dt = _factory_dtype(device, dtype)
        if elementwise_affine:
            self.weight = Parameter(np.ones(self.normalized_shape, dt))
            if bias:
                self.bias = Parameter(np.zeros(self.normalized_shape, dt))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) * weight over the trailing dims (eps None: machine eps)."""

    def __init__(self, normalized_shape: int | Iterable[int], eps: float | None = None,
                 elementwise_affine: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(np.ones(self.normalized_shape, _factory_dtype(device, dtype)))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class _BatchNorm(Module):
    """Per-channel normalisation with running statistics (torch's _BatchNorm).

    Training normalises with the batch's statistics and updates ``running_mean`` /
    ``running_var`` (momentum None: a cumulative average over ``num_batches_tracked``);
    evaluation uses the running statistics.
    """

    _dims: tuple[int, ...]

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        dt = _factory_dtype(device, dtype)
        if affine:
            self.weight = Parameter(np.ones(num_features, dt))
            if bias:
                self.bias = Parameter(np.zeros(num_features, dt))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", Tensor(np.zeros(num_features, dt)))
            self.register_buffer("running_var", Tensor(np.ones(num_features, dt)))
            self.register_buffer("num_batches_tracked", Tensor(np.array(0, np.int64)))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in self._dims:
            want = " or ".join(f"{d}D" for d in self._dims)
            raise ValueError(f"expected {want} input (got {input.ndim}D input)")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked.item())
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        stats = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if stats else None,
                            self.running_var if stats else None, self.weight, self.bias,
                            use_batch, factor, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of (N, C) or (N, C, L) input.

    >>> bn = nn.BatchNorm1d(3); bn(mg.randn(8, 3)).shape
    (8, 3)
    """

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of (N, C, H, W) input."""

    _dims = (4,)


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


# ---- containers -------------------------------------------------------------------------------
class Sequential(Module):
    """Modules applied in order; ``Sequential(a, b)`` or ``Sequential(OrderedDict(...))``.

    >>> net = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
    >>> net(mg.ones(5, 2)).shape
    (5, 1)
    """

    def __init__(self, *args: Module) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def forward(self, input: Any) -> Any:
        for m in self._modules.values():
            input = m(input)
        return input

    def __getitem__(self, idx: int | slice) -> Module:
        mods = list(self._modules.items())
        if isinstance(idx, slice):
            return Sequential(OrderedDict(mods[idx]))
        return mods[idx][1]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self


class ModuleList(Module):
    """A list of modules whose parameters are registered (names "0", "1", ...)."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx: int | slice) -> Module | ModuleList:
        mods = list(self._modules.values())
        return ModuleList(mods[idx]) if isinstance(idx, slice) else mods[idx]

    def __setitem__(self, idx: int, module: Module) -> None:
        self.add_module(list(self._modules)[idx], module)

    def __delitem__(self, idx: int | slice) -> None:
        mods = list(self._modules.values())
        del mods[idx]
        self._modules.clear()
        self.extend(mods)  # keys stay "0", "1", ... as in torch

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules.clear()
        self.extend(mods)


class ModuleDict(Module):
    """An ordered dict of modules whose parameters are registered under their keys.

    >>> heads = nn.ModuleDict({"cls": nn.Linear(4, 3), "reg": nn.Linear(4, 1)})
    >>> sorted(name for name, _ in heads.named_parameters())
    ['cls.bias', 'cls.weight', 'reg.bias', 'reg.weight']
    """

    def __init__(self, modules: Mapping[str, Module] | Iterable | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def keys(self) -> Iterable[str]:
        return self._modules.keys()

    def items(self) -> Iterable[tuple[str, Module]]:
        return self._modules.items()

    def values(self) -> Iterable[Module]:
        return self._modules.values()

    def clear(self) -> None:
        self._modules.clear()

    def pop(self, key: str) -> Module:
        return self._modules.pop(key)

    def update(self, modules: Mapping[str, Module] | Iterable) -> None:
        pairs = modules.items() if isinstance(modules, (Mapping, ModuleDict)) else modules
        for j, pair in enumerate(pairs):
            if len(pair) != 2:
                raise ValueError(f"ModuleDict update sequence element #{j} has length "
                                 f"{len(pair)}; 2 is required")
            self[pair[0]] = pair[1]


def _as_parameter(value: Any) -> Any:
    """Containers turn plain Tensors into Parameters (requiring grad), as torch's do."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


class ParameterList(Module):
    """A list of parameters registered as "0", "1", ... (Tensors become Parameters).

    >>> ps = nn.ParameterList([nn.Parameter(mg.ones(2)) for _ in range(3)]); len(ps)
    3
    """

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def _key(self, idx: int) -> str:
        if not -self._size <= idx < self._size:
            raise IndexError(f"index {idx} is out of range")
        return str(idx % self._size)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return ParameterList([self[i] for i in range(self._size)[idx]])
        return getattr(self, self._key(idx))

    def __setitem__(self, idx: int, param: Any) -> None:
        setattr(self, self._key(idx), _as_parameter(param))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(self._size))

    def __iadd__(self, values: Iterable[Any]) -> ParameterList:
        return self.extend(values)

    def append(self, value: Any) -> ParameterList:
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        for v in values:
            self.append(v)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"({i}): " + _describe(p) for i, p in enumerate(self))


class ParameterDict(Module):
    """An ordered dict of parameters registered under their keys (Tensors become Parameters)."""

    def __init__(self, parameters: Mapping[str, Any] | Iterable | None = None) -> None:
        super().__init__()
        self.__dict__["_keys"] = {}  # insertion order of the keys (values live as attributes)
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys:
            raise KeyError(key)
        # Not getattr: a key such as "keys" or "train" would find the method.
        return self._parameters[key] if key in self._parameters else self.__dict__[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._keys[key] = None
        setattr(self, key, _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def keys(self) -> Iterable[str]:
        return list(self._keys)

    def items(self) -> Iterable[tuple[str, Any]]:
        return [(k, self[k]) for k in self._keys]

    def values(self) -> Iterable[Any]:
        return [self[k] for k in self._keys]

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def pop(self, key: str) -> Any:
        value = self[key]
        del self[key]
        return value

    def clear(self) -> None:
        for k in list(self._keys):
            del self[k]

    def update(self, parameters: Mapping[str, Any] | Iterable) -> None:
        pairs = parameters.items() if isinstance(parameters, (Mapping, ParameterDict)) \
            else parameters
        for k, v in pairs:
            self[k] = v

    def extra_repr(self) -> str:
        return "\n".join(f"({k}): " + _describe(v) for k, v in self.items())


def _describe(p: Any) -> str:
    if isinstance(p, Tensor):
        kind = "Parameter containing" if isinstance(p, Parameter) else "Tensor"
        return f"{kind}: [{p.dtype} of size {'x'.join(map(str, p.shape))}]"
    return repr(p)


# ---- losses -----------------------------------------------------------------------------------
class _Loss(Module):
    def __init__(self, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = F._legacy_reduction(size_average, reduce, reduction)


class _WeightedLoss(_Loss):
    """A loss with a per-class or per-element ``weight``, saved as a buffer (as torch does)."""

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 reduce: bool | None = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class MSELoss(_Loss):
    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    def __init__(self, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(_Loss):
    def __init__(self, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean", log_target: bool = False) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class BCELoss(_WeightedLoss):
    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, target, weight=self.weight,
                                      reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 reduce: bool | None = None, reduction: str = "mean",
                 pos_weight: Tensor | None = None) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class NLLLoss(_WeightedLoss):
    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 ignore_index: int = -100, reduce: bool | None = None,
                 reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """log_softmax + nll_loss on logits, with class weights, ignore_index, label smoothing.

    >>> nn.CrossEntropyLoss()(mg.zeros(2, 4), mg.tensor([0, 3])).item()  # log(4)
    1.3862943649291992
    """

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 ignore_index: int = -100, reduce: bool | None = None, reduction: str = "mean",
                 label_smoothing: float = 0.0) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(input, target, weight=self.weight,
                               ignore_index=self.ignore_index, reduction=self.reduction,
                               label_smoothing=self.label_smoothing)
