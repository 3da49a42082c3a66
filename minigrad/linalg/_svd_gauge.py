"""The SVD backward of a loss that reads the top r triplets through a bond, A = U_r sqrt(S_r)
and B = sqrt(S_r) Vh_r, and is unchanged by any rotation of it (A Q, Q^T B): the splits of
tensor networks. Without poles, and written in A, B and the input M, so that a pass
differentiating it again sees cotangents of the same form.

Such a loss is a function of any balanced factorization of M's top part (A^T A = B B^T =
P; S_r in the SVD's gauge). On the bond, dA = A X + ..., dB = Y B + ... with X + Y =
A^+ dM B^+ (A^+ = P^-1 A^T, B^+ = B^T P^-1), and keeping the balance fixes X's symmetric
part by a Lyapunov equation in P; the loss's invariance makes alpha - beta symmetric
(alpha = A^T gA, beta = gB B^T: the rotation's generator). Off the bond, the coupling to
the rest of M is the truncated SVD's (``_svd_trunc``) in the same variables. So

    gM = A P^-1 (beta + Z P) P^-1 B + [(I - P_A) gA + Bd N] P^-1 B + A N^T,
    Z P + P Z = alpha - beta,    N P^2 - Bd^T Bd N = (I - P_B) gB^T P + Bd^T (I - P_A) gA,

with P_A, P_B the projectors on A's columns and B's rows and Bd = (I - P_A) M (I - P_B).
In the SVD's gauge the first term is U [(J + K^T)_ij / (s_i + s_j)] V^T (J = U^T gU,
K = V^T gV): no s_j - s_i anywhere, so ties and near-ties among the read triplets need no
limit; the only pole is a tie across the cut, refused before (``check_solo_ties``). Every
piece is a function of (A, B, M) that a rotation of the bond leaves alone, so a second pass
through it sees cotangents on U, S, V with s_i Z_ij = s_j Z_ji and 2 s_i gS_i = Z_ii exactly
(``_tie_bond.bond_fit``); through the plain formula, which reads U and V off their
manifold in a way no rotation of the bond explains, they fail by O(1)
(tests/linalg/test_svd_gauge.py).

Cost per node: O(r^2) for the solves in P (diagonal), and where the bond leaves part of M
out, products with M and the n x n Gram of Bd (n the smaller side; its eigenvectors are the
SVD's own V), O(m n^2): the order of the plain formula with full factors. M itself is
rebuilt from the factors (U S Vh, connected where the SVD's input was): nothing is kept
from the forward.

Complex input is the same with conjugate transposes (A^H A = B B^H = P, rotations A Q,
Q^H B with Q unitary, alpha - beta Hermitian; the solves' adjoints with P and H Hermitian):
the complex SVD's backward takes it at a tie (``_complex_svd``).
"""

from __future__ import annotations

import numpy as np

from ..autograd.downstream import current_walk, result_is_differentiated
from ..autograd.function import Context, Function, make_tensor
from ..tensor import Tensor
from ._checks import adjoint
from ._tie_sources import Mark, Tap
from .errors import LinAlgError


class _Lyap(Function):
    """Z with Z P + P Z = R, P symmetric positive definite and diagonal here (S_r in the
    SVD's gauge, to rounding relative to each entry: its diagonal is used, not an eigh of
    it, which would carry eps s_1 into the small values). The map is its own adjoint, so
    the backward is the same solve (implicit differentiation, to every order)."""

    @staticmethod
    def forward(ctx: Context, P: Tensor, R: Tensor) -> Tensor:
        p = np.diagonal(P._array, 0, -2, -1)
        Z = R._array / (p[..., :, None] + p[..., None, :])
        out = make_tensor(Z)
        ctx.save_for_backward(P, out)  # the output itself: higher order flows through it
        return out

    @staticmethod
    def backward(ctx: Context, gZ: Tensor) -> tuple:
        P, Z = ctx.saved_tensors
        Y = _Lyap.apply(P, gZ)
        gP = adjoint(Z) @ Y + Y @ adjoint(Z)
        return (gP + adjoint(gP)) * -0.5, Y


class _Sylv(Function):
    """X with X W - H X = R (W r x r, diagonal here, H n x n symmetric): the shifted solves
    of the coupling across the cut. ``eig`` = (w, h, F): W's diagonal, H's eigenvalues and
    eigenvectors (F square), all from the SVD itself (a Gram of a deflated
    matrix would carry eps s_1^2 of rounding, all of a small gap at the cut); W and H as
    tensors only carry the derivative. Its own adjoint, like ``_Lyap``."""

    @staticmethod
    def forward(ctx: Context, W: Tensor, H: Tensor, R: Tensor, eig: tuple) -> Tensor:
        w, h, F = eig
        den = w[..., None, :] - h[..., :, None]
        if (den == 0).any() or (w == 0).any():
            raise LinAlgError("svd backward: a kept singular value equals a discarded one")
        out = make_tensor(F @ ((np.swapaxes(F, -1, -2).conj() @ R._array) / den))
        ctx.save_for_backward(W, H, out)  # the output itself: higher order flows through it
        ctx.eig = eig
        return out

    @staticmethod
    def backward(ctx: Context, gX: Tensor) -> tuple:
        W, H, X = ctx.saved_tensors
        Y = _Sylv.apply(W, H, gX, ctx.eig)
        gW = adjoint(X) @ Y
        gH = Y @ adjoint(X)
        return (gW + adjoint(gW)) * -0.5, (gH + adjoint(gH)) * 0.5, Y, None


