"""The ndarray-level symmetric eigensolver: validation, dtype policy, shapes, and dispatch to
the numba Jacobi kernels (_eigh_jacobi.py). The Tensor layer (eigh.py) calls eigh_forward."""

from __future__ import annotations

import math
from typing import Literal, overload

import numpy as np

from minigrad._kernel_registry import exact, kernels

from . import _memory, _threads
from ._jacobi_contract import NOT_FINITE
from ._lapack_info import cholesky_factor
from ._svd_gram import _GRADED
from .errors import LinAlgError

DEFAULT_MAX_SWEEPS = 60  # cyclic Jacobi needs 5-10 on random input (quadratic convergence)

# Threads for batches of at least this much work (matrices times n^3): below it, starting
# them costs more than they save.
_THREADS_WORK = 1 << 16
_CHUNKS_PER_THREAD = 4  # handed out one at a time: a descheduled thread delays no one

_WORK_DTYPE = {np.dtype(np.float16): np.float32, np.dtype(np.float32): np.float32,
               np.dtype(np.float64): np.float64}
_EPS = {t: float(np.finfo(t).eps) for t in (np.float32, np.float64)}


def _kernels():
    """The kernels compiled ahead of time by the warm-up when built for this source and
    machine (no numba import), else numba's JIT (minigrad/_kernel_registry.py)."""
    return kernels("eigh")


def _where(batch: tuple, flat: int) -> str:
    if not batch:
        return ""
    return f" (batch element {tuple(int(i) for i in np.unravel_index(flat, batch))})"


@overload
def eigh_forward(a: np.ndarray, lower: bool = ..., compute_v: Literal[True] = ..., *,
                 tol: float | None = ..., max_sweeps: int = ...,
                 ) -> tuple[np.ndarray, np.ndarray]: ...
@overload
def eigh_forward(a: np.ndarray, lower: bool, compute_v: Literal[False], *,
                 tol: float | None = ..., max_sweeps: int = ...) -> tuple[np.ndarray, None]: ...
@overload
def eigh_forward(a: np.ndarray, lower: bool = ..., *, compute_v: Literal[False],
                 tol: float | None = ..., max_sweeps: int = ...) -> tuple[np.ndarray, None]: ...
@overload
def eigh_forward(a: np.ndarray, lower: bool = ..., compute_v: bool = ..., *,
                 tol: float | None = ..., max_sweeps: int = ...,
                 ) -> tuple[np.ndarray, np.ndarray | None]: ...
def eigh_forward(a: np.ndarray, lower: bool = True, compute_v: bool = True, *,
                 tol: float | None = None, max_sweeps: int = DEFAULT_MAX_SWEEPS,
                 ) -> tuple[np.ndarray, np.ndarray | None]:
    """A = V diag(w) V^T for the symmetric A read from a's lower (or upper) triangle, batched.

    Returns w (*, n) ascending and V (*, n, n) (None without compute_v) in a's dtype (float16
    is computed in float32); each eigenvector's first entry of largest magnitude is positive.
    tol is the relative threshold |a_pq| <= tol sqrt(|a_pp a_qq|) under which a pair counts
    as converged (default sqrt(n) * eps of the working dtype). Raises LinAlgError for NaN or
    Inf in the triangle read, or non-convergence within max_sweeps.

    >>> w, v = eigh_forward(np.array([[2.0, 1.0], [1.0, 2.0]]))
    >>> w
    array([1., 3.])
    """
    a = np.asarray(a)
    return _eigh(a, _WORK_DTYPE[a.dtype], lower, compute_v, tol, max_sweeps)


