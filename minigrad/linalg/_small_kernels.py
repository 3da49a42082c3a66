"""det, inverse and solve of batches of 2x2, 3x3 and 4x4 matrices by cofactors, in one numba
pass: ndarrays in, ndarrays out (linalg/_small.py drives it and says when its results are
kept).

Each matrix is read once, in float64 (float32 input keeps its own precision), its cofactor
matrix C written out in full (C_ij = (-1)^(i+j) times the minor without row i and column j),
then det A = sum_j A_0j C_0j, A^-1 = C^T / det A and A^-1 B = C^T B / det A. With each
matrix it reports whether the closed form is safe there (see ``_safe``); where it is not,
the caller asks LAPACK. Loop bounds are constants for each size, which LLVM unrolls.

One signature per dtype, on 'A' layout inputs (any strides), compiled on first use and
cached on disk; the warm-up also compiles it ahead of time (minigrad/_aot.py).
"""

import numpy as np
from numba import from_dtype, types

from minigrad._numba_cache import njit

from ..ops._matmul_kernels import compile_for, jitted

DET, INV, SOLVE, COFACTOR = 0, 1, 2, 3  # what the kernel writes (its `mode`)

# The expansion's terms are as large as prod_i |row_i|, so its rounding error is about
# eps / h of det A, h = |det A| / prod_i |row_i| (Hadamard's ratio, 1 for orthogonal rows).
# LAPACK's pivoted LU is accurate to about eps kappa (kappa = |A|_F |A^-1|_F, and
# |A^-1|_F = |C|_F / |det A|): the closed form is kept where 1 / h <= kappa, so within
# LAPACK's bound (then the inverse's and the solve's errors are too, as
# |A^-1 e_j| |row_j| >= 1), and where 1 / h <= 1e8, so that det A itself, which the first
# test divides out, is right to ~1e-8 in any case (both tests squared: no root, no divide).
_CAP2 = 1e16  # 1e8 squared
# Row norms outside this range may have over- or underflowed in the test: LAPACK's.
_TINY, _HUGE = 1e-280, 1e280


@njit(nogil=True, inline="always")
def _cofactors(m, c, n):
    """c = the cofactor matrix of m, both flat (n * n,), n in 2, 3, 4."""
    if n == 2:
        c[0], c[1], c[2], c[3] = m[3], -m[2], -m[1], m[0]
    elif n == 3:
        a00, a01, a02, a10, a11, a12, a20, a21, a22 = (m[0], m[1], m[2], m[3], m[4], m[5],
                                                       m[6], m[7], m[8])
        c[0] = a11 * a22 - a12 * a21
        c[1] = a12 * a20 - a10 * a22
        c[2] = a10 * a21 - a11 * a20
        c[3] = a02 * a21 - a01 * a22
        c[4] = a00 * a22 - a02 * a20
        c[5] = a01 * a20 - a00 * a21
        c[6] = a01 * a12 - a02 * a11
        c[7] = a02 * a10 - a00 * a12
        c[8] = a00 * a11 - a01 * a10
    else:
        a00, a01, a02, a03, a10, a11, a12, a13 = m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7]
        a20, a21, a22, a23, a30, a31, a32, a33 = (m[8], m[9], m[10], m[11], m[12], m[13],
                                                  m[14], m[15])
        # the 2x2 minors of rows 0, 1 (s) and of rows 2, 3 (t), by their columns
        s01, s02, s03 = a00 * a11 - a01 * a10, a00 * a12 - a02 * a10, a00 * a13 - a03 * a10
        s12, s13, s23 = a01 * a12 - a02 * a11, a01 * a13 - a03 * a11, a02 * a13 - a03 * a12
        t01, t02, t03 = a20 * a31 - a21 * a30, a20 * a32 - a22 * a30, a20 * a33 - a23 * a30
        t12, t13, t23 = a21 * a32 - a22 * a31, a21 * a33 - a23 * a31, a22 * a33 - a23 * a32
        c[0] = a11 * t23 - a12 * t13 + a13 * t12
        c[1] = a12 * t03 - a10 * t23 - a13 * t02
        c[2] = a10 * t13 - a11 * t03 + a13 * t01
        c[3] = a11 * t02 - a10 * t12 - a12 * t01
        c[4] = a02 * t13 - a01 * t23 - a03 * t12
        c[5] = a00 * t23 - a02 * t03 + a03 * t02
        c[6] = a01 * t03 - a00 * t13 - a03 * t01
        c[7] = a00 * t12 - a01 * t02 + a02 * t01
        c[8] = a31 * s23 - a32 * s13 + a33 * s12
        c[9] = a32 * s03 - a30 * s23 - a33 * s02
        c[10] = a30 * s13 - a31 * s03 + a33 * s01
        c[11] = a31 * s02 - a30 * s12 - a32 * s01
        c[12] = a22 * s13 - a21 * s23 - a23 * s12
        c[13] = a20 * s23 - a22 * s03 + a23 * s02
        c[14] = a21 * s03 - a20 * s13 - a23 * s01
        c[15] = a20 * s12 - a21 * s02 + a22 * s01


