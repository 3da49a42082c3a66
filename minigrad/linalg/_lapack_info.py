"""Which matrix of a batch made a LAPACK factorisation fail, and where: numpy raises one
message for the whole batch, torch names the batch element and the pivot. Plain vectorised
numpy: used after a failure, and as linalg.lu_factor's getrf (numpy has none). And the
Cholesky factor of one matrix, or None where it fails (cholesky_factor: the SVD's and
eigh's gates)."""

from __future__ import annotations

import functools

import numpy as np


def lu_packed(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """getrf on each matrix of a (*, n, n), vectorised over the batch: (LU packed, L's unit
    diagonal implied; LAPACK's 1-based pivots; info, the 1-based index of the first exactly
    zero pivot, 0 where there is none)."""
    *batch, n, _ = a.shape
    x = np.array(a.reshape((-1, n, n) if n else (int(np.prod(batch)), 0, 0)),
                 dtype=a.dtype if a.dtype.kind in "fc" else np.float64)
    info = np.zeros(x.shape[0], np.int64)
    pivots = np.zeros((x.shape[0], n), np.int32)
    rows = np.arange(x.shape[0])
    for k in range(n):
        col = x[:, k:, k]
        # LAPACK's pivot search (i?amax) takes |re| + |im| for complex entries, not |z|
        size = np.abs(col.real) + np.abs(col.imag) if x.dtype.kind == "c" else np.abs(col)
        p = k + np.argmax(size, axis=1)
        pivots[:, k] = p + 1
        top = x[rows, k].copy()
        x[rows, k] = x[rows, p]
        x[rows, p] = top
        piv = x[:, k, k]
        zero = piv == 0
        info[(info == 0) & zero] = k + 1
        f = x[:, k + 1:, k] / np.where(zero, 1, piv)[:, None]
        x[:, k + 1:, k:] -= f[:, :, None] * x[:, None, k, k:]
        x[:, k + 1:, k] = f
    return x.reshape(a.shape), pivots.reshape(*batch, n), info.reshape(batch)


def lu_info(a: np.ndarray) -> np.ndarray:
    """getrf's info for each matrix of a (*, n, n): the 1-based index of the first exactly
    zero pivot of LU with partial pivoting, 0 where there is none."""
    return lu_packed(a)[2]


def cholesky_info(a: np.ndarray) -> np.ndarray:
    """potrf's info for each matrix of a (*, n, n), read from its lower triangle: the order of
    the first leading minor that is not positive definite, 0 where there is none (complex:
    Hermitian, the diagonal's imaginary parts unread, as potrf)."""
    *batch, n, _ = a.shape
    x = np.tril(a.reshape(-1, n, n)).astype(a.dtype if a.dtype.kind in "fc" else np.float64)
    L = np.zeros_like(x)
    info = np.zeros(x.shape[0], np.int64)
    for k in range(n):
        d = x[:, k, k].real - np.einsum("bj,bj->b", L[:, k, :k], L[:, k, :k].conj()).real
        bad = ~(d > 0)  # NaN too
        info[(info == 0) & bad] = k + 1
        lkk = np.sqrt(np.where(bad, 1, d))
        L[:, k, k] = lkk
        L[:, k + 1:, k] = (x[:, k + 1:, k] - np.einsum("bij,bj->bi", L[:, k + 1:, :k],
                                                       L[:, k, :k].conj())) / lkk[:, None]
    return info.reshape(batch)


def cholesky_factor(a: np.ndarray, lower: bool = True) -> np.ndarray | None:
    """A factor of one matrix a (n, n) whose diagonal is its Cholesky factor's, its `lower`
    triangle read, or None where potrf fails (a NaN off the diagonal may pass it). float64
    goes to SciPy's dpotrf directly where SciPy is installed (the other triangle left as
    it was): numpy's wrapper was half of its 9.4 us on a 40 x 40. Else numpy's."""
    potrf = _dpotrf() if a.dtype == np.float64 else None
    if potrf is not None:
        c, info = potrf(a, lower=int(lower), clean=0)
        return c if info == 0 else None
    try:  # (numpy's reads the lower triangle; the upper one's is the transpose's lower)
        return np.linalg.cholesky(a if lower else a.T)
    except np.linalg.LinAlgError:
        return None


@functools.cache
def _dpotrf():
    """SciPy's float64 Cholesky (LAPACK's dpotrf), or None without SciPy (not a runtime
    dependency)."""
    try:
        from scipy.linalg.lapack import dpotrf
    except ImportError:
        return None
    return dpotrf
