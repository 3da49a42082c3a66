"""The bond rule: + pole terms that first-order data decide, where the loss reads the
SVD's factors through a bond it may rotate (``_tie_limits`` takes every other limit).

Where the cotangents show a loss reading the factors through a bond it may rotate (A = U sqrt(S),
B = sqrt(S) Vh read apart, as tensor networks do; U S V^T is a special case), i.e.
s_i Z_ij = s_j Z_ji and 2 s_i gS_i = Z_ii with Z = J + K to rounding, the + pole term is
(Z_ij / s_j + Z_ji / s_i) / 2 near a tie and at an uncoupled one. When such a node's
result will be differentiated again, it takes its whole gradient from ``_svd_gauge``
instead (``bond_fit``): no poles at all, and written in the bond's own variables, so the
next pass meets cotangents of the bond's form exactly and decides every read tie the same
way, coupled or unwitnessed too (``inherited``). The rule above alone would not carry over:
through the plain formula, which reads U and V off their manifold, a second pass's J and K
are not of that form (their symmetric parts are not the loss's; the rule's value from them
fails the four losses of test_second_order_at_a_kept_tie_of_a_truncation). A tie the bond
cannot vouch for (coupled, or read only at rounding) looks as any other, and where the
look's limits equal the bond's value on a node other triplets witness, the node takes the
bond's backward all the same (``confirmed``), so its next pass needs no look either.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..autograd.function import make_tensor
from ..functions import where
from ..tensor import Tensor
from ._checks import adjoint
from ._svd_parts import Numerators, colnorms
from ._svd_poles import Poles, coupling, tie_level


def product_limits(num: Numerators, S: Tensor, gS: Tensor | None, poles: Poles,
                   noise: np.ndarray, scale_noise: float) -> tuple[np.ndarray, Tensor] | None:
    """The + pole terms that first-order data decide, without a look downstream: where the
    cotangents are those of a loss that reads the factors through a bond, A = U sqrt(S)
    and B = sqrt(S) Vh, and is unchanged by any rotation of that bond (A -> A Q,
    B -> Q^T B: a tensor network's gauge, which TRG's and every SVD-split network's
    contractions have), or through their product A B = U S Vh alone (a function of the
    matrix itself, invariant under any A -> A X, B -> X^-1 B, a special case). With
    Z = J + K (J = U^T gU, K = V^T gV) such a loss has, at every S,

        s_i Z_ij = s_j Z_ji   (off the diagonal),    2 s_i gS_i = Z_ii,

    (the rotation's generator read through the chain rule, and S read only through the
    bond), so N+_ij = Z_ij - Z_ji = (s_j - s_i) Z_ij / s_j and the term is

        N+_ij / (s_j - s_i) = (Z_ij / s_j + Z_ji / s_i) / 2,

    an identity wherever the form holds (near a pole: the plain quotient without its
    cancellation, and a later pass differentiates it: the quotient's own derivatives carry
    eps |g| / x^2, useless at gaps below ~1e-7 s_1) and, at a tie, the limit for such a
    loss. First-order data cannot show that the form holds around this point: a term silent
    at first order (a square vanishing here) can break it, and so can reads aligned with
    A's own singular blocks (the top triplets and a tied pair read through separate
    products, whose cross terms vanish here only), and then the second derivatives near a
    tie are wrong (strict xfail tests, beside the product rule's). The identities
    are checked to rounding on every pair the loss reads (s_i above the tie level), each at
    its own scale: pairs apart from each other are what shows the structure, since at a tie
    the off-diagonal one only says the loss has a gradient, and the small singular values
    are checked as well, since a loss may read them apart from the bond. At a tie it is
    taken only where the pair is uncoupled (J_ij, J_ji, K_ij, K_ji all below the node's
    rounding times s / s_1, where the term a mimic would change is within rounding: the
    symmetry-protected ties of tensor networks, where it is 0 with the right derivatives); a
    coupled tied pair looks downstream as before, since a loss that also reads U V^T alone
    (a polar factor, whose limit is 0) or U f(S) V^T can mimic those cotangents at the tie
    (U^T C V symmetric on the pair, no symmetric part elsewhere, zero on the diagonal: by
    structure at a diagonal A, U = V = I), and so can a matrix function that vanishes at
    the tied value (log S at s = 1), unless each tied member shows the bond's
    Z_ii = 2 s_i gS_i != 0 (beyond the node's rounding, or its own where the loss reads
    it far below s_1's, as TRG's ordered phase does its doublets). (Such a function
    summed with a product would mimic them even then, however faint the product, and so
    does the polar factor near a tie, below gaps where the form test sees its
    x (M_ij + M_ji): ~1e-11 s_1 for a coupling at the loss's scale, wider for a smaller
    one (c x below the rounding): the cases this rule gets wrong, strict xfail tests.)
    Returns the mask of the entries it decides and their values, or None where the
    cotangents are not of that form."""
    if num.J is None or num.K is None or not (poles.tie_p.any() or poles.weak_p.any()):
        return None
    got = _bond_terms(num.J, num.K, gS, S, ~poles.absent, poles.tie_p, poles.weak_p, noise,
                      scale_noise)
    return None if got is None or not got[0].any() else got


class BondFit(NamedTuple):
    """A loss reading the top ``r`` triplets through a bond, as first-order data show it:
    ``missing`` the near and tied + pole entries they cannot vouch for (unwitnessed or
    coupled ties), ``values`` the bond's value of every + pole term."""

    r: int
    missing: np.ndarray
    values: Tensor
    witnessed: bool  # every batch element has a read triplet showing the bond (Z_ii != 0)


def bond_fit(num: Numerators, S: Tensor, gS: Tensor | None, poles: Poles, noise: np.ndarray,
             scale_noise: float, inherited: bool) -> BondFit | None:
    """Whether the cotangents are those of a loss reading the top r triplets through a bond
    (``product_limits``' test on every pair they read, the others exactly absent), so that
    ``_svd_gauge`` gives the whole gradient without poles once nothing is ``missing``. A tie
    among the read triplets must pass as in ``product_limits`` (witnessed and uncoupled)
    unless ``inherited``: this walk differentiates this node's own bond backward, whose
    cotangents have the bond's form by construction at every tie. The ones that do not
    pass are ``missing``, for a look to confirm."""
    if num.J is None or num.K is None:
        return None
    k = S.shape[-1]
    absent = poles.absent.reshape(-1, k)
    if not (absent == absent[:1]).all():
        return None
    r = int(k - absent[0].sum())
    if r == 0 or absent[0, :r].any() or (S._array[..., r - 1:r] <= poles.tie_level).any():
        return None
    s1 = S._array[..., 0]
    if not ((s1 > 1e-140) & (s1 < 1e140)).all():  # the bond backward squares S (P^2)
        return None
    got = _bond_terms(num.J, num.K, gS, S, ~poles.absent, poles.tie_p, poles.weak_p, noise,
                      scale_noise, inherited=inherited)
    if got is None or _reads_s_apart(num, S, gS, ~poles.absent, noise, scale_noise):
        return None
    read = ~poles.absent
    near = (poles.tie_p | poles.weak_p) & read[..., :, None] & read[..., None, :]
    diag_z = np.abs(np.diagonal(num.J._array, 0, -2, -1) + np.diagonal(num.K._array, 0, -2, -1))
    witnessed = bool(((diag_z > 2 * noise[..., None]) & read).any(axis=-1).all())
    return BondFit(r, near & ~got[0], got[1], witnessed)  # s_i + s_j poles: read, apart


def _reads_s_apart(num: Numerators, S: Tensor, gS: Tensor | None, read: np.ndarray,
                   noise: np.ndarray, scale_noise: float) -> bool:
    """Whether some read s_i is read apart from the bond beyond rounding, judged by what
    the bond backward would drop, (2 s_i gS_i - Z_ii) / 2 s_i u_i v_i^T, against the
    rounding its own diagonal term (Z_ii / 2 s_i) and gS carry: triplet by triplet, as
    ``_bond_terms`` judges 2 s_i gS_i = Z_ii only at s_1's scale, enough for the + pole
    terms it decides. (A loss adding c s_i for a tiny s_i passed that, and the whole
    backward lost c u_i v_i^T.)"""
    assert num.J is not None and num.K is not None  # (bond_fit's caller checked)
    j, k = num.J._array, num.K._array
    s = S._array
    g = np.zeros(s.shape) if gS is None else gS._array
    z = np.diagonal(j, 0, -2, -1) + np.diagonal(k, 0, -2, -1)
    cols = colnorms(j) + colnorms(k)  # ~ |gU_i| + |gV_i|
    safe = 2 * np.where(s > 0, s, 1.0)
    lost = np.abs(2 * s * g - z) / safe
    level = scale_noise * (cols / safe + np.abs(g).max(axis=-1, keepdims=True))
    return bool((read & (lost > 2 * level)).any())


def confirmed(fit: BondFit, plus: Tensor | None, S: Tensor, noise: np.ndarray) -> bool:
    """Whether a look's limits at the entries the bond could not vouch for equal the bond's
    value there, to the gradient's rounding (noise / s_1), on a node where other triplets
    witness the bond: then the loss reads the node through the bond at those ties too, as
    far as their values show. (A loss silent there at first order, the rest state of an
    elastic energy, witnesses nothing and keeps the look's limits.)"""
    if plus is None or not fit.witnessed:
        return False
    # Held to the bond rule's own bound (``_bond_terms``): a difference that moves the
    # gradient by more than the node's rounding, noise / s_1, is the look's to keep (a
    # polar factor's coupled read, limit 0, took the bond's 2 c / s here, c up to noise).
    s1 = S._array[..., :1, None]
    diff = np.abs(plus._array - fit.values._array) * s1
    return not (np.where(fit.missing, diff, 0.0) > 2 * noise[..., None, None]).any()


def _bond_terms(J: Tensor, K: Tensor, gS: Tensor | None, S: Tensor, reads: np.ndarray,
                tie: np.ndarray, weak: np.ndarray, noise: np.ndarray,
                scale_noise: float, inherited: bool = False) -> tuple[np.ndarray, Tensor] | None:
    """``product_limits``' test and values on the triplets ``reads``; None where the test
    fails. For complex input (J = U^H gU, K = V^H gV, a unitary gauge) the identities are
    s_i Z_ij = conj(s_j Z_ji) and 2 s_i gS_i = Z_ii, whose imaginary part is the phase
    test, and the value (Z_ij / s_j + conj(Z_ji) / s_i) / 2. The mask leaves out coupled
    or unwitnessed tied pairs unless ``inherited`` (their form is then the recorded bond
    backward's, by construction)."""
    s = S._array
    eps = float(np.finfo(s.dtype).eps)
    # The identities are tested on every pair the rule may take, small singular values too:
    # pairs above the near-pole level do not vouch for the rest (a loss may read the small
    # triplets apart from the bond, as sum_small sqrt(s_i) u_i v_i^T). Rounding in s_i Z_ij
    # is s_i times Z's, so each pair is judged at its own scale, max(s_i, s_j).
    reads = reads & (s > tie_level(s, eps))
    pair = reads[..., :, None] & reads[..., None, :]
    j, k = J._array, K._array
    s1 = s[..., :1]
    g = np.zeros(s.shape) if gS is None else gS._array
    gmax = np.abs(g).max(axis=-1, keepdims=True)
    tol = noise[..., None] * s1 + scale_noise * s1 * gmax
    at = np.maximum(s[..., :, None], s[..., None, :]) / np.where(s1 > 0, s1, 1.0)[..., None]
    sz = s[..., :, None] * (j + k)  # [i, j] = s_i Z_ij
    if (np.where(pair, np.abs(sz - np.swapaxes(sz, -1, -2).conj()), 0.0)
            > 2 * tol[..., None] * at).any():
        return None
    diag_z = np.diagonal(j, 0, -2, -1) + np.diagonal(k, 0, -2, -1)
    read_s = 2 * s * g  # what a bond read gives Z_ii
    lost = np.abs(read_s - diag_z)
    if (np.where(reads, lost, 0.0) > 2 * tol).any():
        return None
    coupled = coupling(j, k)
    # A tied member must witness the bond (Z_ii = 2 s_i gS_i != 0): a matrix function
    # vanishing at the tied value (log S at s = 1, at an orthogonal A) has J = K = 0 and,
    # with a zero diagonal, gS = 0 there too, and a limit that only a look finds.
    witness = np.abs(diag_z) > 2 * noise[..., None]
    # ... or at its own scale, where it is read far below s_1's rounding (TRG's ordered
    # phase: the Z2 doublets at the bottom of the kept spectrum, read at ~1e-13 of the top
    # triplet): gS_i above gS's rounding and 2 s_i gS_i = Z_ii to rounding of their own
    # size. Rounding that does not come through a bond fails that (it would have to agree
    # to 2 scale_noise); rounding through one has its form and gets its value, right for
    # it. The known limit below (a function vanishing at the tie beside a product read of
    # the member) holds whatever the read's size.
    faint = ~witness & (np.abs(g) > 2 * scale_noise * gmax) & (
        lost <= 2 * scale_noise * (np.abs(diag_z) + np.abs(read_s)))
    witness |= faint
    # Uncoupled: so weakly that the term a mimic would change (a polar factor's read of the
    # pair, symmetric with a zero diagonal, whose limit is 0: the bond's value is 2 c / s
    # for a coupling c) moves the gradient by no more than the node's rounding, noise / s_1:
    # c <= noise s / s_1. (At the node's rounding alone, noise, a tie at s = 1e-8 s_1 took
    # 2 noise / s, 1.9e-5 off on gradients of ~1, and float32 at 1e-3 s_1 5-19%.) A near
    # pair with a faint member is held to that bound too (its form test sees such a
    # coupling only through c x), and a tie of them to one rounding unit, eps |g|: under
    # noise's 64 sqrt(n) eps a float32 mimic there took 3e-5 of |g|, where a look gets
    # 1e-9. TRG's tied doublets are coupled at <= 4e-6 noise s / s_1, ~270x below it; its
    # near ones (steps 6-7) at up to 1.2e-2, which one unit would send to looks (12 in
    # all: 7.9x "zero"'s time), so a faint near pair keeps the node's bound, as close to
    # strongly read near pairs' exposure (they have no coupling test) as it is.
    held = faint[..., :, None] | faint[..., None, :]
    unit = float(np.finfo(s.dtype).eps) / scale_noise  # noise in units of eps |g|
    bound = noise[..., None, None] * at
    near_ok = weak & (~held | (coupled <= bound))
    tie_ok = tie & (coupled <= np.where(held, bound * unit, bound))
    # Near a tie too: the value is the quotient's without its cancellation, and its
    # derivatives the term's where the form holds around here (see the docstring); a zero
    # seed (all cotangents 0) shows no form at all.
    take = pair & (inherited | (witness[..., :, None] & witness[..., None, :]
                                & (near_ok | tie_ok)))
    safe = where(make_tensor(reads), S, 1.0).unsqueeze(-2)
    Zq = (J + K) / safe  # [i, j] = Z_ij / s_j
    return take, (Zq + adjoint(Zq)) * 0.5
