"""The errors of the exact SVD backward: where a loss has no gradient at a tie, and why."""

from __future__ import annotations

import math

import numpy as np

from ..tensor import Tensor
from ._svd_parts import C_NOISE, Numerators, batch_text
from ._svd_poles import C_TIE, Poles, maybe_poles, tie_level
from .errors import LinAlgError, warn_outside


def check_solo_ties(poles: Poles, num: Numerators, noise: np.ndarray) -> None:
    """A tie between a triplet the loss reads and one it drops (a truncation inside a
    tie): a function of A only if the loss is blind to which of them it kept, nu = 0."""
    for name, mask in (("plus", poles.solo_tie), ("minus", poles.solo_tie_m)):
        nu = getattr(num, name)
        if nu is None or not mask.any():
            continue
        bad = mask & (np.abs(nu._array) > noise[..., None, None])
        if bad.any():
            raise _basis_error(name, [int(v) for v in np.argwhere(bad)[0]], poles)


def check_kinks(poles: Poles, gS: Tensor | None, eps: float) -> None:
    """A tie between a triplet the loss keeps (through S) and one it drops entirely."""
    if gS is None:
        return
    g = np.abs(gS._array)
    present = g > C_NOISE * eps * g.max(axis=-1, keepdims=True)
    a = poles.absent
    straddle = poles.solo_tie & (a[..., None, :] ^ a[..., :, None])
    kink = straddle & (present[..., :, None] | present[..., None, :])
    if kink.any():
        *b, i, j = (int(v) for v in np.argwhere(kink)[0])
        i, j = min(i, j), max(i, j)
        v = float(poles.s[tuple(b) + (i,)])
        raise LinAlgError(
            f"svd backward: s[{i}] = s[{j}] = {v:.6g}{batch_text(b)}, and the loss uses one of "
            "them and drops the other (a truncation at a crossing of singular values): the "
            "loss has a kink here, its one-sided derivatives differ, so it has no gradient. "
            "Keep both or neither, or move A off the crossing.")


def check_s_only(s: np.ndarray, g: np.ndarray) -> None:
    """A function of S alone has a gradient at a tie only if it treats the tied values
    alike, and at s_i = 0 only if it is flat in s_i there (s_i behaves like |t|)."""
    eps = float(np.finfo(s.dtype).eps)
    tie = tie_level(s, eps)
    if not maybe_poles(s, tie, True):
        return
    noise = C_NOISE * eps * np.abs(g).max(axis=-1, keepdims=True)
    zero = (s <= tie) & (np.abs(g) > noise)
    if zero.any():
        *b, i = (int(v) for v in np.argwhere(zero)[0])
        raise LinAlgError(
            f"svd backward: s[{i}] = 0{batch_text(b)} and the loss changes with it there "
            "(d loss / d s = {:.3g}): a singular value is |t| near 0, so the loss has a kink "
            "and no gradient (the nuclear norm at a rank-deficient matrix, say). Move A off "
            "the rank deficiency.".format(float(g[tuple(b) + (i,)])))
    tied = (np.abs(s[..., None, :] - s[..., :, None]) <= tie[..., None]) & (
        np.abs(g[..., None, :] - g[..., :, None]) > noise[..., None])
    if tied.any():
        *b, i, j = (int(v) for v in np.argwhere(tied)[0])
        i, j = min(i, j), max(i, j)
        raise LinAlgError(
            f"svd backward: s[{i}] = s[{j}] = {float(s[tuple(b) + (i,)]):.6g}{batch_text(b)}, and "
            "the loss treats them differently (a weighted sum, the largest k of them): it has "
            "a kink where they cross, so no gradient here. Losses symmetric in equal singular "
            "values (sums of f(s_i), norms) work.")


