"""One-sided (Hestenes) Jacobi SVD kernels in numba: ndarrays in, ndarrays out.

The working copy of a matrix is stored transposed, ``X[j] = column j``, so every plane
rotation and every dot product runs over contiguous memory. Dot products accumulate in
float64 whatever the storage dtype. Everything compiles lazily on first call and is cached
on disk (``cache=True``: minigrad/_numba_cache.py); importing this module compiles nothing.

The general kernels also take complex128 (numba compiles them once more for it): the
inner product is Hermitian, gamma = x_p^H x_q = |gamma| ph, and a rotation is the real
one of |gamma| with its sine turned by ph (_rotate_rows). The lanes kernels are real only:
complex batches of tiny matrices take the general kernels (lanes of complex numbers would
be kernels of their own, with real and imaginary parts in separate lanes to vectorise).

Every kernel is ``nogil`` and serial: the driver runs them on its own threads
(``_threads.py``), never through numba's threading layer, whose OpenMP backend kills a
forked child and whose workqueue backend aborts when two threads launch kernels at once.

Status codes written per batch element: ``OK``, ``NOT_FINITE``, ``NOT_CONVERGED``.
"""

import math
from typing import NamedTuple

import numpy as np

from minigrad._numba_cache import njit

# The status codes and the lane width the driver agrees on; the kernels read them as
# compile-time constants.
from minigrad.linalg._jacobi_contract import _LANES, MORE, NOT_CONVERGED, NOT_FINITE, OK

# Real or complex: the general kernels (sweeps, finish, complete, left_vectors and the
# lone-matrix ones) take complex128 as well as float arrays, through these helpers
# (_scalars.py); the lanes kernels are real only.
from minigrad.linalg._scalars import (
    abs2,
    conj,
    like,
    modulus,
    split,
    unit,
    wide,
    wide_conj,
    wide_empty,
)

# Reassociating a sum lets LLVM vectorise the dot products; nothing else is relaxed
# (no 'nnan'/'ninf': the finiteness checks must survive).
_FAST = {"reassoc", "contract"}

# Above this |zeta|, 1 + zeta^2 == zeta^2 in float64, so t = 1 / (2 zeta) is exact to eps
# and sqrt(1 + zeta^2) can no longer overflow.
_BIG_ZETA = 1e8

# tiny / eps of float64: a dot product (or squared norm) below this may have lost digits to
# underflow, so rows that small are rescaled by a power of two before they are multiplied.
_SAFE = 2.0**-970
_ROOT_SAFE = 2.0**-480  # rows above this norm have squares and products above _SAFE
_SQUARE_SAFE = 2.0**-450  # numbers between this and its inverse have normal squares

# Kernels that only other kernels call need no entry point from Python.
_HELPER = {"cache": True, "nogil": True, "no_cpython_wrapper": True, "no_cfunc_wrapper": True}


# ---- rows: dot products, norms, rotations -------------------------------------------------

# Not inline="always": numba-level inlining would compile the loop with the caller's (strict)
# flags and lose the vectorisation; LLVM still inlines the call, keeping these flags.
@njit(**_HELPER, fastmath=_FAST)
def _dot(x, y):
    acc = 0.0
    for i in range(x.shape[0]):
        acc += wide_conj(x[i]) * wide(y[i])
    return acc


@njit(cache=True, nogil=True, fastmath=_FAST, inline="always")
def _dot_rows(X, p, q):
    acc = 0.0
    for i in range(X.shape[1]):
        acc += wide_conj(X[p, i]) * wide(X[q, i])
    return acc


@njit(**_HELPER, fastmath=_FAST)
def _scaled_dot(X, p, q, a, b):
    """X[p] . X[q] / (a b) with both rows first scaled by powers of two near 1/a and 1/b."""
    sp = math.ldexp(1.0, -math.frexp(a)[1])
    sq = math.ldexp(1.0, -math.frexp(b)[1])
    acc = 0.0
    for i in range(X.shape[1]):
        acc += (wide_conj(X[p, i]) * sp) * (wide(X[q, i]) * sq)
    return acc / ((a * sp) * (b * sq))


@njit(**_HELPER, fastmath=_FAST)
def _norm(X, p):
    """|X[p]|, also for rows so small that their square underflows."""
    d = _dot_rows(X, p, p).real
    if d >= _SAFE:
        return math.sqrt(d)
    amax = 0.0
    for i in range(X.shape[1]):
        amax = max(amax, modulus(wide(X[p, i])))
    if amax == 0.0:
        return 0.0
    return _scaled_dot(X, p, p, amax, amax).real ** 0.5 * amax


@njit(cache=True, nogil=True, inline="always")
def _tangent(zeta):
    """t = tan(theta) of the Jacobi rotation, the smaller root of t^2 + 2 zeta t - 1 = 0."""
    if abs(zeta) > _BIG_ZETA:
        return 0.5 / zeta
    t = 1.0 / (abs(zeta) + math.sqrt(1.0 + zeta * zeta))
    return -t if zeta < 0.0 else t


@njit(cache=True, nogil=True, inline="always")
def _rotation(a, b, gamma):
    """(c, s, t = s / c, new a, new b) of the rotation X[p] <- c X[p] - s X[q],
    X[q] <- s X[p] + c X[q] that makes rows of norms a, b (both > _ROOT_SAFE) and dot
    product gamma orthogonal."""
    alpha = a * a
    beta = b * b
    d = beta - alpha
    g = 2.0 * gamma
    big = max(abs(d), abs(g))
    if not _SQUARE_SAFE < big < 1.0 / _SQUARE_SAFE:  # squares could under- or overflow: zeta
        t = _tangent(d / g)
        c = 1.0 / math.sqrt(1.0 + t * t)
        s = c * t
    else:
        # t = sign(zeta) / (|zeta| + sqrt(1 + zeta^2)), zeta = d / g, as g / (|d| + hypot)
        # with c and s from one more square root and one division: a shorter chain of
        # dependent square roots and divisions, which bounds a pair's time.
        den = abs(d) + math.sqrt(d * d + g * g)
        gs = -g if d < 0.0 else g
        if d == 0.0:
            gs = abs(g)  # zeta = 0: t = +1, as _tangent
        inv = 1.0 / math.sqrt(den * den + g * g)
        c = den * inv
        s = gs * inv
        t = gs / den
    return c, s, t, math.sqrt(max(0.0, alpha - t * gamma)), \
        math.sqrt(max(0.0, beta + t * gamma))


@njit(cache=True, nogil=True, inline="always")
def _rotation_tiny(a, b, cos):
    """_rotation for rows whose squares may underflow, from the cosine of their angle:
    written with the ratio b / a, never a square, so it holds for norms down to 1e-300."""
    r = b / a
    t = _tangent((r - 1.0 / r) / (2.0 * cos))
    c = 1.0 / math.sqrt(1.0 + t * t)
    na = a * math.sqrt(max(0.0, 1.0 - t * cos * r))
    nb = b * math.sqrt(max(0.0, 1.0 + t * cos / r))
    return c, c * t, t, na, nb


# The pair loop works on whole rows by 2-d indexing, inlined into one fastmath function:
# that is what LLVM vectorises best (row views passed to helpers ran ~30% slower).
# Complex rows: c real, s = |s| ph complex, the unitary X[p] <- c X[p] - conj(s) X[q],
# X[q] <- s X[p] + c X[q] (the real rotation after X[q] is turned by conj(ph)).
@njit(cache=True, nogil=True, fastmath=_FAST, inline="always")
def _rotate_rows(X, p, q, c, s):
    sc = conj(s)
    for i in range(X.shape[1]):
        xi = X[p, i]
        yi = X[q, i]
        X[p, i] = c * xi - sc * yi
        X[q, i] = s * xi + c * yi


