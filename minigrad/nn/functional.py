"""Stateless layer and loss functions (torch.nn.functional names, signatures and defaults)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..autograd.function import Context, Function, constant
from ..ops.shape import wrap_dim
from ..tensor import Tensor

_REDUCTIONS = ("mean", "sum", "none")


# ---- fused primitives: one graph node where the composite would record several -------------
# Training steps are dominated by per-op overhead at these sizes, so the layers and losses
# every model uses get their own Functions. Their backwards are still minigrad ops, so
# create_graph=True keeps working.
class _Linear(Function):
    """x W^T + b for 2-D x: d/dx = g W, d/dW = g^T x, d/db = sum_n g."""

    @staticmethod
    def forward(ctx: Context, x: Any, w: Any, b: Any) -> np.ndarray:
        (n, k), (m, k_w) = x.data.shape, w.data.shape
        if k != k_w:  # torch's message, in terms of x @ W^T
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and "
                               f"{k_w}x{m})")
        ctx.save_for_backward(x, w)
        out = x.data @ w.data.T
        if b is not None:
            out += b.data
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        x, w = ctx.saved_tensors
        nx, nw, nb = ctx.needs_input_grad
        return (g.matmul(w) if nx else None, g.mT.matmul(x) if nw else None,
                g.sum(0) if nb else None)


class _LogSoftmax(Function):
    """x - log sum exp x along dim (shifted by the max); d/dx = g - softmax * sum g."""

    @staticmethod
    def forward(ctx: Context, x: Any, dim: int) -> np.ndarray:
        a = x.data
        m = a.max(axis=dim, keepdims=True)
        shifted = a - np.where(np.isfinite(m), m, 0)
        out = shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))
        ctx.save_for_backward(x)
        ctx.dim = dim
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        (x,) = ctx.saved_tensors
        return g - x.softmax(ctx.dim) * g.sum(ctx.dim, keepdim=True), None


class _PickSum(Function):
    """-sum_n c_n logp[n, t_n]: the reduced NLL; d/dlogp is -c_n at (n, t_n), else 0."""

    @staticmethod
    def forward(ctx: Context, logp: Any, target: np.ndarray, coef: np.ndarray) -> np.ndarray:
        rows = np.arange(len(target))
        ctx.shape, ctx.rows, ctx.target, ctx.coef = logp.data.shape, rows, target, coef
        return np.asarray(-(logp.data[rows, target] * coef).sum(), dtype=logp.data.dtype)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        dense = np.zeros(ctx.shape, ctx.coef.dtype)
        dense[ctx.rows, ctx.target] = -ctx.coef  # targets are unique per row: no accumulation
        return g * constant(dense), None, None


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


def relu(input: Tensor) -> Tensor:
    """max(x, 0); the gradient at 0 is 0, as in torch."""
    return input.relu()


def tanh(input: Tensor) -> Tensor:
    return input.tanh()


def sigmoid(input: Tensor) -> Tensor:
    """1 / (1 + exp(-x))."""
    return input.sigmoid()


def softmax(input: Tensor, dim: int) -> Tensor:
    """exp(x_i) / sum_j exp(x_j) along ``dim`` (shifted by the max, so it never overflows)."""
    return input.softmax(dim)


def log_softmax(input: Tensor, dim: int) -> Tensor:
    """x_i - log sum_j exp(x_j) along ``dim``, computed stably (never log of an underflow)."""
    return _LogSoftmax.apply(input, wrap_dim(dim, input.ndim))


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction (use {_REDUCTIONS})")


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """(x - y)^2, averaged (``mean``), summed (``sum``) or elementwise (``none``).

    >>> F.mse_loss(mg.tensor([1.0, 3.0]), mg.tensor([0.0, 0.0])).item()
    5.0
    """
    _warn_if_broadcast(input, target)
    diff = input - target
    return _reduce(diff * diff, reduction)


def l1_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """|x - y| with the same reductions as ``mse_loss``."""
    _warn_if_broadcast(input, target)
    return _reduce((input - target).abs(), reduction)


def _warn_if_broadcast(input: Tensor, target: Any) -> None:
    """torch broadcasts a target of another shape, with this warning: it is usually a bug."""
    if isinstance(target, Tensor) and target.shape != input.shape:
        warnings.warn(f"Using a target size ({tuple(target.shape)}) that is different to the "
                      f"input size ({tuple(input.shape)}). This will likely lead to incorrect "
                      "results due to broadcasting. Please ensure they have the same size.",
                      stacklevel=3)


def _classes_last(input: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """(N, C, d1, ...) and (N, d1, ...) -> (N*d1*..., C) and (N*d1*...,); (C,) -> (1, C)."""
    if input.ndim == 1:
        return input.unsqueeze(0), target.reshape(1)
    if input.ndim == 2:
        return input, target
    perm = (0,) + tuple(range(2, input.ndim)) + (1,)
    return input.permute(*perm).reshape(-1, input.shape[1]), target.reshape(-1)


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
             ignore_index: int = -100, reduction: str = "mean") -> Tensor:
    """-w[t_n] * input[n, t_n] for log-probabilities ``input`` (N, C) and class indices ``t``.

    ``mean`` divides by the summed weights of the non-ignored targets, as torch does.
    """
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction (use {_REDUCTIONS})")
    out_shape = target.shape
    logp, t = _classes_last(input, target)
    tgt = np.asarray(t.data if isinstance(t, Tensor) else t)
    if tgt.dtype.kind not in "iu":
        raise TypeError(f"nll_loss expects integer class indices as target, got {tgt.dtype}")
    n, c = logp.shape
    if tgt.shape != (n,):
        raise ValueError(f"Expected target of {n} class indices, got shape {tuple(tgt.shape)}")
    keep = tgt != ignore_index
    safe = np.where(keep, tgt, 0)
    if safe.size and (safe.min() < 0 or safe.max() >= c):
        bad = safe[(safe < 0) | (safe >= c)][0]
        raise IndexError(f"Target {bad} is out of bounds for {c} classes")
    w = np.ones(c, logp.dtype) if weight is None else np.asarray(weight.data, logp.dtype)
    wt = (w[safe] * keep).astype(logp.dtype)
    if reduction == "none":
        return (-logp[np.arange(n), safe] * constant(wt)).reshape(out_shape)
    if reduction == "mean":
        wt = wt / wt.sum()  # torch: divide by the total weight of the kept targets
    return _PickSum.apply(logp, safe, wt)


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  ignore_index: int = -100, reduction: str = "mean") -> Tensor:
    """-log softmax(x)[t]: logits (N, C) and int64 class indices (N,), or class
    probabilities of the same shape as the logits. Stable for any size of logits.

    >>> F.cross_entropy(mg.zeros(2, 4), mg.tensor([0, 3])).item()  # log(4)
    1.3862943649291992
    """
    class_dim = 0 if input.ndim == 1 else 1
    logp = log_softmax(input, class_dim)
    if isinstance(target, Tensor) and target.dtype.kind == "f":
        if target.shape != input.shape:
            raise ValueError("cross_entropy with class probabilities needs target of the "
                             f"logits' shape {tuple(input.shape)}, got {tuple(target.shape)}")
        if weight is not None:
            w = weight.reshape((-1,) + (1,) * (input.ndim - 1 - class_dim))
            logp = logp * w
        return _reduce(-(logp * target).sum(class_dim), reduction)
    return nll_loss(logp, target, weight, ignore_index, reduction)

