"""The start of one large matrix's Jacobi sweeps from the eigenvectors of its Gram matrix
A^T A (the LONE and QR paths of _svd_single.py): one sweep, or two, instead of 8-13."""

from __future__ import annotations

import numpy as np

from minigrad.linalg import _memory
from minigrad.linalg._lapack_info import cholesky_factor

# _gram_start's gates. (a) cond(A)^2 <= _COND2 (in float64, whatever A's dtype): the Gram's
# smallest eigenvalue, which eigh returns to ~k eps lambda_1, is then right to a few percent,
# and the sweeps start from cosines ~eps cond^2 <= eps^1/4 (measured on 256 x 256: 3 sweeps
# up to cond 1e6, against 11-13 from A itself). (b) _GRADED bounds |D v_max| / |D v_min|.
_COND2 = float(np.finfo(np.float64).eps) ** -0.75
_GRADED = 10.0


def _gram_start(a: np.ndarray, e: int = 0) -> tuple[np.ndarray, np.ndarray] | None:
    """(V0, b = 2^-e a V0) in a's dtype, V0 the eigenvectors of the Gram of 2^-e a
    (descending), when 2^-e a (m x n, m >= n, scaled: see svd_one_matrix) has
    cond^2 <= _COND2 and is not column-graded; else None.

    One-sided Jacobi needs 8-13 sweeps from A itself, but one or two from a V0, whose
    columns are orthogonal up to cosines ~eps cond^2 (eigh's error), which each sweep
    squares (a sweep of rotations that small ends the iteration: _jacobi.sweeps). The
    Gram and its eigh are float64 for every dtype: float32 input then starts
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

    Complex a (complex_svd_forward's one large matrix): the Gram is A^H A, in complex128.

    Memory: a is read a block of rows at a time, scaled and widened to float64 there (no
    scaled or float64 copy of a); the eigh of the n x n Gram takes one more n x n (syevr's
    eigenvectors; syevd's workspace, two, where that is less than a), and b is a's size.
    """
    m, n = a.shape
    in_place = n * n >= _IN_PLACE and a.dtype.kind == "f"  # (in place: real only)
    lean = 16.0 * n * n > a.nbytes  # syevr; syevd, faster, where its workspace is less than a
    # n x n doubles: the Gram and the sum's products, then the eigenvectors (syevr) or
    # syevd's workspace of two (numpy's eigh: three more); b and V0; and BLAS's and LAPACK's
    # own buffers, which short of address space fail by a segfault, not an error.
    grams = (2 if lean else 3) if in_place else 5
    need = 8.0 * n * n * grams + a.nbytes + a.itemsize * n * n
    if not _memory.fits(need + _SLACK):
        return None  # the plain sweeps: slower, but within the memory there is
    if _graded(_column_norms(a, e)):
        return None  # gate (a) fails, seen without the Gram (CTMRG's 80 x 80: 64 us)
    neg = _negated_gram(a, e)
    d = np.sqrt(-np.diagonal(neg).real)  # before the eigh, which overwrites the Gram
    if _surely_ill(neg, d):
        return None  # gate (a) fails: spared the eigh, the start's dearest part
    lam, v0 = eigh_gram(neg, in_place, lean)
    del neg
    if not _gates_pass(-lam, v0, d):
        return None
    b = np.empty((m, n), a.dtype)
    for i in range(0, m, _ROWS):  # in float64 a block of rows at a time, not all of a
        np.matmul(_block(a, i, i + _ROWS, e), v0, out=b[i:i + _ROWS], casting="same_kind")
    return v0.astype(a.dtype, copy=False), b


def _gates_pass(lam: np.ndarray, v0: np.ndarray, d: np.ndarray) -> bool:
    """Gates (a) and (b) of _gram_start on the Gram's eigenvalues lam (descending), its
    eigenvectors v0 and the column norms d."""
    if not (lam[0] > 0 and lam[-1] * _COND2 >= lam[0]):  # (a); also refuses zero and NaN
        return False
    return bool(np.linalg.norm(d * v0[:, 0]) <= _GRADED * np.linalg.norm(d * v0[:, -1]))  # (b)


def small_start(a: np.ndarray, e: int) -> tuple[np.ndarray, np.ndarray] | None:
    """_gram_start (the same gates) for a real a small enough to copy freely, in float64
    whatever a's dtype: (V0, 2^-e a V0), or None. Without the large matrix's row blocks
    and memory checks: at 60 x 40 those cost 60 us beside the eigh's 105."""
    if _graded(_column_norms(a, e)):
        return None  # gate (a) fails, seen without the Gram (tensor networks' corners)
    x = np.ldexp(a, -e, dtype=np.float64)
    neg = x.T @ x
    neg *= -1.0  # (_gram_start's -G: eigh of it gives G's eigenvalues in descending order)
    d = np.sqrt(-np.diagonal(neg))
    if _surely_ill(neg, d):
        return None
    lam, v0 = np.linalg.eigh(neg)
    if not _gates_pass(-lam, v0, d):
        return None
    return v0, x @ v0


_IN_PLACE = 1 << 20  # Grams of at least this many entries: eigh_gram in place
_SLACK = 1 << 28  # bytes left for BLAS's and LAPACK's own buffers and threads' stacks
_ROWS = 512