def _eigh(a: np.ndarray, work, lower: bool, compute_v: bool, tol: float | None,
          max_sweeps: int) -> tuple[np.ndarray, np.ndarray | None]:
    """eigh_forward of a, real or (_complex_forward.hermitian_eigh_forward) complex, to
    the precision of work (float32 or float64)."""
    *lead, n = a.shape[:-1]
    batch = tuple(lead)
    out_dtype = a.dtype
    cplx = out_dtype.kind == "c"
    w_dtype = work if cplx else out_dtype
    if max_sweeps < 1:
        raise ValueError(f"max_sweeps must be at least 1, got {max_sweeps}")
    if n == 0 or 0 in batch:
        w = np.zeros(batch + (n,), w_dtype)
        return w, (np.zeros(batch + (n, n), out_dtype) if compute_v else None)
    # The kernels work in float64 (complex128) whatever the input: one compiled
    # specialisation, not two.
    a3 = np.ascontiguousarray(a.reshape((-1, n, n)), dtype=np.complex128 if cplx else np.float64)
    nb = a3.shape[0]
    tol_ = math.sqrt(n) * _EPS[work] if tol is None else float(tol)
    w = np.empty((nb, n))
    v = np.empty((nb, n, n) if compute_v else (nb, 0, 0), a3.dtype)
    status = np.empty(nb, np.int8)
    entry = "eigh_range_hermitian" if cplx else "eigh_range"
    # The kernels release the GIL: the SVD's worker threads run batch ranges, never numba's
    # threading layer (whose OpenMP backend kills a forked child that launches a kernel).
    threads = _threads.num_threads() if nb * n ** 3 >= _THREADS_WORK else 1
    flags = (bool(lower), bool(compute_v), tol_, int(max_sweeps), w, v, status)
    started = n >= _START_MIN_N and _lapack_start(a3, flags, threads)
    if _PD_START_MIN_N <= n < _START_MIN_N and not cplx and tol is None \
            and max_sweeps == DEFAULT_MAX_SWEEPS and _definite_and_flat(a3, lower):
        # (where the start fails or its eigenvalues do not confirm it, the sweeps write
        # over its outputs, and report what they find)
        started = _lapack_start(a3, flags, threads) and not np.count_nonzero(status) \
            and _semidefinite(w, tol_)
    if not started and threads == 1:  # one range, on this thread (no linspace, no hand-out,
        # and no look at the argument types, the same on every call with a3's flags (a3 is
        # float64, or complex128 for the Hermitian kernel): a small call's)
        args = (a3, 0, nb, *flags)
        exact("eigh", entry, a3.flags.num, args)(*args)
    elif not started:
        _ranges(getattr(_kernels(), entry), (a3,), flags, nb, threads)
    if np.count_nonzero(status):  # (status.any() costs ~1 us on one matrix)
        bad = np.flatnonzero(status)
        where = _where(batch, bad[0])
        if status[bad[0]] == NOT_FINITE:
            raise LinAlgError(f"linalg.eigh{where}: the input is not finite (contains NaN or "
                              "Inf in the triangle it reads)")
        raise LinAlgError(f"linalg.eigh{where}: Jacobi did not converge in {max_sweeps} "
                          "sweeps; raise max_sweeps or loosen tol")
    w = w.reshape(batch + (n,)).astype(w_dtype, copy=False)
    if not compute_v:
        return w, None
    return w, v.reshape(batch + (n, n)).astype(out_dtype, copy=False)


def _ranges(kernel, head: tuple, tail: tuple, nb: int, threads: int) -> None:
    """kernel(*head, lo, hi, *tail) over the batch's ranges, on `threads` threads."""
    if threads == 1:  # one range, here (the hand-out was ~10% of one 40 x 40's eigh)
        kernel(*head, 0, nb, *tail)
        return
    cuts = np.linspace(0, nb, min(nb, threads * _CHUNKS_PER_THREAD) + 1).astype(int)
    _threads.run(kernel, [(*head, int(lo), int(hi), *tail)
                          for lo, hi in zip(cuts[:-1], cuts[1:])], threads)


# From the size where the kernels' own sweeps give eigenvalues to absolute accuracy only
# (_eigh_jacobi._AV_MIN_N; below it they keep the relative accuracy of a graded matrix's
# tiny eigenvalues, which LAPACK's vectors would lose), the sweeps start from LAPACK's.
_START_MIN_N = 48
_SLACK = 1 << 26  # bytes left for LAPACK's workspace (a few n x n at most) and BLAS's
# Below it, from this n, where every matrix is positive definite with its diagonal within a
# factor _GRADED (a covariance, a Gram, a Hessian of like-scaled variables; _definite_and_flat
# before the start, _semidefinite after it) they do too: Jacobi's bound
# eps cond(D^-1/2 A D^-1/2) lambda_j (D = diag(A)) is then at least eps lambda_1 / _GRADED,
# as cond(A) <= cond(D^-1/2 A D^-1/2) _GRADED, so LAPACK's absolute eps lambda_1 loses
# nothing against it beyond that factor (the SVD's own standard, _svd_gram.py); a singular
# one (semi-definite to rounding) has no relative bound to keep. Measured (one matrix, one
# thread): n = 24 0.92-0.95x the explicit sweeps' time, 32 0.68x, 40 0.50-0.59x (346 ->
# 174-200 us; numpy's eigh 124), 47 0.40x; 16 1.67x. A matrix the Cholesky factor passes
# and the start's eigenvalues refuse pays both (1.5x), as one whose Cholesky factor fails
# pays that (9 us at 40 x 40).
_PD_START_MIN_N = 24


