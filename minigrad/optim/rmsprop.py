"""RMSprop (Hinton's lecture 6e; centered form from Graves, 2013), as torch.optim.RMSprop."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..tensor import Tensor
from .optimizer import Optimizer, check_differentiable, check_non_negative, start_state


class RMSprop(Optimizer):
    """torch.optim.RMSprop: with g = grad + weight_decay * p,
    v <- alpha v + (1 - alpha) g^2,  (centered: m <- alpha m + (1 - alpha) g, v~ = v - m^2),
    d = g / (sqrt(v~) + eps);  p <- p - lr * d, or with momentum b <- momentum b + d,
    p <- p - lr * b.

    >>> p = nn.Parameter(mg.tensor([1.0, -2.0]))
    >>> opt = mg.optim.RMSprop([p], lr=0.01)  # first step: s = 0.01 g^2, so 10 lr sign(g)
    >>> (p * p).sum().backward(); opt.step(); [round(v, 4) for v in p.tolist()]
    [0.9, -1.9]
    """

    def __init__(self, params: Iterable[Tensor] | Iterable[dict], lr: float = 1e-2,
                 alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0,
                 momentum: float = 0, centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_non_negative(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay,
                           alpha=alpha)
        check_differentiable(differentiable)
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered, maximize=maximize))

    def _update(self, g: np.ndarray, p: Tensor, group: dict, state: dict) -> np.ndarray:
        alpha, momentum = group["alpha"], group["momentum"]
        if not state:
            start_state(state, p, "square_avg", *(("momentum_buffer",) if momentum > 0 else ()),
                        *(("grad_avg",) if group["centered"] else ()))
        state["step"] += 1
        v = state["square_avg"]._array
        v *= alpha
        v += (1 - alpha) * (g * g)
        if group["centered"]:
            m = state["grad_avg"]._array
            m *= alpha
            m += (1 - alpha) * g
            avg = np.sqrt(np.maximum(v - m * m, 0))  # >= 0 exactly; rounding may not be
        else:
            avg = np.sqrt(v)
        avg += group["eps"]
        if momentum > 0:
            buf = state["momentum_buffer"]._array
            buf *= momentum
            buf += g / avg
            return group["lr"] * buf
        return group["lr"] * (g / avg)
