"""The SVD backward: Townsend's closed form split into its two poles (shared svd-math),
exact at repeated and zero singular values.

With J = U^T gU, K = V^T gV (after folding the full factors' complements in) the gradient is

    gA = U [diag(gS) + X] V^T + R S^-1 V^T + U S^-1 Q^T,     R = (I - U U^T) gU  (m > k),
    X_ij = N+_ij / 2(s_j - s_i) + N-_ij / 2(s_j + s_i),     Q = (I - V V^T) gV  (n > k),
    N+ = (J - J^T) + (K - K^T),  N- = (J - J^T) - (K - K^T).

Written so, it never forms s_j^2 - s_i^2 (which overflows or underflows at 1e+-150). Off
the poles each term is the plain quotient. At and near a pole the tie policy decides
(``ties.py``): "exact" takes the limit of the 0/0 term from the loss's second derivatives
(``_tie_limits``, where the derivation is) and raises where the loss has no gradient;
"zero" takes 0; "lorentzian" broadens every pole. Singular values count as equal within
C_TIE sqrt(k) eps s_1 (the accuracy Jacobi computes them to, not growing with m or n).
Off a pole by more than eps^(1/3) s_1 a pole term carries an absolute error of about
eps |g| / gap (|g| the cotangents' scale): the conditioning of the formula itself.
"""

from __future__ import annotations

import functools
from functools import partial

import numpy as np

from .._kernel_registry import KERNEL_FLOATS, kernels
from ..autograd.engine import result_is_differentiated
from ..autograd.function import Context, make_tensor
from ..autograd.grad_mode import _state, is_grad_enabled
from ..functions import where
from ..tensor import Tensor
from . import _kinks
from ._svd_checks import _BIG
from ._svd_gauge import bond_gradient, bond_inherited
from ._svd_parts import (
    C_NOISE,
    Factors,
    Numerators,
    Terms,
    colnorms,
    fold_complement,
    numerators,
    pair_denominators,
    pairwise,
    quot,
    quot_cols,
)
from ._svd_poles import (
    Poles,
    Zeroed,
    absent_triplets,
    maybe_poles,
    near_level,
    tie_level,
    tie_zeros,
    zero_cols,
)
from ._tie_bond import bond_fit, confirmed, product_limits
from ._tie_errors import check_kinks, check_s_only, check_solo_ties
from ._tie_limits import PolePass, exact_terms
from ._tie_sources import (
    Covariant,
    Downstream,
    Earlier,
    Tap,
    earlier_here,
    nested,
    note_chained,
    rebuilt,
    remember_dropped,
)
from .ties import TiePolicy

_EXACT = TiePolicy()


def plain_backward(U: Tensor, S: Tensor, Vh: Tensor, gU: Tensor | None, gS: Tensor | None,
                   gVh: Tensor | None) -> Tensor:
    """gA = U [diag(gS) + X] V^T + (I - U U^T) gU S^-1 V^T + U S^-1 gV^T (I - V V^T): the
    formula off every pole, for reduced or full factors, nothing else. Everything below is
    about where it is not enough; the tests use it as the oracle at generic points.

    >>> U, S, Vh = mg.linalg.svd(mg.tensor([[3.0, 1.0], [0.0, 2.0]]))
    >>> gA = plain_backward(U, S, Vh, None, mg.ones(2), None)  # d(s_1 + s_2)/dA = U Vh
    >>> bool(np.allclose(gA.numpy(), (U @ Vh).numpy()))
    True
    """
    k = S.shape[-1]
    Uk, Vhk = U[..., :k], Vh[..., :k, :]
    if gU is None and gVh is None:
        g = make_tensor(np.zeros(S.shape, S.dtype)) if gS is None else gS
        return (Uk * g.unsqueeze(-2)) @ Vhk
    f = Factors(U, Vh, Uk, Vhk.mT, k)
    return _plain_fast(f.numerators(gU, gVh), f, S, gS, Vhk)


