"""Complex numbers: their parts, phase and sign, and the views between complex and real
pairs (the conjugate and torch's refusal live in _base.py, which the elementwise rows use).

The derivatives follow torch's convention: for a real loss L of z = x + iy, ``z.grad`` is
dL/dx + i dL/dy (twice the conjugate Wirtinger derivative), so that ``z -= lr * z.grad``
descends. A holomorphic f then sends its output's gradient g back as g conj(f'(z)); a real
input of a complex op takes the real part of what reaches it (the engine does that).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.function import Context, Function, make_tensor
from ..dtypes import complex_of, real_of
from ._base import Conj, conj, refuse_complex
from .arith import Where

__all__ = ["Angle", "Complex", "Conj", "Imag", "Real", "ViewAsComplex", "ViewAsReal", "conj",
           "refuse_complex", "sgn"]


class Real(Function):
    """Re z as numpy's view of the real parts; the gradient g goes back as g + 0i (the
    engine casts the real g to the input's complex dtype). ``Imag`` is its twin."""

    _numpy_forward = True
    part = "real"

    @classmethod
    def forward(cls, ctx: Context, a: Any) -> np.ndarray:
        return getattr(a._array, cls.part)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return g


class Imag(Real):
    """Im z as numpy's view of the imaginary parts; the gradient g goes back as i g."""

    part = "imag"

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return g * 1j


class Complex(Function):
    """real + i imag for two real tensors of one float dtype (torch.complex); gradients
    Re g and Im g."""

    _numpy_forward = True

    @staticmethod
    def forward(ctx: Context, re: Any, im: Any) -> np.ndarray:
        x, y = re._array, im._array
        if x.dtype.kind != "f" or y.dtype.kind != "f":
            raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but "
                               f"got {x.dtype} and {y.dtype}")
        if x.dtype != y.dtype:
            raise RuntimeError(f"Expected object of scalar type {x.dtype} but got scalar type "
                               f"{y.dtype} for second argument")
        out = np.empty(np.broadcast_shapes(x.shape, y.shape), complex_of(x.dtype))
        out.real, out.imag = x, y
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        return Real.apply(g), Imag.apply(g)


class ViewAsReal(Function):
    """A complex tensor's memory as real pairs, a last dim of 2 (torch.view_as_real);
    the gradient (..., 2) goes back as g[..., 0] + i g[..., 1]."""

    _numpy_forward = True

    @staticmethod
    def forward(ctx: Context, a: Any) -> np.ndarray:
        x = a._array
        if x.dtype.kind != "c":
            raise RuntimeError("view_as_real is only supported for complex tensors")
        re = x.real  # the real parts' view: same strides, the parts' dtype
        return np.lib.stride_tricks.as_strided(
            re, x.shape + (2,), x.strides + (re.itemsize,), writeable=x.flags.writeable)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return Complex.apply(g[..., 0], g[..., 1])


class ViewAsComplex(Function):
    """Real pairs (a last dim of 2, stride 1) as complex numbers (torch.view_as_complex);
    the gradient goes back as its real pairs."""

    _numpy_forward = True

    @staticmethod
    def forward(ctx: Context, a: Any) -> np.ndarray:
        x = a._array
        if x.dtype.kind != "f" or x.dtype.itemsize < 4:
            raise RuntimeError("view_as_complex is only supported for float and double "
                               f"tensors, but got a tensor of scalar type: {x.dtype}")
        if x.ndim == 0 or x.shape[-1] != 2:
            raise RuntimeError("Tensor must have a last dimension of size 2")
        if x.strides[-1] != x.itemsize:
            raise RuntimeError("Tensor must have a last dimension with stride 1")
        if any(s % (2 * x.itemsize) for s in x.strides[:-1]):
            raise RuntimeError("Tensor must have a stride divisible by 2 for all but last "
                               "dimension")
        # numpy changes the itemsize of a view whose last axis is contiguous
        return x.view(complex_of(x.dtype))[..., 0]

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return ViewAsReal.apply(g)


class Angle(Function):
    """arg z = atan2(y, x), real; d/dz as torch: g i z / |z|^2 (0 at z = 0). A real input
    gives 0 or pi and a zero gradient (torch's)."""

    @staticmethod
    def forward(ctx: Context, a: Any) -> np.ndarray:
        ctx.save_for_backward(a)
        x = a._array
        if x.dtype.kind != "c" and x.dtype.kind != "f":
            x = x.astype(np.float32)
        return np.angle(x).astype(real_of(x.dtype), copy=False)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (a,) = ctx.saved_tensors
        if a._array.dtype.kind != "c":
            return make_tensor(np.zeros(a._array.shape, a._array.dtype))
        zero = make_tensor(a._array == 0)
        sq = Real.apply(a).square() + Imag.apply(a).square()
        return g * (a * 1j) / Where.apply(zero, 1.0, sq)


def sgn(a: Any) -> Any:
    """z / |z| (0 at 0) for a complex tensor, built from recorded ops (differentiable again)."""
    zero = make_tensor(a._array == 0)
    return a / Where.apply(zero, 1.0, a.abs())