@njit(cache=True, nogil=True, fastmath=_FAST, inline="always")
def _rotate_rows_dot(X, p, q, r, c, s):
    """_rotate_rows(X, p, q, c, s) and return the new X[p] . X[r]: the next pair's dot
    product rides on the rotation's loads and stores (the loop is bound by the stores)."""
    sc = conj(s)
    acc = 0.0
    for i in range(X.shape[1]):
        xi = X[p, i]
        yi = X[q, i]
        xn = c * xi - sc * yi
        X[p, i] = xn
        X[q, i] = s * xi + c * yi
        acc += wide_conj(xn) * wide(X[r, i])
    return acc


@njit(**_HELPER)
def _settle(X, p, new, ref, tol):
    """new (|X[p]|), or 0 after zeroing X[p] if it is rounding noise: below tol.small, or
    below tol.noise times the largest norm ref the row has had. Such a row is what is left
    of a rank deficiency; rotating it on would shrink it by only ~eps per sweep until it
    underflows and never settles. Zeroing it moves the column by a tol.noise fraction, the
    size of the rounding any rotation commits."""
    if new > tol.small and new > tol.noise * ref:
        return new
    for i in range(X.shape[1]):  # loops, not slice assignments: each of those is a compile
        X[p, i] = 0.0
    return 0.0


# ---- one sweep ----------------------------------------------------------------------------

@njit(cache=True, nogil=True, inline="always")
def _angle(a, b, gamma, usual, cos):
    """(c, s, t, ph, new a, new b) of the rotation of a pair the relative test passed. Complex: the
    real rotation of |gamma|, its sine turned by gamma's phase ph."""
    g, ph = split(gamma if usual else cos)
    if usual:
        c, s, t, na, nb = _rotation(a, b, g)
    else:
        c, s, t, na, nb = _rotation_tiny(a, b, g)
    return c, s, t, ph, na, nb


@njit(**_HELPER, fastmath=_FAST)
def _pairs(X, Vt, nrm, ref, p, q0, q1, tol):
    """Orthogonalise row p of X against rows q0..q1-1 (the relative test decides which);
    rotations are mirrored on Vt unless it is empty. Returns the number of rotations and
    the largest |cos| and |tan| among them (as _sweep_pairs, for the same stopping test)."""
    done = 0
    most_cos = 0.0
    most_tan = 0.0
    if q0 >= q1:
        return done, most_cos, most_tan
    gamma = _dot_rows(X, p, q0)
    for q in range(q0, q1):
        a = nrm[p]
        b = nrm[q]
        last = q + 1 == q1
        usual = a > _ROOT_SAFE and b > _ROOT_SAFE  # else tiny or zero rows
        cos = 0.0
        if usual:
            go = modulus(gamma) > tol.rotate * a * b  # no division before the test
        elif a > 0.0 and b > 0.0:
            cos = gamma / (a * b) if a * b >= _SAFE else _scaled_dot(X, p, q, a, b)
            go = modulus(cos) > tol.rotate
        else:
            go = False
        if not go:
            if not last:
                gamma = _dot_rows(X, p, q + 1)
            continue
        c, s, t, ph, na, nb = _angle(a, b, gamma, usual, cos)
        most_cos = max(most_cos, modulus(gamma) / (a * b) if usual else 1.0)
        most_tan = max(most_tan, abs(t))
        # Rotate in the storage dtype: float64 factors would halve float32's SIMD width.
        c_ = like(X, c)
        s_ = like(X, s * ph)
        if last:
            _rotate_rows(X, p, q, c_, s_)
        else:
            gamma = _rotate_rows_dot(X, p, q, q + 1, c_, s_)
        if Vt.shape[0]:
            _rotate_rows(Vt, p, q, c_, s_)
        # The updated norms save a dot product per rotation; a norm that shrank a lot has
        # lost digits to cancellation, so measure that one again (as dgesvj does).
        ref[p] = max(ref[p], na)
        ref[q] = max(ref[q], nb)
        nrm[p] = na if na > 0.3 * a and na > tol.noise * ref[p] else \
            _settle(X, p, _norm(X, p), ref[p], tol)
        nrm[q] = nb if nb > 0.3 * b and nb > tol.noise * ref[q] else \
            _settle(X, q, _norm(X, q), ref[q], tol)
        done += 1
    return done, most_cos, most_tan


# The serial sweeps (sweeps) run _sweep_pairs, _pairs with the rotations' cosines kept out
# of the rows: row j of X holds the true row over scale[j]. A rotation is then
# X[p] <- X[p] - u X[q], X[q] <- X[q] + w X[p] (u, w = t = s / c times the scales' ratio)
# and the cosine goes into the scales. That takes work off the chain that bounds a sweep
# (dot product -> rotation -> the next pair's dot product, row p's every time): 4-9% less
# time (60 x 40, 48 x 48, 80 x 80, 120 x 100; 30 x 20 alike), the same sweeps. Each row's
# rounding is the same as _pairs' (each entry x - u y, as c x - s y). _pairs stays the
# plain version, which the threaded sweeps run.
_FOLD = 2.0**-32  # a scale below this is multiplied into its row (stored rows stay < 2^33)


@njit(cache=True, nogil=True, fastmath=_FAST, inline="always")
def _turn_rows(X, p, q, u, w):
    """X[p] <- X[p] - u X[q], X[q] <- X[q] + w X[p]."""
    for i in range(X.shape[1]):
        xi = X[p, i]
        yi = X[q, i]
        X[p, i] = xi - u * yi
        X[q, i] = yi + w * xi


@njit(cache=True, nogil=True, fastmath=_FAST, inline="always")
def _turn_rows_dot(X, p, q, r, u, w):
    """_turn_rows(X, p, q, u, w) and return the new X[p] . X[r] (as _rotate_rows_dot)."""
    acc = 0.0
    for i in range(X.shape[1]):
        xi = X[p, i]
        yi = X[q, i]
        xn = xi - u * yi
        X[p, i] = xn
        X[q, i] = yi + w * xi
        acc += wide_conj(xn) * wide(X[r, i])
    return acc


@njit(**_HELPER)
def _fold(X, Vt, scale, j):
    """Row j of X (and of Vt unless it is empty) times scale[j], which becomes 1."""
    f = like(X, scale[j])
    for i in range(X.shape[1]):
        X[j, i] *= f
    for i in range(Vt.shape[1] if Vt.shape[0] else 0):
        Vt[j, i] *= f
    scale[j] = 1.0


@njit(**_HELPER, fastmath=_FAST)
def _tiny_angle(X, p, q, a, b, gamma, sp, sq, tol):
    """_tiny_pair's test and rotation (go, c, t, ph, new a, new b) for rows p, q of
    which one is tiny or zero (norm <= _ROOT_SAFE), stored as X[p] / sp and X[q] / sq."""
    if a > 0.0 and b > 0.0:
        cos = gamma / (a * b) if a * b >= _SAFE else _scaled_dot(X, p, q, a / sp, b / sq)
        if modulus(cos) > tol.rotate:
            c, _, t, ph, na, nb = _angle(a, b, cos, False, cos)
            return True, c, t, ph, na, nb
    g, ph = split(gamma)
    return False, 1.0, 0.0, ph, a, b


@njit(**_HELPER)
def _mend(X, Vt, nrm, ref, scale, p, q, a, b, tol):
    """_sweep_pairs' rare cases after rotating rows p, q (norms a, b before): a scale
    below _FOLD multiplied into its row; a norm that shrank a lot has lost digits to
    cancellation, so it is measured again (as dgesvj does), the row zeroed if noise."""
    for j, old in ((p, a), (q, b)):
        if scale[j] < _FOLD:
            _fold(X, Vt, scale, j)
        if not (nrm[j] > 0.3 * old and nrm[j] > tol.noise * ref[j]):
            nrm[j] = _settle(X, j, _norm(X, j) * scale[j], ref[j], tol)


