"""The pieces of the SVD backward that its formula and its tie limits share: the
numerators of the pole terms, where the poles are, and masked quotients."""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from ..autograd.function import make_tensor
from ..autograd.grad_mode import _state
from ..functions import where
from ..tensor import Tensor
from ._checks import adjoint
from .errors import LinAlgError

C_TIE = 16.0  # a tie: |x| <= C_TIE sqrt(k) eps s_1, the accuracy of the computed S


C_NOISE = 64.0  # rounding-level size of a numerator: C_NOISE sqrt(max(m, n)) eps scale


class Numerators(NamedTuple):
    """The numerators of the pole terms, all linear in the cotangents (gU, gV); with
    conjugate transposes for complex input."""

    J: Tensor | None
    K: Tensor | None
    plus: Tensor | None  # (*, k, k)  N+ = Ja + Ka, over s_j - s_i
    minus: Tensor | None  # (*, k, k)  N- = Ja - Ka, over s_j + s_i
    R: Tensor | None  # (*, m, k)  (I - U U^T) gU, over s_i, when m > k
    Q: Tensor | None  # (*, n, k)  (I - V V^T) gV, over s_i, when n > k


def tie_level(s: np.ndarray, eps: float) -> np.ndarray:
    """(*, 1): singular values this close are equal to the accuracy they are computed to."""
    return C_TIE * np.sqrt(s.shape[-1]) * eps * s[..., :1]


def near_level(s: np.ndarray, eps: float) -> np.ndarray:
    """(*, 1): this close to a pole, nu / x loses more than eps^(2/3) to rounding in nu."""
    return eps ** (1 / 3) * s[..., :1]


def numerators(Uk: Tensor, Vk: Tensor, gUe: Tensor | None, gVe: Tensor | None, tall: bool,
               wide: bool) -> Numerators:
    """N+, N- and the complement parts R, Q from the (folded) cotangents; None is zero."""
    J = Ja = K = Ka = None
    if gUe is not None:
        J = adjoint(Uk) @ gUe
        Ja = _skew(J, Uk, gUe)
    if gVe is not None:
        K = adjoint(Vk) @ gVe
        Ka = _skew(K, Vk, gVe)
    if Ka is None:
        plus = minus = Ja
    elif Ja is None:
        plus, minus = Ka, -Ka
    else:
        plus, minus = Ja + Ka, Ja - Ka
    R = gUe - Uk @ J if tall and gUe is not None else None
    Q = gVe - Vk @ K if wide and gVe is not None else None
    return Numerators(J, K, plus, minus, R, Q)


def _skew(J: Tensor, W: Tensor, gW: Tensor) -> Tensor:
    """J - J^H for J = W^H gW. For tiny k as J - gW^H W, the same sums (so the same
    numbers): numpy subtracts a transposed stack of 3x3s 7x slower than a contiguous one,
    and a product of tiny matrices is cheap."""
    return J - adjoint(gW) @ W if J.shape[-1] <= 4 else J - adjoint(J)


def fold_complement(W: Tensor, gW: Tensor, k: int, noise: float, name: str) -> Tensor:
    """gW_eff = gW[:, :k] - Wp (gWp^H W_k): the complement Wp's cotangent folded into W_k
    (the complement is the range of I - W_k W_k^H, whatever its basis).

    Defined only when the loss is blind to the basis of the complement, i.e. Wp^H gWp is
    Hermitian (a turn Wp X, X anti-Hermitian, changes it by Re tr((Wp^H gWp)^H X));
    otherwise raise."""
    if W.shape[-1] == k:
        return gW
    Wk, Wp, gWk, gWp = W[..., :k], W[..., k:], gW[..., :k], gW[..., k:]
    M = (adjoint(Wp) @ gWp)._array
    asym = np.abs(M - np.swapaxes(M, -1, -2).conj()).max(axis=(-2, -1))
    bound = noise * np.abs(gWp._array).max(axis=(-2, -1))
    bad = np.flatnonzero(asym > bound)
    if bad.size:
        where_ = batch_index(asym.shape, bad[0])
        raise LinAlgError(
            f"svd backward: the loss depends on the arbitrary basis of the complement "
            f"{name}[..., {k}:] (the extra {'columns' if name == 'U' else 'rows'} of the full "
            f"factor{where_}), so it has no gradient. Use a basis-free quantity such as the "
            f"projector {name}_p {name}_p^H, or full_matrices=False.")
    return gWk - Wp @ (adjoint(gWp) @ Wk)


