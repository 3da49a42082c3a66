"""One-sided (Hestenes) Jacobi SVD kernels in numba: ndarrays in, ndarrays out.

The working copy of a matrix is stored transposed, ``X[j] = column j``, so every plane
rotation and every dot product runs over contiguous memory. Dot products accumulate in
float64 whatever the storage dtype. Everything compiles lazily on first call and is cached
on disk (``cache=True``); importing this module compiles nothing.

Status codes written per batch element: ``OK``, ``NOT_FINITE``, ``NOT_CONVERGED``.
"""

import math

import numpy as np
from numba import get_num_threads, njit, prange  # noqa: F401 (re-exported)

OK = 0
NOT_FINITE = 1
NOT_CONVERGED = 2

# Reassociating a sum lets LLVM vectorise the dot products; nothing else is relaxed
# (no 'nnan'/'ninf': the finiteness checks must survive).
_FAST = {"reassoc", "contract"}

# Above this |zeta|, 1 + zeta^2 == zeta^2 in float64, so t = 1 / (2 zeta) is exact to eps
# and sqrt(1 + zeta^2) can no longer overflow.
_BIG_ZETA = 1e8


# Not inline="always": numba-level inlining would compile the loop with the caller's (strict)
# flags and lose the vectorisation; LLVM still inlines the call, keeping these flags.
@njit(cache=True, fastmath=_FAST)
def _dot(x, y):
    acc = 0.0
    for i in range(x.shape[0]):
        acc += np.float64(x[i]) * np.float64(y[i])
    return acc


@njit(cache=True, inline="always")
def _swap_rows(X, p, q):
    for i in range(X.shape[1]):
        tmp = X[p, i]
        X[p, i] = X[q, i]
        X[q, i] = tmp


@njit(cache=True, inline="always")
def _rotation(alpha, beta, gamma):
    """(c, s, t) of the rotation that makes columns with Gram [[alpha, gamma], [gamma, beta]]
    orthogonal; the new norms are alpha - t*gamma and beta + t*gamma."""
    zeta = (beta - alpha) / (2.0 * gamma)
    if abs(zeta) > _BIG_ZETA:
        t = 0.5 / zeta
    else:
        t = 1.0 / (abs(zeta) + math.sqrt(1.0 + zeta * zeta))
        if zeta < 0.0:
            t = -t
    c = 1.0 / math.sqrt(1.0 + t * t)
    return c, c * t, t


# The pair loop works on whole rows by 2-d indexing, inlined into one fastmath function:
# that is what LLVM vectorises best (row views passed to helpers ran ~30% slower).
@njit(cache=True, fastmath=_FAST, inline="always")
def _rotate_rows(X, p, q, c, s):
    for i in range(X.shape[1]):
        xi = X[p, i]
        yi = X[q, i]
        X[p, i] = c * xi - s * yi
        X[q, i] = s * xi + c * yi


@njit(cache=True, fastmath=_FAST, inline="always")
def _rotate_rows_dot(X, p, q, r, c, s):
    """_rotate_rows(X, p, q, c, s) and return the new X[p] . X[r]: the next pair's dot
    product rides on the rotation's loads and stores (the loop is bound by the stores)."""
    acc = 0.0
    for i in range(X.shape[1]):
        xi = X[p, i]
        yi = X[q, i]
        xn = c * xi - s * yi
        X[p, i] = xn
        X[q, i] = s * xi + c * yi
        acc += np.float64(xn) * np.float64(X[r, i])
    return acc


@njit(cache=True, fastmath=_FAST, inline="always")
def _dot_rows(X, p, q):
    acc = 0.0
    for i in range(X.shape[1]):
        acc += np.float64(X[p, i]) * np.float64(X[q, i])
    return acc


