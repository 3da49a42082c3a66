"""Argument checks shared by the linear-algebra functions, in torch's words, and their
common float16 policy."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from ..dtypes import to_dtype
from ..tensor import Tensor
from .errors import LinAlgError

F = TypeVar("F", bound=Callable[..., Any])


def _dtype_name(dt: np.dtype) -> str:
    return {"int64": "Long", "int32": "Int", "bool": "Bool", "int16": "Short",
            "int8": "Char", "uint8": "Byte"}.get(np.dtype(dt).name, np.dtype(dt).name)


def check_tensor(x: object, fn: str, arg: str = "A") -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{arg}' must be a Tensor, not {type(x).__name__}; "
                        "wrap it with mg.tensor(...)")
    return x


def check_float(x: Tensor, fn: str, complex_ok: bool = False) -> None:
    """A float (or, where ``complex_ok``, a complex) dtype, else torch's error; complex input of
    a function without complex support yet is refused as such (.float() would drop the
    imaginary part)."""
    kind = x.dtype.kind
    if kind == "f" or (complex_ok and kind == "c"):
        return
    if kind == "c":
        raise NotImplementedError(f"{fn}: complex input ({x.dtype}) is not supported here yet")
    raise RuntimeError(f"{fn}: Expected a floating point tensor as input. Got "
                       f"{_dtype_name(x.dtype)}; convert it with .float() or .double()")


def norm_input(x: Tensor, dtype: Any, fn: str) -> Tensor:
    """A norm's input ``x``, cast to ``dtype`` when given, after torch's checks: x float or
    complex, dtype of x's kind (real or complex) and not narrower than x's."""
    check_float(x, fn, complex_ok=True)
    if dtype is None:
        return x
    dt, complex_in = to_dtype(dtype), x._array.dtype.kind == "c"
    if complex_in != (dt.kind == "c"):
        kind = "complex" if complex_in else "real"
        raise RuntimeError(f"{fn}: dtype should be {kind} for {kind} inputs, but got {dt}")
    if np.result_type(x.dtype, dt) != dt:
        raise RuntimeError(f"{fn}: the dtype of the input ({x.dtype}) should be convertible "
                           f"without narrowing to the specified dtype ({dt})")
    return x.to(dt)


def adjoint(X: Tensor) -> Tensor:
    """X^H, the conjugate transpose of the last two dims (X^T, by the cheaper mT, when real):
    the real backward rules' transposes, in torch's complex convention."""
    return X.mH if X._array.dtype.kind == "c" else X.mT


def check_matrix(A: object, fn: str, arg: str = "A", square: bool = False,
                 complex_ok: bool = False) -> Tensor:
    """A float (or, where ``complex_ok``, complex) Tensor of shape (*, m, n) (m == n when
    square), else torch's error."""
    A = check_tensor(A, fn, arg)
    shape = A._array.shape  # (the array's, not the Tensor's properties: every call pays)
    if len(shape) < 2:
        raise RuntimeError(f"{fn}: The input tensor {arg} must have at least 2 dimensions.")
    if square and shape[-1] != shape[-2]:
        raise RuntimeError(f"{fn}: {arg} must be batches of square matrices, but they are "
                           f"{shape[-2]} by {shape[-1]} matrices")
    if A._array.dtype.kind != "f":
        check_float(A, fn, complex_ok)
    return A


def batch_prefix(batch: tuple, flat: int) -> str:
    """torch's "(Batch element i): " prefix (i the flat index), empty for a lone matrix."""
    return f"(Batch element {flat}): " if batch else ""


def half_as_float(fn: F) -> F:
    """The float16 policy of every linalg function: float16 input is computed in float32
    (LAPACK and the kernels have no half precision) and float results come back as float16,
    through differentiable casts. Beside a wider float input, float16 promotes as usual."""
    name = f"linalg.{fn.__name__}"

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        # the common case first, at a few hundred ns: no float16 argument (loops, not any()
        # over a generator, which costs a small call's 0.4 us)
        for a in (*args, *kwargs.values()) if kwargs else args:
            if isinstance(a, Tensor) and a._array.dtype.char == "e":
                break
        else:
            return fn(*args, **kwargs)
        values = (*args, *kwargs.values())
        out = fn(*[_up(a) for a in args], **{k: _up(v) for k, v in kwargs.items()})
        wider = any(isinstance(a, Tensor) and a._array.dtype.char in "fdg" for a in values)
        return out if wider else _down(out, name)

    return run  # type: ignore[return-value]


def _is_half(x: Any) -> bool:
    return isinstance(x, Tensor) and x._array.dtype.char == "e"


def _up(x: Any) -> Any:
    return x.float() if _is_half(x) else x


def _down(out: Any, name: str) -> Any:
    """float32 tensors in ``out`` (a tensor or a (named) tuple of them) as float16; a finite
    value float16 cannot hold raises rather than become inf beside finite values."""
    if isinstance(out, tuple):
        items = [_down(o, name) for o in out]
        return type(out)(*items) if hasattr(out, "_fields") else tuple(items)
    if not (isinstance(out, Tensor) and out._array.dtype == np.float32):
        return out
    a = out._array
    big = float(np.finfo(np.float16).max)
    over = np.isfinite(a) & (np.abs(a) > big)
    if over.any():
        raise LinAlgError(f"{name}: a value of the result ({float(a[over].flat[0]):.6g}) cannot "
                          f"be represented in float16 without overflow (largest {big:g}); "
                          "compute in float32 (A.float()) or scale A down")
    return out.half()
