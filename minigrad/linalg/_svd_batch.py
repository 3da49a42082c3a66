"""The batch kernel's driver: lanes for tiny matrices, the general kernel with its row
scaling, one matrix from a start (svd_from_start). _svd_forward.py's plan sends matrices
here; the kernels are _jacobi.py's (minigrad/_kernel_registry.py loads them), and
_jacobi_contract.py says what both sides agree on."""

from __future__ import annotations

import math

import numpy as np

from minigrad._kernel_registry import exact, kernels
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
from minigrad.linalg._svd_checks import _WORK_DTYPE, _raise_for, check_fits
from minigrad.linalg._svd_single import _fix_signs


def _kernels():
    """The kernels compiled ahead of time by `python -m minigrad.warmup` when they are built
    for this source and machine, else numba's JIT (minigrad/_kernel_registry.py): a warm
    process's first SVD then imports no numba."""
    return kernels("jacobi")


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
    return _lone_result(u, s, vh, status, compute_uv, max_sweeps, out_dtype)


def _lone_general(a: np.ndarray, full: bool, compute_uv: bool, tol, max_sweeps: int,
                  out_dtype) -> tuple[np.ndarray | None, np.ndarray, np.ndarray | None]:
    """One real matrix a (m, n) through the general kernels as _svd_batched runs it (one
    chunk, on the calling thread), with the same results, called directly: for a lone
    60 x 40 the plan, the chunking and the thread hand-out were ~10% of the call."""
    m, n = a.shape
    a3 = np.ascontiguousarray(a.reshape((1, m, n)), dtype=np.float64)
    u, s, vh, status = _outputs(1, m, n, full, compute_uv, a3.dtype)
    _general(a3, m < n, full, compute_uv, tol, u, s, vh, status)
    return _lone_result(u, s, vh, status, compute_uv, max_sweeps, out_dtype)


def _lone_result(u, s, vh, status, compute_uv: bool, max_sweeps: int,
                 out_dtype) -> tuple[np.ndarray | None, np.ndarray, np.ndarray | None]:
    """A lone real matrix's batch-of-one outputs as svd_forward returns them, or its error."""
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
    Vt = np.zeros((nbatch, k, k) if compute_uv else (nbatch, 0, 0), a3.dtype)
    Vt.reshape(nbatch, -1)[:, ::k + 1] = 1.0  # identities (np.eye copied in took 2x as long)
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
    # (One matrix's status read directly: the array test was ~1.5 us of a 60 x 40's call.)
    more = status[0] == MORE if nbatch == 1 else (status == MORE).any()
    if compute_uv and (full and m != n or more):
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
                    "the SVD of one %dx%d %s matrix", m, n, a.dtype)
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


def _cast(x: np.ndarray, dtype) -> np.ndarray:
    return x if x.dtype == dtype else x.astype(dtype)
