"""Where an SVD backward's poles are: the tie and near-pole levels of the computed S, the
masks of the entries at or near a pole (``Poles``; the "zero" policy's few, ``tie_zeros``),
and the triplets a loss never reads."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..tensor import Tensor
from ._svd_parts import Numerators

_or = np.logical_or.reduce  # any(), without numpy's Python layer

C_TIE = 16.0  # a tie: |x| <= C_TIE sqrt(k) eps s_1, the accuracy of the computed S


def tie_level(s: np.ndarray, eps: float) -> np.ndarray:
    """(*, 1): singular values this close are equal to the accuracy they are computed to."""
    return C_TIE * np.sqrt(s.shape[-1]) * eps * s[..., :1]


def near_level(s: np.ndarray, eps: float) -> np.ndarray:
    """(*, 1): this close to a pole, nu / x loses more than eps^(2/3) to rounding in nu."""
    return eps ** (1 / 3) * s[..., :1]


def maybe_poles(s: np.ndarray, near: np.ndarray, has_inv: bool) -> bool:
    """Cheap tests on the sorted S that spare the (k, k) masks when nothing is near a pole.

    Column by column: numpy runs a batch of 3-wide rows ~5x slower than a few long columns."""
    k = s.shape[-1]
    s2, level = s.reshape(-1, k), near.reshape(-1)
    if s2.shape[0] == 1:  # one matrix: Python floats beat a numpy call per column
        v, lv = s2[0].tolist(), float(level[0])
        return any(v[i] - v[i + 1] <= lv for i in range(k - 1)) or (
            v[-1] <= lv if has_inv else k > 1 and v[-2] <= lv)
    # (a loop and the ufunc's own reduce: a generator, and the Python layer of np.any and
    # of ndarray.any, were half of a batch of 3x3s' test)
    for i in range(k - 1):
        if _or(s2[:, i] - s2[:, i + 1] <= level, None):  # a tie
            return True
    if has_inv:  # s_k near 0
        return bool(_or(s2[:, -1] <= level, None))
    return k > 1 and bool(_or(s2[:, -2] <= level, None))  # two near 0: s_i + s_j


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
        self.dp = dp = np.abs(s[..., None, :] - s[..., :, None])
        self.dm = dm = s[..., None, :] + s[..., :, None]
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
        if not (cols <= eps * big[..., None]).any():  # each member must be (|x| <= near)
            return
        lim = eps * big[..., None] / near  # (..., 1)
        pair = cols[..., :, None] + cols[..., None, :]
        self.weak_p = self.weak_p & ~(pair <= lim[..., None] * self.dp)
        self.weak_m = self.weak_m & ~(pair <= lim[..., None] * self.dm)
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
    cols = zero_cols(s, tie, has_inv, absent)
    dead = np.eye(s.shape[-1], dtype=bool)
    if not absent.any():  # (the common case: every pair live, none solo)
        return Zeroed(dead | tp, dead | tm, cols)
    a_i, a_j = absent[..., :, None], absent[..., None, :]
    dead = dead | (a_i & a_j)
    solo = ~dead & (a_i ^ a_j)
    return Zeroed(dead | tp | (solo & tm), dead | tm | (solo & tp), cols)


def zero_cols(s: np.ndarray, tie: np.ndarray, has_inv: bool, absent: np.ndarray,
              ) -> np.ndarray:
    """The columns of R S^-1 and Q S^-1 the "zero" policy zeroes: s_i within tie of 0, of
    absent triplets only where there are no S^-1 terms (not has_inv)."""
    small = s <= tie
    return small if has_inv else absent & small


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