def fold_linear(W: Tensor, gW: Tensor | None, k: int) -> Tensor | None:
    """The same fold as ``fold_complement`` (it is linear in gW), without its check."""
    if gW is None or W.shape[-1] == k:
        return gW
    return gW[..., :k] - W[..., k:] @ (adjoint(gW[..., k:]) @ W[..., :k])


def maybe_poles(s: np.ndarray, near: np.ndarray, has_inv: bool) -> bool:
    """Cheap tests on the sorted S that spare the (k, k) masks when nothing is near a pole.

    Column by column: numpy runs a batch of 3-wide rows ~5x slower than a few long columns."""
    k = s.shape[-1]
    s2, level = s.reshape(-1, k), near.reshape(-1)
    if s2.shape[0] == 1:  # one matrix: Python floats beat a numpy call per column
        v, lv = s2[0].tolist(), float(level[0])
        return any(v[i] - v[i + 1] <= lv for i in range(k - 1)) or (
            v[-1] <= lv if has_inv else k > 1 and v[-2] <= lv)
    # (a loop and the arrays' own any: a generator and np.any's Python layer were half of
    # a batch of 3x3s' test)
    for i in range(k - 1):
        if (s2[:, i] - s2[:, i + 1] <= level).any():  # a tie
            return True
    if has_inv:  # s_k near 0
        return bool((s2[:, -1] <= level).any())
    return k > 1 and bool((s2[:, -2] <= level).any())  # two near 0: s_i + s_j


def coupling(J: np.ndarray, K: np.ndarray) -> np.ndarray:
    """max(|J_ij|, |J_ji|, |K_ij|, |K_ji|): how much the loss reads pair (i, j) together."""
    Jt, Kt = np.swapaxes(J, -1, -2), np.swapaxes(K, -1, -2)
    return np.maximum(np.maximum(np.abs(J), np.abs(Jt)), np.maximum(np.abs(K), np.abs(Kt)))


