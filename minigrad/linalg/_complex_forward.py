"""The ndarray-level forwards of the complex SVD and the Hermitian eigh: the real drivers
(_svd_forward.py, _eigh_forward.py) and the same Jacobi kernels, which numba compiles for
complex128 too (complex rotations: _scalars.py). Kept apart from svd_forward and
eigh_forward, which refuse complex input, so that a complex Tensor cannot reach the real
backward rules: the Tensor layer calls these once its complex backward exists.

What the Tensor layer needs to know:
- S (and eigh's w) is real, float32 for complex64 and float64 for complex128; U, Vh (and
  V) keep a's dtype.
- The gauge: complex singular vectors are defined up to u_j, v_j -> u_j e^{i phi},
  v_j e^{i phi} (U(k) within a tie), eigenvectors up to v_j e^{i phi}. These drivers fix
  it as the real ones fix the sign: the first entry of largest modulus of each column of
  U (of V for eigh) is real (to rounding: its imaginary part is ~eps of it) and positive,
  Vh's row j turned with u_j; complement columns of a full U and rows of a full Vh on
  their own. Within a tie the basis is whatever the sweeps left, as for real input.
- Speed: the kernels are the real general ones compiled for complex128; one large
  matrix's SVD starts from its Gram's eigenvectors as a real one does (_from_gram), and
  the eigh of matrices from 48 x 48 from LAPACK's eigenvectors, as a real one does
  (_eigh_forward._lapack_start). Not (yet) for complex: the lanes for batches of tiny
  matrices, the QR-first path for a tall matrix, V recovered by BLAS instead of
  accumulated, threads inside one matrix's sweeps (batches are split over threads as
  real ones). benchmarks/bench_svd_complex.py.
- The kernels compile on the first complex call (a notice says so) unless
  `python -m minigrad.warmup` has cached them; they are not in the compiled modules.
- Accuracy: complex64 to float32's tolerances, complex128 to float64's (the kernels run
  in complex128 for both); the same errors as the real drivers (LinAlgError for NaN or
  Inf, non-convergence, an S that overflows; ValueError and TypeError for bad input).
- The Hermitian eigh reads one triangle (lower or upper, as UPLO) and ignores the
  imaginary part of the diagonal, as LAPACK's zheev and torch.linalg.eigh.
"""

from __future__ import annotations

import numpy as np

from minigrad.linalg._eigh_forward import DEFAULT_MAX_SWEEPS as EIGH_MAX_SWEEPS
from minigrad.linalg._eigh_forward import _eigh, eigh_forward
from minigrad.linalg._svd_batch import svd_from_start
from minigrad.linalg._svd_checks import DEFAULT_MAX_SWEEPS, _tolerances, check_fits
from minigrad.linalg._svd_forward import _compile_notice, _forward, svd_forward
from minigrad.linalg._svd_gram import _gram_start

# The dtype whose precision (eps, tiny) the kernels' tolerances follow.
_PRECISION = {np.dtype(np.complex64): np.float32, np.dtype(np.complex128): np.float64}
# One matrix from this k on starts from the Gram's eigenvectors (_from_gram): complex
# rotations cost about four real ones, so the start pays earlier than for real input
# (_svd_forward._BIG): at 48 and 52 it took 0.4x the batch kernel's time.
_GRAM_MIN = 48


def _as_complex(a, what: str, square: bool = False) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim < 2 or (square and a.shape[-1] != a.shape[-2]):
        kind = "square matrices (*, n, n)" if square else "an array of shape (*, m, n)"
        raise ValueError(f"{what} expects {kind} with at least 2 dimensions, got shape "
                         f"{a.shape}")
    if a.dtype.kind == "c" and not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    if a.dtype not in _PRECISION:
        raise TypeError(f"{what} needs a complex array (complex64 or complex128), got "
                        f"{a.dtype}")
    return a


