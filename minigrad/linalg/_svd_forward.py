"""The ndarray-level SVD forward: the plan (which path, how many threads), the compile
notice, and svd_forward's dispatch. Its pieces: the checks in _svd_checks.py, the batch
kernel's driver in _svd_batch.py, one large matrix in _svd_single.py, its Gram start in
_svd_gram.py, and LAPACK's values of one matrix that is not graded in _svd_lapack.py. The
Tensor layer (minigrad/linalg/svd.py) calls svd_forward."""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from enum import Enum
from typing import Literal, NamedTuple, overload

import numpy as np

from minigrad._kernel_registry import jit_if_loaded
from minigrad.dtypes import real_of
from minigrad.linalg import _threads
from minigrad.linalg._svd_batch import (
    _cast,
    _lanes,
    _lone_general,
    _lone_lanes,
    _svd_batched,
    svd_from_start,
)
from minigrad.linalg._svd_checks import (
    _WORK_DTYPE,
    DEFAULT_MAX_SWEEPS,
    _as_input,
    _raise_for,
    _tolerances,
    check_fits,
)
from minigrad.linalg._svd_gram import small_start
from minigrad.linalg._svd_lapack import lapack_eligible, lapack_values
from minigrad.linalg._svd_single import svd_one_matrix

# (Before all this, a lone real matrix with _GRAM_MIN <= k <= _GRAM_MAX takes the GRAM path
# below; what follows is where it goes when that path refuses it, and every other matrix.)
# A lone matrix with k >= _BIG goes to the lone-matrix path (threads inside its Jacobi
# sweeps, as there is no batch to spread over), and its second factor is recovered with BLAS
# instead of being accumulated rotation by rotation; if it is also tall (rows >= _QR_RATIO *
# k), a QR first shrinks it to k x k. Where it is well conditioned, both start from the
# eigenvectors of A^T A (_gram_start), which leaves the sweeps one or two to do, and the QR
# is Cholesky's; else LAPACK's Householder QR. Batches go to the batch kernel (_svd_batch.py). Below
# k = 56 the batch kernel (V accumulated) was as fast or faster on every kind of input
# measured (one thread, medians of interleaved repeats, 48 <= k <= 52 against the lone path:
# random 0.87-0.94x, a symmetric graded corner 0.91-0.99x, column-graded 0.66-0.68x, rank 5
# 0.47-0.55x), the Gram start's eigh and the QRs costing more than the sweeps they save; from
# 56 on, random and corners gain from the lone path. (Complex: _complex_forward's own.)
_BIG = 56
_QR_RATIO = 1.5
# Threads inside the sweeps only from this k on: each sweep has 2 * threads barriers, and
# on a shared machine a descheduled thread stalls every one of them (measured on 2 busy
# cores: 256x256 took 4x longer with 2 threads than with 1; 512x512 still gained).
_THREADS_MIN = 400
# One real matrix with _GRAM_MIN <= k <= _GRAM_MAX (and at most _GRAM_SIZE entries) starts
# from the eigenvectors V0 of A^T A (small_start: LAPACK's eigh) where the Gram start's gates
# allow, and the batch kernel, V accumulated, sweeps A V0: one sweep (or two) instead of 8-10,
# for one eigh. The bounds were set when it took three, before the sweeps' early stop, and
# not tuned again (robust PCA's 60 x 40 iterates, one sweep from V0, still pay 1.1x for the
# eigh). Measured (one thread, medians of interleaved repeats, random input) against the
# batch kernel on A: 40 x 40 1.17-1.26x, 60 x 40 (robust PCA's) 0.97-1.0x, 48 x 48
# 0.93-1.11x (as the batch kernel takes 9 sweeps or 8), 52 x 52 0.93-0.96x, 54 x 54 0.93x,
# 72 x 48 0.91x, 56 x 56 0.81x, 80 x 80 0.68x; against the lone path's Gram start, whose
# sweeps leave V to BLAS (_other_side): 56 x 56 to 256 x 256 0.69-0.90x, 300 x 150 0.60x.
# Where the gates refuse (graded, ill-conditioned, rank-deficient input), the path the plan
# takes without it (_refused), having paid for the Gram (and the eigh, where its Cholesky
# factor did not already show the refusal). A full U of a tall matrix
# (rows >= _QR_RATIO * k) keeps the QR path, whose Householder Q completes it.
_GRAM_MIN = 52
_GRAM_MAX = 256
_GRAM_SIZE = 1 << 20
# ... and rows <= _GRAM_RATIO * k: longer rows make the sweeps dearer than the QR path's
# Jacobi on k x k (600 x 100 0.70x its time, 1000 x 100 1.07x).
_GRAM_RATIO = 6
# A batch is split over threads only when it has this much work (batch * m * n * k): below
# it, waking a thread costs more than it saves.
_THREADS_WORK = 1 << 14


