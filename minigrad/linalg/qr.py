"""The differentiable QR decomposition (torch.linalg.qr): LAPACK's Householder QR through
numpy forward (R's diagonal signs as LAPACK leaves them, as torch), the backward written with
minigrad ops.

For A = Q R with m >= n (Q m x n, R n x n), Q^T dQ is skew and dR R^-1 upper triangular, so
C = Q^T dA R^-1 splits into both. With N = Q^T gQ - gR R^T:

    gA = [gQ + Q (gR R^T + tril(N - N^T, -1) - Q^T gQ)] R^-T.

For m < n, A = Q [X | Y] with X square: R = [R_X | Q^T Y], so gY = Q gR_Y and X takes the
square rule with gQ + Y gR_Y^T. The complete Q of a tall A adds a basis Q_2 of the
complement, which is arbitrary: only losses blind to it (Q_2^T gQ_2 symmetric, as for the
projector Q_2 Q_2^T) have a gradient, and then gQ_2 folds into Q's first n columns as
-Q_2 gQ_2^T Q_1. A rank-deficient A (a zero on R's diagonal) has no unique Q: LinAlgError.

Complex A: every transpose above is the conjugate transpose, and since LAPACK's R has a real
diagonal, Q^H dQ is anti-Hermitian with the imaginary diagonal i Im diag(C), which adds
i Im diag(N) to the bracket (_square_rule).
"""

from __future__ import annotations

from typing import NamedTuple, cast

import numpy as np

from ..autograd.function import Context, Function, make_tensor
from ..autograd.grad_mode import is_grad_enabled
from ..functions import cat
from ..tensor import Tensor
from ._checks import adjoint, batch_prefix, check_matrix, half_as_float
from .errors import LinAlgError
from .solve import solve_triangular

_NUM_TOL = 1000.0  # a Q_2^T gQ_2 asymmetry below _NUM_TOL eps max(m, n) |gQ_2| is rounding
_RANK_TOL = 10.0  # |R_ii| <= _RANK_TOL eps max(m, n) max|R|: rank deficient


class QRResult(NamedTuple):
    Q: Tensor
    R: Tensor


_MODES = ("reduced", "complete", "r")


@half_as_float
def qr(A: Tensor, mode: str = "reduced") -> QRResult:
    """A = Q R, Q with orthonormal columns, R upper triangular, batched. ``mode``: "reduced"
    (Q (*, m, k), R (*, k, n), k = min(m, n)), "complete" (Q (*, m, m), R (*, m, n)) or "r"
    (R only; Q is an empty tensor). Differentiable in every mode, complete included.

    >>> Q, R = mg.linalg.qr(mg.tensor([[3.0, 1.0], [4.0, 2.0]]))
    >>> R.abs()
    tensor([[5. , 2.2],
            [0. , 0.4]])
    """
    check_matrix(A, "linalg.qr", complex_ok=True)
    if mode not in _MODES:
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    empty = make_tensor(np.zeros((0,), A.dtype))
    if mode == "r" and not (A.requires_grad and is_grad_enabled()):
        r = cast(np.ndarray, np.linalg.qr(A._array, mode="r"))  # R alone (numpy's stubs)
        return QRResult(empty, make_tensor(r))
    Q, R = _QR.apply(A, mode == "complete")
    return QRResult(empty, R) if mode == "r" else QRResult(Q, R)


class _QR(Function):
    @staticmethod
    def forward(ctx: Context, A: Tensor, complete: bool) -> tuple[Tensor, Tensor]:
        q, r = np.linalg.qr(A._array, mode="complete" if complete else "reduced")
        outs = make_tensor(q), make_tensor(r)
        ctx.save_for_backward(*outs)
        ctx.set_materialize_grads(False)
        return outs

    @staticmethod
    def backward(ctx: Context, gQ: Tensor | None, gR: Tensor | None) -> tuple:
        Q, R = ctx.saved_tensors
        return qr_backward(Q, R, gQ, gR), None


def qr_backward(Q: Tensor, R: Tensor, gQ: Tensor | None, gR: Tensor | None) -> Tensor:
    """gA for A = Q R (reduced, or complete: then Q's complement is folded in first)."""
    m, n = Q.shape[-2], R.shape[-1]
    k = min(m, n)
    if k == 0:
        return make_tensor(np.zeros(Q.shape[:-2] + (m, n), Q.dtype))
    if Q.shape[-1] > k:  # complete, m > n
        if gQ is not None:
            gQ = _fold_complement(Q, gQ, k)
        Q, R = Q[..., :k], R[..., :k, :]
        if gR is not None:
            gR = gR[..., :k, :]
    _check_rank(R, k)
    if m >= n:
        return _square_rule(Q, R, gQ, gR)
    RY = R[..., m:]
    gRX = None if gR is None else gR[..., :m]
    gQX = gQ
    gY = None
    if gR is not None:
        gRY = gR[..., m:]
        gY = Q @ gRY
        YgRY = (Q @ RY) @ adjoint(gRY)  # Y = Q R_Y: written from the outputs, for higher order
        gQX = YgRY if gQX is None else gQX + YgRY
    gX = _square_rule(Q, R[..., :m], gQX, gRX)
    if gY is None:
        gY = make_tensor(np.zeros(Q.shape[:-2] + (m, n - m), Q.dtype))
    return cat([gX, gY], -1)