@njit(cache=True, fastmath=_FAST, inline="always")
def _pairs(X, Vt, nrm, p, q0, q1, tol, with_v):
    """Orthogonalise row p of X against rows q0..q1-1 (the relative test decides which);
    rotations are mirrored on Vt when with_v. Returns the number of rotations."""
    done = 0
    if q0 >= q1:
        return done
    gamma = _dot_rows(X, p, q0)
    for q in range(q0, q1):
        alpha = nrm[p]
        beta = nrm[q]
        last = q + 1 == q1
        if abs(gamma) <= tol * math.sqrt(alpha) * math.sqrt(beta):
            if not last:
                gamma = _dot_rows(X, p, q + 1)
            continue
        c, s, t = _rotation(alpha, beta, gamma)
        # Rotate in the storage dtype: float64 factors would halve float32's SIMD width.
        c_ = X.dtype.type(c)
        s_ = X.dtype.type(s)
        g = gamma
        if last:
            _rotate_rows(X, p, q, c_, s_)
        else:
            gamma = _rotate_rows_dot(X, p, q, q + 1, c_, s_)
        if with_v:
            _rotate_rows(Vt, p, q, c_, s_)
        # Updating the norms saves a dot product per rotation; a norm that shrank a lot has
        # lost digits to cancellation, so recompute that one (as dgesvj does).
        na = alpha - t * g
        nb = beta + t * g
        nrm[p] = na if na > 0.1 * alpha else _recompute(X, p, alpha, tol)
        nrm[q] = nb if nb > 0.1 * beta else _recompute(X, q, beta, tol)
        done += 1
    return done


@njit(cache=True, fastmath=_FAST, inline="always")
def _recompute(X, p, old, tol):
    """|X[p]|^2 after a rotation cancelled most of it. If less than a tol fraction of the
    old norm is left, the row is rounding noise (from a rank deficiency): zero it. Else
    each further rotation would shrink such noise by only ~eps, for dozens of sweeps; the
    change is a columnwise relative perturbation of size tol, as any rotation makes."""
    new = _dot_rows(X, p, p)
    if new > tol * tol * old:
        return new
    X[p, :] = 0.0
    return 0.0


@njit(cache=True, fastmath=_FAST)
def jacobi_sweeps(X, Vt, nrm, tol, max_sweeps, with_v):
    """Cyclic one-sided Jacobi with de Rijk pivoting on the rows of X (the columns of A).

    Rotations are mirrored on the rows of Vt when with_v. Returns the number of sweeps,
    or -1 if a sweep still rotated after max_sweeps.
    """
    n = X.shape[0]
    for sweep in range(max_sweeps):
        rotated = 0
        for j in range(n):
            nrm[j] = _dot(X[j], X[j])
        for p in range(n - 1):
            # de Rijk: the largest remaining column goes first; fewer sweeps, nearly sorted.
            best = p
            for j in range(p + 1, n):
                if nrm[j] > nrm[best]:
                    best = j
            if best != p:
                _swap_rows(X, p, best)
                if with_v:
                    _swap_rows(Vt, p, best)
                nrm[p], nrm[best] = nrm[best], nrm[p]
            rotated += _pairs(X, Vt, nrm, p, p + 1, n, tol, with_v)
        if rotated == 0:
            return sweep + 1
    return -1


