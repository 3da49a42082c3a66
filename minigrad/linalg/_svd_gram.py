"""The start of one large matrix's Jacobi sweeps from the eigenvectors of its Gram matrix
A^T A (the LONE and QR paths of _svd_single.py): two or three sweeps instead of 8-13."""

from __future__ import annotations

import numpy as np

from minigrad.linalg import _memory

# _gram_start's gates. (a) cond(A)^2 <= _COND2 (in float64, whatever A's dtype): the Gram's
# smallest eigenvalue, which eigh returns to ~k eps lambda_1, is then right to a few percent,
# and the sweeps start from cosines ~eps cond^2 <= eps^1/4 (measured on 256 x 256: 3 sweeps
# up to cond 1e6, against 11-13 from A itself). (b) _GRADED bounds |D v_max| / |D v_min|.
_COND2 = float(np.finfo(np.float64).eps) ** -0.75
_GRADED = 10.0


def _gram_start(a: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
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
