"""det, slogdet, inverse and solve of batches of 2x2, 3x3 and 4x4 matrices by closed forms:
one numba pass over the batch (linalg/_small_kernels.py) instead of one LAPACK call per
matrix (numpy's gufunc loop costs ~0.4 us a matrix: 100 us for 256 3x3 inverses, where
torch takes 40). The kernel says which matrices the closed form may not get to LAPACK's
accuracy (ill-conditioned or singular ones); LAPACK redoes those, and raises its errors.

Recorded for higher orders, the cofactor matrix C (C_ij = (-1)^(i+j) times the minor
without row i and column j) is written as a sum of products read from tables:
C_ij = sum_t s_t A[p_t] M[q_t], each minor of order n - 1 expanded along its first row into
entries A[p] and minors M of order n - 2 (the number 1 for n = 2, the entries for n = 3,
2x2 minors for n = 4). The same lines run on Tensors (indexing, products and sums
only), so a backward written with them differentiates again: d det(A) = sum C * dA holds at
singular matrices too.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from .._kernel_registry import kernels
from . import _threads

if TYPE_CHECKING:
    from ..tensor import Tensor

SIZES = (2, 3, 4)
_PER_THREAD = 16384  # matrices; fewer are not worth a helper thread (~10-50 us of work)
# the kernel's unused operands, by dtype
_NONES: dict[str, np.ndarray] = {c: np.zeros((1, 1, 1), c) for c in "fd"}


@functools.cache
def _tables(n: int, dtype: str) -> tuple[np.ndarray, ...]:
    """(p, q, s), each (n * n, n - 1) (s with a trailing 1, of ``dtype``):
    C.flat[k] = sum_t s[k, t] A.flat[p[k, t]] M[q[k, t]], M the minors of order n - 2
    these use; then, for n = 4, (r0c0, r1c1, r0c1, r1c0): the entries each 2x2 minor of M
    is formed from (for n = 3, the entries M is)."""
    sets = list(itertools.combinations(range(n), n - 2))
    pairs = [(r, c) for r in sets for c in sets]  # every minor of order n - 2
    p, q, s = [], [], []
    for i, j in itertools.product(range(n), repeat=2):
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
    if isinstance(a, np.ndarray):
        return _run(a, COFACTOR)[1]
    b, n = a.shape[0], a.shape[-1]
    return _cofactors(a.reshape(b, -1).mT, n).mT.reshape(b, n, n)


def det(a: np.ndarray) -> np.ndarray:
    """det of each matrix of a (b, n, n), in a's dtype."""
    d, _, rough = _run(a, DET)
    if rough is not None:
        d[rough] = np.linalg.det(a[rough])
    return d.astype(a.dtype, copy=False)


