"""The differentiable symmetric eigendecomposition: torch.linalg.eigh's interface over the
Jacobi kernels, with the closed-form backward through the eigenvalues and eigenvectors.

With A = U diag(L) U^T and J = U^T gU, for symmetric perturbations of A (torch's convention:
the gradient is the symmetric matrix, whichever triangle UPLO reads)

    gA = U (diag(gL) + X) U^T,    X_ij = (J_ij - J_ji) / 2 (l_j - l_i)  (i != j),  X_ii = 0.

The backward is written with minigrad ops on the saved outputs, so create_graph=True gives
higher derivatives. At repeated eigenvalues a 0/0 term is kept only where it is exactly
known: a pair whose eigenvector cotangents are both exactly zero contributes 0 (functions of
the eigenvalues alone, dropped eigenpairs). Everything else at a tie raises LinAlgError
saying why: a loss on an arbitrary eigenbasis or with a kink has no gradient, and the limit
a matrix function U f(L) U^T needs there (f'(l), Daleckii-Krein) is not computed yet.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..autograd.function import Context, Function
from ..autograd.grad_mode import is_grad_enabled
from ..functions import where
from ..tensor import Tensor
from ._checks import check_matrix
from ._eigh_forward import DEFAULT_MAX_SWEEPS, eigh_forward
from .errors import LinAlgError

# Tied eigenvalues: |l_i - l_j| <= _TIE sqrt(n) eps max|l|, about the accuracy of the
# computed ones. Rounding-level numerators: _NOISE sqrt(n) eps times their scale.
_TIE = 16.0
_NOISE = 64.0
_NOISE_GL = 1000.0  # gL_i - gL_j at a tie also carries f''(l) (l_i - l_j): more room


class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


def _lower(UPLO: str) -> bool:
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO == "L"


def eigh(A: Tensor, UPLO: str = "L", *, tol: float | None = None,
         max_sweeps: int = DEFAULT_MAX_SWEEPS) -> EighResult:
    """A = U diag(L) U^T for symmetric A (only the UPLO triangle is read), batched.

    eigenvalues (*, n) ascending, eigenvectors (*, n, n) orthonormal columns (each one's
    first largest-|.| entry positive); differentiable through both, gradients symmetric as
    in torch. float16 is computed in float32; ``tol`` / ``max_sweeps`` tune the Jacobi.
    NaN or Inf in the triangle read raises LinAlgError (torch returns NaN), as does the SVD.

    >>> L, U = mg.linalg.eigh(mg.tensor([[2.0, 1.0], [1.0, 2.0]]))
    >>> L
    tensor([1., 3.])
    """
    A = check_matrix(A, "linalg.eigh", square=True)
    lower = _lower(UPLO)
    if A.dtype == np.float16:
        L, U = _Eigh.apply(A.float(), lower, tol, max_sweeps)
        return EighResult(L.half(), U.half())
    return EighResult(*_Eigh.apply(A, lower, tol, max_sweeps))


def eigvalsh(A: Tensor, UPLO: str = "L", *, tol: float | None = None,
             max_sweeps: int = DEFAULT_MAX_SWEEPS) -> Tensor:
    """The eigenvalues of symmetric A, ascending; d/dA of sum(g * L) is U diag(g) U^T.

    >>> mg.linalg.eigvalsh(mg.tensor([[2.0, 1.0], [1.0, 2.0]]))
    tensor([1., 3.])
    """
    A = check_matrix(A, "linalg.eigvalsh", square=True)
    lower = _lower(UPLO)
    if A.requires_grad and is_grad_enabled():
        return eigh(A, UPLO, tol=tol, max_sweeps=max_sweeps).eigenvalues
    w, _ = eigh_forward(A.data, lower, False, tol=tol, max_sweeps=max_sweeps)
    return Tensor._make(w)


class _Eigh(Function):
    @staticmethod
    def forward(ctx: Context, A: Tensor, lower: bool, tol: float | None,
                max_sweeps: int) -> tuple[Tensor, Tensor]:
        w, v = eigh_forward(A.data, lower, True, tol=tol, max_sweeps=max_sweeps)
        outs = Tensor._make(w), Tensor._make(v)
        ctx.save_for_backward(*outs)  # the outputs themselves: higher order flows through them
        ctx.set_materialize_grads(False)
        return outs

    @staticmethod
    def backward(ctx: Context, gL: Tensor | None, gU: Tensor | None) -> tuple:
        L, U = ctx.saved_tensors
        return eigh_backward(L, U, gL, gU), None, None, None


def eigh_backward(L: Tensor, U: Tensor, gL: Tensor | None, gU: Tensor | None) -> Tensor:
    """gA = U (diag(gL) + X) U^T, X_ij = (J_ij - J_ji) / 2 (l_j - l_i), J = U^T gU."""
    n = L.shape[-1]
    if n == 0 or (gL is None and gU is None):
        return Tensor._make(np.zeros(U.shape, U.dtype))
    ties = _ties(L.data)
    blind = None  # (*, n): eigenvectors whose cotangent is exactly zero
    if ties is not None:
        blind = (np.ones(L.shape, bool) if gU is None
                 else ~np.any(gU.data != 0, axis=-2))
        if gL is not None:
            _check_value_cotangents(ties & blind[..., :, None] & blind[..., None, :], L.data,
                                    gL.data)
    if gU is None:
        return (U * gL.unsqueeze(-2)) @ U.mT
    J = U.mT @ gU
    N = J - J.mT
    E = L.unsqueeze(-2) - L.unsqueeze(-1)  # [.., i, j] = l_j - l_i
    eye = np.eye(n, dtype=bool)
    mask = eye if ties is None else eye | _tie_terms(ties, L.data, N.data, J.data, blind)
    m = Tensor._make(mask)
    X = N / where(m, 1.0, E)
    if ties is not None:
        X = where(m, 0.0, X)  # the diagonal of N is exactly 0 already
    X = X * 0.5
    if gL is not None:
        X = X + gL.diag_embed()
    return U @ X @ U.mT


def _ties(l: np.ndarray) -> np.ndarray | None:
    """The (*, n, n) mask of off-diagonal pairs of tied eigenvalues, or None if there are none
    (l is sorted, so neighbours tell: the full mask is built only when one is close)."""
    n = l.shape[-1]
    eps = float(np.finfo(l.dtype).eps)
    tol = _TIE * np.sqrt(n) * eps * np.abs(l).max(axis=-1, keepdims=True)
    if not np.any(l[..., 1:] - l[..., :-1] <= tol):
        return None
    t = np.abs(l[..., None, :] - l[..., :, None]) <= tol[..., None]
    t &= ~np.eye(n, dtype=bool)
    return t if t.any() else None


def _check_value_cotangents(ties: np.ndarray, l: np.ndarray, gl: np.ndarray) -> None:
    """At tied pairs whose eigenvectors the loss does not see: a loss that weighs the tied
    eigenvalues differently (like the largest of them) has a kink there, no gradient. (Where
    it sees them, gL_i != gL_j is normal: U f(L) U^T has gL_i = f'(l) u_i^T G u_i.)"""
    n = l.shape[-1]
    noise = _NOISE_GL * np.sqrt(n) * np.finfo(l.dtype).eps * np.abs(gl).max(axis=-1)
    bad = ties & (np.abs(gl[..., :, None] - gl[..., None, :]) > noise[..., None, None])
    if bad.any():
        raise _tie_error(bad, l, "the loss weighs them differently (like taking the largest "
                         "of them), so it is not differentiable there; a symmetric function "
                         "of the tied eigenvalues (their sum, their product) is.")


def _tie_terms(ties: np.ndarray, l: np.ndarray, N: np.ndarray, J: np.ndarray,
               blind: np.ndarray) -> np.ndarray:
    """The tied pairs whose 0/0 term is known to be 0: both eigenvectors' cotangents exactly
    zero (a loss blind to them, like a pinv that drops them). Elsewhere at a tie, raise:

    - numerator N_ij nonzero: the loss depends on the arbitrary basis of the eigenspace;
    - numerator zero but cotangents not: the term is the limit of N_ij / (l_j - l_i) as the
      tie splits (f'(l) for U f(L) U^T, 0 for a gapped projector), which depends on how the
      cotangents change with L, information the cotangents at the tie do not carry.
    """
    n = l.shape[-1]
    noise = _NOISE * np.sqrt(n) * np.finfo(l.dtype).eps * np.abs(J).max(axis=(-2, -1))
    basis = ties & (np.abs(N) > noise[..., None, None])
    if basis.any():
        raise _tie_error(basis, l, "the loss depends on the arbitrary choice of eigenvectors "
                         "for them, so it has no gradient. Losses invariant to rotations "
                         "within the eigenspace (functions of the eigenvalues, projectors "
                         "onto the whole eigenspace) are well defined there.")
    known = ties & blind[..., :, None] & blind[..., None, :]
    unknown = ties & ~known
    if unknown.any():
        raise _tie_error(unknown, l, "the loss uses their eigenvectors (like U f(L) U^T): its "
                         "gradient at an exact tie is the limit of a 0/0 term as the tie "
                         "splits, which the cotangents at the tie do not determine; minigrad "
                         "does not compute that limit for eigh yet. Perturb A off the tie.")
    return known


def _tie_error(mask: np.ndarray, l: np.ndarray, why: str) -> LinAlgError:
    """Name the first offending pair (i, j) and its batch element."""
    *b, i, j = (int(v) for v in np.argwhere(mask)[0])
    batch = f" in batch element {tuple(b)}" if b else ""
    v = float(l[tuple(b) + (i,)])
    return LinAlgError(f"linalg.eigh backward: eigenvalues L[{i}] = L[{j}] = {v:.6g} are "
                       f"repeated{batch}: {why}")