@njit(cache=True, fastmath=_FAST, parallel=True)
def jacobi_sweeps_parallel(X, Vt, nrm, tol, max_sweeps, with_v, nthreads):
    """jacobi_sweeps for one large matrix on nthreads threads.

    The columns are cut into 2 * nthreads blocks; a round-robin tournament over the blocks
    pairs them disjointly, so each round is nthreads independent block pairs (every column
    pair of the two blocks, plus the pairs inside each block in the first round). A sweep
    is 2 * nthreads - 1 parallel rounds, few enough that the fork/join cost is negligible.
    """
    n = X.shape[0]
    nb = 2 * nthreads
    bnd = np.empty(nb + 1, dtype=np.int64)
    for i in range(nb + 1):
        bnd[i] = i * n // nb
    left = np.empty(nthreads, dtype=np.int64)
    right = np.empty(nthreads, dtype=np.int64)
    count = np.zeros(nthreads, dtype=np.int64)
    for sweep in range(max_sweeps):
        for j in prange(n):
            nrm[j] = _dot(X[j], X[j])
        # de Rijk's pivoting, once per sweep: rows sorted by norm, descending, which saves
        # a few sweeps (and leaves the result nearly sorted).
        order = np.argsort(-nrm)
        X[:, :] = X[order]
        nrm[:] = nrm[order]
        if with_v:
            Vt[:, :] = Vt[order]
        count[:] = 0
        for rnd in range(nb - 1):
            # Circle method: block nb - 1 stays put, the others rotate one place per round.
            left[0] = nb - 1
            right[0] = rnd
            for i in range(1, nthreads):
                left[i] = (rnd + i) % (nb - 1)
                right[i] = (rnd - i + nb - 1) % (nb - 1)
            for t in prange(nthreads):
                bi = left[t]
                bj = right[t]
                done = 0  # a local counter: neighbouring count[t] would false-share
                if rnd == 0:
                    for blk in (bi, bj):
                        for p in range(bnd[blk], bnd[blk + 1]):
                            done += _pairs(X, Vt, nrm, p, p + 1, bnd[blk + 1], tol, with_v)
                for p in range(bnd[bi], bnd[bi + 1]):
                    done += _pairs(X, Vt, nrm, p, bnd[bj], bnd[bj + 1], tol, with_v)
                count[t] += done
        if count.sum() == 0:
            return sweep + 1
    return -1


@njit(cache=True)
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
                mass[l] += np.float64(Ut[i, l]) ** 2
    w = np.empty(m)
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
        inv = 1.0 / math.sqrt(_dot(w, w))
        for l in range(m):
            Ut[i, l] = w[l] * inv
            mass[l] += (w[l] * inv) ** 2
        filled[i] = True


@njit(cache=True, inline="always")
def _sign_of_largest(x):
    """-1.0 if the first entry of largest magnitude in x is negative, else 1.0."""
    best = 0
    for i in range(1, x.shape[0]):
        if abs(x[i]) > abs(x[best]):
            best = i
    return -1.0 if x[best] < 0 else 1.0


@njit(cache=True)
def _load(src, trans, X):
    """X = (src, or src.T if trans) transposed and scaled by a power of two so the largest
    entry lies in [0.5, 1): squares can then neither overflow nor (mostly) underflow.
    Returns the scale, or -1.0 if src holds a NaN or Inf."""
    n, m = X.shape
    amax = 0.0
    for i in range(src.shape[0]):
        for j in range(src.shape[1]):
            v = np.float64(src[i, j])
            if not math.isfinite(v):
                return -1.0
            amax = max(amax, abs(v))
    scale = 1.0
    if amax > 0.0:
        scale = math.ldexp(1.0, -math.frexp(amax)[1])
    if trans:
        for j in range(n):
            for i in range(m):
                X[j, i] = src[j, i] * scale
    else:
        for i in range(m):
            for j in range(n):
                X[j, i] = src[i, j] * scale
    return scale


@njit(cache=True)
def _svd_one(src, trans, full, compute_uv, with_v, tol, max_sweeps, u, s, vh,
             X, Vt, Ut, nrm, sv, perm, sgn, filled, nthreads):
    """SVD of one matrix A (= src, or src.T when trans, so that A is m x n with m >= n)
    written into u, s, vh in the orientation of src. Returns a status code.

    With compute_uv and not with_v, V is not accumulated and only s and Ut (the left
    singular vectors of A as rows, unsigned) are produced; u and vh are left alone."""
    n, m = X.shape
    scale = _load(src, trans, X)
    if scale < 0.0:
        return NOT_FINITE
    with_v = compute_uv and with_v
    if with_v:
        Vt[:, :] = 0.0
        for j in range(n):
            Vt[j, j] = 1.0
    if nthreads > 1:
        sweeps = jacobi_sweeps_parallel(X, Vt, nrm, tol, max_sweeps, with_v, nthreads)
    else:
        sweeps = jacobi_sweeps(X, Vt, nrm, tol, max_sweeps, with_v)
    if sweeps < 0:
        return NOT_CONVERGED
    return _finish(X, Vt, scale, trans, compute_uv, with_v, u, s, vh, Ut, sv, perm, sgn,
                   filled)


