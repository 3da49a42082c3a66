"""Shape methods: reshape / view, permute / transpose, squeeze / unsqueeze, expand, repeat,
flip, the rearrangements (roll, rot90, tile, movedim, unfold, repeat_interleave) and
splitting (split, chunk, unbind, narrow, select, tensor_split, h/v/dsplit).

Those numpy answers with a view are marked as views (autograd/views.py); the rearrangements
are index_select, flip and permute with index arrays numpy computes, so everything here
differentiates to any order."""

# mypy: disable-error-code="misc"
# (The methods take self as the Tensor they are mixed into, which mypy's check that a
# self annotation is a supertype of its class, error code misc, would refuse.)

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._dims import infer_shape, shape_arg, wrap_dim
from ..autograd import views
from ..autograd.function import forward_only, is_tensor, make_tensor
from ..autograd.grad_mode import _state
from ..ops import shape
from ._operand import int_array

if TYPE_CHECKING:
    from ..tensor import Tensor


class ShapeMethods:
    """The shape methods of Tensor (mixed into it by tensor.py)."""

    @property
    def T(self: Tensor) -> Tensor:
        n = self._array.ndim
        return _permuted(self, _REVERSED[n] if n < len(_REVERSED) else tuple(range(n))[::-1])

    @property
    def mT(self: Tensor) -> Tensor:
        n = self._array.ndim
        if n < 2:
            raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. "
                               f"Got {n}-D tensor.")
        return _permuted(self, _SWAP_LAST[n] if n < len(_SWAP_LAST) else _swap_last(n))

    # The methods taking sizes or dims as varargs take them by torch's keyword too
    # (x.reshape(shape=...), x.permute(dims=...)): shape_arg reads both.
    def reshape(self: Tensor, *sizes: Any, shape: Any = None) -> Tensor:
        s = infer_shape(shape_arg(sizes, shape, "shape", "reshape"), self._array.size)
        out = _Reshape.apply(self, s) if self.requires_grad and _state.enabled else \
            forward_only(_Reshape, self, s)
        return views.view(self, out, lambda b: _Reshape.apply(b, s))

    def view(self: Tensor, *sizes: Any, size: Any = None) -> Tensor:
        """As reshape: a copy where torch's view would refuse the layout."""
        if size is None:  # the usual call: reshape parses the sizes, once
            return self.reshape(*sizes)
        return self.reshape(shape_arg(sizes, size, "size", "view"))

    def view_as(self: Tensor, other: Tensor) -> Tensor:
        return self.reshape(other.shape)

    def reshape_as(self: Tensor, other: Tensor) -> Tensor:
        return self.reshape(other.shape)

    def flatten(self: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        s, e = wrap_dim(start_dim, self.ndim), wrap_dim(end_dim, self.ndim)
        if self.ndim == 0:
            return self.reshape(1)
        if s > e:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        return self.reshape(self.shape[:s] + (-1,) + self.shape[e + 1:])

    def unflatten(self: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
        d = wrap_dim(dim, self.ndim)
        return self.reshape(self.shape[:d] + tuple(sizes) + self.shape[d + 1:])

    def permute(self: Tensor, *order: Any, dims: Any = None) -> Tensor:
        n = self._array.ndim
        dims_ = shape_arg(order, dims, "dims", "permute")
        if sorted(dims_) == list(range(n)):  # non-negative already (the usual call)
            return _permuted(self, dims_)
        dims_ = tuple([wrap_dim(d, n) for d in dims_])
        if sorted(dims_) != list(range(n)):
            raise RuntimeError(f"permute: {dims_} is not a permutation of {n} dims")
        return _permuted(self, dims_)

    def transpose(self: Tensor, dim0: int, dim1: int) -> Tensor:
        n = self._array.ndim
        d0, d1 = wrap_dim(dim0, n), wrap_dim(dim1, n)
        if n < 2:
            return self
        perm = list(range(n))
        perm[d0], perm[d1] = perm[d1], perm[d0]
        return _permuted(self, tuple(perm))

    def swapaxes(self: Tensor, dim0: int, dim1: int) -> Tensor:
        return self.transpose(dim0, dim1)

    def t(self: Tensor) -> Tensor:
        n = self._array.ndim
        if n > 2:
            raise RuntimeError("t() expects a tensor with <= 2 dimensions; use .mT or transpose")
        return _permuted(self, _REVERSED[n])

    def unsqueeze(self: Tensor, dim: int) -> Tensor:
        d = wrap_dim(dim, self.ndim + 1)
        return self.reshape(self.shape[:d] + (1,) + self.shape[d:])

    def squeeze(self: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
        """Drop size-1 dims (only those in ``dim`` when given; others are kept, as in torch)."""
        if dim is None:
            dims = {i for i, n in enumerate(self.shape) if n == 1}
        else:
            dims = {wrap_dim(d, self.ndim) for d in ([dim] if isinstance(dim, int) else dim)}
            dims = {d for d in dims if self.ndim and self.shape[d] == 1}
        return self.reshape(tuple(n for i, n in enumerate(self.shape) if i not in dims))

    def expand(self: Tensor, *sizes: Any, size: Any = None) -> Tensor:
        """Broadcast to ``sizes`` without copying; -1 keeps a dim."""
        sizes_ = shape_arg(sizes, size, "size", "expand")
        lead = len(sizes_) - self.ndim
        if lead < 0:
            raise RuntimeError(f"expand: cannot expand shape {self.shape} to {sizes_}")
        target = tuple(self.shape[i - lead] if (n == -1 and i >= lead) else n
                       for i, n in enumerate(sizes_))
        if target == self.shape:
            return self
        return views.view(self, shape.Expand.apply(self, target),
                     lambda b: shape.Expand.apply(b, target))

    def expand_as(self: Tensor, other: Tensor) -> Tensor:
        return self.expand(other.shape)

    def broadcast_to(self: Tensor, size: Sequence[int]) -> Tensor:
        return self.expand(tuple(size))

    def repeat(self: Tensor, *sizes: Any, repeats: Any = None) -> Tensor:
        """This tensor tiled ``sizes[i]`` times along dim i (new leading dims as needed): a
        copy, as in torch, so the result can be written to.

        >>> mg.tensor([1, 2]).repeat(2, 2).tolist()
        [[1, 2, 1, 2], [1, 2, 1, 2]]
        """
        reps = shape_arg(sizes, repeats, "repeats", "repeat")
        if len(reps) < self.ndim:
            raise RuntimeError("Number of dimensions of repeat dims can not be smaller than "
                               "number of dimensions of tensor")
        if any(r < 0 for r in reps):
            raise RuntimeError(f"Trying to create tensor with negative dimension: {list(reps)}")
        return shape.Repeat.apply(self, reps)

    def flip(self: Tensor, *which: Any, dims: Any = None) -> Tensor:
        """Reverse the order of elements along ``dims`` (a copy, as in torch)."""
        dims_ = shape_arg(which, dims, "dims", "flip")
        return shape.Flip.apply(self, tuple(wrap_dim(d, self.ndim) for d in dims_))

    def chunk(self: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
        size = -(-self.shape[wrap_dim(dim, self.ndim)] // chunks)
        return self.split(size, dim)

    def split(self: Tensor, split_size: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
        d = wrap_dim(dim, self.ndim)
        n = self.shape[d]
        sizes = ([split_size] * (-(-n // split_size)) if isinstance(split_size, int)
                 else list(split_size))
        out, start = [], 0
        for s in sizes:
            s = min(s, n - start)
            out.append(self[(slice(None),) * d + (slice(start, start + s),)])
            start += s
        return tuple(out)

    def unbind(self: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
        d = wrap_dim(dim, self.ndim)
        return tuple(self[(slice(None),) * d + (i,)] for i in range(self.shape[d]))

    def repeat_interleave(self: Tensor, repeats: int | Tensor | None = None,
                          dim: int | None = None, *, output_size: int | None = None) -> Tensor:
        """Each entry repeated ``repeats`` times (an int, or one count per entry) along
        ``dim``, of the flattened tensor when None; ``mg.repeat_interleave(counts)`` alone
        repeats each index i counts[i] times.

        >>> mg.tensor([1, 2]).repeat_interleave(2).tolist()
        [1, 1, 2, 2]
        """
        if repeats is None:  # torch.repeat_interleave(repeats): self holds the counts
            counts = int_array(self, "repeat_interleave")
            return make_tensor(np.arange(counts.size, dtype=np.int64)).\
                repeat_interleave(self, 0)
        x = self.reshape(-1) if dim is None else self
        d = 0 if dim is None else wrap_dim(dim, x.ndim)
        n = x.shape[d] if x.ndim else 1
        reps = int_array(repeats, "repeat_interleave") if is_tensor(repeats) else \
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
        return x.index_select(d, make_tensor(idx))

    def roll(self: Tensor, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None
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
            out = out.index_select(d, make_tensor(idx))
        return out

    def rot90(self: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
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

    def tile(self: Tensor, *counts: Any, dims: Any = None) -> Tensor:
        """``repeat``, with missing leading counts taken as 1 (numpy's tile)."""
        reps = shape_arg(counts, dims, "dims", "tile")
        return self.repeat(*((1,) * (self.ndim - len(reps)) + reps))

    def narrow(self: Tensor, dim: int, start: int, length: int) -> Tensor:
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

    def movedim(self: Tensor, source: int | Sequence[int], destination: int | Sequence[int]
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

    def unfold(self: Tensor, dimension: int, size: int, step: int) -> Tensor:
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
        out = x.index_select(d, make_tensor(idx))
        out = out.reshape(x.shape[:d] + (count, size) + x.shape[d + 1:])
        return out.movedim(d + 1, -1) if self.ndim else out.reshape(count, size).squeeze(0)

    def ravel(self: Tensor) -> Tensor:
        return self.reshape(-1)

    def swapdims(self: Tensor, dim0: int, dim1: int) -> Tensor:
        return self.transpose(dim0, dim1)

    def fliplr(self: Tensor) -> Tensor:
        if self.ndim < 2:
            raise RuntimeError("Input must be >= 2-d.")
        return self.flip(1)

    def flipud(self: Tensor) -> Tensor:
        if self.ndim < 1:
            raise RuntimeError("Input must be >= 1-d.")
        return self.flip(0)

    def select(self: Tensor, dim: int, index: int) -> Tensor:
        """The slice at ``index`` along ``dim``, that dim removed (a view)."""
        d = wrap_dim(dim, self.ndim)
        n = self.shape[d]
        if not -n <= index < n:
            raise IndexError(f"select(): index {index} out of range for tensor of size "
                             f"{list(self.shape)} at dimension {d}")
        return self[(slice(None),) * d + (index,)]

    def tensor_split(self: Tensor, indices_or_sections: int | Sequence[int], dim: int = 0
                     ) -> tuple[Tensor, ...]:
        """Views splitting ``dim`` into n near-equal parts (the first n % size one longer),
        or at the given indices (negative ones counted from the end, as slices'; torch's).

        >>> [t.tolist() for t in mg.arange(5).tensor_split([1, -1])]
        [[0], [1, 2, 3], [4]]
        """
        d = wrap_dim(dim, self.ndim)
        n = self.shape[d]
        if isinstance(indices_or_sections, int):
            k = indices_or_sections
            if k <= 0:
                raise RuntimeError(f"number of sections must be larger than 0, got {k}")
            sizes = [n // k + (i < n % k) for i in range(k)]
            cuts = list(np.cumsum([0] + sizes))
        else:
            cuts = [0] + [min(max(int(i) + n * (i < 0), 0), n) for i in indices_or_sections]
            cuts.append(n)
        return tuple(self[_cut(d, a, max(a, b))] for a, b in zip(cuts[:-1], cuts[1:]))

    def hsplit(self: Tensor, sections: int | Sequence[int]) -> tuple[Tensor, ...]:
        return _numpy_split(self, sections, 1 if self.ndim > 1 else 0, "hsplit", 1)

    def vsplit(self: Tensor, sections: int | Sequence[int]) -> tuple[Tensor, ...]:
        return _numpy_split(self, sections, 0, "vsplit", 2)

    def dsplit(self: Tensor, sections: int | Sequence[int]) -> tuple[Tensor, ...]:
        return _numpy_split(self, sections, 2, "dsplit", 3)

    def sum_to_size(self: Tensor, *sizes: Any, size: Any = None) -> Tensor:
        """Summed down to ``size``, which this tensor's shape must broadcast from."""
        target = shape_arg(sizes, size, "size", "sum_to_size")
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


_Reshape = shape.Reshape  # (in reshape, the name shape is its argument, as in torch)


def _permuted(t: Tensor, dims: tuple[int, ...]) -> Tensor:
    """``t`` with its axes in the order ``dims`` (a permutation, checked by the caller)."""
    # a view made often (x.t(), x.mT) and seldom recorded: Permute's forward alone then
    out = shape.Permute.apply(t, dims) if t.requires_grad and _state.enabled else \
        forward_only(shape.Permute, t, dims)
    return views.view(t, out, lambda b: shape.Permute.apply(b, dims))


def _swap_last(n: int) -> tuple[int, ...]:
    return tuple(range(n - 2)) + (n - 1, n - 2)


_SWAP_LAST = [(), (), *[_swap_last(n) for n in range(2, 9)]]  # mT's permutation, prebuilt
_REVERSED = [tuple(range(n))[::-1] for n in range(9)]  # T's


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
