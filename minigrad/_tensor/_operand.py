"""What the method families share: an operand's values as numpy sees them, an index
operand checked to be integer, the refusal of complex tensors where torch refuses, and a
result in the dtype= asked for."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np

from ..autograd.function import is_tensor
from ..ops._base import refuse_complex

F = TypeVar("F", bound=Callable[..., Any])


def arr(x: Any) -> Any:
    """A Tensor's ndarray, or the number / array given."""
    return x._array if is_tensor(x) else np.asarray(x)


def fill_value(x: Any, dtype: np.dtype) -> Any:
    """A value to write into a tensor of ``dtype``; a complex number into a real tensor is
    torch's error (numpy would drop its imaginary part, or raise a TypeError)."""
    if isinstance(x, (complex, np.complexfloating)) and dtype.kind != "c":
        raise RuntimeError(f"value cannot be converted to type {dtype} without overflow")
    return x


def real_only(method: F) -> F:
    """A method torch has no complex version of: on a complex tensor, torch's error (numpy
    would answer, by its lexicographic order or by dropping imaginary parts)."""
    @functools.wraps(method)
    def checked(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self._array.dtype.kind == "c":
            raise refuse_complex(method.__name__, self._array.dtype)
        return method(self, *args, **kwargs)
    return cast(F, checked)


def floating(x: Any, dtype: Any, fn: str, takes_dtype: bool = True) -> Any:
    """``x`` cast to ``dtype`` when given; an integer or bool result is torch's error for the
    ops it has no integer kernel for (the softmaxes, logcumsumexp), saying what to do."""
    if dtype is not None:
        x = x.to(dtype)
    if x._array.dtype.kind not in "fc":
        fix = "pass dtype=mg.float32 or convert" if takes_dtype else "convert it"
        raise NotImplementedError(f'"{fn}" not implemented for {x.dtype} tensors: {fix} '
                                  "with .float() first")
    return x


def int_array(x: Any, fn: str) -> np.ndarray:
    """An integer operand's values, or torch's error naming ``fn`` for any other dtype."""
    a = np.asarray(x._array if is_tensor(x) else x)
    if a.dtype.kind not in "iu":
        raise RuntimeError(f"{fn}(): Expected a long tensor, but got {a.dtype}")
    return a


def long_index(index: Any, fn: str) -> np.ndarray:
    idx = np.asarray(index._array if is_tensor(index) else index)
    if idx.dtype.kind not in "iu":
        raise RuntimeError(f"{fn}(): Expected a long tensor for index, but got {idx.dtype}")
    return idx


def as_asked(out: Any, dtype: Any) -> Any:
    """out in ``dtype`` where one was asked for: integer sums and products accumulate in
    int64 (torch's default), but torch's dtype= names the result's own (int32 wraps as its
    int32 sums do: the same modulo 2^32)."""
    return out if dtype is None or out.dtype == dtype else out.to(dtype)
