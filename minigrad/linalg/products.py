"""Products: cross (one node), vecdot, multi_dot (in the cheapest order), matrix_power, and
torch.linalg's spellings of matmul and diagonal, composed of differentiable ops."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..autograd.function import Context, Function, make_tensor
from ..functions import where
from ..ops.shape import wrap_dim
from ..tensor import Tensor
from ._checks import check_matrix, check_tensor
from .solve import inv


def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """The cross product of 3-vectors along ``dim``; batch dims broadcast. Both inputs of
    one dtype, as torch requires (np.cross would promote), and not bool.

    >>> mg.linalg.cross(mg.tensor([1.0, 0.0, 0.0]), mg.tensor([0.0, 1.0, 0.0]))
    tensor([0., 0., 1.])
    """
    check_tensor(input, "linalg.cross", "input")
    check_tensor(other, "linalg.cross", "other")
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if input.dtype != other.dtype:  # torch promotes nothing here
        raise RuntimeError(f"linalg.cross: expected both inputs of one dtype, but found "
                           f"{input.dtype} and {other.dtype}")
    if input.dtype.kind == "b":
        raise NotImplementedError("\"cross\" not implemented for 'Bool'")
    d = wrap_dim(dim, input.ndim)
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{input.shape[d]} and {other.shape[d]}")
    return _Cross.apply(input, other, d)  # (shapes that do not broadcast: apply's error)


class _Cross(Function):
    """a x b along dim d, one node (it was 16: six slices, six products, three differences
    and a stack, and their backward). The gradients are cross products again, recorded so
    they differentiate: d<g, a x b>/da = b x g, d/db = g x a (b's and a's conjugates for
    complex ones, torch's convention: the product is bilinear); the engine sums broadcast
    dims back."""

    _numpy_forward = True

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any, d: int) -> np.ndarray:
        ctx.save_for_backward(a, b)
        ctx.d = d
        return _cross_arrays(a._array, b._array, d)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        a, b = ctx.saved_tensors
        na, nb = ctx.needs_input_grad[:2]
        ga = _Cross.apply(b.conj() if b.dtype.kind == "c" else b, g, ctx.d) if na else None
        gb = _Cross.apply(g, a.conj() if a.dtype.kind == "c" else a, ctx.d) if nb else None
        return ga, gb, None


def _cross_arrays(x: np.ndarray, y: np.ndarray, d: int) -> np.ndarray:
    """x x y along dim d, broadcast, into a new C-contiguous array: each component as
    x_i y_j - x_j y_i, the products and difference rounded as the composite's ops did."""
    shape = np.broadcast_shapes(x.shape, y.shape)
    out = np.empty(shape, x.dtype)
    o, x, y = np.moveaxis(out, d, -1), np.moveaxis(x, d, -1), np.moveaxis(y, d, -1)
    for k, (i, j) in enumerate(((1, 2), (2, 0), (0, 1))):
        np.multiply(x[..., i], y[..., j], out=o[..., k])
        o[..., k] -= x[..., j] * y[..., i]
    return out


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """sum_i conj(x_i) y_i along ``dim`` (the first argument conjugated); batch dims
    broadcast.

    >>> mg.linalg.vecdot(mg.tensor([1j, 2.0]), mg.tensor([1j, 3.0]))
    tensor(7.+0.j)
    """
    check_tensor(x, "linalg.vecdot", "x")
    check_tensor(y, "linalg.vecdot", "y")
    if x.dtype != y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found "
                           f"x of type {x.dtype} and y of type {y.dtype} instead")
    return (x.conj() * y).sum(dim)


def multi_dot(tensors: Sequence[Tensor]) -> Tensor:
    """A_1 @ A_2 @ ... @ A_k in the order of fewest multiplications; the first may be 1-D
    (a row vector) and the last 1-D (a column), as in torch.

    >>> mg.linalg.multi_dot([mg.ones(2, 3), mg.ones(3, 4), mg.ones(4)]).shape
    (2,)
    """
    ts = list(tensors)
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    for i, t in enumerate(ts):
        check_tensor(t, "multi_dot", f"tensors[{i}]")
        if t.dtype != ts[0].dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but "
                               f"tensor 0 is {ts[0].dtype} and tensor {i} {t.dtype}")
    first_vec, last_vec = ts[0].ndim == 1, ts[-1].ndim == 1
    if ts[0].ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got "
                           f"{ts[0].ndim}D")
    if ts[-1].ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got "
                           f"{ts[-1].ndim}D")
    for i, t in enumerate(ts[1:-1], 1):
        if t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    if first_vec:
        ts[0] = ts[0].unsqueeze(0)
    if last_vec:
        ts[-1] = ts[-1].unsqueeze(-1)
    for i in range(len(ts) - 1):
        if ts[i].shape[1] != ts[i + 1].shape[0]:
            raise RuntimeError(
                f"multi_dot(): tensors {i} and {i + 1} with shapes "
                f"{list(tensors[i].shape)} and {list(tensors[i + 1].shape)} cannot be "
                "multiplied")
    out = _chain(ts, _order(ts), 0, len(ts) - 1)
    if first_vec:
        out = out.squeeze(0)
    if last_vec:
        out = out.squeeze(-1)
    return out


