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
- Speed: the kernels are the real general ones compiled for complex128; the real
  fast paths are not there (yet) for complex: no lanes for batches of tiny matrices, and
  one large matrix has no eigenvector start and no threads inside its sweeps (batches
  are split over threads as real ones). benchmarks/bench_svd_complex.py measures them.
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
from minigrad.linalg._eigh_forward import _eigh
from minigrad.linalg._svd_checks import DEFAULT_MAX_SWEEPS
from minigrad.linalg._svd_forward import _forward

# The dtype whose precision (eps, tiny) the kernels' tolerances follow.
_PRECISION = {np.dtype(np.complex64): np.float32, np.dtype(np.complex128): np.float64}


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
    return _forward(a, a.dtype, full_matrices, compute_uv, tol, max_sweeps, None)


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
