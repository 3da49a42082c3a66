"""Where a tie limit gets its second-order information: the cotangents an SVD's outputs
received, recorded as functions of them, and Hessian-vector products with them
(``Source``); the walk's own record downstream (``Downstream``) or an earlier pass's
formula rebuilt on fresh leaves (``Local``, ``Earlier``, ``Tap``); and the scope of a look
downstream (``nested``, ``Held``), inside which other SVDs take their ties as 0.

The scope is thread-local on purpose: a look is a backward walk run from inside a node's
backward, on the same thread, and the SVD and eigh backwards it meets must know they are
inside it (their own looks would differentiate every later limit's looks again)."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..autograd import downstream
from ..autograd.engine import (
    current_walk,
    recorded_output_grads,
    result_is_differentiated,
    run_backward,
)
from ..autograd.function import Context, Function, OnceDifferentiableError, make_tensor
from ..autograd.grad_mode import enable_grad
from ..tensor import Tensor
from ._svd_parts import colmax
from ._svd_poles import Poles
from .ties import TiePolicy

_nesting = threading.local()  # .depth > 0 while a tie limit looks downstream

def earlier_here(down: Downstream | None) -> Earlier | None:
    """What an earlier recorded pass left, if this walk goes through its result (through
    several passes' results: what they left together, ``Passes``)."""
    if down is None:
        return None
    walk = current_walk()
    seen = [e for e in (r() for r in getattr(down.ctx, "earlier", ()))
            if e is not None and e.seen_by(walk) and e.D is not None]
    if len(seen) <= 1:
        return seen[0] if seen else None
    return Passes(seen)


def remember_dropped(down: Downstream | None, poles: Poles, policy: TiePolicy,
                      grads: tuple) -> Earlier | None:
    """When this result will be differentiated and dropped triplets sit at poles, or the
    loss read U and Vh but not S at poles, keep what a later pass needs to take their
    limits locally (``Earlier``, ``Covariant``)."""
    if (down is None or policy.kind != "exact" or nested() or not result_is_differentiated()
            or not (poles.dropped_near or grads[1] is None and poles.any())):
        return None
    e = Earlier(poles.absent, tuple(None if g is None else g.detach() for g in grads),
                 policy, down.scale, poles.dropped_near)
    # One per recorded pass (each pass's result is tapped with its own), held by that
    # result's Tap: a node keeps them weakly, so each goes with its pass's graph.
    # (Keeping the first pass's alone had a later pass through the node, as another
    # autograd.grad(..., create_graph=True) on the same graph, differentiated without
    # it: by the general looks, which hold other SVDs' ties, 40% off in one case.)
    earlier = getattr(down.ctx, "earlier", None)
    if earlier is None:
        earlier = down.ctx.earlier = []
    earlier[:] = [r for r in earlier if r() is not None]
    earlier.append(weakref.ref(e))
    return e


@contextmanager
def rebuilding(scale: np.ndarray | None) -> Iterator[None]:
    """A recorded pass's formula computed again on fresh leaves: where that pass judged
    rounding by the loss's curvature, it takes the scale that pass found (``judged``)."""
    before, _nesting.rebuilt = getattr(_nesting, "rebuilt", None), (scale,)
    try:
        yield
    finally:
        _nesting.rebuilt = before


def rebuilt() -> bool:
    """Whether this backward is a recorded pass's formula computed again (``rebuilding``):
    that pass's result was differentiated, and its rules are the ones to follow."""
    return getattr(_nesting, "rebuilt", None) is not None


def judged(down: Downstream | None) -> np.ndarray | None:
    """The loss's curvature scale: from the walk, or in a rebuild the one the recorded pass
    found (None: it found none, and a rebuild cannot look)."""
    if down is not None:
        return down.hessian_scale()
    r = getattr(_nesting, "rebuilt", None)
    return None if r is None else r[0]


def nested() -> bool:
    """Whether this backward runs inside another tie limit's look downstream."""
    return getattr(_nesting, "depth", 0) > 0


def note_chained() -> None:
    """A tie met inside a look downstream (taken as 0): the look is through a chain."""
    _nesting.chained = True


@contextmanager
def looking_downstream() -> Iterator[None]:
    _nesting.depth = getattr(_nesting, "depth", 0) + 1
    try:
        yield
    finally:
        _nesting.depth -= 1


class Source:
    """Cotangents recorded as functions of (U, S, Vh), and the Hessian-vector products
    with them that the limits need."""

    def outputs(self) -> tuple[Tensor, ...]:
        raise NotImplementedError

    def recorded(self) -> list:
        raise NotImplementedError

    def _hvp(self, q: Tensor, wrt: list[Tensor], create_graph: bool) -> list:
        if not q.requires_grad:
            return [None] * len(wrt)
        one = make_tensor(np.ones((), q.dtype))
        try:
            with looking_downstream():
                out = run_backward([q], [one], True, create_graph, inputs=wrt,
                                   look_downstream=False)
        except OnceDifferentiableError as e:  # say why a first-order walk differentiates it
            raise OnceDifferentiableError(
                f"the gradient at a repeated (or zero) singular value or eigenvalue is the "
                f"limit of a 0/0 term, taken from the second derivatives of the loss after "
                f"the decomposition, and {e.fn_name} on that path is @once_differentiable: it "
                f"has none. Write that backward with minigrad ops, or pass a tie policy that "
                f"needs no second derivatives: ties=\"zero\" (exact only where the loss does "
                f"not tell the tied vectors apart, as the polar factor U Vh) or "
                f"mg.linalg.TiePolicy(\"lorentzian\", eps=...)", e.fn_name) from e
        assert out is not None  # a walk given inputs returns their gradients
        return out

    def derivatives(self, d: Tensor, levels: int, near: bool) -> list:
        """[(d_t^n gU, d_t^n gVh) for n = 1 .. levels] along S + t d (``_derivatives``;
        through a chain, the first only unless ``near`` a pole: see there)."""
        return self._remembered(self._derivatives, d, levels, near)

    scale: np.ndarray | None = None  # the curvature scale found, kept for a rebuild

    def hessian_scale(self) -> np.ndarray:
        """The loss's curvature scale (``_hessian_scale``), found once per source."""
        if self.scale is None:
            self.scale = self._remembered(self._hessian_scale)
        return self.scale

    def _remembered(self, look: Callable, *args: Any) -> Any:
        return look(*args)

    def _derivatives(self, d: Tensor, levels: int, near: bool) -> list:
        """[(d_t^n gU, d_t^n gVh) for n = 1 .. levels] along S + t d (fewer when they
        vanish). By symmetry of derivatives d_t^n gU = d/dU <d_t^(n-1) gS, d>.

        Through a chain (a look that met a pole at another SVD, taken as 0 there at a tie)
        a limit at ties alone takes the first level only: the others multiply x = 0 and
        serve only its derivatives, which such a look cannot give exactly at generic ties,
        and cost the most. ``near`` a pole off the ties every level is taken: there they
        make the value O(x^2)-exact, and its derivatives O(x^2)-exact when asked for, as
        off a chain (``_tie_limits``)."""
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
            # differentiate it (``Held``), and a recorded look kept every look's graph to
            # the walk's end (TRG's second pass at bond 16: +1-2 GB a look).
            hU, hS, hVh = self._level(q, n < levels or result_is_differentiated())
            out.append((hU, hVh))
            if hS is None or (_nesting.chained and not near):
                break
            q_of = hS
        return out if any(u is not None or v is not None for u, v in out) else []

    def _level(self, q: Tensor, create_graph: bool) -> list:
        """d/d(U, S, Vh) of q: one level of ``_derivatives``."""
        return self._hvp(q, list(self.outputs()), create_graph)

    def _hessian_scale(self) -> np.ndarray:
        """The size of the loss's second derivatives along a fixed random direction, in
        the units of a numerator (per batch element)."""
        U, S, Vh = self.outputs()
        rec = self.recorded()
        rng = np.random.default_rng(0)
        s1 = S._array[..., :1]
        terms = []
        scales: tuple[Any, ...] = (1.0, s1, 1.0)  # S's in units of s_1, as a numerator's
        for g, t, scale in zip(rec, (U, S, Vh), scales):
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


class Downstream(Source):
    """The walk's own record of the loss downstream of this SVD (the engine's)."""

    def __init__(self, ctx: Context, grads: tuple) -> None:
        self.ctx, self.grads = ctx, grads
        if result_is_differentiated() and not nested():  # (a look's own walks record)
            ctx.recorded_walk = True  # (``first_order``)

    def first_order(self) -> bool:
        """Whether no walk through this node was recorded yet, this one included: a later
        walk may differentiate a recorded one's result (a second derivative), and its
        cotangents come through that pass's quotients (``exact_terms``' typical rounding).
        (A walk after a recorded one that never reaches its result counts as one too.)"""
        return not getattr(self.ctx, "recorded_walk", False)

    def outputs(self) -> tuple[Tensor, ...]:
        return self.ctx.saved_tensors

    def recorded(self) -> list:
        return recorded_output_grads(self.ctx, self.grads)

    def _remembered(self, look: Callable, *args: Any) -> Any:
        """What ``look`` finds, the first time; in a replay of the walk (downstream.py),
        what it found then, without looking again. The same calls come in the same order
        (the replay computes the same cotangents); one that does not match what was found
        then (another look, or one more) looks afresh."""
        walk = downstream.running.stack[-1]
        main = walk.replaying or (walk if walk.optimistic else None)
        if main is None:
            return look(*args)
        found = main.looks.setdefault(self.ctx, [])
        name = look.__name__
        if walk is main:
            out = look(*args)
            found.append((name, _detached(out)))  # a look's graph is not kept: Held cuts it
            return out
        i = walk.cursor.get(self.ctx, 0)
        if i == len(found) or found[i][0] != name:
            return look(*args)
        walk.cursor[self.ctx] = i + 1
        return found[i][1]


def _detached(x: Any) -> Any:
    """``x`` with every Tensor in it (through tuples and lists) detached."""
    if isinstance(x, Tensor):
        return x.detach()
    if isinstance(x, (tuple, list)):
        return type(x)(_detached(y) for y in x)
    return x


class Mark:
    """What a later walk through a recorded backward's result leaves there (``Tap``): the
    walk, weakly (it holds the graph that holds the result: held strongly, the cycle kept
    each run's whole graph until a full collection, +1 GB a run of TRG's specific heat at
    bond 16), and the cotangent D the result got, where ``keeps_D``."""

    keeps_D = False

    def __init__(self) -> None:
        self.walk: weakref.ref | None = None
        self.D: Tensor | None = None

    def seen_by(self, walk: object) -> bool:
        return self.walk is not None and self.walk() is walk


class Earlier(Mark):
    """A recorded pass's cotangents, and its triplets that got exactly zero cotangent
    (dropped by the loss).

    A later pass through that pass's result gives those triplets cotangents from the
    first-order formula alone (the loss never reads them), so their limits there come from
    that formula, rebuilt locally (``Local``), instead of the whole downstream; so do the
    + poles of a pass that read U and Vh but not S (``Covariant``). ``Tap`` keeps the
    cotangent D the result gets in each later walk."""

    keeps_D = True

    def __init__(self, absent: np.ndarray, grads: tuple, policy: TiePolicy,
                 scale: np.ndarray | None = None, dropped_near: bool = True) -> None:
        super().__init__()
        self.absent, self.grads, self.policy = absent, grads, policy
        self.scale = scale  # the curvature scale that pass judged rounding by, if it looked
        self.dropped_near = dropped_near  # dropped triplets sat near poles in that pass

    def parts(self) -> list[tuple[tuple, Tensor | None, np.ndarray | None]]:
        """Each pass's cotangents, the cotangent D its result got in this walk, and the
        curvature scale it judged rounding by."""
        return [(self.grads, self.D, self.scale)]


class Passes(Earlier):
    """Several recorded passes through one node whose results one walk goes through: the
    triplets every one of them dropped (the others a pass reads, and only a look
    downstream knows), and psi the sum of each pass's <D, formula> (``Local``)."""

    def __init__(self, seen: list[Earlier]) -> None:
        super().__init__(np.logical_and.reduce([e.absent for e in seen]), (), seen[0].policy,
                         None, any(e.dropped_near for e in seen))
        self.seen = seen  # (never tapped itself: its own D and walk stay unset)

    def parts(self) -> list[tuple[tuple, Tensor | None, np.ndarray | None]]:
        return [p for e in self.seen for p in e.parts()]


class Tap(Function):
    """The identity on a recorded backward's result; a later walk through it notes itself
    (and the cotangent D) on ``mark``."""

    @staticmethod
    def forward(ctx: Context, gA: Tensor, mark: Mark) -> np.ndarray:
        ctx.mark = mark
        return gA._array

    @staticmethod
    def backward(ctx: Context, D: Tensor) -> tuple:
        mark = ctx.mark
        mark.walk = weakref.ref(current_walk())
        if mark.keeps_D:
            mark.D = D.detach()
        return D, None


class Local(Source):
    """psi(U, S, Vh) = <D, first-order formula(U, S, Vh; that pass's cotangents)> (summed
    over the passes, ``Passes``), its cotangents recorded on fresh leaves: the part of a
    later pass's loss that the dropped triplets see. ``cotangents``: that pass's
    cotangents are leaves too (``Covariant``)."""

    def __init__(self, earlier: Earlier, outputs: tuple[Tensor, ...],
                 formula: Callable, cotangents: bool = False) -> None:
        self.leaves = tuple(Tensor(t._array, requires_grad=True) for t in outputs)
        self.firsts: list[tuple] = []  # each pass's cotangents, as the formula read them
        psi: Tensor | None = None
        with enable_grad():
            for grads, D, scale in earlier.parts():
                if cotangents:  # the pass's own formula, exactly (see ``Covariant``)
                    grads = tuple(None if g is None else Tensor(g._array, requires_grad=True)
                                  for g in grads)
                    with rebuilding(scale):
                        gA = formula(*self.leaves, *grads, TiePolicy())
                else:
                    gA = formula(*self.leaves, *grads, TiePolicy("local"))
                self.firsts.append(grads)
                psi = (gA * D).sum() if psi is None else psi + (gA * D).sum()
        assert psi is not None  # an Earlier stands for one pass at least
        self.grads = self._hvp(psi, list(self.leaves), True)

    def outputs(self) -> tuple[Tensor, ...]:
        return self.leaves

    def recorded(self) -> list:
        return self.grads


class Covariant(Local):
    """A later pass's cotangents at an SVD whose recorded pass read U and Vh but not S,
    the whole of their S-derivatives known locally at the + poles.

    That pass's loss l(U, Vh) is a function of A, so l(U e^(t W), e^(-t W) Vh) = l for every
    (U, Vh) and a rotation W of a tied pair: <G, (U W, -W Vh)> = 0 everywhere, G = (G_U,
    G_Vh) its gradient. Along a direction T of (U, Vh) that keeps them orthonormal this
    gives <H T, (U W, -W Vh)> = -<T_U^T G_U + T_Vh G_Vh^T, W>, H its Hessian. A later pass's
    loss psi reads S only through the formula (nothing downstream reads S: l does not), so
    d_t of its cotangents along S + t d is the formula's own (``Local``) plus H d_t M, M
    its cotangent of G (the formula reads G through tangent directions only: U^T G_U - G_U^T
    U and the complement); the rest of psi's cotangents do not change with S. So the +
    numerators' derivatives need no walk downstream: those of (d_t gU - U Z_U, d_t gVh -
    Z_V^T Vh), Z_U = (d_t M_U)^T G_U, Z_V = d_t M_Vh G_Vh^T. The other numerators (- poles,
    the complement) of these are not the loss's: only ``plus`` may be read from them. Near
    a + pole between read triplets (not a tie) the same holds where the loss is invariant
    there too; the series for mu checks it (nu = x mu), as everywhere.

    Cost: the formula and two Hessian-vector products through it, O(k^3) per node, in
    place of a walk through the recorded pass downstream of the node (O(n^2) nodes in all
    through a chain of n such SVDs, CTMRG's)."""

    def __init__(self, earlier: Earlier, outputs: tuple[Tensor, ...],
                 formula: Callable) -> None:
        super().__init__(earlier, outputs, formula, cotangents=True)

    @staticmethod
    def applies(earlier: Earlier | None, differentiated: bool) -> bool:
        """Whether every recorded pass read U or Vh and none read S, and this pass's result
        is not differentiated again (the rebuild's leaves are its own: a third pass would
        not see the limits move)."""
        return earlier is not None and not differentiated and all(
            g[1] is None and (g[0] is not None or g[2] is not None)
            for g, _, _ in earlier.parts())

    def _level(self, q: Tensor, create_graph: bool) -> list:
        """d/d(U, S, Vh) of q, with the Hessian's share through G (``Covariant``)."""
        U, S, Vh = self.leaves
        read = [g for grads in self.firsts for g in (grads[0], grads[2]) if g is not None]
        hU, hS, hVh, *hG = self._hvp(q, [U, S, Vh, *read], create_graph)
        dM = iter(hG)
        for gU, _, gVh in self.firsts:
            mU = None if gU is None else next(dM)
            mVh = None if gVh is None else next(dM)
            if mU is not None:  # - U Z_U
                z = U @ (mU.mT @ gU.detach())
                hU = -z if hU is None else hU - z
            if mVh is not None:  # - Z_V^T Vh
                z = (mVh @ gVh.detach().mT).mT @ Vh
                hVh = -z if hVh is None else hVh - z
        return [hU, hS, hVh]


class Held(Function):
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
