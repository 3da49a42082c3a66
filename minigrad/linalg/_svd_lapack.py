"""Singular values alone of one float64 matrix whose columns and rows are not graded:
LAPACK's gesdd (numpy's SVD without vectors), 1.2-3x faster than the Jacobi sweeps, for no
loss against Jacobi's accuracy bound.

Jacobi's one-sided sweeps return s_j to a relative error ~eps min(cond(A D^-1),
cond(R^-1 A)), D = A's column norms, R its row norms (Demmel and Veselic; the sweeps'
right rotations never mix rows, so row scaling costs them nothing either); gesdd to an
absolute one, ~eps s_1. Where the column norms (of the tall orientation) lie within a
factor _GRADED of each other, cond(A D^-1) >= cond(A) / _GRADED = s_1 / (s_n _GRADED) >=
s_1 / (s_j _GRADED); likewise for the non-zero rows, or where cond(A) <= _GRADED itself.
So gesdd's bound is within a factor _GRADED of Jacobi's for every s_j: the standard the
Gram start keeps (_svd_gram.py, whose gate (b) is this one's sibling).

Graded input (a tensor network's corner, whose column norms spread over 1e11; weighted
rows) keeps the sweeps, whose relative accuracy is there real (graded over 14 decades: the
sweeps' values 1e-15 off, gesdd's 1e-3); so do batches (the batch kernels are the faster),
float32 and float16 input (computed by the sweeps in float64 to float32's tolerance, the
rounding their backward's tie tests are set against), and a call that sets tol or
max_sweeps (which tune the sweeps). A singular matrix's null values are gesdd's rounding,
~eps s_1, as numpy's and torch's, where the sweeps (with a gradient) may settle them to
exact zeros: cond is then ~1e16 without a gradient, inf with one. (Refusing such a result
for the sweeps, a first mend, cost rank-deficient input 1.13-1.47x its old time.)

Measured against svd_forward's Jacobi paths (one thread, medians of interleaved repeats,
random input): 0.75-0.82x at 5 x 5 and 8 x 8, 0.33-0.70x from 12 x 12 to 300 x 300 (robust
PCA's 60 x 40: 0.41x, 247 -> ~92 us). With vectors gesdd was 0.8-0.93x on random square
input from k = 48, but 1.01x on robust PCA's 60 x 40 iterates (the sweeps converge faster
on them), 1.0-1.24x below k = 40 and 1.04-1.5x on shapes 2:1 and taller: an SVD with
vectors keeps the sweeps.
"""

import math

import numpy as np

from minigrad.linalg import _memory
from minigrad.linalg._svd_gram import _GRADED, _SLACK

# From this k (below it the lanes kernels), up to this many entries (gesdd takes a copy
# of A and a workspace of a few more; beyond, the sweeps' leaner footprint on A itself).
_MIN_K = 5
_MAX_ENTRIES = 1 << 22


def lapack_eligible(m: int, n: int) -> bool:
    """Whether the values of an m x n matrix are in the sizes gesdd takes (see above)."""
    return min(m, n) >= _MIN_K and m * n <= _MAX_ENTRIES


def lapack_values(a: np.ndarray) -> np.ndarray | None:
    """The singular values of one float64 a (descending) by gesdd, or None where a's
    columns or rows are graded (or a column of the tall orientation is zero), where a is
    not finite, where gesdd's workspace might not fit (the sweeps' path refuses with the
    project's error), or where gesdd fails to converge."""
    x = a if a.shape[0] >= a.shape[1] else a.T
    amax = float(max(x.max(), -x.min()))  # (NaN propagates)
    if not 0.0 < amax < np.inf:
        return None
    # scaled by a power of two (exact) to a largest entry in [0.5, 1): no square overflows,
    # and a row whose square underflows is below 1e-154 of it, which no graded row of
    # consequence is (found in review: at 1e-155, rows 1e8 smaller passed as zero rows)
    e = math.frexp(amax)[1]
    y = x * math.ldexp(1.0, -e) if abs(e) < 1000 else np.ldexp(x, -e)  # (2^-e normal)
    if not _flat(np.einsum("ij,ij->j", y, y)) or not _memory.fits(2.0 * a.nbytes + _SLACK):
        return None
    try:
        s = np.linalg.svd(a, compute_uv=False)
    except np.linalg.LinAlgError:  # gesdd did not converge: the sweeps will
        return None
    # Graded rows: the sweeps, unless cond(A) <= _GRADED itself, which bounds cond(R^-1 A)
    # from below as well (plain tall-skinny input, whose row norms spread widely: 500 x 5
    # Gaussian rows were refused 38% of the time by the rows' gate alone).
    if s[0] <= _GRADED * s[-1]:
        return s
    rows = np.einsum("ij,ij->i", y, y)
    return s if _flat(rows[rows > 0.0]) else None  # (zero rows: in neither bound)


def _flat(d: np.ndarray) -> bool:
    """Whether the squared norms d are positive and within _GRADED^2."""
    lo, hi = float(d.min()), float(d.max())
    return 0.0 < lo and hi <= _GRADED * _GRADED * lo
