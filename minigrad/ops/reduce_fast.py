"""Sums, sums of squares and maxima of float arrays over dims, routed by memory layout,
beside numpy's plain reduce (the reference they are tested against). Every float sum,
2-norm and amax/amin in minigrad (and so the engine's broadcast-undo) takes these.

numpy's ``add.reduce`` over a middle axis with a short last axis runs an inner loop three
elements long: (256, 100, 3) over axis 1 costs ~20x torch's time. A ones vector times the
array viewed as (batch, reduced, kept) does the same sum in BLAS at memory speed, whatever
the layout. Accuracy: one BLAS dot accumulates at most ``_BLOCK`` terms (in SIMD lanes);
longer runs are summed in blocks whose sums are summed again the same way, so float32 keeps
the error of numpy's pairwise sum (1e6 uniform float32: ~1e-8 relative, as numpy; a single
dot over all of them would be ~1e-7). The sum of a whole contiguous array, and of rows, is
a numba kernel blocked the same way (ops/_layout_kernels.py): BLAS's dots left the first at
2x torch's time, the second at 1.4x (float64 (1000, 1000)).

A sum of squares (the 2-norm) over long contiguous rows is a row of BLAS dots, blocked the
same way: squaring into a new array first cost more than the sum itself. That of a whole
contiguous array (a tensor's norm) is a numba kernel blocked the same way: one call, where
the dots' blocks took three numpy calls (~10 us of an 80 x 80's norm).

numpy's max has the same short-loop trouble and no BLAS to lean on: a short reduced last
axis becomes a few elementwise maxima of its columns, a short kept last axis a few
reductions of strided slices, each a long loop. Long rows, and long kept last axes, are
numba kernels (ops/_layout_kernels.py) that keep numpy's NaN: numpy's reduce ran rows of
(1000, 1000) at 1.6x torch's time. The max of a whole contiguous array stays numpy's (as
fast as torch's).
"""

from __future__ import annotations

import functools
import math

import numpy as np

# Below _FAST_FROM elements the ufunc's fixed cost is the smaller one; a loop shorter than
# _SHORT (a reduced or kept last axis) costs numpy more in calls than in work: the same
# measurements as the broadcast widening's.
from .._broadcast import _FROM as _FAST_FROM
from .._broadcast import _SHORT
from .._kernel_registry import KERNEL_FLOATS as _NATIVE
from .._kernel_registry import kernels

_asarray, _add_reduce, _matmul, _empty = np.asarray, np.add.reduce, np.matmul, np.empty
_maximum, _minimum, _prod = np.maximum, np.minimum, math.prod
_isfinite, _all_of = np.isfinite, np.logical_and.reduce

# the kernels' names, by dtype char
_SUM_ALL = {"f": "sum_float32", "d": "sum_float64"}
_SUM_ROWS = {"f": "rows_float32", "d": "rows_float64"}
_SUMSQ_ALL = {"f": "sumsq_float32", "d": "sumsq_float64"}
# numpy's flag bits (ndarray.flags.num): C-contiguous, aligned
_C, _ALIGNED = 1, 256
_MAX_ROWS = {"f": "maxrows_float32", "d": "maxrows_float64"}
_MAX_MIDDLE = {"f": "maxmid_float32", "d": "maxmid_float64"}
# The max kernels' floats (aligned native float32 and float64), by dtype: the signed
# integers of their width the rows are compared as, every bit but the sign's, the sign
# bit's place, and +inf's bits (a float's bits without the sign are more for a NaN only).
_BITS = {np.dtype(f): (i, i(np.iinfo(i).max), i(8 * np.dtype(i).itemsize - 1),
                       np.asarray(np.inf, f).view(i)[()])
         for f, i in ((np.float32, np.int32), (np.float64, np.int64))}
# The longest run of terms one BLAS dot adds up (see the module docstring).
_BLOCK = 1024
# A middle sum of kept rows this short (k), products per matrix this few (r k k) and batches
# this long (b) is one product with a 0/1 selector (_sum_middle): its wasted products (k - 1
# of k) cost less than a BLAS call per matrix there; past these, more ((1024, 256, 4): 1.5x).
_SELECT_K, _SELECT_WORK, _SELECT_B = 4, 2048, 16
# numpy's vecdot (numpy >= 2) makes one BLAS dot per row: from rows this long it beats
# squaring into a new array and summing that (a row of 16 costs it 3x more, one of 64 less).
_vecdot = getattr(np, "vecdot", None)
_DOT_FROM = 64


