"""Cyclic two-sided Jacobi kernels for the symmetric eigenproblem in numba: ndarrays in,
ndarrays out.

A symmetric A is driven to diagonal form by plane rotations A <- G A G^T, each one zeroing
an off-diagonal pair (p, q) (Rutishauser's formulas); the product of the rotations holds
the eigenvectors, as rows of Vt. The work is in float64 whatever the storage dtype (so
float32 input is accumulated in float64); the input is scaled by a power of two so that
its largest entry lies in [0.5, 1). Everything compiles lazily on first call and is cached
on disk (``cache=True``); importing this module compiles nothing. The kernels are serial
and release the GIL: the driver runs batch ranges on its own threads, never through numba's
threading layer (whose OpenMP backend kills a forked child that launches a kernel).

Status codes written per batch element: ``OK``, ``NOT_FINITE``, ``NOT_CONVERGED``.
"""

import math

import numpy as np

from minigrad._numba_cache import njit

# The status codes the driver reads (as the SVD's kernels write them).
from minigrad.linalg._jacobi_contract import NOT_CONVERGED, NOT_FINITE, OK

# Real or complex (Hermitian): the matrix-by-matrix kernels take complex128 as well as
# float64 through these helpers (_scalars.py); the lanes are real only.
from minigrad.linalg._scalars import conj, ldexp, modulus, split, unit, wide

# Reassociation lets LLVM vectorise the row loops; no 'nnan'/'ninf' (the finiteness checks
# must survive).
_FAST = {"reassoc", "contract"}

# Above this |theta|, 1 + theta^2 == theta^2 in float64: t = 1 / (2 theta) is exact to eps
# and theta^2 can no longer overflow.
_BIG_THETA = 1e8

_NOT_FINITE_E = -(1 << 30)  # the exponent _load returns for NaN or Inf input


@njit(cache=True, nogil=True, inline="always")
def _rotate(apq, app, aqq, tol):
    """t = tan of the rotation that zeroes a_pq, or 0.0 where (p, q) is already converged.

    Converged means |a_pq| <= tol sqrt(|a_pp a_qq|): a relative test, which keeps the tiny
    eigenvalues of a graded definite matrix accurate (Demmel and Veselic 1992). Below
    tol eps max(|a_pp|, |a_qq|) a_pq is rounding noise beside a (near) zero eigenvalue and
    moves nothing by more than eps^2 |A|: converged too, so that such noise is not chased.
    """
    a = abs(apq)
    if a == 0.0 or a * a <= tol * tol * abs(app * aqq) or a <= 2.2e-16 * tol * max(
            abs(app), abs(aqq)):
        return 0.0
    theta = (aqq - app) / (2.0 * apq)
    if abs(theta) > _BIG_THETA:
        return 0.5 / theta
    t = 1.0 / (abs(theta) + math.sqrt(1.0 + theta * theta))
    return -t if theta < 0.0 else t


# Hermitian: the rotation G^H X G that zeroes a_pq = |a_pq| ph is the real one of |a_pq|
# after turning index q by ph: with s = |s| conj(ph), the rows of X (and of Vt = V^H) go
# X[p] <- c X[p] - conj(s) X[q], X[q] <- s X[p] + c X[q]; for real a_pq, ph = 1 and s
# keeps the sign of the real formulas.
@njit(cache=True, nogil=True, fastmath=_FAST, inline="always")
def _rotate_rows(X, p, q, c, s):
    sc = conj(s)
    for i in range(X.shape[1]):
        xp = X[p, i]
        xq = X[q, i]
        X[p, i] = c * xp - sc * xq
        X[q, i] = s * xp + c * xq


