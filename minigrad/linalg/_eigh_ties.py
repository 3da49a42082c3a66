"""Exact limits of the eigh backward's pole terms at (and near) repeated eigenvalues, on the
SVD's mechanism (``_tie_limits``: the derivation is there).

The pole term X_ij = N_ij / 2 x_ij, x_ij = l_j - l_i, has the numerator N = J - J^T,
J = U^T gU: the derivative of the loss along the rotation of (u_i, u_j), which leaves A
unchanged when x = 0. A loss that is a function of A has N = x mu with mu smooth, and with
U held, along L + t d (c = d_j - d_i),

    mu = sum_{n >= 0} (-x / c)^n d_t^(n+1) N / ((n+1)! c),   d_t^n gU = d/dU <d_t^(n-1) gL, d>,

so the limit at a tie is d_t N / c: for U f(L) U^T it is Daleckii and Krein's f'(l) times
the block of the cotangent. The walk records the cotangents as functions of (L, U) when the
eigh node asks (``wants_downstream``), and Hessian-vector products give d_t^n gU. Where
N != x mu to rounding, the loss depends on an arbitrary eigenbasis: LinAlgError at a tie;
near one (an isolated pair closer than sqrt(eps) max|L|) N / x with IllConditionedWarning.
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd.engine import result_is_differentiated
from ..autograd.function import make_tensor
from ..autograd.grad_mode import enable_grad
from ..functions import where
from ..tensor import Tensor
from . import _tie_sources
from ._checks import adjoint
from ._svd_parts import colmax, colnorms
from ._tie_errors import ill_conditioning, warn_near
from .errors import LinAlgError

C_TIE = 16.0  # tied: |l_i - l_j| <= C_TIE sqrt(n) eps max|l|, the accuracy of computed L
C_NOISE = 64.0  # rounding-level numerators: C_NOISE sqrt(n) eps times their scale
C_NOISE_GL = 1000.0  # gL_i - gL_j at a tie also carries f''(l) (l_i - l_j): more room


class Downstream(_tie_sources.Downstream):
    """The walk's record of the loss downstream of one eigh node: its cotangents (gL, gU) as
    functions of the outputs (L, U), and Hessian-vector products with them (the SVD's
    record, with eigh's derivatives and curvature scale)."""

    def _derivatives(self, d: Tensor, levels: int, near: bool) -> list:
        """[d_t^n gU for n = 1 .. levels] along L + t d (fewer where they vanish; through a
        chain, the first only unless ``near`` a pole: ``_tie_sources.Source._derivatives``)."""
        L, U = self.outputs()
        q_of = self.recorded()[0]
        out: list[Tensor] = []
        if q_of is None:
            return out
        _tie_sources._nesting.chained = False
        for n in range(1, levels + 1):
            with enable_grad():
                q = (q_of * d).sum()
            hL, hU = self._hvp(q, [L, U], n < levels or result_is_differentiated())
            if hU is not None:
                out.append(hU)
            if hL is None or hU is None or (_tie_sources._nesting.chained and not near):
                break
            q_of = hL
        return out

    def _hessian_scale(self) -> np.ndarray:
        """The loss's second derivatives along a fixed random direction, in the units of a
        numerator: the scale of the rounding left in cotangents that cancelled."""
        L, U = self.outputs()
        rng = np.random.default_rng(0)
        lmax = np.abs(L._array).max(axis=-1, keepdims=True)
        terms = []
        for g, t, scale in zip(self.recorded(), (L, U), (lmax, 1.0)):
            if g is not None and g.requires_grad:
                w = make_tensor((rng.standard_normal(t.shape) * scale).astype(t.dtype))
                with enable_grad():
                    terms.append((g * w).sum())
        if not terms:
            return np.zeros(L.shape[:-1])
        with enable_grad():
            q = terms[0] if len(terms) == 1 else terms[0] + terms[1]
        hL, hU = self._hvp(q, [L, U], False)
        out = np.zeros(L.shape[:-1])
        if hU is not None:
            out = out + colmax(hU)
        if hL is not None:
            out = out + np.abs(hL._array).max(axis=-1) * lmax[..., 0]
        return out


def tie_level(l: np.ndarray) -> np.ndarray:
    eps = float(np.finfo(l.dtype).eps)
    return C_TIE * np.sqrt(l.shape[-1]) * eps * np.abs(l).max(axis=-1, keepdims=True)


def near_level(l: np.ndarray) -> np.ndarray:
    """Closer than this, N / x loses more than eps^(2/3) to rounding in N."""
    return float(np.finfo(l.dtype).eps) ** (1 / 3) * np.abs(l).max(axis=-1, keepdims=True)


def limits(L: Tensor, U: Tensor, E: Tensor, down: Downstream, order: int,
           weak: bool) -> Tensor | None:
    """mu (N = x mu) at every pair, right with its first ``order`` derivatives (through a
    chain too where ``weak``, near a pole off the ties); None where the cotangents cannot
    depend on L (then mu = 0)."""
    n = L.shape[-1]
    d_np = np.arange(1.0, n + 1.0)
    dts = down.derivatives(make_tensor(d_np.astype(L.dtype)), order + 1, weak)
    if not dts:
        return None
    c = d_np[None, :] - d_np[:, None]  # [i, j] = d_j - d_i
    c = np.where(c == 0, 1.0, c)
    out, power = None, None  # power = (-x)^k by products: x ** k's derivatives at 0 are 0 * inf
    for k, dgU in enumerate(dts):
        power = None if k == 0 else (-E if power is None else power * -E)
        dJ = adjoint(U) @ dgU
        term = (dJ - adjoint(dJ)) / make_tensor((math.factorial(k + 1) * c ** (k + 1)).astype(
            L.dtype))
        if power is not None:
            term = term * power
        out = term if out is None else out + term
    return out


def exact_terms(N: Tensor, E: Tensor, L: Tensor, U: Tensor, gU: Tensor, need: np.ndarray,
                tie: np.ndarray, down: Downstream | None) -> tuple[Tensor | None, np.ndarray]:
    """The limits mu where ``need`` (the pairs at or near a tie) and a mask of the entries
    where mu replaces N / x, after checking that the loss has a gradient there."""
    if down is None:
        raise LinAlgError("linalg.eigh backward: the exact gradient at repeated eigenvalues "
                          "needs the backward walk's graph; call backward() or "
                          "autograd.grad on the loss rather than the backward directly")
    weak = bool((need & ~tie).any())
    order = 2 if result_is_differentiated() else int(weak)
    mu = limits(L, U, E, down, order, weak)
    l = L._array
    n = l.shape[-1]
    eps = float(np.finfo(l.dtype).eps)
    scale_noise = C_NOISE * np.sqrt(n) * eps
    cols = colnorms(gU._array)  # (read once: the rounding scale and the warning's figure)
    top = cols.max(axis=-1)
    noise = scale_noise * top
    x = E._array
    resid = np.abs(N._array) if mu is None else np.abs(N._array - x * mu._array)
    resid = np.where(need, resid, 0.0)
    bad = resid > np.asarray(noise)[..., None, None]
    if bad.any():
        # Maybe only rounding in cotangents that cancelled (U diag(L) U^T - A): compare with
        # the loss's curvature, the scale such rounding comes from.
        wider = noise + scale_noise * down.hessian_scale()
        bad = resid > np.asarray(wider)[..., None, None]
    if (bad & tie).any():
        raise tie_error(bad & tie, l, "the loss depends on the arbitrary choice of eigenvectors "
                        "for them, so it has no gradient. Losses that are functions of A "
                        "(U f(L) U^T, functions of the eigenvalues, projectors onto a whole "
                        "eigenspace) have one and work.")
    # An isolated distinct pair closer than sqrt(eps) max|L| whose eigenvectors the loss
    # reads: the gradient exists (N / x, kept below) but is as ill-conditioned as they are
    # (the figure: _tie_errors.ill_conditioning's, in units of the gradient times max|L|).
    lmax = np.abs(l).max(axis=-1)
    near = []
    top = np.broadcast_to(top, lmax.shape)
    for idx in np.argwhere(bad):
        *b, i, j = (int(v) for v in idx)
        bt = tuple(b)
        gap = abs(float(x[bt + (i, j)]))
        rel = gap / float(lmax[bt])
        if i < j and rel <= np.sqrt(eps) and _isolated(l[bt], i, j, gap):
            q = abs(float(N._array[bt + (i, j)])) / rel
            fig = ill_conditioning(eps, n, rel, float(cols[bt + (i,)] + cols[bt + (j,)]),
                                   float(top[bt]), q)
            near.append((fig, rel, b, i, j))
    if near:
        fig, rel, b, i, j = max(near)
        warn_near("linalg.eigh backward", f"L[{i}] and L[{j}] are {rel:.0e} max|L| apart"
                  f"{_batch(b)}", len(near) - 1, False, "eigenvectors",
                  math.sqrt(n) * eps / rel, fig, eps,
                  "functions of L, U f(L) U^T, projectors onto whole eigenspaces")
    return mu, need & ~bad


def _isolated(l: np.ndarray, i: int, j: int, gap: float) -> bool:
    """No other eigenvalue within 4n gaps of the pair (else mu's expansion fails and N / x,
    good to eps |g| / gap, stays)."""
    others = np.delete(l, [i, j])
    near = 4 * l.shape[-1] * gap
    return not np.any(np.abs(others[:, None] - l[[i, j]][None, :]) <= near)


def quotient(N: Tensor, E: Tensor, zero: np.ndarray, mu: Tensor | None,
             take: np.ndarray) -> Tensor:
    """N / x off the masks, mu where ``take``, 0 where ``zero`` (the diagonal, pairs the loss
    does not see)."""
    mask = zero | take
    m = make_tensor(mask)
    q = N / where(m, 1.0, E)
    if not mask.any():
        return q
    value = 0.0 if mu is None or not take.any() else where(make_tensor(zero), 0.0, mu)
    return where(m, value, q)


def check_value_cotangents(ties: np.ndarray, l: np.ndarray, gl: np.ndarray) -> None:
    """At tied pairs whose eigenvectors the loss does not see: weighing the tied eigenvalues
    differently (like taking the largest) is a kink, no gradient. (Where it sees them,
    gL_i != gL_j is normal: U f(L) U^T has gL_i = f'(l) u_i^T G u_i.)"""
    n = l.shape[-1]
    noise = C_NOISE_GL * np.sqrt(n) * np.finfo(l.dtype).eps * np.abs(gl).max(axis=-1)
    bad = ties & (np.abs(gl[..., :, None] - gl[..., None, :]) > noise[..., None, None])
    if bad.any():
        raise tie_error(bad, l, "the loss weighs them differently (like taking the largest of "
                        "them), so it has a kink and no gradient there; a symmetric function "
                        "of the tied eigenvalues (their sum, their product) has one.")


def _batch(b: list) -> str:
    return f" in batch element {tuple(b)}" if b else ""


def tie_error(mask: np.ndarray, l: np.ndarray, why: str) -> LinAlgError:
    """Name the first offending pair (i, j) and its batch element."""
    *b, i, j = (int(v) for v in np.argwhere(mask)[0])
    i, j = min(i, j), max(i, j)
    v = float(l[tuple(b) + (i,)])
    return LinAlgError(f"linalg.eigh backward: eigenvalues L[{i}] = L[{j}] = {v:.6g} are "
                       f"repeated{_batch(b)}: {why}")
