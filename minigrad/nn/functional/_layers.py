"""The functional forms of linear, dropout, embedding and one-hot, padding and distances."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...autograd.function import make_tensor
from ...autograd.grad_mode import no_grad
from ...creation import default_generator
from ...functions import broadcast_shapes
from ...tensor import Tensor
from ._activation import _maybe_inplace
from ._fused import _ConstantPad, _Embedding, _Linear
from ._normalization import _vector_norm


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y = x W^T + b, with W of shape (out_features, in_features); x may have any leading dims.

    >>> F.linear(mg.ones(1, 2), mg.ones(3, 2)).shape
    (1, 3)
    """
    if input.ndim == 2:
        return _Linear.apply(input, weight, bias)
    lead = input.shape[:-1]
    out = _Linear.apply(input.reshape(-1, input.shape[-1]), weight, bias)
    return out.reshape(*lead, weight.shape[0])


# ---- dropout ------------------------------------------------------------------------------
def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """Zero each element with probability p and scale the rest by 1 / (1 - p) while training;
    the identity otherwise. Draws come from ``mg.manual_seed``'s generator.

    >>> F.dropout(mg.ones(4), p=0.5, training=False).tolist()
    [1.0, 1.0, 1.0, 1.0]
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    keep = default_generator.rng.random(input.shape) >= p
    scale = keep / (1.0 - p) if p < 1.0 else keep.astype(np.float64)
    mask = make_tensor(scale.astype(input.dtype))
    return _maybe_inplace(input, inplace, lambda x: x * mask)


# ---- embeddings and indices -----------------------------------------------------------------
def _index_array(t: Any, fn: str) -> np.ndarray:
    arr = np.asarray(t._array if isinstance(t, Tensor) else t)
    if arr.dtype.kind not in "iu":
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {arr.dtype} instead "
                           f"(while checking arguments for {fn})")
    return arr


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows ``weight[input]``. The ``padding_idx`` row gets no gradient; ``max_norm`` first
    rescales (in place) each looked-up row whose ``norm_type``-norm exceeds it;
    ``scale_grad_by_freq`` divides each row's gradient by its count in ``input``.

    >>> F.embedding(mg.tensor([[0, 2]]), mg.eye(3)).shape
    (1, 2, 3)
    """
    if sparse:
        raise NotImplementedError("sparse=True needs sparse gradients, which minigrad does not "
                                  "have; use sparse=False (the gradient is then dense)")
    idx = _index_array(input, "embedding")
    n = weight.shape[0]
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise IndexError("index out of range in self")
    idx = np.where(idx < 0, idx + n, idx)
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise ValueError("Padding_idx must be within num_embeddings")
        padding_idx %= n
    if max_norm is not None:
        _renorm_rows(weight, np.unique(idx), max_norm, norm_type)
    coef = None
    if padding_idx is not None or scale_grad_by_freq:
        coef = np.ones(idx.shape)
        if scale_grad_by_freq:
            counts = np.bincount(idx.reshape(-1), minlength=n)
            coef = coef / counts[idx]
        if padding_idx is not None:
            coef = np.where(idx == padding_idx, 0.0, coef)
    return _Embedding.apply(weight, idx, coef)


