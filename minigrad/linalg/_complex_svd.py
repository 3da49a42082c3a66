"""The complex SVD as a differentiable Tensor: the forward is ``_complex_forward``'s, the
backward the real one's closed form with conjugate transposes, in torch's convention (a
cotangent is dL/dRe + i dL/dIm). (The Hermitian eigh is eigh.py's own node, its forward
chosen by dtype.)

SVD: with J = U^H gU and K = V^H gV (reduced factors),

    gA = U [diag(gS) + X] V^H + (I - U U^H) gU S^-1 V^H + U S^-1 gV^H (I - V V^H),
    X_ij = N+_ij / 2(s_j - s_i) + N-_ij / 2(s_j + s_i),  N+- = (J - J^H) +- (K - K^H),

where the s_j + s_j diagonal of the second term is the imaginary part the complex case
adds, i (Im J_ii - Im K_ii) / 2 s_i. The singular vectors are fixed only up to
u_j, v_j -> u_j e^{i phi}, v_j e^{i phi}; a loss that changes with phi has Im J_jj +
Im K_jj != 0, and no gradient: LinAlgError, decided by the same rounding scale as the
real tie tests (not torch's 1e-2). For the Hermitian eigh the phase test is Im J_jj = 0
(J = U^H gU: ``eigh._check_phase``); past it the real backward serves, conjugate transposes
and looks at repeated eigenvalues included.

The rest is the SVD's. At a repeated value the policies act as for real input: "zero"
takes the term as 0, "lorentzian" broadens it, a pair whose numerator is exactly zero (a
triplet the loss never reads) takes 0, and a loss of S alone takes the kinks' subgradient
(``_kinks``). Under "exact", at a tie between read triplets or a read zero value (whose
phase term i (Im J_jj - Im K_jj) / 2 s_j and 1 / s_j terms are 0/0 too): a loss that
reads the top r triplets through a bond, A = U_r sqrt(S_r) and B = sqrt(S_r) Vh_r,
unchanged by A Q, Q^H B (Q unitary: f(U S Vh), the MPS canonical forms' contractions),
shows it in its cotangents: S Z Hermitian and 2 s_i gS_i = Z_ii on the read triplets, Z =
J + K (``_tie_bond.bond_fit``, the imaginary diagonal being the phase test). Then the
whole gradient is the bond's (``_svd_gauge``: no poles, and differentiable again into
cotangents of the same form); a tied pair read together (coupled) or silent on its
diagonal is first confirmed by a look downstream. Any other loss takes every 0/0 term's
limit from a look downstream, the loss's second derivatives along S (``_tie_limits``,
with two derivatives exact when the result will be differentiated), after checking that
the loss has a gradient there (nu = x mu to rounding: else it depends on an arbitrary
basis of the tie, LinAlgError). Near a pole but off the tie the plain quotient serves,
with the formula's own eps |g| / gap of rounding (the real case's O(gap^2) limits there
are not taken for complex input).
"""

from __future__ import annotations

import numpy as np

from ..autograd.engine import result_is_differentiated
from ..autograd.function import Context, Function, make_tensor
from ..autograd.grad_mode import is_grad_enabled
from ..autograd.quiet import unrecorded
from ..functions import where
from ..tensor import Tensor
from . import _kinks
from . import ties as _ties
from ._complex_forward import complex_svd_forward
from ._svd_gauge import bond_gradient, bond_inherited
from ._svd_parts import C_NOISE, Factors, Numerators, colmax, fold_complement, numerators, quot
from ._svd_poles import Poles, absent_triplets, maybe_poles, near_level, tie_level
from ._tie_bond import bond_fit, confirmed
from ._tie_limits import looked_limits
from ._tie_sources import Downstream, Held, nested, note_chained
from .errors import LinAlgError

_PHASE = ("the singular vectors in the complex case are specified up to multiplication "
          "by e^(i phi) (u_j and v_j together), and this loss depends on that phase: "
          "it is not a function of A there, so it has no gradient")