def _order(ts: list[Tensor]) -> np.ndarray:
    """split[i, j]: where the cheapest product of ts[i..j] splits (the classic chain DP)."""
    dims = [ts[0].shape[0]] + [t.shape[1] for t in ts]
    k = len(ts)
    cost = np.zeros((k, k))
    split = np.zeros((k, k), dtype=np.int64)
    for length in range(1, k):
        for i in range(k - length):
            j = i + length
            best = None
            for s in range(i, j):
                c = cost[i, s] + cost[s + 1, j] + dims[i] * dims[s + 1] * dims[j + 1]
                if best is None or c < best:
                    best, split[i, j] = c, s
            cost[i, j] = best
    return split


def _chain(ts: list[Tensor], split: np.ndarray, i: int, j: int) -> Tensor:
    if i == j:
        return ts[i]
    s = int(split[i, j])
    return _chain(ts, split, i, s) @ _chain(ts, split, s + 1, j)


def matrix_power(A: Tensor, n: int) -> Tensor:
    """A^n by repeated squaring for square A (*, m, m); n = 0 gives the identity, n < 0 the
    power of inv(A) (singular A raises).

    >>> mg.linalg.matrix_power(mg.tensor([[1.0, 1.0], [0.0, 1.0]]), 3)
    tensor([[1., 3.],
            [0., 1.]])
    """
    check_tensor(A, "linalg.matrix_power")
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 "
                           "dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but "
                           f"they are {A.shape[-2]} by {A.shape[-1]} matrices")
    if not isinstance(n, (int, np.integer)):
        raise TypeError(f"linalg.matrix_power(): argument 'n' must be int, not "
                        f"{type(n).__name__}")
    if n == 0:  # I, a function of A with a zero gradient (a NaN in A stays out), as torch
        eye = np.broadcast_to(np.eye(A.shape[-1], dtype=A.dtype), A.shape)
        return where(make_tensor(np.zeros(A.shape, bool)), A, make_tensor(eye.copy()))
    if n < 0:
        check_matrix(A, "linalg.matrix_power", square=True, complex_ok=True)
        A, n = inv(A), -n
    out: Tensor | None = None
    base = A
    while n:
        if n & 1:
            out = base if out is None else out @ base
        n >>= 1
        if n:
            base = base @ base
    assert out is not None  # n >= 1 here: its lowest set bit set out
    return out


def tensor_cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """torch.cross: linalg.cross along ``dim``, by default the first dim of size 3 (after
    broadcasting), as torch does.

    >>> mg.cross(mg.tensor([[1.0, 0.0, 0.0]]), mg.tensor([[0.0, 1.0, 0.0]]))
    tensor([[0., 0., 1.]])
    """
    if dim is None:
        shape = np.broadcast_shapes(tuple(input.shape), tuple(other.shape))
        sizes = [d for d, s in enumerate(shape) if s == 3]
        if not sizes:
            raise RuntimeError(f"no dimension of size 3 in input (shape {list(shape)})")
        dim = sizes[0]
    return cross(input, other, dim=dim)


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """torch.linalg.matmul: mg.matmul under its linalg name.

    >>> mg.linalg.matmul(mg.eye(2), mg.tensor([[1.0], [2.0]])).shape
    (2, 1)
    """
    return input.matmul(other)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """torch.linalg.diagonal: Tensor.diagonal with the matrix dims (-2, -1) by default.

    >>> mg.linalg.diagonal(mg.tensor([[[1.0, 2.0], [3.0, 4.0]]]))
    tensor([[1., 4.]])
    """
    return A.diagonal(offset, dim1, dim2)
