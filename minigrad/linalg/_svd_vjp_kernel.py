"""The first-order SVD backward of a batch of tiny square matrices off every pole, in one
numba pass: ndarrays in, ndarrays out. Also the "zero" tie policy's pole terms of any k in
one pass (``zero_poles``).

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


def _zero_poles(plus, minus, s, tie, absent, out):
    """out = N+ / (s_j - s_i) + N- / (s_j + s_i) at [p, i, j], each quotient 0 where
    _svd_poles.tie_zeros zeroes it (dead pairs: i = j, or both triplets absent; ties within
    tie[p]; a solo pair, one triplet absent, at the other pole's tie too): the "zero"
    policy's X times 2, first order. The same differences, sums and quotients as
    pairwise, tie_zeros and quot make with a dozen (k, k) temporaries: the same bits."""
    for p in range(s.shape[0]):
        t = tie[p]
        zero = t - t  # 0 in s's dtype: a float64 literal would widen float32's sums
        for i in range(s.shape[1]):
            si, ai = s[p, i], absent[p, i]
            for j in range(s.shape[1]):
                sj, aj = s[p, j], absent[p, j]
                d, su = sj - si, sj + si
                tp, tm = abs(d) <= t, su <= t
                dead = i == j or (ai and aj)
                solo = not dead and ai != aj
                # (solo and tm implies tp, as |d| <= su: kept as tie_zeros has it)
                qp = zero if dead or tp or (solo and tm) else plus[p, i, j] / d
                qm = zero if dead or tm or (solo and tp) else minus[p, i, j] / su
                out[p, i, j] = qp + qm


def zero_poles_kernel(dt: np.dtype):
    """kernel(plus, minus, s, tie, absent, out): _zero_poles for (B, k, k) numerators, s
    (B, k) and tie (B,) of dtype dt (any strides), absent (B, k) bool, out C-contiguous."""
    name = f"zero_poles_{np.dtype(dt)}"
    if name in jitted:
        return jitted[name]
    dtype = from_dtype(dt)
    a3 = types.Array(dtype, 3, "A", readonly=True)
    a2 = types.Array(dtype, 2, "A", readonly=True)
    a1 = types.Array(dtype, 1, "A", readonly=True)
    b2 = types.Array(types.boolean, 2, "A", readonly=True)
    return compile_for(_zero_poles, types.void(a3, a3, a2, a1, b2, types.Array(dtype, 3, "C")),
                       f"the SVD backward's pole terms for {dt}", name)


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
    """svd_vjp_<dtype> and zero_poles_<dtype>: vjp_kernel(dtype) and
    zero_poles_kernel(dtype), by their entry points' names (the registry's)."""
    kind, _, dtype = name.rpartition("_")
    if dtype in ("float32", "float64") and kind in ("svd_vjp", "zero_poles"):
        return (vjp_kernel if kind == "svd_vjp" else zero_poles_kernel)(np.dtype(dtype))
    raise AttributeError(name)
