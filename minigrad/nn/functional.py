"""Stateless layer and loss functions (torch.nn.functional names, signatures and defaults)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._dims import wrap_dim
from ..autograd import views
from ..autograd.function import Context, Function, constant
from ..autograd.grad_mode import no_grad
from ..creation import default_generator
from ..functions import broadcast_shapes, where
from ..ops.shape import IndexAdd
from ..tensor import Tensor

_REDUCTIONS = ("mean", "sum", "none")


# ---- fused primitives: one graph node where the composite would record several -------------
# Training steps are dominated by per-op overhead at these sizes, so the layers and losses
# every model uses get their own Functions. Their backwards are still minigrad ops, so
# create_graph=True keeps working.
class _Linear(Function):
    """x W^T + b for 2-D x: d/dx = g W, d/dW = g^T x, d/db = sum_n g."""

    @staticmethod
    def forward(ctx: Context, x: Any, w: Any, b: Any) -> np.ndarray:
        (n, k), (m, k_w) = x.data.shape, w.data.shape
        if k != k_w:  # torch's message, in terms of x @ W^T
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and "
                               f"{k_w}x{m})")
        ctx.save_for_backward(x, w)
        out = x.data @ w.data.T
        if b is not None:
            out += b.data
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        x, w = ctx.saved_tensors
        nx, nw, nb = ctx.needs_input_grad
        return (g.matmul(w) if nx else None, g.mT.matmul(x) if nw else None,
                g.sum(0) if nb else None)


class _LogSoftmax(Function):
    """x - log sum exp x along dim (shifted by the max); d/dx = g - softmax * sum g."""

    @staticmethod
    def forward(ctx: Context, x: Any, dim: int) -> np.ndarray:
        a = x.data
        m = a.max(axis=dim, keepdims=True)
        shifted = a - np.where(np.isfinite(m), m, 0)
        out = shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))
        ctx.save_for_backward(x)
        ctx.dim = dim
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        (x,) = ctx.saved_tensors
        return g - x.softmax(ctx.dim) * g.sum(ctx.dim, keepdim=True), None


class _PickSum(Function):
    """-sum_n c_n logp[n, t_n]: the reduced NLL; d/dlogp is -c_n at (n, t_n), else 0."""

    @staticmethod
    def forward(ctx: Context, logp: Any, target: np.ndarray, coef: np.ndarray) -> np.ndarray:
        rows = np.arange(len(target))
        ctx.shape, ctx.rows, ctx.target, ctx.coef = logp.data.shape, rows, target, coef
        return np.asarray(-(logp.data[rows, target] * coef).sum(), dtype=logp.data.dtype)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        dense = np.zeros(ctx.shape, ctx.coef.dtype)
        dense[ctx.rows, ctx.target] = -ctx.coef  # targets are unique per row: no accumulation
        return g * constant(dense), None, None


class _Pointwise(Function):
    """y = f(x) elementwise, f on ndarrays; dy/dx = df(x) written with minigrad ops, so the
    backward is itself differentiable. Lets a branchy or stabilised formula be one node."""

    @staticmethod
    def forward(ctx: Context, x: Any, f: Callable, df: Callable) -> np.ndarray:
        ctx.save_for_backward(x)
        ctx.df = df
        with np.errstate(over="ignore", under="ignore"):
            return np.asarray(f(x.data), dtype=x.data.dtype)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        (x,) = ctx.saved_tensors
        return g * ctx.df(x), None, None


def _pointwise(name: str, x: Tensor, f: Callable, df: Callable) -> Tensor:
    if x.dtype.kind != "f":  # torch has no integer kernels for these
        raise NotImplementedError(f'"{name}" not implemented for {x.dtype} tensors; '
                                  "convert with .float() first")
    return _Pointwise.apply(x, f, df)


_ERF = np.frompyfunc(math.erf, 1, 1)  # libm's erf, correctly rounded to ~1 ulp


def _erf_array(a: np.ndarray) -> np.ndarray:
    return np.asarray(_ERF(a), dtype=a.dtype)


def _erf(x: Tensor) -> Tensor:
    """erf(x) = 2/sqrt(pi) int_0^x exp(-t^2) dt; d/dx = 2/sqrt(pi) exp(-x^2)."""
    return _Pointwise.apply(x, _erf_array, lambda t: (-(t * t)).exp() * (2 / math.sqrt(math.pi)))


class _Embedding(Function):
    """weight[idx]; the gradient scatters back, each position scaled by ``coef`` (zero at the
    padding index, 1/count with scale_grad_by_freq)."""

    @staticmethod
    def forward(ctx: Context, weight: Any, idx: np.ndarray, coef: np.ndarray | None) -> Any:
        ctx.idx, ctx.coef, ctx.shape = idx, coef, weight.data.shape
        return weight.data[idx]

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        if ctx.coef is not None:
            g = g * constant(ctx.coef.astype(g.dtype)[..., None])
        return IndexAdd.apply(g, ctx.idx, ctx.shape), None, None


class _ConstantPad(Function):
    """np.pad with a constant; the gradient is the interior of g."""

    @staticmethod
    def forward(ctx: Context, x: Any, widths: list, value: float) -> np.ndarray:
        ctx.interior = tuple(slice(lo, lo + n) for (lo, _), n in zip(widths, x.data.shape))
        return np.pad(x.data, widths, constant_values=value)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        return g[ctx.interior], None, None


class _BinaryCrossEntropy(Function):
    """-(y log x + (1 - y) log(1 - x)) with each log clamped at -100 (torch's rule, so x = 0 or
    1 gives a finite loss); d/dx = (x - y) / max(x (1 - x), 1e-12), as torch."""

    @staticmethod
    def forward(ctx: Context, x: Any, y: Any) -> np.ndarray:
        ctx.save_for_backward(x, y)
        a, t = x.data, np.asarray(y.data, x.data.dtype)
        with np.errstate(divide="ignore"):
            log_x, log_1mx = np.maximum(np.log(a), -100), np.maximum(np.log1p(-a), -100)
        return -(t * log_x + (1 - t) * log_1mx)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        x, y = ctx.saved_tensors
        nx, ny = ctx.needs_input_grad
        gx = g * (x - y) / (x * (1 - x)).clamp(min=1e-12) if nx else None
        gy = g * ((-x).log1p().clamp(min=-100) - x.log().clamp(min=-100)) if ny else None
        return gx, gy


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y = x W^T + b, with W of shape (out_features, in_features); x may have any leading dims.

    >>> F.linear(mg.ones(1, 2), mg.ones(3, 2)).shape
    (1, 3)
    """
    if input.ndim == 2:
        return _Linear.apply(input, weight, bias)
    lead = input.shape[:-1]
    out = _Linear.apply(input.reshape(-1, input.shape[-1]), weight, bias)
    return out.reshape(*lead, weight.shape[0])


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
                          lambda t: constant(((t.data > min_val) & (t.data < max_val))
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
                          lambda t: constant(((t.data > -3) & (t.data < 3)) / 6).to(t.dtype))
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
        return (_erf(t * math.sqrt(0.5)) + 1) * 0.5 + t * phi
    return _pointwise("gelu", x, lambda a: a * 0.5 * (1 + _erf_array(a * math.sqrt(0.5))), df)


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
    def fn(x: Tensor) -> Tensor:
        return _pointwise("leaky_relu", x, lambda a: np.where(a > 0, a, a * negative_slope),
                          lambda t: constant(np.where(t.data > 0, 1.0, negative_slope)
                                             .astype(t.dtype)))
    return _maybe_inplace(input, inplace, fn)


