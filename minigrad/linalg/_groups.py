"""Run a differentiable computation on the parts of a batch that need different treatment
(regular and singular matrices, full-rank and rank-deficient ones) and put the results back
in batch order, all with minigrad ops so gradients of every order flow through."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..autograd.function import make_tensor
from ..functions import cat
from ..tensor import Tensor


def by_group(A: Tensor, keys: np.ndarray, fn: Callable[[Tensor, Any, np.ndarray], Tensor]
             ) -> Tensor:
    """fn(A[idx], key, idx) for each distinct key (keys has one entry per A[i]), stacked back
    in A's order. One key: a single call on A itself, no gather."""
    values = np.unique(keys)
    if values.size == 1:
        return fn(A, values[0], np.arange(A.shape[0]))
    parts, order = [], []
    for v in values:
        idx = np.flatnonzero(keys == v)
        parts.append(fn(A[make_tensor(idx)], v, idx))
        order.append(idx)
    inverse = np.argsort(np.concatenate(order), kind="stable")
    return cat(parts, 0)[make_tensor(inverse)]
