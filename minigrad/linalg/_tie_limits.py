"""Exact limits of the SVD backward's pole terms at (and near) repeated and zero singular
values, and the errors where the loss has no gradient.

Every pole x in {s_j - s_i, s_j + s_i, s_i} has a numerator nu in {N+_ij, N-_ij, R_:i, Q_:i}
(see ``_svd_backward``) that is the derivative of the loss l(U, S, V) along a rotation that
leaves A unchanged when x = 0: (u_i, u_j) and (v_i, v_j) together, (u_i, u_j) against
(v_i, v_j), or u_i (v_i) into the complement. So a loss that is a function of A (a loss with
a gradient) has nu = 0 on the whole plane x = 0, and by Hadamard's lemma nu(S) = x(S) mu(S)
with mu smooth: the pole term nu / x is mu. With U and V held, along S + t d (d_t x = c):

    mu = sum_{n >= 0} (-x / c)^n d_t^(n+1) nu / ((n+1)! c),

an identity in S; at a tie (x = 0) only n = 0 is left, and each further term gives mu one
more right derivative. The cotangents at the tie do not carry d_t nu (they are those of a
polar-factor loss, whose limit is 0, as often as of U diag(S) V^T, whose limit is not): it
is second-order information. Symmetry of derivatives gives it without a forward mode,
d_t^n gU = d/dU <d_t^(n-1) gS, d> (likewise for V), and nu is linear in (gU, gV): so the
backward takes the cotangents as the walk recorded them (the engine records a walk that
meets a node wanting this), takes Hessian-vector products along d, and pushes them through
the same maps that made nu. One d serves every pole at once: d_l = l + 1 is distinct and
positive. Terms kept: n = 0 (exact value) for a plain backward; up to n = 1 near a pole
(|x| <= eps^(1/3) s_1, where nu / x loses digits; the value is then O(x^2)-exact); up to
n = 2 when the result will be differentiated again (a second pass meets the tie too and
needs the limit's second derivatives), which makes second derivatives exact at ties.
Near a pole the series converges only within the distance to its nearest singularity in
t: a loss of f(S) with f not smooth at 0 (sqrt, log) has one where a small singular value
reaches 0, before the pole closes; where the series' tail is above the plain quotient's
rounding, the entry takes nu / x (``_tie_series.unsound``; where nu / x is taken once,
that rounding is a numerator's typical one). A known limit: the - and column poles close
only at S = 0, their planes x = 0 at negative s, where a loss of f(S) is a function of A
only for odd f. For an even one (S^2, A A^T, the polar factor) near them the series
converges to another limit (1.6e-7 for U S^2 Vh at s = 1e-6; 8-12% for a bond read
through A A^T at s = 1e-12, 1e-13, or in float32 at 3e-4, 1e-4) or fails the check below
and takes nu / x with the warning of an ill-conditioned gradient (the polar factor, a bond
at s ~ 1e-10: their gradients are, eps s_1 / x). Taking nu / x there without the check
lost the series where it is exact (a projector onto two small singular vectors: 1e-15 ->
1e-4) and the warnings the check owes (a truncation inside a near pair of small values),
so no cheaper rule is taken; telling even from odd would take a second direction d (the
odd limit does not depend on it).

Where nu is not x mu (to rounding, the rounding judged by the loss's curvature when the
cotangents are themselves rounding noise, as F - R at a rotation) the loss depends on an
arbitrary basis there: at a tie it has no gradient, and LinAlgError says so. Near one
(isolated pair, gap x below sqrt(eps) s_1) the pair is distinct, so the gradient exists:
nu / x, returned with an IllConditionedWarning (``_tie_errors.warn_ill_conditioned``:
the vectors are right to a rotation of ~eps s_1 / x, which moves nu by that times the
loss's curvature along it, so the gradient by up to eps s_1 (c_i + c_j) / x^2, c the pair's
cotangent columns). A tie between a triplet the loss reads through U or V and S and one
it drops (a truncation inside a tie) raises LinAlgError. A kink of a loss of S alone (tied
values weighed differently, a singular value at 0 that the loss changes with) takes the
minimum-norm subgradient before any of this (``_kinks``, ``ties.py``).

Triplets with exactly zero cotangent (a truncated part, a null space the loss multiplies
by 0) give exactly zero terms. A later pass through the result gives them cotangents from
the first-order formula alone; their limits then come from that formula rebuilt locally
(``Local``) rather than from the whole downstream. Inside the look downstream for one
limit, ties met at other SVDs are taken as 0, and so are the derivatives of the limits
other SVDs took earlier (``Held``): through chains of tied SVDs (tensor networks) the
result is exact when the ties are structural, i.e. along directions that keep them, where
those terms pair with nothing; that also bounds the cost (each look would otherwise
differentiate every later limit's own looks again: TRG's specific heat at 8 steps took
minutes). Near a pole the value stays O(x^2)-exact through a chain: the series is
(nu - T(t*)) / x, T the Taylor polynomial at t = 0 of the numerator the look
differentiates and t* = -x / c where the pole closes. Holding changes that numerator's
derivatives, not its value nu, and where the operations between this SVD and the next
are themselves a function of A (U f(S) V^T: for any cotangent they get) it still
vanishes at t*, so only the truncation is left, provided the terms are taken through
the chain too: n = 0 alone is off by O(x), which |nu - x mu| = O(x^2) hides below
rounding (by ~2 x at x <= 1e-7 s_1 before; second derivatives were 10-30% off). That
needs no other pole the look meets to close within |t*| of 0: a later tie that d splits
(a cluster there) leaves O(x) (a strict xfail test). Nor can a look remove its own plain
quotients' rounding at the other SVDs' near poles (gap x'), eps |g| / |x'| as in the
plain formula, more in second derivatives, which differentiate those quotients, silently:
through U S^3 Vh and a second SVD near a tie of relative gap 1e-7, 1e-8, 1e-10, 5e-4, 1.3
and 1e4 of the scale (strict xfail tests). A truncation inside the second SVD's near
pair there (gap 3e-9) has a first derivative of ~6e8, and what comes back flips with
the rounding of A (a 1e-15 change) between that and 60-250, silently, with and without
create_graph (found in review; cause not yet traced). Only a nested look, or taking such
a pole as 0 where its terms pair with nothing (tried: deciding that by comparing two
looks was at rounding level, and batch-wide), would. Ties alone (x = 0) take n = 0 only
through a chain: the rest serve the limit's derivatives, which the look cannot give at
generic ties (above), and cost the most.

Most poles need no look (``Poles``, ``_tie_bond``): a pair with one member the loss never
reads (a slice drops it) takes nu / x off the tie and 0 at it; so does a near pair both of
whose members it reads below rounding, in a pass not differentiated again (``faint``:
nu / x is then as exact as past the near level); and a loss reading the
factors through a bond it may rotate (tensor networks; U S V^T is a special case) decides
its + pole terms from first-order data, or takes its whole gradient from ``_svd_gauge``
(see ``_tie_bond``).

Cost, as a function of the graph (G nodes). Off every pole: the plain formula, O(k^3) per
node. Poles decided by the rules above: O(k^2) more per node, no walk (the bond's backward:
O(m n^2) with its truncated coupling, the plain formula's order). A node near a pole
tells the engine it may need its downstream (decided in the forward, before the backward
knows whether a look will run); a first-order walk that reaches one runs unrecorded and
keeps the forward graph to its end, the plain walk's peak (autograd/downstream.py). Every
other pole: one look per node, a replay of the walk from its start to the node,
recording (O(size of the graph downstream of it), dropped after the look), and a
Hessian-vector product through that record. A replay reuses the looks made before it
(a look takes the ties it meets as 0 and holds the limits taken before it, so looks
never nest); replays that would run more than G nodes in all give way to one recording
of the whole walk. So n looks cost O(n G) time: each is a Hessian-vector walk of its
own downstream, so a chain of n looking nodes pays ~n^2 / 2 node-walks; memory, one
recorded walk, and in a pass to be differentiated again each look's graph, which its
limit keeps. Measured where it bit, TRG's ordered phase (T = 1.5, bond 16, 20 steps):
the four smallest kept triplets of steps 6-19 are Z2 doublets (split by 1e-6..1e-10 s_1
at steps 6-7, below rounding from step 9) that the loss reads through the bond at ~1e-13
of the top triplet, below the node's rounding (2 noise: their Z_ii reach 0.2 of it).
Taken as unwitnessed, they looked 28 times (23x "zero"'s CPU time, 36 s against 1.6 s;
each two-level look's first level kept to the walk's end through its limit, 5.1 GB,
until a pass not differentiated again took its limits detached, 1.8 GB). They witness
the bond at their own scale (``_tie_bond``: gS_i ~700x its rounding, 2 s_i gS_i = Z_ii
to their own rounding), so the bond rule takes them: 4 looks, the energy 1.37-1.41x and
1.25x "zero"'s time and peak, the specific heat 1.31-1.35x and 1.32x, the values the same
to 7e-16 (the figures below, two runs).
A second pass (second derivatives) through a truncation that did not take the bond's
backward, or through a pass that read U and V but not S, takes its near-pole entries from
the local series where one applies (between dropped triplets; between read ones through a
loss of U and V alone) and the plain quotient elsewhere, and uncoupled kept ties as 0
(``Poles.through_recorded``), with no walk. Its coupled kept ties look, each walking the
recorded first pass downstream of it, unless that pass read U and V but not S (CTMRG's
projector: a function of the kept subspace that the bond's test does not cover): then the
loss's invariance gives the Hessian's share locally (``Covariant``, O(k^3) per node, no
walk). Measured (benchmarks/bench_tensor_networks.py --inner 3 --repeats 3, one
thread, CPU time and peak memory over "zero"'s, T = 1.5, 1.8, 2.0, 2.5): TRG at bond 16,
20 steps, the energy 1.14-1.52x and 1.13-1.89x (the most at T = 2.5: one look, walking the
recorded part below a pair that rounding in the sweeps put 3e-14 s_1 apart, a coupled tie,
which first-order data cannot tell from a polar factor's; its near pairs in the last
steps, read below rounding, take the plain quotient, ``Poles.faint``, where two more looks
had made it 2.0x); its specific heat 1.30-1.62x and 1.32-1.33x, where the second pass had
taken 20 looks (28-36x and 11.5x); the first pass still looks (a tie read at rounding
level, which first-order data cannot tell from the matrix function of
test_a_matrix_log_at_a_tie_at_one_is_not_mistaken_for_a_product). CTMRG's specific heat
(chi 24, 60 iterations) 1.59-1.91x and 1.0x (runs of under a second spread: 2.02x at
T = 1.5 in one run of --repeats 1, 3.0x at T = 2.0 with a compile beside it): its second
pass rebuilds 59 nodes' first-pass formula with two Hessian-vector products each,
op-bound at k = 48, where it had looked at ~31 nodes (the corner's Ising degeneracies),
each walking the first pass downstream of it: O(n^2) nodes in n iterations, 5.2-6.2x and
1.7-2.0x. (Its values agree with "zero"'s to 1e-14: the limits there are real but pair
with little along beta.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ..autograd.function import make_tensor
from ..functions import where
from ..tensor import Tensor
from ._svd_parts import C_NOISE, Factors, Numerators, Terms, colmax, colnorms, pairwise, quot
from ._svd_poles import Poles
from ._tie_errors import raise_if_undefined, warn_ill_conditioned
from ._tie_series import NONE, Masks, series_limits, unsound
from ._tie_sources import Covariant, Downstream, Earlier, Held, Local, judged
from .errors import LinAlgError


class PolePass(NamedTuple):
    """One SVD backward at its poles, as the tie limits read it: the numerators and where
    the poles are, the factors and (folded) cotangents they came from, the rounding
    scale, where second-order information comes from (``down``, ``earlier``; the formula
    to rebuild locally), and whether the result will be differentiated again."""

    num: Numerators
    poles: Poles
    S: Tensor
    minus_s: Tensor  # [.., i, j] = s_j - s_i
    plus_s: Tensor  # [.., i, j] = s_j + s_i
    gS: Tensor | None
    gUe: Tensor | None
    gVe: Tensor | None
    f: Factors
    scale_noise: float  # C_NOISE eps sqrt(max(m, n))
    eps: float
    down: Downstream | None
    earlier: Earlier | None
    formula: Callable
    differentiated: bool


def exact_terms(p: PolePass) -> Terms:
    """Each pole term replaced by its limit mu at and near the poles, after checking that
    the loss has a gradient there (nu = x mu to rounding; svd_backward has checked the
    kinks and the solo ties)."""
    (num, poles, S, minus_s, plus_s, gS, gUe, gVe, f, scale_noise, eps, down, earlier,
     formula, differentiated) = p
    need_p = poles.tie_p | poles.weak_p
    need_m = poles.tie_m | poles.weak_m
    need_z = poles.tie_z | poles.weak_z
    weak = bool(poles.weak_p.any() or poles.weak_m.any() or poles.weak_z.any())
    # How many derivatives of each limit must be right: two when the result will be
    # differentiated (a second pass meets this tie again and needs the second derivatives
    # of the first pass's limit), one near a pole (then the value is O(x^2)-exact).
    order = 2 if differentiated else int(weak)
    # Triplets an earlier pass dropped take their limits from its formula alone (cheap);
    # so do the + poles of a pass through one that read U and Vh alone (``Covariant``).
    loc: Masks | None = None  # (+ pairs, - pairs, columns) known locally
    local: Local | None = None
    if earlier is not None and gS is not None:
        a = earlier.absent
        loc_p, loc_z = a[..., :, None] & a[..., None, :], a[..., None, :]
        if Covariant.applies(earlier, differentiated) and (need_p & ~loc_p).any():
            assert down is not None  # an Earlier is found through it
            try:
                local = Covariant(earlier, down.outputs(), formula)
            except LinAlgError:  # the rebuild is not that pass's formula: it raised
                local = None
            if local is not None and _same(local.grads[1], gS, scale_noise):
                loc = Masks(np.ones_like(need_p), loc_p, loc_z)
            else:  # something else reads S: the look downstream decides
                local = None
        if loc is None and ((loc_p & (need_p | need_m)).any()
                            or (loc_z & need_z[..., None, :]).any()):
            assert down is not None  # an Earlier is found through it
            loc = Masks(loc_p, loc_p, loc_z)
            local = Local(earlier, down.outputs(), formula)
            if not _same(local.grads[1], gS, scale_noise, a):
                # This pass's loss reads the dropped triplets itself, not only through the
                # formula: near their poles the plain quotient (their ties still check nu).
                need_p, need_m = need_p & ~(poles.weak_p & loc_p), need_m & ~(poles.weak_m & loc_p)
                need_z = need_z & ~(poles.weak_z & a)
    top = colmax(gUe) + colmax(gVe)  # the largest cotangent column: the gradient's plain
    noise = scale_noise * top  # size times s_1, and the scale of a numerator's rounding
    # Which of the series and nu / x is nearer (``unsound``): by a numerator's
    # typical rounding, sqrt(n) eps |g|, where nu / x is taken once; by the bound where it
    # is differentiated again (its derivatives carry that rounding over x^2), or where the
    # cotangents came through a recorded pass's quotients (terms of size |g| / x that
    # cancel: 1e-11 where the series was right to 1e-15).
    once = not differentiated and (down is None or down.first_order())
    typical = noise / C_NOISE if once else noise
    Sr = S.unsqueeze(-2)

    def terms_with(mu: Numerators) -> tuple[dict, dict]:
        """Each kind of pole's (nu, x, where a limit is needed, mu), and |nu - x mu| there."""
        terms = {"plus": (num.plus, minus_s, need_p, mu.plus),
                 "minus": (num.minus, plus_s, need_m, mu.minus),
                 "R": (num.R, Sr, need_z[..., None, :], mu.R),
                 "Q": (num.Q, Sr, need_z[..., None, :], mu.Q)}
        return terms, {name: _resid(nu, x, lim, need)
                       for name, (nu, x, need, lim) in terms.items()}

    # Ties take the series' first term alone when a value is asked for (``series_limits``).
    ties = poles if order == 1 else None
    mu_l = NONE
    tails_l: dict = {}
    tails_g: dict = {}
    if local is not None:  # (loc is set with it)
        mu_l = series_limits(f, S, minus_s, plus_s, local, order, weak, ties, tails_l)
    everywhere = loc is None or _beyond(loc, need_p, need_m, need_z)
    mu_g = _general(f, S, minus_s, plus_s, gS, down, order, weak, ties, tails_g) \
        if everywhere else NONE
    mu = _merge(loc, mu_l, mu_g)
    if weak:
        un_p, un_m, un_z = unsound(poles, loc, tails_l, tails_g, minus_s, plus_s, S, typical)
        need_p, need_m, need_z = need_p & ~un_p, need_m & ~un_m, need_z & ~un_z
    terms, resid = terms_with(mu)
    tol = noise
    if loc is not None and local is not None and weak and _fails(resid, noise):
        # Near a pole (not a tie) the local series may miss, in a cluster (it converges
        # slowly there: CTMRG's corners): those entries keep the plain quotient, to eps |g|
        # / x, rather than walk the whole recorded pass per node.
        tol = noise + scale_noise * local.hessian_scale()
        over = {name: None if r is None else r > tol[..., None, None]
                for name, r in resid.items()}
        miss_p = _masked(over["plus"], poles.weak_p & loc.plus)
        miss_m = _masked(over["minus"], poles.weak_m & loc.minus)
        miss_z = np.zeros_like(need_z)
        for name in ("R", "Q"):  # a column is one pole
            o = _masked(over[name], poles.weak_z[..., None, :] & loc.cols)
            miss_z = miss_z | o.any(axis=-2)
        if miss_p.any() or miss_m.any() or miss_z.any():
            need_p, need_m, need_z = need_p & ~miss_p, need_m & ~miss_m, need_z & ~miss_z
            terms, resid = terms_with(mu)
    if local is not None and not everywhere and _fails(resid, noise):
        # Maybe rounding in cotangents that cancelled: those triplets' come from the earlier
        # pass's formula alone (the downstream never reads them), so its curvature is the
        # scale such rounding comes from, and judging by it costs no walk downstream.
        tol = noise + scale_noise * local.hessian_scale()
        if _fails(resid, tol):
            # The downstream reads those triplets after all: take every limit from it.
            tails_g = {}
            mu = mu_g = _general(f, S, minus_s, plus_s, gS, down, order, weak, ties, tails_g)
            un_p, un_m, un_z = unsound(poles, None, {}, tails_g, minus_s, plus_s, S, typical)
            need_p, need_m, need_z = need_p & ~un_p, need_m & ~un_m, need_z & ~un_z
            terms, resid = terms_with(mu)
            tol = noise
    bad: dict[str, np.ndarray | None] = {
        name: None if r is None else r > tol[..., None, None] for name, r in resid.items()}
    curvature = judged(down) if any(b is not None and b.any() for b in bad.values()) \
        else None
    if curvature is not None:
        # Maybe only rounding in cotangents that cancelled (F - R at a rotation): compare
        # with the loss's curvature, the scale such rounding comes from.
        wider = noise + scale_noise * curvature
        bad = {name: None if r is None else r > wider[..., None, None]
               for name, r in resid.items()}
    for name in ("R", "Q"):  # a column is one pole
        b = bad[name]
        if b is not None:
            bad[name] = np.any(b, axis=-2, keepdims=True)
    near: list = []
    for name, (_, _, need, _) in terms.items():
        b = bad[name]
        if b is not None:
            raise_if_undefined(name, need, b, poles, eps, near)
    if near:
        cols = np.zeros(())
        for g in (gUe, gVe):
            if g is not None:
                cols = cols + colnorms(g._array)
        plain = top if gS is None else np.maximum(
            top, np.abs(gS._array).max(axis=-1) * S._array[..., 0])
        warn_ill_conditioned(near, {name: t[0]._array for name, t in terms.items()
                                    if t[0] is not None}, S._array, cols, plain, eps)

    zp = poles.zero_exact
    zz = poles.gone_z[..., None, :]
    out: dict[str, Tensor | None] = {}
    for name, (nu, x, need, lim) in terms.items():
        zero = zp | poles.decided_p if name == "plus" else zp if name == "minus" else zz
        b = bad[name]
        if nu is None:
            out[name] = None
        elif b is None:
            out[name] = quot(nu, x, zero)
        else:
            take = np.broadcast_to(need & ~b, np.broadcast_shapes(need.shape, b.shape))
            # Not differentiated again, the limit's own graph (its looks' Hessian-vector
            # products, recorded to be differentiated by the next level) serves nothing:
            # looks elsewhere would hold it anyway (``Held``). A walk that records itself
            # (a Restart) kept every such graph to its end: TRG at T = 1.5, +0.4-0.7 GB a look.
            value = None if lim is None else where(
                make_tensor(np.broadcast_to(zero, lim.shape)), 0.0,
                Held.apply(lim) if differentiated else lim.detach())
            out[name] = quot(nu, x, zero | take, value)
    return Terms(out["plus"], out["minus"], out["R"], out["Q"])