def _elu(x: Tensor, name: str, alpha: float, scale: float = 1.0,
         input_scale: float = 1.0) -> Tensor:
    """scale * (x if x > 0 else alpha (exp(input_scale x) - 1)): elu, selu and celu."""
    def f(a: np.ndarray) -> np.ndarray:
        return scale * np.where(a > 0, a, alpha * np.expm1(input_scale * np.minimum(a, 0)))

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
    ``dtype`` casts the input first."""
    x = input if dtype is None else input.to(dtype)
    return x.softmax(_softmax_dim("softmax", x.ndim, dim))


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: Any = None) -> Tensor:
    """softmax(-x) along ``dim``."""
    x = input if dtype is None else input.to(dtype)
    return (-x).softmax(_softmax_dim("softmin", x.ndim, dim))


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
                dtype: Any = None) -> Tensor:
    """x_i - log sum_j exp(x_j) along ``dim``, computed stably (never log of an underflow)."""
    x = input if dtype is None else input.to(dtype)
    return _LogSoftmax.apply(x, wrap_dim(_softmax_dim("log_softmax", x.ndim, dim), x.ndim))


# ---- dropout ------------------------------------------------------------------------------
def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """Zero each element with probability p and scale the rest by 1 / (1 - p) while training;
    the identity otherwise. Draws come from ``mg.manual_seed``'s generator.

    >>> F.dropout(mg.ones(4), p=0.5, training=False).tolist()
    [1.0, 1.0, 1.0, 1.0]
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    keep = default_generator.rng.random(input.shape) >= p
    scale = keep / (1.0 - p) if p < 1.0 else keep.astype(np.float64)
    mask = constant(scale.astype(input.dtype))
    return _maybe_inplace(input, inplace, lambda x: x * mask)


