"""The differentiable symmetric eigendecomposition: torch.linalg.eigh's interface over the
Jacobi kernels, with the closed-form backward through the eigenvalues and eigenvectors.

With A = U diag(L) U^T and J = U^T gU, for symmetric perturbations of A (torch's convention:
the gradient is the symmetric matrix, whichever triangle UPLO reads)

    gA = U (diag(gL) + X) U^T,    X_ij = (J_ij - J_ji) / 2 (l_j - l_i)  (i != j),  X_ii = 0.

The backward is written with minigrad ops on the saved outputs, so create_graph=True gives
higher derivatives. At and near repeated eigenvalues the tie policy decides (``ties.py``, as
for the SVD): "exact" (the default) takes each 0/0 term's limit from the loss's second
derivatives (``_eigh_ties``): the Daleckii-Krein f'(l) for U f(L) U^T, 0 for a projector
onto a whole eigenspace, to second order; it raises where the loss has no gradient (an
arbitrary eigenbasis), and takes the minimum-norm subgradient at a kink (``_kinks``: a
repeated largest eigenvalue gives the projector on its eigenspace over its multiplicity).
Pairs whose eigenvector cotangents are both exactly zero (functions of the eigenvalues,
dropped eigenpairs) give exactly zero terms.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..autograd.function import Context, Function, make_tensor
from ..autograd.grad_mode import is_grad_enabled
from ..autograd.quiet import unrecorded
from ..tensor import Tensor
from . import _eigh_ties as _et
from . import _kinks
from . import ties as _ties
from ._checks import adjoint, check_matrix, half_as_float
from ._complex_forward import any_eigh_forward
from ._eigh_forward import DEFAULT_MAX_SWEEPS, eigh_forward
from ._svd_parts import C_NOISE, colmax
from ._tie_sources import nested, note_chained
from .errors import LinAlgError


class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


def _lower(UPLO: str) -> bool:
    """Whether UPLO names the lower triangle: 'L' or 'U' in either case, as torch."""
    uplo = UPLO.upper() if isinstance(UPLO, str) else UPLO
    if uplo not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return uplo == "L"


@half_as_float
def eigh(A: Tensor, UPLO: str = "L", *, tol: float | None = None,
         max_sweeps: int = DEFAULT_MAX_SWEEPS,
         ties: str | _ties.TiePolicy | None = None) -> EighResult:
    """A = U diag(L) U^T for symmetric A (only the UPLO triangle is read), batched.

    eigenvalues (*, n) ascending, eigenvectors (*, n, n) orthonormal columns (each one's
    first largest-|.| entry positive); differentiable through both, gradients symmetric as
    in torch. float16 is computed in float32; ``tol`` / ``max_sweeps`` tune the Jacobi.
    NaN or Inf in the triangle read raises LinAlgError (torch returns NaN), as does the SVD.
    ``ties`` chooses the backward's treatment of repeated eigenvalues, as for mg.linalg.svd.

    >>> L, U = mg.linalg.eigh(mg.tensor([[2.0, 1.0], [1.0, 2.0]]))
    >>> L
    tensor([1., 3.])
    """
    if isinstance(A, Tensor) and A._array.dtype.kind == "c":
        check_matrix(A.real, "linalg.eigh", square=True)  # (its shape errors: torch's)
    else:
        A = check_matrix(A, "linalg.eigh", square=True)
    lower = _lower(UPLO)
    policy = None if ties is None else _ties.resolve(ties)  # (the one in force: below)
    if not (A.requires_grad and is_grad_enabled()):  # nothing to record: no node, no tie test
        w, v = unrecorded(any_eigh_forward, A._array, lower, True, tol=tol,
                          max_sweeps=max_sweeps)
        return EighResult(make_tensor(w), make_tensor(v))
    return EighResult(*_Eigh.apply(A, lower, tol, max_sweeps,
                                   _ties.resolve(None) if policy is None else policy))


@half_as_float
def eigvalsh(A: Tensor, UPLO: str = "L", *, tol: float | None = None,
             max_sweeps: int = DEFAULT_MAX_SWEEPS) -> Tensor:
    """The eigenvalues of symmetric A, ascending; d/dA of sum(g * L) is U diag(g) U^T.

    >>> mg.linalg.eigvalsh(mg.tensor([[2.0, 1.0], [1.0, 2.0]]))
    tensor([1., 3.])
    """
    if isinstance(A, Tensor) and A._array.dtype.kind == "c":
        return eigh(A, UPLO, tol=tol, max_sweeps=max_sweeps).eigenvalues
    A = check_matrix(A, "linalg.eigvalsh", square=True)
    lower = _lower(UPLO)
    if A.requires_grad and is_grad_enabled():
        return eigh(A, UPLO, tol=tol, max_sweeps=max_sweeps).eigenvalues
    w, _ = eigh_forward(A._array, lower, False, tol=tol, max_sweeps=max_sweeps)
    return make_tensor(w)


class _Eigh(Function):
    @staticmethod
    def forward(ctx: Context, A: Tensor, lower: bool, tol: float | None, max_sweeps: int,
                policy: _ties.TiePolicy) -> tuple[Tensor, Tensor]:
        w, v = any_eigh_forward(A._array, lower, True, tol=tol, max_sweeps=max_sweeps)
        outs = make_tensor(w), make_tensor(v)
        ctx.save_for_backward(*outs)  # the outputs themselves: higher order flows through them
        ctx.set_materialize_grads(False)
        ctx.policy = policy
        # Near a tie the exact backward may need the loss's second derivatives: ask the
        # engine to keep the graph downstream until this node's backward has run.
        ctx.wants_downstream = (policy.kind == "exact" and w.shape[-1] > 1
                                and _near_ties(w, _et.near_level(w)))
        return outs

    @staticmethod
    def backward(ctx: Context, gL: Tensor | None, gU: Tensor | None) -> tuple:
        L, U = ctx.saved_tensors
        down = _et.Downstream(ctx, (gL, gU)) if ctx.wants_downstream else None
        return eigh_backward(L, U, gL, gU, ctx.policy, down), None, None, None, None


def _near_ties(l: np.ndarray, level: np.ndarray) -> bool:
    """Whether two eigenvalues lie within ``level`` (l is sorted: neighbours tell)."""
    return l.shape[-1] > 1 and bool(np.any(l[..., 1:] - l[..., :-1] <= level))


_EXACT = _ties.TiePolicy()


def _check_phase(U: Tensor, gU: Tensor) -> None:
    """A complex loss may not read the eigenvectors' phases (u_j -> u_j e^(i phi) leaves A
    alone): Im (U^H gU)_jj must be rounding."""
    n = U.shape[-1]
    eps = float(np.finfo(U._array.real.dtype).eps)
    J = (U.mH @ gU)._array
    noise = C_NOISE * eps * np.sqrt(n) * colmax(gU)
    if (np.abs(np.diagonal(J, 0, -2, -1).imag) > noise[..., None]).any():
        raise LinAlgError("eigh backward: the eigenvectors in the complex case are specified "
                          "up to multiplication by e^(i phi), and this loss depends on that "
                          "phase: it is not a function of A there, so it has no gradient")


def eigh_backward(L: Tensor, U: Tensor, gL: Tensor | None, gU: Tensor | None,
                  policy: _ties.TiePolicy = _EXACT, down: _et.Downstream | None = None
                  ) -> Tensor:
    """gA = U (diag(gL) + X) U^T, X_ij = (J_ij - J_ji) / 2 (l_j - l_i), J = U^T gU (conjugate
    transposes for complex input, after its phase test)."""
    n = L.shape[-1]
    if n == 0 or (gL is None and gU is None):
        return make_tensor(np.zeros(U.shape, U.dtype))
    if gU is not None and U._array.dtype.kind == "c":
        _check_phase(U, gU)
    l = L._array
    exact = policy.kind == "exact"
    tie = _et.tie_level(l)
    near = _et.near_level(l) if exact else tie
    poles = policy.kind != "lorentzian" and _near_ties(l, near)
    eye = np.eye(n, dtype=bool)
    if gU is None and policy.kinks == "subgradient" and _near_ties(l, tie):
        # A function of L alone at a tie that weighs it unevenly is a kink: the mean over
        # the tie (``_kinks``). Where U is read too, a zero column of gU may be a product
        # with 0 (U diag(L - l) U^T), not blindness: that case raises below as before.
        assert gL is not None  # gU is None: gL is given (above)
        noise = _et.C_NOISE_GL * np.sqrt(n) * np.finfo(l.dtype).eps * np.abs(
            gL._array).max(axis=-1)
        gL = _kinks.subgradient(gL, l, tie, noise)
    if poles:
        dl = np.abs(l[..., None, :] - l[..., :, None])
        blind = (np.ones(l.shape, bool) if gU is None
                 else ~np.any(gU._array != 0, axis=-2))  # eigenvectors the loss does not see
        gone = blind[..., :, None] & blind[..., None, :]
        tied = ~eye & (dl <= tie[..., None])
        if gL is not None and exact and not nested():
            _et.check_value_cotangents(tied & gone, l, gL._array)
    if gU is None:
        assert gL is not None  # one of the two is given (above)
        return (U * gL.unsqueeze(-2)) @ adjoint(U)
    J = adjoint(U) @ gU
    N = J - adjoint(J)
    E = L.unsqueeze(-2) - L.unsqueeze(-1)  # [.., i, j] = l_j - l_i
    if policy.kind == "lorentzian":
        X = N * (E / (E * E + policy.eps))
    elif not poles:
        X = _et.quotient(N, E, eye, None, np.zeros_like(eye))
    else:
        live = ~eye & ~gone
        need = live & (dl <= near[..., None])
        if policy.kind == "zero" or nested() or not need.any():
            if nested() and need.any():
                note_chained()  # a tie inside another limit's look downstream: taken as 0
            X = _et.quotient(N, E, ~live | tied, None, np.zeros_like(need))
        else:
            mu, take = _et.exact_terms(N, E, L, U, gU, need, tied & live, down)
            X = _et.quotient(N, E, ~live, mu, take)
    X = X * 0.5
    if gL is not None:
        X = X + gL.diag_embed()
    return U @ X @ adjoint(U)