@njit(cache=True, nogil=True, fastmath=_FAST)
def jacobi_sweeps(X, Vt, tol, max_sweeps, with_v):
    """Cyclic-by-rows Jacobi on the symmetric X (full storage), in place; rotations are
    mirrored on the rows of Vt when with_v. Returns the number of sweeps, or -1 if a sweep
    still rotated after max_sweeps."""
    n = X.shape[0]
    for sweep in range(max_sweeps):
        rotated = 0
        for p in range(n - 1):
            for q in range(p + 1, n):
                apq, ph = split(X[p, q])
                app = X[p, p].real
                aqq = X[q, q].real
                t = _rotate(apq, app, aqq, tol)
                if t == 0.0:
                    continue
                c = 1.0 / math.sqrt(1.0 + t * t)
                s = c * t * conj(ph)
                # Rows by the rotation (contiguous); the columns are their mirror image
                # (conjugate), and the 2x2 block is set from the closed form (exact zero off
                # the diagonal).
                _rotate_rows(X, p, q, c, s)
                X[p, p] = app - t * apq
                X[q, q] = aqq + t * apq
                X[p, q] = 0.0
                X[q, p] = 0.0
                for i in range(n):
                    X[i, p] = conj(X[p, i])
                    X[i, q] = conj(X[q, i])
                if with_v:
                    _rotate_rows(Vt, p, q, c, s)
                rotated += 1
        if rotated == 0:
            return sweep + 1
    return -1


@njit(cache=True, nogil=True, fastmath=_FAST, inline="always")
def _dot_rows(X, p, Y, q):
    """X[p] . conj(Y[q])."""
    acc = 0.0
    for i in range(X.shape[1]):
        acc += X[p, i] * conj(Y[q, i])
    return acc


@njit(cache=True, nogil=True, fastmath=_FAST, inline="always")
def _rotate_rows_dot(X, p, q, c, s, Y, r):
    """_rotate_rows(X, p, q, c, s), returning the new X[p] . conj(Y[r])."""
    sc = conj(s)
    acc = 0.0
    for i in range(X.shape[1]):
        xp = X[p, i]
        xq = X[q, i]
        xn = c * xp - sc * xq
        X[p, i] = xn
        X[q, i] = s * xp + c * xq
        acc += xn * conj(Y[r, i])
    return acc


@njit(cache=True, nogil=True, fastmath=_FAST)
def jacobi_sweeps_av(Wt, Vt, d, tol, floor, max_sweeps):
    """The same cyclic Jacobi on B = V^T A V held implicitly: Vt's rows are V's columns and
    Wt's rows those of W = A V (Wt = A at the start, V = I), so b_pq = v_p . w_q and every
    update is a rotation of two contiguous rows: no strided column writes, which cost the
    explicit form 5x its flops at n = 256. b_pq then carries rounding of eps |A|, so a pair
    also counts as converged below the absolute floor (eigenvalues to absolute accuracy, as
    LAPACK's). d holds the diagonal of B. Returns the number of sweeps, or -1.
    Hermitian: Vt = V^H and Wt = W^H (= A at the start), so b_pq = Vt[p] . conj(Wt[q]),
    and both take the rotation of X in jacobi_sweeps."""
    n = Wt.shape[0]
    for sweep in range(max_sweeps):
        for j in range(n):
            d[j] = _dot_rows(Vt, j, Wt, j).real
        rotated = 0
        for p in range(n - 1):
            bpq = _dot_rows(Vt, p, Wt, p + 1)
            for q in range(p + 1, n):
                last = q + 1 == n
                g, ph = split(bpq)
                t = 0.0 if abs(g) <= floor else _rotate(g, d[p], d[q], tol)
                if t == 0.0:
                    if not last:
                        bpq = _dot_rows(Vt, p, Wt, q + 1)
                    continue
                c = 1.0 / math.sqrt(1.0 + t * t)
                s = c * t * conj(ph)
                _rotate_rows(Wt, p, q, c, s)
                d[p] -= t * g
                d[q] += t * g
                if last:
                    _rotate_rows(Vt, p, q, c, s)
                else:  # the next pair's b_pq rides on the rotation of v_p
                    bpq = _rotate_rows_dot(Vt, p, q, c, s, Wt, q + 1)
                rotated += 1
        if rotated == 0:
            for j in range(n):
                d[j] = _dot_rows(Vt, j, Wt, j).real
            return sweep + 1
    return -1


