"""The complex SVD and the Hermitian eigh as differentiable Tensors: the forwards are
``_complex_forward``'s, the backwards the real ones' closed forms with conjugate transposes,
in torch's convention (a cotangent is dL/dRe + i dL/dIm).

SVD: with J = U^H gU and K = V^H gV (reduced factors),

    gA = U [diag(gS) + X] V^H + (I - U U^H) gU S^-1 V^H + U S^-1 gV^H (I - V V^H),
    X_ij = N+_ij / 2(s_j - s_i) + N-_ij / 2(s_j + s_i),  N+- = (J - J^H) +- (K - K^H),

where the s_j + s_j diagonal of the second term is the imaginary part the complex case
adds, i (Im J_ii - Im K_ii) / 2 s_i. The singular vectors are fixed only up to
u_j, v_j -> u_j e^{i phi}, v_j e^{i phi}; a loss that changes with phi has Im J_jj +
Im K_jj != 0, and no gradient: LinAlgError, decided by the same rounding scale as the
real tie tests (not torch's 1e-2). Hermitian eigh: J = U^H gU, gA = U [diag(gL) +
(J - J^H)_ij / 2(l_j - l_i)] U^H, and the phase test is Im J_jj = 0.

At a repeated value the policies act as for real input where that needs no second-order
information: "zero" takes the term as 0, "lorentzian" broadens it, a pair whose numerator
is exactly zero (a triplet the loss never reads) takes 0, and a loss of S (or L) alone
takes the kinks' subgradient (``_kinks``). The exact limits of the other terms at a tie
(the real case's looks downstream, within a U(k) gauge here) are not built for complex
input yet: the default policy raises there, saying so, and so it does at a zero singular
value whose triplet the loss reads (its 1 / s terms are 0/0 as well; "lorentzian" broadens
them as every pole, "zero" takes 0). Near a pole but off the tie the
plain quotient serves, with the formula's own eps |g| / gap of rounding (the real case's
looks for O(gap^2) accuracy there are not built for complex either).
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import Context, Function, make_tensor
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import Tensor
from . import _kinks
from . import ties as _ties
from ._checks import unrecorded
from ._complex_forward import complex_svd_forward, hermitian_eigh_forward
from ._eigh_ties import tie_level as eigh_tie_level
from ._svd_parts import C_NOISE, absent_triplets, colmax, quot, tie_level
from .errors import LinAlgError

_PHASE = ("the singular vectors in the complex case are specified up to multiplication "
          "by e^(i phi) (u_j and v_j together), and this loss depends on that phase: "
          "it is not a function of A there, so it has no gradient")


class ComplexSVD(Function):
    @staticmethod
    def forward(ctx: Context, A: Tensor, full_matrices: bool, tol: float | None,
                max_sweeps: int, policy: _ties.TiePolicy) -> tuple[Tensor, Tensor, Tensor]:
        u, s, vh = complex_svd_forward(A._array, full_matrices, True, tol=tol,
                                       max_sweeps=max_sweeps)
        outs = make_tensor(u), make_tensor(s), make_tensor(vh)
        ctx.save_for_backward(*outs)  # the outputs themselves: higher order flows through them
        ctx.set_materialize_grads(False)
        ctx.policy = policy
        return outs

    @staticmethod
    def backward(ctx: Context, gU: Tensor | None, gS: Tensor | None,
                 gVh: Tensor | None) -> tuple:
        U, S, Vh = ctx.saved_tensors
        return complex_svd_backward(U, S, Vh, gU, gS, gVh, ctx.policy), None, None, None, None


def _quot(nu: Tensor, x: Tensor, zero: np.ndarray, policy: _ties.TiePolicy) -> Tensor:
    """nu / x, 0 where ``zero`` (``quot``), or Lorentzian-broadened under that policy."""
    if policy.kind == "lorentzian":
        return nu * (x / (x * x + policy.eps))
    out = quot(nu, x, zero)
    assert out is not None  # nu is given
    return out


def _at_poles(nu: Tensor, x: np.ndarray, level: np.ndarray, noise: np.ndarray,
              absent: np.ndarray, policy: _ties.TiePolicy, what: str) -> np.ndarray:
    """Where the term nu / x is taken as 0: at |x| <= level. That is the "zero" policy's
    choice, and exact for a pair the loss never reads (both members ``absent``: their
    cotangents are exactly 0) or reads on one side only with nu = 0 (else a truncation
    inside a tie: no gradient). A pair it reads on both sides has nu = 0 there for any
    loss with a gradient, and the term's limit needs second-order information, which the
    complex backward does not fetch yet: the exact policy says so."""
    at = np.abs(x) <= level
    if policy.kind != "exact" or not at.any():
        return at
    solo = absent[..., :, None] ^ absent[..., None, :]
    duo = ~absent[..., :, None] & ~absent[..., None, :]
    eye = np.eye(x.shape[-1], dtype=bool)
    if (at & eye & (np.abs(nu._array) > noise)).any():  # s_i + s_i: a zero singular value
        raise LinAlgError(f"{what} backward: {_PHASE} (at a zero singular value u_j and v_j "
                          "turn apart)")
    if (at & solo & (np.abs(nu._array) > noise)).any():
        raise LinAlgError(f"{what} backward: the loss keeps one of two repeated singular "
                          "values' vectors and drops the other (a truncation inside a tie): "
                          "it depends on an arbitrary basis there and has no gradient")
    if (at & duo & ~eye).any():
        raise LinAlgError(
            f"{what} backward: the loss reads repeated {'eigen' if what == 'eigh' else 'singular'}"
            " values' vectors of a complex matrix, where the exact gradient needs the limit of"
            " a 0/0 term, which minigrad computes for real input only so far; pass"
            " ties=\"zero\" (exact when the loss does not tell the tied vectors apart, as the"
            " polar factor U Vh) or ties=mg.linalg.TiePolicy(\"lorentzian\", eps=...)")
    return at


def complex_svd_backward(U: Tensor, S: Tensor, Vh: Tensor, gU: Tensor | None,
                         gS: Tensor | None, gVh: Tensor | None,
                         policy: _ties.TiePolicy, kept_only: bool = False) -> Tensor:
    """gA for A = U diag(S) Vh, A complex (module docstring). ``kept_only``: U, S, Vh are
    the top k triplets of a truncated SVD, whose complement terms are not these (S^-1) but
    ``_svd_trunc``'s solve, which the caller adds."""
    m, n, k = U.shape[-2], Vh.shape[-1], S.shape[-1]
    s = S._array
    eps = float(np.finfo(s.dtype).eps)
    Uk, Vhk = U[..., :, :k], Vh[..., :k, :]
    _no_complement_read(gU, gVh, k)
    gUk = None if gU is None else gU[..., :, :k]
    gVk = None if gVh is None else gVh[..., :k, :].mH
    if gUk is None and gVk is None:
        g = make_tensor(np.zeros(s.shape, s.dtype)) if gS is None else gS
        if policy.kinks == "subgradient" and policy.kind == "exact":
            g = _kinks.subgradient(g, s, tie_level(s, eps),
                                   C_NOISE * eps * np.abs(g._array).max(axis=-1))
        return (Uk * g.unsqueeze(-2).to(U.dtype)) @ Vhk
    Vk = Vhk.mH
    zero = make_tensor(np.zeros(s.shape[:-1] + (k, k), U.dtype))
    J = zero if gUk is None else Uk.mH @ gUk
    K = zero if gVk is None else Vk.mH @ gVk
    noise = C_NOISE * eps * np.sqrt(max(m, n)) * (colmax(gUk) + colmax(gVk))
    phase = np.abs(np.diagonal(J._array, 0, -2, -1).imag + np.diagonal(K._array, 0, -2, -1).imag)
    if (phase > noise[..., None]).any():
        raise LinAlgError(f"svd backward: {_PHASE}")
    Ja, Ka = J - J.mH, K - K.mH
    Sr, Sc = S.unsqueeze(-2), S.unsqueeze(-1)  # [.., i, j] = s_j, s_i
    xp, xm = Sr - Sc, Sr + Sc
    tie = tie_level(s, eps)[..., None]
    eye = np.eye(k, dtype=bool)
    nz = noise[..., None, None]
    Np, Nm = Ja + Ka, Ja - Ka
    absent = absent_triplets(gS, gUk, gVk, k)
    _zero_value_read(s, tie[..., 0], absent, policy)
    zp = eye | _at_poles(Np, xp._array, tie, nz, absent, policy, "svd")
    zm = _at_poles(Nm, xm._array, tie, nz, absent, policy, "svd")
    X = (_quot(Np, xp, zp, policy) + _quot(Nm, xm, zm, policy)) * 0.5
    if gS is not None:
        X = X + gS.to(U.dtype).diag_embed()
    gA = Uk @ X @ Vhk
    small = np.broadcast_to(s[..., None, :] <= tie, s.shape[:-1] + (1, k))
    if kept_only:
        return gA
    if m > k and gUk is not None:
        R = gUk - Uk @ (Uk.mH @ gUk)
        gA = gA + _quot(R, Sr, small, policy) @ Vhk
    if n > k and gVk is not None:
        Q = gVk - Vk @ (Vk.mH @ gVk)
        gA = gA + Uk @ _quot(Q, Sr, small, policy).mH
    return gA