def slogdet(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sign, log|det|) of each matrix of a (b, n, n), in a's dtype (det is float64 here:
    it over- or underflows only where the kernel hands the matrix to LAPACK)."""
    d, _, rough = _run(a, DET)
    with np.errstate(divide="ignore"):
        sign, logabs = np.sign(d), np.log(np.abs(d))
    nan = np.isnan(sign)  # (LAPACK's sign, 1, where A has a NaN)
    if nan.any():
        rough = nan if rough is None else rough | nan
    if rough is not None:
        sign[rough], logabs[rough] = np.linalg.slogdet(a[rough])
    return sign.astype(a.dtype, copy=False), logabs.astype(a.dtype, copy=False)


def inv(a: np.ndarray) -> np.ndarray | None:
    """A^-1 of each matrix of a (b, n, n); None when LAPACK finds one singular (the caller's
    LAPACK call then raises torch's error for it)."""
    _, out, rough = _run(a, INV)
    return out if rough is None else _redo(out, rough, np.linalg.inv, a)


def solve(a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """A^-1 B for a (m, n, n) and b (m, n, k) of a's dtype; None where inv gives None."""
    _, out, rough = _run(a, SOLVE, b)
    return out if rough is None else _redo(out, rough, np.linalg.solve, a, b)


DET, INV, SOLVE, COFACTOR = range(4)  # the kernel's modes (_small_kernels: not imported
_KERNELS = {"f": "closed_float32", "d": "closed_float64"}  # before its first use)


def _run(a: np.ndarray, mode: int, b: np.ndarray | None = None
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The kernel on a (m, n, n) (and b): (det float64, out, where LAPACK should redo, as a
    mask, or None where nowhere)."""
    m = a.shape[0]
    none = _NONES[a.dtype.char]
    d, rough = np.empty(m), np.empty(m, np.uint8)
    out = none if mode == DET else \
        np.empty((m, a.shape[1], a.shape[1] if b is None else b.shape[2]), a.dtype)
    if b is None or mode == DET:
        b = none
    kernel = getattr(kernels("small"), _KERNELS[a.dtype.char])
    if m < 2 * _PER_THREAD:
        count = kernel(a, b, mode, d, out, rough)
    else:
        count = _split(kernel, a, b, mode, d, out, rough, none)
    return d, out, (rough.view(bool) if count else None)


def _split(kernel: Callable, a: np.ndarray, b: np.ndarray, mode: int, d: np.ndarray,
           out: np.ndarray, rough: np.ndarray, none: np.ndarray) -> int:
    """kernel on a large batch, in parts over the threads (it releases the GIL)."""
    threads = min(_threads.num_threads(), a.shape[0] // _PER_THREAD)
    cuts = np.linspace(0, a.shape[0], threads + 1).astype(int)
    parts = [(slice(i, j),) for i, j in zip(cuts[:-1], cuts[1:])]
    return sum(_threads.run(lambda s: kernel(
        a[s], b if b is none else b[s], mode, d[s], out if out is none else out[s], rough[s]),
        parts, threads))


def _redo(out: np.ndarray, rough: np.ndarray, lapack: Callable, a: np.ndarray,
          *rest: np.ndarray) -> np.ndarray | None:
    """out with LAPACK's results where rough; None where LAPACK raises."""
    try:
        out[rough] = lapack(a[rough], *(r[rough] for r in rest))
    except np.linalg.LinAlgError:
        return None
    return out


def _cofactors(cols: Tensor, n: int) -> Tensor:
    """C.flat of each matrix, (n * n, b), from the columns (n * n, b) of the batch: every
    operation runs over the batch in one long loop."""
    p, q, s, *ends = _tables(n, cols._array.dtype.char)
    terms = cols[p]
    if n == 3:  # the minors of order 1 are entries
        terms = terms * cols[ends[0]][q]
    elif n == 4:  # the 2x2 minors (18 of the 36)
        e00, e11, e01, e10 = ends
        minors = cols[e00] * cols[e11] - cols[e01] * cols[e10]
        terms = terms * minors[q]
    return (terms * s).sum(1)


def fits(a: np.ndarray) -> bool:
    """Whether a (*, n, n) is for these closed forms: n in SIZES, float32 or float64 in the
    machine's byte order (the kernel reads its memory as that), and not empty."""
    n = a.shape[-1]
    return n in SIZES and a.size > 0 and a.dtype.char in "fd" and a.dtype.isnative


# det always answers; inv and solve give None where LAPACK raises.
_Out = TypeVar("_Out", np.ndarray, "np.ndarray | None", tuple[np.ndarray, np.ndarray])


def batched(fn: Callable[..., _Out], a: np.ndarray, b: np.ndarray | None = None) -> _Out:
    """fn (det, slogdet, inv or solve) on a (*, n, n) (and b (*, n, k)), batch dims
    broadcast: reshaped to one batch and back."""
    batch = a.shape[:-2]
    if b is None:
        if len(batch) == 1:
            return fn(a)
        if not batch:  # one matrix (its fixed cost matters: a view in and one out)
            return _one(fn(a[None]))
    elif b.shape[:-2] == batch:
        if len(batch) == 1:
            return fn(a, b)
        if not batch:
            return _one(fn(a[None], b[None]))
    else:  # (broadcast_shapes: ~1 us)
        batch = np.broadcast_shapes(batch, b.shape[:-2])
    flat = [(x if x.shape[:-2] == batch else np.broadcast_to(x, batch + x.shape[-2:]))
            .reshape(-1, *x.shape[-2:]) for x in ((a,) if b is None else (a, b))]
    out = fn(*flat)
    if out is None:
        return None
    if isinstance(out, tuple):
        return tuple(o.reshape(batch + o.shape[1:]) for o in out)  # type: ignore[return-value]
    return out.reshape(batch + out.shape[1:])


def _one(out: Any) -> Any:
    """A batch of one, out of fn, as its matrix (det: a 0-d array)."""
    if out is None or not isinstance(out, tuple):
        return None if out is None else out.reshape(out.shape[1:])
    return tuple(o.reshape(o.shape[1:]) for o in out)
