"""Argument checks shared by the linear-algebra functions, in torch's words."""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor


def _dtype_name(dt: np.dtype) -> str:
    return {"int64": "Long", "int32": "Int", "bool": "Bool", "int16": "Short",
            "int8": "Char", "uint8": "Byte"}.get(np.dtype(dt).name, np.dtype(dt).name)


def check_tensor(x: object, fn: str, arg: str = "A") -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{arg}' must be a Tensor, not {type(x).__name__}; "
                        "wrap it with mg.tensor(...)")
    return x


def check_float(x: Tensor, fn: str) -> None:
    if x.dtype.kind != "f":
        raise RuntimeError(f"{fn}: Expected a floating point tensor as input. Got "
                           f"{_dtype_name(x.dtype)}; convert it with .float() or .double()")


def check_matrix(A: object, fn: str, arg: str = "A", square: bool = False) -> Tensor:
    """A float Tensor of shape (*, m, n) (m == n when square), else torch's error."""
    A = check_tensor(A, fn, arg)
    if A.ndim < 2:
        raise RuntimeError(f"{fn}: The input tensor {arg} must have at least 2 dimensions.")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{fn}: {arg} must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    check_float(A, fn)
    return A


def batch_prefix(batch: tuple, flat: int) -> str:
    """torch's "(Batch element i): " prefix (i the flat index), empty for a lone matrix."""
    return f"(Batch element {flat}): " if batch else ""
