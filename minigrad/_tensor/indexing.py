"""Indexing: ``t[i]`` and ``t[i] = v``, gather, index_select, and the diagonal and triangle
methods."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._dims import wrap_dim
from ..autograd import function, views
from ..autograd.function import is_tensor
from ..ops import arith, shape

if TYPE_CHECKING:
    from ..tensor import Tensor


class IndexingMethods:
    """The indexing methods of Tensor (mixed into it by tensor.py)."""

    def __setitem__(self, index: Any, value: Any) -> None:
        idx = shape.normalize_index(index)
        if not is_tensor(value):
            value = function.tensor_class(np.asarray(value, dtype=self._array.dtype))
        views.inplace(self, lambda s: shape.SetItem.apply(s, value.to(self.dtype), idx), (value,))

    def __getitem__(self, index: Any) -> Tensor:
        idx = shape.normalize_index(index)
        out = shape.GetItem.apply(self, idx)
        if shape.is_basic(idx):
            return views.view(self, out, lambda b: shape.GetItem.apply(b, idx))
        return out

    def gather(self, dim: int, index: Tensor) -> Tensor:
        """Pick along ``dim``: out[i][j] = self[index[i][j]][j] for dim 0 (and so on); the
        gradient is added back where it was picked, repeats accumulating.

        >>> mg.tensor([[1., 2.], [3., 4.]]).gather(1, mg.tensor([[1], [0]])).tolist()
        [[2.0], [3.0]]
        """
        d = wrap_dim(dim, self.ndim)
        idx = _index_array(index, "gather")
        if self.ndim == 0:
            return self.reshape(1).gather(0, function.make_tensor(idx.reshape(1))).reshape(())
        if idx.ndim != self.ndim:
            raise RuntimeError("Index tensor must have the same number of dimensions as input "
                               "tensor")
        for i, (n, m) in enumerate(zip(idx.shape, self.shape)):
            if i != d and n > m:
                raise RuntimeError(f"Size does not match at dimension {i} expected index "
                                   f"{list(idx.shape)} to be no larger than self "
                                   f"{list(self.shape)} apart from dimension {d}")
        _check_bounds(idx, self.shape[d], d)
        grid = np.ix_(*[np.arange(n) for n in idx.shape])  # the other dims, as an open mesh
        return shape.GetItem.apply(self, tuple(idx if i == d else g for i, g in enumerate(grid)))

    def index_select(self, dim: int, index: Tensor) -> Tensor:
        """The entries ``index`` (a 1-D integer tensor) along ``dim``; repeats accumulate in
        the gradient."""
        d = wrap_dim(dim, self.ndim)
        idx = _index_array(index, "index_select").reshape(-1)
        _check_bounds(idx, self.shape[d] if self.ndim else 1, d)
        if self.ndim == 0:
            return self.reshape(1)[idx].reshape(idx.shape if index.ndim else ())
        return shape.GetItem.apply(self, (slice(None),) * d + (idx,))

    def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
        """The diagonal ``offset`` of dims (dim1, dim2), as a last dim: a view, as in torch.

        >>> m = mg.zeros(2, 2); _ = m.diagonal().fill_(1.0); m.tolist()
        [[1.0, 0.0], [0.0, 1.0]]
        """
        args = (offset, wrap_dim(dim1, self.ndim), wrap_dim(dim2, self.ndim))
        return views.view(self, shape.Diagonal.apply(self, *args),
                          lambda b: shape.Diagonal.apply(b, *args))

    def diag_embed(self, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
        n = self.ndim + 1
        return shape.DiagEmbed.apply(self, offset, wrap_dim(dim1, n), wrap_dim(dim2, n))

    def diag(self, diagonal: int = 0) -> Tensor:
        """1-D -> square matrix with it on a diagonal; 2-D -> that diagonal (torch.diag)."""
        if self.ndim == 1:
            return self.diag_embed(diagonal)
        if self.ndim == 2:
            return self.diagonal(diagonal).clone()  # a copy, as torch.diag's
        raise RuntimeError(f"diag expects a 1-D or 2-D tensor, got {self.ndim}-D")

    def tril(self, diagonal: int = 0) -> Tensor:
        _check_matrix(self, "tril")
        mask = np.tri(*self.shape[-2:], k=diagonal, dtype=bool)
        return arith.Where.apply(function.make_tensor(mask), self, 0)

    def triu(self, diagonal: int = 0) -> Tensor:
        _check_matrix(self, "triu")
        mask = ~np.tri(*self.shape[-2:], k=diagonal - 1, dtype=bool)
        return arith.Where.apply(function.make_tensor(mask), self, 0)

    def trace(self) -> Tensor:
        if self.ndim != 2:
            raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {self.ndim}")
        return self.diagonal().sum()


def _check_matrix(x: Tensor, fn: str) -> None:
    if x.ndim < 2:  # numpy would broadcast a 1-D tensor against a 2-D mask
        raise RuntimeError(f"{fn}: input tensor must have at least 2 dimensions")


def _index_array(index: Any, fn: str) -> np.ndarray:
    idx = np.asarray(index._array if is_tensor(index) else index)
    if idx.dtype.kind not in "iu":
        raise RuntimeError(f"{fn}(): Expected dtype int64 for index, got {idx.dtype}")
    return idx


def _check_bounds(idx: np.ndarray, size: int, dim: int) -> None:
    """torch refuses negative or too large indices here, where numpy would wrap or raise."""
    bad = idx[(idx < 0) | (idx >= size)]
    if bad.size:
        raise IndexError(f"index {bad.flat[0]} is out of bounds for dimension {dim} with size "
                         f"{size}")
