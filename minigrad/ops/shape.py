"""Shape and indexing: reshape, permute, expand, indexing (get and set), cat, diagonals.

Indexing follows numpy (= torch for basic, integer-array and boolean indices); gradients
through repeated integer indices accumulate.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._dims import (
    inverse_permutation,
    wrap_dim,  # noqa: F401  (still importable from here)
)
from .._kernel_registry import KERNEL_FLOATS, pass_kernel
from ..autograd import function
from ..autograd.engine import sum_to_shape
from ..autograd.function import Context, Function, is_tensor, make_tensor
from ..autograd.grad_mode import _state
from ..dtypes import result_dtype
from .arith import Where

# The items of a basic index (numpy answers it with a view) by exact type: bool is no int
# here, so that a bool item takes the general path.
_BASIC = frozenset([int, slice, type(None), type(Ellipsis)])


def plain(index: Any) -> bool:
    """Whether ``index`` is an int, a slice or a tuple of those, None and Ellipsis: basic,
    and nothing in it to normalize (x[i], x[:, 2:], the usual index), answered quickly."""
    if type(index) is tuple:
        for i in index:
            if type(i) not in _BASIC:
                return False
        return True
    return type(index) is int or type(index) is slice


def normalize_index(index: Any) -> Any:
    """Turn Tensors and lists inside an index into ndarrays (bool stays a mask)."""
    if plain(index):
        return index
    tensor = function.tensor_class  # is_tensor, inlined: every indexing op passes here

    def one(i: Any) -> Any:
        if isinstance(i, tensor):
            if i._array.dtype.kind == "f":
                raise IndexError("tensors used as indices must be long, int or bool tensors")
            return i._array
        if isinstance(i, list):
            return np.asarray(i)
        return i
    return tuple(one(i) for i in index) if isinstance(index, tuple) else one(index)


def is_basic(index: Any) -> bool:
    """True when numpy returns a view (only ints, slices, None and Ellipsis)."""
    if plain(index):  # the common cases, answered quickly
        return True
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or isinstance(i, (int, np.integer, slice))
               for i in items)


class Reshape(Function):
    _numpy_forward = True  # numpy alone: nothing in forward records

    @staticmethod
    def forward(ctx: Context, a: Any, shape: tuple[int, ...]) -> np.ndarray:
        ctx.shape = a._array.shape
        return a._array.reshape(shape)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        if not _state.enabled:  # nothing records: numpy's view alone, not the method's path
            return make_tensor(g._array.reshape(ctx.shape)), None
        return g.reshape(ctx.shape), None


class Permute(Function):
    _numpy_forward = True  # numpy alone: nothing in forward records

    @staticmethod
    def forward(ctx: Context, a: Any, dims: tuple[int, ...]) -> np.ndarray:
        ctx.dims = dims  # inverted in backward: most permutes are never differentiated
        return a._array.transpose(dims)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        inverse = inverse_permutation(ctx.dims)
        if not _state.enabled:  # nothing records: numpy's view alone, not the method's path
            return make_tensor(g._array.transpose(inverse)), None
        return g.permute(*inverse), None


class Expand(Function):
    _numpy_forward = True  # numpy alone: nothing in forward records

    @staticmethod
    def forward(ctx: Context, a: Any, shape: tuple[int, ...]) -> np.ndarray:
        ctx.shape = a._array.shape
        try:
            return np.broadcast_to(a._array, shape)
        except ValueError:
            raise RuntimeError(f"expand: shape {a._array.shape} cannot be expanded to {shape}") \
                from None

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        return sum_to_shape(g, ctx.shape), None


class Repeat(Function):
    """``a`` tiled ``reps`` times along each dim, as a fresh array (torch's repeat copies);
    the gradient sums the tiles back."""

    @staticmethod
    def forward(ctx: Context, a: Any, reps: tuple[int, ...]) -> np.ndarray:
        x = a._array.reshape((1,) * (len(reps) - a._array.ndim) + a._array.shape)
        ctx.shape, ctx.reps, ctx.padded = a._array.shape, reps, x.shape
        return np.tile(x, reps)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        tiles = tuple(v for r, n in zip(ctx.reps, ctx.padded) for v in (r, n))
        summed = g.reshape(tiles).sum(tuple(range(0, len(tiles), 2)))
        return summed.reshape(ctx.shape), None


class GetItem(Function):
    _numpy_forward = True  # numpy alone: nothing in forward records

    @staticmethod
    def forward(ctx: Context, a: Any, index: Any) -> np.ndarray:
        ctx.shape, ctx.index = a._array.shape, index
        if is_basic(index):
            # A trailing Ellipsis makes numpy return a 0-d view, not a scalar copy, for a full
            # integer index, so that x[0].add_(1) writes into x as it does in torch.
            items = index if isinstance(index, tuple) else (index,)
            if Ellipsis not in items:
                index = items + (Ellipsis,)
        return np.asarray(a._array[index])

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        return IndexAdd.apply(g, ctx.index, ctx.shape), None


class IndexAdd(Function):
    """zeros(shape) with ``g`` added at ``index`` (repeats accumulate): GetItem's adjoint."""

    _numpy_forward = True  # numpy alone: nothing in forward records

    @staticmethod
    def forward(ctx: Context, g: Any, index: Any, shape: tuple[int, ...]) -> np.ndarray:
        ctx.index = index
        out = np.zeros(shape, dtype=g._array.dtype)
        if is_basic(index):
            out[index] = g._array
        elif not add_rows(out, index, g._array):
            np.add.at(out, index, g._array)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        return GetItem.apply(g, ctx.index), None, None


# From this many elements of g the row kernel beats np.add.at's fixed cost.
_ADD_ROWS_FROM = 2048


def add_rows(out: np.ndarray, index: Any, g: np.ndarray) -> bool:
    """np.add.at(out, index, g) by whole rows (the same sums in the same order), for one
    integer array indexing out's first dim (x[idx], an embedding) and a C-contiguous float
    out of the kernels' dtypes, in bounds; False (nothing done) otherwise."""
    if type(index) is tuple and len(index) == 1:
        index = index[0]
    # (uint64: its values past int64's would wrap in the cast below)
    if type(index) is not np.ndarray or index.dtype.kind not in "iu" or index.dtype == np.uint64 \
            or g.size < _ADD_ROWS_FROM \
            or out.dtype not in KERNEL_FLOATS or g.dtype != out.dtype or not out.ndim \
            or not out.flags.c_contiguous \
            or g.shape != index.shape + out.shape[1:]:
        return False
    m = out.shape[0]
    flat = index.reshape(-1).astype(np.int64)  # a new array: negatives wrapped in place
    if flat.size and (flat.min() < -m or flat.max() >= m):
        return False  # np.add.at raises numpy's IndexError
    flat[flat < 0] += m
    pass_kernel("addrows", out.dtype)(out.reshape(m, -1), flat,
                                      np.ascontiguousarray(g).reshape(flat.size, -1))
    return True


class SetItem(Function):
    """A copy of ``a`` with ``value`` written at ``index`` (the out-of-place half of a[i] = v)."""

    @staticmethod
    def forward(ctx: Context, a: Any, value: Any, index: Any) -> np.ndarray:
        out = a._array.copy()
        v, target = value._array, out[index].shape
        if v.ndim > len(target):  # torch drops leading size-1 dims: x[1] = tensor([5.])
            lead = v.ndim - len(target)
            if any(n != 1 for n in v.shape[:lead]):
                raise RuntimeError(f"shape mismatch: value of shape {v.shape} cannot be "
                                   f"broadcast to indexing result of shape {target}")
            v = v.reshape(v.shape[lead:])
        out[index] = v
        keep = np.ones(a._array.shape, dtype=bool)
        keep[index] = False
        ctx.index, ctx.value_shape = index, value._array.shape
        ctx.keep = make_tensor(keep)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        gv = None
        if ctx.needs_input_grad[1]:
            gv = g[ctx.index]
            missing = len(ctx.value_shape) - gv.ndim
            if missing > 0:  # the leading 1-dims forward dropped
                gv = gv.reshape((1,) * missing + gv.shape)
        return Where.apply(ctx.keep, g, 0), gv, None


class CopyInto(Function):
    """``src`` broadcast to the shape of ``a`` (the out-of-place half of copy_ and fill_)."""

    @staticmethod
    def forward(ctx: Context, a: Any, src: Any) -> np.ndarray:
        s = src._array if is_tensor(src) else src
        return np.array(np.broadcast_to(np.asarray(s, dtype=a._array.dtype), a._array.shape))

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        return None, g


class Cat(Function):
    @staticmethod
    def forward(ctx: Context, dim: int, *tensors: Any) -> np.ndarray:
        dt = result_dtype(*[t._array for t in tensors])
        ctx.sizes = [t._array.shape[dim] for t in tensors]
        ctx.dim = dim
        return np.concatenate([t._array.astype(dt, copy=False) for t in tensors], axis=dim)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        out, start = [None], 0
        for n, need in zip(ctx.sizes, ctx.needs_input_grad[1:]):
            idx = (slice(None),) * ctx.dim + (slice(start, start + n),)
            out.append(g[idx] if need else None)
            start += n
        return tuple(out)


class Diagonal(Function):
    """The diagonal ``offset`` of dims (dim1, dim2), appended as the last dim (torch): a view
    of ``a``'s memory, writable where ``a`` is (numpy hands it out read-only)."""

    _numpy_forward = True  # numpy alone: nothing in forward records

    @staticmethod
    def forward(ctx: Context, a: Any, offset: int, dim1: int, dim2: int) -> np.ndarray:
        ctx.shape, ctx.args = a._array.shape, (offset, dim1, dim2)
        out = np.diagonal(a._array, offset, dim1, dim2)
        out.flags.writeable = a._array.flags.writeable
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        offset, dim1, dim2 = ctx.args
        return _DiagScatter.apply(g, ctx.shape, offset, dim1, dim2), None, None, None


class _DiagScatter(Function):
    """zeros(shape) with ``g`` on diagonal ``offset`` of (dim1, dim2): Diagonal's adjoint."""

    _numpy_forward = True  # numpy alone: nothing in forward records

    @staticmethod
    def forward(ctx: Context, g: Any, shape: tuple, offset: int, dim1: int, dim2: int):
        ctx.args = (offset, dim1, dim2)
        out = np.zeros(shape, dtype=g._array.dtype)
        # numpy's diagonal view, made writable (as Diagonal's): index arrays and moveaxis
        # cost 3x the whole op on small ones
        diagonal = np.diagonal(out, offset, dim1, dim2)
        diagonal.flags.writeable = True
        diagonal[...] = g._array
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        return Diagonal.apply(g, *ctx.args), None, None, None, None


class DiagEmbed(Function):
    """A new pair of dims (dim1, dim2) with the last dim of ``a`` on diagonal ``offset``."""

    _numpy_forward = True  # numpy alone: nothing in forward records

    @staticmethod
    def forward(ctx: Context, a: Any, offset: int, dim1: int, dim2: int) -> np.ndarray:
        x = a._array
        n = x.shape[-1] + abs(offset)
        d1, d2 = dim1, dim2  # wrapped by the caller
        ctx.args = (offset, d1, d2)
        batch = x.shape[:-1]
        out = np.zeros(batch + (n, n), dtype=x.dtype)
        # the diagonal as a strided slice of the flat matrices: fancy indexing by index
        # arrays costs 3x the whole op on small ones
        start = offset if offset >= 0 else -offset * n
        out.reshape(batch + (n * n,))[..., start::n + 1][..., :x.shape[-1]] = x
        if (d1, d2) == (out.ndim - 2, out.ndim - 1):  # the usual dims: moveaxis costs ~4 us
            return out
        return np.moveaxis(out, (-2, -1), (d1, d2))

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        return Diagonal.apply(g, *ctx.args), None, None, None


class Flip(Function):
    """``a`` reversed along ``dims``; a copy, as torch.flip is."""

    @staticmethod
    def forward(ctx: Context, a: Any, dims: tuple[int, ...]) -> np.ndarray:
        ctx.dims = dims
        return np.flip(a._array, dims).copy()

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        return Flip.apply(g, ctx.dims), None