@njit(**_HELPER)
def _tiny_pair(X, Vt, nrm, ref, scale, p, q, tol):
    """_sweep_pairs' pair p, q where a row is tiny or zero (norm <= _ROOT_SAFE): the test
    and rotation of _tiny_angle, then _mend's checks. Returns (rotations, |cos|, |tan|) as
    _sweep_pairs (a cosine of 1.0 where it rotates: sweeps' stopping test then refuses)."""
    a, b, sp, sq = nrm[p], nrm[q], scale[p], scale[q]
    gamma = _dot_rows(X, p, q) * (sp * sq)
    go, c, t, ph, na, nb = _tiny_angle(X, p, q, a, b, gamma, sp, sq, tol)
    if not go:
        return 0, 0.0, 0.0
    tau = t * ph
    ratio = sq / sp
    u = like(X, conj(tau) * ratio)
    w = like(X, tau / ratio)
    _turn_rows(X, p, q, u, w)
    if Vt.shape[0]:
        _turn_rows(Vt, p, q, u, w)
    scale[p] = sp * c
    scale[q] = sq * c
    ref[p] = max(ref[p], na)
    ref[q] = max(ref[q], nb)
    nrm[p] = na
    nrm[q] = nb
    _mend(X, Vt, nrm, ref, scale, p, q, a, b, tol)
    return 1, 1.0, abs(t)


# _sweep_pairs makes a whole sweep's pairs, de Rijk's pivots included, with no call in its
# loops: a call clobbers every vector register, so even one never taken (the rare cases'
# _tiny_angle and _mend, which the pair loop used to call) made LLVM spill the pair's locals
# around it. The test and the norms' update are written out (as inlined helpers returning
# tuples they cost a fifth of the loop's time). At a rare case the sweep stops, and its
# caller makes that pair (_tiny_pair) or mends the rows (_mend), then starts it again after
# the pair. Measured against a call per row with those calls in its loop (old and new
# kernels in one process, medians of paired rounds): CTMRG's 80 x 80 corners 0.93x, robust
# PCA's 60 x 40 with V 0.94x, batches of 2,000 6x6 / 8x8 / 12x12 with V 0.85-0.90x (float32
# alike); the same rotations bit for bit (but for tiny rows, whose next dot product is now
# taken afresh, not off the last turn, and complex sums, which compile differently: both
# differ at rounding level). A first version stopped at the end of each row as well: that
# cost the small batches 2-9%.
USUAL, TINY, MEND = 0, 1, 2  # how _sweep_pairs stopped


@njit(**_HELPER, fastmath=_FAST)
def _sweep_pairs(X, Vt, nrm, ref, scale, p, q, tol, gamma):
    """The rest of a sweep of sweeps' on the rows X[j] * scale[j] (see above), from row p's
    pair q (q = p + 1: row p's first, its de Rijk pivot still to make; q = n: row p done),
    until a rare case: the tests, rotations and norms of _pairs. Rows of Vt share X's
    scales. gamma: the (true) dot product of rows p and q, or NaN (computed here).

    Row p's norm, largest norm and scale live in locals for the whole row (written back
    after each rotation), and row q + 1's are read before pair q's loops: no load on the
    chain from one pair's dot product to the next waits behind the loops' stores.

    Returns (rotations, the largest |cos| and |tan| among them: sweeps' stopping test, p,
    q, how, a, b, gamma). how = USUAL: the sweep is done; TINY: stopped before pair (p, q),
    whose rows are tiny or zero; MEND: pair (p, q) made, its rows then wanting _mend (a,
    b: their norms before), gamma the next pair's dot product."""
    n, m = X.shape
    done = 0
    most_cos = 0.0
    most_tan = 0.0
    while True:
        if q >= n:  # row p done: the next one's first pair
            p += 1
            q = p + 1
            gamma *= math.nan
        if p >= n - 1:
            return done, most_cos, most_tan, p, q, USUAL, 0.0, 0.0, gamma
        if q == p + 1:  # de Rijk: the largest remaining row first; fewer sweeps
            best = p
            for j in range(p + 1, n):
                if nrm[j] > nrm[best]:
                    best = j
            if best != p:
                for i in range(m):
                    tmp = X[p, i]
                    X[p, i] = X[best, i]
                    X[best, i] = tmp
                for i in range(Vt.shape[1]):
                    tmp = Vt[p, i]
                    Vt[p, i] = Vt[best, i]
                    Vt[best, i] = tmp
                big = nrm[p]  # (not tmp: that one holds X's entries, maybe complex)
                nrm[p] = nrm[best]
                nrm[best] = big
                big = ref[p]
                ref[p] = ref[best]
                ref[best] = big
                big = scale[p]
                scale[p] = scale[best]
                scale[best] = big
        a = nrm[p]
        rp = ref[p]
        sp = scale[p]
        b = nrm[q]
        rq = ref[q]
        sq = scale[q]
        if gamma != gamma:
            gamma = _dot_rows(X, p, q) * (sp * sq)
        first = q
        for q in range(first, n):
            last = q + 1 == n
            b1, rq1, sq1 = (0.0, 0.0, 1.0) if last else (nrm[q + 1], ref[q + 1], scale[q + 1])
            usual = a > _ROOT_SAFE and b > _ROOT_SAFE
            if not usual and a > 0.0 and b > 0.0:  # tiny rows: out of line
                return done, most_cos, most_tan, p, q, TINY, a, b, gamma
            # (a zero row, what is left of a rank deficiency, has nothing to rotate)
            if not (usual and modulus(gamma) > tol.rotate * a * b):
                if not last:
                    gamma = _dot_rows(X, p, q + 1) * (sp * sq1)
                b, rq, sq = b1, rq1, sq1
                continue
            g, ph = split(gamma)
            c, _, t, na, nb = _rotation(a, b, g)
            most_cos = max(most_cos, modulus(gamma) / (a * b))
            tau = t * ph
            ratio = sq / sp
            u = like(X, conj(tau) * ratio)
            w = like(X, tau / ratio)
            if last:
                _turn_rows(X, p, q, u, w)
            else:
                gamma = _turn_rows_dot(X, p, q, q + 1, u, w)
            if Vt.shape[0]:
                _turn_rows(Vt, p, q, u, w)
            sp *= c
            scale[p] = sp
            scale[q] = sq * c
            rp = max(rp, na)
            ref[p] = rp
            rq = max(rq, nb)
            ref[q] = rq
            nrm[p] = na
            nrm[q] = nb
            most_tan = max(most_tan, abs(t))
            done += 1
            if not last:
                gamma *= sp * sq1
            if not (na > 0.3 * a and na > tol.noise * rp and nb > 0.3 * b and
                    nb > tol.noise * rq and sp >= _FOLD and sq * c >= _FOLD):
                return done, most_cos, most_tan, p, q, MEND, a, b, gamma
            a, b, rq, sq = na, b1, rq1, sq1
        q = n


@njit(**_HELPER)
def renorm(X, nrm, ref, tol):
    """Fresh norms at the start of a sweep (the updated ones drift); rows that the last
    sweep reduced to noise are zeroed. ref must hold each row's largest norm so far (or
    zeros, on the first sweep)."""
    for j in range(X.shape[0]):
        new = _norm(X, j)
        ref[j] = max(ref[j], new)
        nrm[j] = _settle(X, j, new, ref[j], tol)


# ---- finishing: singular values, left vectors, signs --------------------------------------