def plan_backward(ctx: Context, s: np.ndarray, policy: TiePolicy, has_inv: bool) -> None:
    """In an SVD's forward: what its backward will need. Near a pole the exact backward may
    look downstream (the loss's second derivatives), so the node asks the engine to keep the
    graph after it until its backward has run (``wants_downstream``); otherwise the backward
    skips its own pole test (``no_poles``: it would be the same one, or weaker without the
    S^-1 terms that ``has_inv`` says are there)."""
    ctx.policy = policy
    if policy.kind != "exact" or not s.size:
        ctx.wants_downstream = ctx.no_poles = False
        return
    ctx.wants_downstream = maybe_poles(s, near_level(s, float(np.finfo(s.dtype).eps)), has_inv)
    ctx.no_poles = not ctx.wants_downstream


def _strategy(U: Tensor, S: Tensor, Vh: Tensor, gU: Tensor | None, gVh: Tensor | None,
              policy: TiePolicy, no_poles: bool | None, has_inv: bool) -> str:
    """How an SVD backward computes, the one place that chooses (in this order):

    - "empty": no singular value (k = 0) or an empty batch: zeros;
    - "values": the loss reads S alone: U diag(gS) Vh, with the minimum-norm subgradient
      at kinks (``_at_kinks``);
    - "fused": no pole near, A square k x k with k <= 8 (U and Vh too), and the result
      will not be differentiated: one numba pass (``svd_vjp_square``);
    - "plain": no pole near (the forward's finding ``no_poles``, or this test): the
      formula (``_plain_fast``);
    - "poles": some term is at or near a pole: the tie policy decides there (``_poles``).
    """
    s = S._array
    if s.size == 0:
        return "empty"
    if gU is None and gVh is None:
        return "values"
    eps = float(np.finfo(s.dtype).eps)
    near = near_level(s, eps) if policy.kind in ("exact", "local") else tie_level(s, eps)
    if policy.kind == "lorentzian" or not _in_range(s) or not (
            no_poles or not maybe_poles(s, near, has_inv)):
        return "poles"
    k = S.shape[-1]
    if U.shape[-2] == U.shape[-1] == Vh.shape[-1] == k <= _FUSED_K and not is_grad_enabled():
        return "fused"
    return "plain"


def svd_backward(U: Tensor, S: Tensor, Vh: Tensor, gU: Tensor | None, gS: Tensor | None,
                 gVh: Tensor | None, policy: TiePolicy = _EXACT,
                 down: Downstream | None = None, no_poles: bool | None = None, *,
                 kept_only: bool = False) -> Tensor:
    """gA = U [diag(gS) + X] V^T + (I - U U^T) gU S^-1 V^T + U S^-1 gV^T (I - V V^T), by the
    way ``_strategy`` picks.

    ``down`` (built from the SVD node's ctx during a backward walk) lets an exact tie limit
    fetch the second-order information it needs. ``no_poles``: the forward's finding that
    no singular value is near a pole (None: look). ``kept_only``: U, S, Vh are the top k
    triplets of a larger SVD, and only the kept-kept part U [diag(gS) + X] V^T is wanted
    (the coupling to the discarded part is ``_svd_trunc``'s)."""
    m, n, k = U.shape[-2], Vh.shape[-1], S.shape[-1]
    tall, wide = m > k and not kept_only, n > k and not kept_only
    has_inv = (tall and gU is not None) or (wide and gVh is not None)  # R or Q below
    way = _strategy(U, S, Vh, gU, gVh, policy, no_poles, has_inv)
    if way == "empty":
        return make_tensor(np.zeros(U.shape[:-2] + (m, n), U.dtype))
    Uk = U if U.shape[-1] == k else U[..., :k]
    Vhk = Vh if Vh.shape[-2] == k else Vh[..., :k, :]
    eps = float(np.finfo(S.dtype).eps)
    if way == "values":
        assert gS is not None  # the engine passes zeros for a cotangent none reached
        return (Uk * _at_kinks(S._array, gS, policy, eps).unsqueeze(-2)) @ Vhk
    if way == "fused":
        return _fused(U, S, Vh, gU, gS, gVh)
    f = Factors(U, Vh, Uk, Vhk.mT, k, not kept_only)
    scale_noise = C_NOISE * eps * np.sqrt(max(m, n))
    gUe = None if gU is None else fold_complement(U, gU, k, scale_noise, "U")
    gVe = None if gVh is None else fold_complement(Vh.mT, gVh.mT, k, scale_noise, "Vh")
    num = numerators(f.Uk, f.Vk, gUe, gVe, tall, wide)
    if way == "plain":
        return _plain_fast(num, f, S, gS, Vhk)
    P, later = _poles(num, f, S, (gU, gS, gVh), gUe, gVe, policy, down, kept_only, has_inv,
                      scale_noise, eps)
    if isinstance(P, Tensor):  # the bond's whole gradient
        return P
    plus = P.plus
    assert plus is not None  # U or V has a cotangent here ("values" has returned)
    X = plus * 0.5 if P.minus is None else (plus + P.minus) * 0.5
    if gS is not None:
        X = X + gS.diag_embed()
    gA = f.Uk @ X @ Vhk
    if P.R is not None:
        gA = gA + P.R @ Vhk
    if P.Q is not None:
        gA = gA + f.Uk @ P.Q.mT
    if later is not None:
        gA = Tap.apply(gA, later)
    return gA


