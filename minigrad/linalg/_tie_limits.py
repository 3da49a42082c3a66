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

Where nu is not x mu (to rounding, the rounding judged by the loss's curvature when the
cotangents are themselves rounding noise, as F - R at a rotation) the loss depends on an
arbitrary basis there: at a tie it has no gradient; near one (isolated pair, gap below
sqrt(eps) s_1) its gradient is as ill-conditioned as the singular vectors. Both raise
LinAlgError. So does a tie between a triplet the loss reads through U or V and S and one
it drops (a truncation inside a tie). A kink of a loss of S alone (tied values weighed
differently, a singular value at 0 that the loss changes with) takes the minimum-norm
subgradient before any of this (``_kinks``, ``ties.py``).

Triplets with exactly zero cotangent (a truncated part, a null space the loss multiplies
by 0) give exactly zero terms. A later pass through the result gives them cotangents from
the first-order formula alone; their limits then come from that formula rebuilt locally
(``_Local``) rather than from the whole downstream. Inside the look downstream for one
limit, ties met at other SVDs are taken as 0, and so are the derivatives of the limits
other SVDs took earlier (``_Held``): through chains of tied SVDs (tensor networks) the
result is exact when the ties are structural, i.e. along directions that keep them, where
those terms pair with nothing; that also bounds the cost (each look would otherwise
differentiate every later limit's own looks again: TRG's specific heat at 8 steps took
minutes).

Most poles need no look (``Poles``, ``product_limits``): a pair with one member the loss
never reads (a slice drops it) takes nu / x off the tie and 0 at it; and where the
cotangents have the product form of a loss reading the factors through U S V^T or a
tensor-network bond (J = G S, K = G^T S, gS = diag(G) to rounding), the + pole term is
J_ij / s_j + J_ji / s_i near a tie and at an uncoupled one.

Cost, as a function of the graph. Off every pole: the plain formula, O(k^3) per node.
Poles decided by the two rules above: O(k^2) more per node, no walk; but a node near a
pole asks the engine to record the walk (decided in the forward, before the backward knows
no look will run), which keeps the forward graph until the walk ends and records the
backward: peak memory about 2.4x the plain walk's (TRG energy, bond 16, 20 steps, T = 1.8:
559 MB against 238 MB, time 1.04x). Every other pole: one look per node, a Hessian-vector
product through the recorded graph downstream of it, O(size of that graph) in time and
memory; a chain of n such nodes costs O(n^2) graph sizes in time (TRG energy at T = 2.5,
where the norm of each step's tensor breaks the product form: 7x the time, 18x the
memory). A second pass (second derivatives) through a truncation takes kept near-ties as
plain quotients and uncoupled kept ties as 0 (``Poles.through_recorded``); its coupled
ties and the rounding scale of its residual checks (``hessian_scale``) still look, each
walking the first pass's recorded graph: TRG's specific heat at bond 8 takes 0.15 - 0.42 s
for 8 - 14 steps ("zero": about 0.2 s), but at bond 16, 20 steps it passes 6 GB, and
CTMRG's (chi 24, 60 iterations) takes 19-112x the time of "zero". Those are the open cost.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from contextlib import contextmanager

import numpy as np

from ..autograd.engine import (
    current_walk,
    recorded_output_grads,
    result_is_differentiated,
    run_backward,
)
from ..autograd.function import Context, Function, make_tensor
from ..autograd.grad_mode import enable_grad
from ..functions import where
from ..tensor import Tensor
from ._svd_parts import (
    Factors,
    Numerators,
    Poles,
    Terms,
    colmax,
    coupling,
    near_level,
    quot,
)
from ._tie_errors import raise_if_undefined
from .errors import LinAlgError
from .ties import TiePolicy

_nesting = threading.local()  # .depth > 0 while a tie limit looks downstream


def earlier_here(down: Downstream | None) -> _Earlier | None:
    """What an earlier recorded pass left, if this walk goes through its result."""
    e = None if down is None else getattr(down.ctx, "earlier", None)
    return e if e is not None and e.walk is current_walk() and e.D is not None else None


