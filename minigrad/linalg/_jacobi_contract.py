"""What the SVD driver (_svd_forward.py) and the Jacobi kernels (_jacobi.py) agree on: the
thresholds passed in, the status codes written out (the eigh kernels write the same ones),
and which matrices the lanes take. Apart from the kernels so that the drivers can run the
ahead-of-time compiled kernels (minigrad/_aot.py) without importing numba.

The kernels read these values as compile-time constants, and numba's cache notices edits
to the kernel's own file only: after changing a value here, clear the cache (or touch
_jacobi.py and _eigh_jacobi.py). The compiled modules are keyed by this file too."""

from typing import NamedTuple


class Tol(NamedTuple):
    """The iteration's thresholds (see _svd_forward for the defaults)."""

    rotate: float  # rotate a pair while |cos(angle)| > rotate
    noise: float  # a row cut below this fraction of the largest norm it had is rounding noise
    small: float  # rows below this norm (largest entry ~1) are zero to working precision
    max_sweeps: int


# Status codes, one per batch element.
OK = 0
NOT_FINITE = 1
NOT_CONVERGED = 2
# svd_lanes' status for a matrix that lanes cannot finish (a column whose square loses
# digits, no convergence, a zero singular value to complete U for): the general kernels
# (sweeps, finish, complete) do it.
MORE = -1

# Matrices with at most _LANES_MAX_N columns (after the transpose) and _LANES_MAX_M rows go
# through the batch in blocks of _LANES (see _jacobi's lanes).
_LANES = 32
_LANES_MAX_N = 4
_LANES_MAX_M = 8
