"""Operands of numpy's elementwise ops laid out so that its inner loop is long.

numpy runs an elementwise op as an inner loop over the trailing axes it can merge: for
(256, 100, 3) - (256, 1, 3) that is the last axis alone, three elements, and the op costs
~10x a contiguous one (torch's time ~5x less). Repeating the broadcast operand along the
axis that breaks the loop (a memcpy of rows) and then running the op over long loops is
that much faster. ``widen`` does that for one operand, only where the loop would be short.
np.repeat itself copies one short row at a time (5x the op's own time): a numba loop
(ops/_layout_kernels.py) repeats rows of up to ``_SHORT`` items of 4 or 8 bytes. Longer
rows against one number each (x - x.max(-1, keepdim=True)) still cost numpy's iterator
2.5x a same-shape op: ``row_op`` runs them in a kernel.
"""

from __future__ import annotations

import math

import numpy as np

from ._kernel_registry import kernels, pass_kernel

# The op's size from which this pays (below, numpy's fixed cost is the larger one), and
# the inner-loop length below which a loop is short.
_FROM = 4096
_SHORT = 16
_UINT = {4: np.uint32, 8: np.uint64}
_REPEAT = {4: "repeat_4", 8: "repeat_8"}  # the kernels' names, by item size


def widen(y: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """y (broadcastable to ``shape``, possibly a broadcast view with zero strides) with
    what numpy would broadcast over a short inner loop repeated out: the same values."""
    if y.size == 1:  # a scalar's loop is long already
        return y
    given, pad = y, len(shape) - y.ndim
    spread = [True] * pad + [n == 1 or st == 0 for n, st in zip(y.shape, y.strides)]
    spread = [b and n > 1 for b, n in zip(spread, shape)]  # length-1 axes break nothing
    if not any(spread):
        return y
    y = y[(None,) * pad + tuple(slice(0, 1) if b else slice(None) for b in spread[pad:])]
    run, kind, repeated = 1, None, False  # the loop: trailing axes where y is spread alike
    for j in reversed(range(len(shape))):
        if shape[j] == 1:
            continue
        if kind is None or spread[j] == kind:
            kind = spread[j]
            run *= shape[j]
            continue
        if run >= _SHORT:
            break
        # the loop breaks here: repeat y along the axes that make it whole again
        for k in range(j if spread[j] else j + 1, len(shape) if not spread[j] else j + 1):
            if spread[k]:
                y = repeat(y, shape[k], k)
                spread[k], repeated = False, True
        kind = False
        run *= shape[j]
    return y if repeated else given


def repeat(y: np.ndarray, n: int, axis: int) -> np.ndarray:
    """np.repeat(y, n, axis) for a y of length 1 along ``axis``: a new C-contiguous array."""
    k = math.prod(y.shape[axis + 1:])
    uint = _UINT.get(y.dtype.itemsize)
    # rows long enough, or items the kernels do not take (their typed, aligned arrays)
    if k >= _SHORT or uint is None or y.dtype.kind not in "biufc" or not y.flags.aligned:
        return np.repeat(y, n, axis=axis)
    b = math.prod(y.shape[:axis])
    out = np.empty(y.shape[:axis] + (n,) + y.shape[axis + 1:], y.dtype)
    # the items' bits, whatever their type: a kernel per item size
    getattr(kernels("small"), _REPEAT[y.dtype.itemsize])(
        y.reshape(b, k).view(uint), out.reshape(b, n, k).view(uint))
    return out


def long_loops(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x and y for a binary numpy op, each widened where its broadcast would make short
    loops (arrays of the op's size from ``_FROM`` only)."""
    if x.shape == y.shape and 0 not in x.strides and 0 not in y.strides:
        return x, y
    # a 0-d operand (a scalar Tensor: a step size, a norm) leaves the other's shape, which
    # np.broadcast_shapes (~1.5 us) would only confirm
    shape = x.shape if y.ndim == 0 else y.shape if x.ndim == 0 else np.broadcast_shapes(
        x.shape, y.shape)
    if len(shape) < 2 or math.prod(shape) < _FROM:
        return x, y
    wx, wy = widen(x, shape), widen(y, shape)
    if wx.shape != shape and wy.shape != shape and np.broadcast_shapes(
            wx.shape, wy.shape) != shape:
        return x, y  # each widened only partly: together they would lose axes
    return wx, wy


_ROW_OPS = {np.add: 0, np.subtract: 1, np.multiply: 2, np.divide: 3}
_ROW_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def one_per_row(fn: np.ufunc, x: np.ndarray, y: np.ndarray) -> bool:
    """Whether row_op's kernel takes fn(x, y): fn add, subtract, multiply or divide, y one
    number per row of x (x's shape with the last dim 1: a keepdim reduction over it), both
    aligned, C-contiguous and of one float dtype, rows of at least _SHORT (shorter ones are
    widen's) and x of the op's size from _FROM (the cheap tests first: every binary op of
    two shapes asks)."""
    return x.size >= _FROM and fn in _ROW_OPS and x.shape[-1] >= _SHORT \
        and y.shape == x.shape[:-1] + (1,) and x.dtype in _ROW_FLOATS and y.dtype == x.dtype \
        and x.flags.c_contiguous and x.flags.aligned and y.flags.c_contiguous \
        and y.flags.aligned


def row_op(fn: np.ufunc, x: np.ndarray, y: np.ndarray, out: np.ndarray | None = None
           ) -> np.ndarray:
    """fn(x, y, out=out) for fn add, subtract, multiply or divide, ``out`` None, x itself,
    or a C-contiguous array of x's shape and dtype apart from it: by the row kernel where
    one_per_row holds (numpy's bits), else by numpy."""
    if not one_per_row(fn, x, y):
        return fn(x, y, out=out)
    if out is None:
        out = np.empty_like(x)
    c = x.shape[-1]
    pass_kernel("rowop", x.dtype)(x.reshape(-1, c), y.reshape(-1), out.reshape(-1, c),
                                  _ROW_OPS[fn], out is x)
    return out


def binary(fn: np.ufunc, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """fn(x, y), a numpy arithmetic ufunc of two arrays of one dtype, over long loops: a
    widened operand (a fresh array of the result's shape and dtype) takes the result in
    place, one array less to allocate and to pull through the cache (X - X.mean(1, True)
    of (256, 100, 3): 1.5x); one number per row of x (x - x.max(-1, True)) is row_op's."""
    if one_per_row(fn, x, y):
        return row_op(fn, x, y)
    wx, wy = long_loops(x, y)
    if wx.shape == wy.shape and wx.dtype == wy.dtype:
        if wy is not y:
            return fn(wx, wy, out=wy)
        if wx is not x:
            return fn(wx, wy, out=wx)
    return fn(wx, wy)