def _renorm_rows(weight: Tensor, rows: np.ndarray, max_norm: float, norm_type: float) -> None:
    """torch's embedding_renorm_: rows with norm > max_norm scaled by max_norm / (norm + 1e-7)."""
    with no_grad():
        w = weight._array[rows]
        norms = np.linalg.norm(w, ord=norm_type, axis=1) if w.size else np.zeros(0)
        big = norms > max_norm
        if big.any():
            scale = (max_norm / (norms[big] + 1e-7)).astype(w.dtype)
            weight[rows[big]] = make_tensor(w[big] * scale[:, None])


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 tensor of shape (*tensor.shape, num_classes) with a 1 at each class index;
    ``num_classes=-1`` means max + 1.

    >>> F.one_hot(mg.tensor([0, 2]), 3).tolist()
    [[1, 0, 0], [0, 0, 1]]
    """
    arr = np.asarray(tensor._array if isinstance(tensor, Tensor) else tensor)
    if arr.dtype.kind not in "iu":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if arr.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(arr.max()) + 1
    if arr.size and arr.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if arr.size and arr.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = np.zeros(arr.shape + (num_classes,), np.int64)
    np.put_along_axis(out, arr[..., None].astype(np.int64), 1, axis=-1)
    return make_tensor(out)


# ---- padding --------------------------------------------------------------------------------
_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant",
        value: float | None = None) -> Tensor:
    """Pad the last len(pad) // 2 dims: ``pad = (left_last, right_last, left_2nd_last, ...)``.
    Negative amounts crop. ``mode`` is "constant" (with ``value``, default 0), "reflect"
    (mirror without the edge), "replicate" (repeat the edge) or "circular" (wrap around).

    >>> F.pad(mg.tensor([[1.0, 2.0]]), (1, 2)).tolist()
    [[0.0, 1.0, 2.0, 0.0, 0.0]]
    """
    pad = [int(p) for p in pad]
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    k = len(pad) // 2
    if k > input.ndim:
        raise RuntimeError("Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of dimension "
                           f"{input.ndim}")
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    # (dim, left, right), innermost first as torch lists them
    sides = [(input.ndim - 1 - i, pad[2 * i], pad[2 * i + 1]) for i in range(k)]
    if mode == "constant":
        return _pad_constant(input, sides, 0.0 if value is None else value)
    if value is not None:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if k > 3 or input.ndim not in (k + 1, k + 2):
        raise NotImplementedError(f"Padding size {len(pad)} is not supported for "
                                  f"{input.ndim}D input tensor.")
    out = input
    for d, lo, hi in sides:
        out = out.index_select(d, make_tensor(_pad_index(mode, input, d, lo, hi, pad)))
    return out


def _pad_constant(input: Tensor, sides: list, value: float) -> Tensor:
    crop = [slice(None)] * input.ndim
    widths = [(0, 0)] * input.ndim
    for d, lo, hi in sides:
        n = input.shape[d]
        if n - max(-lo, 0) - max(-hi, 0) < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        crop[d] = slice(max(-lo, 0), n - max(-hi, 0))
        widths[d] = (max(lo, 0), max(hi, 0))
    x = input[tuple(crop)] if any(lo < 0 or hi < 0 for _, lo, hi in sides) else input
    return _ConstantPad.apply(x, widths, value)


def _pad_index(mode: str, input: Tensor, d: int, lo: int, hi: int, pad: list) -> np.ndarray:
    """Source index along ``d`` of each output position, for the non-constant modes."""
    n = input.shape[d]
    if mode == "reflect" and (lo >= n or hi >= n):
        raise RuntimeError("Argument #4: Padding size should be less than the corresponding "
                           f"input dimension, but got: padding ({lo}, {hi}) at dimension {d} of "
                           f"input {list(input.shape)}")
    if mode == "circular" and (lo > n or hi > n):
        raise RuntimeError("Padding value causes wrapping around more than once.")
    i = np.arange(-lo, n + hi)
    if mode == "replicate":
        return np.clip(i, 0, n - 1)
    if mode == "circular":
        return i % n
    period = 2 * (n - 1) if n > 1 else 1
    i = np.abs(i) % period
    return np.where(i >= n, period - i, i)


# ---- distances ------------------------------------------------------------------------------
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """<x1, x2> / (max(||x1||, eps) max(||x2||, eps)) along ``dim`` (broadcasting).

    Where a norm is below eps, torch's gradient ignores the clamp; this one is the derivative
    of the value returned (the two agree everywhere else).

    >>> F.cosine_similarity(mg.tensor([[1.0, 0.0]]), mg.tensor([[1.0, 1.0]])).tolist()
    [0.7071067690849304]
    """
    shape = broadcast_shapes(x1.shape, x2.shape)
    x1 = x1 if x1.shape == shape else x1.broadcast_to(shape)
    x2 = x2 if x2.shape == shape else x2.broadcast_to(shape)
    n1 = x1.norm(2, dim, keepdim=True).clamp(min=eps)
    n2 = x2.norm(2, dim, keepdim=True).clamp(min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """||x1 - x2 + eps||_p over the last dim (eps keeps the gradient finite at x1 == x2)."""
    return _vector_norm(x1 - x2 + eps, p, -1, keepdim)