_NEEDS_WALK = ("svd backward: the exact gradient at a repeated or zero singular value of a "
               "complex matrix takes the limit of a 0/0 term from the loss's second "
               "derivatives, which needs the backward walk's graph; call backward() or "
               "autograd.grad on the loss rather than the SVD's backward directly, or pass "
               "ties=\"zero\" (exact when the loss does not tell the tied vectors apart, as "
               "the polar factor U Vh) or ties=mg.linalg.TiePolicy(\"lorentzian\", eps=...)")


def plan_complex_backward(ctx: Context, s: np.ndarray, policy: _ties.TiePolicy) -> None:
    """In a complex SVD's forward (full or truncated): at a tie or a zero value (its phase
    term i (Im J_jj - Im K_jj) / 2 s_j is a pole at any shape) the backward may look
    downstream (``_bond``, ``_looked``)."""
    ctx.policy = policy
    ctx.wants_downstream = policy.kind == "exact" and s.size > 0 and maybe_poles(
        s, near_level(s, float(np.finfo(s.dtype).eps)), True)


class ComplexSVD(Function):
    @staticmethod
    def forward(ctx: Context, A: Tensor, full_matrices: bool, tol: float | None,
                max_sweeps: int, policy: _ties.TiePolicy) -> tuple[Tensor, Tensor, Tensor]:
        u, s, vh = complex_svd_forward(A._array, full_matrices, True, tol=tol,
                                       max_sweeps=max_sweeps)
        outs = make_tensor(u), make_tensor(s), make_tensor(vh)
        ctx.save_for_backward(*outs)  # the outputs themselves: higher order flows through them
        ctx.set_materialize_grads(False)
        plan_complex_backward(ctx, s, policy)
        return outs

    @staticmethod
    def backward(ctx: Context, gU: Tensor | None, gS: Tensor | None,
                 gVh: Tensor | None) -> tuple:
        U, S, Vh = ctx.saved_tensors
        return (complex_svd_backward(U, S, Vh, gU, gS, gVh, ctx.policy, ctx),
                None, None, None, None)


def _quot(nu: Tensor, x: Tensor, zero: np.ndarray, policy: _ties.TiePolicy,
          limit: Tensor | None = None, off: np.ndarray | None = None) -> Tensor:
    """nu / x, or where ``zero`` (``quot``) the ``limit`` a look took (0 where none, and on
    ``off``), or Lorentzian-broadened under that policy."""
    if policy.kind == "lorentzian":
        return nu * (x / (x * x + policy.eps))
    value = None
    if limit is not None:
        value = Held.apply(limit)
        if off is not None:
            value = where(make_tensor(np.broadcast_to(off, limit.shape)), 0.0, value)
    out = quot(nu, x, zero, value)
    assert out is not None  # nu is given
    return out


def _at_poles(nu: Tensor, x: np.ndarray, level: np.ndarray, noise: np.ndarray,
              absent: np.ndarray, policy: _ties.TiePolicy) -> np.ndarray:
    """Where the term nu / x is taken as 0 (or a look's limit): at |x| <= level. That is the
    "zero" policy's choice, and exact for a pair the loss never reads (both members
    ``absent``: their cotangents are exactly 0) or reads on one side only with nu = 0 (else
    a truncation inside a tie: no gradient). A pair it reads on both sides takes the limit
    of a look downstream under the exact policy (``_looked``)."""
    at = np.abs(x) <= level
    if policy.kind != "exact" or not at.any():
        return at
    solo = absent[..., :, None] ^ absent[..., None, :]
    if (at & solo & (np.abs(nu._array) > noise)).any():
        raise LinAlgError("svd backward: the loss keeps one of two repeated singular "
                          "values' vectors and drops the other (a truncation inside a tie): "
                          "it depends on an arbitrary basis there and has no gradient")
    return at


