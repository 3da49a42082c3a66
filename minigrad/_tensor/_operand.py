"""The one helper the new method families share: an operand's values as numpy sees them."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.function import is_tensor


def arr(x: Any) -> Any:
    """A Tensor's ndarray, or the number / array given."""
    return x._array if is_tensor(x) else np.asarray(x)
