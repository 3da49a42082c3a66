"""Adam (Kingma and Ba, 2015) with bias correction, L2 or decoupled weight decay, AMSGrad."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from ..tensor import Tensor
from .optimizer import Optimizer, check_betas, check_differentiable, check_non_negative, start_state


class Adam(Optimizer):
    """torch.optim.Adam: with g = grad + weight_decay * p (L2; see AdamW for the decoupled decay
    that ``decoupled_weight_decay=True`` selects), m <- b1 m + (1 - b1) g,
    v <- b2 v + (1 - b2) g^2,  p <- p - lr / (1 - b1^t) * m / (sqrt(v / (1 - b2^t)) + eps).

    >>> p = nn.Parameter(mg.tensor([1.0, -2.0]))
    >>> opt = mg.optim.Adam([p], lr=0.1)
    >>> (p * p).sum().backward(); opt.step(); [round(v, 4) for v in p.tolist()]
    [0.9, -1.9]
    """

    def __init__(self, params: Iterable[Tensor] | Iterable[dict], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:
        check_non_negative(lr=lr, eps=eps, weight_decay=weight_decay)
        check_betas(betas)
        check_differentiable(differentiable)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize,
                                      decoupled_weight_decay=decoupled_weight_decay))

    def _update(self, g: np.ndarray, p: Tensor, group: dict, state: dict) -> np.ndarray:
        (b1, b2), eps = group["betas"], group["eps"]
        if not state:
            start_state(state, p, "exp_avg", "exp_avg_sq",
                        *(("max_exp_avg_sq",) if group["amsgrad"] else ()))
        state["step"] += 1
        t = state["step"]
        m, v = state["exp_avg"]._array, state["exp_avg_sq"]._array
        m *= b1
        m += (1 - b1) * g
        v *= b2
        v += (1 - b2) * (g * g)
        if group["amsgrad"]:
            vmax = state["max_exp_avg_sq"]._array
            np.maximum(vmax, v, out=vmax)
            v = vmax
        denom = np.sqrt(v) / math.sqrt(1 - b2 ** t) + eps
        lr, wd = group["lr"], group["weight_decay"]
        step = (lr / (1 - b1 ** t)) * m / denom
        if group["decoupled_weight_decay"] and wd != 0:
            step += (lr * wd) * p._array  # p (1 - lr wd) - step, in one subtraction
        return step


def lerp_moments(g: np.ndarray, p: Tensor, state: dict, b1: float,
                 b2: float) -> tuple[int, np.ndarray, np.ndarray]:
    """One more step of Adam's moments m <- m + (1 - b1)(g - m), v <- b2 v + (1 - b2) g^2
    (torch's lerp form, as NAdam and RAdam write it), created zero in ``state`` on the first
    step and updated in place; returns (step count, m, v)."""
    if not state:
        start_state(state, p, "exp_avg", "exp_avg_sq")
    state["step"] += 1
    m, v = state["exp_avg"]._array, state["exp_avg_sq"]._array
    m += (1 - b1) * (g - m)
    v *= b2
    v += (1 - b2) * (g * g)
    return state["step"], m, v