def _no_complement_read(gU: Tensor | None, gVh: Tensor | None, k: int) -> None:
    """A full U's (Vh's) columns past k are an arbitrary basis of the complement."""
    for part in (None if gU is None else gU._array[..., :, k:],
                 None if gVh is None else gVh._array[..., k:, :]):
        if part is not None and part.size and part.any():
            raise LinAlgError("svd backward: the loss reads the columns of a full U (rows of "
                              "a full Vh) past min(m, n), an arbitrary basis of the "
                              "complement, for a complex matrix; use full_matrices=False")


def _zero_value_read(s: np.ndarray, tie: np.ndarray, absent: np.ndarray,
                     policy: _ties.TiePolicy) -> None:
    """A zero singular value whose triplet the loss reads: its terms with 1 / s_j (into
    the complement, and the phase term of the minus pole) are 0/0 for any loss with a
    gradient, with limits that need second-order information (U S Vh reads them as
    s_j (...) / s_j), real-only so far; "zero" takes them as 0."""
    if policy.kind == "exact" and ((s <= tie[..., None]) & ~absent).any():
        raise LinAlgError("svd backward: the loss reads the singular vectors of a zero "
                          "singular value of a complex matrix, where the exact gradient needs "
                          "the limit of a 0/0 term, which minigrad computes for real input "
                          "only so far; pass ties=\"zero\" where those terms may be taken "
                          "as 0")