def _poles(num: Numerators, f: Factors, S: Tensor, grads: tuple, gUe: Tensor | None,
           gVe: Tensor | None, policy: TiePolicy, down: Downstream | None, kept_only: bool,
           has_inv: bool, scale_noise: float, eps: float) -> tuple[Terms | Tensor,
                                                                  Earlier | None]:
    """The pole terms X, R S^-1, Q S^-1 when some are at or near a pole, by the policy:
    "lorentzian" broadens every pole; "zero" (and a look downstream's own backward, where
    other ties count as 0) takes 0 at ties; "exact" checks that the loss has a gradient,
    decides what first-order data decide (solo ties, ``product_limits``) and takes the
    rest from ``exact_terms``. Also what a later pass will need (``remember_dropped``):
    ``grads`` are the cotangents (gU, gS, gVh) as they came."""
    gS = grads[1]
    s = S._array
    if policy.kind == "lorentzian":
        return _broadened(num, *pairwise(S), S, policy.eps), None
    tie = tie_level(s, eps)
    near = near_level(s, eps) if policy.kind in ("exact", "local") else tie
    if not maybe_poles(s, near, has_inv):  # out of range for the quotient's shortcut only
        return _plain(num, *pairwise(S), S), None
    inside_look = nested()
    absent = absent_triplets(gS, gUe, gVe, f.k)
    if policy.kind == "zero" and not inside_look:  # every tie 0, no look: its masks alone
        fused = _zero_fused(num, S, tie, has_inv, absent)
        if fused is not None:
            return fused, None
        minus_s, plus_s = pairwise(S)
        return _plain(num, minus_s, plus_s, S, tie_zeros(s, (minus_s, plus_s), tie, has_inv,
                                                          absent)), None
    minus_s, plus_s = pairwise(S)  # [.., i, j] = s_j - s_i and s_j + s_i
    earlier = earlier_here(down)
    # A rebuild is the formula of a pass that was differentiated: its rules, so that it
    # gives that pass's numbers (``Covariant`` compares them with the walk's).
    differentiated = result_is_differentiated() or rebuilt()
    covariant = Covariant.applies(earlier, differentiated)
    if earlier is not None and not earlier.dropped_near and not covariant:
        earlier = None  # kept for Covariant alone, which this pass cannot use: look
    poles = Poles(s, tie, near, has_inv, absent,
                  None if earlier is None else absent | earlier.absent)
    # rounding-level numerators: what the exact and local policies decide by ("zero"
    # reads none of it, and the column norms cost as much as a product)
    cu, cv = (_cols(g) if policy.kind != "zero" else np.zeros(()) for g in (gUe, gVe))
    noise = scale_noise * (_top(cu) + _top(cv))
    if policy.kind == "exact" and not inside_look:
        check_kinks(poles, gS, eps)  # a tie read through S on one side only
        if earlier is None:
            check_solo_ties(poles, num, noise)
        if not differentiated and (poles.weak_p.any() or poles.weak_m.any()
                                   or poles.weak_z.any()):
            cols = cu + cv
            poles.faint(cols, _top(cols), near, eps)
    # Inside another tie limit's look downstream only that limit is exact: ties met
    # there are taken as 0 (exact for the gauge-structured chains of tensor networks,
    # and what bounds the cost; see the module docstring).
    # A loss unchanged by a rotation of the bond it reads, whose result will be
    # differentiated or which is met again through such a backward: the whole gradient
    # without poles, so that the next pass sees the bond's form too (``_svd_gauge``).
    fit = None
    if (policy.kind == "exact" and not inside_look and earlier is None and down is not None
            and f.complement and f.U.shape[-1] == f.Vh.shape[-2] == f.k):
        inherited = bond_inherited(down.ctx)
        if differentiated or inherited:
            fit = bond_fit(num, S, gS, poles, noise, scale_noise, inherited)
            if fit is not None and not fit.missing.any():
                return bond_gradient(down.ctx, f.U, S, f.Vh, grads[0], grads[2], fit.r), None
    if earlier is not None and policy.kind == "exact":
        poles.through_recorded(earlier.absent, num, noise, not differentiated,
                               covariant and not earlier.dropped_near)
    decided = None
    if policy.kind in ("exact", "local") and not inside_look and earlier is None:
        decided = product_limits(num, S, gS, poles, noise, scale_noise)
        if decided is not None:
            poles.decide(decided[0])
    if policy.kind in ("zero", "local") or inside_look or not poles.any():
        if inside_look and poles.any():
            note_chained()
        P = _plain(num, minus_s, plus_s, S, poles.zeroed())
    else:
        formula = partial(svd_backward, kept_only=True) if kept_only else svd_backward
        P = exact_terms(PolePass(num, poles, S, minus_s, plus_s, gS, gUe, gVe, f,
                                 scale_noise, eps, down, earlier, formula, differentiated))
        if fit is not None and confirmed(fit, P.plus, S, noise):
            assert down is not None  # a fit needs it
            # the look confirmed the bond
            return bond_gradient(down.ctx, f.U, S, f.Vh, grads[0], grads[2], fit.r), None
    if decided is not None:
        assert P.plus is not None  # product_limits decides only where J and K exist
        P = P._replace(plus=P.plus + where(make_tensor(decided[0]), decided[1], 0.0))
    return P, remember_dropped(down, poles, policy, grads)