class Poles:
    """Masks of the entries at a pole (``tie_*``: within the accuracy of S) or near one
    (``weak_*``: where nu / x loses digits), minus pairs whose cotangents are all zero.

    A pair with one member ``dropped`` (the loss never reads it: its cotangents are zero by
    construction, a slice, in this pass or in the pass this one differentiates) needs no
    limit: near a pole nu / x is its true value (a truncation close to a crossing is as
    ill-conditioned as that), and at a tie (``solo_tie``) nu must vanish, else the loss
    depends on which of the tied vectors it kept; its term is then 0."""

    def __init__(self, s: np.ndarray, tie: np.ndarray, near: np.ndarray, has_inv: bool,
                 absent: np.ndarray, dropped: np.ndarray | None = None) -> None:
        k = s.shape[-1]
        off = ~np.eye(k, dtype=bool)
        dp = np.abs(s[..., None, :] - s[..., :, None])
        dm = s[..., None, :] + s[..., :, None]
        t2, n2 = tie[..., None], near[..., None]
        gone = absent[..., :, None] & absent[..., None, :]  # exactly zero terms: no pole
        live = off & ~gone
        dropped = absent if dropped is None else dropped
        solo = live & (dropped[..., :, None] ^ dropped[..., None, :])
        duo = live & ~solo
        self.s, self.absent, self.tie_level = s, absent, tie
        self.tie_p = duo & (dp <= t2)
        self.tie_m = duo & (dm <= t2)
        if near is tie:  # (the "zero" policy's) nothing lies between the two levels
            self.weak_p = self.weak_m = np.zeros_like(live)
        else:
            self.weak_p = duo & (dp > t2) & (dp <= n2)
            self.weak_m = duo & (dm > t2) & (dm <= n2)
        self.solo_tie = solo & (dp <= t2)  # s_j + s_i <= tie implies it
        self.solo_tie_m = solo & (dm <= t2)
        # the diagonal, pairs of absent triplets, and solo ties (checked): exactly 0
        self.zero_exact = ~live | self.solo_tie | self.solo_tie_m
        self.decided_p = np.zeros_like(live)  # + pole terms decided elsewhere: 0 here
        if has_inv:
            self.tie_z = ~absent & (s <= tie)
            self.weak_z = np.zeros_like(absent) if near is tie else (
                ~absent & (s > tie) & (s <= near))
        else:
            self.tie_z = self.weak_z = np.zeros(s.shape, bool)
        self.gone_z = absent & (s <= near)
        self.dropped_near = bool(self.gone_z.any() or (
            gone & off & ((dp <= n2) | (dm <= n2))).any())

    def through_recorded(self, dropped: np.ndarray, num: Numerators, noise: np.ndarray,
                         local_dropped: bool = True, local_near: bool = False) -> None:
        """This pass differentiates a recorded pass that dropped ``dropped`` (a second
        derivative through a truncated SVD, or through a loss of U and V alone, which may
        drop none). Near a pole between dropped triplets the limit comes from that pass's
        formula (their cotangents' only source, ``Local``) when ``local_dropped`` (this
        pass's result is not differentiated again: Local's leaves are its own, and a
        third pass would not see its limits move), as between read triplets when
        ``local_near`` (nothing dropped sat near a pole there, and ``Covariant`` gives
        them); every other near-pole entry takes the plain quotient (not a tie: nu / x is
        the true value, to eps |g| / x), and so does any the local series misses (a
        cluster, where it converges slowly: a look would walk the whole recorded pass
        again, per node; CTMRG's near-ties below the cut sent every node to one). At a
        tie between kept triplets where every coupling J_ij, J_ji, K_ij, K_ji is rounding
        take 0, as a structural tie (the symmetry-protected ones of tensor networks,
        symmetric in every pass) gives; a coupled tie still looks (TRG's specific heat at
        bond 16: 20-50 s each), unless ``Covariant`` gives it."""
        kept = ~dropped
        kk = kept[..., :, None] & kept[..., None, :]
        dd = dropped[..., :, None] & dropped[..., None, :]
        cols = dropped
        if not local_dropped:
            dd, cols = np.zeros_like(dd), np.zeros_like(dropped)
        self.weak_p = self.weak_p & (dd | kk) if local_near else self.weak_p & dd
        self.weak_m = self.weak_m & dd
        self.weak_z = self.weak_z & cols
        if num.J is None or num.K is None or not (self.tie_p & kk).any():
            return
        quiet = self.tie_p & kk & (coupling(num.J._array, num.K._array)
                                   <= noise[..., None, None])
        self.tie_p = self.tie_p & ~quiet
        self.decided_p = self.decided_p | quiet

    def faint(self, cols: np.ndarray, big: np.ndarray, near: np.ndarray, eps: float) -> None:
        """A pass not differentiated again: near poles (not ties) whose members the loss
        reads below rounding take the plain quotient, no limit. ``cols`` are the pair's
        cotangent column norms (|gU_i| + |gV_i|), ``big`` the largest, per batch element.
        Where c_i + c_j <= eps big |x| / near, the columns are below what rounding at the
        cotangents' scale leaves (eps big), so they are their own rounding's scale at most
        (rounding elsewhere would have to cancel a larger true value entry by entry), and
        nu / x is off by at most (c_i + c_j) / |x| <= eps big / near: what the plain
        quotient carries just past the near level, where it is taken anyway. (TRG's last
        steps: triplets read at 1e-18 of the scale, each near pair a look downstream.)"""
        lim = eps * big[..., None] / near  # (..., 1)
        pair = cols[..., :, None] + cols[..., None, :]
        dp = np.abs(self.s[..., None, :] - self.s[..., :, None])
        dm = self.s[..., None, :] + self.s[..., :, None]
        self.weak_p = self.weak_p & ~(pair <= lim[..., None] * dp)
        self.weak_m = self.weak_m & ~(pair <= lim[..., None] * dm)
        self.weak_z = self.weak_z & ~(cols <= lim * self.s)

    def decide(self, mask: np.ndarray) -> None:
        """The + pole entries ``mask`` are decided elsewhere: no limit, 0 here."""
        self.tie_p = self.tie_p & ~mask
        self.weak_p = self.weak_p & ~mask
        self.decided_p = self.decided_p | mask

    def any(self) -> bool:
        return bool(self.tie_p.any() or self.weak_p.any() or self.tie_m.any()
                    or self.weak_m.any() or self.tie_z.any() or self.weak_z.any())

    def zeroed(self) -> Zeroed:
        """Where a plain pass takes 0: the exact zeros, the ties, what is decided elsewhere."""
        return Zeroed(self.zero_exact | self.tie_p | self.decided_p,
                      self.zero_exact | self.tie_m, self.tie_z | self.gone_z)


