"""Adagrad (Duchi, Hazan and Singer, 2011) with torch's lr decay and initial accumulator."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..autograd.function import make_tensor
from ..tensor import Tensor
from .optimizer import Optimizer, check_differentiable, check_non_negative, pairs


class Adagrad(Optimizer):
    """torch.optim.Adagrad: with g = grad + weight_decay * p and step t = 1, 2, ...,
    s <- s + g^2 (s starts at initial_accumulator_value),
    p <- p - lr / (1 + (t - 1) lr_decay) * g / (sqrt(s) + eps).

    >>> p = nn.Parameter(mg.tensor([1.0, -2.0]))
    >>> opt = mg.optim.Adagrad([p], lr=0.5)
    >>> (p * p).sum().backward(); opt.step(); p.tolist()  # the first step is lr * sign(g)
    [0.5, -1.5]
    """

    def __init__(self, params: Iterable[Tensor] | Iterable[dict], lr: float = 1e-2,
                 lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10,
                 foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        check_non_negative(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                           initial_accumulator_value=initial_accumulator_value, eps=eps)
        check_differentiable(differentiable)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps,
                                      weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      maximize=maximize))
        # torch creates the state up front, so a fresh state_dict already holds the sums.
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group, self.state[p])

    @staticmethod
    def _init_state(p: Tensor, group: dict, state: dict) -> None:
        state["step"] = 0
        arr = pairs(p._array) if p._array.dtype.kind == "c" else p._array  # as step() sees p
        state["sum"] = make_tensor(np.full_like(arr, group["initial_accumulator_value"]))

    def _update(self, g: np.ndarray, p: Tensor, group: dict, state: dict) -> np.ndarray:
        if not state:  # a parameter added later by add_param_group
            self._init_state(p, group, state)
        state["step"] += 1
        s = state["sum"]._array
        s += g * g
        clr = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
        return clr * (g / (np.sqrt(s) + group["eps"]))