# ---- normalisation --------------------------------------------------------------------------
def _affine(y: Tensor, weight: Tensor | None, bias: Tensor | None) -> Tensor:
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def _check_normalized_shape(input: Tensor, shape: tuple[int, ...], weight: Tensor | None,
                            bias: Tensor | None) -> None:
    if tuple(input.shape[input.ndim - len(shape):]) != shape or input.ndim < len(shape):
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size"
                           f"{list(input.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but "
                               f"got {name} of shape {list(t.shape)} and normalized_shape = "
                               f"{list(shape)}")


def layer_norm(input: Tensor, normalized_shape: int | Sequence[int],
               weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """(x - mean) / sqrt(var + eps) * weight + bias over the trailing ``normalized_shape``
    dims, with the biased variance (Ba et al., 2016).

    >>> F.layer_norm(mg.tensor([[1.0, 3.0]]), (2,), eps=0.0).tolist()
    [[-1.0, 1.0]]
    """
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    _check_normalized_shape(input, shape, weight, bias)
    dims = tuple(range(input.ndim - len(shape), input.ndim))
    centred = input - input.mean(dims, keepdim=True)
    var = (centred * centred).mean(dims, keepdim=True)
    return _affine(centred * (var + eps).rsqrt(), weight, bias)


def rms_norm(input: Tensor, normalized_shape: int | Sequence[int],
             weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """x / sqrt(mean(x^2) + eps) * weight over the trailing dims (Zhang and Sennrich, 2019);
    eps defaults to the dtype's machine epsilon, as in torch."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    _check_normalized_shape(input, shape, weight, None)
    dims = tuple(range(input.ndim - len(shape), input.ndim))
    e = float(np.finfo(input.dtype).eps) if eps is None else eps
    return _affine(input * ((input * input).mean(dims, keepdim=True) + e).rsqrt(), weight, None)


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """(x - mean) / sqrt(var + eps) * weight + bias per channel (dim 1; Ioffe and Szegedy).

    Training normalises with the batch's mean and biased variance and moves the running
    statistics toward them in place: r <- (1 - momentum) r + momentum * batch (unbiased
    variance, as torch). Otherwise the running statistics are used.
    """
    dims = (0,) + tuple(range(2, input.ndim))
    param_shape = (1, input.shape[1]) + (1,) * (input.ndim - 2)
    if training:
        if input.numel() // input.shape[1] <= 1:
            raise ValueError("Expected more than 1 value per channel when training, got input "
                             f"size {tuple(input.shape)}")
        mean = input.mean(dims, keepdim=True)
        centred = input - mean
        var = (centred * centred).mean(dims, keepdim=True)
        n = input.numel() // input.shape[1]
        with no_grad():
            if running_mean is not None:
                running_mean.copy_(running_mean * (1 - momentum)
                                   + mean.detach().reshape(-1) * momentum)
            if running_var is not None:
                running_var.copy_(running_var * (1 - momentum)
                                  + var.detach().reshape(-1) * (momentum * n / (n - 1)))
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean must be defined in evaluation mode")
        centred = input - running_mean.reshape(param_shape)
        var = running_var.reshape(param_shape)
    y = centred * (var + eps).rsqrt()
    return _affine(y, None if weight is None else weight.reshape(param_shape),
                   None if bias is None else bias.reshape(param_shape))


def _vector_norm(x: Tensor, p: float, dim: int | tuple[int, ...], keepdim: bool) -> Tensor:
    """The p-norm over ``dim``, with gradient 0 (not NaN) at a zero vector for every p."""
    if p == 2:
        return x.norm(2, dim, keepdim)
    if p == 1:
        return x.abs().sum(dim, keepdim)
    if p == math.inf:
        return x.abs().amax(dim, keepdim)
    if p == -math.inf:
        return x.abs().amin(dim, keepdim)
    if p == 0:
        return (x != 0).to(x.dtype).sum(dim, keepdim)
    s = (x.abs() ** p).sum(dim, keepdim)
    zero = s == 0  # s ** (1/p) has an infinite slope there; the norm's subgradient is 0
    return where(zero, 0.0, where(zero, 1.0, s) ** (1.0 / p))


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Tensor | None = None) -> Tensor:
    """x / max(||x||_p, eps) along ``dim``.

    >>> F.normalize(mg.tensor([[3.0, 4.0]])).tolist()
    [[0.6000000238418579, 0.800000011920929]]
    """
    if input.dtype.kind != "f":
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {input.dtype}")
    result = input / _vector_norm(input, p, dim, True).clamp(min=eps)
    return result if out is None else out.copy_(result)


# ---- embeddings and indices -----------------------------------------------------------------
def _index_array(t: Any, fn: str) -> np.ndarray:
    arr = np.asarray(t.data if isinstance(t, Tensor) else t)
    if arr.dtype.kind not in "iu":
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {arr.dtype} instead "
                           f"(while checking arguments for {fn})")
    return arr


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows ``weight[input]``. The ``padding_idx`` row gets no gradient; ``max_norm`` first
    rescales (in place) each looked-up row whose ``norm_type``-norm exceeds it;
    ``scale_grad_by_freq`` divides each row's gradient by its count in ``input``.

    >>> F.embedding(mg.tensor([[0, 2]]), mg.eye(3)).shape
    (1, 2, 3)
    """
    if sparse:
        raise NotImplementedError("sparse=True needs sparse gradients, which minigrad does not "
                                  "have; use sparse=False (the gradient is then dense)")
    idx = _index_array(input, "embedding")
    n = weight.shape[0]
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise IndexError("index out of range in self")
    idx = np.where(idx < 0, idx + n, idx)
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise ValueError("Padding_idx must be within num_embeddings")
        padding_idx %= n
    if max_norm is not None:
        _renorm_rows(weight, np.unique(idx), max_norm, norm_type)
    coef = None
    if padding_idx is not None or scale_grad_by_freq:
        coef = np.ones(idx.shape)
        if scale_grad_by_freq:
            counts = np.bincount(idx.reshape(-1), minlength=n)
            coef = coef / counts[idx]
        if padding_idx is not None:
            coef = np.where(idx == padding_idx, 0.0, coef)
    return _Embedding.apply(weight, idx, coef)


def _renorm_rows(weight: Tensor, rows: np.ndarray, max_norm: float, norm_type: float) -> None:
    """torch's embedding_renorm_: rows with norm > max_norm scaled by max_norm / (norm + 1e-7)."""
    with no_grad():
        w = weight.data[rows]
        norms = np.linalg.norm(w, ord=norm_type, axis=1) if w.size else np.zeros(0)
        big = norms > max_norm
        if big.any():
            scale = (max_norm / (norms[big] + 1e-7)).astype(w.dtype)
            weight[rows[big]] = Tensor._make(w[big] * scale[:, None])


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 tensor of shape (*tensor.shape, num_classes) with a 1 at each class index;
    ``num_classes=-1`` means max + 1.

    >>> F.one_hot(mg.tensor([0, 2]), 3).tolist()
    [[1, 0, 0], [0, 0, 1]]
    """
    arr = np.asarray(tensor.data if isinstance(tensor, Tensor) else tensor)
    if arr.dtype.kind not in "iu":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if arr.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(arr.max()) + 1
    if arr.size and arr.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if arr.size and arr.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = np.zeros(arr.shape + (num_classes,), np.int64)
    np.put_along_axis(out, arr[..., None].astype(np.int64), 1, axis=-1)
    return Tensor._make(out)


# ---- padding --------------------------------------------------------------------------------
_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant",
        value: float | None = None) -> Tensor:
    """Pad the last len(pad) // 2 dims: ``pad = (left_last, right_last, left_2nd_last, ...)``.
    Negative amounts crop. ``mode`` is "constant" (with ``value``, default 0), "reflect"
    (mirror without the edge), "replicate" (repeat the edge) or "circular" (wrap around).

    >>> F.pad(mg.tensor([[1.0, 2.0]]), (1, 2)).tolist()
    [[0.0, 1.0, 2.0, 0.0, 0.0]]
    """
    pad = [int(p) for p in pad]
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    k = len(pad) // 2
    if k > input.ndim:
        raise RuntimeError("Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of dimension "
                           f"{input.ndim}")
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    # (dim, left, right), innermost first as torch lists them
    sides = [(input.ndim - 1 - i, pad[2 * i], pad[2 * i + 1]) for i in range(k)]
    if mode == "constant":
        return _pad_constant(input, sides, 0.0 if value is None else value)
    if value is not None:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if k > 3 or input.ndim not in (k + 1, k + 2):
        raise NotImplementedError(f"Padding size {len(pad)} is not supported for "
                                  f"{input.ndim}D input tensor.")
    out = input
    for d, lo, hi in sides:
        out = out.index_select(d, Tensor._make(_pad_index(mode, input, d, lo, hi, pad)))
    return out


def _pad_constant(input: Tensor, sides: list, value: float) -> Tensor:
    crop = [slice(None)] * input.ndim
    widths = [(0, 0)] * input.ndim
    for d, lo, hi in sides:
        n = input.shape[d]
        if n - max(-lo, 0) - max(-hi, 0) < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        crop[d] = slice(max(-lo, 0), n - max(-hi, 0))
        widths[d] = (max(lo, 0), max(hi, 0))
    x = input[tuple(crop)] if any(lo < 0 or hi < 0 for _, lo, hi in sides) else input
    return _ConstantPad.apply(x, widths, value)


def _pad_index(mode: str, input: Tensor, d: int, lo: int, hi: int, pad: list) -> np.ndarray:
    """Source index along ``d`` of each output position, for the non-constant modes."""
    n = input.shape[d]
    if mode == "reflect" and (lo >= n or hi >= n):
        raise RuntimeError("Argument #4: Padding size should be less than the corresponding "
                           f"input dimension, but got: padding ({lo}, {hi}) at dimension {d} of "
                           f"input {list(input.shape)}")
    if mode == "circular" and (lo > n or hi > n):
        raise RuntimeError("Padding value causes wrapping around more than once.")
    i = np.arange(-lo, n + hi)
    if mode == "replicate":
        return np.clip(i, 0, n - 1)
    if mode == "circular":
        return i % n
    period = 2 * (n - 1) if n > 1 else 1
    i = np.abs(i) % period
    return np.where(i >= n, period - i, i)


# ---- distances ------------------------------------------------------------------------------
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """<x1, x2> / (max(||x1||, eps) max(||x2||, eps)) along ``dim`` (broadcasting).

    Where a norm is below eps, torch's gradient ignores the clamp; this one is the derivative
    of the value returned (the two agree everywhere else).

    >>> F.cosine_similarity(mg.tensor([[1.0, 0.0]]), mg.tensor([[1.0, 1.0]])).tolist()
    [0.7071067690849304]
    """
    shape = broadcast_shapes(x1.shape, x2.shape)
    x1 = x1 if x1.shape == shape else x1.broadcast_to(shape)
    x2 = x2 if x2.shape == shape else x2.broadcast_to(shape)
    n1 = x1.norm(2, dim, keepdim=True).clamp(min=eps)
    n2 = x2.norm(2, dim, keepdim=True).clamp(min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """||x1 - x2 + eps||_p over the last dim (eps keeps the gradient finite at x1 == x2)."""
    return _vector_norm(x1 - x2 + eps, p, -1, keepdim)


# ---- losses ---------------------------------------------------------------------------------
def _legacy_reduction(size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    """``reduction``, or what torch's deprecated size_average/reduce pair means (with torch's
    warning)."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = ("mean" if size_average else "sum") if reduce else "none"
    warnings.warn("size_average and reduce args will be deprecated, please use "
                  f"reduction='{reduction}' instead.", UserWarning, stacklevel=4)
    return reduction


def _reduction(size_average: bool | None, reduce: bool | None, reduction: str,
               allowed: tuple[str, ...] = _REDUCTIONS) -> str:
    """The loss's reduction, checked up front as torch does."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction, allowed)
    return reduction


def _check_reduction(reduction: str, allowed: tuple[str, ...] = _REDUCTIONS) -> None:
    if reduction not in allowed:
        raise ValueError(f"{reduction} is not a valid value for reduction (use {allowed})")


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    _check_reduction(reduction)
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def _weighted(loss: Tensor, weight: Tensor | None, reduction: str) -> Tensor:
    """torch 2.6+'s per-element ``weight`` of the regression losses (mean still divides by N)."""
    if weight is not None:
        if tuple(weight.shape) != tuple(loss.shape):
            raise ValueError("Weights and input must have the same size.")
        loss = loss * weight
    return _reduce(loss, reduction)


def mse_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
             reduce: bool | None = None, reduction: str = "mean",
             weight: Tensor | None = None) -> Tensor:
    """(x - y)^2, averaged (``mean``), summed (``sum``) or elementwise (``none``).

    >>> F.mse_loss(mg.tensor([1.0, 3.0]), mg.tensor([0.0, 0.0])).item()
    5.0
    """
    reduction = _reduction(size_average, reduce, reduction)
    _warn_if_broadcast(input, target)
    diff = input - target
    return _weighted(diff * diff, weight, reduction)