@njit(**_HELPER)
def complete_rows(Ut, filled):
    """Fill the rows of Ut with filled[i] False so that all rows are orthonormal.

    Candidates are standard basis vectors e_l, taking the l least covered by the rows
    already there; two Gram-Schmidt passes make the new row orthogonal to working precision.
    """
    r, m = Ut.shape
    mass = np.zeros(m)
    for i in range(r):
        if filled[i]:
            for l in range(m):
                mass[l] += abs2(Ut[i, l])
    w = wide_empty(Ut, m)
    for i in range(r):
        if filled[i]:
            continue
        best = 0
        for l in range(1, m):
            if mass[l] < mass[best]:
                best = l
        w[:] = 0.0
        w[best] = 1.0
        for _ in range(2):
            for j in range(r):
                if filled[j]:
                    proj = _dot(Ut[j], w)
                    for l in range(m):
                        w[l] -= proj * Ut[j, l]
        inv = 1.0 / math.sqrt(_dot(w, w).real)
        for l in range(m):
            Ut[i, l] = w[l] * inv
            mass[l] += abs2(w[l] * inv)
        filled[i] = True


@njit(cache=True, nogil=True, inline="always")
def _sort_descending(sv, perm):
    """Order perm so that sv[perm] is descending; a stable insertion sort, since de Rijk
    pivoting (and tiny n) leave it nearly sorted already."""
    for j in range(1, perm.shape[0]):
        pj = perm[j]
        i = j - 1
        while i >= 0 and sv[perm[i]] < sv[pj]:
            perm[i + 1] = perm[i]
            i -= 1
        perm[i + 1] = pj


@njit(cache=True, nogil=True, inline="always")
def _left_vectors(X, Ut, s, sv, perm, filled):
    """s = the row norms of the converged X, descending, and Ut's first n rows the rows
    of X normalised in that order, filled[i] False for the rows left to complete to an
    orthonormal basis (for zero rows, and any rows past n). Returns whether there are
    any: complete_rows, which allocates, runs only then, and compiles only where asked
    for. Ut may have 0 rows when only s is wanted."""
    n = X.shape[0]
    for j in range(n):
        sv[j] = _norm(X, j)
        perm[j] = j
    _sort_descending(sv, perm)
    for j in range(n):
        s[j] = sv[perm[j]]
    ucols = Ut.shape[0]
    if ucols == 0:
        return False
    for j in range(ucols):
        filled[j] = False
    gaps = ucols - n
    for j in range(n):
        sj = sv[perm[j]]
        if sj > 0.0:
            for i in range(X.shape[1]):
                Ut[j, i] = X[perm[j], i] / sj
            filled[j] = True
        else:
            gaps += 1
    return gaps > 0


@njit(cache=True, nogil=True, inline="always")
def _write(Ut, Vt, perm, sgn, trans, u, vh):
    """The complete left vectors Ut and the rotations Vt (in perm's order) to signed u and
    vh, written in the orientation of the source (A transposed when trans)."""
    ucols, m = Ut.shape
    n = Vt.shape[0]
    # Sign convention: the first largest-|.| entry of each column of U (in src's
    # orientation) is positive (real and positive, for complex); v_j turns with u_j,
    # complement vectors are normalised on their own. Index loops, not row views: numba
    # types and lowers them much faster.
    # Complex: X's rows are A's columns unconjugated, so A V = U S with V = Vt^T, and
    # Vh = conj(Vt); through the transpose, U = conj(Vt)^T and Vh = Ut.
    for j in range(ucols):
        big = 0.0
        sg = 1.0
        if trans and j < n:
            for i in range(n):
                x = Vt[perm[j], i]
                if modulus(x) > big:
                    big = modulus(x)
                    sg = unit(conj(x))
        else:
            for i in range(m):
                x = Ut[j, i]
                if modulus(x) > big:
                    big = modulus(x)
                    sg = unit(x)
        sgn[j] = sg
    if trans:
        for j in range(n):
            sc = conj(sgn[j])
            for i in range(n):
                u[i, j] = conj(Vt[perm[j], i]) * sc
        for j in range(ucols):
            for i in range(m):
                vh[j, i] = Ut[j, i] * sgn[j]
    else:
        for j in range(ucols):
            sc = conj(sgn[j])
            for i in range(m):
                u[i, j] = Ut[j, i] * sc
        for j in range(n):
            for i in range(n):
                vh[j, i] = conj(Vt[perm[j], i]) * sgn[j]


# ---- scaling by powers of two ------------------------------------------------------------

@njit(cache=True, nogil=True, inline="always")
def _scale_exponent(amax):
    """(e, 2^-e) with amax * 2^-e in [0.5, 1) (e = 0 for amax = 0); the factor is 0 when
    2^-e itself is not representable (|e| > 1000: subnormal or huge input)."""
    e = math.frexp(amax)[1] if amax > 0.0 else 0
    return e, math.ldexp(1.0, -e) if abs(e) <= 1000 else 0.0


@njit(cache=True, nogil=True, inline="always")
def _times_pow2(v, e, sc):
    """v * 2^-e, exactly: a multiply by sc where 2^-e is representable, else math.ldexp
    (two factors would do too, until a fastmath caller reassociates their product)."""
    return v * sc if sc != 0.0 else math.ldexp(v, -e)


# ---- many tiny matrices at once: lanes ----------------------------------------------------

# Matrices with at most _LANES_MAX_N columns (after the transpose) and _LANES_MAX_M rows go
# through the batch in blocks of _LANES: one Jacobi step is then the same few flops on
# _LANES independent matrices, a loop LLVM vectorises; matrix by matrix, a 3x3 is a chain
# of dependent divisions and square roots that leaves the core idle.


class Lanes(NamedTuple):
    """Scratch for _LANES matrices of n columns and m rows, lane l in the last axis."""

    X: np.ndarray  # (n, m, _LANES)
    Vt: np.ndarray  # (n, n, _LANES)
    ref: np.ndarray  # (n, _LANES) the largest squared norm of each column so far
    tmp: np.ndarray  # (7, _LANES) per-pair lane scalars
    rot: np.ndarray  # (_LANES,) int64: rotations in the last sweep
    expo: np.ndarray  # (_LANES,) int64: each lane's scale exponent
    state: np.ndarray  # (_LANES,) int64: a status code, or MORE
    Ut: np.ndarray  # (n, m) one lane's left vectors
    sv: np.ndarray  # (n,)
    perm: np.ndarray  # (n,) int64


# The lane functions are inlined into svd_lanes (same flags): compiled separately, each
# caller re-optimises its callees' linked code, which multiplied the first-call compile time.
_LANE = {"cache": True, "nogil": True, "fastmath": _FAST, "error_model": "numpy",
         "inline": "always"}


@njit(**_LANE)
def _lanes(like, n, m):
    return Lanes(np.empty((n, m, _LANES), like.dtype), np.empty((n, n, _LANES), like.dtype),
                 np.empty((n, _LANES)), np.empty((7, _LANES)), np.empty(_LANES, np.int64),
                 np.empty(_LANES, np.int64), np.empty(_LANES, np.int64),
                 np.empty((n, m), like.dtype), np.empty(n), np.empty(n, np.int64))


@njit(**_LANE)
def _load_lanes(a, lo, hi, trans, L, tol):
    """sweeps' load for a[lo:hi] into the lanes. Lanes left idle, non-finite or with a
    column so small that its square loses digits (then the general kernels do it) hold
    zeros, which converge at once. Indexes a[b] in place: views of a cost refcount
    traffic here."""
    n, m = L.X.shape[0], L.X.shape[1]
    L.X[:, :, :] = 0.0
    L.Vt[:, :, :] = 0.0
    L.ref[:, :] = 0.0
    for j in range(n):
        L.Vt[j, j, :] = 1.0
    L.state[:] = OK
    for l in range(hi - lo):
        b = lo + l
        amax = 0.0
        nan = 0.0  # stays 0.0 unless an entry is NaN or Inf
        for i in range(a.shape[1]):
            for j in range(a.shape[2]):
                v = abs(np.float64(a[b, i, j]))
                amax = max(amax, v)
                nan += v * 0.0
        if nan != 0.0:
            L.state[l] = NOT_FINITE
            continue
        e, sc = _scale_exponent(amax)
        L.expo[l] = e
        for j in range(n):
            acc = 0.0
            for i in range(m):
                x = _times_pow2(np.float64(a[b, j, i] if trans else a[b, i, j]), e, sc)
                L.X[j, i, l] = x
                acc += x * x
            if 0.0 < acc < tol.small:
                L.state[l] = MORE
        if L.state[l] == MORE:
            L.X[:, :, l] = 0.0