def complex_svd_backward(U: Tensor, S: Tensor, Vh: Tensor, gU: Tensor | None,
                         gS: Tensor | None, gVh: Tensor | None, policy: _ties.TiePolicy,
                         ctx: Context | None = None, kept_only: bool = False) -> Tensor:
    """gA for A = U diag(S) Vh, A complex (module docstring); ``ctx`` (the SVD's node,
    in a backward walk) lets a read tie or zero value take the bond's backward or the
    limits of a look downstream. ``kept_only``: U, S, Vh are the top k triplets of a
    truncated SVD, whose complement terms are not these (S^-1) but ``_svd_trunc``'s solve,
    which the caller adds."""
    m, n, k = U.shape[-2], Vh.shape[-1], S.shape[-1]
    s = S._array
    eps = float(np.finfo(s.dtype).eps)
    Uk, Vhk = U[..., :, :k], Vh[..., :k, :]
    # a full U's (Vh's) columns past k: their cotangents folded into the first k
    scale_noise = C_NOISE * eps * np.sqrt(max(m, n))
    gUk = None if gU is None else fold_complement(U, gU, k, scale_noise, "U")
    gVk = None if gVh is None else fold_complement(Vh.mH, gVh.mH, k, scale_noise, "Vh")
    if gUk is None and gVk is None:
        g = make_tensor(np.zeros(s.shape, s.dtype)) if gS is None else gS
        if policy.kinks == "subgradient" and policy.kind == "exact":
            g = _kinks.subgradient(g, s, tie_level(s, eps),
                                   C_NOISE * eps * np.abs(g._array).max(axis=-1))
        return (Uk * g.unsqueeze(-2).to(U.dtype)) @ Vhk
    num = numerators(Uk, Vhk.mH, gUk, gVk, m > k and not kept_only, n > k and not kept_only)
    zero = make_tensor(np.zeros(s.shape[:-1] + (k, k), U.dtype))  # (the bond test reads both)
    J = zero if num.J is None else num.J
    K = zero if num.K is None else num.K
    Np, Nm, R, Q = num.plus, num.minus, num.R, num.Q
    assert Np is not None and Nm is not None  # U or V has a cotangent (returned above if not)
    num = num._replace(J=J, K=K)
    noise = C_NOISE * eps * np.sqrt(max(m, n)) * (colmax(gUk) + colmax(gVk))
    phase = np.abs(np.diagonal(J._array, 0, -2, -1).imag + np.diagonal(K._array, 0, -2, -1).imag)
    if (phase > noise[..., None]).any():
        raise LinAlgError(f"svd backward: {_PHASE}")
    Sr, Sc = S.unsqueeze(-2), S.unsqueeze(-1)  # [.., i, j] = s_j, s_i
    xp, xm = Sr - Sc, Sr + Sc
    tie = tie_level(s, eps)[..., None]
    # near a tie (within eps^(1/3) s_1) nu / x loses digits: the exact policy takes the
    # look's series there too (O(x^2)-exact), or the bond's backward
    near = near_level(s, eps)[..., None] if policy.kind == "exact" else tie
    eye = np.eye(k, dtype=bool)
    nz = noise[..., None, None]
    absent = absent_triplets(gS, gUk, gVk, k)
    at_ties = _read_ties(s, tie, absent)
    if policy.kind == "exact" and nested():  # inside a look downstream: ties count as 0
        if at_ties.any():
            note_chained()
        policy = _ties.TiePolicy("zero")
    mu = _NO_LIMITS
    close = _read_ties(s, near, absent)
    if policy.kind == "exact" and close.any():
        weak = bool((close & ~at_ties).any())  # near-ties off the ties
        if ctx is None or not ctx.wants_downstream:
            raise LinAlgError(_NEEDS_WALK)
        look = _Look(ctx, U, S, Vh, (gU, gS, gVh), kept_only, weak)
        # (the bond backward reads the first k factors' cotangents only, and rebuilds the
        # input from them: not a truncated SVD's)
        gA = None if kept_only or _reads_complement(gU, gVh, k) else _bond(
            ctx, U, S, Vh, (gU, gVh), num, absent, noise, eps, look, near)
        if gA is not None:
            return gA
        mu = _looked(look, S, num, absent, tie, noise, max(m, n))
    zp = eye | _at_poles(Np, xp._array, tie, nz, absent, policy)
    zm = _at_poles(Nm, xm._array, tie, nz, absent, policy)
    if policy.kind == "exact":  # the series' entries beside the ties, where it was taken;
        # where none was (the loss's cotangents do not depend on S: mu = 0), those whose
        # numerator is rounding are 0 too (nu / x there is rounding over a small x)
        beside = close & ~eye
        zp = zp | (beside if mu.plus is not None else beside & (np.abs(Np._array) <= nz))
        beside = close & (s[..., None, :] + s[..., :, None] <= near)
        zm = zm | (beside if mu.minus is not None else beside & (np.abs(Nm._array) <= nz))
    X = (_quot(Np, xp, zp, policy, mu.plus, eye) + _quot(Nm, xm, zm, policy, mu.minus)) * 0.5
    if gS is not None:
        X = X + gS.to(U.dtype).diag_embed()
    gA = Uk @ X @ Vhk
    def small(lim: Tensor | None) -> np.ndarray:
        level = tie if lim is None else near  # (a limit taken: its series near 0 too)
        return np.broadcast_to(s[..., None, :] <= level, s.shape[:-1] + (1, k))

    if R is not None:
        gA = gA + _quot(R, Sr, small(mu.R), policy, mu.R) @ Vhk
    if Q is not None:
        gA = gA + Uk @ _quot(Q, Sr, small(mu.Q), policy, mu.Q).mH
    return gA