@njit(cache=True, nogil=True, inline="always")
def _calm(bpq, dp, dq, tol, floor):
    """Whether jacobi_sweeps_av leaves the pair with b_pq = bpq, b_pp = dp, b_qq = dq."""
    g = split(bpq)[0]
    return abs(g) <= floor or _rotate(g, dp, dq, tol) == 0.0


@njit(cache=True, nogil=True, fastmath=_FAST)
def _settled(Wt, Vt, d, tol, floor):
    """Whether jacobi_sweeps_av(Wt, Vt, d, tol, floor, .) would rotate nothing, with d set
    to B's diagonal: its first sweep where the start is already converged (from LAPACK's
    vectors, as a rule), with B's entries taken two rows of Vt by two of Wt (each row
    read once for four dots: 1.4x faster than the sweep's one by one at n = 256)."""
    n = Wt.shape[0]
    for j in range(n):
        d[j] = _dot_rows(Vt, j, Wt, j).real
    for p in range(0, n - 1, 2):
        for q in range(p, n - 1, 2):
            b00 = 0.0
            b01 = 0.0
            b10 = 0.0
            b11 = 0.0
            for i in range(Vt.shape[1]):
                v0 = Vt[p, i]
                v1 = Vt[p + 1, i]
                w0 = conj(Wt[q, i])
                w1 = conj(Wt[q + 1, i])
                b00 += v0 * w0
                b01 += v0 * w1
                b10 += v1 * w0
                b11 += v1 * w1
            if not _calm(b01, d[p], d[q + 1], tol, floor):
                return False
            if q > p and not (_calm(b00, d[p], d[q], tol, floor)
                              and _calm(b10, d[p + 1], d[q], tol, floor)
                              and _calm(b11, d[p + 1], d[q + 1], tol, floor)):
                return False
    if n % 2:  # the last row, left out of the pairs of rows
        for p in range(n - 1):
            if not _calm(_dot_rows(Vt, p, Wt, n - 1), d[p], d[n - 1], tol, floor):
                return False
    return True


@njit(cache=True, nogil=True)
def _exponent(amax):
    """e with amax * 2^e in [0.5, 1) (0 for amax = 0): applied by ldexp, which stays exact
    where 2^e itself would overflow (subnormal input)."""
    return -math.frexp(amax)[1] if amax > 0.0 else 0


@njit(cache=True, nogil=True)
def _load(src, lower, X):
    """X = the symmetric (Hermitian) matrix read from src's lower (or upper) triangle, times
    2^e so that its largest entry lies in [0.5, 1). Returns e, or _NOT_FINITE_E for NaN or
    Inf. Hermitian: the diagonal's imaginary part is not read (as LAPACK's zheev)."""
    n = X.shape[0]
    amax = 0.0
    for i in range(n):
        for j in range(i + 1):
            v = wide(src[i, j] if lower else src[j, i])
            if not (math.isfinite(v.real) and math.isfinite(v.imag)):
                return _NOT_FINITE_E
            amax = max(amax, modulus(v.real if i == j else v))
    e = _exponent(amax)
    for i in range(n):
        for j in range(i):
            v = ldexp(wide(src[i, j] if lower else conj(src[j, i])), e)
            X[i, j] = v
            X[j, i] = conj(v)
        X[i, i] = math.ldexp(np.float64(src[i, i].real), e)
    return e


@njit(cache=True, nogil=True)
def _sort_ascending(d, perm):
    """perm ordering d ascending: a stable insertion sort (n is small or nearly sorted)."""
    for j in range(perm.shape[0]):
        perm[j] = j
    for j in range(1, perm.shape[0]):
        pj = perm[j]
        i = j - 1
        while i >= 0 and d[perm[i]] > d[pj]:
            perm[i + 1] = perm[i]
            i -= 1
        perm[i + 1] = pj