@njit(**_LANE)
def _sweeps_lanes(L, tol, with_v):
    """Cyclic one-sided Jacobi on the rows of X[:, :, l] for every lane l at once (rotations
    mirrored on Vt[:, :, l] when with_v); rot[l] ends as the rotations of lane l's last
    sweep, so rot[l] > 0 means lane l did not converge in max_sweeps.

    The same tests as _pairs, made branch-free so that the lane loops vectorise: a lane
    whose pair is already orthogonal gets the exact identity (c = 1, s = 0). No de Rijk
    pivoting (a data-dependent swap per lane); the finish sorts.
    """
    X, Vt, ref, rot = L.X, L.Vt, L.ref, L.rot
    n, m = X.shape[0], X.shape[1]  # the lane count is the constant _LANES: fixed-trip loops
    al, be, ga, cs, sn, nap, nbq = L.tmp[0], L.tmp[1], L.tmp[2], L.tmp[3], L.tmp[4], \
        L.tmp[5], L.tmp[6]
    noise2 = tol.noise * tol.noise
    for _sweep in range(tol.max_sweeps):
        rot[:] = 0
        for p in range(n - 1):
            for q in range(p + 1, n):
                al[:] = 0.0
                be[:] = 0.0
                ga[:] = 0.0
                for i in range(m):
                    for l in range(_LANES):
                        x = X[p, i, l]
                        y = X[q, i, l]
                        al[l] += x * x
                        be[l] += y * y
                        ga[l] += x * y
                for l in range(_LANES):
                    alpha = al[l]
                    beta = be[l]
                    gamma = ga[l]
                    go = abs(gamma) > tol.rotate * math.sqrt(alpha) * math.sqrt(beta)
                    zeta = (beta - alpha) / (2.0 * (gamma if go else 1.0))
                    t = 1.0 / (abs(zeta) + math.sqrt(1.0 + zeta * zeta))
                    t = -t if zeta < 0.0 else t
                    t = 0.5 / zeta if abs(zeta) > _BIG_ZETA else t
                    t = t if go else 0.0
                    c = 1.0 / math.sqrt(1.0 + t * t)
                    cs[l] = c
                    sn[l] = c * t
                    rot[l] += 1 if go else 0
                    ref[p, l] = max(ref[p, l], alpha)
                    ref[q, l] = max(ref[q, l], beta)
                for i in range(m):
                    for l in range(_LANES):
                        x = X[p, i, l]
                        y = X[q, i, l]
                        X[p, i, l] = cs[l] * x - sn[l] * y
                        X[q, i, l] = sn[l] * x + cs[l] * y
                if with_v:
                    for i in range(n):
                        for l in range(_LANES):
                            x = Vt[p, i, l]
                            y = Vt[q, i, l]
                            Vt[p, i, l] = cs[l] * x - sn[l] * y
                            Vt[q, i, l] = sn[l] * x + cs[l] * y
                # _settle's rule: a column cut below a noise fraction of its largest norm
                # is rounding noise from a rank deficiency; zero it, or it never settles.
                nap[:] = 0.0
                nbq[:] = 0.0
                for i in range(m):
                    for l in range(_LANES):
                        nap[l] += X[p, i, l] * X[p, i, l]
                        nbq[l] += X[q, i, l] * X[q, i, l]
                for l in range(_LANES):
                    nap[l] = 0.0 if nap[l] <= noise2 * ref[p, l] else 1.0
                    nbq[l] = 0.0 if nbq[l] <= noise2 * ref[q, l] else 1.0
                if nap.min() == 0.0 or nbq.min() == 0.0:
                    for i in range(m):
                        for l in range(_LANES):
                            X[p, i, l] *= nap[l]
                            X[q, i, l] *= nbq[l]
        if rot.max() == 0:
            return


@njit(**_LANE)
def _finish_lane(L, l, b, trans, compute_uv, u, s, vh):
    """finish for lane l into u[b], s[b], vh[b], written out by hand (no views or calls:
    at this size their refcounting costs more than the sweeps). Returns False, writing
    nothing, when a zero singular value leaves a column of U to complete."""
    n, m = L.X.shape[0], L.X.shape[1]
    X, Vt, sv, perm, Ut = L.X, L.Vt, L.sv, L.perm, L.Ut
    for j in range(n):
        acc = 0.0
        for i in range(m):
            acc += np.float64(X[j, i, l]) ** 2
        sv[j] = math.sqrt(acc)
        perm[j] = j
    _sort_descending(sv, perm)
    if compute_uv and sv[perm[n - 1]] == 0.0:
        return False
    for j in range(n):
        s[b, j] = math.ldexp(sv[perm[j]], int(L.expo[l]))
    if not compute_uv:
        return True
    for j in range(n):
        pj = perm[j]
        inv = 1.0 / sv[pj]
        for i in range(m):
            Ut[j, i] = X[pj, i, l] * inv
        best = 0  # _write's sign rule for u's column j
        if trans:
            for i in range(1, n):
                if abs(Vt[pj, i, l]) > abs(Vt[pj, best, l]):
                    best = i
            sg = -1.0 if Vt[pj, best, l] < 0 else 1.0
            for i in range(n):
                u[b, i, j] = Vt[pj, i, l] * sg
            for i in range(m):
                vh[b, j, i] = Ut[j, i] * sg
        else:
            for i in range(1, m):
                if abs(Ut[j, i]) > abs(Ut[j, best]):
                    best = i
            sg = -1.0 if Ut[j, best] < 0 else 1.0
            for i in range(m):
                u[b, i, j] = Ut[j, i] * sg
            for i in range(n):
                vh[b, j, i] = Vt[pj, i, l] * sg
    return True


# ---- entry points -------------------------------------------------------------------------

# First-call compile time (seconds per kernel on a fresh install) is set by the call tree:
# numba types an inline="always" callee anew inside every caller, while a separate kernel is
# typed once per signature but linked into each caller and optimised again by LLVM there,
# so every level of nesting compiles its callees' code once more. Hence the batch SVD is
# kernels the driver calls one after the other (sweeps, finish, and complete only where a
# U needs completing; the load is numpy), not one kernel calling the others: a batch of
# 8x8 compiled in ~14 s that way. The loops of a sweep (_pairs, renorm) are kernels of
# their own, glue called from one place (_left_vectors, _write) is inlined, and kernels
# that only kernels call have no Python entry point (_HELPER).

