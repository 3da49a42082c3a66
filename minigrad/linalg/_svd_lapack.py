"""Singular values alone of one float64 matrix whose columns are not graded: LAPACK's
gesdd (numpy's SVD without vectors), 1.4-3x faster than the Jacobi sweeps, for no loss
against Jacobi's accuracy bound.

Jacobi's one-sided sweeps return s_j to a relative error ~eps cond(A D^-1), D = A's column
norms (Demmel and Veselic); gesdd to an absolute one, ~eps s_1. Where the column norms
(of the tall orientation) lie within a factor _GRADED of each other, cond(A D^-1) >=
cond(A) / _GRADED = s_1 / (s_n _GRADED) >= s_1 / (s_j _GRADED), so gesdd's bound is within
a factor _GRADED of Jacobi's for every s_j: the standard the Gram start keeps
(_svd_gram.py, whose gate (b) is this one's sibling). Column-graded input (a tensor
network's corner, whose column norms spread over 1e11) keeps the sweeps, whose relative
accuracy is there real (columns graded over 14 decades: 1e-15 against gesdd's 1e-3);
so do batches (the batch kernels are the faster), float32 and float16 input (computed by
the sweeps in float64 to float32's tolerance, the rounding their backward's tie tests are
set against), and a call that sets tol or max_sweeps (which tune the sweeps).

Measured against svd_forward's Jacobi paths (one thread, medians of interleaved repeats,
random input): values only 0.33-0.70x from 5 x 5 to 300 x 300. With vectors gesdd was
0.8-0.93x on random square input from k = 48, but 1.01x on robust PCA's 60 x 40 iterates
(the sweeps converge faster on them), 1.0-1.24x below k = 40 and 1.04-1.5x on shapes 2:1
and taller: an SVD with vectors keeps the sweeps.
"""

import numpy as np

from minigrad.linalg._svd_gram import _GRADED

# From this k (below it the lanes kernels), up to this many entries (gesdd takes a copy
# of A and a workspace of a few more; beyond, the sweeps' leaner footprint on A itself).
_MIN_K = 5
_MAX_ENTRIES = 1 << 22


def lapack_eligible(m: int, n: int) -> bool:
    """Whether the values of an m x n matrix are in the sizes gesdd takes (see above)."""
    return min(m, n) >= _MIN_K and m * n <= _MAX_ENTRIES


def lapack_values(a: np.ndarray) -> np.ndarray | None:
    """The singular values of one float64 a (descending) by gesdd, or None where a's
    columns are graded (or one is zero, or their squares leave float64's range: the sweeps
    scale first), where a is not finite, or where gesdd fails to converge."""
    x = a if a.shape[0] >= a.shape[1] else a.T
    d = np.einsum("ij,ij->j", x, x)  # squared column norms: NaN and Inf propagate
    lo, hi = float(d.min()), float(d.max())
    if not (0.0 < lo and hi < np.inf and hi <= _GRADED * _GRADED * lo):
        return None
    try:
        return np.linalg.svd(a, compute_uv=False)
    except np.linalg.LinAlgError:  # gesdd did not converge: the sweeps will
        return None
