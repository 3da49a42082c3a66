"""The errors of the exact SVD backward: where a loss has no gradient at a tie, and why."""

from __future__ import annotations

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


def warn_ill_conditioned(near: list, nus: dict, s: np.ndarray, cols: np.ndarray,
                         scale: np.ndarray, eps: float) -> None:
    """One IllConditionedWarning for the near entries ``raise_if_undefined`` found, with
    the relative error to expect of the gradient returned. The pair's vectors are right
    only to a rotation of eps s_1 / x; the loss's derivative along it, nu, then moves by
    about that times its curvature there, ~ the pair's cotangent columns c_i + c_j
    (``cols``), so the term nu / x by eps s_1 (c_i + c_j) / x^2: relative to the gradient's
    size, max(|g| (``scale``), |nu / x|), eps s_1 / x where nu is of the cotangents' size,
    more where the loss is nearly flat along the rotation (nu small). ``nus`` holds each
    kind's numerator array."""
    if not near:
        return

    def estimate(entry: tuple) -> float:
        name, b, i, j = entry
        x = _pole_value(name, s, b, i, j)
        bt = tuple(b)
        c = float(cols[bt + (j,)]) if name in ("R", "Q") else float(
            cols[bt + (i,)] + cols[bt + (j,)])
        nu = nus[name][bt]
        quotient = float(np.linalg.norm(nu[..., j]) if name in ("R", "Q") else
                         abs(nu[i, j])) / x
        size = max(float(scale[bt] if np.ndim(scale) else scale), quotient, 1e-300)
        return eps * float(s[bt + (0,)]) * c / (x * x * size)

    worst = max(near, key=estimate)
    name, b, i, j = worst
    x, s1 = _pole_value(name, s, b, i, j), float(s[tuple(b) + (0,)])
    if name == "plus":
        what = f"s[{i}] and s[{j}] are {x / s1:.1g} s_1 apart"
    elif name == "minus":
        what = f"s[{i}] + s[{j}] = {x / s1:.1g} s_1 (both close to 0)"
    else:
        what = f"s[{j}] = {x / s1:.1g} s_1 (close to 0)"
    others = len(near) - 1
    more = f" (and {others} other pole{'s' if others > 1 else ''} as near)" if others else ""
    fix = "float64, or " if eps > np.finfo(np.float64).eps else ""
    warn_outside(
        f"svd backward: {what}{batch_text(b)}{more}, and the loss reads their singular "
        f"vectors, which are right only to about {eps * s1 / x:.0e} there: the gradient "
        f"returned may be off by up to about {estimate(worst):.0e} of its size. It exists (the "
        f"values are distinct) but is ill-conditioned; use {fix}a loss that reads no "
        "singular vectors of the pair (functions of S, U f(S) V^T, projectors onto a "
        "gapped subspace) if that is too much.")


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