def _at_kinks(s: np.ndarray, gS: Tensor, policy: TiePolicy, eps: float) -> Tensor:
    """For a loss of S alone: gS with the minimum-norm subgradient taken at kinks
    (``_kinks``): over each tie, its mean; 0 at s = 0. Under kinks="raise" the exact policy
    raises there instead. (A loss that reads U or V too is not treated so: a zero column of
    their cotangents may be a product with s_j = 0, as in U diag(S) Vh, not blindness; such
    a loss's tie with a triplet it drops raises as a truncation inside a tie.)"""
    tie = tie_level(s, eps)
    if not maybe_poles(s, tie, True):
        return gS
    if policy.kinks == "raise":
        if policy.kind == "exact" and not nested():
            check_s_only(s, gS._array)
        return gS
    noise = C_NOISE * eps * np.abs(gS._array).max(axis=-1)
    return _kinks.subgradient(gS, s, tie, noise, zero=s <= tie)


_min, _max = np.minimum.reduce, np.maximum.reduce

# square k x k at most this: one pass beats the batched ops, whatever the batch (a lone 3x3:
# 7 us against the ops' 100)
_FUSED_K = 8


def _fused(U: Tensor, S: Tensor, Vh: Tensor, gU: Tensor | None, gS: Tensor | None,
           gVh: Tensor | None) -> Tensor:
    """``_plain_fast``'s numbers from one numba pass, for square matrices when the result
    will not be differentiated again."""
    k = S.shape[-1]

    def flat(t: Tensor) -> np.ndarray:
        return t._array.reshape((-1,) + t.shape[-2:])

    gu, gvh = (None if g is None else flat(g) for g in (gU, gVh))
    gs = None if gS is None else gS._array.reshape(-1, k)
    out = svd_vjp_square(flat(U), S._array.reshape(-1, k), flat(Vh), gu, gs, gvh)
    return make_tensor(out.reshape(U.shape))