def _square_rule(Q: Tensor, R: Tensor, gQ: Tensor | None, gR: Tensor | None) -> Tensor:
    """gA = [gQ + Q (gR R^H + tril(N - N^H, -1) + i Im diag(N) - Q^H gQ)] R^-H with
    N = Q^H gQ - gR R^H (the imaginary diagonal: LAPACK's R has a real diagonal, which fixes
    Q's phases, so Q^H dQ has the imaginary diagonal i Im diag(Q^H dA R^-1))."""
    QgQ = None if gQ is None else adjoint(Q) @ gQ
    gRR = None if gR is None else gR @ adjoint(R)
    if QgQ is None:
        assert gRR is not None  # backward runs with a gradient for Q or R
        N = -gRR
    else:
        N = QgQ if gRR is None else QgQ - gRR
    M = (N - adjoint(N)).tril(-1)
    if N._array.dtype.kind == "c":
        M = M + (N.diagonal(0, -2, -1).imag * 1j).diag_embed()
    if gRR is not None:
        M = M + gRR
    if QgQ is not None:
        M = M - QgQ
    G = Q @ M if gQ is None else gQ + Q @ M
    # G R^-H = (R^-1 G^H)^H
    return adjoint(solve_triangular(R, adjoint(G), upper=True))


def _check_rank(R: Tensor, k: int) -> None:
    r = R._array
    d = np.abs(np.diagonal(r[..., :k, :k], axis1=-2, axis2=-1))
    eps = float(np.finfo(r.dtype).eps) * max(r.shape[-2:])
    scale = np.abs(r).max(axis=(-2, -1), keepdims=True)[..., 0]
    bad = (d <= _RANK_TOL * eps * scale).any(-1)
    if bad.any():
        b = int(np.flatnonzero(bad.reshape(-1))[0])
        i = int(np.argmax((d <= _RANK_TOL * eps * scale).reshape(-1, k)[b]))
        raise LinAlgError(
            f"linalg.qr backward: {batch_prefix(bad.shape, b)}R[{i}, {i}] = 0: the input is "
            f"rank deficient (its first {i + 1} columns are linearly dependent), so Q is not "
            "unique and the decomposition has no derivative there.")


def _fold_complement(Q: Tensor, gQ: Tensor, k: int) -> Tensor:
    """gQ_1 - Q_2 gQ_2^H Q_1, after checking that the loss is blind to Q_2's basis (its
    U(m - n) gauge Q_2 -> Q_2 W: Q_2^H gQ_2 Hermitian)."""
    Q1, Q2, g1, g2 = Q[..., :k], Q[..., k:], gQ[..., :k], gQ[..., k:]
    M = (adjoint(Q2) @ g2)._array
    asym = np.abs(M - np.swapaxes(M, -1, -2).conj()).max(axis=(-2, -1))
    eps = float(np.finfo(M.dtype).eps) * max(Q.shape[-2:])
    bad = asym > _NUM_TOL * eps * np.abs(g2._array).max(axis=(-2, -1))
    if bad.any():
        b = int(np.flatnonzero(bad.reshape(-1))[0])
        raise LinAlgError(
            f"linalg.qr backward: {batch_prefix(bad.shape, b)}the loss depends on the "
            f"arbitrary basis Q[..., {k}:] of the complement (the extra columns of the complete "
            "Q), so it has no gradient. Use a basis-free quantity such as the projector "
            "Q_2 Q_2^H, or mode='reduced'.")
    return g1 - Q2 @ (adjoint(g2) @ Q1)


def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first n columns of H_1 ... H_k for A (*, m, n), tau (*, k), k <= n <= m:
    H_i = I - tau_i v_i v_i^H, v_i A's i-th column below the diagonal with a 1 on it (LAPACK's
    orgqr; torch.linalg.householder_product); written with minigrad ops, every order.

    >>> mg.linalg.householder_product(mg.tensor([[0.0], [1.0]]), mg.tensor([1.0]))
    tensor([[ 0.],
            [-1.]])
    """
    check_matrix(A, "linalg.householder_product", "input", complex_ok=True)
    m, n, k = A.shape[-2], A.shape[-1], tau.shape[-1]
    if m < n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-2] must be greater "
                           "than or equal to input.shape[-1]")
    if n < k:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-1] must be greater "
                           "than or equal to tau.shape[-1]")
    eye = np.eye(m, n, dtype=A.dtype)
    V = A.tril(-1) + make_tensor(eye)
    Q = make_tensor(np.broadcast_to(eye, A.shape).copy())
    if k == 0:  # the identity, tied to the inputs for their (zero) gradients, as torch's
        return Q + 0 * (A + tau.sum(-1)[..., None, None])
    for i in range(k - 1, -1, -1):  # Q <- H_i Q, from the last reflector to the first
        v = V[..., :, i:i + 1]
        Q = Q - (tau[..., i:i + 1].unsqueeze(-1) * v) @ (v.mH @ Q)
    return Q