def complex_svd_forward(a: np.ndarray, full_matrices: bool = True, compute_uv: bool = True,
                        *, tol: float | None = None, max_sweeps: int = DEFAULT_MAX_SWEEPS,
                        ) -> tuple[np.ndarray | None, np.ndarray, np.ndarray | None]:
    """A = U diag(S) Vh for complex A by one-sided Jacobi with complex rotations, batched.

    Shapes, options and errors as svd_forward's (U (*, m, m) or (*, m, k), S (*, k) real,
    descending, >= 0, Vh (*, n, n) or (*, k, n)); the gauge and dtypes as the module
    docstring says. Without compute_uv, U and Vh are None.

    >>> u, s, vh = complex_svd_forward(np.array([[3j, 0], [0, -4]]))
    >>> s
    array([4., 3.])
    >>> np.allclose(u @ np.diag(s) @ vh, [[3j, 0], [0, -4]])
    True
    """
    a = _as_complex(a, "svd")
    if a.ndim == 2 and min(a.shape) >= _GRAM_MIN:
        done = _from_gram(a, full_matrices, compute_uv, tol, max_sweeps)
        if done is not None:
            return done
    return _forward(a, a.dtype, full_matrices, compute_uv, tol, max_sweeps, None)


def _from_gram(a: np.ndarray, full: bool, compute_uv: bool, tol: float | None,
               max_sweeps: int) -> tuple[np.ndarray | None, np.ndarray, np.ndarray | None] | None:
    """One large matrix as the real lone path starts it: the sweeps on x V0, V0 the
    eigenvectors of x^H x (_gram_start: one sweep, or two, instead of 8-13), x = A or,
    wide, A^H; then Vh = Vh_b V0^H. None where the start's gates refuse (ill-conditioned
    or graded input keeps the sweeps on A itself, and their relative accuracy) or a is
    not finite (the batch path says so)."""
    m, n = a.shape
    work = _PRECISION[a.dtype]
    with _compile_notice(np.dtype(np.complex128), ("gram", m, n, full)):
        done = svd_from_start(a, full, compute_uv, _tolerances(tol, max_sweeps, max(m, n), work),
                              max_sweeps, _gram_start)
    if done is None:
        return None
    u, s, vh = done
    s = s.astype(work, copy=False)
    check_fits(s, work)
    if not compute_uv:
        return None, s, None
    assert u is not None and vh is not None
    return u.astype(a.dtype, copy=False), s, vh.astype(a.dtype, copy=False)


def hermitian_eigh_forward(a: np.ndarray, lower: bool = True, compute_v: bool = True, *,
                           tol: float | None = None, max_sweeps: int = EIGH_MAX_SWEEPS,
                           ) -> tuple[np.ndarray, np.ndarray | None]:
    """A = V diag(w) V^H for the Hermitian A read from a's lower (or upper) triangle, batched.

    w (*, n) real and ascending, V (*, n, n) unitary in a's dtype (None without
    compute_v); tol, max_sweeps and errors as eigh_forward's.

    >>> w, v = hermitian_eigh_forward(np.array([[2, 1j], [-1j, 2]]))
    >>> w
    array([1., 3.])
    """
    a = _as_complex(a, "linalg.eigh", square=True)
    return _eigh(a, _PRECISION[a.dtype], lower, compute_v, tol, max_sweeps)


def any_svd_forward(a: np.ndarray, *args, **kwargs) -> tuple:
    """The Jacobi SVD's ndarray forward for a's dtype: svd_forward, or complex_svd_forward."""
    return (complex_svd_forward if a.dtype.kind == "c" else svd_forward)(a, *args, **kwargs)


def any_eigh_forward(a: np.ndarray, *args, **kwargs) -> tuple:
    """The Jacobi eigh's ndarray forward for a's dtype: eigh_forward, or
    hermitian_eigh_forward."""
    return (hermitian_eigh_forward if a.dtype.kind == "c" else eigh_forward)(a, *args, **kwargs)