def _cut(S: Tensor, r: int) -> np.ndarray:
    """The eigenvalues of the deflated Gram on the SVD's vectors: 0 on the read r, s_l^2 on
    the rest."""
    s = S._array
    return np.concatenate([np.zeros(s.shape[:-1] + (r,)), s[..., r:] ** 2], axis=-1)


def bond_backward(M: Tensor, U: Tensor, S: Tensor, Vh: Tensor, gU: Tensor | None,
                  gVh: Tensor | None, r: int) -> Tensor:
    """gM for a loss reading (U, S, Vh) only through A = U_r sqrt(S_r), B = sqrt(S_r) Vh_r
    and unchanged by A Q, Q^T B (module docstring); M is the SVD's input."""
    m, n = M.shape[-2], M.shape[-1]
    if m < n:  # solve on the smaller side: the same loss of (B^T, A^T)
        return bond_backward(M.mT, Vh.mT, S, U.mT, None if gVh is None else gVh.mT,
                             None if gU is None else gU.mT, r).mT
    # gM is homogeneous of degree -1 in (M, S) with U, Vh and their cotangents held: work
    # at s_1 = 1 (a constant c: the same function of M and S), since P^2 and the solves'
    # own derivatives reach s^-4, which overflow at s_1 ~ 1e-100 (tests: extreme scales).
    c = make_tensor(np.where(S._array[..., :1] > 0, S._array[..., :1], 1.0))
    return _bond_unit(M / c.unsqueeze(-1), U, S / c, Vh, gU, gVh, r) / c.unsqueeze(-1)


def _bond_unit(M: Tensor, U: Tensor, S: Tensor, Vh: Tensor, gU: Tensor | None,
               gVh: Tensor | None, r: int) -> Tensor:
    """``bond_backward`` at s_1 = 1, m >= n."""
    m, n = M.shape[-2], M.shape[-1]
    h = S[..., :r].sqrt()
    A = U[..., :, :r] * h.unsqueeze(-2)
    B = h.unsqueeze(-1) * Vh[..., :r, :]
    zero_a = make_tensor(np.zeros(A.shape, A.dtype))
    gA = zero_a if gU is None else gU[..., :, :r] / h.unsqueeze(-2)
    gB = zero_a.mT if gVh is None else gVh[..., :r, :] / h.unsqueeze(-1)
    P = (adjoint(A) @ A + B @ adjoint(B)) * 0.5
    Pi = _Lyap.apply(P, make_tensor(np.broadcast_to(np.eye(r, dtype=A.dtype), P.shape)
                                    * 2.0))  # P^-1: Z P + P Z = 2 I
    alpha, beta = adjoint(A) @ gA, gB @ adjoint(B)
    Z = _Lyap.apply(P, alpha - beta)
    Ai, Bi = A @ Pi, Pi @ B  # A^+^T, B^+^T
    gM = Ai @ (beta + Z @ P) @ Bi
    if r == m == n:
        return gM
    Bd = M - Ai @ (adjoint(A) @ M)
    Bd = Bd - (Bd @ adjoint(B)) @ Bi  # (I - P_A) M (I - P_B)
    PgA = gA - Ai @ alpha
    QgB = gB - (gB @ adjoint(B)) @ Bi
    eig = S._array[..., :r] ** 2, _cut(S, r), Vh._array.swapaxes(-1, -2).conj()  # V: n x n here
    N = _Sylv.apply(P @ P, adjoint(Bd) @ Bd, adjoint(QgB) @ P + adjoint(Bd) @ PgA, eig)
    return gM + (PgA + Bd @ N) @ Bi + A @ adjoint(N)


def bond_gradient(ctx: Context, U: Tensor, S: Tensor, Vh: Tensor, gU: Tensor | None,
                  gVh: Tensor | None, r: int) -> Tensor:
    """An SVD node's whole gradient by ``bond_backward`` (reduced factors), its input rebuilt
    from them where the node's input was (``input_like``), and marked for a later pass when
    it will be differentiated (``bond_mark``)."""
    M = ctx.input_like(0, (U._array * S._array[..., None, :]) @ Vh._array)
    gA = bond_backward(M, U, S, Vh, gU, gVh, r)
    return Tap.apply(gA, bond_mark(ctx)) if result_is_differentiated() else gA


def bond_mark(node: Context) -> Mark:
    """Where a later walk through this SVD node's bond backward notes itself (``Tap``):
    that walk's backward of the node then meets cotangents of the bond's form by
    construction (``bond_inherited``)."""
    mark = getattr(node, "bond_mark", None)
    if mark is None:
        mark = node.bond_mark = Mark()
    return mark


def bond_inherited(node: Context) -> bool:
    """Whether this walk differentiates the SVD node's own bond backward."""
    mark = getattr(node, "bond_mark", None)
    return mark is not None and mark.seen_by(current_walk())
