"""The maps behind ``parametrizations.orthogonal``, written with minigrad ops so that every
order of derivative goes through them: the matrix exponential and the Cayley transform of a
skew-symmetric matrix, and a product of Householder reflectors; plus the numpy-side QR
helpers their ``right_inverse`` needs (run under no_grad)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...autograd.function import Context, Function, make_tensor
from ...linalg.matrix_exp import matrix_exp  # noqa: F401  (the map of that name)
from ...linalg.qr import householder_product  # noqa: F401  (the map of that name)
from ...tensor import Tensor


class _Inverse(Function):
    """A^-1 of a (batch of) square matrix; d(A^-1) = -A^-1 dA A^-1, written with the saved
    output, so it differentiates again."""

    @staticmethod
    def forward(ctx: Context, A: Any) -> Any:
        out = make_tensor(np.linalg.inv(A._array))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (inv,) = ctx.saved_tensors
        return -(inv.mT @ g @ inv.mT)


def cayley(A: Tensor) -> Tensor:
    """(I - A/2)^-1 (I + A/2): orthogonal for skew-symmetric A (torch's Cayley retraction);
    I - A/2 is then always invertible."""
    eye = make_tensor(np.eye(A.shape[-1], dtype=A.dtype))
    return _Inverse.apply(eye - A * 0.5) @ (eye + A * 0.5)


def is_orthogonal(Q: np.ndarray) -> bool:
    """Q^T Q = I to 10 n eps, torch's test before keeping Q as the base."""
    n, k = Q.shape[-2], Q.shape[-1]
    eps = 10.0 * n * np.finfo(Q.dtype).eps
    return bool(np.allclose(np.swapaxes(Q, -1, -2) @ Q, np.eye(k), rtol=1e-5, atol=eps))


def make_orthogonal(A: np.ndarray) -> np.ndarray:
    """The Q of A = QR with diag(R) >= 0 (unique for full-rank A; columns of a zero R_ii
    keep their sign)."""
    q, r = np.linalg.qr(A)
    d = np.sign(np.diagonal(r, axis1=-2, axis2=-1))
    return q * np.where(d == 0, 1, d)[..., None, :]


def geqrf(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """LAPACK's compact QR of tall A: R on and above the diagonal, the reflectors below."""
    h, tau = np.linalg.qr(A, mode="raw")
    return np.swapaxes(h, -1, -2).copy(), tau
