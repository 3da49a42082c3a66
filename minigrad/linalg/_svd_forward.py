"""The ndarray-level SVD forward: validation, dtype policy, shapes, and dispatch to the
numba Jacobi kernels. The Tensor layer (minigrad/linalg/svd.py) calls svd_forward."""

from __future__ import annotations

import functools
import math
import numbers
import operator
import sys
import threading
from contextlib import contextmanager
from enum import Enum
from typing import NamedTuple

import numpy as np

from minigrad._kernel_registry import jit_if_loaded, kernels
from minigrad.linalg import _memory, _threads
from minigrad.linalg._jacobi_contract import (
    _LANES,
    _LANES_MAX_M,
    _LANES_MAX_N,
    MORE,
    NOT_CONVERGED,
    NOT_FINITE,
    OK,
    Tol,
)
from minigrad.linalg.errors import LinAlgError

DEFAULT_MAX_SWEEPS = 60  # one-sided Jacobi typically needs 5-12; dgesvj caps at 30
_SWEEPS_CAP = 2**31 - 1  # more is "no cap" in practice, and must fit the kernel's int

# A lone matrix with k >= _BIG goes to the lone-matrix path (threads inside its Jacobi
# sweeps, as there is no batch to spread over), and its second factor is recovered with BLAS
# instead of being accumulated rotation by rotation; if it is also tall (rows >= _QR_RATIO *
# k), a QR first shrinks it to k x k. Where it is well conditioned, both start from the
# eigenvectors of A^T A (_gram_start), which leaves the sweeps two or three to do, and the QR
# is Cholesky's; else LAPACK's Householder QR. Batches go to the batch kernel.
_BIG = 48
_QR_RATIO = 1.5
# Threads inside the sweeps only from this k on: each sweep has 2 * threads barriers, and
# on a shared machine a descheduled thread stalls every one of them (measured on 2 busy
# cores: 256x256 took 4x longer with 2 threads than with 1; 512x512 still gained).
_THREADS_MIN = 400
# A batch is split over threads only when it has this much work (batch * m * n * k): below
# it, waking a thread costs more than it saves.
_THREADS_WORK = 1 << 14

_WORK_DTYPE = {np.dtype(np.float16): np.float32, np.dtype(np.float32): np.float32,
               np.dtype(np.float64): np.float64}


class Path(Enum):
    BATCHED = "batched"  # the batch kernel (lanes of 32 for k <= 4), V accumulated
    LONE = "lone"  # one matrix: Jacobi on it (or on A V0), V recovered with BLAS
    QR = "qr"  # one tall matrix: QR (Cholesky's of A V0, or LAPACK's), then Jacobi on R


class Plan(NamedTuple):
    path: Path
    threads: int
    gram: bool = True  # LONE and QR: start the sweeps from A^T A's eigenvectors (_gram_start)


def plan(nbatch: int, m: int, n: int) -> Plan:
    """Which kernel runs for nbatch matrices of m x n, and on how many threads."""
    k = min(m, n)
    if nbatch > 1 or k < _BIG:
        work = nbatch * m * n * k
        return Plan(Path.BATCHED, _threads.num_threads() if work >= _THREADS_WORK else 1)
    threads = _threads.num_threads() if k >= _THREADS_MIN else 1
    return Plan(Path.QR if max(m, n) >= _QR_RATIO * k else Path.LONE, threads)


def _kernels():
    """The kernels compiled ahead of time by `python -m minigrad.warmup` when they are built
    for this source and machine, else numba's JIT (minigrad/_kernel_registry.py): a warm
    process's first SVD then imports no numba."""
    return kernels("jacobi")


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


def default_tol(rows: int, work) -> float:
    """The relative orthogonality threshold: sqrt(rows) * eps, as dgesvj."""
    return float(np.sqrt(rows) * np.finfo(work).eps)