def looked_limits(f: Factors, S: Tensor, gS: Tensor | None, down: Downstream,
                  order: int, weak: bool) -> Numerators:
    """Every pole term's limit mu at every entry from a look downstream, right with its
    first ``order`` derivatives (``series_limits``): for the complex SVD, which has no other
    source of second-order information."""
    minus_s, plus_s = pairwise(S)
    return _general(f, S, minus_s, plus_s, gS, down, order, weak)


def _general(f: Factors, S: Tensor, minus_s: Tensor, plus_s: Tensor, gS: Tensor | None,
             down: Downstream | None, order: int, weak: bool,
             ties: Poles | None = None, tails: dict | None = None) -> Numerators:
    if gS is None:  # the loss does not read S: its cotangents cannot depend on it
        return NONE
    if down is None:
        raise LinAlgError("svd backward: the exact gradient at a repeated or zero singular "
                          "value needs the backward walk's graph; call backward() or "
                          "autograd.grad on the loss rather than the SVD's backward directly")
    return series_limits(f, S, minus_s, plus_s, down, order, weak, ties, tails)


def _same(local: Tensor | None, walk: Tensor, scale_noise: float,
          cols: np.ndarray | None = None) -> bool:
    """Whether the walk's cotangent of S is the local formula's, to rounding (at ``cols``)."""
    if local is None:
        return False
    a, b = local._array, walk._array
    if cols is not None:
        a, b = np.where(cols, a, 0.0), np.where(cols, b, 0.0)
    return bool(np.all(np.abs(a - b) <= scale_noise * np.maximum(
        np.abs(a).max(axis=-1, keepdims=True), np.abs(b).max(axis=-1, keepdims=True))))


