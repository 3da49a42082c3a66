"""Loss functions, with torch's reduction argument (and its legacy size_average/reduce)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ...autograd.function import make_tensor
from ...functions import where
from ...tensor import Tensor
from ._activation import log_softmax, logsigmoid
from ._fused import _BinaryCrossEntropy, _CrossEntropy, _PickSum

_REDUCTIONS = ("mean", "sum", "none")


# ---- losses ---------------------------------------------------------------------------------
def _legacy_reduction(size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    """``reduction``, or what torch's deprecated size_average/reduce pair means (with torch's
    warning)."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = ("mean" if size_average else "sum") if reduce else "none"
    warnings.warn("size_average and reduce args will be deprecated, please use "
                  f"reduction='{reduction}' instead.", UserWarning, stacklevel=4)
    return reduction


def _reduction(size_average: bool | None, reduce: bool | None, reduction: str,
               allowed: tuple[str, ...] = _REDUCTIONS) -> str:
    """The loss's reduction, checked up front as torch does."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction, allowed)
    return reduction


def _check_reduction(reduction: str, allowed: tuple[str, ...] = _REDUCTIONS) -> None:
    if reduction not in allowed:
        raise ValueError(f"{reduction} is not a valid value for reduction (use {allowed})")


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    _check_reduction(reduction)
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def _weighted(loss: Tensor, weight: Tensor | None, reduction: str) -> Tensor:
    """torch 2.6+'s per-element ``weight`` of the regression losses (mean still divides by N)."""
    if weight is not None:
        if tuple(weight.shape) != tuple(loss.shape):
            raise ValueError("Weights and input must have the same size.")
        loss = loss * weight
    return _reduce(loss, reduction)


def mse_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
             reduce: bool | None = None, reduction: str = "mean",
             weight: Tensor | None = None) -> Tensor:
    """(x - y)^2, averaged (``mean``), summed (``sum``) or elementwise (``none``).

    >>> F.mse_loss(mg.tensor([1.0, 3.0]), mg.tensor([0.0, 0.0])).item()
    5.0
    """
    reduction = _reduction(size_average, reduce, reduction)
    _warn_if_broadcast(input, target)
    diff = input - target
    return _weighted(diff * diff, weight, reduction)


def l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
            reduce: bool | None = None, reduction: str = "mean",
            weight: Tensor | None = None) -> Tensor:
    """|x - y| with the same reductions as ``mse_loss``."""
    reduction = _reduction(size_average, reduce, reduction)
    _warn_if_broadcast(input, target)
    return _weighted((input - target).abs(), weight, reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                   reduce: bool | None = None, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta, with d = x - y (beta = 0: L1)."""
    reduction = _reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _warn_if_broadcast(input, target)
    d = input - target
    a = d.abs()
    if beta == 0:
        return _reduce(a, reduction)
    return _reduce(where(a < beta, d * d * (0.5 / beta), a - 0.5 * beta), reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta): smooth_l1_loss times delta."""
    _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _warn_if_broadcast(input, target)
    d = input - target
    a = d.abs()
    return _weighted(where(a < delta, d * d * 0.5, (a - 0.5 * delta) * delta), weight, reduction)


def _warn_if_broadcast(input: Tensor, target: Any) -> None:
    """torch broadcasts a target of another shape, with this warning: it is usually a bug."""
    if isinstance(target, Tensor) and target.shape != input.shape:
        warnings.warn(f"Using a target size ({tuple(target.shape)}) that is different to the "
                      f"input size ({tuple(input.shape)}). This will likely lead to incorrect "
                      "results due to broadcasting. Please ensure they have the same size.",
                      stacklevel=3)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    """-w (y log x + (1 - y) log(1 - x)) for probabilities x in [0, 1]; each log is clamped at
    -100 as in torch, so a saturated x gives 100, not inf.

    >>> round(F.binary_cross_entropy(mg.tensor([0.5]), mg.tensor([1.0])).item(), 6)
    0.693147
    """
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({tuple(target.shape)}) that is different to the "
                         f"input size ({tuple(input.shape)}) is deprecated. Please ensure they "
                         "have the same size.")
    x = input._array
    if x.size and not ((x >= 0) & (x <= 1)).all():
        raise RuntimeError("all elements of input should be between 0 and 1")
    loss = _BinaryCrossEntropy.apply(input, target)
    return _reduce(loss if weight is None else loss * weight, reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None,
                                     size_average: bool | None = None,
                                     reduce: bool | None = None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """-w (p y log sigmoid(x) + (1 - y) log sigmoid(-x)) for logits x, with p = pos_weight
    (broadcast over the last dim), computed as (1 - y) x - (1 + (p - 1) y) log sigmoid(x),
    which is exact and finite for any x.

    >>> round(F.binary_cross_entropy_with_logits(mg.tensor([0.0]), mg.tensor([1.0])).item(), 6)
    0.693147
    """
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({tuple(target.shape)}) must be the same as input size "
                         f"({tuple(input.shape)})")
    log_sig = logsigmoid(input)
    if pos_weight is None:
        loss = (1 - target) * input - log_sig
    else:
        loss = (1 - target) * input - ((pos_weight - 1) * target + 1) * log_sig
    return _reduce(loss if weight is None else loss * weight, reduction)