# The kernels' names by dtype char: f"svd_vjp_{dtype}" formats the dtype: ~5 us a call.
_VJP = {"f": "svd_vjp_float32", "d": "svd_vjp_float64"}


def svd_vjp_square(u: np.ndarray, s: np.ndarray, vh: np.ndarray, gu: np.ndarray | None,
                   gs: np.ndarray | None, gvh: np.ndarray | None) -> np.ndarray:
    """gA = U [diag(gS) + X] Vh for (B, k, k) factors and cotangents (None: zero), with
    X_ij = N+_ij / 2(s_j - s_i) + N-_ij / 2(s_j + s_i) as in _plain_fast, by one kernel
    pass (_svd_vjp_kernel.py): compiled ahead of time by the warm-up, else numba's."""
    dt = s.dtype
    kernel = getattr(kernels("small"), _VJP[dt.char])
    # The compiled kernel checks nothing (the family is unchecked): its signature has every array
    # in dt (cotangents arrive in it already), the factors 3-D and s 2-D.
    u, vh = u.astype(dt, copy=False), vh.astype(dt, copy=False)
    gu, gs, gvh = (None if x is None else x.astype(dt, copy=False) for x in (gu, gs, gvh))
    if s.ndim != 2 or any(x is not None and x.ndim != 3 for x in (u, vh, gu, gvh)) or (
            gs is not None and gs.ndim != 2):
        raise ValueError("svd_vjp_square: expects (B, k, k) factors and cotangents and "
                         "(B, k) singular values")
    absent3, absent2 = _absent(dt)
    flags = _FLAGS[gu is not None, gs is not None, gvh is not None]
    out = np.empty(u.shape, dt)
    kernel(u, s, vh, absent3 if gu is None else gu, absent2 if gs is None else gs,
           absent3 if gvh is None else gvh, flags, out)
    return out


# The kernel's flags, one array per case, made once (the kernel only reads them; three
# numpy allocations were a fifth of this wrapper's cost on a batch of 3x3s).
_FLAGS = {(a, b, c): np.array([a, b, c], np.int64)
          for a in (False, True) for b in (False, True) for c in (False, True)}