def raise_if_undefined(name: str, need: np.ndarray, bad: np.ndarray, poles: Poles,
                       eps: float, near: list) -> None:
    """Raise where the loss reads an arbitrary basis at a tie (no gradient). Near one
    (an isolated pair, or one value close to 0, within sqrt(eps) s_1) the gradient exists:
    its entries are appended to ``near`` as (name, batch index, i, j) for
    ``warn_ill_conditioned``, and nu / x stands."""
    bad = np.broadcast_to(bad, np.broadcast_shapes(need.shape, bad.shape)) & need
    if not bad.any():
        return
    s, s1 = poles.s, poles.tie_level / (C_TIE * np.sqrt(poles.s.shape[-1]) * eps)
    col = name in ("R", "Q")
    tie = (poles.tie_z[..., None, :] if col else
           poles.tie_p if name == "plus" else poles.tie_m)
    at_tie = bad & np.broadcast_to(tie, bad.shape)
    if at_tie.any():
        idx = [int(v) for v in np.argwhere(at_tie)[0]]
        raise _basis_error(name, idx, poles)
    # Near a pole, nu != x mu means one of two things. If the pair is isolated (no other
    # singular value, nor 0, within 4k times its gap, so the expansion of mu is sound),
    # the loss depends on their basis: nu / x is its gradient (the pair is distinct, so U
    # and V are analytic in A), but as ill-conditioned as the singular vectors: warned
    # below sqrt(eps) s_1. In a cluster mu's expansion fails instead; nu / x stays, to
    # eps |g| / x.
    for where_ in np.argwhere(bad):
        *b, i, j = (int(v) for v in where_)
        if not col and i > j:
            continue  # a pair once, not as (i, j) and (j, i)
        x = _pole_value(name, s, b, i, j)
        if x <= np.sqrt(eps) * float(s1[tuple(b) + (0,)]) and \
                _isolated(name, s[tuple(b)], i, j, x):
            near.append((name, b, i, j))


def ill_conditioning(eps: float, k: int, rel_gap: float, c: float, plain: float,
                     quotient: float) -> float:
    """How far the plain quotient at a near pair (or a value near 0) may put a gradient off,
    relative to its size, rounded up to a power of ten (the warning's figure). All in units
    of the gradient times the largest value s_1, so that scaling A changes nothing. The
    pair's vectors are right to a rotation of ~sqrt(k) eps / rel_gap (rel_gap = x / s_1);
    the loss's derivative along it moves by that times its curvature there, ~c (the pair's
    cotangent columns), so the term by e = 2 sqrt(k) eps c / rel_gap^2 (the 2: one of the
    reviews' ~1,400 cases against 60 digits came within 1.01x of the figure without it).
    The gradient is at least the plain terms' size (``plain``: the largest cotangent
    column, s_1 |gS|) and the part of the quotient (``quotient``: |nu| / rel_gap) that is
    not that error: where the loss is nearly flat along the rotation the quotient is mostly
    error, and the figure says so (> 1)."""
    e = 2.0 * math.sqrt(k) * eps * c / (rel_gap * rel_gap)
    size = max(plain, quotient - e, 1e-300)
    return 10.0 ** math.ceil(math.log10(max(e / size, 1e-300)))


def warn_ill_conditioned(near: list, nus: dict, s: np.ndarray, cols: np.ndarray,
                         plain: np.ndarray, eps: float) -> None:
    """One IllConditionedWarning for the near entries ``raise_if_undefined`` found, with
    ``ill_conditioning``'s figure for the worst of them. ``nus``: each kind's numerator
    array; ``cols``: the cotangent columns' norms (|gU_j| + |gV_j|); ``plain``: per batch
    element, the gradient's plain size times s_1."""
    k = s.shape[-1]
    plain = np.broadcast_to(plain, s.shape[:-1])

    def figure(entry: tuple) -> tuple[float, float]:
        """(ill_conditioning's figure, x / s_1) of one near entry."""
        name, b, i, j = entry
        bt = tuple(b)
        rel = _pole_value(name, s, b, i, j) / float(s[bt + (0,)])
        col = name in ("R", "Q")
        c = float(cols[bt + (j,)] if col else cols[bt + (i,)] + cols[bt + (j,)])
        nu = nus[name][bt]
        q = float(np.linalg.norm(nu[..., j]) if col else abs(nu[i, j])) / rel
        return ill_conditioning(eps, k, rel, c, float(plain[bt]), q), rel

    (fig, rel), (name, b, i, j) = max(((figure(e), e) for e in near), key=lambda t: t[0][0])
    one = name in ("R", "Q")
    if name == "plus":
        what = f"s[{i}] and s[{j}] are {rel:.0e} s_1 apart"
    elif name == "minus":
        what = f"s[{i}] + s[{j}] = {rel:.0e} s_1 (both close to 0)"
    else:
        what = f"s[{j}] = {rel:.0e} s_1 (close to 0)"
    warn_near("svd backward", what + batch_text(b), len(near) - 1, one, "singular vectors",
              math.sqrt(k) * eps / rel, fig, eps,
              "functions of S, U f(S) V^T, projectors onto a gapped subspace")


