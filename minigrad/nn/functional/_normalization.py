"""Normalisation: layer_norm, rms_norm, batch_norm and normalize."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...autograd.grad_mode import no_grad
from ...functions import where
from ...tensor import Tensor
from ._fused import _LayerNorm


# ---- normalisation --------------------------------------------------------------------------
def _affine(y: Tensor, weight: Tensor | None, bias: Tensor | None) -> Tensor:
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def _check_normalized_shape(input: Tensor, shape: tuple[int, ...], weight: Tensor | None,
                            bias: Tensor | None) -> None:
    if not shape:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    if tuple(input.shape[input.ndim - len(shape):]) != shape or input.ndim < len(shape):
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size"
                           f"{list(input.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but "
                               f"got {name} of shape {list(t.shape)} and normalized_shape = "
                               f"{list(shape)}")


def layer_norm(input: Tensor, normalized_shape: int | Sequence[int],
               weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """(x - mean) / sqrt(var + eps) * weight + bias over the trailing ``normalized_shape``
    dims, with the biased variance (Ba et al., 2016).

    >>> F.layer_norm(mg.tensor([[1.0, 3.0]]), (2,), eps=0.0).tolist()
    [[-1.0, 1.0]]
    """
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    _check_normalized_shape(input, shape, weight, bias)
    dims = tuple(range(input.ndim - len(shape), input.ndim))
    if input.dtype in (np.float32, np.float64) and input.numel():
        return _affine(_LayerNorm.apply(input, dims, float(eps)), weight, bias)
    centred = input - input.mean(dims, keepdim=True)  # (float16, complex, empty: the ops)
    var = (centred * centred).mean(dims, keepdim=True)
    return _affine(centred * (var + eps).rsqrt(), weight, bias)


def rms_norm(input: Tensor, normalized_shape: int | Sequence[int],
             weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """x / sqrt(mean(x^2) + eps) * weight over the trailing dims (Zhang and Sennrich, 2019);
    eps defaults to the dtype's machine epsilon, as in torch."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    _check_normalized_shape(input, shape, weight, None)
    dims = tuple(range(input.ndim - len(shape), input.ndim))
    e = float(np.finfo(input.dtype).eps) if eps is None else eps
    return _affine(input * ((input * input).mean(dims, keepdim=True) + e).rsqrt(), weight, None)


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """(x - mean) / sqrt(var + eps) * weight + bias per channel (dim 1; Ioffe and Szegedy).

    Training normalises with the batch's mean and biased variance and moves the running
    statistics toward them in place: r <- (1 - momentum) r + momentum * batch (unbiased
    variance, as torch). Otherwise the running statistics are used.
    """
    dims = (0,) + tuple(range(2, input.ndim))
    param_shape = (1, input.shape[1]) + (1,) * (input.ndim - 2)
    if training:
        if input.numel() // input.shape[1] <= 1:
            raise ValueError("Expected more than 1 value per channel when training, got input "
                             f"size {tuple(input.shape)}")
        mean = input.mean(dims, keepdim=True)
        centred = input - mean
        var = (centred * centred).mean(dims, keepdim=True)
        n = input.numel() // input.shape[1]
        with no_grad():
            if running_mean is not None:
                running_mean.copy_(running_mean * (1 - momentum)
                                   + mean.detach().reshape(-1) * momentum)
            if running_var is not None:
                running_var.copy_(running_var * (1 - momentum)
                                  + var.detach().reshape(-1) * (momentum * n / (n - 1)))
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean must be defined in evaluation mode")
        centred = input - running_mean.reshape(param_shape)
        var = running_var.reshape(param_shape)
    y = centred * (var + eps).rsqrt()
    return _affine(y, None if weight is None else weight.reshape(param_shape),
                   None if bias is None else bias.reshape(param_shape))


def _vector_norm(x: Tensor, p: float, dim: int | tuple[int, ...], keepdim: bool) -> Tensor:
    """The p-norm over ``dim``, with gradient 0 (not NaN) at a zero vector for every p."""
    if p == 2:
        return x.norm(2, dim, keepdim)
    if p == 1:
        return x.abs().sum(dim, keepdim)
    if p == math.inf:
        return x.abs().amax(dim, keepdim)
    if p == -math.inf:
        return x.abs().amin(dim, keepdim)
    if p == 0:
        return (x != 0).to(x.dtype).sum(dim, keepdim)
    s = (x.abs() ** p).sum(dim, keepdim)
    zero = s == 0  # s ** (1/p) has an infinite slope there; the norm's subgradient is 0
    return where(zero, 0.0, where(zero, 1.0, s) ** (1.0 / p))


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Tensor | None = None) -> Tensor:
    """x / max(||x||_p, eps) along ``dim``.

    >>> F.normalize(mg.tensor([[3.0, 4.0]])).tolist()
    [[0.6000000238418579, 0.800000011920929]]
    """
    if input.dtype.kind != "f":
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {input.dtype}")
    result = input / _vector_norm(input, p, dim, True).clamp(min=eps)
    return result if out is None else out.copy_(result)