@njit(cache=True, nogil=True, fastmath=_FAST)
def sweeps(X, Vt, nrm, ref, scale, tol, status):
    """Cyclic one-sided Jacobi with de Rijk pivoting on the rows of each X[b] (the columns
    of A[b], scaled so that squares neither overflow nor, mostly, underflow) where
    status[b] is OK, rotations mirrored on the rows of Vt[b] unless Vt is (B, 0, 0);
    status[b] = NOT_CONVERGED if no sweep within tol.max_sweeps met the stopping test below.

    A sweep ends the iteration when it rotates nothing, or when 8 n c max(c, t) <
    tol.rotate, c and t the largest |cos| and |tan| it rotated by. A rotation of rows p, q
    (norms a >= b, de Rijk's order) by tan t moves the cosine of p with a third row r by
    ~t (b/a) cos(q, r) <= t c, and that of q by ~t (a/b) cos(p, r) <= 1.6 max(c, t)
    cos(p, r), where (p, r) is a pair the sweep has already left within tol.rotate. A pair
    meets at most 2n such rotations later in the sweep, so it ends within ~1.35 tol.rotate
    plus those rotations' rounding (measured: up to 1.26 tol on rows built to just meet the
    test at 5 x 5 and 6 x 6, where tol is 2-3 eps, 0.8 with the confirming sweep; random
    input up to 1.11 either way). The sweep that would only have confirmed it
    (n(n-1)/2 dot products) is spared: the last of 7-8 sweeps at 60 x 40 or 80 x 80, and
    all but one from a Gram start (_svd_gram.py), whose first sweep's rotations are tiny.
    (LAPACK's dgesvj stops on n c t < tol with c < sqrt(n) tol and not before its second
    sweep, conditions the quadratic last sweep, cosines 3e-11 -> 1e-15 at 60 x 40, never
    meets, nor a Gram start's single sweep.)

    Serial: the driver hands slices of the batch to its threads. nrm, ref and scale (k,)
    are scratch, from the driver: each kind of allocation here would be a compile of its
    own. The pairs are _sweep_pairs': each sweep starts from true rows (scales folded in).
    No inlined helpers here: numba's inlining pass cost more than the code.
    """
    nbatch, n, m = X.shape
    for b in range(nbatch):
        if status[b] != OK:
            continue
        Xb, Vb = X[b], Vt[b]
        for j in range(n):
            ref[j] = 0.0
            scale[j] = 1.0
        status[b] = NOT_CONVERGED
        for _sweep in range(tol.max_sweeps):
            for j in range(n):
                if scale[j] != 1.0:
                    _fold(Xb, Vb, scale, j)
            renorm(Xb, nrm, ref, tol)
            rotated = 0
            most_cos = 0.0
            most_tan = 0.0
            # The sweep's pairs by _sweep_pairs, which stops at each rare case: this loop
            # deals with it and starts it again after it.
            p, q = 0, 1
            gamma = wide(Xb[0, 0]) * math.nan  # computed by _sweep_pairs (its flags)
            while True:
                done, c, t, p, q, how, a0, b0, gamma = _sweep_pairs(
                    Xb, Vb, nrm, ref, scale, p, q, tol, gamma)
                rotated += done
                most_cos = max(most_cos, c)
                most_tan = max(most_tan, t)
                if how == USUAL:
                    break
                if how == TINY:
                    d1, c1, t1 = _tiny_pair(Xb, Vb, nrm, ref, scale, p, q, tol)
                    rotated += d1
                    most_cos = max(most_cos, c1)
                    most_tan = max(most_tan, t1)
                    gamma *= math.nan  # the next pair's: computed again
                else:
                    _mend(Xb, Vb, nrm, ref, scale, p, q, a0, b0, tol)
                q += 1
            # Converged: no rotation, or rotations so small that the pairs they disturbed
            # stay orthogonal (see above).
            if rotated == 0 or 8 * n * most_cos * max(most_cos, most_tan) < tol.rotate:
                status[b] = OK
                break
        for j in range(n):  # (scales left by the last sweep, or by one that ran out)
            if scale[j] != 1.0:
                _fold(Xb, Vb, scale, j)


@njit(cache=True, nogil=True)
def finish(X, Vt, expo, trans, u, s, vh, status, Ut, sv, perm, sgn, filled):
    """sweeps' output to s[b] and signed u[b], vh[b] (in a[b]'s orientation) where
    status[b] is OK. A matrix whose U has columns to complete (a zero singular value, or
    a full U of a non-square A) gets status MORE instead, for complete. Scratch: Ut
    (ucols, max(m, n)) with ucols = 0 when U and V are not wanted, sv and perm (k,), sgn
    and filled (ucols,)."""
    nbatch, n, m = X.shape
    for b in range(nbatch):
        if status[b] != OK:
            continue
        if _left_vectors(X[b], Ut, s[b], sv, perm, filled):
            status[b] = MORE
            continue
        for j in range(n):
            s[b, j] = math.ldexp(s[b, j], int(expo[b]))
        if Ut.shape[0]:
            _write(Ut, Vt[b], perm, sgn, trans, u[b], vh[b])


@njit(cache=True, nogil=True)
def complete(X, Vt, expo, trans, u, s, vh, status, Ut, sv, perm, sgn, filled):
    """finish for the matrices it left with status MORE: U's missing columns completed to
    an orthonormal basis (complete_rows), then written as finish does; status OK."""
    nbatch, n, m = X.shape
    for b in range(nbatch):
        if status[b] != MORE:
            continue
        _left_vectors(X[b], Ut, s[b], sv, perm, filled)
        complete_rows(Ut, filled)
        for j in range(n):
            s[b, j] = math.ldexp(s[b, j], int(expo[b]))
        _write(Ut, Vt[b], perm, sgn, trans, u[b], vh[b])
        status[b] = OK

@njit(cache=True, nogil=True)
def left_vectors(X, Ut, s, sv, perm, filled):
    """_left_vectors with the rows completed, for the driver's lone-matrix path."""
    if _left_vectors(X, Ut, s, sv, perm, filled):
        complete_rows(Ut, filled)


@njit(cache=True, nogil=True)
def fix_signs(u, vh, k):
    """The sign convention of one matrix's SVD, in place, for real u (m x r) and vh
    (r2 x n): the first largest-|.| entry of each column of u made positive, row j of vh
    flipping with column j (j < k); rows of vh past k (a full Vh's complement) on their
    own. One pass over u by rows (numpy's argmax of |u| by columns and its products took
    20-40 us of a lone 80 x 80's SVD). _svd_single.plain_fix_signs is the reference; the
    two agree bit for bit on finite input (a flip is a product by -1 in both)."""
    m, r = u.shape
    big = np.zeros(r, u.dtype)
    sign = np.ones(r, u.dtype)
    for i in range(m):
        for j in range(r):
            x = u[i, j]
            if abs(x) > big[j]:  # strictly: the first of equal magnitudes, as argmax
                big[j] = abs(x)
                sign[j] = -1.0 if x < 0.0 else 1.0
    for i in range(m):
        for j in range(r):
            u[i, j] *= sign[j]
    for j in range(min(k, r, vh.shape[0])):
        if sign[j] < 0.0:
            for i in range(vh.shape[1]):
                vh[j, i] *= -1.0
    for j in range(k, vh.shape[0]):
        most = 0.0
        flip = False
        for i in range(vh.shape[1]):
            x = vh[j, i]
            if abs(x) > most:
                most = abs(x)
                flip = x < 0.0
        if flip:
            for i in range(vh.shape[1]):
                vh[j, i] *= -1.0


@njit(cache=True, nogil=True)
def is_symmetric(a):
    """Whether the square a equals its transpose exactly (NaN never does), read in tiles
    of 32 x 32 so that the rows a[j, i] reads down a tile's column stay in cache; the first
    mismatch returns."""
    n = a.shape[0]
    for i0 in range(0, n, 32):
        for j0 in range(0, i0 + 1, 32):
            for i in range(i0, min(i0 + 32, n)):
                for j in range(j0, min(j0 + 32, i + 1)):
                    if a[i, j] != a[j, i]:
                        return False
    return True


@njit(cache=True, nogil=True, fastmath=_FAST)
def symmetric_left(vh, avt, s, u):
    """U of a symmetric A = U S V^T from V: u_j = d_j v_j, d_j the sign of v_j . A v_j,
    written into u (n x k); vh = V^T and avt = (A V)^T (k x n, rows contiguous). Returns
    max_j |A v_j - d_j s_j v_j|^2 (inf where it is NaN): _svd_single._left_of_symmetric's
    test, in one pass over each row pair (float64 sums for every dtype)."""
    k, n = vh.shape
    worst = 0.0
    for j in range(k):
        dot = 0.0
        for i in range(n):
            dot += vh[j, i] * avt[j, i]
        d = -1.0 if dot < 0.0 else 1.0
        ds = d * s[j]
        res = 0.0
        for i in range(n):
            x = vh[j, i]
            u[i, j] = d * x
            e = avt[j, i] - ds * x
            res += e * e
        if not res <= worst:
            worst = res if res == res else math.inf
    return worst


