"""One large matrix (the LONE and QR paths of svd_forward's plan): the Jacobi sweeps on A
itself, on A V0 (_svd_gram.py) or on the R of a QR, threaded inside the sweeps, with the
side the sweeps do not produce recovered by BLAS."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal, cast

import numpy as np

from minigrad._kernel_registry import KERNEL_FLOATS, exact, kernels
from minigrad.linalg import _memory, _threads
from minigrad.linalg._jacobi_contract import NOT_CONVERGED, NOT_FINITE, OK
from minigrad.linalg._svd_checks import _raise_for
from minigrad.linalg._svd_gram import _gram_start


def _fix_signs(u: np.ndarray, vh: np.ndarray, k: int) -> None:
    """In place: the first largest-|.| entry of each column of u is positive, row j of vh
    flips with column j (j < k); complement columns of u and rows of vh flip on their own.
    Complex: the same entries made real and positive, row j of vh turned with column j.
    Real C-contiguous float32 or float64 (every caller's) take the kernel (_jacobi.py's
    fix_signs), the rest plain_fix_signs."""
    if u.dtype.kind == "c":
        _fix_phases(u, vh, k)
    elif _kernel_floats(u, vh):
        _call("fix_signs", (u.dtype, u.flags.num, vh.flags.num), u, vh, k)
    else:
        plain_fix_signs(u, vh, k)


def _call(entry: str, key: tuple, *args):
    """The jacobi kernel ``entry`` on args, looked up once per key (dtypes and layout flags:
    everything that varies between this module's calls; _kernel_registry.exact): the
    per-call look at seven arguments' types cost ~3 us a kernel, 5 kernels a corner."""
    return exact("jacobi", entry, key, args)(*args)


def _kernel_floats(*arrays: np.ndarray) -> bool:
    """Whether arrays are C-contiguous, of one dtype, float32 or float64: the finishing
    kernels' signatures (the warm-up compiles those; any other would compile on the spot)."""
    dt = arrays[0].dtype
    return dt in KERNEL_FLOATS and all(x.dtype == dt and x.flags.c_contiguous for x in arrays)


def plain_fix_signs(u: np.ndarray, vh: np.ndarray, k: int) -> None:
    """_fix_signs for real u and vh, by numpy: the kernel's reference."""
    cols = np.abs(u).argmax(axis=0)
    # A multiply by +-1 is exact and streams; boolean-mask indexing copied columns (slower).
    # (float64 signs on float32 u too: the products are exact either way)
    sign = np.where(u[cols, np.arange(u.shape[1])] < 0, -1.0, 1.0)
    u *= sign
    vh[:k] *= sign[:k, None]
    if vh.shape[0] > k:
        rest = vh[k:]
        rows = np.argmax(np.abs(rest), axis=1)
        rest[rest[np.arange(rest.shape[0]), rows] < 0] *= -1


def _fix_phases(u: np.ndarray, vh: np.ndarray, k: int) -> None:
    """_fix_signs for complex u and vh."""
    ph = _unit(u[np.argmax(np.abs(u), axis=0), np.arange(u.shape[1])])
    u *= ph.conj()
    vh[:k] *= ph[:k, None]
    if vh.shape[0] > k:
        rest = vh[k:]
        rest *= _unit(rest[np.arange(rest.shape[0]), np.argmax(np.abs(rest), axis=1)]).conj(
            )[:, None]


def _unit(x: np.ndarray) -> np.ndarray:
    """x / |x| (1 where x = 0)."""
    size = np.abs(x)
    return np.where(size > 0, x / np.where(size > 0, size, 1.0), 1.0)


def _other_side(x: np.ndarray, u: np.ndarray, s: np.ndarray) -> np.ndarray:
    """V of x = U diag(s) V^T, given Jacobi's U and s: V = orth(x^T U diag(1/s)), by QR.

    This is dgejsv's trick: V need not be accumulated during the sweeps (which would
    double their cost). The error of x^T u_j / s_j grows like eps s_1 / s_j, but mostly
    along the columns with larger s_i, which a QR taken in descending order projects out;
    the rest moves x - U S V^T by only O(eps s_1). S itself, with its relative accuracy,
    comes from the sweeps alone. Columns with s_j <= eps s_1 are noise: they are zeroed
    and the QR completes them to an orthonormal basis. x must be scaled so that 1 / s_j
    cannot overflow (the driver scales A by a power of two first).

    Usually W = x^T U diag(1/s) is orthonormal up to a small F = W^T W - I (~eps s_1/s_k);
    then the QR is done to first order, for a quarter of its cost: W^T W = R^T R gives
    R = I + C, C = triu(F, 1) + diag(F)/2, so Q = W R^-1 = W (I - C) up to O(k |F|^2),
    below eps when |F| <= sqrt(eps / k) (Cholesky QR to first order).
    """
    k = s.shape[0]
    eps = np.finfo(s.dtype).eps
    inv = np.zeros_like(s)
    keep = s > s[0] * eps
    inv[keep] = 1.0 / s[keep]
    w = x.T @ (u[:, :k] * inv)
    f = w.T @ w
    diag = np.arange(k)
    f[diag, diag] -= 1.0
    if np.abs(f).max() <= np.sqrt(eps / k):
        c = np.triu(f, 1)
        c[diag, diag] = 0.5 * f[diag, diag]
        return w - w @ c
    # Ill-conditioned (graded) input or zeroed columns: Householder QR.
    q, r = np.linalg.qr(w)
    # Householder QR may flip a column; undo it so that x v_j = s_j u_j, not -s_j u_j.
    q *= np.where(np.diagonal(r) < 0, -1.0, 1.0).astype(q.dtype)
    return q


def _sweeps_threaded(X: np.ndarray, nrm: np.ndarray, ref: np.ndarray, tol, threads: int) -> int:
    """jac.sweeps (without V) for one large matrix on `threads` threads.

    The rows are cut into 2 * threads blocks; a round-robin tournament over the blocks
    pairs them disjointly, so each round is `threads` independent block pairs (every row
    pair of the two blocks, plus the pairs inside each block in the first round). A sweep
    is 2 * threads - 1 rounds, few enough that the hand-over cost is negligible.
    """
    jac = kernels("jacobi")
    n = X.shape[0]
    nb = 2 * threads
    bnd = [i * n // nb for i in range(nb + 1)]
    ref[:] = 0.0
    for sweep in range(tol.max_sweeps):
        # de Rijk's pivoting, once per sweep: rows sorted by norm, descending.
        jac.renorm_sorted(X, nrm, ref, tol)
        rotated, most_cos, most_tan = 0, 0.0, 0.0
        for rnd in range(nb - 1):
            # Circle method: block nb - 1 stays put, the others rotate one place per round.
            pairs = [(nb - 1, rnd)] + [((rnd + i) % (nb - 1), (rnd - i) % (nb - 1))
                                       for i in range(1, threads)]
            tasks = [(X, nrm, ref, tol, bnd[i], bnd[i + 1], bnd[j], bnd[j + 1], rnd == 0)
                     for i, j in pairs]
            for done, c, t in _threads.run(jac.block_pairs, tasks, threads):
                rotated += done
                most_cos, most_tan = max(most_cos, c), max(most_tan, t)
        # the serial sweeps' stopping test (_jacobi.sweeps): its bound holds in any order
        if rotated == 0 or 8 * n * most_cos * max(most_cos, most_tan) < tol.rotate:
            return sweep + 1
    return -1


def _jacobi_left(ak: np.ndarray, nleft: int, tol, threads: int, overwrite: bool = False,
                 with_v: bool = False):
    """s and the left singular vectors of ak (m x n, m >= n, scaled) as the rows of ut
    (nleft = 0, n or m rows: the extra ones complete an orthonormal basis), unsigned.
    Returns (status, s, ut, v): v is None, or with_v (on the serial sweeps only) the right
    vectors, columns in s's order, the rotations accumulated as they are made. overwrite:
    the sweeps may rotate ak's own memory (they do where its columns are contiguous), not
    a copy."""
    m, n = ak.shape
    X = ak.T  # row j = column j of ak; the sweeps work in place
    if not (overwrite and X.flags.c_contiguous):
        X = np.array(X, order="C")
    vt = np.eye(n, dtype=X.dtype)[None] if with_v else np.empty((1, 0, 0), X.dtype)
    if threads > 1 and n >= 4 * threads and not with_v:
        status = OK if _sweeps_threaded(X, np.empty(n), np.empty(n), tol, threads) >= 0 \
            else NOT_CONVERGED
    else:  # the batch kernel on a batch of one (in float64 the very build batches use)
        st = np.zeros(1, np.int8)  # OK
        _call("sweeps", (X.dtype, X.flags.num), X[None], vt, np.empty(n), np.empty(n),
              np.empty(n), tol, st)
        status = int(st[0])
    s = np.empty(n, X.dtype)
    ut = np.empty((nleft, m), X.dtype)
    if status != OK:
        return status, s, ut, None
    perm = np.empty(n, np.int64)  # left_vectors' order of the rows: s descending
    _call("left_vectors", (X.dtype, X.flags.num), X, ut, s, np.empty(n), perm,
          np.empty(nleft, np.bool_))
    return OK, s, ut, (vt[0][perm].T if with_v else None)


# Values only: up to this many entries the QR route (three copies of A) for ill-conditioned
# input, CTMRG's 80 x 80 corners 10 sweeps on A -> 7 on L; beyond, the sweeps on A in place.
_QR_VALUES_MAX = 1 << 20


def _svd_lone(a: np.ndarray, e: int, full: bool, compute_uv: bool, tol, threads: int,
              gram: bool):
    """One matrix (2^-e a, m x n, m >= n) to the kernel, preconditioned (_gram_start)
    where that is safe: the left vectors and s of a V0 are a's; where it is refused and
    vectors are wanted, by a QR (_svd_qr). The side Jacobi does not produce is recovered
    with BLAS (_other_side), from 2^-e a itself."""
    m, n = a.shape
    nleft = (m if full else n) if compute_uv else 0
    start = _gram_start(a, e) if gram else None
    if start is None and gram and (compute_uv or a.size <= _QR_VALUES_MAX):
        # Refused: ill-conditioned, rank-deficient or graded. dgejsv's preconditioning then
        # pays: Jacobi on R^T of A P = Q R took about half the sweeps A itself takes
        # (spectra falling to 1e-20, as tensor networks' truncated corners: 96 x 96 13 -> 7,
        # 192 x 192 18 -> 8; CTMRG's 80 x 80 10 -> 7), for one QR. Values only of a large
        # matrix keep the sweeps on A in place, the lean footprint (the QRs take copies).
        return _svd_qr(a, e, full, compute_uv, tol, threads, gram=False)
    ak = None
    if start is not None:
        # The sweeps take a V0's columns as rows: a copy, made once V0 is let go.
        b = start[1]
        del start
        rows = np.array(b.T, order="C")
        del b
        status, s, ut, _ = _jacobi_left(rows.T, nleft, tol, threads, overwrite=True)
    else:
        # Values only: 2^-e a made with its columns contiguous, which the sweeps then take
        # in place as rows: one copy of a, not two.
        ak = np.ldexp(a, -e) if compute_uv else np.ldexp(a.T, -e, order="C").T
        status, s, ut, _ = _jacobi_left(ak, nleft, tol, threads, overwrite=not compute_uv)
    if status != OK or not compute_uv:
        return status, None, s, None
    if ak is None:
        ak = np.ldexp(a, -e)
    return status, ut.T, s, _other_side(ak, ut.T, s).T


def _svd_gram_tall(v0: np.ndarray, b: np.ndarray, compute_uv: bool, tol, threads: int):
    """Reduced SVD of one tall a (scaled, m >= n) from b = a V0 (_gram_start), whose
    columns are nearly orthogonal, or None when they are not orthogonal enough.

    Cholesky QR of b D^-1 (D = its column norms) = Q R: Q is orthogonal to ~eps
    cond(b D^-1)^2, and Gershgorin's bound on C = D^-1 b^T b D^-1 (rows of off-diagonal
    |C| summing to <= 1/2) keeps that cond <= sqrt(3). Jacobi then runs on the k x k
    x = R D = Q^T b, so a = Q x V0^T: U = Q U_x, V = V0 V_x. This is QR without LAPACK's
    Householder QR, whose reduced Q alone cost as much as numpy's whole SVD of 2000 x 200."""
    n = b.shape[1]
    c = b.T @ b
    d = np.sqrt(np.diagonal(c))  # b's column norms
    c /= np.outer(d, d)
    if np.abs(c).sum(axis=1).max() > 1.5:  # 1 on the diagonal, <= 1/2 beside it
        return None
    r = np.linalg.cholesky(c).T
    x = r * d
    status, s, uxt, _ = _jacobi_left(x, n if compute_uv else 0, tol, threads)
    if status != OK or not compute_uv:
        return status, None, s, None
    # U = Q U_x = b D^-1 R^-1 U_x: one m x k x k product.
    u = b @ (np.linalg.solve(r, uxt.T) / d[:, None])
    return status, u, s, (v0 @ _other_side(x, uxt.T, s)).T


def _svd_qr(a: np.ndarray, e: int, full: bool, compute_uv: bool, tol, threads: int,
            gram: bool):
    """SVD of one tall matrix 2^-e a (m >= n): from a V0 by Cholesky QR where
    _gram_start allows (and only k columns of U are wanted), else by Jacobi on R^T of
    LAPACK's column-pivoted A P = Q R (_svd_pivoted) where SciPy is installed. Without it,
    via numpy's A P = Q R (columns sorted by norm, a cheap stand-in for column pivoting)
    and R = L Q2^T, then Jacobi on the columns of L (as dgejsv, which converges in fewer
    sweeps than Jacobi on A); the right vectors of L are its rotations, or recovered
    afterwards (_other_side)."""
    m, n = a.shape
    start = _gram_start(a, e) if gram and not (full and compute_uv) else None
    done = None if start is None else _svd_gram_tall(*start, compute_uv, tol, threads)
    if done is not None:
        return done
    del start
    a = np.ldexp(a, -e)
    complete = full and compute_uv and m > n
    # Exactly symmetric input, as a tensor network's grown corner R + R^T: U from V. (C
    # order: LAPACK's QR below then works on a copy of a.)
    sym = np.ascontiguousarray(a) if compute_uv and m == n and _symmetric(a) else None
    if sym is not None:
        found = _geqp3(a)
        if found is not None:  # Q formed only where U is not V's (_svd_pivoted)
            qr, tau, perm = found
            return _svd_pivoted(None, np.triu(qr[:n]), perm, compute_uv, tol, threads,
                                symmetric=sym, q_of=lambda: _q_of(qr, tau, False))
    pivoted = _pivoted_qr(a, compute_uv, complete)
    if pivoted is not None:
        return _svd_pivoted(*pivoted, compute_uv=compute_uv, tol=tol, threads=threads)
    perm = np.argsort(-np.einsum("ij,ij->j", a, a), kind="stable")
    mode: Literal["complete", "reduced"] = "complete" if complete else "reduced"
    if compute_uv:
        q, r = np.linalg.qr(a[:, perm], mode=mode)
    else:
        r = cast(np.ndarray, np.linalg.qr(a[:, perm], mode="r"))  # R alone (numpy's stubs)
    # dgejsv's second preconditioning: R^T = Q2 R2, so R = L Q2^T with L = R2^T, and Jacobi
    # on L's columns (R2's rows): measured on CTMRG's graded 80 x 80 corners 7 sweeps where
    # R^T's columns took 7-9 (and A's 10), on 60 x 40 7 where R^T took 7-9, for a QR of n x n.
    # A P = Q L Q2^T = (Q U_L) S (Q2 W)^T, W the rotations.
    if compute_uv:
        q2, r2 = np.linalg.qr(r[:n].T)
    else:
        r2 = cast(np.ndarray, np.linalg.qr(r[:n].T, mode="r"))
    x = np.ascontiguousarray(r2)  # L's columns as rows
    # W is accumulated where R2's diagonal spread (a lower bound on cond(L)) shows that
    # _other_side would take its Householder QR: cheaper there (CTMRG's 48 x 48 corners 21%,
    # column-graded 64 x 64 26%), dearer than its product elsewhere (5-12%).
    d = np.abs(np.diagonal(x))
    ill = not d.min() > d.max() * np.sqrt(np.finfo(x.dtype).eps * n)  # NaN-safe
    serial = threads == 1 or n < 4 * threads
    with_v = compute_uv and serial and ill
    # (in x's own memory unless _other_side reads L afterwards)
    status, s, ult, w = _jacobi_left(x.T, n if compute_uv else 0, tol, threads,
                                     overwrite=with_v or not compute_uv, with_v=with_v)
    if status != OK or not compute_uv:
        return status, None, s, None
    if w is None:
        w = _other_side(r2.T, ult.T, s)
    u = q[:, :n] @ ult.T
    if mode == "complete":
        u = np.concatenate([u, q[:, n:]], axis=1)
    vh = np.empty((n, n), ult.dtype)
    vh[:, perm] = (q2 @ w).T
    return status, u, s, vh


def _pivoted_qr(a: np.ndarray, compute_uv: bool, complete: bool,
                ) -> tuple[np.ndarray | None, np.ndarray, np.ndarray] | None:
    """(Q, R, perm) of A P = Q R by LAPACK's QR with column pivoting (geqp3: |r_jj| does
    not increase), Q (m x m if complete, else m x n) or None without compute_uv; None
    where SciPy (not a runtime dependency) is missing, or a is complex."""
    found = _geqp3(a)
    if found is None:
        return None
    qr, tau, perm = found
    r = np.triu(qr[:a.shape[1]])  # (before orgqr overwrites the reflectors with Q)
    q = None
    if compute_uv:
        q = _q_of(qr, tau, complete)
        if q is None:
            return None
    return q, r, perm


def _geqp3(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """LAPACK's A P = Q R (geqp3) as (its reflectors and R, tau, perm); None where SciPy is
    missing, or a is complex."""
    if a.dtype.kind != "f":
        return None
    try:
        from scipy.linalg.lapack import get_lapack_funcs
    except ImportError:
        return None
    (geqp3,) = get_lapack_funcs(("geqp3",), (a,))
    qr, jpvt, tau, _, info = geqp3(np.asfortranarray(a), overwrite_a=1)
    return None if info != 0 else (qr, tau, jpvt - 1)


def _q_of(qr: np.ndarray, tau: np.ndarray, complete: bool) -> np.ndarray | None:
    """Q (m x m if complete, else m x n) from _geqp3's reflectors (LAPACK's orgqr)."""
    from scipy.linalg.lapack import get_lapack_funcs

    m, n = qr.shape
    (orgqr,) = get_lapack_funcs(("orgqr",), (qr,))
    if complete:
        reflectors = np.empty((m, m), qr.dtype, order="F")
        reflectors[:, :n] = qr
        qr = reflectors
    q, _, info = orgqr(qr, tau, overwrite_a=1)
    return None if info != 0 else q


def _svd_pivoted(q: np.ndarray | None, r: np.ndarray, perm: np.ndarray, compute_uv: bool,
                 tol, threads: int, symmetric: np.ndarray | None = None,
                 q_of: Callable[[], np.ndarray | None] | None = None):
    """SVD of A from its pivoted QR A P = Q R (_pivoted_qr): Jacobi on the rows of R, the
    columns of R^T (dgejsv's first preconditioning; with true column pivoting the rows of R
    are graded as A's spectrum, and the sweeps converge as fast as on dgejsv's second QR's L:
    CTMRG's 80 x 80 corners 6 sweeps, where norm-sorted columns took 9 on R^T, 7 on L).
    R^T = U_x S V_x^T gives A P = (Q V_x) S U_x^T: U = Q V_x, V = P U_x. symmetric: A itself
    (scaled) where it is exactly symmetric; U then comes from V (_left_of_symmetric) where
    it can, V_x's accumulation or recovery spared; q_of then forms Q (q None) where not."""
    n = r.shape[1]
    with_v = False
    if compute_uv and symmetric is None and (threads == 1 or n < 4 * threads):  # serial
        # V_x accumulated where R's diagonal spread (a lower bound on cond(R)) shows that
        # _other_side would take its Householder QR (as for L below).
        d = np.abs(np.diagonal(r))
        with_v = not d.min() > d.max() * np.sqrt(np.finfo(r.dtype).eps * n)  # NaN-safe
    x = r.T
    status, s, uxt, vx = _jacobi_left(x, n if compute_uv else 0, tol, threads,
                                      overwrite=with_v or not compute_uv, with_v=with_v)
    if status != OK or not compute_uv:
        return status, None, s, None
    vh = np.empty((n, n), uxt.dtype)
    vh[:, perm] = uxt
    if symmetric is not None:
        u = _left_of_symmetric(symmetric, vh, s)
        if u is not None:
            return status, u, s, vh
    if q is None and q_of is not None:
        q = q_of()
    assert q is not None  # (orgqr fails only on invalid arguments)
    if vx is None:
        vx = _other_side(x, uxt.T, s)
    u = q[:, :n] @ vx
    if q.shape[1] > n:
        u = np.concatenate([u, q[:, n:]], axis=1)
    return status, u, s, vh


# _left_of_symmetric's bound on |A v_j - d_j s_j v_j|, in sqrt(n) eps s_1: measured 0.06-0.9
# on iPEPS corners (64 x 64, 80 x 80) and symmetric spectra graded to 1e-18 (64-120), 1.2-1.3
# with an exact tie of one sign; 67-24000 on random symmetric matrices (close values of
# opposite signs), 1e7-1e15 with a tie of opposite signs.
_SYMMETRIC = 2.0


def _symmetric(a: np.ndarray) -> bool:
    """Whether the square a equals a^T exactly: the kernel where it takes a or a^T (its first
    mismatch returns; numpy's array_equal builds the whole comparison first)."""
    c = a if a.flags.c_contiguous else a.T  # (a^T is symmetric exactly when a is)
    return bool(_call("is_symmetric", (c.dtype, c.flags.num), c)) if _kernel_floats(c) \
        else np.array_equal(a, a.T)


def _left_of_symmetric(a: np.ndarray, vh: np.ndarray, s: np.ndarray) -> np.ndarray | None:
    """U for a symmetric a = U S V^T given V (vh = V^T) and S: a = W diag(lam) W^T has
    s = |lam|, V = W, U = W sign(lam), so u_j = d_j v_j with d_j the sign of v_j^T a v_j.
    Where |a v_j - d_j s_j v_j| <= _SYMMETRIC sqrt(n) eps s_1 for every j (not so within a
    tie of values of opposite signs, where U's block is not V's, nor for close ones, whose V
    is mixed to eps / gap): U = V D, as orthonormal as V, a - U S V^T as small as that
    bound; else None.

    One BLAS product, (A V)^T = V^T A (A symmetric: the rows the kernel reads contiguous),
    and a kernel (_jacobi.py's symmetric_left) that makes the signs, U and the test in one
    pass: plain_left_of_symmetric's six numpy passes took ~50 us of an 80 x 80 corner's
    SVD, ~100 with a program's cold caches."""
    if not _kernel_floats(a, vh, s):
        return plain_left_of_symmetric(a, vh, s)
    n, k = vh.shape[1], vh.shape[0]
    u = np.empty((n, k), vh.dtype)
    worst = _call("symmetric_left", (vh.dtype, vh.flags.num, s.flags.num), vh, vh @ a, s, u)
    return u if worst <= _symmetric_bound(s) ** 2 else None


def _symmetric_bound(s: np.ndarray) -> float:
    """_left_of_symmetric's bound on |A v_j - d_j s_j v_j|: _SYMMETRIC sqrt(k) eps s_1."""
    return _SYMMETRIC * math.sqrt(s.shape[0]) * float(np.finfo(s.dtype).eps) * float(s[0])


def plain_left_of_symmetric(a: np.ndarray, vh: np.ndarray, s: np.ndarray,
                            ) -> np.ndarray | None:
    """_left_of_symmetric by numpy: the kernel's reference (and the route of other dtypes
    and layouts)."""
    v = vh.T
    res = a @ v
    d = np.where(np.einsum("ij,ij->j", v, res) < 0, -1.0, 1.0).astype(v.dtype)
    u = v * d
    res -= u * s  # A v_j - d_j s_j v_j, in A V's own memory
    if not np.einsum("ij,ij->j", res, res).max() <= _symmetric_bound(s) ** 2:  # NaN-safe
        return None
    return u


def svd_one_matrix(a: np.ndarray, full: bool, compute_uv: bool, tol, qr: bool, threads: int,
                   gram: bool):
    """The LONE (or, qr, the QR) path: A scaled by a power of two (exact; so that neither squares
    nor 1 / s overflow or underflow), the transpose taken so that rows >= columns."""
    m, n = a.shape
    k = min(m, n)
    # The scaled copy of a and the rows the sweeps rotate, and U and V: refused up front
    # when they cannot fit, rather than failing deep inside LAPACK or the kernels.
    vectors = ((m if full else k) * m + (n if full else k) * n) if compute_uv else 0
    _memory.require(a.itemsize * (2 * m * n + 2 * vectors),
                    "the SVD of one %dx%d %s matrix", m, n, a.dtype)
    amax = float(max(a.max(), -a.min()))  # NaN and Inf too, without a temporary the size of a
    if not math.isfinite(amax):
        _raise_for(NOT_FINITE, (), tol.max_sweeps)
    e = math.frexp(amax)[1] if amax > 0 else 0
    trans = a.shape[0] < a.shape[1]
    run = _svd_qr if qr else _svd_lone
    status, u, s, vh = run(a.T if trans else a, e, full, compute_uv, tol, threads, gram)
    _raise_for(status, (), tol.max_sweeps)
    s = np.ldexp(s, e)
    if compute_uv:
        if trans:
            u, vh = vh.T, u.T
        u, vh = np.ascontiguousarray(u), np.ascontiguousarray(vh)
        _fix_signs(u, vh, min(a.shape))
    return u, s, vh