class Zeroed(NamedTuple):
    """Where a plain pass takes 0 for the quotient: entries of N+ / (s_j - s_i) and of
    N- / (s_j + s_i), columns of R S^-1 and Q S^-1."""

    plus: np.ndarray
    minus: np.ndarray
    cols: np.ndarray


def tie_zeros(s: np.ndarray, pairs: tuple[Tensor, Tensor], tie: np.ndarray, has_inv: bool,
              absent: np.ndarray) -> Zeroed:
    """``Poles(s, tie, tie, has_inv, absent).zeroed()`` (the "zero" policy's, nothing
    dropped earlier) without the dozen (k, k) masks it never reads: dead = ~live, solo
    as there, + entries dead | tie_+ | solo & tie_-, - entries dead | tie_- | solo & tie_+,
    columns s_i <= tie (of absent triplets only, without S^-1 terms). ``pairs`` is
    ``pairwise(S)``: the same differences and sums as Poles' (each rounded once)."""
    t2 = tie[..., None]
    tp = np.abs(pairs[0]._array) <= t2
    tm = pairs[1]._array <= t2
    small = s <= tie
    cols = small if has_inv else absent & small
    dead = np.eye(s.shape[-1], dtype=bool)
    if not absent.any():  # (the common case: every pair live, none solo)
        return Zeroed(dead | tp, dead | tm, cols)
    a_i, a_j = absent[..., :, None], absent[..., None, :]
    dead = dead | (a_i & a_j)
    solo = ~dead & (a_i ^ a_j)
    return Zeroed(dead | tp | (solo & tm), dead | tm | (solo & tp), cols)


def absent_triplets(gS: Tensor | None, gUe: Tensor | None, gVe: Tensor | None,
                    k: int) -> np.ndarray:
    """Triplets whose cotangents are all exactly zero (dropped by the loss). Cotangents
    that are zero everywhere yet recorded as functions (a zero seed differentiated again:
    a JVP by double backward, torch.autograd.functional.jvp's trick) drop nothing: the
    map from the seed is what is wanted."""
    out = None
    seed = True
    for g, axis in ((gS, None), (gUe, -2), (gVe, -2)):
        if g is None:
            continue
        z = (g._array == 0) if axis is None else np.all(g._array == 0, axis=axis)
        seed = seed and g.requires_grad and bool(z.all())
        out = z if out is None else out & z
    assert out is not None, "absent_triplets: no cotangent at all (the caller returns first)"
    return np.zeros_like(out) if seed else out


class Terms(NamedTuple):
    plus: Tensor | None  # N+ / (s_j - s_i), limits at the poles (None: no gU, gV)
    minus: Tensor | None  # N- / (s_j + s_i)
    R: Tensor | None  # R S^-1
    Q: Tensor | None  # Q S^-1


def quot(nu: Tensor | None, x: Tensor, mask: np.ndarray,
          value: Tensor | None = None) -> Tensor | None:
    """nu / x, with ``value`` (0 when None) where ``mask`` is set."""
    if nu is None:
        return None
    if not mask.any():
        return nu / x
    if value is None and not _state.enabled:  # nothing records: numpy's same steps alone
        q = np.divide(nu._array, np.where(mask, 1.0, x._array))
        np.copyto(q, 0.0, where=mask)
        return make_tensor(q)
    m = make_tensor(np.broadcast_to(mask, np.broadcast_shapes(mask.shape, x.shape)))
    q = nu / where(m, 1.0, x)
    return where(m, 0.0 if value is None else value, q)


def quot_cols(nu: Tensor | None, S: Tensor, mask: np.ndarray,
               value: Tensor | None = None) -> Tensor | None:
    """Columns of nu over s_i, with ``value`` at the masked columns."""
    if nu is None:
        return None
    return quot(nu, S.unsqueeze(-2), mask[..., None, :], value)


class Factors(NamedTuple):
    U: Tensor
    Vh: Tensor
    Uk: Tensor
    Vk: Tensor
    k: int
    complement: bool = True  # False: the top k of a larger SVD, kept-kept terms only

    def numerators(self, dU: Tensor | None, dVh: Tensor | None) -> Numerators:
        """The numerators made from a derivative of the cotangents (the maps are linear)."""
        m, n = self.U.shape[-2], self.Vh.shape[-1]
        dUe = fold_linear(self.U, dU, self.k)
        dVe = None if dVh is None else fold_linear(adjoint(self.Vh), adjoint(dVh), self.k)
        return numerators(self.Uk, self.Vk, dUe, dVe, self.complement and m > self.k,
                          self.complement and n > self.k)