class Path(Enum):
    BATCHED = "batched"  # the batch kernel (lanes of 32 for k <= 4), V accumulated
    LONE = "lone"  # one matrix: Jacobi on it (or on A V0), V recovered with BLAS
    QR = "qr"  # one tall matrix: QR (Cholesky's of A V0, or LAPACK's), then Jacobi on R
    GRAM = "gram"  # one real matrix: the batch kernel on A V0 (svd_from_start), else _refused's


class Plan(NamedTuple):
    path: Path
    threads: int
    gram: bool = True  # LONE and QR: start the sweeps from A^T A's eigenvectors (_gram_start)


def plan(nbatch: int, m: int, n: int, complex_: bool = False) -> Plan:
    """Which kernel runs for nbatch matrices of m x n (complex: the batch kernel for all),
    and on how many threads."""
    if nbatch == 1 and not complex_ and _gram_sized(m, n):
        return Plan(Path.GRAM, 1)
    return _refused(nbatch, m, n, complex_)


def _gram_sized(m: int, n: int) -> bool:
    """Whether one real m x n matrix is in the GRAM path's range."""
    k = min(m, n)
    return _GRAM_MIN <= k <= _GRAM_MAX and m * n <= _GRAM_SIZE and max(m, n) <= _GRAM_RATIO * k


def _refused(nbatch: int, m: int, n: int, complex_: bool = False) -> Plan:
    """plan's choice without the GRAM path: what a matrix it refuses takes (the lone paths
    then without their own Gram start, which would refuse it again: the pivoted QR)."""
    k = min(m, n)
    if nbatch > 1 or k < _BIG or complex_:
        work = nbatch * m * n * k
        return Plan(Path.BATCHED, _threads.num_threads() if work >= _THREADS_WORK else 1)
    threads = _threads.num_threads() if k >= _THREADS_MIN else 1
    if nbatch == 1 and _gram_sized(m, n):
        return Plan(Path.QR, threads, gram=False)
    return Plan(Path.QR if max(m, n) >= _QR_RATIO * k else Path.LONE, threads)


_noticed: set = set()  # dtypes whose compile notice has been printed
_ran: set = set()  # (dtype, path, m, n, full) already run once: their kernels are loaded


def _cache_misses() -> int:
    """How many kernel compilations numba has started in this process (a cache miss comes
    before each)."""
    jac = jit_if_loaded("jacobi")
    if jac is None:  # no numba kernel touched yet, nothing compiling
        # (and the notice's thread must not import numba while this one is importing it:
        # two threads in one import fail on partly initialised modules)
        return 0
    from numba.core.dispatcher import Dispatcher

    return sum(sum(d.stats.cache_misses.values()) for d in vars(jac).values()
               if isinstance(d, Dispatcher))


@contextmanager
def _compile_notice(work, key: tuple):
    """Say so on stderr, once per dtype, if the kernels are still compiling half a second
    into this call: on a fresh install the first SVD of each kind compiles for seconds.
    Only the first call of each kind watches: later ones find their kernels loaded, and a
    watcher thread per call cost ~0.3 ms, a tenth of a small batch's SVD."""
    if key in _ran:  # (first: the usual call, before the dtype's name, ~4 us)
        yield
        return
    name = np.dtype(work).name
    if name in _noticed:
        yield
        _ran.add(key)  # (after a notice of this dtype too: the lone path looks here)
        return
    before = _cache_misses()
    done = threading.Event()

    def watch() -> None:
        # Poll: numba may spend the first second initialising before it looks in its cache.
        while not done.wait(0.25):
            if _cache_misses() > before:
                _noticed.add(name)
                print(f"minigrad: compiling the SVD kernels for {name}, once (numba caches "
                      f"them; `python -m minigrad.warmup` does it ahead of time) ...",
                      file=sys.stderr, flush=True)
                return

    watcher = threading.Thread(target=watch, daemon=True, name="minigrad-compile-notice")
    _threads.start(watcher)
    try:
        yield
        _ran.add(key)
    finally:
        done.set()


