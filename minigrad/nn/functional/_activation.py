"""Activation functions and the softmax family (torch.nn.functional's names and defaults)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._dims import wrap_dim
from ..._kernel_registry import kernels, pass_kernel
from ...autograd import views
from ...autograd.function import make_tensor
from ...functions import where
from ...ops.arith import select
from ...ops.unary import _by_kernel
from ...ops.unary import _erf as _erf_array
from ...tensor import Tensor
from ._fused import _pointwise


# ---- activations ----------------------------------------------------------------------------
def _maybe_inplace(input: Tensor, inplace: bool, fn: Callable[[Tensor], Tensor]) -> Tensor:
    """torch's ``inplace=True``: the result is written into ``input``, which is returned."""
    return views.inplace(input, fn) if inplace else fn(input)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0); the gradient at 0 is 0, as in torch."""
    return _maybe_inplace(input, inplace, Tensor.relu)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """clip(x, min_val, max_val); the gradient is 1 strictly inside, else 0 (torch's rule)."""
    def fn(x: Tensor) -> Tensor:
        return _pointwise("hardtanh", x, lambda a: np.clip(a, min_val, max_val),
                          lambda t: make_tensor(((t._array > min_val) & (t._array < max_val))
                                             .astype(t.dtype)))
    return _maybe_inplace(input, inplace, fn)


def tanh(input: Tensor) -> Tensor:
    return input.tanh()


def sigmoid(input: Tensor) -> Tensor:
    """1 / (1 + exp(-x))."""
    return input.sigmoid()


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6; the gradient is 1/6 strictly inside (-3, 3), else 0."""
    def fn(x: Tensor) -> Tensor:
        return _pointwise("hardsigmoid", x, lambda a: np.minimum(np.maximum(a + 3, 0), 6) / 6,
                          lambda t: make_tensor(((t._array > -3) & (t._array < 3)) / 6).to(t.dtype))
    return _maybe_inplace(input, inplace, fn)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x relu6(x + 3) / 6 (Howard et al., 2019)."""
    def df(t: Tensor) -> Tensor:
        return where(t < -3, 0.0, where(t <= 3, t / 3 + 0.5, 1.0))

    def fn(x: Tensor) -> Tensor:
        return _pointwise("hardswish", x, lambda a: a * np.minimum(np.maximum(a + 3, 0), 6) / 6,
                          df)
    return _maybe_inplace(input, inplace, fn)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x sigmoid(x) (also called swish).

    >>> F.silu(mg.tensor([0.0])).item()
    0.0
    """
    return _maybe_inplace(input, inplace, lambda x: x * x.sigmoid())


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x tanh(softplus(x)) (Misra, 2019)."""
    return _maybe_inplace(input, inplace, lambda x: x * softplus(x).tanh())


_GELU_K = math.sqrt(2 / math.pi)


def _gelu_exact(x: Tensor) -> Tensor:
    def df(t: Tensor) -> Tensor:  # Phi(x) + x phi(x)
        phi = (t * t * -0.5).exp() * (1 / math.sqrt(2 * math.pi))
        return ((t * math.sqrt(0.5)).erf() + 1) * 0.5 + t * phi

    def dnp(a: np.ndarray) -> np.ndarray:  # df's steps on arrays: its numbers
        if a.dtype == np.float32:  # the same steps fused around numpy's exp: 3 passes, not 11
            return kernels("erf").gelu_slope(a)
        phi = np.exp(a * a * -0.5) * (1 / math.sqrt(2 * math.pi))
        return (_erf_array(a * math.sqrt(0.5)) + 1) * 0.5 + a * phi
    return _pointwise("gelu", x, _gelu_array, df, dnp)


def _gelu_array(a: np.ndarray) -> np.ndarray:
    """x * 0.5 * (1 + erf(x sqrt(0.5))) in x's dtype: float32's in one kernel pass (the same
    bits), others in numpy around their erf."""
    if a.dtype == np.float32:
        return kernels("erf").gelu(a)
    return a * 0.5 * (1 + _erf_array(a * math.sqrt(0.5)))


def _gelu_tanh(x: Tensor) -> Tensor:
    def df(t: Tensor) -> Tensor:
        th = ((t + t * t * t * 0.044715) * _GELU_K).tanh()
        return (th + 1) * 0.5 + t * 0.5 * (1 - th * th) * _GELU_K * (t * t * (3 * 0.044715) + 1)
    def f(a: np.ndarray) -> np.ndarray:
        return 0.5 * a * (1 + np.tanh(_GELU_K * (a + 0.044715 * a ** 3)))
    return _pointwise("gelu", x, f, df)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x Phi(x) with Phi the standard normal CDF (Hendrycks and Gimpel, 2016); with
    ``approximate="tanh"``, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).

    >>> round(F.gelu(mg.tensor([1.0])).item(), 6)
    0.841345
    """
    if approximate == "none":
        return _gelu_exact(input)
    if approximate == "tanh":
        return _gelu_tanh(input)
    raise RuntimeError("approximate argument must be either none or tanh.")


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x for x > 0, else negative_slope * x (the gradient at 0 is negative_slope, as torch)."""
    def slope(t: Tensor) -> Tensor:
        return make_tensor(_leaky(t._array, negative_slope, True))

    def fn(x: Tensor) -> Tensor:
        return _pointwise("leaky_relu", x, lambda a: _leaky(a, negative_slope, False), slope)
    return _maybe_inplace(input, inplace, fn)


