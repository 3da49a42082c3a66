"""vector_norm with every ord torch accepts, and norm, which dispatches between vector and
matrix norms as torch.linalg.norm does."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..autograd.function import make_tensor
from ..ops.reduce import norm_dims
from ..tensor import Tensor
from ._checks import check_tensor, norm_input
from .norms import matrix_norm

_INF = float("inf")


def vector_norm(x: Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False, *,
                dtype: Any = None) -> Tensor:
    """The vector ord-norm over ``dim`` (all dims by default): (sum |x|^ord)^(1/ord), max|x|
    for inf, min|x| for -inf, the count of nonzeros for 0.

    >>> mg.linalg.vector_norm(mg.tensor([3.0, -4.0]))
    tensor(5.)
    """
    check_tensor(x, "linalg.vector_norm", "x")
    if isinstance(ord, (str, bool)) or not isinstance(ord, (int, float, np.number)):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' must be Number, not "
                        f"{type(ord).__name__}")
    x = norm_input(x, dtype, "linalg.vector_norm")
    if x._array.dtype.kind == "c":  # the norm of the moduli, real
        return vector_norm(x.abs(), ord, dim, keepdim)
    ord = float(ord)
    dims = norm_dims(dim, x.ndim)
    if x.numel() == 0 and (ord < 0 or math.isinf(ord)):
        if not dims or any(x.shape[d] == 0 for d in dims):
            raise RuntimeError(f"linalg.vector_norm cannot compute the {_fmt(ord)} norm on an "
                               "empty tensor because the operation does not have an identity")
    if ord == 2:
        return x.norm(2, dims, keepdim)
    if ord == 1:
        return x.abs().sum(dims, keepdim)
    if ord == _INF:
        return x.abs().amax(dims, keepdim)
    if ord == -_INF:
        return x.abs().amin(dims, keepdim)
    if ord == 0:  # piecewise constant: zero gradient everywhere
        count = make_tensor(np.asarray((x._array != 0).sum(axis=dims, keepdims=keepdim), x.dtype))
        return count + (x * 0.0).sum(dims, keepdim)
    # Tensor.norm's p-norm: one implementation, which refuses the infinite slope of
    # 0 < p < 1 at a zero entry rather than returning torch's 0 there
    return x.norm(ord, dims, keepdim)


def _fmt(ord: float) -> str:
    if math.isinf(ord):
        return "inf" if ord > 0 else "-inf"
    return str(int(ord)) if ord == int(ord) else str(ord)


def norm(A: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *,
         dtype: Any = None) -> Tensor:
    """torch.linalg.norm: a vector norm over one dim (or, with ord None and no dim, over all
    of them), a matrix norm over two (or, with ord given and no dim, of a 2-D A).

    >>> mg.linalg.norm(mg.tensor([[3.0, 0.0], [0.0, 4.0]]))
    tensor(5.)
    """
    check_tensor(A, "linalg.norm")
    if dim is None and ord is not None and A.ndim > 2:
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must "
                           f"be 1D or 2D. Got {A.ndim}D.")
    if isinstance(ord, str):  # torch: a string order always means a matrix norm
        return matrix_norm(A, ord, (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
    if dim is not None:
        dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
        if len(dims) == 1 or (len(dims) == 2 and ord is None):  # 'fro' is the entries' 2-norm
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        if len(dims) == 2:
            return matrix_norm(A, ord, dims, keepdim, dtype=dtype)
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. "
                           f"Got {list(dims)}")
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