def _beyond(loc: Masks, need_p: np.ndarray, need_m: np.ndarray, need_z: np.ndarray) -> bool:
    """Whether some pole needs a limit outside the locally known triplets."""
    return bool((~loc.plus & need_p).any() or (~loc.minus & need_m).any()
                or (~loc.cols & need_z[..., None, :]).any())


def _merge(loc: Masks | None, mu_l: Numerators, mu_g: Numerators) -> Numerators:
    """mu from the local source where ``loc`` says, from the general one elsewhere."""
    if loc is None:
        return mu_g

    def pick(mask: np.ndarray, a: Tensor | None, b: Tensor | None) -> Tensor | None:
        if a is None:
            a = None if b is None else b * 0.0
        if b is None:
            b = None if a is None else a * 0.0
        if a is None or b is None:
            return None
        return where(make_tensor(np.broadcast_to(mask, np.broadcast_shapes(
            mask.shape, a.shape))), a, b)

    return Numerators(None, None, pick(loc.plus, mu_l.plus, mu_g.plus),
                      pick(loc.minus, mu_l.minus, mu_g.minus), pick(loc.cols, mu_l.R, mu_g.R),
                      pick(loc.cols, mu_l.Q, mu_g.Q))


def _masked(over: np.ndarray | None, near: np.ndarray) -> np.ndarray:
    """``over`` (None: nowhere) at the entries ``near``."""
    if over is None:
        return np.zeros(np.broadcast_shapes(near.shape), bool)
    return over & np.broadcast_to(near, over.shape)


def _fails(resid: dict, noise: np.ndarray) -> bool:
    return any(r is not None and (r > noise[..., None, None]).any() for r in resid.values())


def _resid(nu: Tensor | None, x: Tensor, mu: Tensor | None,
           need: np.ndarray) -> np.ndarray | None:
    """|nu - x mu| at the entries that need a limit (0 elsewhere)."""
    if nu is None or not need.any():
        return None
    r = np.abs(nu._array) if mu is None else np.abs(
        nu._array - np.broadcast_to(x._array, nu.shape) * mu._array)
    return np.where(np.broadcast_to(need, r.shape), r, 0.0)