@njit(cache=True, nogil=True)
def renorm_sorted(X, nrm, ref, tol):
    """renorm, then the rows sorted by norm, largest first: de Rijk's pivoting once per
    sweep, for the threaded sweep (which cannot pivot pair by pair)."""
    renorm(X, nrm, ref, tol)
    order = np.argsort(-nrm)
    X[:, :] = X[order]
    nrm[:] = nrm[order]
    ref[:] = ref[order]


@njit(cache=True, nogil=True, fastmath=_FAST)
def block_pairs(X, nrm, ref, tol, p0, p1, q0, q1, inner):
    """One task of a threaded sweep: every row of X[p0:p1] against every row of X[q0:q1]
    (two blocks that no other task of the round touches), after the pairs inside each
    block when inner. Returns the number of rotations and the largest |cos| and |tan|
    among them (sweeps' stopping test)."""
    empty = np.empty((0, 0), X.dtype)
    done = 0
    most_cos = 0.0
    most_tan = 0.0
    # the pairs inside the first block, then inside the second (when inner), then between
    for part in range(0 if inner else 2, 3):
        lo, hi = (q0, q1) if part == 1 else (p0, p1)
        for p in range(lo, hi):
            first, end = (q0, q1) if part == 2 else (p + 1, hi)
            d, c, t = _pairs(X, empty, nrm, ref, p, first, end, tol)
            done += d
            most_cos = max(most_cos, c)
            most_tan = max(most_tan, t)
    return done, most_cos, most_tan


@njit(cache=True, nogil=True, fastmath=_FAST, error_model="numpy")
def svd_lanes(a, trans, compute_uv, tol, u, s, vh, status):
    """The general kernels for matrices of at most _LANES_MAX_N columns and _LANES_MAX_M rows
    (after the transpose) and a reduced or square U, _LANES at a time. A matrix it cannot
    finish gets status MORE, for the general kernels."""
    nbatch = a.shape[0]
    m = a.shape[2] if trans else a.shape[1]
    n = a.shape[1] if trans else a.shape[2]
    L = _lanes(a, n, m)
    for lo in range(0, nbatch, _LANES):
        hi = min(nbatch, lo + _LANES)
        _load_lanes(a, lo, hi, trans, L, tol)
        _sweeps_lanes(L, tol, compute_uv)
        for l in range(hi - lo):
            state = L.state[l]
            if state == OK and (L.rot[l] > 0 or
                                not _finish_lane(L, l, lo + l, trans, compute_uv, u, s, vh)):
                state = MORE
            status[lo + l] = state


# ---- batches of 3x3: lanes with each matrix in scalars ------------------------------------

# A 3x3 step touches 12 numbers (two columns of A and of V). Loaded into scalars, one step
# for every lane is a single loop that LLVM vectorises with everything in registers, where
# the general lanes above pass each step through scratch rows, several loops per step. The
# rules are _sweeps_lanes' (the relative test, the noise zeroing, the same hand-over to
# the general kernels, MORE); the rotation is written with two square roots and one division
# instead of four and four. Plain scalars, no tuples or helper calls: numba's typing of
# those took most of the first call's compile.
# The arithmetic is the input's dtype: float32 lanes are twice as many per vector, and
# one-sided Jacobi in float32 keeps float32's relative accuracy (as sgesvj) as long as no
# square or product leaves float32's normal range, which _UP32 and _LIVE32 ensure; a matrix
# closer to that edge goes to the general kernels (float64 dot products), as does every float32
# matrix when tol asks for less than float32's eps (float32 sweeps would never meet it).

_UP = 2.0**300  # squares of numbers scaled by it neither underflow nor (entries <= 1) overflow
# float32: entries <= 1 give column squares summing to <= 9, so every scaled square and
# product below stays under 405 _UP32^2 < float32's max.
_UP32 = 2.0**59
# float32: the smallest squared norm a live column keeps (a column enters at >= _LIVE32 /
# noise^2 and is zeroed below noise^2 of its largest): its products, scaled by _UP32 and
# times rotate^2 >= eps^2, stay normal, and its entries' squares lose at most eps of it.
_LIVE32 = 2.0**-96
_EPS32 = 2.0**-23
_LANES3 = 32


# A block's scratch is one flat array W, row r at W[r * _LANES3:]: columns of X (rows 0-8,
# column j in 3j..3j+2), of V (9-17), the largest squared column norms R (18-20), the
# rotation's c and s (21, 22), rotations this sweep (23), _finish3's output (24-30). One
# flat array and a call per pair: with 2-D arrays and a loop over the pairs, LLVM tested
# the rows for overlap before every loop, and the sweeps took twice as long. (Making p and
# q compile-time constants, numba.literally, gained another ~10% but cost ~1 s of the
# first call's compile, six specialisations: the 3x3 target is 20x numpy, met 3x over.)
_X3, _V3, _R3, _C3, _S3, _T3, _P3, _W3 = 0, 9, 18, 21, 22, 23, 24, 31


@njit(cache=True, nogil=True, fastmath=_FAST, error_model="numpy")
def _turns3(W, p, q, K):
    """The rotation of columns p < q in every lane, into rows _C3 and _S3 (c = 1, s = 0
    where the pair is orthogonal enough), R updated; returns how many lanes turn."""
    rotate2, up = K[0], K[2]
    zero, one, two, four = K[3], K[4], K[5], K[6]
    L = _LANES3
    # Row offsets first: fewer operations in the loop for numba to type (its compile time).
    x, y, rx, ry = 3 * p * L, 3 * q * L, (_R3 + p) * L, (_R3 + q) * L
    turns = zero
    for l in range(L):
        x0, x1, x2 = W[x + l], W[x + L + l], W[x + 2 * L + l]
        y0, y1, y2 = W[y + l], W[y + L + l], W[y + 2 * L + l]
        alpha = x0 * x0 + x1 * x1 + x2 * x2
        beta = y0 * y0 + y1 * y1 + y2 * y2
        gamma = x0 * y0 + x1 * y1 + x2 * y2
        # _rotation's c and s in a form with two square roots and one division (tan =
        # sign(d) 2 gamma / (|d| + hypot(d, 2 gamma)), d = beta - alpha), and the test in
        # squares; the scaling keeps those squares from underflowing (the entries are at
        # most 1, so nothing overflows).
        d = (beta - alpha) * up
        g = gamma * up
        go = g * g > rotate2 * ((alpha * up) * (beta * up))
        # Branch-free from here on: LLVM if-converts branches into masked stores, which
        # are slow (microcoded on AMD). Where go is false, inv = 0 and so c = 1, s = 0.
        turn = one if go else zero
        den = abs(d) + math.sqrt(d * d + four * g * g)
        inv = turn / math.sqrt(den * den + four * g * g + (one - turn))
        W[_C3 * L + l] = den * inv + (one - turn)
        W[_S3 * L + l] = (two if d >= zero else -two) * g * inv
        # (R * one: as max(R, alpha), LLVM made it a masked store too)
        W[rx + l] = max(W[rx + l] * one, alpha)
        W[ry + l] = max(W[ry + l] * one, beta)
        W[_T3 * L + l] += turn
        turns += turn
    return turns