def _leaky(a: np.ndarray, slope: float, slope_only: bool) -> np.ndarray:
    """leaky_relu of a (x where x > 0, else slope x), or its derivative (1 or slope): large
    aligned C-contiguous float32/64 arrays in one kernel pass, others by select."""
    if _by_kernel(a):
        out = np.empty_like(a)
        pass_kernel("leaky", a.dtype)(a.reshape(-1), out.reshape(-1), a.dtype.type(slope),
                                      slope_only)
        return out
    if slope_only:
        return select(a > 0, np.ones_like(a), np.full_like(a, slope))
    return select(a > 0, a, a * slope)


def _elu(x: Tensor, name: str, alpha: float, scale: float = 1.0,
         input_scale: float = 1.0) -> Tensor:
    """scale * (x if x > 0 else alpha (exp(input_scale x) - 1)): elu, selu and celu."""
    def f(a: np.ndarray) -> np.ndarray:
        return scale * select(a > 0, a, alpha * np.expm1(input_scale * np.minimum(a, 0)))

    def df(t: Tensor) -> Tensor:
        neg = (t.clamp(max=0) * input_scale).exp() * (alpha * input_scale * scale)
        return where(t > 0, float(scale), neg)
    return _pointwise(name, x, f, df)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, else alpha (exp(x) - 1) (Clevert et al., 2015)."""
    return _maybe_inplace(input, inplace, lambda x: _elu(x, "elu", alpha))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale * elu(x, alpha) with Klambauer et al.'s self-normalising constants."""
    return _maybe_inplace(input, inplace, lambda x: _elu(x, "selu", _SELU_ALPHA, _SELU_SCALE))


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, x) + min(0, alpha (exp(x / alpha) - 1)) (Barron, 2017)."""
    return _maybe_inplace(input, inplace, lambda x: _elu(x, "celu", alpha, 1.0, 1.0 / alpha))


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (torch's rule);
    never overflows and keeps full precision for large negative x.

    >>> round(F.softplus(mg.tensor([0.0])).item(), 6)
    0.693147
    """
    def f(a: np.ndarray) -> np.ndarray:
        z = a * beta
        return np.where(z > threshold, a, np.log1p(np.exp(np.minimum(z, threshold))) / beta)

    def df(t: Tensor) -> Tensor:
        z = t * beta
        return where(z > threshold, 1.0, z.sigmoid())
    return _pointwise("softplus", input, f, df)


def logsigmoid(input: Tensor) -> Tensor:
    """log sigmoid(x) = min(x, 0) - log(1 + exp(-|x|)), stable for any x."""
    return _pointwise("log_sigmoid", input,
                      lambda a: np.minimum(a, 0) - np.log1p(np.exp(-np.abs(a))),
                      lambda t: (-t).sigmoid())


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    return input / (input.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x)."""
    return input - input.tanh()


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else value."""
    return _maybe_inplace(input, inplace, lambda x: where(x > threshold, x, float(value)))


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """a * sigmoid(b) for the two halves a, b of ``input`` along ``dim`` (Dauphin et al.)."""
    d = wrap_dim(dim, input.ndim)
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size "
                           f"{input.shape[d]}")
    a, b = input.chunk(2, d)
    return a * b.sigmoid()


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x for x > 0, else a x, with one learned slope a per channel (dim 1) or one for all."""
    w = weight
    if weight.numel() != 1:
        channels = input.shape[1] if input.ndim >= 2 else 1
        if weight.numel() != channels:
            raise RuntimeError("Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {weight.numel()} and channel size = "
                               f"{channels}.")
        w = weight.reshape((channels,) + (1,) * (input.ndim - 2))
    return where(input > 0, input, w * input)


def _softmax_dim(name: str, ndim: int, dim: int | None) -> int:
    if dim is not None:
        return dim
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", UserWarning, stacklevel=4)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: Any = None) -> Tensor:
    """exp(x_i) / sum_j exp(x_j) along ``dim`` (shifted by the max, so it never overflows);
    ``dtype`` casts the input first (Tensor.softmax)."""
    return input.softmax(_softmax_dim("softmax", input.ndim, dim), dtype)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: Any = None) -> Tensor:
    """softmax(-x) along ``dim``; as in torch, x is negated before the cast to ``dtype``."""
    return (-input).softmax(_softmax_dim("softmin", input.ndim, dim), dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
                dtype: Any = None) -> Tensor:
    """x_i - log sum_j exp(x_j) along ``dim``, computed stably (never log of an underflow);
    ``dtype`` casts the input first (Tensor.log_softmax)."""
    return input.log_softmax(_softmax_dim("log_softmax", input.ndim, dim), dtype)
