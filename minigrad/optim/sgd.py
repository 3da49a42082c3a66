"""Stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..autograd.grad_mode import no_grad
from ..tensor import Tensor
from .optimizer import Optimizer


class SGD(Optimizer):
    """torch.optim.SGD: with g = grad + weight_decay * p,
    b <- momentum * b + (1 - dampening) * g  (b = g at the first step),
    p <- p - lr * (g + momentum * b if nesterov else b)   (just g when momentum = 0).

    >>> opt = mg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)  # doctest: +SKIP
    >>> loss.backward(); opt.step(); opt.zero_grad()                  # doctest: +SKIP
    """

    def __init__(self, params: Iterable[Tensor] | Iterable[dict], lr: float = 1e-3,
                 momentum: float = 0, dampening: float = 0, weight_decay: float = 0,
                 nesterov: bool = False, *, maximize: bool = False) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns ``closure()`` if given."""
        loss = self._closure(closure)
        with no_grad():
            for group in self.param_groups:
                lr, momentum, dampening, wd, nesterov = (
                    group["lr"], group["momentum"], group["dampening"], group["weight_decay"],
                    group["nesterov"])
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    g = -p.grad.data if group["maximize"] else p.grad.data
                    if wd != 0:
                        g = g + wd * p.data  # after the sign flip, as torch does
                    if momentum != 0:
                        state = self.state[p]
                        buf = state.get("momentum_buffer")
                        if buf is None:
                            buf = state["momentum_buffer"] = Tensor._make(np.array(g))
                        else:
                            # Optimizer-owned buffer, never in a graph: update its array directly.
                            b = buf.data
                            b *= momentum
                            b += (1 - dampening) * g
                        g = g + momentum * buf.data if nesterov else buf.data
                    p.sub_(Tensor._make(lr * g))
        return loss
