"""The errors of the exact SVD backward: where a loss has no gradient at a tie, and why."""

from __future__ import annotations

import warnings

import numpy as np

from ..tensor import Tensor
from ._svd_parts import C_NOISE, Numerators, batch_text
from ._svd_poles import C_TIE, Poles, maybe_poles, tie_level
from .errors import IllConditionedWarning, LinAlgError


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
                        eps: float) -> None:
    """Raise where the loss reads an arbitrary basis at a tie (no gradient); warn
    (IllConditionedWarning) where it reads the basis of a distinct pair closer than
    sqrt(eps) s_1, whose gradient exists and is returned as accurate as the vectors are."""
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
    # and V are analytic in A), but as ill-conditioned as the singular vectors (relative
    # error ~ eps s_1 / x): returned, with a warning below sqrt(eps) s_1. In a cluster mu's
    # expansion fails instead; nu / x stays, to eps |g| / x.
    near = []
    for where_ in np.argwhere(bad):
        *b, i, j = (int(v) for v in where_)
        x = _pole_value(name, s, b, i, j)
        s1_b = float(s1[tuple(b) + (0,)])
        if x <= np.sqrt(eps) * s1_b and _isolated(name, s[tuple(b)], i, j, x):
            near.append((b, i, j, x, s1_b))
    if near:
        # the worst pair (the smallest x / s_1) names the error to expect
        b, i, j, x, s1_b = min(near, key=lambda w: w[3] / w[4])
        warnings.warn(_near_warning(name, s, b, i, j, x, s1_b, eps, len(near)),
                      IllConditionedWarning, stacklevel=2)


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


def _near_warning(name: str, s: np.ndarray, b: list, i: int, j: int, x: float, s1: float,
                  eps: float, count: int) -> str:
    if name in ("R", "Q"):
        what = f"s[{j}] = {x:.3g} is {x / s1:.2g} s_1, close to 0"
    else:
        i, j = min(i, j), max(i, j)
        what = (f"s[{i}] = {float(s[tuple(b) + (i,)]):.9g} and s[{j}] = "
                f"{float(s[tuple(b) + (j,)]):.9g} are {x / s1:.2g} s_1 apart")
    more = f" (and {count - 1} other pole{'s' if count > 2 else ''} as near)" if count > 1 else ""
    fix = "float64, or " if eps > np.finfo(np.float64).eps else ""
    return (f"svd backward: {what}{batch_text(b)}{more}, and the loss depends on their "
            f"singular vectors: its gradient there is as ill-conditioned as they are, and the "
            f"one returned has a relative error of about {eps * s1 / max(x, 1e-300):.1g} in "
            f"this precision. Use {fix}a loss that reads no singular vectors of the pair "
            "(functions of S, U f(S) V^T, projectors onto a gapped subspace) if that is too "
            "much.")
