"""torch.svd_lowrank and torch.pca_lowrank: the top q singular triplets by a randomized
range finder (Halko, Martinsson and Tropp 2009, Algorithms 4.4 and 5.1), with the exact
truncated SVD's backward.

torch differentiates through the randomized algorithm (its QRs and power iterations), so
its gradient depends on the sketch and is not the gradient of any function of A (pytorch
issue #69531). Here the forward refines the sketch until the top q triplets are those of A
to the dtype's accuracy, and the backward is that of A -> top q triplets (``_svd_trunc``),
independent of the sketch:

- the sketch has q + 5 columns (oversampling) and starts with ``niter`` power iterations,
  as torch's; then subspace iterations continue until every one of the top q + 1 Ritz
  triplets has residual |A v_j - s_j u_j| below 64 sqrt(max(m, n)) eps s_1 (the (q+1)-th
  decides whether the cut is at a tie);
- the dense Jacobi SVD is used instead when it is cheaper (q + 5 > min(m, n) / 2), and when
  the iteration would not converge within 30 further steps (a spectrum decaying too slowly
  past q for a sketch to resolve: the rate is about (s_{q+6} / s_{q+1})^2 per step, which
  the first Ritz values estimate, so such a matrix pays for a step or two before the SVD).

So ``niter`` only sets where the refinement starts, and the values are the same for every
seed up to the signs of the singular vectors (fixed as the SVD's: the first entry of largest
magnitude of each u_j is positive). The sketch is drawn from minigrad's default generator,
as torch draws from its global one. Dense tensors only.

Complex A as torch's: U, V complex, S real, A - M ~ U diag(S) V^H; the sketch is complex
Gaussian, the transposes conjugate, and the phase of each u_j is fixed as the complex SVD's
(that entry real and positive). The backward is the complex truncated SVD's, which raises,
as the complex SVD's, where the loss depends on the phases.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from ..creation import rng_of
from ..tensor import Tensor
from . import ties as _ties
from ._checks import adjoint, check_matrix
from ._complex_forward import any_svd_forward
from ._svd_forward import DEFAULT_MAX_SWEEPS
from ._svd_single import _unit
from ._svd_trunc import np_adjoint, svd_top, top_forward
from .svd import svd as linalg_svd

_OVERSAMPLE = 5
_MAX_STEPS = 30
_C_RESID = 64.0


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int | None = 2,
                M: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """The top k = min(q, m, n) triplets of A - M (M broadcast to A): A - M ~ U diag(S) V^H,
    U (*, m, k), S (*, k), V (*, n, k) (V, not Vh, as torch; complex A gives complex U, V
    and real S), with the exact gradient of the truncated SVD (torch's differentiates the
    random sketch instead; see the module).

    >>> A = mg.tensor([[3.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 1.0]])
    >>> U, S, V = mg.svd_lowrank(A, q=2); S
    tensor([3., 2.])
    """
    check_matrix(A, "svd_lowrank", complex_ok=True)
    q = 6 if q is None else int(q)
    niter = 2 if niter is None else int(niter)
    if q < 0:
        raise RuntimeError(f"svd_lowrank: q must be non-negative, got {q}")
    if A.ndim < 2:
        raise RuntimeError(f"svd_lowrank: A must have at least 2 dimensions, got {A.ndim}")
    if M is not None:
        A = A - M.broadcast_to(A.shape)
    if A.dtype == np.float16:
        U, S, V = svd_lowrank(A.float(), q, niter)
        return U.half(), S.half(), V.half()
    k = min(q, *A.shape[-2:])
    if k == min(A.shape[-2:]):
        U, S, Vh = linalg_svd(A, full_matrices=False)
    else:
        U, S, Vh = svd_top(A, k, partial(_randomized, q=k, niter=niter), _ties.current())
    return U, S, adjoint(Vh)


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True,
                niter: int = 2) -> tuple[Tensor, Tensor, Tensor]:
    """PCA of the data A (*, m samples, n features): ``svd_lowrank`` of A minus its column
    means (``center``), q = min(6, m, n) by default; V's columns are the principal
    directions and S^2 / (m - 1) the variances along them.

    >>> A = mg.tensor([[3.0, 1.0], [1.0, 1.0], [3.0, 1.0], [1.0, 1.0], [2.0, 2.0], [2.0, 0.0]])
    >>> U, S, V = mg.pca_lowrank(A, q=1); S, V.abs()
    (tensor([2.]), tensor([[1.],
            [0.]]))
    """
    check_matrix(A, "pca_lowrank", complex_ok=True)
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if center:
        A = A - A.mean(dim=-2, keepdim=True)
    return svd_lowrank(A, q, niter)


def _randomized(a: np.ndarray, q: int, niter: int) -> tuple:
    """(u_q, s_q, vh_q, s_{q+1}) of each a (*, m, n), q < min(m, n): a sketch refined to the
    dtype's accuracy, or the dense SVD (module docstring)."""
    m, n = a.shape[-2:]
    if m < n:  # work on the tall form, as torch
        u, s, vh, s_next = _randomized(np_adjoint(a), q, niter)
        u, vh = _fix_signs(np_adjoint(vh), np_adjoint(u))  # U's signs, not V's
        return u, s, vh, s_next
    width = min(q + _OVERSAMPLE, n)
    if 2 * width > n or a.size == 0:
        return top_forward(a, q, None, DEFAULT_MAX_SWEEPS)
    aH = np_adjoint(a)
    basis = _orth(a @ _sketch(a, n, width))
    for _ in range(niter):
        basis = _orth(a @ _orth(aH @ basis))
    tol = _C_RESID * np.sqrt(max(m, n)) * np.finfo(a.dtype).eps
    for step in range(_MAX_STEPS + 1):
        ub, s, vh = any_svd_forward(np_adjoint(basis) @ a, False, True)
        u = basis @ ub
        resid = np.linalg.norm(a @ np_adjoint(vh) - u * s[..., None, :], axis=-2)
        worst = np.max(resid[..., :q + 1] / (tol * s[..., :1]))
        if worst <= 1.0:
            u, vh = _fix_signs(u[..., :q], vh[..., :q, :])
            return u, s[..., :q], vh, s[..., q]
        # Each step shrinks the residual by about (s_{width+1} / s_{q+1})^2 (the last Ritz
        # value standing in for s_{width+1}): give up early if the steps left cannot do it.
        rate = np.max((s[..., -1] / np.maximum(s[..., q], np.finfo(a.dtype).tiny)) ** 2)
        if rate >= 1.0 or np.log(worst) > -np.log(rate) * (_MAX_STEPS - step):
            break
        basis = _orth(a @ _orth(aH @ basis))
    return top_forward(a, q, None, DEFAULT_MAX_SWEEPS)


def _orth(x: np.ndarray) -> np.ndarray:
    return np.linalg.qr(x)[0]


def _sketch(a: np.ndarray, n: int, width: int) -> np.ndarray:
    """A Gaussian n x width test matrix in a's dtype (complex: unit variance, as torch's
    complex randn)."""
    rng = rng_of(None)
    if a.dtype.kind != "c":
        return rng.standard_normal((n, width)).astype(a.dtype)
    return ((rng.standard_normal((n, width)) + 1j * rng.standard_normal((n, width)))
            * np.sqrt(0.5)).astype(a.dtype)


def _fix_signs(u: np.ndarray, vh: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The SVD's sign convention: each u_j's first entry of largest magnitude is positive
    (complex: real and positive), v_j turning with it."""
    at = np.argmax(np.abs(u), axis=-2)[..., None, :]
    phase = _unit(np.take_along_axis(u, at, axis=-2)).astype(u.dtype)
    return u * phase.conj(), vh * np.swapaxes(phase, -1, -2)
