"""Adamax (Kingma and Ba, 2015, section 7): Adam with the infinity norm in place of the
second moment."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..tensor import Tensor
from .optimizer import Optimizer, check_betas, check_differentiable, check_non_negative, start_state


class Adamax(Optimizer):
    """torch.optim.Adamax: with g = grad + weight_decay * p, m <- b1 m + (1 - b1) g,
    u <- max(b2 u, |g| + eps),  p <- p - lr / (1 - b1^t) * m / u.

    >>> p = nn.Parameter(mg.tensor([1.0, -2.0]))
    >>> opt = mg.optim.Adamax([p], lr=0.1)
    >>> (p * p).sum().backward(); opt.step(); [round(v, 4) for v in p.tolist()]
    [0.9, -1.9]
    """

    def __init__(self, params: Iterable[Tensor] | Iterable[dict], lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        check_non_negative(lr=lr, eps=eps, weight_decay=weight_decay)
        check_betas(betas)
        check_differentiable(differentiable)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, maximize=maximize))

    def _update(self, g: np.ndarray, p: Tensor, group: dict, state: dict) -> np.ndarray:
        (b1, b2), eps = group["betas"], group["eps"]
        if not state:
            start_state(state, p, "exp_avg", "exp_inf")
        state["step"] += 1
        m, u = state["exp_avg"]._array, state["exp_inf"]._array
        m *= b1
        m += (1 - b1) * g
        u *= b2
        np.maximum(u, np.abs(g) + eps, out=u)
        return (group["lr"] / (1 - b1 ** state["step"])) * m / u