@njit(cache=True, nogil=True)
def _write(d, Vt, e, with_v, perm, w, v):
    """Sorted eigenvalues d / 2^e into w and the rows of Vt as the columns of v, each
    signed so that its first entry of largest magnitude is positive."""
    n = d.shape[0]
    _sort_ascending(d, perm)
    for k in range(n):
        w[k] = math.ldexp(d[perm[k]], -e)
    if not with_v:
        return
    for k in range(n):
        r = perm[k]
        best = 0
        top = modulus(Vt[r, 0])
        for i in range(1, n):
            m = modulus(Vt[r, i])
            if m > top:
                best = i
                top = m
        # Hermitian: Vt = V^H; the entry is made real and positive
        sg = conj(unit(conj(Vt[r, best])))
        for i in range(n):
            v[i, k] = conj(Vt[r, i]) * sg


@njit(cache=True, nogil=True)
def _eigh_one(src, lower, with_v, tol, max_sweeps, w, v, X, Vt, d, perm):
    """Eigenvalues (ascending) into w and eigenvectors into the columns of v for one
    symmetric matrix given by a triangle of src. Returns a status code."""
    n = X.shape[0]
    e = _load(src, lower, X)
    if e == _NOT_FINITE_E:
        return NOT_FINITE
    if with_v or n >= _AV_MIN_N:
        Vt[:, :] = 0.0
        for i in range(n):
            Vt[i, i] = 1.0
    if n >= _AV_MIN_N:
        anorm = 0.0
        for i in range(n):
            anorm += _dot_rows(X, i, X, i).real
        if jacobi_sweeps_av(X, Vt, d, tol, tol * math.sqrt(anorm), max_sweeps) < 0:
            return NOT_CONVERGED
    else:
        if jacobi_sweeps(X, Vt, tol, max_sweeps, with_v) < 0:
            return NOT_CONVERGED
        for i in range(n):
            d[i] = X[i, i].real
    _write(d, Vt, e, with_v, perm, w, v)
    return OK


# From this size on, the implicit form (jacobi_sweeps_av): its contiguous updates beat the
# explicit form's strided column writes, at the price of the relative accuracy of tiny
# eigenvalues of graded matrices (kept below this size).
_AV_MIN_N = 48

# Batches of matrices up to _LANES_MAX_N go through in blocks of _LANES: each Jacobi step is
# then the same few flops on _LANES independent matrices, a loop LLVM vectorises, where a
# lone 3x3 is a chain of dependent divisions and square roots that leaves the core idle.
# Measured per matrix, a full block costs 0.4x (8x8) to 0.8x (3x3, 32x32) of a matrix done
# alone; a block of fewer than _LANES_MIN matrices goes matrix by matrix.
_LANES = 32
_LANES_MAX_N = 32
_LANES_MIN = 24


@njit(cache=True, nogil=True, fastmath=_FAST, inline="always")
def _rotate_lanes(X, i, j, k, m, cs, sn):
    """(X[i, j], X[k, m]) <- (c x - s y, s x + c y) in every lane."""
    for l in range(_LANES):
        x = X[i, j, l]
        y = X[k, m, l]
        X[i, j, l] = cs[l] * x - sn[l] * y
        X[k, m, l] = sn[l] * x + cs[l] * y


