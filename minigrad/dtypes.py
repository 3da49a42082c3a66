"""dtypes (numpy's) and torch's type promotion rules.

The dtype names are numpy's dtype objects themselves, one object per dtype (as torch's
are), and ``Tensor.dtype`` returns that same object: ported code that tests
``t.dtype is mg.float64`` takes the branch torch would, and ``t.dtype == np.float64`` holds
as before.
"""

from __future__ import annotations

from typing import Any

import numpy as np

float16 = np.dtype(np.float16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
int64 = np.dtype(np.int64)
int32 = np.dtype(np.int32)
bool_ = np.dtype(np.bool_)
half, double, long = float16, float64, int64

# numpy makes each builtin dtype once, but an unpickled array (mg.load, multiprocessing)
# carries an equal copy, and 'q' and 'l' are equal int64s: both map to the one object.
CANONICAL = {dt: dt for dt in map(np.dtype, (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float16, np.float32, np.float64))}

Number = int | float | bool  # a Python scalar, as Tensor methods take and item() returns

DEFAULT_FLOAT = float32
_INT64 = int64
_BOOL = bool_


def category(dt: np.dtype) -> int:
    """0 bool, 1 integer, 2 floating."""
    return {"b": 0, "u": 1, "i": 1, "f": 2}.get(dt.kind, 3)


def scalar_dtype(x: Any) -> np.dtype:
    """The dtype torch gives a Python scalar: bool, int64, or the default float."""
    if isinstance(x, (bool, np.bool_)):
        return _BOOL
    if isinstance(x, (int, np.integer)):
        return _INT64
    if isinstance(x, (float, np.floating)):
        return DEFAULT_FLOAT
    raise TypeError(f"unsupported operand of type {type(x).__name__}; "
                    "expected a Tensor or a number")


def result_dtype(*operands: Any) -> np.dtype:
    """torch's promotion: the highest category wins; within it, dimensioned tensors take
    precedence over zero-dim tensors, which take precedence over Python scalars.

    ``operands`` are ndarrays (a tensor's ``._array``) and scalars, so that this module needs
    nothing from autograd."""
    groups: list[list[np.dtype]] = [[], [], []]  # dimensioned, zero-dim, scalar
    for x in operands:
        if isinstance(x, np.ndarray):
            groups[0 if x.ndim else 1].append(x.dtype)
        else:
            groups[2].append(scalar_dtype(x))
    top = max(category(d) for g in groups for d in g)
    for g in groups:
        best = [d for d in g if category(d) == top]
        if best:
            out = best[0]
            for d in best[1:]:
                out = np.promote_types(out, d)
            return out
    raise AssertionError("unreachable")


def to_dtype(dtype: Any) -> np.dtype:
    """Normalise a dtype argument (mg.float32, 'float32', np.dtype) to np.dtype."""
    dt = np.dtype(dtype)
    if category(dt) > 2:
        raise TypeError(f"minigrad supports float16/32/64, integer and bool dtypes, not {dt}")
    return dt