def remember_dropped(down: Downstream | None, poles: Poles, policy: TiePolicy,
                      grads: tuple) -> _Earlier | None:
    """When this result will be differentiated and dropped triplets sit at poles, keep
    what a later pass needs to take their limits locally (see ``_Earlier``)."""
    if (down is None or policy.kind != "exact" or nested() or not result_is_differentiated()
            or getattr(down.ctx, "earlier", None) is not None or not poles.dropped_near):
        return None
    e = _Earlier(poles.absent, tuple(None if g is None else g.detach() for g in grads),
                 policy)
    down.ctx.earlier = e
    return e


def exact_terms(num: Numerators, poles: Poles, S: Tensor, minus_s: Tensor, plus_s: Tensor,
           gS: Tensor | None, gUe: Tensor | None, gVe: Tensor | None, f: Factors,
           down: Downstream | None, scale_noise: float, eps: float,
           earlier: _Earlier | None, formula: Callable) -> Terms:
    """Each pole term replaced by its limit mu at and near the poles, after checking that
    the loss has a gradient there (nu = x mu to rounding; svd_backward has checked the
    kinks and the solo ties)."""
    need_p = poles.tie_p | poles.weak_p
    need_m = poles.tie_m | poles.weak_m
    need_z = poles.tie_z | poles.weak_z
    weak = bool(poles.weak_p.any() or poles.weak_m.any() or poles.weak_z.any())
    # How many derivatives of each limit must be right: two when the result will be
    # differentiated (a second pass meets this tie again and needs the second derivatives
    # of the first pass's limit), one near a pole (then the value is O(x^2)-exact).
    order = 2 if result_is_differentiated() else int(weak)
    # Triplets an earlier pass dropped take their limits from its formula alone (cheap).
    loc_p = loc_z = None
    if earlier is not None and gS is not None:
        a = earlier.absent
        loc_p = a[..., :, None] & a[..., None, :]
        loc_z = a[..., None, :]
        if not ((loc_p & (need_p | need_m)).any() or (loc_z & need_z[..., None, :]).any()):
            loc_p = loc_z = None
    noise = scale_noise * (colmax(gUe) + colmax(gVe))
    Sr = S.unsqueeze(-2)

    def terms_with(mu: Numerators) -> dict:
        return {"plus": (num.plus, minus_s, need_p, mu.plus),
                "minus": (num.minus, plus_s, need_m, mu.minus),
                "R": (num.R, Sr, need_z[..., None, :], mu.R),
                "Q": (num.Q, Sr, need_z[..., None, :], mu.Q)}

    mu_l, local = _NONE, None
    if loc_p is not None:
        local = _Local(earlier, *down.outputs(), formula)
        mu_l = _limits(f, S, minus_s, plus_s, local, order)
    everywhere = loc_p is None or _beyond(loc_p, loc_z, need_p, need_m, need_z)
    mu_g = _general(f, S, minus_s, plus_s, gS, down, order) if everywhere else _NONE
    mu = _merge(loc_p, loc_z, mu_l, mu_g)
    terms = terms_with(mu)
    resid = {name: _resid(nu, x, lim, need) for name, (nu, x, need, lim) in terms.items()}
    tol = noise
    if loc_p is not None and not everywhere and _fails(resid, noise):
        # Maybe rounding in cotangents that cancelled: those triplets' come from the earlier
        # pass's formula alone (the downstream never reads them), so its curvature is the
        # scale such rounding comes from, and judging by it costs no walk downstream.
        tol = noise + scale_noise * local.hessian_scale()
        if _fails(resid, tol):
            # The downstream reads those triplets after all: take every limit from it.
            mu = mu_g = _general(f, S, minus_s, plus_s, gS, down, order)
            terms = terms_with(mu)
            resid = {name: _resid(nu, x, lim, need) for name, (nu, x, need, lim)
                     in terms.items()}
            tol = noise
    bad = {name: None if r is None else r > tol[..., None, None] for name, r in resid.items()}
    if any(b is not None and b.any() for b in bad.values()) and down is not None:
        # Maybe only rounding in cotangents that cancelled (F - R at a rotation): compare
        # with the loss's curvature, the scale such rounding comes from.
        wider = noise + scale_noise * down.hessian_scale()
        bad = {name: None if r is None else r > wider[..., None, None]
               for name, r in resid.items()}
    for name in ("R", "Q"):  # a column is one pole
        if bad[name] is not None:
            bad[name] = np.any(bad[name], axis=-2, keepdims=True)
    for name, (_, _, need, _) in terms.items():
        if bad[name] is not None:
            raise_if_undefined(name, need, bad[name], poles, eps)

    zp = poles.zero_exact
    zz = poles.gone_z[..., None, :]
    out = {}
    for name, (nu, x, need, lim) in terms.items():
        zero = zp | poles.decided_p if name == "plus" else zp if name == "minus" else zz
        if nu is None:
            out[name] = None
        elif bad[name] is None:
            out[name] = quot(nu, x, zero)
        else:
            take = np.broadcast_to(need & ~bad[name], np.broadcast_shapes(
                need.shape, bad[name].shape))
            value = None if lim is None else where(
                make_tensor(np.broadcast_to(zero, lim.shape)), 0.0, _Held.apply(lim))
            out[name] = quot(nu, x, zero | take, value)
    return Terms(out["plus"], out["minus"], out["R"], out["Q"])


