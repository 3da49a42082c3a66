"""Parameter: a Tensor that a Module registers as learnable (torch.nn.Parameter)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..tensor import Tensor


class Parameter(Tensor):
    """A leaf Tensor that requires grad by default and is auto-registered by ``Module``.

    Shares memory with ``data`` like torch. Ops on a Parameter return plain Tensors.

    >>> w = nn.Parameter(mg.zeros(2, 3)); w.requires_grad
    True
    """

    _copies_grad = False  # copy.deepcopy leaves .grad behind, as torch's Parameter does

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        if data is None:
            data = np.empty(0, dtypes.DEFAULT_FLOAT)
        super().__init__(data._array if isinstance(data, Tensor) else data)
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


def clear_grad(p: Tensor, set_to_none: bool) -> None:
    """Drop ``p.grad`` (``set_to_none``) or zero it in place, cut from any graph: the rule
    ``Module.zero_grad`` and ``Optimizer.zero_grad`` share."""
    if p.grad is None:
        return
    if set_to_none:
        p.grad = None
    else:
        p.grad = p.grad.detach()  # cut it from any graph create_graph=True built
        p.grad.zero_()
