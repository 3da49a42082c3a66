"""NAdam (Dozat, 2016): Adam with Nesterov momentum and a momentum schedule."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..tensor import Tensor
from .adam import lerp_moments
from .optimizer import Optimizer, check_betas, check_differentiable, check_non_negative


class NAdam(Optimizer):
    """torch.optim.NAdam: with mu_t = b1 (1 - 0.96^(t psi) / 2) (psi = momentum_decay) and
    P_t = mu_1 ... mu_t, m and v as in Adam, v_hat = v / (1 - b2^t),
    p <- p - lr [(1 - mu_t) / (1 - P_t) g + mu_{t+1} / (1 - P_t mu_{t+1}) m] / (sqrt(v_hat) + eps).
    Weight decay is L2, or decoupled (p <- p (1 - lr wd)) with ``decoupled_weight_decay``.

    >>> p = nn.Parameter(mg.tensor([1.0, -2.0]))
    >>> opt = mg.optim.NAdam([p], lr=0.1)
    >>> (p * p).sum().backward(); opt.step(); [round(v, 4) for v in p.tolist()]
    [0.8944, -1.8944]
    """

    def __init__(self, params: Iterable[Tensor] | Iterable[dict], lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_non_negative(lr=lr, eps=eps, weight_decay=weight_decay,
                           momentum_decay=momentum_decay)
        check_betas(betas)
        check_differentiable(differentiable)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, momentum_decay=momentum_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize))

    def _update(self, g: np.ndarray, p: Tensor, group: dict, state: dict) -> np.ndarray:
        (b1, b2), eps, lr = group["betas"], group["eps"], group["lr"]
        t, m, v = lerp_moments(g, p, state, b1, b2)
        psi = group["momentum_decay"]
        mu = b1 * (1 - 0.5 * 0.96 ** (t * psi))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * psi))
        state["mu_product"] = prod = state.get("mu_product", 1.0) * mu
        denom = np.sqrt(v / (1 - b2 ** t)) + eps
        step = (lr * (1 - mu) / (1 - prod)) * g / denom
        step += (lr * mu_next / (1 - prod * mu_next)) * m / denom
        wd = group["weight_decay"]
        if group["decoupled_weight_decay"] and wd != 0:
            step += (lr * wd) * p._array
        return step

