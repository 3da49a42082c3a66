"""Functions of several tensors that have no method form: the stacks (hstack, vstack ...),
atleast_nd, meshgrid and cartesian_prod, block_diag, cdist, the triangle index pairs, and
std_mean / var_mean. All are compositions of differentiable ops."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import dtypes
from ._dims import legacy_unbiased, numpy_dims
from .autograd import function
from .autograd.function import make_tensor
from .ops import shape
from .tensor import Tensor


def _join(tensors: Sequence[Tensor], dim: int, fn: str) -> Tensor:
    ts = list(tensors)
    if not ts:
        raise RuntimeError(f"{fn} expects a non-empty TensorList")
    from .functions import cat  # functions binds these names in turn

    return cat(ts, dim)


def atleast_1d(*tensors: Any) -> Tensor | tuple[Tensor, ...]:
    """Each tensor with at least one dim (0-d becomes shape (1,))."""
    return _atleast(tensors, 1)


def atleast_2d(*tensors: Any) -> Tensor | tuple[Tensor, ...]:
    """Each tensor with at least two dims: (n,) becomes (1, n)."""
    return _atleast(tensors, 2)


def atleast_3d(*tensors: Any) -> Tensor | tuple[Tensor, ...]:
    """Each tensor with at least three dims: (n,) becomes (1, n, 1), (m, n) (m, n, 1)."""
    return _atleast(tensors, 3)


def _atleast(tensors: tuple, n: int) -> Tensor | tuple[Tensor, ...]:
    ts = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors
    out = tuple(_lift(t, n) for t in ts)
    return out[0] if len(tensors) == 1 and not isinstance(tensors[0], (list, tuple)) else out


def _lift(t: Tensor, n: int) -> Tensor:
    if t.ndim >= n:
        return t
    if n == 1 or t.ndim == 0:
        return t.reshape((1,) * n)
    if n == 2 or t.ndim == 2:  # (k,) -> (1, k) [-> (1, k, 1)]; (m, k) -> (m, k, 1)
        t = t.unsqueeze(0) if t.ndim == 1 else t
        return t if n == 2 else t.unsqueeze(-1)
    return t.reshape(1, -1, 1)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join along dim 1 (dim 0 for 1-D tensors).

    >>> mg.hstack([mg.tensor([1, 2]), mg.tensor([3])]).tolist()
    [1, 2, 3]
    """
    ts = atleast_1d(list(tensors))
    return _join(ts, 0 if ts and ts[0].ndim == 1 else 1, "hstack")


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join along dim 0, 1-D tensors taken as rows."""
    return _join(atleast_2d(list(tensors)), 0, "vstack")


row_stack = vstack


def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join along dim 2 (depth), after atleast_3d."""
    return _join(atleast_3d(list(tensors)), 2, "dstack")


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """1-D (and 0-d) tensors as columns, 2-D ones as they are, joined along dim 1."""
    cols = [t.reshape(-1, 1) if t.ndim < 2 else t for t in tensors]
    return _join(cols, 1, "column_stack")


def meshgrid(*tensors: Any, indexing: str | None = None) -> tuple[Tensor, ...]:
    """Coordinate grids from 1-D tensors: ``indexing='ij'`` (the default, with torch's
    warning when not given) or ``'xy'`` (the first two dims swapped, as numpy's default).

    >>> [g.tolist() for g in mg.meshgrid(mg.tensor([1, 2]), mg.tensor([3]), indexing="ij")]
    [[[1], [2]], [[3], [3]]]
    """
    ts = list(tensors[0]) if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) \
        else list(tensors)
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    if any(t.ndim > 1 for t in ts):
        raise RuntimeError("torch.meshgrid: Expected 0D or 1D tensor in the tensor list")
    ts = [t.reshape(-1) for t in ts]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    sizes = tuple(t.shape[0] for t in ts)
    grids = [t.reshape(tuple(-1 if i == k else 1 for i in range(len(ts)))).expand(sizes)
             for k, t in enumerate(ts)]
    if swap:  # 'xy' is 'ij' on (b, a, ...), its first two grids swapped back
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """All tuples (a, b, ...) of entries of the 1-D tensors, in row-major order: an
    (n_a n_b ..., k) tensor (1-D for one input)."""
    if len(tensors) == 1:
        return tensors[0]
    from .functions import stack

    return stack([g.reshape(-1) for g in meshgrid(*tensors, indexing="ij")], 1)


def block_diag(*tensors: Tensor) -> Tensor:
    """The tensors (0-, 1- or 2-D) as blocks on the diagonal of a zero matrix."""
    blocks = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {t.ndim} dimensions")
        blocks.append(t.reshape(1, -1) if t.ndim < 2 else t)
    if not blocks:
        return make_tensor(np.zeros((1, 0), dtypes.DEFAULT_FLOAT))
    from .functions import cat

    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        pad_l = make_tensor(np.zeros((b.shape[0], left), b.dtype))
        pad_r = make_tensor(np.zeros((b.shape[0], width - left - b.shape[1]), b.dtype))
        rows.append(shape.Cat.apply(1, pad_l, b, pad_r))
        left += b.shape[1]
    return cat(rows, 0)


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """Pairwise p-norm distances between the rows of x1 (..., P, M) and x2 (..., R, M):
    (..., P, R). The gradient of a zero distance is 0 (a subgradient).

    >>> mg.cdist(mg.tensor([[0.0, 0.0]]), mg.tensor([[3.0, 4.0]])).tolist()
    [[5.0]]
    """
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return diff.norm(p, dim=-1)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """The p-norm distances between the rows of input (N, M), pairs i < j in row-major
    order: (N (N - 1) / 2,), as torch.pdist; a zero distance's gradient is 0.

    >>> mg.pdist(mg.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]]))
    tensor([5.       , 1.       , 4.2426405])
    """
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    i, j = np.triu_indices(input.shape[0], 1)
    return (input[i] - input[j]).norm(p, dim=-1)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None) -> Tensor:
    """The (2, n) row and column indices of the lower triangle of a row x col matrix, in
    row-major order."""
    r, c = np.tril_indices(row, offset, col)
    return function.tensor_class(np.stack([r, c]), dtype or np.int64)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None) -> Tensor:
    """The (2, n) indices of the upper triangle, in row-major order."""
    r, c = np.triu_indices(row, offset, col)
    return function.tensor_class(np.stack([r, c]), dtype or np.int64)


@numpy_dims
def std_mean(input: Tensor, dim: Any = None, *, correction: int = 1, keepdim: bool = False,
             unbiased: bool | None = None) -> tuple[Tensor, Tensor]:
    """(std, mean) over ``dim`` in one call, as torch.std_mean."""
    v, m = var_mean(input, dim, correction=correction, keepdim=keepdim, unbiased=unbiased)
    return v.sqrt(), m


@numpy_dims
def var_mean(input: Tensor, dim: Any = None, *, correction: int = 1, keepdim: bool = False,
             unbiased: bool | None = None) -> tuple[Tensor, Tensor]:
    """(var, mean) over ``dim`` in one call, as torch.var_mean."""
    dim, unbiased = legacy_unbiased(dim, unbiased)
    return input.var(dim, correction, keepdim, unbiased), input.mean(dim, keepdim)