def l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
            reduce: bool | None = None, reduction: str = "mean",
            weight: Tensor | None = None) -> Tensor:
    """|x - y| with the same reductions as ``mse_loss``."""
    reduction = _reduction(size_average, reduce, reduction)
    _warn_if_broadcast(input, target)
    return _weighted((input - target).abs(), weight, reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                   reduce: bool | None = None, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta, with d = x - y (beta = 0: L1)."""
    reduction = _reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _warn_if_broadcast(input, target)
    d = input - target
    a = d.abs()
    if beta == 0:
        return _reduce(a, reduction)
    return _reduce(where(a < beta, d * d * (0.5 / beta), a - 0.5 * beta), reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta): smooth_l1_loss times delta."""
    _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _warn_if_broadcast(input, target)
    d = input - target
    a = d.abs()
    return _weighted(where(a < delta, d * d * 0.5, (a - 0.5 * delta) * delta), weight, reduction)


def _warn_if_broadcast(input: Tensor, target: Any) -> None:
    """torch broadcasts a target of another shape, with this warning: it is usually a bug."""
    if isinstance(target, Tensor) and target.shape != input.shape:
        warnings.warn(f"Using a target size ({tuple(target.shape)}) that is different to the "
                      f"input size ({tuple(input.shape)}). This will likely lead to incorrect "
                      "results due to broadcasting. Please ensure they have the same size.",
                      stacklevel=3)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    """-w (y log x + (1 - y) log(1 - x)) for probabilities x in [0, 1]; each log is clamped at
    -100 as in torch, so a saturated x gives 100, not inf.

    >>> round(F.binary_cross_entropy(mg.tensor([0.5]), mg.tensor([1.0])).item(), 6)
    0.693147
    """
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({tuple(target.shape)}) that is different to the "
                         f"input size ({tuple(input.shape)}) is deprecated. Please ensure they "
                         "have the same size.")
    x = input.data
    if x.size and not ((x >= 0) & (x <= 1)).all():
        raise RuntimeError("all elements of input should be between 0 and 1")
    loss = _BinaryCrossEntropy.apply(input, target)
    return _reduce(loss if weight is None else loss * weight, reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None,
                                     size_average: bool | None = None,
                                     reduce: bool | None = None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """-w (p y log sigmoid(x) + (1 - y) log sigmoid(-x)) for logits x, with p = pos_weight
    (broadcast over the last dim), computed as (1 - y) x - (1 + (p - 1) y) log sigmoid(x),
    which is exact and finite for any x.

    >>> round(F.binary_cross_entropy_with_logits(mg.tensor([0.0]), mg.tensor([1.0])).item(), 6)
    0.693147
    """
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({tuple(target.shape)}) must be the same as input size "
                         f"({tuple(input.shape)})")
    log_sig = logsigmoid(input)
    if pos_weight is None:
        loss = (1 - target) * input - log_sig
    else:
        loss = (1 - target) * input - ((pos_weight - 1) * target + 1) * log_sig
    return _reduce(loss if weight is None else loss * weight, reduction)