def kl_div(input: Tensor, target: Tensor, size_average: bool | None = None,
           reduce: bool | None = None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """y (log y - x) for log-probabilities x (0 where y = 0); ``log_target``: exp(y) (y - x).
    ``batchmean`` divides the sum by the batch size, which is the KL divergence."""
    reduction = _reduction(size_average, reduce, reduction, _REDUCTIONS + ("batchmean",))
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", UserWarning, stacklevel=2)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        zero = target == 0
        loss = where(zero, 0.0, target * where(zero, 1.0, target).log()) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.ndim else loss.sum()
    return _reduce(loss, reduction)


def _classes_last(input: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """(N, C, d1, ...) and (N, d1, ...) -> (N*d1*..., C) and (N*d1*...,); (C,) -> (1, C)."""
    if input.ndim == 1:
        return input.unsqueeze(0), target.reshape(1)
    if input.ndim == 2:
        return input, target
    perm = (0,) + tuple(range(2, input.ndim)) + (1,)
    return input.permute(*perm).reshape(-1, input.shape[1]), target.reshape(-1)


def _class_targets(input: Tensor, target: Tensor) -> tuple[Tensor, np.ndarray]:
    """Flattened log-probabilities (M, C) and int class indices (M,), checked."""
    logp, t = _classes_last(input, target)
    tgt = np.asarray(t._array if isinstance(t, Tensor) else t)
    if tgt.dtype.kind not in "iu":
        raise TypeError(f"nll_loss expects integer class indices as target, got {tgt.dtype}")
    if tgt.shape != (logp.shape[0],):
        raise ValueError(f"Expected target of {logp.shape[0]} class indices, got shape "
                         f"{tuple(tgt.shape)}")
    return logp, tgt


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
             size_average: bool | None = None, ignore_index: int = -100,
             reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """-w[t_n] * input[n, t_n] for log-probabilities ``input`` (N, C) and class indices ``t``.

    ``mean`` divides by the summed weights of the non-ignored targets, as torch does.
    """
    reduction = _reduction(size_average, reduce, reduction)
    logp, tgt = _class_targets(input, target)
    safe, wt = _pick_weights(logp, tgt, weight, ignore_index, reduction)
    if reduction == "none":
        return (-logp[np.arange(len(safe)), safe] * make_tensor(wt)).reshape(target.shape)
    return _PickSum.apply(logp, safe, wt)


def _pick_weights(scores: Tensor, tgt: np.ndarray, weight: Tensor | None, ignore_index: int,
                  reduction: str) -> tuple[np.ndarray, np.ndarray]:
    """The class each row picks (0 where ignored) and its coefficient in the loss: the class
    weight, 0 where ignored, over the kept total for ``mean`` (torch's denominator)."""
    c = scores.shape[1]
    keep = tgt != ignore_index
    safe = tgt if keep.all() else np.where(keep, tgt, 0)
    if safe.size and (safe.min() < 0 or safe.max() >= c):
        bad = safe[(safe < 0) | (safe >= c)][0]
        raise IndexError(f"Target {bad} is out of bounds for {c} classes")
    dtype = scores.dtype
    if weight is None:
        wt = keep.astype(dtype)
    else:
        wt = (np.asarray(weight._array, dtype)[safe] * keep).astype(dtype)
    if reduction == "mean":  # torch: divide by the total weight of the kept targets
        total = wt.sum()
        if total != 0:
            wt /= total
        else:  # all ignored: 0 / 0, the nan torch gives, silently (errstate is slow)
            with np.errstate(invalid="ignore"):
                wt /= total
    return safe, wt


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average: bool | None = None, ignore_index: int = -100,
                  reduce: bool | None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """-log softmax(x)[t]: logits (N, C, ...) and int64 class indices (N, ...), or class
    probabilities of the logits' shape. Stable for any size of logits. ``label_smoothing`` e
    mixes the target with the uniform distribution: (1 - e) target + e / C.

    >>> F.cross_entropy(mg.zeros(2, 4), mg.tensor([0, 3])).item()  # log(4)
    1.3862943649291992
    """
    reduction = _reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 0 if input.ndim == 1 else 1
    n_classes = input.shape[class_dim]
    if label_smoothing == 0 and reduction != "none" and not (
            isinstance(target, Tensor) and target.dtype.kind == "f"):
        # class indices, reduced: log_softmax and the pick as one node
        scores, tgt = _class_targets(input, target)
        if scores.dtype.kind == "f" and scores._array.size:
            safe, wt = _pick_weights(scores, tgt, weight, ignore_index, reduction)
            return _CrossEntropy.apply(scores, safe, wt)
    logp = log_softmax(input, class_dim)
    w = None if weight is None else weight.reshape((-1,) + (1,) * (input.ndim - 1 - class_dim))
    if isinstance(target, Tensor) and target.dtype.kind == "f":
        if target.shape != input.shape:
            raise ValueError("cross_entropy with class probabilities needs target of the "
                             f"logits' shape {tuple(input.shape)}, got {tuple(target.shape)}")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / n_classes
        return _reduce(-((logp if w is None else logp * w) * target).sum(class_dim), reduction)
    nll = nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    if label_smoothing == 0:
        return nll
    # Smoothing adds e / C times -sum_c w_c logp_c per kept target, reduced like the nll.
    ignored = target == ignore_index
    smooth = -(logp if w is None else logp * w).sum(class_dim).masked_fill(ignored, 0.0)
    if reduction == "mean":
        kept = np.asarray(target._array)[~np.asarray(ignored._array)]
        denom = kept.size if weight is None else float(np.asarray(weight._array)[kept].sum())
        smooth = smooth.sum() / denom
    elif reduction == "sum":
        smooth = smooth.sum()
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / n_classes)