def _tolerances(tol, max_sweeps, rows: int, work):
    """The kernels' Tol from the user's tol and max_sweeps, both validated."""
    if tol is None and type(max_sweeps) is int and max_sweeps == DEFAULT_MAX_SWEEPS:  # usual
        return _default_tolerances(rows, np.dtype(work))
    return _checked_tolerances(tol, max_sweeps, rows, work)


@functools.lru_cache(maxsize=256)
def _default_tolerances(rows: int, work: np.dtype):
    return _checked_tolerances(None, DEFAULT_MAX_SWEEPS, rows, work)


def _checked_tolerances(tol, max_sweeps, rows: int, work):
    if max_sweeps is True or max_sweeps is False:
        raise TypeError(f"svd: max_sweeps must be an integer, got {max_sweeps!r}")
    try:
        sweeps = operator.index(max_sweeps)
    except TypeError:
        raise TypeError(f"svd: max_sweeps must be an integer, got "
                        f"{type(max_sweeps).__name__}") from None
    if sweeps < 1:
        raise ValueError(f"svd: max_sweeps must be at least 1, got {sweeps}")
    default = default_tol(rows, work)
    if tol is None:
        tol = default
    elif isinstance(tol, bool) or not isinstance(tol, numbers.Real):
        raise TypeError(f"svd: tol must be a real number, got {type(tol).__name__}")
    elif not 0.0 < float(tol) < 1.0:  # also refuses NaN
        raise ValueError(f"svd: tol is the relative orthogonality threshold |cos| of two "
                         f"columns and must lie in (0, 1), got {tol!r}; the default is "
                         f"sqrt(rows) * eps = {default:.3g}")
    finfo = np.finfo(work)
    # Rows reduced to noise are dropped at the dtype's rounding level, whatever tol is: a
    # loose tol must not zero real columns.
    return Tol(float(tol), min(float(tol), default), float(finfo.tiny / finfo.eps),
               min(sweeps, _SWEEPS_CAP))


def _as_input(a) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim < 2:
        raise ValueError(
            f"svd expects an array of shape (*, m, n) with at least 2 dimensions, "
            f"got shape {a.shape}")
    if a.dtype.kind == "f" and not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    if a.dtype not in _WORK_DTYPE:
        raise TypeError(
            f"svd needs a real floating-point array (float16, float32 or float64), got "
            f"{a.dtype}; convert it first, e.g. a.astype(np.float64)")
    return a


def _raise_for(status: int, index: tuple, max_sweeps: int) -> None:
    """The LinAlgError for a kernel status code (batch index () for a lone matrix)."""
    if status == NOT_FINITE:
        where = f" at batch index {index}" if index else ""
        raise LinAlgError(f"svd: the input is not finite (contains NaN or Inf){where}")
    if status == NOT_CONVERGED:
        where = f" for batch index {index}" if index else ""
        raise LinAlgError(
            f"svd: Jacobi did not converge in {max_sweeps} sweeps{where}; "
            f"raise max_sweeps or loosen tol")


def check_fits(s: np.ndarray, dtype) -> None:
    """Raise if a singular value (computed in a wider dtype) is out of dtype's range, as
    torch refuses an overflowing cast, instead of returning inf beside finite values."""
    big = np.finfo(dtype).max
    if s.size and not (np.abs(s) <= big).all():
        value = float(np.max(s))
        shown = f"{value:.6g}" if math.isfinite(value) else f"above {np.finfo(s.dtype).max:.6g}"
        raise LinAlgError(
            f"svd: a singular value ({shown}) cannot be represented in {np.dtype(dtype)} "
            f"without overflow (largest {big:.6g}); compute in a wider dtype, e.g. "
            f"A.double(), or scale A down")


