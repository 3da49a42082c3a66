"""Indexing: ``t[i]`` and ``t[i] = v``, gather and index_select, their adjoints the scatters
(scatter, scatter_add, scatter_reduce, index_add, index_copy, index_fill, with their in-place
forms), the flat selections (nonzero, masked_select, take, take_along_dim), and the diagonal
and triangle methods.

The scatters are the SetItem and IndexAdd ops, whose adjoints are gathers: everything here
differentiates to any order."""

# mypy: disable-error-code="misc"
# (The methods take self as the Tensor they are mixed into, which mypy's check that a
# self annotation is a supertype of its class, error code misc, would refuse.)

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from .._dims import numpy_dims, wrap_dim
from ..autograd import function, views
from ..autograd.function import forward_only, is_tensor, make_tensor
from ..autograd.grad_mode import _state
from ..dtypes import Number
from ..ops import arith, scatter_reduce, shape
from ._operand import fill_value, int_array, long_index
from .elementwise import bool_mask

if TYPE_CHECKING:
    from ..tensor import Tensor


class IndexingMethods:
    """The indexing methods of Tensor (mixed into it by tensor.py)."""

    def __setitem__(self: Tensor, index: Any, value: Any) -> None:
        idx = shape.normalize_index(index)
        if not is_tensor(value):
            value = function.tensor_class(np.asarray(fill_value(value, self._array.dtype),
                                                     dtype=self._array.dtype))
        views.inplace(self, lambda s: shape.SetItem.apply(s, value.to(self.dtype), idx), (value,))

    def __getitem__(self: Tensor, index: Any) -> Tensor:
        if shape.plain(index):  # ints and slices: nothing to normalize, a view
            idx = index
        else:
            idx = shape.normalize_index(index)
            if not shape.is_basic(idx):
                return shape.GetItem.apply(self, idx)
        # a view (x[0], x[:, 1:]), made often and seldom recorded: GetItem's forward alone then
        out = shape.GetItem.apply(self, idx) if self.requires_grad and _state.enabled else \
            forward_only(shape.GetItem, self, idx)
        return views.view(self, out, lambda b: shape.GetItem.apply(b, idx))

    def gather(self: Tensor, dim: int, index: Tensor) -> Tensor:
        """Pick along ``dim``: out[i][j] = self[index[i][j]][j] for dim 0 (and so on); the
        gradient is added back where it was picked, repeats accumulating.

        >>> mg.tensor([[1., 2.], [3., 4.]]).gather(1, mg.tensor([[1], [0]])).tolist()
        [[2.0], [3.0]]
        """
        d = wrap_dim(dim, self.ndim)
        idx = _index_array(index, "gather")
        if self.ndim == 0:
            return self.reshape(1).gather(0, make_tensor(idx.reshape(1))).reshape(())
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

    def index_select(self: Tensor, dim: int, index: Tensor) -> Tensor:
        """The entries ``index`` (a 1-D integer tensor) along ``dim``; repeats accumulate in
        the gradient."""
        d = wrap_dim(dim, self.ndim)
        idx = _index_array(index, "index_select").reshape(-1)
        _check_bounds(idx, self.shape[d] if self.ndim else 1, d)
        if self.ndim == 0:
            return self.reshape(1)[idx].reshape(idx.shape if index.ndim else ())
        return shape.GetItem.apply(self, (slice(None),) * d + (idx,))

    def diagonal(self: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
        """The diagonal ``offset`` of dims (dim1, dim2), as a last dim: a view, as in torch.

        >>> m = mg.zeros(2, 2); _ = m.diagonal().fill_(1.0); m.tolist()
        [[1.0, 0.0], [0.0, 1.0]]
        """
        args = (offset, wrap_dim(dim1, self.ndim), wrap_dim(dim2, self.ndim))
        return views.view(self, shape.Diagonal.apply(self, *args),
                          lambda b: shape.Diagonal.apply(b, *args))

    def diag_embed(self: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
        n = self.ndim + 1
        return shape.DiagEmbed.apply(self, offset, wrap_dim(dim1, n), wrap_dim(dim2, n))

    def diag(self: Tensor, diagonal: int = 0) -> Tensor:
        """1-D -> square matrix with it on a diagonal; 2-D -> that diagonal (torch.diag)."""
        if self.ndim == 1:
            if self.requires_grad and _state.enabled:
                return self.diag_embed(diagonal)
            return make_tensor(np.diag(self._array, diagonal))  # nothing records
        if self.ndim == 2:
            return self.diagonal(diagonal).clone()  # a copy, as torch.diag's
        raise RuntimeError(f"diag expects a 1-D or 2-D tensor, got {self.ndim}-D")

    def tril(self: Tensor, diagonal: int = 0) -> Tensor:
        """The entries on and below the ``diagonal``-th diagonal, zeros above, in self's dtype
        (a bool mask stays bool: the causal mask ``ones(n, n, dtype=bool).tril()``).

        >>> mg.ones(2, 2, dtype=mg.bool).tril()
        tensor([[ True, False],
                [ True,  True]])
        """
        _check_matrix(self, "tril")
        rows, cols = self.shape[-2:]
        mask = np.tri(rows, cols, k=diagonal, dtype=bool)
        return arith.Where.apply(make_tensor(mask), self, _zero(self))

    def triu(self: Tensor, diagonal: int = 0) -> Tensor:
        _check_matrix(self, "triu")
        rows, cols = self.shape[-2:]
        mask = ~np.tri(rows, cols, k=diagonal - 1, dtype=bool)
        return arith.Where.apply(make_tensor(mask), self, _zero(self))

    def trace(self: Tensor) -> Tensor:
        if self.ndim != 2:
            raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {self.ndim}")
        return self.diagonal().sum()

    def scatter(self: Tensor, dim: int, index: Tensor, src: Any = None, *,
                value: Number | None = None, reduce: str | None = None) -> Tensor:
        """A copy with ``src[i][j]`` written at ``[index[i][j]][j]`` (for dim 0, and so on);
        ``src`` may be a number. Duplicate indices keep one of the values; torch's older
        ``reduce="add"`` / ``"multiply"`` folds them in instead (scatter_reduce's sum / prod).

        >>> mg.zeros(3).scatter(0, mg.tensor([0, 0]), 1.0, reduce="add")
        tensor([2., 0., 0.])
        """
        if src is None:
            src = value
        if reduce is not None:
            how = {"add": "sum", "multiply": "prod"}.get(reduce)
            if how is None:
                raise RuntimeError(f"reduce argument must be either add or multiply, got "
                                   f"{reduce}")
            if not is_tensor(src):  # a number, at every index
                src = self.new_full(tuple(index.shape), src)
            return self.scatter_reduce(dim, index, src, how)
        d, idx, tup = _scatter_index(self, dim, index, src, "scatter")
        part = _src_part(self, src, idx.shape)
        return shape.SetItem.apply(self, part, tup)

    def scatter_add(self: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
        """A copy with ``src[i][j]`` added at ``[index[i][j]][j]`` (for dim 0); duplicates
        accumulate."""
        d, idx, tup = _scatter_index(self, dim, index, src, "scatter_add")
        return self + shape.IndexAdd.apply(_src_part(self, src, idx.shape), tup, self.shape)

    def scatter_reduce(self: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                       include_self: bool = True) -> Tensor:
        """A copy with ``src[i][j]`` folded in at ``[index[i][j]][j]`` (for dim 0) by
        ``reduce``: "sum", "prod", "mean", "amax" or "amin"; with ``include_self=False`` the
        places written to start from src alone.

        >>> x = mg.tensor([1.0, 2.0, 3.0])
        >>> x.scatter_reduce(0, mg.tensor([0, 0, 2]), mg.tensor([5.0, 6.0, 7.0]), "amax")
        tensor([6., 2., 7.])
        """
        if reduce not in ("sum", "prod", "mean", "amax", "amin"):
            raise RuntimeError("reduce argument must be either sum, prod, mean, amax or amin, "
                               f"got {reduce}")
        if not is_tensor(src):
            raise TypeError(f"scatter_reduce(): argument 'src' (position 3) must be Tensor, "
                            f"not {type(src).__name__}")
        d, idx, tup = _scatter_index(self, dim, index, src, "scatter")
        part = _src_part(self, src, idx.shape)
        return scatter_reduce.ScatterReduce.apply(self, part, tup, reduce, bool(include_self))

    def scatter_reduce_(self: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                        include_self: bool = True) -> Tensor:
        return views.inplace(self, lambda s: s.scatter_reduce(
            dim, index, src, reduce, include_self=include_self), (src,))

    def index_add(self: Tensor, dim: int, index: Tensor, source: Tensor, *,
                  alpha: Number = 1) -> Tensor:
        """A copy with ``alpha * source`` added at the entries ``index`` along ``dim``."""
        d, tup = _index_along(self, dim, index, source, "index_add")
        src = source if alpha == 1 else source * alpha
        return self + shape.IndexAdd.apply(src.to(self.dtype), tup, self.shape)

    def index_copy(self: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
        """A copy with ``source`` written at the entries ``index`` along ``dim``."""
        d, tup = _index_along(self, dim, index, source, "index_copy")
        return shape.SetItem.apply(self, source.to(self.dtype), tup)

    def scatter_(self: Tensor, dim: int, index: Tensor, src: Any = None, *,
                 value: Number | None = None, reduce: str | None = None) -> Tensor:
        return views.inplace(self, lambda s: s.scatter(dim, index, src, value=value,
                                                       reduce=reduce), (src,))

    def scatter_add_(self: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
        return views.inplace(self, lambda s: s.scatter_add(dim, index, src), (src,))

    def index_add_(self: Tensor, dim: int, index: Tensor, source: Tensor, *,
                   alpha: Number = 1) -> Tensor:
        return views.inplace(self, lambda s: s.index_add(dim, index, source, alpha=alpha),
                             (source,))

    def index_copy_(self: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
        return views.inplace(self, lambda s: s.index_copy(dim, index, source), (source,))

    def index_fill(self: Tensor, dim: int, index: Tensor, value: Number | Tensor) -> Tensor:
        """A copy with ``value`` at the entries ``index`` along ``dim``."""
        d = wrap_dim(dim, self.ndim)
        idx = int_array(index, "index_fill").reshape(-1)
        mask = np.zeros(self.shape[d] if self.ndim else 1, bool)
        mask[idx] = True
        shape_ = [1] * self.ndim
        if self.ndim:
            shape_[d] = self.shape[d]
        return self.masked_fill(make_tensor(mask.reshape(shape_)), value)

    def index_fill_(self: Tensor, dim: int, index: Tensor, value: Number | Tensor) -> Tensor:
        return views.inplace(self, lambda s: s.index_fill(dim, index, value), (value,))

    @overload
    def nonzero(self: Tensor, *, as_tuple: Literal[False] = False) -> Tensor: ...

    @overload
    def nonzero(self: Tensor, *, as_tuple: Literal[True]) -> tuple[Tensor, ...]: ...

    def nonzero(self: Tensor, *, as_tuple: bool = False) -> Tensor | tuple[Tensor, ...]:
        """The indices of the non-zero entries: an (n, ndim) int64 tensor, or one 1-D tensor
        per dim with ``as_tuple``."""
        x = self._array
        if as_tuple:
            hits = np.nonzero(x.reshape(1) if x.ndim == 0 else x)
            return tuple(make_tensor(h.astype(np.int64)) for h in hits)
        return make_tensor(np.argwhere(x).astype(np.int64))

    def argwhere(self: Tensor) -> Tensor:
        return self.nonzero()

    def masked_select(self: Tensor, mask: Tensor) -> Tensor:
        """The entries where ``mask`` (broadcast with self) holds, as a 1-D tensor."""
        m = bool_mask(mask)
        full = np.broadcast_shapes(self.shape, m.shape)
        x = self.expand(full) if self.shape != full else self
        return x[np.broadcast_to(m._array, full)]

    def take(self: Tensor, index: Tensor) -> Tensor:
        """self treated as 1-D, at ``index`` (any shape; negative counts from the end)."""
        idx = long_index(index, "take")
        n = self.numel()
        bad = idx[(idx < -n) | (idx >= n)]
        if bad.size:
            raise IndexError(f"out of range: tried to access index {bad.flat[0]} on a tensor of "
                             f"{n} elements.")
        return self.reshape(-1)[idx]

    @numpy_dims
    def take_along_dim(self: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
        """gather with broadcasting: the entries at ``indices`` along ``dim`` (of the flattened
        tensor when None)."""
        idx = long_index(indices, "take_along_dim")
        n = self.numel() if dim is None else self.shape[wrap_dim(dim, self.ndim)]
        bad = idx[(idx < 0) | (idx >= n)]
        if bad.size:
            raise RuntimeError(f"index {bad.flat[0]} is out of bounds for dimension "
                               f"{0 if dim is None else wrap_dim(dim, self.ndim)} with size {n}")
        if dim is None:
            return self.reshape(-1).gather(0, make_tensor(idx.reshape(-1)))
        d = wrap_dim(dim, self.ndim)
        if idx.ndim != self.ndim:
            raise RuntimeError("torch.take_along_dim(): input and indices should have the same "
                               f"number of dimensions, but got {self.ndim} dimensions for input, "
                               f"and {idx.ndim} dimensions for indices")
        lead = [max(a, b) for a, b in zip(self.shape, idx.shape)]
        xs, ys = list(lead), list(lead)
        xs[d], ys[d] = self.shape[d], idx.shape[d]
        x = self.expand(tuple(xs)) if tuple(xs) != self.shape else self
        return x.gather(d, make_tensor(np.broadcast_to(idx, tuple(ys))))


def _zero(x: Tensor) -> Any:
    """A zero that keeps x's dtype beside it in where (a Python 0 would make bool int64)."""
    return False if x._array.dtype == np.bool_ else 0


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


def _scatter_index(x: Tensor, dim: int, index: Tensor, src: Any, fn: str) -> tuple:
    """The dim, the index array and the advanced index (index along dim, a grid elsewhere)
    for scatter-like ops, after torch's checks."""
    d = wrap_dim(dim, x.ndim)
    idx = int_array(index, fn)
    if idx.ndim != x.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as self "
                           "tensor")
    if is_tensor(src):
        if src.ndim != idx.ndim:
            raise RuntimeError("Index tensor must have the same number of dimensions as src "
                               "tensor")
        if src.dtype != x.dtype:
            raise RuntimeError(f"{fn}(): Expected self.dtype to be equal to src.dtype")
    for i, n in enumerate(idx.shape):
        if (i != d and n > x.shape[i]) or (is_tensor(src) and n > src.shape[i]):
            raise RuntimeError(f"Size does not match at dimension {i} expected index "
                               f"{list(idx.shape)} to be smaller than self {list(x.shape)} "
                               f"apart from dimension {d}")
    size = x.shape[d] if x.ndim else 1  # torch reads a 0-d self as one entry
    bad = idx[(idx < 0) | (idx >= size)]
    if bad.size:
        raise RuntimeError(f"index {bad.flat[0]} is out of bounds for dimension {d} with size "
                           f"{size}")
    grid = np.ix_(*[np.arange(n) for n in idx.shape])
    return d, idx, tuple(idx if i == d else g for i, g in enumerate(grid))


def _src_part(x: Tensor, src: Any, shape_: tuple[int, ...]) -> Tensor:
    """The leading ``shape_`` block of ``src`` (torch reads only that much), or the number
    ``src`` filled to ``shape_``."""
    if not is_tensor(src):
        return make_tensor(np.full(shape_, src, x.dtype))
    return src[tuple(slice(0, n) for n in shape_)] if src.shape != shape_ else src


def _index_along(x: Tensor, dim: int, index: Tensor, source: Tensor, fn: str) -> tuple:
    d = wrap_dim(dim, x.ndim)
    idx = int_array(index, fn)
    if idx.ndim > 1:
        raise IndexError(f"{fn}_(): Index is supposed to be a vector")
    idx = idx.reshape(-1)
    want = x.shape[:d] + (idx.size,) + x.shape[d + 1:] if x.ndim else (idx.size,)
    if tuple(source.shape) != want and not (x.ndim == 0 and source.numel() == idx.size):
        raise RuntimeError(f"{fn}_(): Source/destination tensor must have same slice shapes. "
                           f"Destination slice shape: {list(x.shape)} at dimension {d} and "
                           f"source slice shape: {list(source.shape)} at dimension {d}.")
    n = x.shape[d] if x.ndim else 1
    bad = idx[(idx < -n) | (idx >= n)]
    if bad.size:
        raise IndexError(f"index out of range in self: {bad.flat[0]}")
    return d, (slice(None),) * d + (idx % max(n, 1),)