def _empty(batch: tuple, m: int, n: int, full: bool, compute_uv: bool, dtype):
    """torch's answer when a dimension is 0: S empty, U and Vh identities (full) or empty."""
    k = min(m, n)
    s = np.zeros(batch + (k,), dtype=real_of(dtype))
    if not compute_uv:
        return None, s, None
    if full:
        u = np.broadcast_to(np.eye(m, dtype=dtype), batch + (m, m)).copy()
        vh = np.broadcast_to(np.eye(n, dtype=dtype), batch + (n, n)).copy()
    else:
        u = np.zeros(batch + (m, k), dtype=dtype)
        vh = np.zeros(batch + (k, n), dtype=dtype)
    return u, s, vh


@overload
def svd_forward(a: np.ndarray, full_matrices: bool = ..., compute_uv: Literal[True] = ..., *,
                tol: float | None = ..., max_sweeps: int = ..., _plan: Plan | None = ...,
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...
@overload
def svd_forward(a: np.ndarray, full_matrices: bool, compute_uv: Literal[False], *,
                tol: float | None = ..., max_sweeps: int = ..., _plan: Plan | None = ...,
                ) -> tuple[None, np.ndarray, None]: ...
@overload
def svd_forward(a: np.ndarray, full_matrices: bool = ..., *, compute_uv: Literal[False],
                tol: float | None = ..., max_sweeps: int = ..., _plan: Plan | None = ...,
                ) -> tuple[None, np.ndarray, None]: ...
@overload
def svd_forward(a: np.ndarray, full_matrices: bool = ..., compute_uv: bool = ..., *,
                tol: float | None = ..., max_sweeps: int = ..., _plan: Plan | None = ...,
                ) -> tuple[np.ndarray | None, np.ndarray, np.ndarray | None]: ...
def svd_forward(a: np.ndarray, full_matrices: bool = True, compute_uv: bool = True, *,
                tol: float | None = None, max_sweeps: int = DEFAULT_MAX_SWEEPS,
                _plan: Plan | None = None,
                ) -> tuple[np.ndarray | None, np.ndarray, np.ndarray | None]:
    """A = U diag(S) Vh by one-sided Jacobi, batched over leading dims (torch.linalg.svd shapes);
    the values alone of one float64 matrix that is not graded by LAPACK's gesdd, faster
    and as accurate against Jacobi's bound (_svd_lapack.py).

    Returns (U, S, Vh): U (*, m, m) or (*, m, k), S (*, k) descending and >= 0,
    Vh (*, n, n) or (*, k, n), k = min(m, n), all in a's dtype (float16 is computed in
    float32, batches other than 3x3 in float64, to the working dtype's tolerance). Without
    compute_uv, U and Vh are None. Signs: the first entry of largest magnitude in each
    column of U is positive (v_j flips with u_j; complement columns of a full U and rows
    of a full Vh are normalised the same way on their own).
    tol in (0, 1) is the relative orthogonality threshold |a_p.a_q| <= tol |a_p||a_q|
    (default sqrt(rows) * eps of the working dtype); max_sweeps caps the Jacobi sweeps.
    _plan overrides the dispatch (tests use it to run every path on small inputs).
    Raises ValueError / TypeError for bad shapes, dtypes or options, LinAlgError for NaN/Inf
    input, non-convergence, or a singular value that overflows the dtype.

    >>> u, s, vh = svd_forward(np.array([[3.0, 0.0], [0.0, -4.0]]))
    >>> s
    array([4., 3.])
    """
    a = _as_input(a)
    return _forward(a, _WORK_DTYPE[a.dtype], full_matrices, compute_uv, tol, max_sweeps, _plan)


_ONE_TINY = Plan(Path.BATCHED, 1)  # plan(1, m, n) of every matrix the lanes take
# In _ran: one real m x n matrix (k < _ONE_BATCHED: plan sends it to the batch kernel) has
# run through the batch path, its kernels loaded; later ones go straight to them.
_ONE_GENERAL = "one matrix, general kernels"
_ONE_BATCHED = min(_GRAM_MIN, _BIG)


def _forward(a: np.ndarray, work, full_matrices: bool, compute_uv: bool, tol: float | None,
             max_sweeps: int, _plan: Plan | None,
             ) -> tuple[np.ndarray | None, np.ndarray, np.ndarray | None]:
    """svd_forward of a checked a (real, or complex for complex_svd_forward), computed
    to the precision of work (its dtype for real, complex64 or complex128 for complex)."""
    out_dtype = a.dtype
    cplx = out_dtype.kind == "c"
    *lead, m, n = a.shape
    batch = tuple(lead)
    k = min(m, n)
    full = bool(full_matrices)
    compute_uv = bool(compute_uv)
    defaults = tol is None and type(max_sweeps) is int and max_sweeps == DEFAULT_MAX_SWEEPS
    tol = _tolerances(tol, max_sweeps, max(m, n), work)
    if k == 0 or 0 in batch:
        return _empty(batch, m, n, full, compute_uv, out_dtype)

    lone = not batch and _plan is None and not cplx  # one real matrix, no plan forced
    if lone and (work, _ONE_TINY, m, n, full) in _ran \
            and _lanes(m, n, full, compute_uv):  # one tiny matrix, its kernel loaded: to it
        return _lone_lanes(a, full, compute_uv, tol, max_sweeps, out_dtype)
    # (a tol or max_sweeps of the caller's tunes the sweeps: they run)
    if lone and not compute_uv and defaults and out_dtype == np.float64 \
            and lapack_eligible(m, n):
        s = lapack_values(a.reshape(m, n))
        if s is not None:  # not graded: gesdd, as accurate and faster
            return None, s, None
    if lone and k < _ONE_BATCHED and (work, _ONE_GENERAL, m, n, full) in _ran:
        return _lone_general(a, full, compute_uv, tol, max_sweeps, out_dtype)
    a3 = np.ascontiguousarray(a.reshape((-1, m, n)), dtype=work)
    how = _plan or plan(a3.shape[0], m, n, cplx)
    kind = (work, how, m, n, full)
    done = None
    if how.path is Path.GRAM:
        # (a full U of a tall A: LAPACK's Householder Q completes it far faster than the
        # batch kernel's complete: 2000 x 200 took 4x, 1000 x 100 7x the QR path's time)
        tall_full = full and compute_uv and max(m, n) >= _QR_RATIO * k
        if how.gram and not cplx and a3.shape[0] == 1 and not tall_full:
            with _compile_notice(work, kind):
                done = svd_from_start(a3[0], full, compute_uv, tol, max_sweeps, small_start)
        if done is None:  # refused, or Plan(GRAM, gram=False): as refused input
            how = _refused(a3.shape[0], m, n, cplx)
            kind = (work, how, m, n, full)
    if done is not None:
        u, s, vh = done
        if u is not None and vh is not None:
            u, vh = u.reshape(batch + u.shape), vh.reshape(batch + vh.shape)
    elif how.path is Path.BATCHED:
        if kind in _ran:  # loaded already: no notice to watch for (the common, small call)
            (u, s, vh), status = _svd_batched(a3, full, compute_uv, tol, how.threads)
        else:
            with _compile_notice(work, kind):
                (u, s, vh), status = _svd_batched(a3, full, compute_uv, tol, how.threads)
        if np.count_nonzero(status):
            bad = np.flatnonzero(status)
            index = tuple(int(i) for i in np.unravel_index(bad[0], batch)) if batch else ()
            _raise_for(int(status[bad[0]]), index, max_sweeps)
        if lone and k < _ONE_BATCHED and not _lanes(m, n, full, compute_uv):
            _ran.add((work, _ONE_GENERAL, m, n, full))
        if compute_uv:
            u, vh = u.reshape(batch + u.shape[1:]), vh.reshape(batch + vh.shape[1:])
    else:
        with _compile_notice(work, kind):
            u, s, vh = svd_one_matrix(a3[0], full, compute_uv, tol, how.path is Path.QR,
                                         how.threads, how.gram)
        if compute_uv:
            u, vh = u.reshape(batch + u.shape), vh.reshape(batch + vh.shape)
    check_fits(s, out_dtype)
    s = s.reshape(batch + (k,))
    if not compute_uv:
        return None, _cast(s, real_of(out_dtype)), None
    assert u is not None and vh is not None
    return _cast(u, out_dtype), _cast(s, real_of(out_dtype)), _cast(vh, out_dtype)
