"""The series that gives a pole term's limit mu from the cotangents' derivatives along
S + t d (``series_limits``), where a source of those derivatives gives them (``Masks``),
and where the series is worse than the plain quotient (``unsound``). The derivation, and
when each source and order is used, are ``_tie_limits``'. ``NONE``: no limit anywhere."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..autograd.function import make_tensor
from ..functions import where
from ..tensor import Tensor
from ._svd_parts import Factors, Numerators
from ._svd_poles import Poles
from ._tie_sources import Source


class Masks(NamedTuple):
    """Where a local source gives the limits: + pole pairs, - pole pairs, columns."""

    plus: np.ndarray
    minus: np.ndarray
    cols: np.ndarray


def unsound(poles: Poles, loc: Masks | None, tails_l: dict, tails_g: dict,
            minus_s: Tensor, plus_s: Tensor, S: Tensor,
            rounding: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The near poles (+, -, columns) where the series is worse than the plain quotient:
    its tail (``series_limits``' estimate) above the quotient's rounding, ``rounding`` / x
    (``exact_terms``: a numerator's typical rounding where the quotient is taken once,
    the bound ``noise`` where it is differentiated again). The series in t converges only
    within the distance to its nearest singularity, and a loss reading f(S) with f not
    smooth at 0 (sqrt, log: a bond's split, a log-determinant) has one where a singular
    value reaches 0, at t = -s_l / d_l: for a small s_l sooner than the pole closes, at
    t* = -x / c, for s_i + s_j and s_i always (82-150% off at s = 1.5e-7, 1e-7 of s_1 = 3,
    where nu / x is 1e-9 off). Where it converges it is truncated: (x k / s_1)^2 at the
    top of the near band (4e-4 and 2e-3 for U S^3 Vh and U log(S) Vh in float32, where
    nu / x is 7e-7: judged by ``noise``, C_NOISE sqrt(n) times the typical rounding, they
    were kept)."""
    def est(name: str, mask: np.ndarray | None) -> np.ndarray | None:
        g, loc_ = tails_g.get(name), tails_l.get(name)
        if mask is None or loc_ is None:
            return g
        return np.where(mask, loc_, 0.0 if g is None else g)

    lim = rounding[..., None, None]

    def over(name: str, mask: np.ndarray | None, x: np.ndarray, weak: np.ndarray) -> np.ndarray:
        e = est(name, mask)
        return np.zeros_like(weak) if e is None else weak & (e * np.abs(x) > lim)

    plus = over("plus", None if loc is None else loc.plus, minus_s._array, poles.weak_p)
    minus = over("minus", None if loc is None else loc.minus, plus_s._array, poles.weak_m)
    cols = np.zeros_like(poles.weak_z)
    for name in ("R", "Q"):
        e = est(name, None if loc is None else loc.cols)
        if e is not None:
            cols = cols | (e * S._array[..., None, :] > lim).any(axis=-2)
    return plus, minus, poles.weak_z & cols


NONE = Numerators(None, None, None, None, None, None)


def series_limits(f: Factors, S: Tensor, minus_s: Tensor, plus_s: Tensor, source: Source,
                  order: int, weak: bool, ties: Poles | None = None,
                  tails: dict | None = None) -> Numerators:
    """mu at every entry, right with its first ``order`` derivatives (see ``_tie_limits``'
    docstring): along S + t d, nu = x mu with d_t x = c, so

        mu = sum_n (-x / c)^n d_t^(n+1) nu / ((n+1)! c),   n = 0 .. order,

    the derivatives of the cotangents coming from ``source``; None where they cannot
    depend on S (then mu = 0). Where ``weak`` (near a pole off the ties) every term is
    taken through a chain too (``Source._derivatives``). ``ties``: the series stops at n = 0
    at its ties (x is rounding there; a value, not derivatives, is asked for): through a
    cluster of near poles the higher terms are large, and x times them is noise.
    ``tails``: filled with each field's estimate of what the series leaves out,
    |T_N|^2 / |T_N-1| for its last two terms (a geometric tail; inf where it grows)."""
    k = f.k
    # The series is the same for any scale of d; in units of s_1 its terms stay in range
    # (x / c ~ 1 at the + and - poles alike) at S ~ 1e+-100, where d = 1..k overflowed.
    unit = S._array[..., :1].astype(np.float64)
    unit = np.where(unit > 0, unit, 1.0)
    d_np = np.arange(1.0, k + 1.0) / k
    dts = source.derivatives(make_tensor((d_np * unit).astype(S.dtype)), order + 1, weak)
    if not dts:
        return NONE
    c_p = d_np[None, :] - d_np[:, None]  # [i, j] = d_j - d_i
    c_p = np.where(c_p == 0, 1.0, c_p)
    c_m = d_np[None, :] + d_np[:, None]
    c_z = d_np[None, :]
    Sr = S.unsqueeze(-2)
    parts = [f.numerators(*dt) for dt in dts]

    def mu(field: str, c: np.ndarray, x: Tensor, tie: np.ndarray | None) -> Tensor | None:
        if tie is not None and tie.any():
            x = where(make_tensor(np.broadcast_to(tie, x.shape)), 0.0, x)
        c = c * unit[..., None]  # (..., k, k)
        c_t = make_tensor(c.astype(S.dtype))
        out, power = None, None  # power = (-x / c)^n, by products: x ** n's own higher
        last: list[np.ndarray] = []  # the last two terms' sizes
        for n, part in enumerate(parts):  # derivatives at x = 0 would be 0 * inf
            power = None if n == 0 else (-x / c_t if power is None else power * (-x / c_t))
            dnu = getattr(part, field)
            if dnu is None:
                continue
            term = dnu / (c_t * float(math.factorial(n + 1)))
            if power is not None:
                term = term * power
            out = term if out is None else out + term
            last = [*last[-1:], np.abs(term._array)]
        if tails is not None and len(last) == 2:
            with np.errstate(divide="ignore", invalid="ignore"):
                tails[field] = np.where(last[1] > 0, last[1] * last[1] / last[0], 0.0)
        return out

    tp, tm, tz = (None, None, None) if ties is None else (
        ties.tie_p, ties.tie_m, ties.tie_z[..., None, :])
    return Numerators(None, None, mu("plus", c_p, minus_s, tp), mu("minus", c_m, plus_s, tm),
                      mu("R", c_z, Sr, tz), mu("Q", c_z, Sr, tz))
