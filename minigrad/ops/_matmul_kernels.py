"""Batched products of tiny matrices in numba: ndarrays in, ndarrays out.

numpy's matmul pays ~150 ns per matrix of a batch whatever its size (a gufunc loop that
calls BLAS or its own inner loop per matrix): 0.6 ms for 4096 3x3 products whose
arithmetic takes 30 us. Here the whole batch is one loop. The common square sizes get loop
bounds that are constants, which LLVM unrolls (3x faster than bounds read at run time).

One signature per dtype, on 'A' layout arrays (C-contiguous, transposed and broadcast
operands all match it), compiled on the first product of that dtype and cached on disk;
the warm-up also compiles it ahead of time (minigrad/_aot.py), which ops/matmul.py calls
when it is built.
"""

import sys
import threading

import numpy as np
from numba import from_dtype, types

from minigrad._numba_cache import njit


@njit(nogil=True, inline="always")
def _core(x, y, out, m, k, n):
    for p in range(x.shape[0]):
        for i in range(m):
            for j in range(n):
                acc = x[p, i, 0] * y[p, 0, j]
                for l in range(1, k):
                    acc += x[p, i, l] * y[p, l, j]
                out[p, i, j] = acc


def _bmm(x, y, out):
    m, k = x.shape[1], x.shape[2]
    n = y.shape[2]
    # The same loop, inlined with constant bounds for the sizes that are worth it.
    if m == 3 and k == 3 and n == 3:
        _core(x, y, out, 3, 3, 3)
    elif m == 2 and k == 2 and n == 2:
        _core(x, y, out, 2, 2, 2)
    elif m == 4 and k == 4 and n == 4:
        _core(x, y, out, 4, 4, 4)
    else:
        _core(x, y, out, m, k, n)


notice_compiles = True  # python -m minigrad.warmup shows its own progress instead
NOTICE_AFTER_S = 0.5  # a load from numba's cache takes milliseconds, a compile seconds


# Every kernel compile_for made in this process, by name (the registry's entry points of
# the "small" family, minigrad/_kernel_registry.py).
jitted: dict = {}


def compile_for(py_func, signature, what: str, name: str):
    """njit at one signature, cached on disk (minigrad/_numba_cache.py). x / 0 is inf or
    nan, as in numpy (numba's default raises). A load from the cache takes milliseconds;
    when it is still busy half a second in, it is compiling, and stderr says so (``what``
    names it)."""
    notice = threading.Timer(NOTICE_AFTER_S, lambda: print(
        f"minigrad: compiling {what}, once (numba caches it; `python -m minigrad.warmup` "
        "does it ahead of time) ...", file=sys.stderr, flush=True))
    notice.daemon = True
    if notice_compiles:
        try:
            notice.start()
        except RuntimeError:  # "can't start new thread" (short of memory): no notice
            pass
    try:
        kernel = njit(signature, cache=True, nogil=True, error_model="numpy")(py_func)
    finally:
        notice.cancel()
    jitted[name] = kernel
    return kernel


def bmm_kernel(dtype: np.dtype):
    """kernel(x, y, out): out = x @ y for x (B, m, k), y (B, k, n), out (B, m, n) of dtype,
    any strides (out's too), k >= 1."""
    name = f"bmm_{np.dtype(dtype)}"
    if name in jitted:
        return jitted[name]
    a3 = types.Array(from_dtype(dtype), 3, "A")
    r3 = types.Array(from_dtype(dtype), 3, "A", readonly=True)  # broadcast views
    return compile_for(_bmm, types.void(r3, r3, a3), f"the batched small matmul for {dtype}",
                       name)


def __getattr__(name: str):
    """bmm_<dtype>: bmm_kernel(dtype), by its entry point's name (the registry's)."""
    if name.startswith("bmm_") and name[4:] in ("float32", "float64"):
        return bmm_kernel(np.dtype(name[4:]))
    raise AttributeError(name)