@njit(cache=True)
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


@njit(cache=True)
def _finish(X, Vt, scale, trans, compute_uv, with_v, u, s, vh, Ut, sv, perm, sgn, filled):
    """The converged X (and Vt when with_v) to sorted s, completed Ut, signed u and vh."""
    n, m = X.shape
    for j in range(n):
        sv[j] = math.sqrt(_dot(X[j], X[j]))
        perm[j] = j
    _sort_descending(sv, perm)
    for j in range(n):
        s[j] = sv[perm[j]] / scale
    if not compute_uv:
        return OK

    ucols = Ut.shape[0]
    for j in range(ucols):
        filled[j] = False
    for j in range(n):
        sj = sv[perm[j]]
        if sj > 0.0:
            inv = 1.0 / sj
            for i in range(m):
                Ut[j, i] = X[perm[j], i] * inv
            filled[j] = True
    if ucols > n or not filled[:n].all():  # complete_rows allocates: skip it if it has no work
        complete_rows(Ut, filled)
    if not with_v:
        return OK

    # Sign convention: the largest-|.| entry of each column of U (in src's orientation)
    # is positive; v_j flips with u_j, complement vectors are normalised on their own.
    for j in range(n):
        if trans:
            sgn[j] = _sign_of_largest(Vt[perm[j]])
        else:
            sgn[j] = _sign_of_largest(Ut[j])
    for j in range(n, ucols):
        sgn[j] = _sign_of_largest(Ut[j])

    if trans:
        for j in range(n):
            for i in range(n):
                u[i, j] = Vt[perm[j], i] * sgn[j]
        for j in range(ucols):
            for i in range(m):
                vh[j, i] = Ut[j, i] * sgn[j]
    else:
        for j in range(ucols):
            for i in range(m):
                u[i, j] = Ut[j, i] * sgn[j]
        for j in range(n):
            for i in range(n):
                vh[j, i] = Vt[perm[j], i] * sgn[j]
    return OK


# Matrices with at most _LANES_MAX_N columns (after the transpose) and _LANES_MAX_M rows go
# through the batch in blocks of _LANES: one Jacobi step is then the same few flops on
# _LANES independent matrices, a loop LLVM vectorises; matrix by matrix, a 3x3 is a chain
# of dependent divisions and square roots that leaves the core idle.
_LANES = 32
_LANES_MAX_N = 4
_LANES_MAX_M = 8


@njit(cache=True, fastmath=_FAST, error_model="numpy")
def _sweeps_lanes(X, Vt, tol, max_sweeps, with_v, tmp, rot):
    """Cyclic one-sided Jacobi on the rows of X[:, :, l] for every lane l at once (rotations
    mirrored on Vt[:, :, l] when with_v); rot[l] ends as the rotations of lane l's last
    sweep, so rot[l] > 0 means lane l did not converge in max_sweeps.

    The same tests as _pairs, made branch-free so that the lane loops vectorise: a lane
    whose pair is already orthogonal gets the exact identity (c = 1, s = 0). No de Rijk
    pivoting (a data-dependent swap per lane); _finish sorts.
    """
    n, m = X.shape[0], X.shape[1]  # the lane count is the constant _LANES: fixed-trip loops
    al, be, ga, cs, sn = tmp[0], tmp[1], tmp[2], tmp[3], tmp[4]
    nap, nbq = tmp[5], tmp[6]
    for _sweep in range(max_sweeps):
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
                    go = abs(gamma) > tol * math.sqrt(alpha) * math.sqrt(beta)
                    zeta = (beta - alpha) / (2.0 * (gamma if go else 1.0))
                    t = 1.0 / (abs(zeta) + math.sqrt(1.0 + zeta * zeta))
                    t = -t if zeta < 0.0 else t
                    t = 0.5 / zeta if abs(zeta) > _BIG_ZETA else t
                    t = t if go else 0.0
                    c = 1.0 / math.sqrt(1.0 + t * t)
                    cs[l] = c
                    sn[l] = c * t
                    rot[l] += 1 if go else 0
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
                # _recompute's rule: a row that a rotation cut below a tol fraction of its
                # norm is rounding noise from a rank deficiency; zero it, or it never settles.
                nap[:] = 0.0
                nbq[:] = 0.0
                for i in range(m):
                    for l in range(_LANES):
                        nap[l] += X[p, i, l] * X[p, i, l]
                        nbq[l] += X[q, i, l] * X[q, i, l]
                for l in range(_LANES):
                    nap[l] = 0.0 if nap[l] <= tol * tol * al[l] else 1.0
                    nbq[l] = 0.0 if nbq[l] <= tol * tol * be[l] else 1.0
                if nap.min() == 0.0 or nbq.min() == 0.0:
                    for i in range(m):
                        for l in range(_LANES):
                            X[p, i, l] *= nap[l]
                            X[q, i, l] *= nbq[l]
        if rot.max() == 0:
            return