def warn_near(op: str, what: str, others: int, one: bool, vectors: str, rotation: float,
              figure: float, eps: float, instead: str) -> None:
    """The IllConditionedWarning's text, for the SVD's and eigh's backward: ``what`` names
    the worst near pole (``one``: a single value near 0), ``others`` how many more there
    are, ``rotation`` how far the vectors may be turned, ``figure`` ill_conditioning's."""
    more = f" (and {others} other pole{'s' if others > 1 else ''} as near)" if others else ""
    fix = "float64, or " if eps > np.finfo(np.float64).eps else ""
    warn_outside(
        f"{op}: {what}{more}, and the loss reads {'its' if one else 'their'} {vectors}, "
        f"which are right only to about {rotation:.0e} there: the gradient returned may be "
        f"off by up to about {figure:.0e} of its size. It exists "
        f"({'the value is not 0' if one else 'the values are distinct'}) but is "
        f"ill-conditioned; use {fix}a loss that reads no {vectors} of "
        f"{'that value' if one else 'the pair'} ({instead}) if that is too much.")


def _isolated(name: str, s: np.ndarray, i: int, j: int, x: float) -> bool:
    """No other singular value (nor 0) within 4k x of the pole's values."""
    k = s.shape[-1]
    at = [j] if name in ("R", "Q") else [i, j]
    near = 4 * k * x
    others = np.delete(s, at)
    if name == "plus":
        return bool(min(s[i], s[j]) > near and not np.any(
            np.abs(others[:, None] - s[at][None, :]) <= near))
    return bool(not np.any(others <= near))


def _pole_value(name: str, s: np.ndarray, b: list, i: int, j: int) -> float:
    if name in ("R", "Q"):
        return float(s[tuple(b) + (j,)])
    si, sj = float(s[tuple(b) + (i,)]), float(s[tuple(b) + (j,)])
    return abs(sj - si) if name == "plus" else si + sj


def _basis_error(name: str, idx: list, poles: Poles) -> LinAlgError:
    *b, i, j = idx
    s = poles.s
    if name in ("R", "Q"):
        what = "U out of its column space" if name == "R" else "Vh out of its row space"
        return LinAlgError(
            f"svd backward: singular value s[{j}] = 0{batch_text(b)} (rank deficiency): the loss "
            f"moves {what} there, which depends on an arbitrary null-space basis, so it has "
            "no gradient.")
    i, j = min(i, j), max(i, j)
    v = float(s[tuple(b) + (i,)])
    zero = v <= float(poles.tie_level[tuple(b) + (0,)]) or name == "minus"
    what = (f"s[{i}] = s[{j}] = 0 (rank deficiency)" if zero
            else f"s[{i}] = s[{j}] = {v:.6g} (repeated)")
    dropped = poles.absent[tuple(b) + (i,)] or poles.absent[tuple(b) + (j,)]
    extra = (" (the loss keeps one of the two and drops the other: a truncation inside a "
             "repeated value)" if dropped else "")
    return LinAlgError(
        f"svd backward: singular values {what}{batch_text(b)}: the loss depends on the arbitrary "
        f"choice of singular vectors for them{extra}, so it has no gradient. Losses that are "
        "functions of A (U @ Vh, U f(S) V^T, functions of S, projectors onto a gapped "
        "subspace) have one and work.")