@njit(cache=True, nogil=True, fastmath=_FAST, error_model="numpy")
def _sweeps_lanes(X, Vt, tol, max_sweeps, with_v, tmp, rot):
    """jacobi_sweeps on X[:, :, l] for every lane l at once, branch-free: a lane whose pair
    has converged gets the identity (t = 0). Only X's upper triangle is kept up to date (in
    this layout a column is as contiguous as a row, so no mirror copy is needed). rot[l]
    ends as the rotations of lane l's last sweep: rot[l] > 0 means lane l did not converge
    in max_sweeps."""
    n = X.shape[0]
    tt, cs, sn, keep, opq = tmp[0], tmp[1], tmp[2], tmp[3], tmp[4]
    floor = 2.2e-16 * tol
    for _sweep in range(max_sweeps):
        rot[:] = 0
        for p in range(n - 1):
            for q in range(p + 1, n):
                moved = 0
                for l in range(_LANES):
                    apq = X[p, q, l]
                    app = X[p, p, l]
                    aqq = X[q, q, l]
                    a = abs(apq)
                    go = (a * a > tol * tol * abs(app * aqq)) and (
                        a > floor * max(abs(app), abs(aqq))) and a > 0.0
                    theta = (aqq - app) / (2.0 * (apq if go else 1.0))
                    t = 1.0 / (abs(theta) + math.sqrt(1.0 + theta * theta))
                    t = -t if theta < 0.0 else t
                    t = 0.5 / theta if abs(theta) > _BIG_THETA else t
                    t = t if go else 0.0
                    c = 1.0 / math.sqrt(1.0 + t * t)
                    tt[l] = t
                    cs[l] = c
                    sn[l] = c * t
                    keep[l] = 0.0 if go else 1.0
                    opq[l] = apq
                    moved += 1 if go else 0
                    rot[l] += 1 if go else 0
                if moved == 0:  # converged in every lane: the update would be the identity
                    continue
                # The pairs (p, i) and (q, i), i outside {p, q}, where the upper triangle
                # keeps them; then the 2x2 block from the closed form.
                for i in range(p):
                    _rotate_lanes(X, i, p, i, q, cs, sn)
                for i in range(p + 1, q):
                    _rotate_lanes(X, p, i, i, q, cs, sn)
                for i in range(q + 1, n):
                    _rotate_lanes(X, p, i, q, i, cs, sn)
                for l in range(_LANES):
                    X[p, p, l] -= tt[l] * opq[l]
                    X[q, q, l] += tt[l] * opq[l]
                    X[p, q, l] = opq[l] * keep[l]
                if with_v:
                    for i in range(n):
                        _rotate_lanes(Vt, p, i, q, i, cs, sn)
        if rot.max() == 0:
            return


@njit(cache=True, nogil=True)
def _eigh_lanes(a, lo, hi, lower, with_v, tol, max_sweeps, w, v, status, XL, VL, tmp, rot,
                expo, d, perm, Vt):
    """_eigh_one for the matrices a[lo:hi] (hi - lo <= _LANES), swept together in lanes."""
    n = XL.shape[0]
    XL[:, :, :] = 0.0  # idle and non-finite lanes converge at once
    VL[:, :, :] = 0.0
    for i in range(n):
        VL[i, i, :] = 1.0
    for l in range(hi - lo):
        b = lo + l
        amax = 0.0
        nan = 0.0  # stays 0.0 unless an entry is NaN or Inf
        for i in range(n):
            for j in range(i + 1):
                x = abs(np.float64(a[b, i, j] if lower else a[b, j, i]))
                amax = max(amax, x)
                nan += x * 0.0
        expo[l] = _NOT_FINITE_E
        if nan != 0.0:
            status[b] = NOT_FINITE
            continue
        e = _exponent(amax)
        expo[l] = e
        for i in range(n):
            for j in range(i + 1):
                x = math.ldexp(np.float64(a[b, i, j] if lower else a[b, j, i]), e)
                XL[i, j, l] = x
                XL[j, i, l] = x
    _sweeps_lanes(XL, VL, tol, max_sweeps, with_v, tmp, rot)
    for l in range(hi - lo):
        b = lo + l
        if expo[l] == _NOT_FINITE_E:
            continue
        if rot[l] > 0:
            status[b] = NOT_CONVERGED
            continue
        for i in range(n):
            d[i] = XL[i, i, l]
            if with_v:
                for j in range(n):
                    Vt[i, j] = VL[i, j, l]
        _write(d, Vt, expo[l], with_v, perm, w[b], v[b])
        status[b] = OK


