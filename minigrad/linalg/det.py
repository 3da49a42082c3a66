"""det, slogdet and logdet (torch.linalg names), with gradients of every order.

d det(A) = tr(adj(A) dA). The usual det(A) A^-T is adj(A)^T only where A is invertible; at a
singular A it is 0 * inf. So det keeps that form only for well-conditioned matrices, and
writes the others exactly as det(A) = sigma det(B11) det(B22 - B21 B11^-1 B12) with
B = U^T A V for the (constant) singular vectors U, V of A at the point, sigma = det(U) det(V),
and B11 the block of the singular values above sqrt(eps) s_1. B11 is well conditioned and
the Schur complement is small; it is handled the same way, recursively, down to the exactly
zero matrix, whose determinant is expanded in full. Every step is an identity in A, so the
derivatives of every order are those of det itself: the adjugate at rank n - 1, its own
derivatives at rank n - 2, and so on.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..autograd.function import Context, Function, make_tensor
from ..autograd.grad_mode import _state, is_grad_enabled
from ..tensor import Tensor
from . import _small
from ._checks import adjoint, batch_prefix, check_matrix, half_as_float
from ._groups import by_group
from .errors import LinAlgError
from .solve import inv, solve

_EXPAND_MAX = 6  # the zero matrix up to this size is expanded in full (2^n terms)


class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


class _Det(Function):
    """det(A) for invertible A; gA = g conj(det A) A^-H (g det(A) A^-T when real; written
    with det and inv: any order)."""

    @staticmethod
    def forward(ctx: Context, A: Tensor) -> Tensor:
        out = make_tensor(np.asarray(np.linalg.det(A._array)))
        ctx.save_for_backward(A, out)
        return out

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> tuple:
        A, d = ctx.saved_tensors
        return (g * d.conj()).unsqueeze(-1).unsqueeze(-1) * adjoint(inv(A)),


class _SmallDet(Function):
    """det(A) for 2x2 to 4x4 by cofactors; gA = g C(A), the cofactor matrix: exact at
    singular A too, and written with Tensor ops when recorded, so every order follows."""

    _numpy_forward = True

    @staticmethod
    def forward(ctx: Context, A: Tensor) -> np.ndarray:
        ctx.save_for_backward(A)
        return _small.batched(_small.det, A._array)

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> tuple:
        (A,) = ctx.saved_tensors
        n = A.shape[-1]
        if not _state.enabled:  # a first-order walk: numpy alone
            c = _small.batched(_small.cofactor, A._array)
            return make_tensor(g._array[..., None, None] * c),
        c = _small.cofactor(A.reshape(-1, n, n)).reshape(A.shape)
        return g.unsqueeze(-1).unsqueeze(-1) * c,


@half_as_float
def det(A: Tensor) -> Tensor:
    """det(A) of each square matrix of A (*, n, n); its gradient is adj(A)^T, exact at
    singular matrices too.

    >>> mg.linalg.det(mg.tensor([[1.0, 2.0], [3.0, 4.0]]))
    tensor(-2.)
    """
    check_matrix(A, "linalg.det", square=True, complex_ok=True)
    recorded = A.requires_grad and is_grad_enabled()
    # 2x2 to 4x4: closed forms, whose gradient is exact anywhere (and so needs no test)
    if _small.fits(A._array):
        if not recorded:
            return make_tensor(_small.batched(_small.det, A._array))
        return _SmallDet.apply(A)
    if not recorded:
        return make_tensor(np.asarray(_lapack_det(A._array)))
    *batch, n, _ = A.shape
    if n == 0 or 0 in batch:
        return _Det.apply(A)
    if n == 1:
        return A[..., 0, 0]
    return _det(A.reshape(-1, n, n)).reshape(*batch)


def _lapack_det(a: np.ndarray) -> np.ndarray:
    """np.linalg.det(a), for float a already checked square: its gufunc called directly, as
    np.linalg.det calls it (the same numbers), without its checks and type resolution, a
    third of one small matrix's det."""
    if _gufunc_det is None or a.dtype.char not in "fd":
        return np.linalg.det(a)
    return _gufunc_det(a, signature="d->d").astype(a.dtype, copy=False)


_gufunc_det: np.ufunc | None
try:  # numpy's own LAPACK gufuncs (numpy 1.x and 2.x); without them, np.linalg.det
    from numpy.linalg import _umath_linalg

    _gufunc_det = _umath_linalg.det
except (ImportError, AttributeError):
    _gufunc_det = None


def _det(A: Tensor) -> Tensor:
    """det of the stack A (b, n, n), each matrix by the path its conditioning needs."""
    n = A.shape[-1]
    a = A._array
    eps = float(np.finfo(a.dtype).eps)
    with np.errstate(all="ignore"):
        try:
            ai = np.linalg.inv(a)
            cond = np.abs(a).sum(-2).max(-1) * np.abs(ai).sum(-2).max(-1)
            regular = cond * np.sqrt(eps) < 1
        except np.linalg.LinAlgError:
            regular = np.zeros(a.shape[0], bool)
    regular |= ~np.isfinite(a).all(axis=(-2, -1))  # NaN in, NaN out, as torch
    if regular.all():
        return _Det.apply(A)
    rank = np.full(a.shape[0], n)
    s = np.linalg.svd(a[~regular], compute_uv=False)
    rank[~regular] = np.count_nonzero(s > np.sqrt(eps) * s[:, :1], axis=-1)
    return by_group(A, rank, _det_of_rank)