@njit(cache=True, nogil=True, fastmath=_FAST, error_model="numpy")
def _rotate3(W, p, q, K):
    """Columns p and q of X and V turned by rows _C3, _S3 in every lane; _settle's rule: a
    column cut below a noise fraction of its largest norm is zeroed."""
    noise2, zero, one = K[1], K[3], K[4]
    L = _LANES3
    x, y, rx, ry = 3 * p * L, 3 * q * L, (_R3 + p) * L, (_R3 + q) * L
    v, w = x + _V3 * L, y + _V3 * L
    for l in range(L):
        c, s = W[_C3 * L + l], W[_S3 * L + l]
        x0, x1, x2 = W[x + l], W[x + L + l], W[x + 2 * L + l]
        y0, y1, y2 = W[y + l], W[y + L + l], W[y + 2 * L + l]
        a0, a1, a2 = c * x0 - s * y0, c * x1 - s * y1, c * x2 - s * y2
        b0, b1, b2 = s * x0 + c * y0, s * x1 + c * y1, s * x2 + c * y2
        ka = one if a0 * a0 + a1 * a1 + a2 * a2 > noise2 * W[rx + l] else zero
        kb = one if b0 * b0 + b1 * b1 + b2 * b2 > noise2 * W[ry + l] else zero
        W[x + l], W[x + L + l], W[x + 2 * L + l] = a0 * ka, a1 * ka, a2 * ka
        W[y + l], W[y + L + l], W[y + 2 * L + l] = b0 * kb, b1 * kb, b2 * kb
        for i in range(0, 3 * L, L):
            vi, wi = W[v + i + l], W[w + i + l]
            W[v + i + l] = c * vi - s * wi
            W[w + i + l] = s * vi + c * wi


@njit(**_LANE)
def _sweeps3(W, K, max_sweeps):
    """Cyclic one-sided Jacobi on every lane's 3x3, in W's dtype; K = (rotate^2, noise^2,
    scale, 0, 1, 2, 4) in that dtype. Row _T3 ends as each lane's rotations in its last
    sweep. A pair no lane turns is not rotated: its columns stay as they are, and the noise
    test, which they passed when they last turned, passes again (so the last, confirming
    sweep costs a third of the others)."""
    zero = K[3]
    L = _LANES3
    for _sweep in range(max_sweeps):
        W[_T3 * L:(_T3 + 1) * L] = zero
        if _turns3(W, 0, 1, K) != zero:
            _rotate3(W, 0, 1, K)
        if _turns3(W, 0, 2, K) != zero:
            _rotate3(W, 0, 2, K)
        if _turns3(W, 1, 2, K) != zero:
            _rotate3(W, 1, 2, K)
        busy = zero  # a loop, not .max(): numba's array max costs ~0.6 s of first compile
        for l in range(L):
            busy = max(busy, W[_T3 * L + l])
        if busy == zero:
            return


@njit(**_LANE)
def _finish3(W, K):
    """The converged lanes, in place: each column of X normalised, it and V's column
    flipped so that its first entry of largest magnitude is positive; row _P3 + j = column
    j's place in descending order of s (stable), _P3 + 3 = 0 where a singular value is zero,
    _P3 + 4 + j its s. Branch-free, so that the lane loop vectorises; K as in _sweeps3."""
    zero, one = K[3], K[4]
    L = _LANES3
    for j in range(3):
        for l in range(L):
            x0, x1, x2 = W[(3 * j) * L + l], W[(3 * j + 1) * L + l], W[(3 * j + 2) * L + l]
            sj = math.sqrt(x0 * x0 + x1 * x1 + x2 * x2)
            W[(_P3 + 4 + j) * L + l] = sj
            big = x1 if abs(x1) > abs(x0) else x0
            big = x2 if abs(x2) > abs(big) else big
            sg = -one if big < zero else one
            f = sg * (one / sj if sj > zero else zero)
            W[(3 * j) * L + l] = x0 * f
            W[(3 * j + 1) * L + l] = x1 * f
            W[(3 * j + 2) * L + l] = x2 * f
            for i in range(3):
                W[(_V3 + 3 * j + i) * L + l] *= sg
    for l in range(L):
        s0, s1, s2 = W[(_P3 + 4) * L + l], W[(_P3 + 5) * L + l], W[(_P3 + 6) * L + l]
        W[_P3 * L + l] = (one if s1 > s0 else zero) + (one if s2 > s0 else zero)
        W[(_P3 + 1) * L + l] = (one if s0 >= s1 else zero) + (one if s2 > s1 else zero)
        W[(_P3 + 2) * L + l] = (one if s0 >= s2 else zero) + (one if s1 >= s2 else zero)
        W[(_P3 + 3) * L + l] = zero if min(s0, s1, s2) == zero else one


@njit(cache=True, nogil=True, fastmath=_FAST, error_model="numpy")
def svd_lanes3(a, compute_uv, tol, u, s, vh, status):
    """svd_lanes for a batch of 3x3 matrices (a (B, 3, 3); u, vh (B, 3, 3) or empty),
    computed in a's dtype (float32 or float64)."""
    nbatch = a.shape[0]
    single = a.itemsize == 4
    if single and tol.rotate < _EPS32:
        status[:] = MORE
        return
    L = _LANES3
    W = np.empty(_W3 * L, a.dtype)
    K = np.empty(7, a.dtype)
    noise2 = tol.noise * tol.noise
    K[0], K[1], K[2] = tol.rotate * tol.rotate, noise2, _UP32 if single else _UP
    K[3], K[4], K[5], K[6] = 0.0, 1.0, 2.0, 4.0
    small = max(tol.small, _LIVE32 / noise2) if single else tol.small
    expo = np.empty(L, np.int64)
    state = np.empty(L, np.int64)
    bits = np.empty(2)
    ibits = bits.view(np.int64)
    for lo in range(0, nbatch, L):
        hi = min(nbatch, lo + L)
        W[:_T3 * L] = 0.0
        for j in range(3):
            W[(_V3 + 4 * j) * L:(_V3 + 4 * j + 1) * L] = 1.0
        state[:] = OK
        for l in range(hi - lo):  # _load_lanes' scaling and hand-over rules
            b = lo + l
            amax = 0.0
            nan = 0.0  # stays 0.0 unless an entry is NaN or Inf
            for i in range(3):
                for j in range(3):
                    v = abs(np.float64(a[b, i, j]))
                    amax = max(amax, v)
                    nan += v * 0.0
            if nan != 0.0:
                state[l] = NOT_FINITE
                continue
            # _scale_exponent without its two libm calls (a fifth of the time they took):
            # the exponent read from amax's bits, 2^-e written as bits.
            bits[0] = amax
            e = ((ibits[0] >> 52) & 0x7FF) - 1022
            if -1000 <= e <= 1000 and amax > 0.0:
                ibits[1] = (1023 - e) << 52
                sc = bits[1]
            else:  # zero, subnormal or huge
                e, sc = _scale_exponent(amax)
            expo[l] = e
            for j in range(3):
                acc = 0.0
                for i in range(3):
                    x = _times_pow2(np.float64(a[b, i, j]), e, sc)
                    W[(3 * j + i) * L + l] = x
                    acc += x * x
                if 0.0 < acc < small:
                    state[l] = MORE
            if state[l] == MORE:
                W[l:9 * L:L] = 0.0
        _sweeps3(W, K, tol.max_sweeps)
        _finish3(W, K)
        for l in range(hi - lo):
            b = lo + l
            st = state[l]
            if st == OK and (W[_T3 * L + l] > 0.0 or (compute_uv and W[(_P3 + 3) * L + l] == 0.0)):
                st = MORE  # not converged, or a zero singular value leaves U to complete
            status[b] = st
            if st != OK:
                continue
            e = int(expo[l])
            ibits[1] = (1023 + e) << 52  # 2^e, exact for the |e| <= 1000 of the load
            for j in range(3):
                k = int(W[(_P3 + j) * L + l])
                sj = np.float64(W[(_P3 + 4 + j) * L + l])
                s[b, k] = sj * bits[1] if -1000 <= e <= 1000 else math.ldexp(sj, e)
                if compute_uv:
                    for i in range(3):
                        u[b, i, k] = W[(3 * j + i) * L + l]
                        vh[b, k, i] = W[(_V3 + 3 * j + i) * L + l]