def product_limits(num: Numerators, S: Tensor, gS: Tensor | None, poles: Poles,
                   noise: np.ndarray, scale_noise: float) -> tuple[np.ndarray, Tensor] | None:
    """The + pole terms that first-order data decide, without a look downstream: where the
    cotangents are those of a loss reading the factors through products, A's (U S V^T) or a
    tensor-network bond's (U sqrt(S) and sqrt(S) Vh contracted over the bond), i.e. where

        J = G S,  K = G^T S,  gS = diag(G)   for some G   (J = U^T gU, K = V^T gV),

    to rounding on every pair the loss reads (s_i above the near-pole level), the term is

        N+_ij / (s_j - s_i) = J_ij / s_j + J_ji / s_i,

    an identity off the tie (so near a pole it is the plain quotient without its
    cancellation) and, at a tie, the limit for such a loss. At a tie it is taken only where
    the pair is uncoupled (J_ij, J_ji, K_ij, K_ji all rounding: the symmetry-protected ties
    of tensor networks, where it is 0 with the right derivatives); a coupled tied pair
    looks downstream as before, since a loss that also reads U V^T alone (a polar factor,
    whose limit is 0) can mimic those cotangents at the tie, and so can a matrix function
    that vanishes at the tied value (log S at s = 1), unless each tied member shows the
    product's J_ii = G_ii s_i != 0. (Such a function summed with a product would mimic them
    even then: the one case this rule gets wrong, an xfail test.) Returns the mask of the
    entries it decides and their values, or None where the cotangents are not of that
    form."""
    if num.J is None or num.K is None or not (poles.tie_p.any() or poles.weak_p.any()):
        return None
    got = _product_terms(num.J, num.K, gS, S, ~poles.absent, poles.tie_p, poles.weak_p, noise,
                         scale_noise)
    return None if got is None or not got[0].any() else got