_NO_LIMITS = Numerators(None, None, None, None, None, None)


class _Look:
    """The limits mu of every pole term from one look downstream (``_tie_limits``: the
    loss's second derivatives along S, as for real input), taken when first asked; two
    derivatives of them are exact when the result will be differentiated."""

    def __init__(self, ctx: Context, U: Tensor, S: Tensor, Vh: Tensor, grads: tuple,
                 kept_only: bool = False, weak: bool = False) -> None:
        k = S.shape[-1]
        self.down = Downstream(ctx, grads)
        self.f = Factors(U, Vh, U[..., :, :k], Vh[..., :k, :].mH, k, not kept_only)
        self.S, self.gS = S, grads[1]
        self.weak = weak  # near-ties off the ties: the value's first derivative too
        self.mu: Numerators | None = None

    def limits(self) -> Numerators:
        if self.mu is None:
            self.mu = looked_limits(self.f, self.S, self.gS, self.down,
                                    2 if result_is_differentiated() else int(self.weak),
                                    self.weak)
        return self.mu


def _looked(look: _Look, S: Tensor, num: Numerators, absent: np.ndarray, tie: np.ndarray,
            noise: np.ndarray, size: int) -> Numerators:
    """The look's limits, after checking that the loss has a gradient there: nu = x mu to
    rounding at the read ties and zero values, judged by the loss's curvature where the
    cotangents cancelled (``size``: max(m, n), the rounding's growth)."""
    k = S.shape[-1]
    mu = look.limits()
    s = S._array
    read = ~absent
    pair = read[..., :, None] & read[..., None, :]
    zero = s <= tie[..., 0]
    checks = [(num.plus, S.unsqueeze(-2) - S.unsqueeze(-1), mu.plus,
               pair & ~np.eye(k, dtype=bool) & (np.abs(s[..., None, :] - s[..., :, None]) <= tie)),
              (num.minus, S.unsqueeze(-2) + S.unsqueeze(-1), mu.minus,
               pair & (s[..., None, :] + s[..., :, None] <= tie)),
              (num.R, S.unsqueeze(-2), mu.R, (read & zero)[..., None, :]),
              (num.Q, S.unsqueeze(-2), mu.Q, (read & zero)[..., None, :])]
    wider = None
    for nu, x, lim, need in checks:
        if nu is None or not need.any():
            continue
        r = np.abs(nu._array if lim is None else nu._array - x._array * lim._array)
        r = np.where(np.broadcast_to(need, r.shape), r, 0.0).max(axis=(-2, -1))
        if (r > noise).any():
            if wider is None:
                wider = noise + C_NOISE * float(np.finfo(s.dtype).eps) * np.sqrt(
                    size) * look.down.hessian_scale()
            if (r > wider).any():
                raise LinAlgError("svd backward: the loss reads the vectors of repeated (or "
                                  "zero) singular values of a complex matrix in a way that "
                                  "depends on an arbitrary basis of them (it is not a "
                                  "function of A there), so it has no gradient")
    return mu


