"""Two loops numpy runs slowly because of a layout, in numba: ndarrays in, ndarrays out.

- ``repeat``: y (b, k) repeated out to (b, r, k) along the middle axis, k short. np.repeat
  copies k elements at a time (12 bytes for a (256, 1, 3) mean): 5x slower than this loop,
  whose k is a constant for k <= 4 (LLVM unrolls it). It copies bits, so one kernel per
  itemsize (4 and 8 bytes) serves every dtype of that size.
- ``sum_all``: the sum of a contiguous vector. Blocks of ``BLOCK`` terms are each summed in
  SIMD lanes (reassociation allowed there, as a BLAS dot does), and the block sums are
  summed again the same way: numpy's pairwise sum keeps no more digits, and runs
  without SIMD (4x slower on float32).

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


def _sum_all(f):
    n = f.shape[0]
    m = (n + BLOCK - 1) // BLOCK
    sums = np.empty(m, f.dtype)
    _block_sums(f, n, sums)
    while m > 1:
        n, m = m, (m + BLOCK - 1) // BLOCK
        _block_sums(sums, n, sums)
    return sums[:1]


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


def sum_kernel(dtype: np.dtype):
    """kernel(f) -> the sum of f, a C-contiguous vector of ``dtype`` with at least one term,
    as an array of one element."""
    name = f"sum_{np.dtype(dtype)}"
    if name in jitted:
        return jitted[name]
    dt = from_dtype(np.dtype(dtype))
    return compile_for(_sum_all, types.Array(dt, 1, "C")(types.Array(dt, 1, "C", readonly=True)),
                       f"the blocked sum for {dtype}", name)


def __getattr__(name: str):
    """repeat_<4|8> and sum_<dtype>, by their entry points' names (the registry's)."""
    if name in ("repeat_4", "repeat_8"):
        return repeat_kernel(int(name[7:]))
    if name in ("sum_float32", "sum_float64"):
        return sum_kernel(np.dtype(name[4:]))
    raise AttributeError(name)