def _product_terms(J: Tensor, K: Tensor, gS: Tensor | None, S: Tensor, reads: np.ndarray,
                   tie: np.ndarray, weak: np.ndarray, noise: np.ndarray,
                   scale_noise: float) -> tuple[np.ndarray, Tensor] | None:
    """``product_limits``' test and values on the triplets ``reads``; None where the test
    fails. The mask leaves out coupled tied pairs."""
    s = S._array
    reads = reads & (s > near_level(s, float(np.finfo(s.dtype).eps)))
    pair = reads[..., :, None] & reads[..., None, :]
    j, k = J._array, K._array
    s1 = s[..., :1]
    g = np.zeros(s.shape) if gS is None else gS._array
    tol = noise[..., None] * s1 + scale_noise * s1 * np.abs(g).max(axis=-1, keepdims=True)
    resid = np.abs(s[..., :, None] * j - np.swapaxes(k, -1, -2) * s[..., None, :])
    if (np.where(pair, resid, 0.0) > tol[..., None]).any():
        return None
    diag_j, diag_k = np.diagonal(j, 0, -2, -1), np.diagonal(k, 0, -2, -1)
    if (np.where(reads, np.abs(s * g - diag_j) + np.abs(s * g - diag_k), 0.0) > tol).any():
        return None
    coupled = coupling(j, k)
    # A tied member must witness the product (J_ii = G_ii s_i != 0): a matrix function
    # vanishing at the tied value (log S at s = 1, at an orthogonal A) has J = K = 0 and,
    # with a zero diagonal, gS = 0 there too, and a limit that only a look finds.
    witness = np.minimum(np.abs(diag_j), np.abs(diag_k)) > noise[..., None]
    # Near a tie too: the value equals the quotient's anyway, but a later pass
    # differentiates the formula, right only where the product form holds around here,
    # which a witness shows (a zero seed, all cotangents 0, shows nothing).
    take = pair & witness[..., :, None] & witness[..., None, :] & (
        weak | (tie & (coupled <= noise[..., None, None])))
    safe = where(make_tensor(reads), S, 1.0).unsqueeze(-2)
    Jq = J / safe  # [i, j] = J_ij / s_j
    return take, Jq + Jq.mT


def _general(f: Factors, S: Tensor, minus_s: Tensor, plus_s: Tensor, gS: Tensor | None,
             down: Downstream | None, order: int) -> Numerators:
    if gS is None:  # the loss does not read S: its cotangents cannot depend on it
        return _NONE
    if down is None:
        raise LinAlgError("svd backward: the exact gradient at a repeated or zero singular "
                          "value needs the backward walk's graph; call backward() or "
                          "autograd.grad on the loss rather than the SVD's backward directly")
    return _limits(f, S, minus_s, plus_s, down, order)


def _beyond(loc_p: np.ndarray, loc_z: np.ndarray, need_p: np.ndarray, need_m: np.ndarray,
            need_z: np.ndarray) -> bool:
    """Whether some pole needs a limit outside the locally known triplets."""
    return bool((~loc_p & (need_p | need_m)).any() or (~loc_z & need_z[..., None, :]).any())


def _merge(loc_p: np.ndarray | None, loc_z: np.ndarray | None, mu_l: Numerators,
           mu_g: Numerators) -> Numerators:
    """mu from the local source on its triplets, from the general one elsewhere."""
    if loc_p is None:
        return mu_g

    def pick(mask: np.ndarray, a: Tensor | None, b: Tensor | None) -> Tensor | None:
        if a is None and b is None:
            return None
        like = a if a is not None else b
        a = a if a is not None else like * 0.0
        b = b if b is not None else like * 0.0
        return where(make_tensor(np.broadcast_to(mask, np.broadcast_shapes(
            mask.shape, like.shape))), a, b)

    return Numerators(None, None, pick(loc_p, mu_l.plus, mu_g.plus),
                      pick(loc_p, mu_l.minus, mu_g.minus), pick(loc_z, mu_l.R, mu_g.R),
                      pick(loc_z, mu_l.Q, mu_g.Q))


def _fails(resid: dict, noise: np.ndarray) -> bool:
    return any(r is not None and (r > noise[..., None, None]).any() for r in resid.values())


_NONE = Numerators(None, None, None, None, None, None)