@njit(nogil=True, inline="always")
def _safe(m, c, d, n):
    """Whether the closed form is within LAPACK's accuracy for m (see _CAP2 above): false
    at singular matrices too; true where m has a NaN (its result is NaN, as LAPACK's)."""
    rows, fa, fc = 1.0, 0.0, 0.0
    for i in range(n):
        r = 0.0
        for j in range(n):
            r += m[i * n + j] * m[i * n + j]
            fc += c[i * n + j] * c[i * n + j]
        rows *= r
        fa += r
    # written so that NaN compares false: kept
    return not (rows >= _CAP2 * (d * d) or rows > fa * fc or rows < _TINY or rows > _HUGE)


@njit(nogil=True, inline="always")
def _core(a, b, mode, d, out, rough, n):
    m = np.empty(n * n)
    c = np.empty(n * n)
    k = b.shape[2]
    count = 0
    for p in range(a.shape[0]):
        for i in range(n):
            for j in range(n):
                m[i * n + j] = a[p, i, j]
        _cofactors(m, c, n)
        det = m[0] * c[0]
        for j in range(1, n):
            det += m[j] * c[j]
        det += 0.0  # (-0.0 + 0.0 is 0.0: the zeros of a diagonal A^-1 print as 0.)
        d[p] = det
        if _safe(m, c, det, n):
            rough[p] = 0
        else:
            rough[p] = 1
            count += 1
        if mode == INV:  # A^-1 = C^T / det
            r = 1.0 / det
            for i in range(n):
                for j in range(n):
                    out[p, i, j] = c[j * n + i] * r + 0.0
        elif mode == SOLVE:  # C^T B / det
            r = 1.0 / det
            for i in range(n):
                for j in range(k):
                    acc = c[i] * b[p, 0, j]
                    for t in range(1, n):
                        acc += c[t * n + i] * b[p, t, j]
                    out[p, i, j] = acc * r + 0.0
        elif mode == COFACTOR:
            for i in range(n):
                for j in range(n):
                    out[p, i, j] = c[i * n + j] + 0.0
    return count


def _closed(a, b, mode, d, out, rough):
    n = a.shape[1]
    if n == 2:
        return _core(a, b, mode, d, out, rough, 2)
    if n == 3:
        return _core(a, b, mode, d, out, rough, 3)
    return _core(a, b, mode, d, out, rough, 4)


def closed_kernel(dt: np.dtype):
    """kernel(a, b, mode, d, out, rough) for a (B, n, n) of dtype dt, n in 2, 3, 4: det A into
    d (B,) float64 and whether LAPACK should redo A into rough (B,) uint8, always, returning
    how many should be; and by
    mode, A^-1 (INV) or its cofactor matrix (COFACTOR) into out (B, n, n), or A^-1 B
    (SOLVE) for b (B, n, k) into out (B, n, k). a and b any strides (b, out: (1, 1, 1)
    when not written); d, out, rough C-contiguous, of dt but for d."""
    name = f"closed_{np.dtype(dt)}"
    if name in jitted:
        return jitted[name]
    ro = types.Array(from_dtype(dt), 3, "A", readonly=True)
    sig = types.int64(ro, ro, types.int64, types.Array(types.float64, 1, "C"),
                     types.Array(from_dtype(dt), 3, "C"), types.Array(types.uint8, 1, "C"))
    return compile_for(_closed, sig, f"the closed forms of small matrices for {dt}", name)


def __getattr__(name: str):
    """closed_<dtype>: closed_kernel(dtype), by its entry point's name (the registry's)."""
    if name.startswith("closed_") and name[7:] in ("float32", "float64"):
        return closed_kernel(np.dtype(name[7:]))
    raise AttributeError(name)
