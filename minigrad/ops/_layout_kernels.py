"""Two loops numpy runs slowly because of a layout, in numba: ndarrays in, ndarrays out.

- ``repeat``: y (b, k) repeated out to (b, r, k) along the middle axis, k short. np.repeat
  copies k elements at a time (12 bytes for a (256, 1, 3) mean): 5x slower than this loop,
  whose k is a constant for k <= 4 (LLVM unrolls it). It copies bits, so one kernel per
  itemsize (4 and 8 bytes) serves every dtype of that size.
- ``sum_all``: the sum of a contiguous vector. Blocks of ``BLOCK`` terms are each summed in
  SIMD lanes (reassociation allowed there, as a BLAS dot does), and the block sums are
  summed again the same way: numpy's pairwise sum keeps no more digits, and runs
  without SIMD (4x slower on float32). ``sum_rows``: each row of a matrix so, faster than
  BLAS's row dots with a ones vector (float64 (1000, 1000): 94 us against 140).
  ``sumsq_all``: the sum of squares (a whole tensor's 2-norm) blocked the same way: BLAS's
  blocked dots and their sum were ~10 us of an 80 x 80's norm, three numpy calls.
- ``max_rows`` and ``max_middle``: the max (or min) of each row, and over the middle axis
  of (b, r, k), NaN propagating as in numpy. A float max loop vectorises only under
  fastmath's no-NaN promise, which would lose the NaN: the rows compare the floats' bits
  as ordered integers instead (an integer max vectorises, and a second one over the bits
  without the sign finds a NaN); the middle axis is an elementwise select per lane, which
  vectorises as it is. Both beat numpy's reduce (whose short or strided inner loops run
  1.3-2x slower) and torch's on (1000, 1000) rows.
- ``add_rows``: out[index[k]] += g[k], an integer index's gradient (x[idx], embeddings).
  np.add.at adds one element at a time (8.9 ms for 2000 rows of 512 float32); this adds
  whole rows, in the same order.
- ``relu`` (with its mask) and ``cumsum``: np.maximum(x, 0) runs 4x torch's time (its NaN
  test per element does not vectorise), np.cumsum 3-5x (a strided accumulate per axis);
  the same numbers here in one pass each. ``sigmoid_finish``: sigmoid's select and quotient
  after numpy's exp, where numpy needed a second exp and four more passes; ``sigmoid_grad``:
  its derivative times the gradient, a first-order backward's one pass. ``leaky``:
  leaky_relu and its slope, a select each (numpy's where branched per element).
- ``row_op``: x (op) m with m one number per row (a keepdim reduction's result: x - max,
  x / sum), at a same-shape op's speed.

One signature per dtype, compiled on first use and cached on disk; the warm-up also
compiles them ahead of time (minigrad/_aot.py).
"""

import numpy as np
from numba import from_dtype, types

from minigrad._numba_cache import njit

from ._matmul_kernels import compile_for, jitted

# The terms one block sum adds up in SIMD lanes: as reduce_fast's BLAS dots.
BLOCK = 1024
# Reassociating a sum lets LLVM vectorise it; nothing else is relaxed (no 'nnan'/'ninf').
_FAST = {"reassoc", "contract"}


@njit(nogil=True, inline="always")
def _fill(y, out, k):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            for l in range(k):
                out[i, j, l] = y[i, l]


def _repeat(y, out):
    k = out.shape[2]
    # The same loop, inlined with a constant k for the short rows it is called for.
    if k == 1:
        _fill(y, out, 1)
    elif k == 2:
        _fill(y, out, 2)
    elif k == 3:
        _fill(y, out, 3)
    elif k == 4:
        _fill(y, out, 4)
    else:
        _fill(y, out, k)


@njit(nogil=True, fastmath=_FAST, cache=True, no_cpython_wrapper=True,
      no_cfunc_wrapper=True)
