"""Fused primitives: one graph node where the composite would record several (linear,
log-softmax, picking log-probabilities, pointwise activations, embedding, padding, BCE)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..._broadcast import binary, row_op
from ..._dims import count_over
from ...autograd.function import Context, Function, make_tensor
from ...autograd.grad_mode import _state
from ...ops.matmul import MatMul
from ...ops.reduce import Softmax, shifted
from ...ops.reduce_fast import fast_sum
from ...ops.shape import IndexAdd
from ...tensor import Tensor


# ---- fused primitives: one graph node where the composite would record several -------------
# Training steps are dominated by per-op overhead at these sizes, so the layers and losses
# every model uses get their own Functions. Their backwards are still minigrad ops, so
# create_graph=True keeps working.
class _Linear(Function):
    """x W^T + b for 2-D x: d/dx = g W, d/dW = g^T x, d/db = sum_n g."""

    @staticmethod
    def forward(ctx: Context, x: Any, w: Any, b: Any) -> np.ndarray:
        (n, k), (m, k_w) = x._array.shape, w._array.shape
        if k != k_w:  # torch's message, in terms of x @ W^T
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and "
                               f"{k_w}x{m})")
        ctx.save_for_backward(x, w)
        out = x._array @ w._array.T
        if b is not None:
            out += b._array
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        x, w = ctx.saved_tensors
        nx, nw, nb = ctx.needs_input_grad
        # MatMul itself: these are 2-D, Tensor.matmul's 1-D handling has nothing to do
        return (MatMul.apply(g, w) if nx else None, MatMul.apply(g.mT, x) if nw else None,
                g.sum(0) if nb else None)


# From this many classes the logits' rows are reduced as they lie ((512, 512) float32:
# 880 -> 300 us); below, transposed (4096 x 20: 165 us against 188).
_ROWWISE_FROM = 48


class _CrossEntropy(Function):
    """-sum_n c_n log softmax(x_n)[t_n] for logits x (N, C): log_softmax and the weighted
    pick in one node; d/dx_n = c_n (softmax(x_n) - onehot(t_n))."""

    @staticmethod
    def forward(ctx: Context, x: Any, target: np.ndarray, coef: np.ndarray) -> np.ndarray:
        rows = np.arange(len(target))
        if x._array.shape[1] >= _ROWWISE_FROM:  # rows as they lie: the row kernels' sums
            z = shifted(x._array, (1,))
            e = np.exp(z)
            total = fast_sum(e, (1,), True)
            logp = z[rows, target] - np.log(total[:, 0])  # log_softmax at the targets only
            e /= total
            probs = e
        else:
            # Few classes: down the rows, numpy reduces a long contiguous axis 4x as fast as
            # it reduces each of many short rows (256 x 10 logits: 4 us against 16, the max).
            z = shifted(np.ascontiguousarray(x._array.T), (0,))
            e = np.exp(z)
            total = e.sum(axis=0)
            logp = z[target, rows] - np.log(total)
            e /= total
            probs = e.T
        probs.flags.writeable = False  # handed to Softmax in backward, maybe more than once
        ctx.save_for_backward(x)
        ctx.probs, ctx.rows, ctx.target, ctx.coef = probs, rows, target, coef
        return np.asarray(-(logp * coef).sum(), dtype=x._array.dtype)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        (x,) = ctx.saved_tensors
        onehot = np.zeros_like(ctx.probs, dtype=ctx.coef.dtype)  # laid out as probs is
        onehot[ctx.rows, ctx.target] = 1
        probs = Softmax.apply(x, (1,), ctx.probs)  # a node of x: differentiable again
        return (probs - make_tensor(onehot)) * (g * make_tensor(ctx.coef[:, None])), None, None


class _PickSum(Function):
    """-sum_n c_n logp[n, t_n]: the reduced NLL; d/dlogp is -c_n at (n, t_n), else 0."""

    @staticmethod
    def forward(ctx: Context, logp: Any, target: np.ndarray, coef: np.ndarray) -> np.ndarray:
        rows = np.arange(len(target))
        ctx.shape, ctx.rows, ctx.target, ctx.coef = logp._array.shape, rows, target, coef
        return np.asarray(-(logp._array[rows, target] * coef).sum(), dtype=logp._array.dtype)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        dense = np.zeros(ctx.shape, ctx.coef.dtype)
        dense[ctx.rows, ctx.target] = -ctx.coef  # targets are unique per row: no accumulation
        return g * make_tensor(dense), None, None


class _Pointwise(Function):
    """y = f(x) elementwise, f on ndarrays; dy/dx = df(x) written with minigrad ops, so the
    backward is itself differentiable. Lets a branchy or stabilised formula be one node.
    ``dnp``, where given, is df's steps on ndarrays: a first-order walk (nothing records)
    takes it, without a node per step (GELU's df records ten). It must give df's bits: a
    walk that replays (hooks, retained graphs) may take df where its first pass took dnp."""

    @staticmethod
    def forward(ctx: Context, x: Any, f: Callable, df: Callable,
                dnp: Callable | None = None) -> np.ndarray:
        ctx.save_for_backward(x)
        ctx.df, ctx.dnp = df, dnp
        return np.asarray(f(x._array), dtype=x._array.dtype)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        (x,) = ctx.saved_tensors
        if ctx.dnp is not None and not _state.enabled:
            return make_tensor(np.multiply(g._array, ctx.dnp(x._array))), None, None, None
        return g * ctx.df(x), None, None, None


def _pointwise(name: str, x: Tensor, f: Callable, df: Callable,
               dnp: Callable | None = None) -> Tensor:
    if x.dtype.kind != "f":  # torch has no integer kernels for these
        raise NotImplementedError(f'"{name}" not implemented for {x.dtype} tensors; '
                                  "convert with .float() first")
    return _Pointwise.apply(x, f, df, dnp)


class _LayerNorm(Function):
    """y = (x - mean) / sqrt(var + eps) over ``dims`` (the biased variance): the composite's
    steps and numbers in one node, where it recorded seven. d/dx = r (g - mean(g) -
    y mean(g y)), r = 1 / sqrt(var + eps), in numpy when nothing records; a recorded
    backward rebuilds y and r from x with ops, so it differentiates again."""

    @staticmethod
    def forward(ctx: Context, x: Any, dims: tuple[int, ...], eps: float) -> Tensor:
        a = x._array
        n = count_over(a.shape, dims)
        c = binary(np.subtract, a, np.divide(fast_sum(a, dims, True), n))
        var = fast_sum(c * c, dims, True)
        var /= n
        var += eps
        r = 1 / np.sqrt(var)
        row_op(np.multiply, c, r, out=c)
        out = make_tensor(c)
        ctx.dims, ctx.eps, ctx.count, ctx.r = dims, eps, n, r
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        x, y = ctx.saved_tensors
        dims = ctx.dims
        if not _state.enabled:  # nothing records: the same formula in numpy
            ga, ya = g._array, y._array
            out = binary(np.subtract, ga, np.divide(fast_sum(ga, dims, True), ctx.count))
            out -= binary(np.multiply, ya, np.divide(fast_sum(ga * ya, dims, True), ctx.count))
            row_op(np.multiply, out, ctx.r, out=out)
            return make_tensor(out), None, None
        c = x - x.mean(dims, keepdim=True)
        r = ((c * c).mean(dims, keepdim=True) + ctx.eps).rsqrt()
        y = c * r
        return r * (g - g.mean(dims, keepdim=True) - y * (g * y).mean(dims, keepdim=True)), \
            None, None


class _Embedding(Function):
    """weight[idx]; the gradient scatters back, each position scaled by ``coef`` (zero at the
    padding index, 1/count with scale_grad_by_freq)."""

    @staticmethod
    def forward(ctx: Context, weight: Any, idx: np.ndarray, coef: np.ndarray | None) -> Any:
        ctx.idx, ctx.coef, ctx.shape = idx, coef, weight._array.shape
        return weight._array[idx]

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        if ctx.coef is not None:
            g = g * make_tensor(ctx.coef.astype(g.dtype)[..., None])
        return IndexAdd.apply(g, ctx.idx, ctx.shape), None, None


class _ConstantPad(Function):
    """np.pad with a constant; the gradient is the interior of g."""

    @staticmethod
    def forward(ctx: Context, x: Any, widths: list, value: float) -> np.ndarray:
        ctx.interior = tuple(slice(lo, lo + n) for (lo, _), n in zip(widths, x._array.shape))
        return np.pad(x._array, widths, constant_values=value)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        return g[ctx.interior], None, None


class _BinaryCrossEntropy(Function):
    """-(y log x + (1 - y) log(1 - x)) with each log clamped at -100 (torch's rule, so x = 0 or
    1 gives a finite loss); d/dx = (x - y) / max(x (1 - x), 1e-12), as torch."""

    @staticmethod
    def forward(ctx: Context, x: Any, y: Any) -> np.ndarray:
        ctx.save_for_backward(x, y)
        a, t = x._array, np.asarray(y._array, x._array.dtype)
        log_x, log_1mx = np.maximum(np.log(a), -100), np.maximum(np.log1p(-a), -100)
        return -(t * log_x + (1 - t) * log_1mx)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        x, y = ctx.saved_tensors
        nx, ny = ctx.needs_input_grad
        gx = g * (x - y) / (x * (1 - x)).clamp(min=1e-12) if nx else None
        gy = g * ((-x).log1p().clamp(min=-100) - x.log().clamp(min=-100)) if ny else None
        return gx, gy