@njit(cache=True)
def _svd_lanes(a, lo, hi, trans, compute_uv, tol, max_sweeps, u, s, vh, status,
               XL, VL, tmp, rot, scale, X, Vt, Ut, sv, perm, sgn, filled):
    """_svd_one for the matrices a[lo:hi] (hi - lo <= _LANES), swept together in lanes."""
    n, m = XL.shape[0], XL.shape[1]
    # _load, lane by lane; indexing a[b] in place, as views of a cost refcount traffic.
    XL[:, :, :] = 0.0  # idle and non-finite lanes converge at once
    VL[:, :, :] = 0.0
    for j in range(n):
        VL[j, j, :] = 1.0
    for l in range(hi - lo):
        b = lo + l
        amax = 0.0
        nan = 0.0  # stays 0.0 unless an entry is NaN or Inf
        for i in range(a.shape[1]):
            for j in range(a.shape[2]):
                v = abs(np.float64(a[b, i, j]))
                amax = max(amax, v)
                nan += v * 0.0
        scale[l] = -1.0
        if nan != 0.0:
            status[b] = NOT_FINITE
            continue
        sc = 1.0
        if amax > 0.0:
            sc = math.ldexp(1.0, -math.frexp(amax)[1])
        scale[l] = sc
        for i in range(m):
            for j in range(n):
                XL[j, i, l] = (a[b, j, i] if trans else a[b, i, j]) * sc
    _sweeps_lanes(XL, VL, tol, max_sweeps, compute_uv, tmp, rot)
    ucols = Ut.shape[0]
    for l in range(hi - lo):
        b = lo + l
        if scale[l] < 0.0:
            continue
        if rot[l] > 0:
            status[b] = NOT_CONVERGED
            continue
        # _finish, inlined by hand for the common case (no views or calls: at this size
        # their refcounting cost more than the sweeps); completion cases go to _finish.
        for j in range(n):
            acc = 0.0
            for i in range(m):
                acc += np.float64(XL[j, i, l]) ** 2
            sv[j] = math.sqrt(acc)
            perm[j] = j
        _sort_descending(sv, perm)
        status[b] = OK
        if not compute_uv or (ucols == n and sv[perm[n - 1]] > 0.0):
            for j in range(n):
                s[b, j] = sv[perm[j]] / scale[l]
            if not compute_uv:
                continue
            for j in range(n):
                inv = 1.0 / sv[perm[j]]
                for i in range(m):
                    Ut[j, i] = XL[perm[j], i, l] * inv
                best = 0  # _sign_of_largest of u's column j
                if trans:
                    for i in range(1, n):
                        if abs(VL[perm[j], i, l]) > abs(VL[perm[j], best, l]):
                            best = i
                    sg = -1.0 if VL[perm[j], best, l] < 0 else 1.0
                    for i in range(n):
                        u[b, i, j] = VL[perm[j], i, l] * sg
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
                        vh[b, j, i] = VL[perm[j], i, l] * sg
            continue
        for j in range(n):
            for i in range(m):
                X[j, i] = XL[j, i, l]
            for i in range(n):
                Vt[j, i] = VL[j, i, l]
        status[b] = _finish(X, Vt, scale[l], trans, compute_uv, compute_uv, u[b], s[b], vh[b],
                            Ut, sv, perm, sgn, filled)