def _block_sums(src, n, out):
    """out[i] = the sum of src[i BLOCK : (i + 1) BLOCK] (of the first n terms); out may be
    src itself: block i is read before out[i] is written, and later blocks lie beyond i."""
    for i in range((n + BLOCK - 1) // BLOCK):
        lo = i * BLOCK
        # a slice indexed from 0: indexing src from lo kept LLVM from vectorising (10x)
        block = src[lo:min(lo + BLOCK, n)]
        s = block[0]
        for j in range(1, block.shape[0]):
            s += block[j]
        out[i] = s


@njit(nogil=True, inline="always")
def _cascade(f, sums):
    """The sum of f by levels of block sums, ``sums`` a scratch of f's block count."""
    n = f.shape[0]
    m = (n + BLOCK - 1) // BLOCK
    _block_sums(f, n, sums)
    while m > 1:
        n, m = m, (m + BLOCK - 1) // BLOCK
        _block_sums(sums, n, sums)
    return sums[0]


def _sum_all(f):
    return _cascade(f, np.empty((f.shape[0] + BLOCK - 1) // BLOCK, f.dtype))


@njit(nogil=True, fastmath=_FAST, cache=True, no_cpython_wrapper=True,
      no_cfunc_wrapper=True)
def _block_squares(src, out):
    """out[i] = the sum of the squares of src[i BLOCK : (i + 1) BLOCK]."""
    n = src.shape[0]
    for i in range((n + BLOCK - 1) // BLOCK):
        lo = i * BLOCK
        block = src[lo:min(lo + BLOCK, n)]
        s = block[0] * block[0]
        for j in range(1, block.shape[0]):
            s += block[j] * block[j]
        out[i] = s


def _sumsq_all(f):
    """The sum of the squares of f: its blocks' sums of squares, then those summed as
    _cascade sums (a BLAS dot's accuracy, as reduce_fast's row dots)."""
    m = (f.shape[0] + BLOCK - 1) // BLOCK
    sums = np.empty(m, f.dtype)
    _block_squares(f, sums)
    return _cascade(sums, sums)  # (in place: each level reads a block before writing it)


@njit(nogil=True, fastmath=_FAST, cache=True, no_cpython_wrapper=True,
      no_cfunc_wrapper=True)
def _short_rows(a, out):
    """out[i] = the sum of row i, rows of at most BLOCK terms: one plain loop (a call per
    row doubled the time of rows of 3)."""
    for i in range(a.shape[0]):
        row = a[i]
        s = row[0]
        for j in range(1, row.shape[0]):
            s += row[j]
        out[i] = s


def _sum_rows(a):
    out = np.empty(a.shape[0], a.dtype)
    if a.shape[1] <= BLOCK:
        _short_rows(a, out)
        return out
    sums = np.empty((a.shape[1] + BLOCK - 1) // BLOCK, a.dtype)
    for i in range(a.shape[0]):
        out[i] = _cascade(a[i], sums)
    return out


def _max_rows(bits, out, low, shift, nan_from, flip):
    """out[i] = the max of row i of ``bits``, the float rows' bits as signed integers (out
    the same), or the min when ``flip`` is -1 (0: max); a NaN in a row is its result (its
    first). ``low`` is every bit but the sign's, ``shift`` the sign bit's place, ``nan_from``
    the bits of +inf: a float's bits without the sign are larger exactly for a NaN."""
    # The float's bits x become x ^ (low if x < 0): integers in the floats' order (-0 just
    # below +0), the map its own inverse; xor with -1 reverses the order, for the min. The
    # ufuncs keep each step at the integers' width (Python's operators widen to 64 bits,
    # which halved the lanes of float32's).
    for i in range(bits.shape[0]):
        row = bits[i]
        best = np.bitwise_not(low)
        worst = np.bitwise_xor(low, low)
        for j in range(row.shape[0]):
            x = row[j]
            key = np.bitwise_xor(np.bitwise_xor(x, np.bitwise_and(np.right_shift(x, shift),
                                                                  low)), flip)
            best = max(key, best)
            worst = max(np.bitwise_and(x, low), worst)
        if worst > nan_from:
            for j in range(row.shape[0]):
                if np.bitwise_and(row[j], low) > nan_from:
                    out[i] = row[j]
                    break
        else:
            key = np.bitwise_xor(best, flip)
            out[i] = np.bitwise_xor(key, np.bitwise_and(np.right_shift(key, shift), low))


def _max_middle(a, out, lower):
    """out[i, l] = the max over j of a[i, j, l] (the min when ``lower``), its first NaN if
    it has one; a (b, r, k) with r >= 1, out (b, k)."""
    for i in range(a.shape[0]):
        acc, first = out[i], a[i, 0]
        for l in range(acc.shape[0]):  # a loop: a slice assignment cost half the kernel's time
            acc[l] = first[l]
        for j in range(1, a.shape[1]):
            src = a[i, j]
            # A NaN held stays, a NaN met is taken; & and | (no branch) let it vectorise, and
            # one loop per direction (a flag tested inside cost 1.2-1.7x)
            if lower:
                for l in range(acc.shape[0]):
                    v, c = src[l], acc[l]
                    acc[l] = v if (c == c) & ((v < c) | (v != v)) else c
            else:
                for l in range(acc.shape[0]):
                    v, c = src[l], acc[l]
                    acc[l] = v if (c == c) & ((v > c) | (v != v)) else c


def max_kernel(dtype: np.dtype, middle: bool = False):
    """kernel(bits, out, low, shift, nan_from, flip): _max_rows for ``dtype`` (float32 or
    float64) rows viewed as the signed integers of their width, (b, r) and (b,) C-contiguous,
    r >= 1, the four numbers of that integer type; with ``middle``, kernel(a, out, lower):
    _max_middle for a (b, r, k) and out (b, k) C-contiguous of ``dtype``."""
    name = f"{'maxmid' if middle else 'maxrows'}_{np.dtype(dtype)}"
    if name in jitted:
        return jitted[name]
    if middle:
        dt = from_dtype(np.dtype(dtype))
        sig = types.void(types.Array(dt, 3, "C", readonly=True), types.Array(dt, 2, "C"),
                         types.boolean)
    else:
        it = types.int32 if np.dtype(dtype).itemsize == 4 else types.int64
        sig = types.void(types.Array(it, 2, "C", readonly=True), types.Array(it, 1, "C"),
                         it, it, it, it)
    return compile_for(_max_middle if middle else _max_rows, sig,
                       f"the {'middle-axis' if middle else 'row'} max for {dtype}", name)


def repeat_kernel(itemsize: int):
    """kernel(y, out): out[i, j, l] = y[i, l], y (b, k) of any strides, out (b, r, k)
    C-contiguous, both of the unsigned integer type of ``itemsize`` bytes (4 or 8)."""
    name = f"repeat_{itemsize}"
    if name in jitted:
        return jitted[name]
    dt = types.uint32 if itemsize == 4 else types.uint64
    return compile_for(_repeat, types.void(types.Array(dt, 2, "A", readonly=True),
                                           types.Array(dt, 3, "C")),
                       f"the broadcast repeat of {itemsize}-byte items", name)


def _add_rows(out, index, g):
    """out[index[k]] += g[k] for k in order, repeats accumulating in that order (np.add.at's
    sums, bit for bit); every index in [0, out rows)."""
    for k in range(index.shape[0]):
        row, src = out[index[k]], g[k]
        for j in range(src.shape[0]):
            row[j] += src[j]


def _relu(x, out, mask):
    """out = np.maximum(x, 0) (a NaN kept, -0.0 to +0.0) and mask = not x <= 0 (where the
    gradient passes: a NaN's too, as torch's), in one pass over flat C-contiguous arrays (a
    select per element, which vectorises)."""
    for i in range(x.shape[0]):
        v = x[i]
        keep = not v <= 0
        mask[i] = keep
        out[i] = v if keep else 0.0


def _sigmoid_finish(x, e, one, slope):
    """e[i] = (1 if x[i] >= 0 else e[i]) / (1 + e[i]) in place, e = exp(-|x|) (numpy's SIMD
    exp, which numba's scalar one is 10x slower than): sigmoid by sign in x's dtype (``one``
    is 1 of it, so no operation widens), flat C-contiguous arrays; with ``slope``, its
    derivative e / ((1 + e) (1 + e)) instead, as ops/unary.py's numpy form orders it."""
    if slope:
        for i in range(x.shape[0]):
            v = e[i]
            e[i] = v / ((one + v) * (one + v))
    else:
        for i in range(x.shape[0]):
            v = e[i]
            e[i] = (one if x[i] >= 0 else v) / (one + v)


def _sigmoid_grad(g, e, one):
    """e[i] = g[i] * (e[i] / ((1 + e[i]) (1 + e[i]))) in place, e = exp(-|x|): sigmoid's
    first-order backward in one pass, the derivative (_sigmoid_finish's slope) times g with
    the roundings of the two passes it replaces; flat C-contiguous arrays of one dtype."""
    for i in range(g.shape[0]):
        v = e[i]
        e[i] = g[i] * (v / ((one + v) * (one + v)))


def _leaky(x, out, slope, slope_only):
    """out = x where x > 0 else slope * x (leaky_relu), or with ``slope_only`` its
    derivative, 1 where x > 0 else slope; flat C-contiguous arrays of x's dtype (slope too:
    the product is numpy's, a float32 one without widening). One loop per kind: a flag
    tested inside would cost the select's vectorising."""
    if slope_only:
        for i in range(x.shape[0]):
            out[i] = 1.0 if x[i] > 0 else slope
    else:
        for i in range(x.shape[0]):
            v = x[i]
            out[i] = v if v > 0 else v * slope


@njit(nogil=True, inline="always")
def _rows_by(src, m, dst, op):
    if op == 0:
        for i in range(src.shape[0]):
            v = m[i]
            for j in range(src.shape[1]):
                dst[i, j] = src[i, j] + v
    elif op == 1:
        for i in range(src.shape[0]):
            v = m[i]
            for j in range(src.shape[1]):
                dst[i, j] = src[i, j] - v
    elif op == 2:
        for i in range(src.shape[0]):
            v = m[i]
            for j in range(src.shape[1]):
                dst[i, j] = src[i, j] * v
    else:
        for i in range(src.shape[0]):
            v = m[i]
            for j in range(src.shape[1]):
                dst[i, j] = src[i, j] / v


def _row_op(x, m, out, op, inplace):
    """out[i, j] = x[i, j] (op) m[i], op 0: +, 1: -, 2: *, 3: /, over (R, C) C-contiguous x
    and out and m (R,); with ``inplace``, out[i, j] (op) m[i] into out (x unread): numpy's
    x - m[:, None] and kin, bit for bit (one IEEE operation each), at a same-shape op's
    speed where numpy's broadcast iterator cost 2.5x that ((8192, 64) - (8192, 1) float32:
    132 us against 51). One loop per op (a flag tested inside would keep it from
    vectorising), and in place the one array read and written (x passed as out too is two
    arrays to LLVM, whose overlap test then takes the scalar loop: 8x slower)."""
    if inplace:
        _rows_by(out, m, out, op)
    else:
        _rows_by(x, m, out, op)


def _cumsum(x, out):
    """out[i, j, l] = x[i, 0, l] + ... + x[i, j, l], added in that order (numpy's
    accumulate, bit for bit), x (b, r, k) of any strides, out C-contiguous: along the kept
    last axis in SIMD lanes; a last-axis sum (k = 1) runs 16 rows side by side, so no add
    waits for the one before it."""
    b, r, k = x.shape
    if k == 1:
        for i0 in range(0, b, 16):
            i1 = min(i0 + 16, b)
            for i in range(i0, i1):
                out[i, 0, 0] = x[i, 0, 0]
            for j in range(1, r):
                for i in range(i0, i1):
                    out[i, j, 0] = out[i, j - 1, 0] + x[i, j, 0]
        return
    for i in range(b):
        prev, src = out[i, 0], x[i, 0]
        for l in range(k):
            prev[l] = src[l]
        for j in range(1, r):
            cur, src = out[i, j], x[i, j]
            for l in range(k):
                cur[l] = prev[l] + src[l]
            prev = cur


# One pass each, by kind: the kernel, what a compile notice calls it, its arguments' types
# for a numba dtype (flat means (n,) C-contiguous of the dtype; the caller checks the rest).
_PASSES = {
    # relu(x, out, mask), mask bool
    "relu": (_relu, "relu", lambda dt: (_in(dt, 1), _out(dt, 1), _out(types.boolean, 1))),
    # sigmoid(x, e, one, slope), one = 1 of the dtype
    "sigmoid": (_sigmoid_finish, "sigmoid",
                lambda dt: (_in(dt, 1), _out(dt, 1), dt, types.boolean)),
    # sigmoid_grad(g, e, one), one = 1 of the dtype
    "sigmoid_grad": (_sigmoid_grad, "sigmoid's gradient",
                     lambda dt: (_in(dt, 1), _out(dt, 1), dt)),
    # leaky(x, out, slope, slope_only)
    "leaky": (_leaky, "leaky_relu", lambda dt: (_in(dt, 1), _out(dt, 1), dt, types.boolean)),
    # cumsum(x, out): x (b, r, k) of any strides, r >= 1, out C-contiguous
    "cumsum": (_cumsum, "cumsum",
               lambda dt: (types.Array(dt, 3, "A", readonly=True), _out(dt, 3))),
    # rowop(x, m, out, op, inplace): x, out (R, C), m (R,), op an int (0 + 1 - 2 * 3 /)
    "rowop": (_row_op, "a row's operand", lambda dt: (_in(dt, 2), _in(dt, 1), _out(dt, 2),
                                                      types.int64, types.boolean)),
    # addrows(out, index, g): out (m, c), index (n,) int64 in [0, m), g (n, c)
    "addrows": (_add_rows, "the row scatter-add",
                lambda dt: (_out(dt, 2), _in(types.int64, 1), _in(dt, 2))),
}


def _in(dt, ndim: int):
    return types.Array(dt, ndim, "C", readonly=True)


def _out(dt, ndim: int):
    return types.Array(dt, ndim, "C")


def compile_pass(kind: str, dtype: np.dtype):
    """The kernel of one of _PASSES' kinds for ``dtype`` (float32 or float64)."""
    name = f"{kind}_{np.dtype(dtype)}"
    if name in jitted:
        return jitted[name]
    fn, what, args = _PASSES[kind]
    return compile_for(fn, types.void(*args(from_dtype(np.dtype(dtype)))),
                       f"{what} for {dtype}", name)


_SUMS = {"sum": (_sum_all, "sum"), "rows": (_sum_rows, "row sums"),
         "sumsq": (_sumsq_all, "sum of squares")}


def sum_kernel(dtype: np.dtype, kind: str = "sum"):
    """kernel(f) -> the sum of f, a C-contiguous vector of ``dtype`` with at least one term,
    as a number; kind "sumsq": the sum of its squares; kind "rows": kernel(a) -> the sums of
    the rows of a C-contiguous (b, r) ``a``, r >= 1, as a (b,) array."""
    name = f"{kind}_{np.dtype(dtype)}"
    if name in jitted:
        return jitted[name]
    dt = from_dtype(np.dtype(dtype))
    rows = kind == "rows"
    given = types.Array(dt, 2 if rows else 1, "C", readonly=True)
    fn, what = _SUMS[kind]
    return compile_for(fn, (types.Array(dt, 1, "C") if rows else dt)(given),
                       f"the blocked {what} for {dtype}", name)


def __getattr__(name: str):
    """repeat_<4|8>, sum_<dtype>, sumsq_<dtype>, rows_<dtype>, maxrows_<dtype>,
    maxmid_<dtype> and the passes (relu_, sigmoid_, sigmoid_grad_, leaky_, cumsum_, rowop_,
    addrows_<dtype>), by their entry points' names (the registry's)."""
    if name in ("repeat_4", "repeat_8"):
        return repeat_kernel(int(name[7:]))
    kind, _, dtype = name.rpartition("_")  # (a kind may hold "_": sigmoid_grad)
    if kind in _SUMS and dtype in ("float32", "float64"):
        return sum_kernel(np.dtype(dtype), kind)
    if kind in ("maxrows", "maxmid") and dtype in ("float32", "float64"):
        return max_kernel(np.dtype(dtype), kind == "maxmid")
    if kind in _PASSES and dtype in ("float32", "float64"):
        return compile_pass(kind, np.dtype(dtype))
    raise AttributeError(name)
