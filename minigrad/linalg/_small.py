"""det, inverse and solve of batches of 2x2, 3x3 and 4x4 matrices by closed forms: a few
whole-batch numpy operations instead of one LAPACK call per matrix (numpy's gufunc loop
costs ~0.4 us a matrix: 100 us for 256 3x3 inverses, where torch takes 40).

The cofactor matrix C (C_ij = (-1)^(i+j) times the minor without row i and column j) is
written as a sum of products read from tables: C_ij = sum_t s_t A[p_t] M[q_t], each minor
of order n - 1 expanded along its first row into entries A[p] and minors M of order n - 2
(the number 1 for n = 2, the entries for n = 3, the 36 2x2 minors for n = 4). Then
det A = sum_j A_0j C_0j and A^-1 = C^T / det A. The same lines run on ndarrays and on
Tensors (indexing, products and sums only), so a backward written with them differentiates
again: d det(A) = sum C * dA holds at singular matrices too.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

_add_reduce, _mul_reduce = np.add.reduce, np.multiply.reduce
SIZES = (2, 3, 4)
# The expansion's terms are as large as prod_i |row_i|; det A is smaller by Hadamard's
# ratio h = |det A| / prod_i |row_i| (1 for orthogonal rows, ~1 / cond A), so cancellation
# costs it ~eps / h of relative accuracy (LAPACK's pivoted LU: ~eps cond A). Matrices with
# h below this go to LAPACK: at most ~1e-12 lost in float64 (float32 is computed in float64).
_H_MIN = 1e-4


@functools.cache
def _tables(n: int, count: int, dtype: str) -> tuple[np.ndarray, ...]:
    """(p, q, s), each (count, n - 1) (s with a trailing 1, of ``dtype``):
    C.flat[k] = sum_t s[k, t] A.flat[p[k, t]] M[q[k, t]] for k < count, M the minors of
    order n - 2 these use; then, for n = 4, (r0c0, r1c1,
    r0c1, r1c0): the entries each 2x2 minor of M is formed from (for n = 3, the entries M
    is)."""
    sets = list(itertools.combinations(range(n), n - 2))
    pairs = [(r, c) for r in sets for c in sets]  # every minor of order n - 2
    p, q, s = [], [], []
    for i, j in list(itertools.product(range(n), repeat=2))[:count]:
        rows = [r for r in range(n) if r != i]
        cols = [c for c in range(n) if c != j]
        p.append([rows[0] * n + c for c in cols])
        q.append([pairs.index((tuple(rows[1:]), tuple(cols[:k] + cols[k + 1:])))
                  for k in range(n - 1)])
        s.append([(-1) ** (i + j + k) for k in range(n - 1)])
    used = sorted({m for row in q for m in row})
    q = [[used.index(m) for m in row] for row in q]
    corners = {2: [], 3: [(0, 0)], 4: [(0, 0), (1, 1), (0, 1), (1, 0)]}[n]
    ends = [np.array([pairs[m][0][a] * n + pairs[m][1][b] for m in used], np.intp)
            for a, b in corners]
    return (np.array(p, np.intp), np.array(q, np.intp), np.array(s, dtype)[:, :, None], *ends)


def cofactor(a: Any) -> Any:
    """C of each matrix of a (b, n, n), n in SIZES, an ndarray or a Tensor: (b, n, n)."""
    b, n = a.shape[0], a.shape[-1]
    c = _cofactors(_columns(a), n, n * n)
    if isinstance(a, np.ndarray):
        return c.T.reshape(b, n, n).astype(a.dtype, copy=False)
    return c.mT.reshape(b, n, n)


def det(a: np.ndarray) -> np.ndarray:
    """det of each matrix of a (b, n, n): its first row against that row's cofactors."""
    n = a.shape[-1]
    cols = _columns(a)
    d = _add_reduce(cols[:n] * _cofactors(cols, n, n), 0)
    rough = _rough(cols, d, n)
    if rough.any():
        d[rough] = np.linalg.det(a[rough])
    return d.astype(a.dtype, copy=False)