def plain_sum(x: np.ndarray, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
    """sum over ``dims`` by numpy's ufunc reduce: the reference the BLAS route is tested
    against (and the route for small, integer or strided arrays; fast_sum inlines it)."""
    # asarray: a 0-d array, not the scalar numpy returns for a sum of everything
    return _asarray(_add_reduce(x, axis=dims, keepdims=keepdim))


def fast_sum(x: np.ndarray, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
    """sum over ``dims`` (distinct, non-negative) of a float array, by ones-vector products
    where that is faster; always a new array."""
    # the hot path, inlined; the kernels read aligned native floats only (a big-endian
    # one's bytes would be summed as they lie): _NATIVE has those dtypes alone
    if x.size < _FAST_FROM or x.dtype not in _NATIVE or not dims \
            or not (flags := x.flags.num) & _ALIGNED:
        return _asarray(_add_reduce(x, axis=dims, keepdims=keepdim))
    contiguous = flags & _C
    if contiguous and len(dims) == x.ndim:  # everything (loss.sum()): no routing to pay for
        out = _asarray(_sum_all(x.reshape(-1)), x.dtype)
        return out.reshape((1,) * x.ndim) if keepdim else out
    run = _one_run(x, dims, keepdim) if contiguous else None
    if run is not None:  # the usual case: no planning
        b, r, k, shape = run
        out = _sum_rows(x.reshape(b, r)) if k == 1 else _sum_middle(x.reshape(b, r, k))
        return out.reshape(shape)
    # Walk the dims in memory order, so a transposed view needs no copy.
    order = list(range(x.ndim)) if contiguous else sorted(range(x.ndim),
                                                          key=lambda i: -x.strides[i])
    y = x.transpose(order)
    if not y.flags.c_contiguous:
        if 0 in x.strides:  # a broadcast view: a backward's gradient of a sum, mostly
            return _sum_broadcast(x, dims, keepdim)
        return plain_sum(x, dims, keepdim)  # a sliced view: numpy's strided loops
    sizes, reduced = _groups(y.shape, [i in dims for i in order])
    if not any(reduced):  # only length-1 dims reduced: a copy, not a view of x
        return plain_sum(x, dims, keepdim)
    a = y.reshape(sizes)
    while any(reduced):  # the innermost reduced group first: each result stays contiguous
        j = len(reduced) - 1 - reduced[::-1].index(True)
        b, k = _prod(sizes[:j]), _prod(sizes[j + 1:])
        a = _sum_rows(a.reshape(b, sizes[j])) if k == 1 else _sum_middle(
            a.reshape(b, sizes[j], k))
        del sizes[j], reduced[j]
    kept = [i for i in order if i not in dims]
    out = a.reshape([x.shape[i] for i in kept])
    if kept != sorted(kept):  # back from memory order to x's order
        out = out.transpose(sorted(range(len(kept)), key=kept.__getitem__))
    if keepdim:
        out = out.reshape([1 if i in dims else n for i, n in enumerate(x.shape)])
    return out


def _sum_broadcast(x: np.ndarray, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
    """fast_sum of a view with broadcast (stride-0) dims: over those it sums n equal terms,
    which is n times one of them (rounded once, where numpy's strided loop adds them one by
    one: 376 us for (256, 100, 3) over dim 1); the other dims are summed from one slice, and
    broadcast kept dims are widened into the new array at the end."""
    wide = [d for d in range(x.ndim) if x.strides[d] == 0 and x.shape[d] > 1]
    if not wide:  # only length-1 dims have stride 0: nothing repeats
        return plain_sum(x, dims, keepdim)
    one = x[tuple(slice(0, 1) if d in wide else slice(None) for d in range(x.ndim))]
    out = fast_sum(one, dims, True)
    count = _prod(x.shape[d] for d in wide if d in dims)
    if count > 1:
        out *= count  # exact as a float while count < 2**24 (float32), 2**53 (float64)
    shape = tuple(1 if d in dims else n for d, n in enumerate(x.shape))
    if out.shape != shape:  # a broadcast dim kept: the repeated sums, written out
        out = np.broadcast_to(out, shape).copy()
    return out if keepdim else out.reshape([n for d, n in enumerate(x.shape) if d not in dims])


def plain_sumsq(x: np.ndarray, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
    """sum of x^2 over ``dims``, squared into a new array: the reference for fast_sumsq."""
    return fast_sum(x * x, dims, keepdim)


def fast_sumsq(x: np.ndarray, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
    """sum of x^2 over ``dims`` (distinct, non-negative) of a float array: all of an aligned
    C-contiguous one by the blocked kernel (a tensor's norm); trailing dims reduced over long
    rows of a C-contiguous array are rows of BLAS dots (no squared copy, the dots blocked as
    the sums are); anything else is plain_sumsq."""
    if len(dims) == x.ndim and x.size and x.dtype in _NATIVE \
            and x.flags.num & (_C | _ALIGNED) == _C | _ALIGNED:
        out = _asarray(getattr(kernels("small"), _SUMSQ_ALL[x.dtype.char])(x.reshape(-1)),
                       x.dtype)
        return out.reshape((1,) * x.ndim) if keepdim else out
    if x.size >= _FAST_FROM and _vecdot is not None and dims and x.dtype.char in "fd" \
            and x.flags.c_contiguous:
        run = _one_run(x, dims, keepdim)
        if run is not None and run[2] == 1 and run[1] >= _DOT_FROM:
            b, r, _, shape = run
            return _dots(x.reshape(b, r)).reshape(shape)
    return plain_sumsq(x, dims, keepdim)


def _dots(a: np.ndarray) -> np.ndarray:
    """Each row's dot with itself, (b, r) C-contiguous to (b,), each BLAS dot at most
    ``_BLOCK`` terms long: the block dots are summed again."""
    b, r = a.shape
    if r <= _BLOCK:
        return _vecdot(a, a)
    q, size = r // _BLOCK, a.itemsize
    if b == 1:  # one row ((1, r) reduced over r): the same sums, with fewer numpy calls
        flat = a.reshape(r)
        head = flat[:q * _BLOCK].reshape(q, _BLOCK)
        total = _add_reduce(_vecdot(head, head), keepdims=True)
        if r % _BLOCK:
            tail = flat[q * _BLOCK:]
            total += _vecdot(tail, tail)
        return total
    # the rows' whole blocks as a (b, q, _BLOCK) view: a reshape where that is one (as_strided
    # costs microseconds), else strides (a reshape would copy the rows that have a tail)
    if q * _BLOCK == r:
        blocks = a.reshape(b, q, _BLOCK)
    else:
        blocks = np.lib.stride_tricks.as_strided(a, (b, q, _BLOCK),
                                                 (r * size, _BLOCK * size, size), writeable=False)
    out = fast_sum(_vecdot(blocks, blocks), (1,), False)
    if r % _BLOCK:
        tail = a[:, q * _BLOCK:]
        out += _vecdot(tail, tail)
    return out


def fast_max(x: np.ndarray, dims: tuple[int, ...], keepdim: bool, is_max: bool) -> np.ndarray:
    """max (or min) over ``dims`` (distinct, non-negative, not empty) of an array, by long
    loops whatever the layout; NaN propagates, as in numpy's reduce."""
    ufunc = _maximum if is_max else _minimum
    flags = x.flags.num
    if x.size < _FAST_FROM or not flags & _C:
        return _asarray(ufunc.reduce(x, axis=dims, keepdims=keepdim))
    if len(dims) == x.ndim:  # everything
        out = _asarray(ufunc.reduce(x, None))  # one long loop (numpy joins the dims)
        return out.reshape((1,) * x.ndim) if keepdim else out
    run = _one_run(x, dims, keepdim)
    if run is None:
        return _asarray(ufunc.reduce(x, axis=dims, keepdims=keepdim))
    b, r, k, shape = run
    bits = _BITS.get(x.dtype) if flags & _ALIGNED else None  # the kernels' (native floats)
    if k == 1 and r < _SHORT:  # the maximum of r columns, elementwise
        a = x.reshape(b, r)
        out = a[:, 0].copy()
        for j in range(1, r):
            ufunc(out, a[:, j], out=out)
    elif k == 1 and bits is not None:  # rows: the kernel's integer compares
        out = _empty(b, x.dtype)
        it, low, shift, nan_from = bits
        _max_rows(x.dtype.char)(x.reshape(b, r).view(it), out.view(it), low, shift, nan_from,
                                it(0 if is_max else -1))
    elif 1 < k < _SHORT:  # each kept column's reduction, a strided but long loop
        a = x.reshape(b, r, k)
        out = _empty((b, k), x.dtype)
        for j in range(k):
            ufunc.reduce(a[:, :, j], axis=1, out=out[:, j])
    elif bits is not None:  # long rows of lanes, elementwise: the kernel's
        out = _empty((b, k), x.dtype)
        _max_middle(x.dtype.char)(x.reshape(b, r, k), out, not is_max)
    else:  # a long contiguous loop already
        out = ufunc.reduce(x.reshape(b, r, k), axis=1)
    return out.reshape(shape)


def _one_run(x: np.ndarray, dims: tuple[int, ...], keepdim: bool) -> tuple | None:
    """For C-contiguous ``x`` reduced over one run of adjacent ``dims``: (b, r, k, shape),
    x being (b, r, k) summed over r, and the result's shape; else None."""
    lo, hi = min(dims), max(dims)
    if hi - lo != len(dims) - 1:
        return None
    shape = x.shape
    out = shape[:lo] + (1,) * len(dims) + shape[hi + 1:] if keepdim \
        else shape[:lo] + shape[hi + 1:]
    return _prod(shape[:lo]), _prod(shape[lo:hi + 1]), _prod(shape[hi + 1:]), out


def _groups(shape: tuple[int, ...], reduced: list[bool]) -> tuple[list[int], list[bool]]:
    """Adjacent dims of one kind merged, length-1 dims dropped: at most
    kept, reduced, kept, ... groups, each one contiguous run of memory."""
    sizes: list[int] = []
    kinds: list[bool] = []
    for n, r in zip(shape, reduced):
        if n == 1:
            continue
        if kinds and kinds[-1] == r:
            sizes[-1] *= n
        else:
            sizes.append(n)
            kinds.append(r)
    return sizes, kinds


def _sum_all(f: np.ndarray) -> float:
    """The sum of a contiguous 1-D float ``f``, in blocks summed in SIMD lanes whose sums are
    summed again (ops/_layout_kernels.py): a number (of f's precision), which the kernel
    returns in a third of the time an array takes it."""
    return getattr(kernels("small"), _SUM_ALL[f.dtype.char])(f)


def _max_rows(char: str):
    """The row max kernel for floats of dtype char ``char`` (ops/_layout_kernels.py)."""
    return getattr(kernels("small"), _MAX_ROWS[char])


def _max_middle(char: str):
    """The middle-axis max kernel for floats of dtype char ``char``."""
    return getattr(kernels("small"), _MAX_MIDDLE[char])


def _sum_rows(a: np.ndarray) -> np.ndarray:
    """(b, r) summed over r, each row as the whole-array sum (ops/_layout_kernels.py): (b,)."""
    return getattr(kernels("small"), _SUM_ROWS[a.dtype.char])(np.ascontiguousarray(a))


def _sum_middle(a: np.ndarray) -> np.ndarray:
    """(b, r, k) summed over r, each BLAS dot at most ``_BLOCK`` terms long: (b, k)."""
    b, r, k = a.shape
    if r <= _BLOCK:
        if k <= _SELECT_K and r * k * k <= _SELECT_WORK and b >= _SELECT_B:  # a cloud's mean
            # one (b, r k) @ (r k, k) product of 0s and 1s: a BLAS call per matrix cost the
            # ones vector's product 2.5x on (256, 100, 3), 3.5x on (4096, 10, 3); it adds
            # the same r terms (and exact zeros), as accurately
            out = _matmul(a.reshape(b, r * k), _selector(r, k, a.dtype.char))
            # a NaN or Inf times the selector's zeros spreads to the row's other columns:
            # those rows again by the ones vector, which multiplies by 1. Rows are looked
            # for only where some entry is not finite (one test of all: a fifth of the rows'
            # cost, which numpy's short rows and Python layer of all(axis=) make)
            finite = _isfinite(out)
            if not _all_of(finite, None):
                rows = ~finite.all(axis=1)
                out[rows] = _matmul(_ones(r, a.dtype.char), a[rows])
            return out
        return _matmul(_ones(r, a.dtype.char), a)
    q = r // _BLOCK
    # a view (splitting r copies nothing); the block sums are summed the same way
    out = _sum_middle(_matmul(_ones(_BLOCK, a.dtype.char),
                              a[:, :q * _BLOCK].reshape(b, q, _BLOCK, k)))
    if r % _BLOCK:
        out += _matmul(_ones(r % _BLOCK, a.dtype.char), a[:, q * _BLOCK:])
    return out


@functools.lru_cache(maxsize=64)
def _selector(r: int, k: int, char: str) -> np.ndarray:
    """(r k, k): 1 where row i meets column i mod k, else 0 (a (r, k) block, summed over r)."""
    out = np.zeros((r * k, k), char)
    out[np.arange(r * k), np.arange(r * k) % k] = 1
    out.flags.writeable = False
    return out


@functools.lru_cache(maxsize=64)
def _ones(n: int, char: str) -> np.ndarray:
    ones = np.ones(n, char)
    ones.flags.writeable = False
    return ones
