"""Batched products of tiny matrices in numba: ndarrays in, ndarrays out.

numpy's matmul pays ~150 ns per matrix of a batch whatever its size (a gufunc loop that
calls BLAS or its own inner loop per matrix): 0.6 ms for 4096 3x3 products whose
arithmetic takes 30 us. Here the whole batch is one loop. The common square sizes get loop
bounds that are constants, which LLVM unrolls (3x faster than bounds read at run time).
Point clouds (r x 3) have two loops of their own: through a 3x3 matrix (bmm3), and the
3x3 cross-covariance of two clouds (cross3, c^T y: Kabsch's and Umeyama's H).

One signature per dtype, compiled on the first product of that dtype and cached on disk:
the general loop on 'A' layout arrays (C-contiguous, transposed and broadcast operands all
match it), the clouds' on C-contiguous ones (ops/matmul.py checks before calling);
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
    elif m == 1 and k == 3 and n == 3:  # a point through 3x3 matrices (a centroid's x R)
        _core(x, y, out, 1, 3, 3)
    elif m == 3 and k == 1 and n == 3:  # its backward's outer products (x^T g)
        _core(x, y, out, 3, 1, 3)
    else:
        _core(x, y, out, m, k, n)


def _bmm3(x, y, out):
    """out = x @ y for x (B, m, 3), y (B, 3, 3): a point cloud's rows through a 3x3 matrix,
    y's nine entries held while the rows go by (the loop above re-reads them for each row,
    which LLVM does not hoist: 2x slower, and numpy's BLAS call per matrix 1.4x). Each
    cloud is read as one flat row of 3m numbers: LLVM then vectorises across points (3x on
    float32 (256, 100, 3), 1.5x on float64, against indexing x[p, i, 0]); the same
    products and sums, so the same bits."""
    b, r = x.shape[0], x.shape[1]
    xs = x.reshape(b, 3 * r)
    outs = out.reshape(b, 3 * r)
    for p in range(b):
        y00, y01, y02 = y[p, 0, 0], y[p, 0, 1], y[p, 0, 2]
        y10, y11, y12 = y[p, 1, 0], y[p, 1, 1], y[p, 1, 2]
        y20, y21, y22 = y[p, 2, 0], y[p, 2, 1], y[p, 2, 2]
        row, dst = xs[p], outs[p]
        for i in range(r):
            a0, a1, a2 = row[3 * i], row[3 * i + 1], row[3 * i + 2]
            dst[3 * i] = a0 * y00 + a1 * y10 + a2 * y20
            dst[3 * i + 1] = a0 * y01 + a1 * y11 + a2 * y21
            dst[3 * i + 2] = a0 * y02 + a1 * y12 + a2 * y22


def _cross3(x, y, out):
    """out = x^T @ y for clouds x, y (B, r, 3), r >= 1: the 3x3 cross-covariance of each
    pair (Kabsch, Umeyama), nine sums held while the points go by. numpy's matmul of the
    transposed view first copied it, then called BLAS once per matrix: 3.6x slower on float32
    (256, 100, 3). The sums are reassociated (as a BLAS dot's), in the clouds' dtype."""
    b, r = x.shape[0], x.shape[1]
    xs = x.reshape(b, 3 * r)
    ys = y.reshape(b, 3 * r)
    for p in range(b):
        u, v = xs[p], ys[p]
        a0, a1, a2, b0, b1, b2 = u[0], u[1], u[2], v[0], v[1], v[2]
        s00, s01, s02 = a0 * b0, a0 * b1, a0 * b2
        s10, s11, s12 = a1 * b0, a1 * b1, a1 * b2
        s20, s21, s22 = a2 * b0, a2 * b1, a2 * b2
        for i in range(1, r):
            a0, a1, a2 = u[3 * i], u[3 * i + 1], u[3 * i + 2]
            b0, b1, b2 = v[3 * i], v[3 * i + 1], v[3 * i + 2]
            s00 += a0 * b0
            s01 += a0 * b1
            s02 += a0 * b2
            s10 += a1 * b0
            s11 += a1 * b1
            s12 += a1 * b2
            s20 += a2 * b0
            s21 += a2 * b1
            s22 += a2 * b2
        out[p, 0, 0], out[p, 0, 1], out[p, 0, 2] = s00, s01, s02
        out[p, 1, 0], out[p, 1, 1], out[p, 1, 2] = s10, s11, s12
        out[p, 2, 0], out[p, 2, 1], out[p, 2, 2] = s20, s21, s22


notice_compiles = True  # python -m minigrad.warmup shows its own progress instead
NOTICE_AFTER_S = 0.5  # a load from numba's cache takes milliseconds, a compile seconds


# Every kernel compile_for made in this process, by name (the registry's entry points of
# the "small" family, minigrad/_kernel_registry.py).
jitted: dict = {}


def compile_for(py_func, signature, what: str, name: str, fastmath=False):
    """njit at one signature, cached on disk (minigrad/_numba_cache.py), with numba's
    ``fastmath`` flags as given (none by default). x / 0 is inf or nan, as in numpy (numba's
    default raises). A load from the cache takes milliseconds;
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
        kernel = njit(signature, cache=True, nogil=True, error_model="numpy",
                      fastmath=fastmath)(py_func)
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


def bmm3_kernel(dtype: np.dtype):
    """kernel(x, y, out): out = x @ y for x (B, m, 3) C-contiguous, y (B, 3, 3) of any
    strides, out (B, m, 3) C-contiguous, all of dtype."""
    name = f"bmm3_{np.dtype(dtype)}"
    if name in jitted:
        return jitted[name]
    dt = from_dtype(dtype)
    c3 = types.Array(dt, 3, "C")
    signature = types.void(types.Array(dt, 3, "C", readonly=True),
                           types.Array(dt, 3, "A", readonly=True), c3)
    return compile_for(_bmm3, signature, f"the batched point-cloud matmul for {dtype}", name)


def cross3_kernel(dtype: np.dtype):
    """kernel(x, y, out): out = x^T @ y for x, y (B, r, 3) C-contiguous, r >= 1, out
    (B, 3, 3) C-contiguous, all of dtype."""
    name = f"cross3_{np.dtype(dtype)}"
    if name in jitted:
        return jitted[name]
    dt = from_dtype(dtype)
    given = types.Array(dt, 3, "C", readonly=True)
    return compile_for(_cross3, types.void(given, given, types.Array(dt, 3, "C")),
                       f"the batched cross-covariance of point clouds for {dtype}", name,
                       fastmath={"reassoc", "contract"})


_KERNELS = {"bmm": bmm_kernel, "bmm3": bmm3_kernel, "cross3": cross3_kernel}


def __getattr__(name: str):
    """bmm_<dtype>, bmm3_<dtype> and cross3_<dtype>: bmm_kernel(dtype), bmm3_kernel(dtype)
    and cross3_kernel(dtype), by their entry points' names (the registry's)."""
    kind, _, dtype = name.partition("_")
    if kind in _KERNELS and dtype in ("float32", "float64"):
        return _KERNELS[kind](np.dtype(dtype))
    raise AttributeError(name)