def colmax(t: Tensor | None) -> np.ndarray:
    """The largest column 2-norm, per batch element (0 for no cotangent)."""
    if t is None:
        return np.zeros(())
    return colnorms(t._array).max(axis=-1)


def colnorms(a: np.ndarray) -> np.ndarray:
    """The column 2-norms of (..., m, n) ``a``, as float64, (..., n): in units of the largest
    entry, since squares of cotangents past 1e154 (a loss of 1e200 at S ~ 1e100) overflow."""
    big = np.abs(a).max(axis=(-2, -1), keepdims=True).astype(np.float64)
    big = np.where(big > 0, big, 1.0)
    b = a / big
    sq = np.abs(b) ** 2 if b.dtype.kind == "c" else b.astype(np.float64) ** 2
    return np.sqrt(np.sum(sq, axis=-2)) * big[..., 0, :]


def pairwise(S: Tensor) -> tuple[Tensor, Tensor]:
    """s_j - s_i and s_j + s_i at [.., i, j]. For small k as one matmul with a constant
    +-1 matrix: numpy's broadcasting loop over a 3-wide inner dim is ~8x slower."""
    k = S.shape[-1]
    if k > 16:
        if not _state.enabled:  # nothing records: numpy's outer sums alone
            s = S._array
            return make_tensor(s[..., None, :] - s[..., :, None]), make_tensor(
                s[..., None, :] + s[..., :, None])
        s_i, s_j = S.unsqueeze(-1), S.unsqueeze(-2)
        return s_j - s_i, s_j + s_i
    pm = make_tensor(_pair_signs(k).astype(S.dtype))  # (k, 2 k^2)
    both = (S @ pm).reshape(S.shape[:-1] + (2, k, k))
    return both[..., 0, :, :], both[..., 1, :, :]


def pair_denominators(S: Tensor) -> tuple[Tensor, Tensor]:
    """2(s_j - s_i) and 2(s_j + s_i) at [.., i, j], and on the diagonal (where the
    numerators are exactly 0, so the quotient is too) something positive. For small k each
    is one product with a constant matrix, contiguous: no masks, no broadcasting over a
    3-wide inner dim."""
    k = S.shape[-1]
    if k > 16:  # the constant matrices grow as k^3: broadcast instead (a wide inner dim)
        s_i, s_j = S.unsqueeze(-1) * 2.0, S.unsqueeze(-2) * 2.0
        diag = make_tensor(np.eye(k, dtype=S.dtype)) * S[..., :1].unsqueeze(-1)
        return s_j - s_i + diag, s_j + s_i + diag
    shape = S.shape[:-1] + (k, k)
    minus, plus = ((S @ make_tensor(d.astype(S.dtype))).reshape(shape)
                   for d in _pair_coefficients(k))
    return minus, plus


@functools.lru_cache(maxsize=16)
def _pair_coefficients(k: int) -> tuple[np.ndarray, np.ndarray]:
    """(k, k^2) matrices D with s @ D = [2(s_j -+ s_i) for i != j, s_1 for i == j]."""
    i, j = np.divmod(np.arange(k * k), k)
    out = []
    for sign in (-1.0, 1.0):
        d = np.zeros((k, k * k))
        d[j, np.arange(k * k)] += 2.0
        d[i, np.arange(k * k)] += 2.0 * sign
        d[:, i == j] = 0.0
        d[0, i == j] = 1.0
        out.append(d)
    return out[0], out[1]


@functools.lru_cache(maxsize=16)
def _pair_signs(k: int) -> np.ndarray:
    """The (k, 2 k^2) matrix D with (s @ D) = [s_j - s_i for i, j] + [s_j + s_i for i, j]."""
    i, j = np.divmod(np.arange(k * k), k)
    d = np.zeros((k, 2, k * k))
    np.add.at(d[:, 0], (j, np.arange(k * k)), 1.0)
    np.add.at(d[:, 0], (i, np.arange(k * k)), -1.0)
    np.add.at(d[:, 1], (j, np.arange(k * k)), 1.0)
    np.add.at(d[:, 1], (i, np.arange(k * k)), 1.0)
    return d.reshape(k, 2 * k * k)


def batch_text(b: list) -> str:
    return f" in batch element {tuple(b)}" if b else ""


def batch_index(shape: tuple, flat: int) -> str:
    if not shape:
        return ""
    return f", batch element {tuple(int(v) for v in np.unravel_index(flat, shape))}"
