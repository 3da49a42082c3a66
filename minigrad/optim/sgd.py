"""Stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..autograd.function import make_tensor
from ..tensor import Tensor
from .optimizer import Optimizer, check_differentiable, check_non_negative


class SGD(Optimizer):
    """torch.optim.SGD: with g = grad + weight_decay * p,
    b <- momentum * b + (1 - dampening) * g  (b = g at the first step),
    p <- p - lr * (g + momentum * b if nesterov else b)   (just g when momentum = 0).

    >>> p = nn.Parameter(mg.tensor([1.0, -2.0]))
    >>> opt = mg.optim.SGD([p], lr=0.1, momentum=0.9)
    >>> (p * p).sum().backward(); opt.step(); opt.zero_grad()
    >>> [round(v, 4) for v in p.tolist()], p.grad
    ([0.8, -1.6], None)
    """

    def __init__(self, params: Iterable[Tensor] | Iterable[dict], lr: float = 1e-3,
                 momentum: float = 0, dampening: float = 0, weight_decay: float = 0,
                 nesterov: bool = False, *, maximize: bool = False, foreach: bool | None = None,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        check_non_negative(lr=lr, momentum=momentum, weight_decay=weight_decay)
        check_differentiable(differentiable)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))

    def _update(self, g: np.ndarray, p: Tensor, group: dict, state: dict) -> np.ndarray:
        momentum = group["momentum"]
        if momentum == 0:
            return group["lr"] * g
        buf = state.get("momentum_buffer")
        if buf is None:
            buf = state["momentum_buffer"] = make_tensor(np.array(g))
        else:
            b = buf._array
            b *= momentum
            b += (1 - group["dampening"]) * g
        return group["lr"] * (g + momentum * buf._array if group["nesterov"] else buf._array)