def _limits(f: Factors, S: Tensor, minus_s: Tensor, plus_s: Tensor, source: _Source,
            order: int) -> Numerators:
    """mu at every entry, right with its first ``order`` derivatives (see the module
    docstring): along S + t d, nu = x mu with d_t x = c, so

        mu = sum_n (-x / c)^n d_t^(n+1) nu / ((n+1)! c),   n = 0 .. order,

    the derivatives of the cotangents coming from ``source``; None where they cannot
    depend on S (then mu = 0)."""
    k = f.k
    d_np = np.arange(1.0, k + 1.0)
    dts = source.derivatives(make_tensor(d_np.astype(S.dtype)), order + 1)
    if not dts:
        return _NONE
    c_p = d_np[None, :] - d_np[:, None]  # [i, j] = d_j - d_i
    c_p = np.where(c_p == 0, 1.0, c_p)
    c_m = d_np[None, :] + d_np[:, None]
    c_z = d_np[None, :]
    Sr = S.unsqueeze(-2)
    parts = [f.numerators(*dt) for dt in dts]

    def mu(field: str, c: np.ndarray, x: Tensor) -> Tensor | None:
        out, power = None, None  # power = (-x)^n, by products: x ** n's own higher
        for n, part in enumerate(parts):  # derivatives at x = 0 would be 0 * inf
            power = None if n == 0 else (-x if power is None else power * -x)
            dnu = getattr(part, field)
            if dnu is None:
                continue
            term = dnu / make_tensor((math.factorial(n + 1) * c ** (n + 1)).astype(S.dtype))
            if power is not None:
                term = term * power
            out = term if out is None else out + term
        return out

    return Numerators(None, None, mu("plus", c_p, minus_s), mu("minus", c_m, plus_s),
                      mu("R", c_z, Sr), mu("Q", c_z, Sr))


def nested() -> bool:
    """Whether this backward runs inside another tie limit's look downstream."""
    return getattr(_nesting, "depth", 0) > 0


def note_chained() -> None:
    """A tie met inside a look downstream (taken as 0): the look is through a chain."""
    _nesting.chained = True


@contextmanager
def _looking_downstream():
    _nesting.depth = getattr(_nesting, "depth", 0) + 1
    try:
        yield
    finally:
        _nesting.depth -= 1


class _Source:
    """Cotangents recorded as functions of (U, S, Vh), and the Hessian-vector products
    with them that the limits need."""

    def outputs(self) -> tuple[Tensor, Tensor, Tensor]:
        raise NotImplementedError

    def recorded(self) -> list:
        raise NotImplementedError

    def _hvp(self, q: Tensor, wrt: list[Tensor], create_graph: bool) -> list:
        if not q.requires_grad:
            return [None] * len(wrt)
        one = make_tensor(np.ones((), q.dtype))
        with _looking_downstream():
            return run_backward([q], [one], True, create_graph, inputs=wrt,
                                look_downstream=False)

    def derivatives(self, d: Tensor, levels: int) -> list[tuple]:
        """[(d_t^n gU, d_t^n gVh) for n = 1 .. levels] along S + t d (fewer when they
        vanish). By symmetry of derivatives d_t^n gU = d/dU <d_t^(n-1) gS, d>."""
        U, S, Vh = self.outputs()
        gS = self.recorded()[1]
        out: list[tuple] = []
        if gS is None:
            return out
        q_of = gS
        _nesting.chained = False
        for n in range(1, levels + 1):
            with enable_grad():
                q = (q_of * d).sum()
            # A level is differentiated again by the next one, and the last one carries a
            # graph only when the result will be differentiated: other ties' looks cannot
            # differentiate it (``_Held``), and a recorded look kept every look's graph to
            # the walk's end (TRG's second pass at bond 16: +1-2 GB a look).
            hU, hS, hVh = self._hvp(q, [U, S, Vh], n < levels or result_is_differentiated())
            out.append((hU, hVh))
            # Through a chain of tied SVDs the ties met downstream are taken as 0, so
            # higher levels would not be exact anyway (and would cost the most): stop.
            if hS is None or _nesting.chained:
                break
            q_of = hS
        return out if any(u is not None or v is not None for u, v in out) else []

    def hessian_scale(self) -> np.ndarray:
        """The size of the loss's second derivatives along a fixed random direction, in
        the units of a numerator (per batch element)."""
        U, S, Vh = self.outputs()
        rec = self.recorded()
        rng = np.random.default_rng(0)
        s1 = S._array[..., :1]
        terms = []
        for g, t, scale in zip(rec, (U, S, Vh), (1.0, s1, 1.0)):
            if g is not None and g.requires_grad:
                w = make_tensor((rng.standard_normal(t.shape) * scale).astype(t.dtype))
                with enable_grad():
                    terms.append((g * w).sum())
        if not terms:
            return np.zeros(S.shape[:-1])
        with enable_grad():
            q = terms[0]
            for t in terms[1:]:
                q = q + t
        hU, hS, hVh = self._hvp(q, [U, S, Vh], False)
        out = np.zeros(S.shape[:-1])
        if hU is not None:
            out = out + colmax(hU)
        if hVh is not None:
            out = out + colmax(hVh.mT)
        if hS is not None:
            out = out + np.abs(hS._array).max(axis=-1) * s1[..., 0]
        return out


