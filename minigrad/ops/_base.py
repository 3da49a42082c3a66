"""What the ops share: operand promotion, saving operands that may be numbers, and the
skeleton of an elementwise function of one tensor.

A new elementwise op is a ``_Unary`` row: its numpy function and its derivative rule,

    class Exp(_Unary):
        fn = np.exp
        grad = staticmethod(lambda a, g: g * a.exp())   # written with minigrad ops

(numpy's floating-point warnings are silenced for every forward by Function.apply.)

A row that torch also computes on complex tensors names its complex forward,
``complex_fn = fn`` for most; its derivative rule then serves complex inputs too, given
conj(z) for z: these functions have real Taylor coefficients, so f'(conj z) = conj f'(z),
the slope torch's convention sends the gradient back through (g conj(f'(z))). A rule that
does not continue to complex numbers (tanh's, by |a|) gives ``complex_grad`` beside it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtypes
from .._broadcast import binary, long_loops
from ..autograd import function
from ..autograd.function import Context, Function
from ..autograd.grad_mode import _state
from ..dtypes import result_dtype

# numpy's functions as globals: CPython 3.11 does not cache lookups on the numpy module
# (each np.<name> is a full attribute lookup), and these are read on every op.
_ndarray = np.ndarray


def operands(a: Any, b: Any) -> tuple[Any, Any]:
    """Both operands as arrays of the promoted dtype (Python scalars stay weak)."""
    tensor = function.tensor_class  # is_tensor, inlined: every binary op passes here
    x = a._array if isinstance(a, tensor) else a
    y = b._array if isinstance(b, tensor) else b
    # Fast paths: same dtypes, or a Python number beside a float array, which never changes
    # the array's dtype (torch's rule, and numpy's for these weak scalars).
    if type(x) is _ndarray:
        if type(y) is _ndarray:
            if x.dtype is y.dtype or x.dtype == y.dtype:  # identity first: == is slow
                return x, y
        elif (type(y) is float or type(y) is int) and x.dtype.kind == "f":
            return x, y
    elif type(y) is _ndarray and (type(x) is float or type(x) is int) and y.dtype.kind == "f":
        return np.asarray(x, y.dtype), y  # callers read the dtype off the left operand
    dt = result_dtype(x, y)
    return np.asarray(x, dtype=dt), np.asarray(y, dtype=dt)


def elementwise(a: Any, b: Any) -> tuple[Any, Any]:
    """``operands`` of an elementwise op, a broadcast that would leave numpy short inner
    loops widened (see _broadcast.py)."""
    tensor = function.tensor_class
    if isinstance(a, tensor) and isinstance(b, tensor):  # operands' commonest case, inlined
        x, y = a._array, b._array
        if x.shape == y.shape and x.dtype is y.dtype:
            return x, y
    x, y = operands(a, b)
    # (a 0-d operand, a scalar Tensor, makes no short loop: nothing to widen)
    if type(x) is _ndarray and type(y) is _ndarray and x.shape != y.shape and x.ndim and y.ndim:
        return long_loops(x, y)
    return x, y


def arith(fn: np.ufunc, a: Any, b: Any) -> Any:
    """fn(a, b), numpy's add, subtract or multiply, on ``elementwise``'s operands: the result
    written into a widened operand where there is one (_broadcast.binary)."""
    tensor = function.tensor_class
    if isinstance(a, tensor) and isinstance(b, tensor):  # operands' commonest case, inlined:
        x, y = a._array, b._array  # a call is a tenth of a small op's time
        if x.shape == y.shape and x.dtype is y.dtype:
            return fn(x, y)
    x, y = operands(a, b)
    if type(x) is _ndarray and type(y) is _ndarray and x.shape != y.shape and x.ndim and y.ndim:
        return binary(fn, x, y)
    return fn(x, y)


def float_operands(a: Any, b: Any) -> tuple[Any, Any]:
    """Like ``elementwise``, but integer results become the default float (true division)."""
    x, y = elementwise(a, b)
    if x.dtype.kind != "f" and x.dtype.kind != "c":
        x, y = x.astype(dtypes.DEFAULT_FLOAT), y.astype(dtypes.DEFAULT_FLOAT)
    return x, y


def save_operands(ctx: Context, a: Any, b: Any, keep_a: bool, keep_b: bool) -> None:
    """Save the tensor operands backward needs (version-checked); keep numbers as they are."""
    if not (keep_a or keep_b):
        return
    tensor = function.tensor_class  # is_tensor, inlined: Mul and Div pass here
    ta, tb = isinstance(a, tensor), isinstance(b, tensor)
    ctx.save_for_backward(a if keep_a and ta else None, b if keep_b and tb else None)
    ctx.consts = (None if ta else a, None if tb else b)


def saved_operands(ctx: Context) -> tuple[Any, Any]:
    """The two operands ``save_operands`` kept, Tensors or numbers."""
    sa, sb = ctx.saved_tensors
    ca, cb = ctx.consts
    return (ca if sa is None else sa), (cb if sb is None else sb)


def as_float(x: np.ndarray, name: str) -> np.ndarray:
    """Integer and bool data as the default float, as torch's elementwise functions take it;
    complex data refused, as torch refuses ``name`` on it."""
    if x.dtype.kind == "c":
        raise refuse_complex(name, x.dtype)
    return x if x.dtype.kind == "f" else x.astype(dtypes.DEFAULT_FLOAT)


class _Unary(Function):
    """f(a) elementwise, with a saved for backward; backward is ``grad(a, g)`` = g f'(a)."""

    _numpy_forward = True  # fn takes and returns ndarrays
    complex_fn: Callable[[np.ndarray], np.ndarray] | None = None  # None: torch refuses
    complex_grad: Callable[[Any, Any], Any] | None = None  # None: ``grad`` continues
    # A first-order walk's rule on arrays, where a row has one: g f'(x) from ndarrays x and g,
    # with ``grad``'s very bits, or None for a case it does not take (``grad`` then runs).
    grad_array: Callable[[np.ndarray, np.ndarray], np.ndarray | None] | None = None

    @staticmethod
    def fn(x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    @staticmethod
    def grad(a: Any, g: Any) -> Any:
        raise NotImplementedError

    @classmethod
    def forward(cls, ctx: Context, a: Any) -> np.ndarray:
        ctx.save_for_backward(a)
        x = a._array
        if x.dtype.kind != "f":
            if x.dtype.kind == "c":
                if cls.complex_fn is None:
                    raise refuse_complex(cls.__name__.lower(), x.dtype)
                return cls.complex_fn(x)
            x = x.astype(dtypes.DEFAULT_FLOAT)
        return cls.fn(x)

    @classmethod
    def backward(cls, ctx: Context, g: Any) -> Any:
        (a,) = ctx.saved_tensors
        if a._array.dtype.kind == "c":
            return (cls.complex_grad or cls.grad)(Conj.apply(a), g)
        if cls.grad_array is not None and not _state.enabled:  # nothing records
            out = cls.grad_array(a._array, g._array)
            if out is not None:
                return function.make_tensor(out)
        return cls.grad(a, g)


_TORCH_NAMES = {"complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def refuse_complex(name: str, dt: np.dtype) -> NotImplementedError:
    """torch's error for an op it has no complex kernel for (NotImplementedError, a
    RuntimeError)."""
    return NotImplementedError(f'"{name}" not implemented for \'{_TORCH_NAMES[dt.name]}\'')


def conj(x: Any) -> Any:
    """The conjugate of a Tensor (a recorded op when complex) or of a number (None: None)."""
    if x is None:
        return None
    if not isinstance(x, function.tensor_class):
        return np.conjugate(x) if isinstance(x, np.ndarray) else x.conjugate()
    return Conj.apply(x) if x._array.dtype.kind == "c" else x


class Conj(Function):
    """conj(z) = x - iy; its gradient is conj(g) (conj is its own adjoint)."""

    _numpy_forward = True

    @staticmethod
    def forward(ctx: Context, a: Any) -> np.ndarray:
        return np.conjugate(a._array)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return conj(g)


class NotDifferentiable(Function):
    """``fn`` of the inputs' arrays, for a function torch gives no derivative: backward
    through it raises, rather than quietly dropping the gradient."""

    @staticmethod
    def forward(ctx: Context, name: str, fn: Callable, *args: Any) -> np.ndarray:
        ctx.fn_name = name  # not ctx.name: ctx is the node, whose name() it would hide
        return np.asarray(fn(*[getattr(a, "_array", a) for a in args]))

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        raise RuntimeError(f"the derivative for '{ctx.fn_name}' is not implemented")