def _det_of_rank(A: Tensor, r: int, _idx: np.ndarray) -> Tensor:
    n = A.shape[-1]
    if r == n:
        return _Det.apply(A)
    if r == 0:  # exactly zero matrices: every derivative below order n vanishes
        return _expand(A) if n <= _EXPAND_MAX else (A * 0.0).sum((-2, -1))
    u, _, vh = np.linalg.svd(A._array)
    sigma = np.linalg.det(u) * np.linalg.det(vh)  # +-1, or complex of modulus 1
    B = make_tensor(np.swapaxes(u, -1, -2).conj()) @ A @ make_tensor(np.swapaxes(vh, -1, -2).conj())
    B11, B12 = B[:, :r, :r], B[:, :r, r:]
    B21, B22 = B[:, r:, :r], B[:, r:, r:]
    schur = B22 - B21 @ solve(B11, B12)
    # The Schur complement is tiny: written through its inverse, its derivatives of order
    # above its size (zero) would be differences of terms of size 1 / |schur|. Expanded, they
    # are exact.
    d = _expand(schur) if n - r <= _EXPAND_MAX else _det(schur)
    if sigma.dtype.kind != "c":
        sigma = np.round(sigma)
    return make_tensor(sigma) * _Det.apply(B11) * d


def _expand(A: Tensor) -> Tensor:
    """det by expansion over the rows, keeping one partial sum per set of columns used
    (2^n terms, not n!): the polynomial itself, exact to every order."""
    n = A.shape[-1]
    partial: dict[int, Tensor | None] = {0: None}
    for k in range(n):
        nxt: dict[int, Tensor | None] = {}
        for used, val in partial.items():
            for j in range(n):
                if used >> j & 1:
                    continue
                term = A[:, k, j] if val is None else val * A[:, k, j]
                if bin(used >> (j + 1)).count("1") % 2:
                    term = -term
                key = used | 1 << j
                nxt[key] = term if key not in nxt else nxt[key] + term
        partial = nxt
    whole = partial[(1 << n) - 1]
    assert whole is not None  # n >= 1: every column used once
    return whole


class _Slogdet(Function):
    """(sign, log|det A|), d log|det A| = Re tr(A^-1 dA): gA = g A^-H. A real sign is
    piecewise constant; a complex one, e^(i theta) with d theta = Im tr(A^-1 dA), sends its
    gradient gs back as i Im(gs conj(sign)) A^-H."""

    @staticmethod
    def forward(ctx: Context, A: Tensor) -> tuple:
        a = A._array
        sign, logabs = _small.batched(_small.slogdet, a) if _small.fits(a) \
            else np.linalg.slogdet(a)
        sign, logabs = np.asarray(sign), np.asarray(logabs)
        ctx.singular = np.isneginf(logabs)
        ctx.set_materialize_grads(False)
        if sign.dtype.kind == "c":  # saved as the recorded output: differentiable again
            out = make_tensor(sign)
            ctx.save_for_backward(A, out)
            return out, make_tensor(logabs)
        ctx.save_for_backward(A)
        ctx.mark_non_differentiable(sign)
        return sign, logabs

    @staticmethod
    def backward(ctx: Context, gsign: Tensor | None, g: Tensor | None) -> tuple:
        A, *sign = ctx.saved_tensors
        if sign and gsign is not None:  # complex: the phase's part, purely imaginary
            phase = (gsign * sign[0].conj()).imag * 1j
            g = phase if g is None else g + phase
        if g is None:
            return None,
        if ctx.singular.any():
            b = int(np.flatnonzero(ctx.singular)[0])
            raise LinAlgError(
                f"linalg.slogdet backward: {batch_prefix(ctx.singular.shape, b)}the matrix is "
                "singular, so logabsdet = -inf and its gradient A^-T is infinite. For a loss "
                "built from det itself (sign * exp(logabsdet)) use mg.linalg.det, whose "
                "gradient at singular matrices is exact (the adjugate).")
        return g.unsqueeze(-1).unsqueeze(-1) * adjoint(inv(A)),


@half_as_float
def slogdet(A: Tensor) -> SlogdetResult:
    """(sign, log|det A|) of each square matrix of A, without over- or underflow; the sign
    gets no gradient, logabsdet's is A^-T (infinite at a singular A: LinAlgError there).

    >>> mg.linalg.slogdet(mg.tensor([[1.0, 2.0], [3.0, 4.0]])).sign
    tensor(-1.)
    """
    check_matrix(A, "linalg.slogdet", square=True, complex_ok=True)
    return SlogdetResult(*_Slogdet.apply(A))


@half_as_float
def logdet(A: Tensor) -> Tensor:
    """log det(A): nan where det(A) < 0, -inf where A is singular, as torch.logdet; for
    complex A, log|det A| + i arg det A.

    >>> mg.logdet(mg.tensor([[2.0, 0.0], [0.0, 3.0]]))
    tensor(1.7917595)
    """
    check_matrix(A, "logdet", square=True, complex_ok=True)
    sign, logabs = _Slogdet.apply(A)
    if sign.is_complex():  # (a singular A: -inf + nan i, as torch)
        nan = make_tensor(np.where(sign._array == 0, complex(0, np.nan), 0).astype(sign.dtype))
        return logabs + sign.angle() * 1j + nan
    with np.errstate(divide="ignore", invalid="ignore"):
        shift = make_tensor(np.asarray(np.log(sign._array)))  # 0, nan (sign -1), -inf (0)
    return logabs + shift