def inv(a: np.ndarray) -> np.ndarray | None:
    """A^-1 of each matrix of a (b, n, n); None when LAPACK finds one singular (the caller's
    LAPACK call then raises torch's error for it)."""
    ai = _inverse_columns(a)
    return None if ai is None else np.ascontiguousarray(ai.transpose(2, 0, 1), a.dtype)


def solve(a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """A^-1 B for a (m, n, n) and b (m, n, k); None where inv gives None."""
    ai = _inverse_columns(a)
    if ai is None:
        return None
    x = (ai[:, :, None, :] * b.transpose(1, 2, 0)[None]).sum(1)
    return np.ascontiguousarray(x.transpose(2, 0, 1), a.dtype)


def _inverse_columns(a: np.ndarray) -> np.ndarray | None:
    """A^-1 as (n, n, b) in float64, or None (see inv)."""
    n = a.shape[-1]
    cols = _columns(a)
    c = _cofactors(cols, n, n * n)
    d = _add_reduce(cols[:n] * c[:n], 0)
    rough = _rough(cols, d, n)
    if rough.any():
        d[rough] = 1.0  # those columns are LAPACK's, below
    out = c.reshape(n, n, -1).transpose(1, 0, 2) / d  # C^T / det
    if rough.any():
        try:
            out[:, :, rough] = np.linalg.inv(a[rough]).transpose(1, 2, 0)
        except np.linalg.LinAlgError:
            return None
    return out


def _rough(cols: np.ndarray, d: np.ndarray, n: int) -> np.ndarray:
    """Where the expansion may have lost too much to cancellation (see _H_MIN), or the
    matrix is singular: those are LAPACK's."""
    rows = _mul_reduce(_add_reduce((cols * cols).reshape(n, n, -1), 1), 0)  # prod |row_i|^2
    return d * d <= _H_MIN ** 2 * rows  # a zero det too; NaN is kept (its result is NaN)


def _columns(a: Any) -> Any:
    """a (b, n, n) as (n * n, b): a column per matrix, so that every operation below runs
    over the batch in one long loop (a row per matrix would loop over n entries only).
    An ndarray is taken to float64: float32 input then keeps its own precision."""
    flat = a.reshape(a.shape[0], -1)
    return np.array(flat.T, np.float64, order="C") if isinstance(a, np.ndarray) else flat.mT


def _cofactors(cols: Any, n: int, count: int) -> Any:
    """The first ``count`` entries of C.flat of each matrix, (count, b), from _columns."""
    dtype = cols.dtype if isinstance(cols, np.ndarray) else cols._array.dtype
    p, q, s, *ends = _tables(n, count, dtype.char)
    terms = cols[p]
    if n == 3:  # the minors of order 1 are entries
        terms = terms * cols[ends[0]][q]
    elif n == 4:  # the 2x2 minors (36 for C, 6 for its first row)
        e00, e11, e01, e10 = ends
        minors = cols[e00] * cols[e11] - cols[e01] * cols[e10]
        terms = terms * minors[q]
    return (terms * s).sum(1)


def fits(a: np.ndarray, least: int = 32) -> bool:
    """Whether a (*, n, n) is for these closed forms: n in SIZES, float32 or float64, and
    at least ``least`` matrices (fewer: LAPACK's fixed cost is the smaller one)."""
    n = a.shape[-1]
    return n in SIZES and a.size >= max(least, 1) * n * n and a.dtype.char in "fd"


# det always answers; inv and solve give None where the closed form is not safe.
_Out = TypeVar("_Out", np.ndarray, "np.ndarray | None")


def batched(fn: Callable[..., _Out], a: np.ndarray, *rest: np.ndarray) -> _Out:
    """fn (det, inv or solve) on a (*, n, n) and the rest (*, n, k), batch dims broadcast:
    reshaped to one batch and back."""
    batch = np.broadcast_shapes(a.shape[:-2], *(r.shape[:-2] for r in rest)) if rest \
        else a.shape[:-2]
    flat = [(x if x.shape[:-2] == batch else np.broadcast_to(x, batch + x.shape[-2:]))
            .reshape(-1, *x.shape[-2:]) for x in (a, *rest)]
    out = fn(*flat)
    if out is None:
        return None
    return out.reshape(batch + out.shape[1:])
