"""The pieces of the SVD backward that its formula and its tie limits share: the
numerators of the pole terms, masked quotients, the factors and column norms (where the
poles are: ``_svd_poles``)."""

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
