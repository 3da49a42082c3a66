"""The ndarray-level SVD forward: the plan (which path, how many threads), the Jacobi
kernels' loading, the batch path, and svd_forward's dispatch. Its pieces: the checks in
_svd_checks.py, one large matrix in _svd_single.py, its Gram start in _svd_gram.py. The
Tensor layer (minigrad/linalg/svd.py) calls svd_forward."""

from __future__ import annotations

import math
import sys
import threading
from contextlib import contextmanager
from enum import Enum
from typing import Literal, NamedTuple, overload

import numpy as np

from minigrad._kernel_registry import exact, jit_if_loaded, kernels
from minigrad.dtypes import real_of
from minigrad.linalg import _memory, _threads
from minigrad.linalg._jacobi_contract import (
    _LANES,
    _LANES_MAX_M,
    _LANES_MAX_N,
    MORE,
    NOT_FINITE,
    OK,
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
from minigrad.linalg._svd_single import _fix_signs, svd_one_matrix

# (Before all this, a lone real matrix with _GRAM_MIN <= k <= _GRAM_MAX takes the GRAM path
# below; what follows is where it goes when that path refuses it, and every other matrix.)
# A lone matrix with k >= _BIG goes to the lone-matrix path (threads inside its Jacobi
# sweeps, as there is no batch to spread over), and its second factor is recovered with BLAS
# instead of being accumulated rotation by rotation; if it is also tall (rows >= _QR_RATIO *
# k), a QR first shrinks it to k x k. Where it is well conditioned, both start from the
# eigenvectors of A^T A (_gram_start), which leaves the sweeps two or three to do, and the QR
# is Cholesky's; else LAPACK's Householder QR. Batches go to the batch kernel. Below
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
# allow, and the batch kernel, V accumulated, sweeps A V0: three sweeps instead of 8-10, for
# one eigh. Measured (one thread, medians of interleaved repeats, random input) against the
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


def _kernels():
    """The kernels compiled ahead of time by `python -m minigrad.warmup` when they are built
    for this source and machine, else numba's JIT (minigrad/_kernel_registry.py): a warm
    process's first SVD then imports no numba."""
    return kernels("jacobi")


_ONE_TINY = Plan(Path.BATCHED, 1)  # plan(1, m, n) of every matrix the lanes take
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
    name = np.dtype(work).name
    if name in _noticed or key in _ran:
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



def _svd_batched(a3: np.ndarray, full: bool, compute_uv: bool, tol, threads: int):
    """The batch kernels on slices of a3, on `threads` threads: lanes for tiny matrices, and
    the general kernel for the rest and for the few matrices lanes hand back (MORE).
    The outputs are float64, except from the 3x3 kernel (a3's dtype)."""
    nbatch, m, n = a3.shape
    jac = _kernels()
    trans = m < n
    lanes = _lanes(m, n, full, compute_uv) and a3.dtype.kind == "f"  # (lanes: real only)
    lanes3 = lanes and m == n == 3  # the commonest tiny case has a kernel of its own
    if not lanes3:
        # The general kernels compute in float64 (complex128) for every dtype (float32
        # storage measured no faster), so each compiles once, not once per dtype: seconds on
        # a fresh install.
        a3 = a3.astype(np.complex128 if a3.dtype.kind == "c" else np.float64, copy=False)
    u, s, vh, status = _outputs(nbatch, m, n, full, compute_uv, a3.dtype)
    # A few chunks per thread (a descheduled thread then delays only its chunk), each a
    # whole number of the kernel's lanes; on one thread, one chunk.
    step = nbatch if threads == 1 else max(
        _LANES, -(-nbatch // (4 * threads)) // _LANES * _LANES)
    if nbatch <= step:  # one chunk: the whole arrays, not views (a view's call costs ~1 us)
        parts = [(a3, u, s, vh, status)]
    else:
        parts = [(a3[c], u[c], s[c], vh[c], status[c])
                 for c in (slice(lo, lo + step) for lo in range(0, nbatch, step))]
    if not lanes:
        tasks = [(x, trans, full, compute_uv, tol, uc, sc, vc, st)
                 for x, uc, sc, vc, st in parts]
        _threads.run(_general, tasks, threads)
        return (u, s, vh), status
    if len(parts) == 1:  # the common small batch: straight to the compiled kernel
        _run_lanes(a3, lanes3, trans, compute_uv, tol, u, s, vh, status)
    elif lanes3:
        _threads.run(jac.svd_lanes3, [(x, compute_uv, tol, uc, sc, vc, st)
                                      for x, uc, sc, vc, st in parts], threads)
    else:
        _threads.run(jac.svd_lanes, [(x, trans, compute_uv, tol, uc, sc, vc, st)
                                     for x, uc, sc, vc, st in parts], threads)
    _redo_more(a3, full, compute_uv, tol, u, s, vh, status)
    return (u, s, vh), status


def _run_lanes(a3: np.ndarray, lanes3: bool, trans: bool, compute_uv: bool, tol,
               u: np.ndarray, s: np.ndarray, vh: np.ndarray, status: np.ndarray) -> None:
    """The lanes kernel (the 3x3 one if ``lanes3``) on the whole of a3, into the fresh
    outputs (_outputs'), called with no look at the arguments' types (a few us a call):
    those are the same on every call of one a3 dtype and layout."""
    key = (a3.dtype, a3.flags.num)
    if lanes3:
        args: tuple = (a3, compute_uv, tol, u, s, vh, status)
        exact("jacobi", "svd_lanes3", key, args)(*args)
    else:
        args = (a3, trans, compute_uv, tol, u, s, vh, status)
        exact("jacobi", "svd_lanes", key, args)(*args)


def _lanes(m: int, n: int, full: bool, compute_uv: bool) -> bool:
    """Whether m x n matrices go to the lanes kernels."""
    return (min(m, n) <= _LANES_MAX_N and max(m, n) <= _LANES_MAX_M
            and not (full and compute_uv and m != n))


def _redo_more(a3, full, compute_uv, tol, u, s, vh, status) -> None:
    """The matrices the lanes handed back (MORE) again, by the general kernel, in place."""
    # status is all OK but for a rare matrix: count_nonzero is the cheap look (~0.2 us,
    # where flatnonzero costs ~1.5 us on one matrix)
    if np.count_nonzero(status):
        more = np.flatnonzero(status == MORE)
        if more.size:
            (u[more], s[more], vh[more]), status[more] = _svd_batched_general(
                a3[more], full, compute_uv, tol)


def _lone_lanes(a: np.ndarray, full: bool, compute_uv: bool, tol, max_sweeps: int,
                out_dtype) -> tuple[np.ndarray | None, np.ndarray, np.ndarray | None]:
    """One tiny matrix a (m, n) through the lanes kernel as _svd_batched runs it, with the
    same results, called directly: the batch path's plan, chunks and thread hand-out were
    half of a lone 3x3's time."""
    m, n = a.shape
    lanes3 = m == n == 3
    a3 = np.ascontiguousarray(a.reshape((1, m, n)),
                              dtype=_WORK_DTYPE[out_dtype] if lanes3 else np.float64)
    u, s, vh, status = _outputs(1, m, n, full, compute_uv, a3.dtype)
    _run_lanes(a3, lanes3, m < n, compute_uv, tol, u, s, vh, status)
    if status[0]:  # (one int8: read directly, not through _redo_more's count)
        _redo_more(a3, full, compute_uv, tol, u, s, vh, status)
        if status[0]:
            _raise_for(int(status[0]), (), max_sweeps)
    s = s[0]
    check_fits(s, out_dtype)
    if not compute_uv:
        return None, _cast(s, out_dtype), None
    return _cast(u[0], out_dtype), _cast(s, out_dtype), _cast(vh[0], out_dtype)


def _outputs(nbatch: int, m: int, n: int, full: bool, compute_uv: bool, dtype):
    """Empty u, s, vh and status for the batch kernels (u and vh (nbatch, 0, 0) when only
    s is wanted)."""
    k = min(m, n)
    if compute_uv:
        u = np.empty((nbatch, m, m if full else k), dtype=dtype)
        vh = np.empty((nbatch, n if full else k, n), dtype=dtype)
    else:
        u = vh = np.empty((nbatch, 0, 0), dtype=dtype)
    return u, np.empty((nbatch, k), dtype=real_of(dtype)), vh, np.empty(nbatch, dtype=np.int8)


def _scale_rows(a3: np.ndarray, trans: bool, status: np.ndarray, X: np.ndarray,
                ) -> np.ndarray:
    """X[b] = the columns of a3[b] (its rows when trans) as rows, scaled by 2^-expo[b]
    (exact) so that the largest entry lies in [0.5, 1): squares then neither overflow nor
    (mostly) underflow; status[b] NOT_FINITE where a3[b] has NaN or Inf, else OK. Returns
    expo. In numpy, not a kernel: a kernel this simple still took ~0.7 s to compile."""
    nbatch = a3.shape[0]
    src = a3 if trans else a3.transpose(0, 2, 1)
    if nbatch == 1 and a3.dtype.kind == "f":
        # One real matrix: the same numbers from Python scalars, where the batch's array
        # steps (clip, frexp, ldexp, flatnonzero on one entry) were ~25 us of a 60 x 40 SVD.
        amax = float(max(a3.max(), -a3.min()))  # NaN propagates (a3.max() is NaN first)
        e = math.frexp(amax)[1]  # (0 for 0, NaN and Inf, as np.frexp)
        if abs(e) <= 1000:
            status[0] = OK if math.isfinite(amax) else NOT_FINITE
            np.multiply(src, math.ldexp(1.0, -e), out=X)
            return np.array([e], np.intc)
    if a3.dtype.kind == "c":  # (complex128: the largest modulus)
        amax = np.abs(a3).max(axis=(1, 2))
    else:
        amax = np.maximum(a3.max(axis=(1, 2)), -a3.min(axis=(1, 2)))  # NaN propagates
    status[:] = np.where(np.isfinite(amax), OK, NOT_FINITE)
    expo = np.frexp(amax)[1]
    # A multiply by 2^-e (np.ldexp is 6x slower), where that factor is a normal number.
    scale = np.ldexp(1.0, -np.clip(expo, -1000, 1000))[:, None, None]
    if X.dtype.kind == "c":  # inf * 0 in the product's cross terms warns: status says it
        with np.errstate(invalid="ignore"):
            np.multiply(src, scale, out=X)
    else:
        np.multiply(src, scale, out=X)
    far = np.flatnonzero(np.abs(expo) > 1000)  # subnormal or huge input
    if far.size:
        X[far] = _ldexp(src[far], -expo[far, None, None])
    return expo


def _general(a3, trans, full, compute_uv, tol, u, s, vh, status) -> None:
    """The general batch kernels on a3 (float64 or complex128, m x n, or n x m when
    trans): SVDs into u, s, vh (in a3's orientation) and status. Separate kernels, not one
    calling the others: each nesting level would compile its callees again (see _jacobi's
    entry points)."""
    jac = _kernels()
    nbatch, m, n = a3.shape
    k = min(m, n)
    X = np.empty((nbatch, k, max(m, n)), a3.dtype)
    expo = _scale_rows(a3, trans, status, X)
    Vt = np.empty((nbatch, k, k) if compute_uv else (nbatch, 0, 0), a3.dtype)
    Vt[:] = np.eye(Vt.shape[1])
    # The same argument types on every call of one key: straight to the compiled kernels
    # (with the warm-up's module, its look at the 6 + 13 arguments' types was ~12 us of a
    # lone 60 x 40's call).
    key = (a3.dtype, X.flags.num, Vt.flags.num, expo.flags.num, u.flags.num, s.flags.num,
           vh.flags.num, status.flags.num)
    args: tuple = (X, Vt, np.empty(k), np.empty(k), np.empty(k), tol, status)
    exact("jacobi", "sweeps", key, args)(*args)
    ucols = (max(m, n) if full else k) if compute_uv else 0
    scratch = (np.empty((ucols, max(m, n)), a3.dtype), np.empty(k), np.empty(k, np.int64),
               np.empty(ucols, a3.dtype), np.empty(ucols, np.bool_))
    args = (X, Vt, expo, trans, u, s, vh, status, *scratch)
    exact("jacobi", "finish", key, args)(*args)
    # A zero singular value, or a full U of a non-square A: columns of U to complete.
    if compute_uv and (full and m != n or (status == MORE).any()):
        jac.complete(X, Vt, expo, trans, u, s, vh, status, *scratch)


def _ldexp(x: np.ndarray, e: np.ndarray) -> np.ndarray:
    """x * 2^e, exact, for real or complex x."""
    if x.dtype.kind != "c":
        return np.ldexp(x, e)
    out = np.empty(np.broadcast_shapes(x.shape, e.shape), x.dtype)
    out.real, out.imag = np.ldexp(x.real, e), np.ldexp(x.imag, e)
    return out


def svd_from_start(a: np.ndarray, full: bool, compute_uv: bool, tol, max_sweeps: int,
                   start_of) -> tuple[np.ndarray | None, np.ndarray, np.ndarray | None] | None:
    """One matrix a (m x n, real or complex) as a = b V0^H, (V0, b = x V0) = start_of(x, e)
    for x = 2^-e A (A^H when m < n): the batch kernel's SVD of b gives U, S and
    Vh = Vh_b V0^H (float64 or complex128). None where start_of refuses x (or a is not
    finite, or zero). tol: the kernels' (_tolerances')."""
    m, n = a.shape
    k = min(m, n)
    # Its float64 (complex128) copies: 2^-e A and b, the kernel's rows of b, the Gram and
    # the eigh's, U and V: refused up front when they cannot fit (as svd_one_matrix does).
    vectors = ((m if full else k) * m + (n if full else k) * n) if compute_uv else 0
    wide = 16 if a.dtype.kind == "c" else 8
    _memory.require(wide * (3 * m * n + 4 * k * k + 2 * vectors),
                    f"the SVD of one {m}x{n} {a.dtype} matrix")
    x = a.conj().T if m < n else a
    # (real: NaN propagates, and no temporary the size of a)
    amax = float(np.abs(x).max() if x.dtype.kind == "c" else max(x.max(), -x.min()))
    if not (math.isfinite(amax) and amax > 0.0):
        return None
    e = math.frexp(amax)[1]
    start = start_of(x, e)
    if start is None:
        return None
    v0, b = start
    b = b.astype(np.complex128 if b.dtype.kind == "c" else np.float64, copy=False)
    u, s, vh, status = _outputs(1, b.shape[0], b.shape[1], full, compute_uv, b.dtype)
    _general(b[None], False, full, compute_uv, tol, u, s, vh, status)
    if status[0]:
        _raise_for(int(status[0]), (), max_sweeps)
    s = np.ldexp(s[0], e)
    if not compute_uv:
        return None, s, None
    u, vh = u[0], vh[0] @ v0.conj().T
    if m < n:  # A = x^H = Vh_x^H S U_x^H: U's signs (phases) are now Vh's, fixed on U again
        u, vh = np.ascontiguousarray(vh.conj().T), np.ascontiguousarray(u.conj().T)
        _fix_signs(u, vh, m)
    return u, s, vh


def _svd_batched_general(a3, full, compute_uv, tol):
    """The general batch kernels on all of a3, in float64, on the calling thread."""
    a3 = a3.astype(np.float64, copy=False)
    nbatch, m, n = a3.shape
    u, s, vh, status = _outputs(nbatch, m, n, full, compute_uv, a3.dtype)
    _general(a3, m < n, full, compute_uv, tol, u, s, vh, status)
    return (u, s, vh), status


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
    """A = U diag(S) Vh by one-sided Jacobi, batched over leading dims (torch.linalg.svd shapes).

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
    tol = _tolerances(tol, max_sweeps, max(m, n), work)
    if k == 0 or 0 in batch:
        return _empty(batch, m, n, full, compute_uv, out_dtype)

    if not batch and _plan is None and not cplx and (work, _ONE_TINY, m, n, full) in _ran \
            and _lanes(m, n, full, compute_uv):  # one tiny matrix, its kernel loaded: to it
        return _lone_lanes(a, full, compute_uv, tol, max_sweeps, out_dtype)
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


def _cast(x: np.ndarray, dtype) -> np.ndarray:
    return x if x.dtype == dtype else x.astype(dtype)