def _empty(batch: tuple, m: int, n: int, full: bool, compute_uv: bool, dtype):
    """torch's answer when a dimension is 0: S empty, U and Vh identities (full) or empty."""
    k = min(m, n)
    s = np.zeros(batch + (k,), dtype=dtype)
    if not compute_uv:
        return None, s, None
    if full:
        u = np.broadcast_to(np.eye(m, dtype=dtype), batch + (m, m)).copy()
        vh = np.broadcast_to(np.eye(n, dtype=dtype), batch + (n, n)).copy()
    else:
        u = np.zeros(batch + (m, k), dtype=dtype)
        vh = np.zeros(batch + (k, n), dtype=dtype)
    return u, s, vh


def _fix_signs(u: np.ndarray, vh: np.ndarray, k: int) -> None:
    """In place: the first largest-|.| entry of each column of u is positive, row j of vh
    flips with column j (j < k); complement columns of u and rows of vh flip on their own."""
    cols = np.argmax(np.abs(u), axis=0)
    # A multiply by +-1 is exact and streams; boolean-mask indexing copied columns (slower).
    sign = np.where(u[cols, np.arange(u.shape[1])] < 0, -1.0, 1.0).astype(u.dtype)
    u *= sign
    vh[:k] *= sign[:k, None]
    if vh.shape[0] > k:
        rest = vh[k:]
        rows = np.argmax(np.abs(rest), axis=1)
        rest[rest[np.arange(rest.shape[0]), rows] < 0] *= -1


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
    jac = _kernels()
    n = X.shape[0]
    nb = 2 * threads
    bnd = [i * n // nb for i in range(nb + 1)]
    ref[:] = 0.0
    for sweep in range(tol.max_sweeps):
        # de Rijk's pivoting, once per sweep: rows sorted by norm, descending.
        jac.renorm_sorted(X, nrm, ref, tol)
        rotated = 0
        for rnd in range(nb - 1):
            # Circle method: block nb - 1 stays put, the others rotate one place per round.
            pairs = [(nb - 1, rnd)] + [((rnd + i) % (nb - 1), (rnd - i) % (nb - 1))
                                       for i in range(1, threads)]
            tasks = [(X, nrm, ref, tol, bnd[i], bnd[i + 1], bnd[j], bnd[j + 1], rnd == 0)
                     for i, j in pairs]
            rotated += sum(_threads.run(jac.block_pairs, tasks, threads))
        if rotated == 0:
            return sweep + 1
    return -1


def _jacobi_left(ak: np.ndarray, nleft: int, tol, threads: int):
    """s and the left singular vectors of ak (m x n, m >= n, scaled) as the rows of ut
    (nleft = 0, n or m rows: the extra ones complete an orthonormal basis), unsigned,
    without accumulating V. Returns (status, s, ut)."""
    jac = _kernels()
    m, n = ak.shape
    X = np.array(ak.T, order="C")  # row j = column j of ak; the sweeps work in place
    if threads > 1 and n >= 4 * threads:
        status = OK if _sweeps_threaded(X, np.empty(n), np.empty(n), tol, threads) >= 0 \
            else NOT_CONVERGED
    else:  # the batch kernel on a batch of one (in float64 the very build batches use)
        st = np.zeros(1, np.int8)  # OK
        jac.sweeps(X[None], np.empty((1, 0, 0), X.dtype), np.empty(n), np.empty(n), tol, st)
        status = int(st[0])
    s = np.empty(n, X.dtype)
    ut = np.empty((nleft, m), X.dtype)
    if status != OK:
        return status, s, ut
    jac.left_vectors(X, ut, s, np.empty(n), np.empty(n, np.int64), np.empty(nleft, np.bool_))
    return OK, s, ut


# _gram_start's gates. (a) cond(A)^2 <= _COND2 (in float64, whatever A's dtype): the Gram's
# smallest eigenvalue, which eigh returns to ~k eps lambda_1, is then right to a few percent,
# and the sweeps start from cosines ~eps cond^2 <= eps^1/4 (measured on 256 x 256: 3 sweeps
# up to cond 1e6, against 11-13 from A itself). (b) _GRADED bounds |D v_max| / |D v_min|.
_COND2 = float(np.finfo(np.float64).eps) ** -0.75
_GRADED = 10.0


def _gram_start(a: np.ndarray):
    """(V0, a V0) in a's dtype, V0 the eigenvectors of a^T a (descending), when a (scaled,
    m x n, m >= n) has cond(a)^2 <= _COND2 and is not column-graded; else None.

    One-sided Jacobi needs 8-13 sweeps from A itself, but two or three from a V0, whose
    columns are orthogonal up to cosines ~eps cond^2 (eigh's error), which each sweep
    squares. The Gram and its eigh are float64 for every dtype: float32 input then starts
    as orthogonal as float64's, and its columns are rounded to float32 only once. The
    price is relative accuracy: forming a V0 moves s_j by up to ~eps s_1 (relative
    eps cond(A)), where Jacobi on A keeps it to ~eps cond(A D^-1), D = A's column norms,
    far less on column-graded A. Gate (b): |D v_max| <= _GRADED |D v_min| (v_max, v_min the
    extreme eigenvectors) gives cond(A D^-1) >= cond(A) / _GRADED (Rayleigh quotients of
    D^-1 A^T A D^-1 at D v; v_min's is right as gate (a) holds), so the loss is at most a
    factor _GRADED over Jacobi's own bound. Graded, ill-conditioned, singular or non-finite
    input keeps the plain sweeps, having paid for the eigh. (b) is conservative: a V0's
    rounding is componentwise, and on graded input that passes (a) the start measured as
    accurate as the plain sweeps; it stays for its proof.
    """
    m, n = a.shape
    if not _memory.fits(8.0 * n * n * (3 if n * n >= _IN_PLACE else 5) + a.nbytes):
        return None  # the plain sweeps: slower, but within the memory there is
    a64 = a.astype(np.float64, copy=False)
    g = a64.T @ a64
    del a64
    d = np.sqrt(np.diagonal(g))  # before the eigh, which may overwrite g
    lam, v0 = eigh_gram(g, in_place=n * n >= _IN_PLACE)
    del g
    if not (lam[-1] > 0 and lam[0] * _COND2 >= lam[-1]):  # (a); also refuses zero and NaN
        return None
    if np.linalg.norm(d * v0[:, -1]) > _GRADED * np.linalg.norm(d * v0[:, 0]):  # (b)
        return None
    v0 = v0[:, ::-1]  # descending, the order de Rijk's pivoting keeps
    if a.dtype == np.float64:
        return np.ascontiguousarray(v0), a @ v0
    b = np.empty((m, n), a.dtype)
    for i in range(0, m, _ROWS):  # in float64 a block of rows at a time, not all of a
        b[i:i + _ROWS] = a[i:i + _ROWS].astype(np.float64) @ v0
    return np.ascontiguousarray(v0, dtype=a.dtype), b


_IN_PLACE = 1 << 20  # Grams of at least this many entries: eigh_gram in place
_ROWS = 256


def eigh_gram(g: np.ndarray, in_place: bool) -> tuple[np.ndarray, np.ndarray]:
    """np.linalg.eigh(g); in_place, LAPACK's same syevd in g's own memory (through scipy,
    when it is installed): numpy's eigh takes two more n x n copies, 5 n^2 doubles in all,
    the bulk of a large SVD's footprint. Not for small g: importing scipy.linalg costs
    0.3 s."""
    if in_place:
        try:
            from scipy.linalg import eigh
        except ImportError:
            pass
        else:  # g.T: the Fortran order LAPACK takes, the same matrix
            return eigh(g.T, overwrite_a=True, check_finite=False, driver="evd")
    return np.linalg.eigh(g)


def _svd_lone(a: np.ndarray, full: bool, compute_uv: bool, tol, threads: int, gram: bool):
    """One matrix (scaled, m x n, m >= n) to the kernel, preconditioned (_gram_start)
    where that is safe: the left vectors and s of a V0 are a's. The side Jacobi does not
    produce is recovered with BLAS (_other_side), from a itself."""
    m, n = a.shape
    start = _gram_start(a) if gram else None
    x = a if start is None else start[1]
    status, s, ut = _jacobi_left(x, (m if full else n) if compute_uv else 0, tol, threads)
    if status != OK or not compute_uv:
        return status, None, s, None
    return status, ut.T, s, _other_side(a, ut.T, s).T


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
    c = c / np.outer(d, d)
    if np.abs(c).sum(axis=1).max() > 1.5:  # 1 on the diagonal, <= 1/2 beside it
        return None
    r = np.linalg.cholesky(c).T
    x = r * d
    status, s, uxt = _jacobi_left(x, n if compute_uv else 0, tol, threads)
    if status != OK or not compute_uv:
        return status, None, s, None
    # U = Q U_x = b D^-1 R^-1 U_x: one m x k x k product.
    u = b @ (np.linalg.solve(r, uxt.T) / d[:, None])
    return status, u, s, (v0 @ _other_side(x, uxt.T, s)).T


def _svd_qr(a: np.ndarray, full: bool, compute_uv: bool, tol, threads: int, gram: bool):
    """SVD of one tall matrix a (scaled, m >= n): from a V0 by Cholesky QR where
    _gram_start allows (and only k columns of U are wanted), else via A P = Q R (columns
    sorted by norm, a cheap stand-in for QR column pivoting), then Jacobi on the rows of R
    (as dgejsv, which converges in fewer sweeps than Jacobi on A); the left vectors of R
    are recovered afterwards (_other_side)."""
    m, n = a.shape
    start = _gram_start(a) if gram and not (full and compute_uv) else None
    done = None if start is None else _svd_gram_tall(*start, compute_uv, tol, threads)
    if done is not None:
        return done
    perm = np.argsort(-np.einsum("ij,ij->j", a, a), kind="stable")
    mode = "complete" if (full and compute_uv and m > n) else "reduced"
    if compute_uv:
        q, r = np.linalg.qr(a[:, perm], mode=mode)
    else:
        r = np.linalg.qr(a[:, perm], mode="r")
    r = np.ascontiguousarray(r[:n])
    # Jacobi on the columns of R^T: its left vectors are R's right ones.
    status, s, vrt = _jacobi_left(r.T, n if compute_uv else 0, tol, threads)
    if status != OK or not compute_uv:
        return status, None, s, None
    u = q[:, :n] @ _other_side(r.T, vrt.T, s)
    if mode == "complete":
        u = np.concatenate([u, q[:, n:]], axis=1)
    vh = np.empty_like(vrt)
    vh[:, perm] = vrt
    return status, u, s, vh


def _svd_one_matrix(a: np.ndarray, full: bool, compute_uv: bool, tol, plan: Plan):
    """The LONE and QR paths: A scaled by a power of two (exact; so that neither squares
    nor 1 / s overflow or underflow), the transpose taken so that rows >= columns."""
    m, n = a.shape
    k = min(m, n)
    # The scaled copy of a and the rows the sweeps rotate, and U and V: refused up front
    # when they cannot fit, rather than failing deep inside LAPACK or the kernels.
    vectors = ((m if full else k) * m + (n if full else k) * n) if compute_uv else 0
    _memory.require(a.itemsize * (2 * m * n + 2 * vectors),
                    f"the SVD of one {m}x{n} {a.dtype} matrix")
    amax = float(max(a.max(), -a.min()))  # NaN and Inf too, without a temporary the size of a
    if not math.isfinite(amax):
        _raise_for(NOT_FINITE, (), tol.max_sweeps)
    e = math.frexp(amax)[1] if amax > 0 else 0
    trans = a.shape[0] < a.shape[1]
    ak = np.ldexp(a.T if trans else a, -e)
    run = _svd_qr if plan.path is Path.QR else _svd_lone
    status, u, s, vh = run(ak, full, compute_uv, tol, plan.threads, plan.gram)
    _raise_for(status, (), tol.max_sweeps)
    s = np.ldexp(s, e)
    if compute_uv:
        if trans:
            u, vh = vh.T, u.T
        u, vh = np.ascontiguousarray(u), np.ascontiguousarray(vh)
        _fix_signs(u, vh, min(a.shape))
    return u, s, vh


def _svd_batched(a3: np.ndarray, full: bool, compute_uv: bool, tol, threads: int):
    """The batch kernels on slices of a3, on `threads` threads: lanes for tiny matrices, and
    the general kernel for the rest and for the few matrices lanes hand back (MORE).
    The outputs are float64, except from the 3x3 kernel (a3's dtype)."""
    nbatch, m, n = a3.shape
    k = min(m, n)
    jac = _kernels()
    trans = m < n
    lanes = (k <= _LANES_MAX_N and max(m, n) <= _LANES_MAX_M
             and not (full and compute_uv and m != n))
    lanes3 = lanes and m == n == 3  # the commonest tiny case has a kernel of its own
    if not lanes3:
        # The general kernels compute in float64 for every dtype (float32 storage measured
        # no faster), so each compiles once, not once per dtype: seconds on a fresh install.
        a3 = a3.astype(np.float64, copy=False)
    u, s, vh, status = _outputs(nbatch, m, n, full, compute_uv, a3.dtype)
    # A few chunks per thread (a descheduled thread then delays only its chunk), each a
    # whole number of the kernel's lanes.
    step = max(_LANES, -(-nbatch // (4 * threads)) // _LANES * _LANES)
    chunks = [slice(lo, lo + step) for lo in range(0, nbatch, step)]
    if not lanes:
        tasks = [(a3[c], trans, full, compute_uv, tol, u[c], s[c], vh[c], status[c])
                 for c in chunks]
        _threads.run(_general, tasks, threads)
        return (u, s, vh), status
    if lanes3:
        _threads.run(jac.svd_lanes3, [(a3[c], compute_uv, tol, u[c], s[c], vh[c], status[c])
                                      for c in chunks], threads)
    else:
        _threads.run(jac.svd_lanes, [(a3[c], trans, compute_uv, tol, u[c], s[c], vh[c],
                                      status[c]) for c in chunks], threads)
    more = np.flatnonzero(status == MORE)
    if more.size:
        (u[more], s[more], vh[more]), status[more] = _svd_batched_general(
            a3[more], full, compute_uv, tol)
    return (u, s, vh), status


def _outputs(nbatch: int, m: int, n: int, full: bool, compute_uv: bool, dtype):
    """Empty u, s, vh and status for the batch kernels (u and vh (nbatch, 0, 0) when only
    s is wanted)."""
    k = min(m, n)
    if compute_uv:
        u = np.empty((nbatch, m, m if full else k), dtype=dtype)
        vh = np.empty((nbatch, n if full else k, n), dtype=dtype)
    else:
        u = vh = np.empty((nbatch, 0, 0), dtype=dtype)
    return u, np.empty((nbatch, k), dtype=dtype), vh, np.empty(nbatch, dtype=np.int8)


def _general(a3, trans, full, compute_uv, tol, u, s, vh, status) -> None:
    """The general batch kernels on a3 (float64, m x n, or n x m when trans): SVDs into u,
    s, vh (in a3's orientation) and status. Separate kernels, not one calling the others:
    each nesting level would compile its callees again (see _jacobi's entry points)."""
    jac = _kernels()
    nbatch, m, n = a3.shape
    k = min(m, n)
    # X[b] = the columns of A[b] as rows, scaled by 2^-expo[b] (exact) so that the largest
    # entry lies in [0.5, 1): squares then neither overflow nor (mostly) underflow. In
    # numpy, not a kernel: a kernel this simple still took ~0.7 s to compile.
    amax = np.maximum(a3.max(axis=(1, 2)), -a3.min(axis=(1, 2)))  # NaN propagates
    status[:] = np.where(np.isfinite(amax), OK, NOT_FINITE)
    expo = np.frexp(amax)[1]
    src = a3 if trans else a3.transpose(0, 2, 1)
    X = np.empty((nbatch, k, max(m, n)))
    # A multiply by 2^-e (np.ldexp is 6x slower), where that factor is a normal number.
    np.multiply(src, np.ldexp(1.0, -np.clip(expo, -1000, 1000))[:, None, None], out=X)
    far = np.flatnonzero(np.abs(expo) > 1000)  # subnormal or huge input
    if far.size:
        X[far] = np.ldexp(src[far], -expo[far, None, None])
    Vt = np.empty((nbatch, k, k) if compute_uv else (nbatch, 0, 0))
    Vt[:] = np.eye(Vt.shape[1])
    jac.sweeps(X, Vt, np.empty(k), np.empty(k), tol, status)
    ucols = (max(m, n) if full else k) if compute_uv else 0
    scratch = (np.empty((ucols, max(m, n))), np.empty(k), np.empty(k, np.int64),
               np.empty(ucols), np.empty(ucols, np.bool_))
    jac.finish(X, Vt, expo, trans, u, s, vh, status, *scratch)
    # A zero singular value, or a full U of a non-square A: columns of U to complete.
    if compute_uv and (full and m != n or (status == MORE).any()):
        jac.complete(X, Vt, expo, trans, u, s, vh, status, *scratch)


def _svd_batched_general(a3, full, compute_uv, tol):
    """The general batch kernels on all of a3, in float64, on the calling thread."""
    a3 = a3.astype(np.float64, copy=False)
    nbatch, m, n = a3.shape
    u, s, vh, status = _outputs(nbatch, m, n, full, compute_uv, a3.dtype)
    _general(a3, m < n, full, compute_uv, tol, u, s, vh, status)
    return (u, s, vh), status


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
    out_dtype = a.dtype
    work = _WORK_DTYPE[out_dtype]
    *batch, m, n = a.shape
    batch = tuple(batch)
    k = min(m, n)
    full = bool(full_matrices)
    compute_uv = bool(compute_uv)
    tol = _tolerances(tol, max_sweeps, max(m, n), work)
    if k == 0 or 0 in batch:
        return _empty(batch, m, n, full, compute_uv, out_dtype)

    a3 = np.ascontiguousarray(a.reshape((-1, m, n)), dtype=work)
    how = _plan or plan(a3.shape[0], m, n)
    kind = (work, how, m, n, full)
    if how.path is Path.BATCHED:
        if kind in _ran:  # loaded already: no notice to watch for (the common, small call)
            (u, s, vh), status = _svd_batched(a3, full, compute_uv, tol, how.threads)
        else:
            with _compile_notice(work, kind):
                (u, s, vh), status = _svd_batched(a3, full, compute_uv, tol, how.threads)
        bad = np.flatnonzero(status)
        if bad.size:
            index = tuple(int(i) for i in np.unravel_index(bad[0], batch)) if batch else ()
            _raise_for(int(status[bad[0]]), index, max_sweeps)
        if compute_uv:
            u, vh = u.reshape(batch + u.shape[1:]), vh.reshape(batch + vh.shape[1:])
    else:
        with _compile_notice(work, kind):
            u, s, vh = _svd_one_matrix(a3[0], full, compute_uv, tol, how)
        if compute_uv:
            u, vh = u.reshape(batch + u.shape), vh.reshape(batch + vh.shape)
    check_fits(s, out_dtype)
    s = s.reshape(batch + (k,))
    if not compute_uv:
        return None, _cast(s, out_dtype), None
    return _cast(u, out_dtype), _cast(s, out_dtype), _cast(vh, out_dtype)


def _cast(x: np.ndarray, dtype) -> np.ndarray:
    return x if x.dtype == dtype else x.astype(dtype)
