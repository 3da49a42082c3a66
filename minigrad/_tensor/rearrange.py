"""Rearranging and scattering as Tensor methods: repeat_interleave, roll, rot90, tile,
narrow, movedim, unfold, and scatter / scatter_add / index_add / index_copy (with their
in-place forms).

The rearrangements are index_select, flip and permute with index arrays numpy computes;
the scatters are the SetItem and IndexAdd ops, whose adjoints are gathers: so everything
here differentiates to any order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._dims import shape_arg, wrap_dim
from ..autograd import function, views
from ..autograd.function import is_tensor
from ..dtypes import Number
from ..ops import scatter_reduce, shape

if TYPE_CHECKING:
    from ..tensor import Tensor


class RearrangeMethods:
    """The rearranging and scattering methods of Tensor (mixed into it by tensor.py)."""

    def repeat_interleave(self, repeats: int | Tensor | None = None, dim: int | None = None, *,
                          output_size: int | None = None) -> Tensor:
        """Each entry repeated ``repeats`` times (an int, or one count per entry) along
        ``dim``, of the flattened tensor when None; ``mg.repeat_interleave(counts)`` alone
        repeats each index i counts[i] times.

        >>> mg.tensor([1, 2]).repeat_interleave(2).tolist()
        [1, 1, 2, 2]
        """
        if repeats is None:  # torch.repeat_interleave(repeats): self holds the counts
            counts = _int_array(self, "repeat_interleave")
            return function.make_tensor(np.arange(counts.size, dtype=np.int64)).\
                repeat_interleave(self, 0)
        x = self.reshape(-1) if dim is None else self
        d = 0 if dim is None else wrap_dim(dim, x.ndim)
        n = x.shape[d] if x.ndim else 1
        reps = _int_array(repeats, "repeat_interleave") if is_tensor(repeats) else \
            np.asarray(repeats, np.int64)
        if reps.ndim > 1 or (reps.ndim == 1 and reps.size not in (1, n)):
            raise RuntimeError("repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {reps.size} and input.size({d}) = {n}")
        if np.any(reps < 0):
            raise RuntimeError("repeats can not be negative")
        idx = np.repeat(np.arange(n), np.broadcast_to(reps.reshape(-1), (n,)))
        if output_size is not None and output_size != idx.size:
            raise RuntimeError(f"allocated size does not match required size: {output_size} "
                               f"!= {idx.size}")
        return x.index_select(d, function.make_tensor(idx))

    def roll(self, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None
             ) -> Tensor:
        """Entries shifted cyclically by ``shifts`` along ``dims`` (the flattened tensor when
        None)."""
        if dims is None:
            if not isinstance(shifts, int) and len(shifts) != 1:
                raise RuntimeError(f"roll: shifts and dims must align. shifts: {len(shifts)}, "
                                   "dims:0")
            s = shifts if isinstance(shifts, int) else shifts[0]
            return self.reshape(-1).roll(s, 0).reshape(self.shape)
        ss = [shifts] if isinstance(shifts, int) else list(shifts)
        ds = [dims] if isinstance(dims, int) else list(dims)
        if len(ss) != len(ds):
            raise RuntimeError(f"roll: shifts and dims must align. shifts: {len(ss)}, dims:"
                               f"{len(ds)}")
        out = self
        for s, d in zip(ss, ds):
            d = wrap_dim(d, self.ndim)
            idx = np.roll(np.arange(self.shape[d]), s)
            out = out.index_select(d, function.make_tensor(idx))
        return out

    def rot90(self, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
        """Rotated by 90 degrees k times, from the first of ``dims`` towards the second."""
        if len(dims) != 2:
            raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
        if self.ndim < 2:
            raise RuntimeError(f"expected total dims >= 2, but got total dims = {self.ndim}")
        d0, d1 = wrap_dim(dims[0], self.ndim), wrap_dim(dims[1], self.ndim)
        if d0 == d1:
            raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} "
                               f"and dim1 = {d1}")
        k %= 4
        if k == 1:
            return self.flip(d1).transpose(d0, d1)
        if k == 2:
            return self.flip(d0, d1)
        if k == 3:
            return self.flip(d0).transpose(d0, d1)
        return self.clone()

    def tile(self, *dims: Any) -> Tensor:
        """``repeat``, with missing leading counts taken as 1 (numpy's tile)."""
        reps = shape_arg(dims)
        return self.repeat(*((1,) * (self.ndim - len(reps)) + reps))

    def narrow(self, dim: int, start: int, length: int) -> Tensor:
        """The entries start .. start + length - 1 along ``dim`` (a view)."""
        d = wrap_dim(dim, self.ndim)
        n = self.shape[d]
        if not -n <= int(start) <= n:
            raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but "
                             f"got {start})")
        s = int(start) % n if n and start < 0 else int(start)
        if length < 0 or s + length > n:
            raise RuntimeError(f"start ({s}) + length ({length}) exceeds dimension size ({n}).")
        return self[(slice(None),) * d + (slice(s, s + length),)]

    def movedim(self, source: int | Sequence[int], destination: int | Sequence[int]
                ) -> Tensor:
        """The dims ``source`` moved to positions ``destination``, the rest in order."""
        src = [source] if isinstance(source, int) else list(source)
        dst = [destination] if isinstance(destination, int) else list(destination)
        if len(src) != len(dst):
            raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} "
                               f"dims) should contain the same number of dims as destination "
                               f"({dst} dims)")
        src = [wrap_dim(d, self.ndim) for d in src]
        dst = [wrap_dim(d, self.ndim) for d in dst]
        if len(set(src)) != len(src) or len(set(dst)) != len(dst):
            raise RuntimeError("movedim: repeated dim in source or destination")
        order = [d for d in range(self.ndim) if d not in src]
        for to, frm in sorted(zip(dst, src)):
            order.insert(to, frm)
        return self.permute(*order) if self.ndim else self

    moveaxis = movedim

    def unfold(self, dimension: int, size: int, step: int) -> Tensor:
        """All windows of ``size`` entries along ``dimension``, ``step`` apart: that dim
        becomes the window count and a new last dim of ``size`` holds each window.

        >>> mg.arange(5).unfold(0, 2, 2).tolist()
        [[0, 1], [2, 3]]
        """
        d = wrap_dim(dimension, self.ndim)
        n = self.shape[d] if self.ndim else 1
        if size > n:
            raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is "
                               f"{size}")
        if step <= 0:
            raise RuntimeError(f"step is {step} but must be > 0")
        x = self.reshape(1) if self.ndim == 0 else self
        count = (n - size) // step + 1
        idx = (np.arange(count)[:, None] * step + np.arange(size)).reshape(-1)
        out = x.index_select(d, function.make_tensor(idx))
        out = out.reshape(x.shape[:d] + (count, size) + x.shape[d + 1:])
        return out.movedim(d + 1, -1) if self.ndim else out.reshape(count, size).squeeze(0)

    def scatter(self, dim: int, index: Tensor, src: Any = None, *,
                value: Number | None = None) -> Tensor:
        """A copy with ``src[i][j]`` written at ``[index[i][j]][j]`` (for dim 0, and so on);
        ``src`` may be a number. Duplicate indices keep one of the values."""
        if src is None:
            src = value
        d, idx, tup = _scatter_index(self, dim, index, src, "scatter")
        part = _src_part(self, src, idx.shape)
        return shape.SetItem.apply(self, part, tup)

    def scatter_add(self, dim: int, index: Tensor, src: Tensor) -> Tensor:
        """A copy with ``src[i][j]`` added at ``[index[i][j]][j]`` (for dim 0); duplicates
        accumulate."""
        d, idx, tup = _scatter_index(self, dim, index, src, "scatter_add")
        return self + shape.IndexAdd.apply(_src_part(self, src, idx.shape), tup, self.shape)

    def scatter_reduce(self, dim: int, index: Tensor, src: Tensor, reduce: str, *,
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

    def scatter_reduce_(self, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                        include_self: bool = True) -> Tensor:
        return views.inplace(self, lambda s: s.scatter_reduce(
            dim, index, src, reduce, include_self=include_self), (src,))

    def index_add(self, dim: int, index: Tensor, source: Tensor, *,
                  alpha: Number = 1) -> Tensor:
        """A copy with ``alpha * source`` added at the entries ``index`` along ``dim``."""
        d, tup = _index_along(self, dim, index, source, "index_add")
        src = source if alpha == 1 else source * alpha
        return self + shape.IndexAdd.apply(src.to(self.dtype), tup, self.shape)

    def index_copy(self, dim: int, index: Tensor, source: Tensor) -> Tensor:
        """A copy with ``source`` written at the entries ``index`` along ``dim``."""
        d, tup = _index_along(self, dim, index, source, "index_copy")
        return shape.SetItem.apply(self, source.to(self.dtype), tup)

    def scatter_(self, dim: int, index: Tensor, src: Any = None, *,
                 value: Number | None = None) -> Tensor:
        return views.inplace(self, lambda s: s.scatter(dim, index, src, value=value), (src,))

    def scatter_add_(self, dim: int, index: Tensor, src: Tensor) -> Tensor:
        return views.inplace(self, lambda s: s.scatter_add(dim, index, src), (src,))

    def index_add_(self, dim: int, index: Tensor, source: Tensor, *,
                   alpha: Number = 1) -> Tensor:
        return views.inplace(self, lambda s: s.index_add(dim, index, source, alpha=alpha),
                             (source,))

    def index_copy_(self, dim: int, index: Tensor, source: Tensor) -> Tensor:
        return views.inplace(self, lambda s: s.index_copy(dim, index, source), (source,))

    def ravel(self) -> Tensor:
        return self.reshape(-1)

    def swapdims(self, dim0: int, dim1: int) -> Tensor:
        return self.transpose(dim0, dim1)

    def fliplr(self) -> Tensor:
        if self.ndim < 2:
            raise RuntimeError("Input must be >= 2-d.")
        return self.flip(1)

    def flipud(self) -> Tensor:
        if self.ndim < 1:
            raise RuntimeError("Input must be >= 1-d.")
        return self.flip(0)

    def select(self, dim: int, index: int) -> Tensor:
        """The slice at ``index`` along ``dim``, that dim removed (a view)."""
        d = wrap_dim(dim, self.ndim)
        n = self.shape[d]
        if not -n <= index < n:
            raise IndexError(f"select(): index {index} out of range for tensor of size "
                             f"{list(self.shape)} at dimension {d}")
        return self[(slice(None),) * d + (index,)]

    def tensor_split(self, indices_or_sections: int | Sequence[int], dim: int = 0
                     ) -> tuple[Tensor, ...]:
        """Views splitting ``dim`` into n near-equal parts (the first n % size one longer),
        or at the given indices."""
        d = wrap_dim(dim, self.ndim)
        n = self.shape[d]
        if isinstance(indices_or_sections, int):
            k = indices_or_sections
            if k <= 0:
                raise RuntimeError(f"number of sections must be larger than 0, got {k}")
            sizes = [n // k + (i < n % k) for i in range(k)]
            cuts = list(np.cumsum([0] + sizes))
        else:
            cuts = [0] + [min(max(int(i), 0), n) for i in indices_or_sections] + [n]
        return tuple(self[_cut(d, a, max(a, b))] for a, b in zip(cuts[:-1], cuts[1:]))

    def hsplit(self, sections: int | Sequence[int]) -> tuple[Tensor, ...]:
        return _numpy_split(self, sections, 1 if self.ndim > 1 else 0, "hsplit", 1)

    def vsplit(self, sections: int | Sequence[int]) -> tuple[Tensor, ...]:
        return _numpy_split(self, sections, 0, "vsplit", 2)

    def dsplit(self, sections: int | Sequence[int]) -> tuple[Tensor, ...]:
        return _numpy_split(self, sections, 2, "dsplit", 3)

    def index_fill(self, dim: int, index: Tensor, value: Number | Tensor) -> Tensor:
        """A copy with ``value`` at the entries ``index`` along ``dim``."""
        d = wrap_dim(dim, self.ndim)
        idx = _int_array(index, "index_fill").reshape(-1)
        mask = np.zeros(self.shape[d] if self.ndim else 1, bool)
        mask[idx] = True
        shape_ = [1] * self.ndim
        if self.ndim:
            shape_[d] = self.shape[d]
        return self.masked_fill(function.make_tensor(mask.reshape(shape_)), value)

    def index_fill_(self, dim: int, index: Tensor, value: Number | Tensor) -> Tensor:
        return views.inplace(self, lambda s: s.index_fill(dim, index, value), (value,))

    def sum_to_size(self, *size: Any) -> Tensor:
        """Summed down to ``size``, which this tensor's shape must broadcast from."""
        target = shape_arg(size)
        try:
            np.broadcast_shapes(target, self.shape)
            ok = np.broadcast_shapes(target, self.shape) == self.shape
        except ValueError:
            ok = False
        if not ok:
            raise RuntimeError(f"size {list(target)} is not expandable to size "
                               f"{list(self.shape)}")
        from ..autograd.engine import sum_to_shape

        return sum_to_shape(self, target)


def _int_array(x: Any, fn: str) -> np.ndarray:
    a = np.asarray(x._array if is_tensor(x) else x)
    if a.dtype.kind not in "iu":
        raise RuntimeError(f"{fn}(): Expected a long tensor, but got {a.dtype}")
    return a


def _scatter_index(x: Tensor, dim: int, index: Tensor, src: Any, fn: str) -> tuple:
    """The dim, the index array and the advanced index (index along dim, a grid elsewhere)
    for scatter-like ops, after torch's checks."""
    d = wrap_dim(dim, x.ndim)
    idx = _int_array(index, fn)
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
        return function.make_tensor(np.full(shape_, src, x.dtype))
    return src[tuple(slice(0, n) for n in shape_)] if src.shape != shape_ else src


def _index_along(x: Tensor, dim: int, index: Tensor, source: Tensor, fn: str) -> tuple:
    d = wrap_dim(dim, x.ndim)
    idx = _int_array(index, fn)
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


def _cut(d: int, a: int, b: int) -> tuple:
    return (slice(None),) * d + (slice(a, b),)


def _numpy_split(x: Tensor, sections: int | Sequence[int], d: int, fn: str,
                 least: int) -> tuple[Tensor, ...]:
    if x.ndim < least:
        raise RuntimeError(f"torch.{fn} requires a tensor with at least {least} dimension, but "
                           f"got a tensor with {x.ndim} dimensions!")
    if isinstance(sections, int) and (sections == 0 or x.shape[d] % sections):
        raise RuntimeError(f"torch.{fn} attempted to split along dimension {d}, but the size "
                           f"of the dimension {x.shape[d]} is not divisible by the split_size "
                           f"{sections}!")
    return x.tensor_split(sections, d)