def kl_div(input: Tensor, target: Tensor, size_average: bool | None = None,
           reduce: bool | None = None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """y (log y - x) for log-probabilities x (0 where y = 0); ``log_target``: exp(y) (y - x).
    ``batchmean`` divides the sum by the batch size, which is the KL divergence."""
    reduction = _reduction(size_average, reduce, reduction, _REDUCTIONS + ("batchmean",))
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", UserWarning, stacklevel=2)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        zero = target == 0
        loss = where(zero, 0.0, target * where(zero, 1.0, target).log()) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.ndim else loss.sum()
    return _reduce(loss, reduction)


def _classes_last(input: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """(N, C, d1, ...) and (N, d1, ...) -> (N*d1*..., C) and (N*d1*...,); (C,) -> (1, C)."""
    if input.ndim == 1:
        return input.unsqueeze(0), target.reshape(1)
    if input.ndim == 2:
        return input, target
    perm = (0,) + tuple(range(2, input.ndim)) + (1,)
    return input.permute(*perm).reshape(-1, input.shape[1]), target.reshape(-1)


def _class_targets(input: Tensor, target: Tensor) -> tuple[Tensor, np.ndarray]:
    """Flattened log-probabilities (M, C) and int class indices (M,), checked."""
    logp, t = _classes_last(input, target)
    tgt = np.asarray(t.data if isinstance(t, Tensor) else t)
    if tgt.dtype.kind not in "iu":
        raise TypeError(f"nll_loss expects integer class indices as target, got {tgt.dtype}")
    if tgt.shape != (logp.shape[0],):
        raise ValueError(f"Expected target of {logp.shape[0]} class indices, got shape "
                         f"{tuple(tgt.shape)}")
    return logp, tgt


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
             size_average: bool | None = None, ignore_index: int = -100,
             reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """-w[t_n] * input[n, t_n] for log-probabilities ``input`` (N, C) and class indices ``t``.

    ``mean`` divides by the summed weights of the non-ignored targets, as torch does.
    """
    reduction = _reduction(size_average, reduce, reduction)
    out_shape = target.shape
    logp, tgt = _class_targets(input, target)
    n, c = logp.shape
    keep = tgt != ignore_index
    safe = np.where(keep, tgt, 0)
    if safe.size and (safe.min() < 0 or safe.max() >= c):
        bad = safe[(safe < 0) | (safe >= c)][0]
        raise IndexError(f"Target {bad} is out of bounds for {c} classes")
    w = np.ones(c, logp.dtype) if weight is None else np.asarray(weight.data, logp.dtype)
    wt = (w[safe] * keep).astype(logp.dtype)
    if reduction == "none":
        return (-logp[np.arange(n), safe] * constant(wt)).reshape(out_shape)
    if reduction == "mean":
        with np.errstate(invalid="ignore"):
            wt = wt / wt.sum()  # torch: divide by the total weight of the kept targets
    return _PickSum.apply(logp, safe, wt)


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average: bool | None = None, ignore_index: int = -100,
                  reduce: bool | None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """-log softmax(x)[t]: logits (N, C, ...) and int64 class indices (N, ...), or class
    probabilities of the logits' shape. Stable for any size of logits. ``label_smoothing`` e
    mixes the target with the uniform distribution: (1 - e) target + e / C.

    >>> F.cross_entropy(mg.zeros(2, 4), mg.tensor([0, 3])).item()  # log(4)
    1.3862943649291992
    """
    reduction = _reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 0 if input.ndim == 1 else 1
    n_classes = input.shape[class_dim]
    logp = log_softmax(input, class_dim)
    w = None if weight is None else weight.reshape((-1,) + (1,) * (input.ndim - 1 - class_dim))
    if isinstance(target, Tensor) and target.dtype.kind == "f":
        if target.shape != input.shape:
            raise ValueError("cross_entropy with class probabilities needs target of the "
                             f"logits' shape {tuple(input.shape)}, got {tuple(target.shape)}")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / n_classes
        return _reduce(-((logp if w is None else logp * w) * target).sum(class_dim), reduction)
    nll = nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    if label_smoothing == 0:
        return nll
    # Smoothing adds e / C times -sum_c w_c logp_c per kept target, reduced like the nll.
    ignored = target == ignore_index
    smooth = -(logp if w is None else logp * w).sum(class_dim).masked_fill(ignored, 0.0)
    if reduction == "mean":
        kept = np.asarray(target.data)[~np.asarray(ignored.data)]
        denom = kept.size if weight is None else float(np.asarray(weight.data)[kept].sum())
        smooth = smooth.sum() / denom
    elif reduction == "sum":
        smooth = smooth.sum()
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / n_classes)
