"""The first-order SVD backward of a batch of tiny square matrices off every pole, in one
numba pass: ndarrays in, ndarrays out.

The same sums in the same order as the op-by-op formula (``_svd_backward._plain_fast``
with the batch-matmul kernel), so the same numbers; but it writes only gA, where the ops
write a dozen batch-sized temporaries, each of them fresh pages from the OS on every call
(the allocator returns a freed heap top beyond ~0.6 MB), which cost more than the
arithmetic. Used when the gradient will not be differentiated again (the engine runs the
backward without recording); higher orders take the ops.

One signature per dtype, compiled on first use and cached on disk; the warm-up also
compiles it ahead of time (minigrad/_aot.py), and _svd_backward.svd_vjp_square calls that
module when it is built.
"""

import numpy as np
from numba import from_dtype, types

from minigrad._numba_cache import njit

from ..ops._matmul_kernels import compile_for, jitted


@njit(nogil=True, inline="always")
def _core(u, s, vh, gu, gs, gvh, has_gu, has_gs, has_gvh, out, k):
    J = np.zeros((k, k), s.dtype)
    K = np.zeros((k, k), s.dtype)
    X = np.empty((k, k), s.dtype)
    T = np.empty((k, k), s.dtype)
    for p in range(s.shape[0]):
        if has_gu:  # J = U^T gU
            for i in range(k):
                for j in range(k):
                    acc = u[p, 0, i] * gu[p, 0, j]
                    for l in range(1, k):
                        acc += u[p, l, i] * gu[p, l, j]
                    J[i, j] = acc
        if has_gvh:  # K = V^T gV = Vh gVh^T
            for i in range(k):
                for j in range(k):
                    acc = vh[p, i, 0] * gvh[p, j, 0]
                    for l in range(1, k):
                        acc += vh[p, i, l] * gvh[p, j, l]
                    K[i, j] = acc
        for i in range(k):
            X[i, i] = gs[p, i] if has_gs else 0.0
            for j in range(i + 1, k):
                ja = J[i, j] - J[j, i]
                ka = K[i, j] - K[j, i]
                si2, sj2 = s[p, i] + s[p, i], s[p, j] + s[p, j]  # 2 s, in s's dtype
                # X_ji has both numerators and the first denominator negated: the same
                # two quotients (exactly), the second with its sign flipped.
                q_minus, q_plus = (ja + ka) / (sj2 - si2), (ja - ka) / (sj2 + si2)
                X[i, j] = q_minus + q_plus
                X[j, i] = q_minus - q_plus
        for i in range(k):  # gA = (U X) Vh
            for j in range(k):
                acc = u[p, i, 0] * X[0, j]
                for l in range(1, k):
                    acc += u[p, i, l] * X[l, j]
                T[i, j] = acc
        for i in range(k):
            for j in range(k):
                acc = T[i, 0] * vh[p, 0, j]
                for l in range(1, k):
                    acc += T[i, l] * vh[p, l, j]
                out[p, i, j] = acc


def _vjp(u, s, vh, gu, gs, gvh, flags, out):
    has_gu, has_gs, has_gvh = flags[0] != 0, flags[1] != 0, flags[2] != 0
    k = s.shape[1]
    # 3x3 (rotations, Kabsch) with constant loop bounds, which LLVM unrolls: 2x faster, for
    # ~1 s more of first compile per dtype.
    if k == 3:
        _core(u, s, vh, gu, gs, gvh, has_gu, has_gs, has_gvh, out, 3)
    else:
        _core(u, s, vh, gu, gs, gvh, has_gu, has_gs, has_gvh, out, k)


def vjp_kernel(dt: np.dtype):
    """kernel(u, s, vh, gu, gs, gvh, flags, out): gA into out, for (B, k, k) factors and
    cotangents of dtype dt (any strides; an absent cotangent is a (1, 1, 1) or (1, 1) zero
    with its flag 0), flags int64 [has_gu, has_gs, has_gvh] and out C-contiguous."""
    name = f"svd_vjp_{np.dtype(dt)}"
    if name in jitted:
        return jitted[name]
    a3 = types.Array(from_dtype(dt), 3, "A", readonly=True)
    a2 = types.Array(from_dtype(dt), 2, "A", readonly=True)
    flags = types.Array(types.int64, 1, "C")
    out = types.Array(from_dtype(dt), 3, "C")
    return compile_for(_vjp, types.void(a3, a2, a3, a3, a2, a3, flags, out),
                       f"the SVD backward of small batched matrices for {dt}", name)


def __getattr__(name: str):
    """svd_vjp_<dtype>: vjp_kernel(dtype), by its entry point's name (the registry's)."""
    if name.startswith("svd_vjp_") and name[8:] in ("float32", "float64"):
        return vjp_kernel(np.dtype(name[8:]))
    raise AttributeError(name)