def _definite_and_flat(a3: np.ndarray, lower: bool) -> bool:
    """Whether every matrix's diagonal is positive and within a factor _GRADED of itself
    (NaN: no), and its Cholesky factorisation (of the triangle read) succeeds: a matrix
    that is not definite is refused at ~9 us (40 x 40), not after the start's ~170."""
    if a3.shape[0] == 1:  # one matrix: two reductions, not five (~10 us of a 40 x 40's)
        d1 = np.diagonal(a3[0])
        lo1 = float(d1.min())
        if not (lo1 > 0 and float(d1.max()) <= _GRADED * lo1):
            return False
        return cholesky_factor(a3[0], lower) is not None
    d = np.diagonal(a3, axis1=1, axis2=2)
    lo = d.min(axis=1)
    if not (lo.min() > 0 and (d.max(axis=1) <= _GRADED * lo).all()):
        return False
    try:
        # (numpy's reads the lower triangle; the upper one's is the transpose's lower)
        np.linalg.cholesky(a3 if lower else np.swapaxes(a3, 1, 2))
    except np.linalg.LinAlgError:
        return False
    return True


def _semidefinite(w: np.ndarray, tol: float) -> bool:
    """Whether every matrix whose eigenvalues (ascending, to absolute accuracy) are the
    rows of w is positive semi-definite to rounding: its least no further below 0 than the
    start's rounding, tol |A|_F (|A|_F = |w|: A is symmetric). (The Cholesky factor shows
    A + E definite for an E of A's rounding, not A.)"""
    if w.shape[0] == 1:  # (one matrix: one dot product, no temporaries)
        return bool(w[0, 0] >= -4.0 * tol * math.sqrt(float(np.dot(w[0], w[0]))))
    return bool((w[:, 0] >= -4.0 * tol * np.sqrt(np.einsum("ij,ij->i", w, w))).all())


def _lapack_start(a3: np.ndarray, flags: tuple, threads: int) -> bool:
    """The matrices a3 (nb, n, n, float64 or complex128) to eigh_range's outputs in flags
    (lower, compute_v, tol, max_sweeps, w, v, status) by the kernels' A V sweeps started
    from V0, the eigenvectors of LAPACK's eigh (numpy's), on B = V0^H A V0: one or two
    sweeps, where the kernel's own start (V = I) needs 10-11 at n = 256 (and each of the
    complex kernel's costs 2.5 LAPACK eighs). As the SVD's start from its Gram's
    eigenvectors (_svd_gram.py); here nothing is squared, so no gates: the sweeps' test
    and floor decide convergence as on the plain path, and w and V come from them. False
    (nothing written) where memory is short or LAPACK fails to converge: the plain
    sweeps then."""
    # a3's scaled copy X, V0, V0^H and W^H (LAPACK's workspace: in the slack)
    if not _memory.fits(4.0 * a3.nbytes + _SLACK):
        return False
    nb = a3.shape[0]
    x = np.empty_like(a3)
    expo = np.empty(nb, np.int64)
    # (straight to the compiled kernels: the same types on every call of one a3 layout and
    # dtype, and of one v's layout, empty or not)
    args = (a3, 0, nb, flags[0], x, expo)
    exact("eigh", "eigh_load_range", (a3.dtype, a3.flags.num), args)(*args)
    try:
        v0 = np.linalg.eigh(x)[1]
    except np.linalg.LinAlgError:
        return False
    vt = np.swapaxes(v0, -1, -2)
    vt = np.ascontiguousarray(vt.conj() if a3.dtype.kind == "c" else vt)
    del v0
    wt = vt @ x  # W^H = V0^H X (X Hermitian)
    del x
    head, tail = (wt, vt, expo), flags[1:]
    polish = exact("eigh", "eigh_polish_range", (a3.dtype, tail[-2].flags.num),
                   (*head, 0, nb, *tail))
    _ranges(polish, head, tail, nb, threads)
    return True