class ComplexEigh(Function):
    @staticmethod
    def forward(ctx: Context, A: Tensor, lower: bool, tol: float | None, max_sweeps: int,
                policy: _ties.TiePolicy) -> tuple[Tensor, Tensor]:
        w, v = hermitian_eigh_forward(A._array, lower, True, tol=tol, max_sweeps=max_sweeps)
        outs = make_tensor(w), make_tensor(v)
        ctx.save_for_backward(*outs)
        ctx.set_materialize_grads(False)
        ctx.policy = policy
        return outs

    @staticmethod
    def backward(ctx: Context, gL: Tensor | None, gU: Tensor | None) -> tuple:
        L, U = ctx.saved_tensors
        return complex_eigh_backward(L, U, gL, gU, ctx.policy), None, None, None, None


def complex_eigh_backward(L: Tensor, U: Tensor, gL: Tensor | None, gU: Tensor | None,
                          policy: _ties.TiePolicy) -> Tensor:
    """gA for Hermitian A = U diag(L) U^H (module docstring)."""
    n = L.shape[-1]
    l = L._array
    if n == 0 or (gL is None and gU is None):
        return make_tensor(np.zeros(U.shape, U.dtype))
    eps = float(np.finfo(l.dtype).eps)
    tie = eigh_tie_level(l)
    if gU is None:
        assert gL is not None
        g = gL
        if policy.kinks == "subgradient" and policy.kind == "exact":
            g = _kinks.subgradient(g, l, tie, C_NOISE * eps * np.abs(g._array).max(axis=-1))
        return (U * g.unsqueeze(-2).to(U.dtype)) @ U.mH
    J = U.mH @ gU
    noise = C_NOISE * eps * np.sqrt(n) * colmax(gU)
    if (np.abs(np.diagonal(J._array, 0, -2, -1).imag) > noise[..., None]).any():
        raise LinAlgError("eigh backward: the eigenvectors in the complex case are specified "
                          "up to multiplication by e^(i phi), and this loss depends on that "
                          "phase: it is not a function of A there, so it has no gradient")
    N = J - J.mH
    E = L.unsqueeze(-2) - L.unsqueeze(-1)  # [.., i, j] = l_j - l_i
    z = np.eye(n, dtype=bool) | _at_poles(N, E._array, tie[..., None], noise[..., None, None],
                                         absent_triplets(gL, gU, None, n), policy, "eigh")
    X = _quot(N, E, z, policy) * 0.5
    if gL is not None:
        X = X + gL.to(U.dtype).diag_embed()
    return U @ X @ U.mH


def svd(A: Tensor, full_matrices: bool, tol: float | None, max_sweeps: int,
        policy: _ties.TiePolicy) -> tuple[Tensor, Tensor, Tensor]:
    """mg.linalg.svd of a complex A (its top_k is ``_svd_trunc``'s)."""
    if not A.requires_grad or not is_grad_enabled():
        u, s, vh = unrecorded(complex_svd_forward, A._array, bool(full_matrices), True,
                              tol=tol, max_sweeps=max_sweeps)
        return make_tensor(u), make_tensor(s), make_tensor(vh)
    return ComplexSVD.apply(A, bool(full_matrices), tol, max_sweeps, policy)


def eigh(A: Tensor, lower: bool, tol: float | None, max_sweeps: int,
         policy: _ties.TiePolicy) -> tuple[Tensor, Tensor]:
    """mg.linalg.eigh of a complex (Hermitian) A."""
    if not A.requires_grad or not is_grad_enabled():
        w, v = unrecorded(hermitian_eigh_forward, A._array, lower, True, tol=tol,
                          max_sweeps=max_sweeps)
        return make_tensor(w), make_tensor(v)
    return ComplexEigh.apply(A, lower, tol, max_sweeps, policy)