@njit(cache=True, parallel=True)
def svd_batched(a, trans, full, compute_uv, tol, max_sweeps, u, s, vh, status, nchunks):
    """Batched SVD of a[b] (or a[b].T when trans, whichever has rows >= columns).

    Outputs are written in a's orientation: u (B, M, M|k), s (B, k), vh (B, k|N, N),
    status (B,). The batch is split into nchunks parallel chunks (a few per thread, for
    balance); scratch is allocated once per chunk, never inside the per-matrix loop.
    """
    nbatch = a.shape[0]
    m = a.shape[2] if trans else a.shape[1]
    n = a.shape[1] if trans else a.shape[2]
    ucols = m if full else n
    nchunks = max(1, min(nbatch, nchunks))
    for c in prange(nchunks):
        lo = c * nbatch // nchunks
        hi = (c + 1) * nbatch // nchunks
        X = np.empty((n, m), dtype=a.dtype)
        Vt = np.empty((n, n), dtype=a.dtype)
        Ut = np.empty((ucols, m), dtype=a.dtype)
        nrm = np.empty(n)
        sv = np.empty(n)
        perm = np.empty(n, dtype=np.int64)
        sgn = np.empty(ucols)
        filled = np.empty(ucols, dtype=np.bool_)
        if n <= _LANES_MAX_N and m <= _LANES_MAX_M:
            XL = np.empty((n, m, _LANES), dtype=a.dtype)
            VL = np.empty((n, n, _LANES), dtype=a.dtype)
            tmp = np.empty((7, _LANES))
            rot = np.empty(_LANES, dtype=np.int64)
            scale = np.empty(_LANES)
            for b0 in range(lo, hi, _LANES):
                _svd_lanes(a, b0, min(hi, b0 + _LANES), trans, compute_uv, tol, max_sweeps,
                           u, s, vh, status, XL, VL, tmp, rot, scale, X, Vt, Ut, sv, perm,
                           sgn, filled)
            continue
        for b in range(lo, hi):
            status[b] = _svd_one(a[b], trans, full, compute_uv, True, tol, max_sweeps,
                                 u[b], s[b], vh[b], X, Vt, Ut, nrm, sv, perm, sgn, filled, 1)


@njit(cache=True)
def svd_single(a, trans, full, compute_uv, tol, max_sweeps, u, s, vh, nthreads):
    """svd_batched for one large matrix (a, u, s, vh without the batch axis): the
    parallelism goes inside the Jacobi sweep instead of across the batch. Returns status."""
    m = a.shape[1] if trans else a.shape[0]
    n = a.shape[0] if trans else a.shape[1]
    ucols = m if full else n
    X = np.empty((n, m), dtype=a.dtype)
    Vt = np.empty((n, n), dtype=a.dtype)
    Ut = np.empty((ucols, m), dtype=a.dtype)
    return _svd_one(a, trans, full, compute_uv, True, tol, max_sweeps, u, s, vh, X, Vt, Ut,
                    np.empty(n), np.empty(n), np.empty(n, dtype=np.int64), np.empty(ucols),
                    np.empty(ucols, dtype=np.bool_), nthreads)


@njit(cache=True)
def svd_left(a, trans, tol, max_sweeps, ut, s, nthreads):
    """s and the left singular vectors of A = a (or a.T when trans; m >= n) as the rows of
    ut (n or m rows: the extra ones complete an orthonormal basis), unsigned, without
    accumulating V: the caller recovers V with BLAS. Returns status."""
    m = ut.shape[1]
    n = a.shape[0] if trans else a.shape[1]
    X = np.empty((n, m), dtype=a.dtype)
    dummy = np.empty((0, 0), dtype=a.dtype)
    return _svd_one(a, trans, False, True, False, tol, max_sweeps, dummy, s, dummy, X, dummy,
                    ut, np.empty(n), np.empty(n), np.empty(n, dtype=np.int64), np.empty(0),
                    np.empty(ut.shape[0], dtype=np.bool_), nthreads)
