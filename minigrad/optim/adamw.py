"""AdamW: Adam with decoupled weight decay (Loshchilov and Hutter, 2019)."""

from __future__ import annotations

from collections.abc import Iterable

from ..tensor import Tensor
from .adam import Adam


class AdamW(Adam):
    """torch.optim.AdamW: p <- p (1 - lr weight_decay), then Adam's step on the raw gradient
    (AMSGrad with ``amsgrad=True``); note the default weight_decay is 1e-2, not 0.

    >>> p = nn.Parameter(mg.tensor([1.0, -2.0]))
    >>> opt = mg.optim.AdamW([p], lr=0.1, weight_decay=0.5)  # decay to 0.95 p, then Adam
    >>> (p * p).sum().backward(); opt.step(); [round(v, 4) for v in p.tolist()]
    [0.85, -1.8]
    """

    def __init__(self, params: Iterable[Tensor] | Iterable[dict], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
