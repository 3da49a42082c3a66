"""Parameter: a Tensor that a Module registers as learnable (torch.nn.Parameter)."""

from __future__ import annotations

from typing import Any

import numpy as np

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
            data = np.empty(0, np.float32)
        super().__init__(data.data if isinstance(data, Tensor) else data)
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

