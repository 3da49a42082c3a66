"""Gradient clipping (torch.nn.utils.clip_grad_norm_)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ...tensor import Tensor


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                    norm_type: float = 2.0) -> Tensor:
    """Scale all gradients in place so their joint norm is at most ``max_norm``.

    Returns the norm before clipping. ``g <- g * min(1, max_norm / (norm + 1e-6))``.
    """
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    grads = [p.grad._array for p in params if p.grad is not None]
    if not grads:
        return Tensor(np.zeros((), np.float32))
    if norm_type == float("inf"):
        total = max(float(np.abs(g).max()) for g in grads)
    else:
        total = float(sum(float((np.abs(g) ** norm_type).sum()) for g in grads)) ** (1 / norm_type)
    coef = max_norm / (total + 1e-6)
    if coef < 1:
        for p in params:
            if p.grad is not None:
                p.grad.mul_(coef)
    return Tensor(np.asarray(total, grads[0].dtype))