def _read_ties(s: np.ndarray, tie: np.ndarray, absent: np.ndarray) -> np.ndarray:
    """(*, k, k): pairs of read triplets at a tie, and read zero values on the diagonal."""
    read = ~absent
    eye = np.eye(s.shape[-1], dtype=bool)
    at = np.abs(s[..., None, :] - s[..., :, None]) <= tie
    return read[..., :, None] & read[..., None, :] & np.where(eye, s[..., None, :] <= tie, at)


def _bond(ctx: Context, U: Tensor, S: Tensor, Vh: Tensor, grads: tuple, num: Numerators,
          absent: np.ndarray, noise: np.ndarray, eps: float, look: _Look,
          near: np.ndarray) -> Tensor | None:
    """The whole gradient by ``_svd_gauge``'s bond backward, where the cotangents are
    those of a loss reading the top r triplets through A = U_r sqrt(S_r) and
    B = sqrt(S_r) Vh_r and unchanged by A Q, Q^H B (Q unitary): ``bond_fit``'s test, whose
    diagonal holds the phase test too. A tied pair the loss reads together (coupled, as
    U S Vh does) or whose members' diagonal is silent (unwitnessed) could be a polar
    factor or a matrix function vanishing there at first order: its bond value must equal
    the limit a look downstream finds (``confirmed``). None where the form does not hold.
    ``grads``: (gU, gVh)."""
    gU, gVh = grads
    m, n, k = U.shape[-2], Vh.shape[-1], S.shape[-1]
    s = S._array
    tie = tie_level(s, eps)
    read = ~absent
    if ((read[..., :, None] ^ read[..., None, :])
            & (np.abs(s[..., None, :] - s[..., :, None]) <= tie[..., None])).any():
        return None  # a truncation inside a tie: no gradient (``_at_poles`` says so)
    fit = bond_fit(num, S, look.gS, Poles(s, tie, near[..., 0], False, absent), noise,
                   C_NOISE * eps * np.sqrt(max(m, n)), bond_inherited(ctx))
    if fit is None:
        return None
    Uk, Vhk = U[..., :, :k], Vh[..., :k, :]
    if fit.missing.any() and not confirmed(fit, look.limits().plus, S, noise):
        return None
    return bond_gradient(ctx, Uk, S, Vhk, None if gU is None else gU[..., :, :k],
                         None if gVh is None else gVh[..., :k, :], fit.r)


def _reads_complement(gU: Tensor | None, gVh: Tensor | None, k: int) -> bool:
    """Whether the loss reads a full U's columns (Vh's rows) past min(m, n)."""
    return any(part is not None and part.size > 0 and bool(part.any())
               for part in (None if gU is None else gU._array[..., :, k:],
                            None if gVh is None else gVh._array[..., k:, :]))




def svd(A: Tensor, full_matrices: bool, tol: float | None, max_sweeps: int,
        policy: _ties.TiePolicy) -> tuple[Tensor, Tensor, Tensor]:
    """mg.linalg.svd of a complex A (its top_k is ``_svd_trunc``'s)."""
    if not A.requires_grad or not is_grad_enabled():
        u, s, vh = unrecorded(complex_svd_forward, A._array, bool(full_matrices), True,
                              tol=tol, max_sweeps=max_sweeps)
        return make_tensor(u), make_tensor(s), make_tensor(vh)
    return ComplexSVD.apply(A, bool(full_matrices), tol, max_sweeps, policy)