@functools.lru_cache(maxsize=8)
def _absent(dt: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """The zeros an absent cotangent stands as, (1, 1, 1) and (1, 1), read-only."""
    out = np.zeros((1, 1, 1), dt), np.zeros((1, 1), dt)
    for a in out:
        a.flags.writeable = False
    return out


def _in_range(s: np.ndarray) -> bool:
    """Whether 2 (s_j + s_i) stays below overflow and s_1 > 0 (the diagonal's denominator)."""
    s1 = s[..., 0]
    # the ufuncs' reduces and the dtype's largest looked up: ndarray.min/max's Python layer
    # and np.finfo were half of this test on a batch of 3x3s
    big = _BIG.get(s.dtype) or float(np.finfo(s.dtype).max)
    return bool(_min(s1, None) > 0 and _max(s1, None) < big / 8)


def _plain_fast(num: Numerators, f: Factors, S: Tensor, gS: Tensor | None,
                Vhk: Tensor) -> Tensor:
    """The formula off every pole: ``_plain``'s numbers without its masks (the halves are
    in the denominators), several times faster for batches of tiny matrices."""
    dm, dp = pair_denominators(S)
    X = num.plus / dm + num.minus / dp
    if gS is not None:
        X = X + gS.diag_embed()
    gA = f.Uk @ X @ Vhk
    if num.R is not None:
        gA = gA + (num.R / S.unsqueeze(-2)) @ Vhk
    if num.Q is not None:
        gA = gA + f.Uk @ (num.Q / S.unsqueeze(-2)).mT
    return gA


def _cols(g: Tensor | None) -> np.ndarray:
    """Column norms of a folded cotangent (0-d 0: none), read once for the rounding level
    and ``Poles.faint``."""
    return np.zeros(()) if g is None else colnorms(g._array)


def _top(cols: np.ndarray) -> np.ndarray:
    """The largest of ``_cols``, per batch element (``colmax``'s number)."""
    return cols.max(axis=-1) if cols.ndim else cols


def _plain(num: Numerators, minus_s: Tensor, plus_s: Tensor, S: Tensor,
           zeros: Zeroed | None = None) -> Terms:
    """Plain quotients; entries at a tie (and pairs of dropped triplets), ``zeros``, are 0."""
    if zeros is None:
        k = S.shape[-1]
        diag = np.eye(k, dtype=bool)
        plus = quot(num.plus, minus_s, diag)
        minus = None if num.minus is None else quot(num.minus, plus_s, diag)
        R = None if num.R is None else num.R / S.unsqueeze(-2)
        Q = None if num.Q is None else num.Q / S.unsqueeze(-2)
        return Terms(plus, minus, R, Q)
    return Terms(quot(num.plus, minus_s, zeros.plus), quot(num.minus, plus_s, zeros.minus),
                 quot_cols(num.R, S, zeros.cols), quot_cols(num.Q, S, zeros.cols))


def _zero_fused(num: Numerators, S: Tensor, tie: np.ndarray, has_inv: bool,
                absent: np.ndarray) -> Terms | None:
    """``_plain(num, *pairwise(S), S, tie_zeros(...))`` for a backward that records nothing,
    real float32 or float64: X's two quotients summed by one kernel pass
    (_svd_vjp_kernel.zero_poles), as Terms(plus = their sum, minus = None), which
    svd_backward halves as it halves plus + minus: the same bits. The ops' dozen (k, k)
    temporaries cost ~55 us of an 80 x 80's backward (iPEPS's corners). None: take them."""
    plus, minus = num.plus, num.minus
    if _state.enabled or plus is None or minus is None:
        return None
    s, nu_p, nu_m = S._array, plus._array, minus._array
    dt = s.dtype
    if dt not in KERNEL_FLOATS or nu_p.dtype != dt or nu_m.dtype != dt:
        return None
    out = zero_poles(nu_p, nu_m, s, tie, absent)
    cols = zero_cols(s, tie, has_inv, absent)
    return Terms(make_tensor(out), None, quot_cols(num.R, S, cols), quot_cols(num.Q, S, cols))


_ZERO_POLES = {"f": "zero_poles_float32", "d": "zero_poles_float64"}


def zero_poles(plus: np.ndarray, minus: np.ndarray, s: np.ndarray, tie: np.ndarray,
               absent: np.ndarray) -> np.ndarray:
    """plus / (s_j - s_i) + minus / (s_j + s_i) at [.., i, j], each quotient 0 where
    tie_zeros sets it, by the kernel (_svd_vjp_kernel.py): (*, k, k) numerators, s (*, k),
    tie (*, 1) or (*,) and absent (*, k) bool, all of one float dtype (float32 or float64)."""
    k, dt = s.shape[-1], s.dtype
    out = np.empty(plus.shape, dt)
    getattr(kernels("small"), _ZERO_POLES[dt.char])(
        plus.reshape(-1, k, k), minus.reshape(-1, k, k), s.reshape(-1, k),
        tie.astype(dt, copy=False).reshape(-1), absent.reshape(-1, k), out.reshape(-1, k, k))
    return out


def _broadened(num: Numerators, minus_s: Tensor, plus_s: Tensor, S: Tensor,
               e: float) -> Terms:
    """Every pole 1/x as x / (x^2 + e): finite everywhere, exact nowhere."""
    def b(nu: Tensor | None, x: Tensor) -> Tensor | None:
        return None if nu is None else nu * (x / (x * x + e))

    Sr = S.unsqueeze(-2)
    return Terms(b(num.plus, minus_s), b(num.minus, plus_s), b(num.R, Sr), b(num.Q, Sr))