class Downstream(_Source):
    """The walk's own record of the loss downstream of this SVD (the engine's)."""

    def __init__(self, ctx: Context, grads: tuple) -> None:
        self.ctx, self.grads = ctx, grads

    def outputs(self) -> tuple[Tensor, Tensor, Tensor]:
        return self.ctx.saved_tensors

    def recorded(self) -> list:
        return recorded_output_grads(self.grads)


class _Earlier:
    """A recorded pass's triplets that got exactly zero cotangent (dropped by the loss).

    A later pass through that pass's result gives them cotangents from the first-order
    formula alone (the loss never reads them), so their limits there come from that
    formula, rebuilt locally (``_Local``), instead of the whole downstream. ``_Tap``
    keeps the cotangent D the result gets in each later walk."""

    def __init__(self, absent: np.ndarray, grads: tuple, policy: TiePolicy) -> None:
        self.absent, self.grads, self.policy = absent, grads, policy
        self.walk: object = None
        self.D: Tensor | None = None


class _Tap(Function):
    """The identity on the first-order result; backward notes the cotangent it gets."""

    @staticmethod
    def forward(ctx: Context, gA: Tensor, earlier: _Earlier) -> np.ndarray:
        ctx.earlier = earlier
        return gA._array

    @staticmethod
    def backward(ctx: Context, D: Tensor) -> tuple:
        ctx.earlier.walk, ctx.earlier.D = current_walk(), D.detach()
        return D, None


class _Local(_Source):
    """psi(U, S, Vh) = <D, first-order formula(U, S, Vh; that pass's cotangents)>, its
    cotangents recorded on fresh leaves: the part of a later pass's loss that the dropped
    triplets see."""

    def __init__(self, earlier: _Earlier, U: Tensor, S: Tensor, Vh: Tensor,
                 formula: Callable) -> None:
        self.leaves = tuple(Tensor(t._array, requires_grad=True) for t in (U, S, Vh))
        with enable_grad():
            G = formula(*self.leaves, *earlier.grads, TiePolicy("local"))
            psi = (G * earlier.D).sum()
        self.grads = self._hvp(psi, list(self.leaves), True)

    def outputs(self) -> tuple[Tensor, Tensor, Tensor]:
        return self.leaves

    def recorded(self) -> list:
        return self.grads


def _resid(nu: Tensor | None, x: Tensor, mu: Tensor | None,
           need: np.ndarray) -> np.ndarray | None:
    """|nu - x mu| at the entries that need a limit (0 elsewhere)."""
    if nu is None or not need.any():
        return None
    r = np.abs(nu._array) if mu is None else np.abs(
        nu._array - np.broadcast_to(x._array, nu.shape) * mu._array)
    return np.where(np.broadcast_to(need, r.shape), r, 0.0)



class _Held(Function):
    """The identity on a limit; inside another tie limit's look downstream its gradient is
    0. The look takes the ties it meets at other SVDs as 0, and this is such a tie's term:
    without the cut each look differentiated every later limit's own looks again, at a cost
    exponential in the length of a chain of tied SVDs."""

    @staticmethod
    def forward(ctx: Context, mu: Tensor) -> np.ndarray:
        return mu._array

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> tuple:
        return (None if nested() else g),
