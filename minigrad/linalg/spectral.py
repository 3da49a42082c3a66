"""The functions defined by singular values (or eigenvalues): pinv, lstsq, matrix_rank, cond.

Where every singular value is kept (full rank after the cutoff) the pseudo-inverse and the
least-squares solution are smooth functions of A, computed through QR (no ties to worry
about); where some are cut, they are built on mg.linalg.svd (or eigh when hermitian) with
the cut ones masked to zero, and inherit those backwards. Tolerances follow torch: a
singular value is kept when s > max(atol, rtol * s_max), rtol defaulting to
eps * max(m, n) unless atol > 0 is given.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..autograd.function import Context, Function, make_tensor
from ..dtypes import real_of
from ..functions import where
from ..tensor import Tensor
from ._checks import adjoint, batch_prefix, check_matrix, check_tensor, half_as_float
from ._complex_forward import any_eigh_forward
from ._groups import by_group
from ._lapack_info import lu_info
from ._sym import from_triangle
from .eigh import eigh
from .errors import LinAlgError
from .norms import matrix_norm
from .qr import qr
from .solve import inv, solve_triangular
from .svd import svd, svdvals


def _values(a: np.ndarray, hermitian: bool) -> np.ndarray:
    """Singular values of each matrix of a (*, m, n), descending (|eigenvalues| if hermitian)."""
    if hermitian:
        w = any_eigh_forward(a, True, False)[0]
        return -np.sort(-np.abs(w), axis=-1)
    return np.linalg.svd(a, compute_uv=False)


def _as_array(x: Any, dtype: Any) -> np.ndarray:
    return np.asarray(x._array if isinstance(x, Tensor) else x, dtype=dtype)


def _cutoff(s_max: np.ndarray, atol: Any, rtol: Any, m: int, n: int) -> np.ndarray:
    """max(atol, rtol * s_max) per matrix (atol and rtol broadcast over the batch)."""
    dt = s_max.dtype
    a = np.zeros((), dt) if atol is None else _as_array(atol, dt)
    if rtol is None:
        default = np.finfo(dt).eps * max(m, n)
        r = np.where(a > 0, 0.0, default).astype(dt) if atol is not None else np.asarray(default)
    else:
        r = _as_array(rtol, dt)
    return np.maximum(a, r * s_max)


def _flat(A: Tensor) -> tuple[Tensor, tuple]:
    batch = A.shape[:-2]
    return A.reshape(-1, *A.shape[-2:]), batch


@half_as_float
def pinv(A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False) -> Tensor:
    """The Moore-Penrose pseudo-inverse (*, n, m) of A (*, m, n): V diag(1/s) U^T over the
    kept singular values; ``hermitian`` reads A's lower triangle and uses its eigenvalues.

    >>> mg.linalg.pinv(mg.tensor([[1.0, 0.0], [0.0, 0.0]]))
    tensor([[1., 0.],
            [0., 0.]])
    """
    check_matrix(A, "linalg.pinv", square=hermitian, complex_ok=True)
    m, n = A.shape[-2:]
    if A.numel() == 0:
        return _empty_pinv(A)
    flat, batch = _flat(A)
    s = _values(flat._array, hermitian)
    cut = np.broadcast_to(_cutoff(s[..., 0].reshape(batch), atol, rtol, m, n), batch)
    cut = cut.reshape(-1)
    full = (s > cut[:, None]).all(-1)

    def part(Ag: Tensor, is_full: bool, idx: np.ndarray) -> Tensor:
        if is_full:
            return _pinv_full(Ag, hermitian)
        return _pinv_cut(Ag, cut[idx], hermitian)

    return by_group(flat, np.asarray(full), part).reshape(*batch, n, m)


def _empty_pinv(A: Tensor) -> Tensor:
    """pinv of an empty A: zeros (*, n, m), written as a function of A so that a backward
    reaches A (with a zero gradient), as in torch."""
    return A.mT * 0.0


def _pinv_full(A: Tensor, hermitian: bool) -> Tensor:
    """pinv where no singular value is cut: R^-1 Q^T from A = QR (A^T = QR when wide)."""
    if hermitian:
        return inv(from_triangle(A))
    m, n = A.shape[-2:]
    if m >= n:
        Q, R = qr(A)
        return solve_triangular(R, adjoint(Q), upper=True)
    Q, R = qr(adjoint(A))
    return adjoint(solve_triangular(R, adjoint(Q), upper=True))


def _pinv_cut(A: Tensor, cut: np.ndarray, hermitian: bool) -> Tensor:
    if hermitian:
        L, U = eigh(A)
        w = _inverse_kept(L, np.abs(L._array) > cut[:, None])
        return (U * w.unsqueeze(-2)) @ adjoint(U)
    U, S, Vh = svd(A, full_matrices=False)
    w = _inverse_kept(S, S._array > cut[:, None])
    return (adjoint(Vh) * w.unsqueeze(-2)) @ adjoint(U)


def _inverse_kept(s: Tensor, keep: np.ndarray) -> Tensor:
    """1/s where kept, exactly 0 elsewhere (so the cut part gets exactly zero cotangent)."""
    k = make_tensor(keep)
    return where(k, 1.0 / where(k, s, 1.0), 0.0)


@half_as_float
def matrix_rank(A: Tensor, tol: Any = None, hermitian: bool = False, *, atol: Any = None,
                rtol: Any = None) -> Tensor:
    """The number of singular values above max(atol, rtol * s_max), int64 (*); ``tol`` is
    torch's older name for atol (with rtol = 0).

    >>> mg.linalg.matrix_rank(mg.tensor([[1.0, 2.0], [2.0, 4.0]]))
    tensor(1)
    """
    check_tensor(A, "linalg.matrix_rank")
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at "
                           "least 2 dimensions.")
    check_matrix(A, "linalg.matrix_rank", square=hermitian, complex_ok=True)
    if tol is not None:
        if atol is not None or rtol is not None:
            raise TypeError("linalg.matrix_rank() takes either tol (torch's older name for "
                            "atol, with rtol = 0) or atol / rtol, not both")
        atol, rtol = tol, 0.0
    m, n = A.shape[-2:]
    batch = A.shape[:-2]
    if min(m, n) == 0:
        return make_tensor(np.zeros(batch, np.int64))
    s = _values(A._array.reshape(-1, m, n), hermitian).reshape(batch + (min(m, n),))
    cut = _cutoff(s[..., 0], atol, rtol, m, n)
    return make_tensor(np.asarray(np.count_nonzero(s > cut[..., None], axis=-1), np.int64))


class _Undefined(Function):
    """A value without a derivative (cond's inf at a singular matrix, its 0 / 0 = nan at the
    zero matrix): a loss that uses it has no gradient there, so its backward raises (zeros
    where the loss does not use it)."""

    @staticmethod
    def forward(ctx: Context, x: Tensor, value: float, why: str) -> np.ndarray:
        ctx.why, ctx.shape = why, x.shape
        return np.full(x.shape[:1], value, x.dtype)

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> tuple:
        if np.any(g._array != 0):
            raise LinAlgError(ctx.why)
        return make_tensor(np.zeros(ctx.shape, g.dtype)), None, None


_REGULAR, _SINGULAR, _ZERO = 0, 1, 2
_COND_WHY = {_SINGULAR: "the matrix is singular, so its condition number is infinite",
             _ZERO: "the matrix is zero, so its condition number is 0 / 0 (nan)"}


def _cond_undefined(x: Tensor, kind: int) -> Tensor:
    why = f"linalg.cond backward: {_COND_WHY[kind]} and has no gradient."
    return _Undefined.apply(x, np.inf if kind == _SINGULAR else np.nan, why)


@half_as_float
def cond(A: Tensor, p: Any = None) -> Tensor:
    """The condition number ||A|| ||A^-1|| in the norm p (default 2: s_max / s_min, for any
    shape; -2 is s_min / s_max); inf for a singular matrix, and nan for the zero matrix in
    the norms made of singular values (2, -2, "nuc": 0 / 0), as torch. (As torch's too, a
    singular matrix's s_min may come out as rounding rather than 0, cond then ~1e16: the
    values of one float64 matrix without a gradient are gesdd's, _svd_lapack.py.)

    >>> mg.linalg.cond(mg.tensor([[2.0, 0.0], [0.0, 0.5]]))
    tensor(4.)
    """
    check_matrix(A, "linalg.cond", complex_ok=True)
    # No matrix, or empty ones: 0, as torch, from A so that a backward reaches it (with 0)
    empty = (A * 0.0).sum((-2, -1)) if A.numel() == 0 else None
    if p in (None, 2, -2):
        if empty is not None:
            return empty
        s = svdvals(A)
        flat = s.reshape(-1, s.shape[-1])
        sv = flat._array
        kinds = np.where(sv[:, 0] == 0, _ZERO, np.where(sv[:, -1] == 0, _SINGULAR, _REGULAR))

        def ratio(sg: Tensor, kind: int, _idx: np.ndarray) -> Tensor:
            if kind == _SINGULAR and p == -2:
                return sg[:, -1] * 0.0  # s_min / s_max = 0: smooth in s_min, here 0
            if kind != _REGULAR:
                return _cond_undefined(sg, kind)
            return sg[:, 0] / sg[:, -1] if p != -2 else sg[:, -1] / sg[:, 0]

        return by_group(flat, kinds, ratio).reshape(*A.shape[:-2])
    if p not in ("fro", "nuc", 1, -1, float("inf"), float("-inf")):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, but "
                           f"they are {A.shape[-2]} by {A.shape[-1]} matrices")
    if empty is not None:
        return empty
    flat, batch = _flat(A)
    a = flat._array
    kinds = np.where(lu_info(a) > 0, _SINGULAR, _REGULAR)
    if p == "nuc":  # sum(s) sum(1 / s) = 0 inf at the zero matrix
        kinds[~a.reshape(a.shape[0], -1).any(-1)] = _ZERO

    def part(Ag: Tensor, kind: int, _idx: np.ndarray) -> Tensor:
        if kind != _REGULAR:
            return _cond_undefined(Ag, kind)
        return matrix_norm(Ag, p) * matrix_norm(inv(Ag), p)

    return by_group(flat, kinds, part).reshape(*batch)


class LstsqResult(NamedTuple):
    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


@half_as_float
def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *,
          driver: str | None = None) -> LstsqResult:
    """The minimum-norm X minimising ||A X - B||_F for A (*, m, n), B (*, m, k) or (*, m),
    singular values below rcond * s_max (default eps * max(m, n)) treated as zero (``gels``
    assumes full rank); batches broadcast. As torch: residuals ||A X - B||^2 per column only
    when m > n, every A has full rank and the driver is not gelsy; rank unless gels; the
    singular values for gelsd and gelss. Differentiable through the solution and residuals.

    >>> mg.linalg.lstsq(mg.tensor([[1.0], [1.0]]), mg.tensor([[1.0], [3.0]])).solution
    tensor([[2.]])
    """
    check_matrix(A, "torch.linalg.lstsq", complex_ok=True)
    check_tensor(B, "torch.linalg.lstsq", "B")
    driver = "gelsy" if driver is None else driver
    if driver not in _DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of "
                           "(gels, gelsy, gelsd, gelss)")
    if not 0 <= A.ndim - B.ndim <= 1:
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to "
                           "other.dim() and (input.dim() - other.dim()) <= 1")
    vector = B.ndim == A.ndim - 1
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.ndim < 2 or Bm.shape[-2] != A.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    m, n = A.shape[-2:]
    k = Bm.shape[-1]
    for name, M in (("A", A), ("B", Bm)):
        _check_finite(M._array, name)
    own = A.shape[:-2]  # rank and singular values describe A, in A's own batch (as torch)
    batch = np.broadcast_shapes(own, Bm.shape[:-2])
    dt = A.dtype
    a = A._array.reshape(int(np.prod(own, dtype=np.int64)), m, n)
    s = np.linalg.svd(a, compute_uv=False) if a.size else np.zeros((a.shape[0], min(m, n)), dt)
    tol = (np.finfo(dt).eps * max(m, n) if rcond is None else rcond) * s[:, :1]
    rank = np.count_nonzero(s > tol, axis=-1)
    nb = int(np.prod(batch, dtype=np.int64))
    Af = A.expand(*batch, m, n).reshape(nb, m, n)
    Bf = Bm.expand(*batch, m, k).reshape(nb, m, k)
    if a.size == 0 or Bf.shape[0] == 0:
        X = _empty_pinv(Af) @ Bf  # zeros (nb, n, k) even when n * k > 0, from A and B
    else:
        tol_b = np.broadcast_to(tol.reshape(own + (1,)), batch + (1,)).reshape(-1, 1)
        rank_b = np.broadcast_to(rank.reshape(own), batch).reshape(-1)
        full = (rank_b == min(m, n)) | (driver == "gels")

        def part(Ag: Tensor, is_full: bool, idx: np.ndarray) -> Tensor:
            Bg = Bf if idx.size == Bf.shape[0] else Bf[make_tensor(idx)]
            if is_full:
                return _lstsq_full(Ag, Bg)
            U, S, Vh = svd(Ag, full_matrices=False)
            w = _inverse_kept(S, S._array > tol_b[idx])
            return adjoint(Vh) @ ((adjoint(U) @ Bg) * w.unsqueeze(-1))

        X = by_group(Af, full, part)
    empty = make_tensor(np.zeros((0,), real_of(dt)))
    res = empty
    if m > n and driver != "gelsy" and nb and bool(np.all(rank == n)):
        r = Af @ X - Bf
        res = (r.abs() ** 2 if r.is_complex() else r ** 2).sum(-2).reshape(*batch, k)
    X = X.reshape(*batch, n, k)
    rk = (make_tensor(np.asarray(rank.reshape(own), np.int64)) if driver != "gels"
          else make_tensor(np.zeros((0,), np.int64)))
    sv = (make_tensor(s.reshape(own + (min(m, n),)).astype(real_of(dt)))
          if driver in ("gelsd", "gelss") else empty)
    return LstsqResult(X.squeeze(-1) if vector else X, res, rk, sv)


def _check_finite(a: np.ndarray, name: str) -> None:
    """LinAlgError for NaN or Inf in a (*, m, k), naming the first such matrix: as svd and
    eigh refuse them (torch's LAPACK drivers stop on an illegal value)."""
    if a.size == 0 or np.isfinite(a).all():
        return
    bad = ~np.isfinite(a).reshape(-1, a.shape[-2] * a.shape[-1]).all(-1)
    b = int(np.flatnonzero(bad)[0])
    raise LinAlgError(f"torch.linalg.lstsq: {batch_prefix(a.shape[:-2], b)}the input {name} is "
                      "not finite (contains NaN or Inf)")


def _lstsq_full(A: Tensor, B: Tensor) -> Tensor:
    """min ||A X - B|| for full-rank A by QR: R^-1 Q^H B (tall), Q R^-H B (wide)."""
    m, n = A.shape[-2:]
    if m >= n:
        Q, R = qr(A)
        return solve_triangular(R, adjoint(Q) @ B, upper=True)
    Q, R = qr(adjoint(A))
    return Q @ solve_triangular(adjoint(R), B, upper=False)


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """torch.pinverse: pinv with rtol = rcond.

    >>> mg.pinverse(mg.tensor([[2.0, 0.0], [0.0, 0.0]]))
    tensor([[0.5, 0. ],
            [0. , 0. ]])
    """
    return pinv(input, rtol=rcond)
