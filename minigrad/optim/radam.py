"""RAdam (Liu et al., 2020): Adam whose adaptive step is switched on, and rectified, once
the variance of the second-moment estimate is tractable."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from ..tensor import Tensor
from .adam import lerp_moments
from .optimizer import Optimizer, check_betas, check_differentiable, check_non_negative


class RAdam(Optimizer):
    """torch.optim.RAdam: m and v as in Adam, m_hat = m / (1 - b1^t); with
    rho_inf = 2 / (1 - b2) - 1 and rho_t = rho_inf - 2 t b2^t / (1 - b2^t):
    p <- p - lr m_hat r_t sqrt(1 - b2^t) / (sqrt(v) + eps) when rho_t > 5, with
    r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t)),
    else p <- p - lr m_hat (plain momentum). Weight decay is L2, or decoupled.

    >>> p = nn.Parameter(mg.tensor([1.0, -2.0]))
    >>> opt = mg.optim.RAdam([p], lr=0.1)
    >>> (p * p).sum().backward(); opt.step(); [round(v, 4) for v in p.tolist()]
    [0.8, -1.6]
    """

    def __init__(self, params: Iterable[Tensor] | Iterable[dict], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        check_non_negative(lr=lr, eps=eps, weight_decay=weight_decay)
        check_betas(betas)
        check_differentiable(differentiable)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize))

    def _update(self, g: np.ndarray, p: Tensor, group: dict, state: dict) -> np.ndarray:
        (b1, b2), eps, lr = group["betas"], group["eps"], group["lr"]
        t, m, v = lerp_moments(g, p, state, b1, b2)
        bc2 = 1 - b2 ** t
        m_hat = m / (1 - b1 ** t)
        rho_inf = 2 / (1 - b2) - 1
        rho_t = rho_inf - 2 * t * b2 ** t / bc2
        if rho_t > 5:
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                             / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            step = m_hat * lr * (math.sqrt(bc2) / (np.sqrt(v) + eps)) * rect
        else:
            step = m_hat * lr
        wd = group["weight_decay"]
        if group["decoupled_weight_decay"] and wd != 0:
            step += (lr * wd) * p._array
        return step