def _block(a: np.ndarray, i: int, j: int, e: int) -> np.ndarray:
    """Rows i to j of 2^-e a in float64 or complex128 (exact: a power of two)."""
    if a.dtype.kind == "c":
        blk = a[i:j].astype(np.complex128)
        np.ldexp(blk.real, -e, out=blk.real)
        np.ldexp(blk.imag, -e, out=blk.imag)
        return blk
    blk = a[i:j].astype(np.float64)
    return np.ldexp(blk, -e, out=blk)


def _negated_gram(a: np.ndarray, e: int) -> np.ndarray:
    """-G, G = (2^-e a)^H (2^-e a) in float64 (complex128), summed over blocks of rows (no
    float64 or scaled copy of a): for large real n by BLAS's syrk in G's own memory (its
    lower triangle, the one eigh_gram reads); else by numpy, a product beside G per block."""
    n = a.shape[1]
    try:
        from scipy.linalg.blas import dsyrk
    except ImportError:
        dsyrk = None
    if dsyrk is None or n * n < _IN_PLACE or a.dtype.kind == "c":
        rows = max(_ROWS, n)  # a block no larger than G: the sum's own pass stays small
        cplx = a.dtype.kind == "c"
        work = np.complex128 if cplx else np.float64
        neg, tmp = np.zeros((n, n), work), np.empty((n, n), work)
        for i in range(0, a.shape[0], rows):
            blk = _block(a, i, i + rows, e)
            neg -= np.matmul(blk.T.conj() if cplx else blk.T, blk, out=tmp)
        return neg
    neg = np.zeros((n, n), order="F")  # Fortran order: syrk updates it in place
    for i in range(0, a.shape[0], _ROWS):
        # neg := neg - blk^T blk, its upper triangle: the lower one of neg.T, returned.
        neg = dsyrk(-1.0, _block(a, i, i + _ROWS, e), beta=1.0, c=neg, trans=1, lower=0,
                    overwrite_c=1)
    return neg.T


def _column_norms(a: np.ndarray, e: int) -> np.ndarray:
    """2^-e a's column norms (real a, |e| <= 400: its squares, unscaled, neither overflow
    nor, for a column that matters, underflow: one below 2^-500 is 2^-100 of the largest
    entry, graded past gate (a) anyway); else empty (not known before the Gram)."""
    if a.dtype.kind != "f" or abs(e) > 400:
        return np.empty(0)
    return np.ldexp(np.sqrt(np.einsum("ij,ij->j", a, a, dtype=np.float64)), -e)


def _graded(d: np.ndarray) -> bool:
    """Whether column norms d spread past gate (a) (cond(A) >= max d / min d); NaN too."""
    return d.size > 0 and not d.min() * _COND2**0.5 >= d.max()


def _surely_ill(neg: np.ndarray, d: np.ndarray) -> bool:
    """Whether gate (a) surely fails, seen before the eigh of G = -neg: its diagonal d^2
    (a's column norms, at no cost) bounds cond(G) >= max d^2 / min d^2 (lambda_max >= max
    G_ii >= min G_ii >= lambda_min): column-graded input, as tensor networks' truncated
    corners are (1e15-1e20 measured). Up to _CHOLESKY_MAX columns also G's Cholesky factor R
    (a tenth of the eigh's time, a few percent of a well-conditioned SVD's): where it exists,
    cond(G) = cond(R)^2 >= (max r_ii / min r_ii)^2 (sigma_min(R) <= |r_ii| <= sigma_max(R),
    R triangular); where it breaks down, cond(G) >= 1 / (n gamma_{n+1}) (Demmel: it
    succeeds on a positive definite G whose unit-diagonal scaling has lambda_min above
    that), past _COND2 for n <= 127: rank deficiency. Not all ill-conditioning shows
    (random singular vectors hide cond 1e7 from both); a wrong True would cost only speed,
    the plain sweeps being the accurate path."""
    root = _COND2**0.5
    if _graded(d):  # no square to overflow
        return True
    if neg.shape[0] > _CHOLESKY_MAX:
        return False
    r = cholesky_factor(-neg)
    if r is None:
        return True
    diag = np.abs(np.diagonal(r))
    return not diag.min() * root >= diag.max()


_CHOLESKY_MAX = 127  # where a breakdown proves rank deficiency (Demmel's bound above)


def eigh_gram(g: np.ndarray, in_place: bool, lean: bool = True
              ) -> tuple[np.ndarray, np.ndarray]:
    """np.linalg.eigh(g), reading g's lower triangle; in_place, LAPACK's in g's own memory
    (through scipy, when it is installed): lean, syevr, with one more n x n for the
    eigenvectors; else syevd, with a workspace of two (measured 5-30% faster). numpy's eigh
    (syevd) takes two n x n copies more, the bulk of a large SVD's footprint. Not for small
    g: importing scipy.linalg costs 0.3 s."""
    if in_place:
        try:
            from scipy.linalg import eigh
        except ImportError:
            pass
        else:  # g.T: the Fortran order LAPACK takes; its upper triangle is g's lower
            return eigh(g.T, lower=False, overwrite_a=True, check_finite=False,
                        driver="evr" if lean else "evd")
    return np.linalg.eigh(g)