@njit(cache=True, nogil=True)
def eigh_range(a, lo, hi, lower, with_v, tol, max_sweeps, w, v, status):
    """Eigenvalues w[b] (n,), ascending, eigenvectors v[b] (n, n) (columns; untouched without
    with_v) and a status[b] for the symmetric matrices given by a triangle of a[b] (n, n),
    lo <= b < hi. Scratch is allocated once per call."""
    n = a.shape[1]
    X = np.empty((n, n))
    Vt = np.empty((n, n))
    d = np.empty(n)
    perm = np.empty(n, dtype=np.int64)
    lanes = n <= _LANES_MAX_N and hi - lo >= _LANES_MIN
    XL = np.empty((n, n, _LANES) if lanes else (0, 0, _LANES))
    VL = np.empty((n, n, _LANES) if lanes else (0, 0, _LANES))
    tmp = np.empty((5, _LANES))
    rot = np.empty(_LANES, dtype=np.int64)
    expo = np.empty(_LANES, dtype=np.int64)
    for b0 in range(lo, hi, _LANES):
        b1 = min(hi, b0 + _LANES)
        if lanes and b1 - b0 >= _LANES_MIN:
            _eigh_lanes(a, b0, b1, lower, with_v, tol, max_sweeps, w, v, status, XL, VL, tmp,
                        rot, expo, d, perm, Vt)
            continue
        for b in range(b0, b1):
            status[b] = _eigh_one(a[b], lower, with_v, tol, max_sweeps, w[b], v[b], X, Vt, d,
                                  perm)


@njit(cache=True, nogil=True)
def eigh_load_range(a, lo, hi, lower, X, expo):
    """X[b] = the matrix read from a triangle of a[b] and scaled as _load does, and expo[b]
    its exponent, lo <= b < hi: the input of LAPACK's eigh in the driver's start from its
    eigenvectors. A non-finite a[b] gets X[b] = 0 (LAPACK never sees NaN or Inf) and
    expo[b] = _NOT_FINITE_E, which eigh_polish_range reports."""
    for b in range(lo, hi):
        e = _load(a[b], lower, X[b])
        if e == _NOT_FINITE_E:
            X[b] = 0.0
        expo[b] = e


@njit(cache=True, nogil=True)
def eigh_polish_range(Wt, Vt, expo, lo, hi, with_v, tol, max_sweeps, w, v, status):
    """eigh_range's output for the matrices X[b] of eigh_load_range, lo <= b < hi, given
    Vt[b] = V0^H (V0 LAPACK's eigenvectors of X[b]) and Wt[b] = V0^H X[b]: the A V sweeps
    (jacobi_sweeps_av, its convergence test and floor) started from V0 rather than I.
    B = V0^H X V0 is then diagonal up to rounding of eps |X|, which _settled mostly finds
    converged: no sweep, or one or two, instead of 10-11. The floor already gave up the
    relative accuracy of tiny eigenvalues (absolute, as LAPACK's), so the start loses none
    of the plain sweeps' guarantees."""
    n = Wt.shape[1]
    d = np.empty(n)
    perm = np.empty(n, dtype=np.int64)
    for b in range(lo, hi):
        if expo[b] == _NOT_FINITE_E:
            status[b] = NOT_FINITE
            continue
        anorm = 0.0  # |X|_F^2 = |V0^H X|_F^2 (V0 unitary)
        for i in range(n):
            anorm += _dot_rows(Wt[b], i, Wt[b], i).real
        floor = tol * math.sqrt(anorm)
        if not _settled(Wt[b], Vt[b], d, tol, floor) and jacobi_sweeps_av(
                Wt[b], Vt[b], d, tol, floor, max_sweeps) < 0:
            status[b] = NOT_CONVERGED
            continue
        _write(d, Vt[b], expo[b], with_v, perm, w[b], v[b])
        status[b] = OK


@njit(cache=True, nogil=True)
def eigh_range_hermitian(a, lo, hi, lower, with_v, tol, max_sweeps, w, v, status):
    """eigh_range for complex128 Hermitian a (v complex128, w float64), matrix by matrix:
    the lanes are real only."""
    n = a.shape[1]
    X = np.empty((n, n), a.dtype)
    Vt = np.empty((n, n), a.dtype)
    d = np.empty(n)
    perm = np.empty(n, dtype=np.int64)
    for b in range(lo, hi):
        status[b] = _eigh_one(a[b], lower, with_v, tol, max_sweeps, w[b], v[b], X, Vt, d, perm)
