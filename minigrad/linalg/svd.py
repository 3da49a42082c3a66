"""The differentiable SVD: torch.linalg.svd's interface over the Jacobi kernels, with a
closed-form backward through U, S and Vh (see shared svd-math: Townsend 2016, split into
its two poles, plus the fold of the full U's / Vh's complement into the reduced factors).

The backward is written with minigrad ops on the saved outputs, so create_graph=True gives
higher derivatives. Where the gradient does not exist (the loss depends on an arbitrary
basis of a repeated singular value, of a null space or of the complement) it raises
LinAlgError. At such a point the 0/0 terms are taken as 0, which is exact for losses blind
to the split (U @ Vh, gapped projectors, functions of S); when S enters the loss beside U
or Vh (U diag(S) Vh) the limit is not 0 and cannot be told from the cotangents, so that
raises too.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from ..autograd.function import Context, Function
from ..autograd.grad_mode import is_grad_enabled
from ..functions import where
from ..tensor import Tensor
from ._svd_forward import DEFAULT_MAX_SWEEPS, svd_forward
from .errors import LinAlgError

# "Equal" singular values: within _S_TOL * eps * max(m, n) * s_1. A numerator that should
# vanish for a well-defined loss: within _NUM_TOL * eps * max(m, n) * (its scale).
_S_TOL = 10.0
_NUM_TOL = 1000.0


class SVDResult(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


def svd(A: Tensor, full_matrices: bool = True, *, tol: float | None = None,
        max_sweeps: int = DEFAULT_MAX_SWEEPS) -> SVDResult:
    """A = U diag(S) Vh, batched over leading dims, differentiable through all three.

    U is (*, m, m) and Vh (*, n, n) with ``full_matrices=True`` (torch's default), else
    (*, m, k) and (*, k, n), k = min(m, n); S (*, k) is descending. float16 is computed in
    float32. ``tol`` and ``max_sweeps`` tune the Jacobi iteration.

    >>> U, S, Vh = mg.linalg.svd(mg.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    >>> U.shape, S.shape, Vh.shape
    ((3, 3), (2,), (2, 2))
    """
    _check_tensor(A, "svd")
    if A.dtype == np.float16:
        U, S, Vh = _SVD.apply(A.float(), bool(full_matrices), tol, max_sweeps)
        return SVDResult(U.half(), S.half(), Vh.half())
    return SVDResult(*_SVD.apply(A, bool(full_matrices), tol, max_sweeps))


def svdvals(A: Tensor, *, tol: float | None = None,
            max_sweeps: int = DEFAULT_MAX_SWEEPS) -> Tensor:
    """The singular values of A (*, k), descending; d/dA of sum(g * S) is U diag(g) Vh.

    >>> mg.linalg.svdvals(mg.tensor([[3.0, 0.0], [0.0, -4.0]]))
    tensor([4., 3.])
    """
    _check_tensor(A, "svdvals")
    if A.requires_grad and is_grad_enabled():
        return svd(A, full_matrices=False, tol=tol, max_sweeps=max_sweeps).S
    _, s, _ = svd_forward(A.data, False, False, tol=tol, max_sweeps=max_sweeps)
    return Tensor._make(s)


def _check_tensor(A: object, name: str) -> None:
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.{name}(): argument 'A' must be a Tensor, not "
                        f"{type(A).__name__}; wrap it with mg.tensor(...)")
    if A.dtype.kind != "f":
        raise TypeError(f"linalg.{name}(): expected a float16, float32 or float64 tensor, "
                        f"got {A.dtype}; convert it with A.float() or A.double()")


class _SVD(Function):
    @staticmethod
    def forward(ctx: Context, A: Tensor, full_matrices: bool, tol: float | None,
                max_sweeps: int) -> tuple[Tensor, Tensor, Tensor]:
        u, s, vh = svd_forward(A.data, full_matrices, True, tol=tol, max_sweeps=max_sweeps)
        outs = Tensor._make(u), Tensor._make(s), Tensor._make(vh)
        ctx.save_for_backward(*outs)  # the outputs themselves: higher order flows through them
        ctx.set_materialize_grads(False)
        return outs

    @staticmethod
    def backward(ctx: Context, gU: Tensor | None, gS: Tensor | None,
                 gVh: Tensor | None) -> tuple:
        U, S, Vh = ctx.saved_tensors
        return svd_backward(U, S, Vh, gU, gS, gVh), None, None, None


def svd_backward(U: Tensor, S: Tensor, Vh: Tensor, gU: Tensor | None, gS: Tensor | None,
                 gVh: Tensor | None) -> Tensor:
    """gA = U [diag(gS) + X] V^T + (I - U U^T) gU S^-1 V^T + U S^-1 gV^T (I - V V^T),
    X_ij = (Ja+Ka)_ij / 2(s_j - s_i) + (Ja-Ka)_ij / 2(s_j + s_i), J = U^T gU, K = V^T gV."""
    m, n, k = U.shape[-2], Vh.shape[-1], S.shape[-1]
    if k == 0:
        return Tensor._make(np.zeros(U.shape[:-2] + (m, n), U.dtype))
    Uk = U if U.shape[-1] == k else U[..., :k]
    Vhk = Vh if Vh.shape[-2] == k else Vh[..., :k, :]
    if gU is None and gVh is None:
        return (Uk * gS.unsqueeze(-2)) @ Vhk
    eps = float(np.finfo(S.dtype).eps) * max(m, n)
    s = S.data
    s_tol = _S_TOL * eps * s[..., :1]  # (*, 1): relative to the largest singular value

    gUe = None if gU is None else _fold_complement(U, gU, k, eps, "U")
    gVe = None if gVh is None else _fold_complement(Vh.mT, gVh.mT, k, eps, "Vh")
    Vk = Vhk.mT
    J = None if gUe is None else Uk.mT @ gUe
    K = None if gVe is None else Vk.mT @ gVe
    Ja = None if J is None else J - J.mT
    Ka = None if K is None else K - K.mT
    plus = Ja if Ka is None else (Ka if Ja is None else Ja + Ka)
    minus = Ja if Ka is None else (-Ka if Ja is None else Ja - Ka)

    minus_s, plus_s = _pairwise(S)  # [.., i, j] = s_j - s_i and s_j + s_i
    # Where S enters the loss too (U S Vh, V S^2 Vh), a 0/0 at a tie has a limit that
    # first derivatives at the tie cannot tell: those points raise instead of guessing 0.
    s_used = None if gS is None else np.abs(gS.data) > 0
    JK = [t.data for t in (J, K) if t is not None]
    # S is sorted, so a tie shows as a small step between neighbours, and s_i + s_j = 0
    # needs two zeros: cheap tests on S that spare the full (k, k) checks when they fail.
    ties = bool(np.any(s[..., :-1] - s[..., 1:] <= s_tol))
    zeros = bool(np.any(np.count_nonzero(s <= s_tol, axis=-1) >= 2))
    X = (_pole(plus, minus_s, s_tol, eps, s, s_used, JK, ties)
         + _pole(minus, plus_s, s_tol, eps, s, s_used, JK, zeros)) * 0.5
    if gS is not None:
        X = X + gS.diag_embed()
    gA = Uk @ X @ Vhk

    inv_s_zero = s <= s_tol  # S^-1 terms: only a loss blind to these directions is defined
    if m > k and gUe is not None:
        R = gUe - Uk @ J  # (I - U U^T) gU
        gA = gA + _over_s(R, S, inv_s_zero, eps * _absmax(gUe), "U", s_used) @ Vhk
    if n > k and gVe is not None:
        Q = gVe - Vk @ K  # (I - V V^T) gV
        gA = gA + Uk @ _over_s(Q, S, inv_s_zero, eps * _absmax(gVe), "Vh", s_used).mT
    return gA


def _pairwise(S: Tensor) -> tuple[Tensor, Tensor]:
    """s_j - s_i and s_j + s_i at [.., i, j]. For small k as one matmul with a constant
    +-1 matrix: numpy's broadcasting loop over a 3-wide inner dim is ~8x slower."""
    k = S.shape[-1]
    if k > 16:
        s_i, s_j = S.unsqueeze(-1), S.unsqueeze(-2)
        return s_j - s_i, s_j + s_i
    pm = Tensor._make(_pair_signs(k).astype(S.dtype))  # (k, 2 k^2)
    both = (S @ pm).reshape(S.shape[:-1] + (2, k, k))
    return both[..., 0, :, :], both[..., 1, :, :]


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


def _fold_complement(W: Tensor, gW: Tensor, k: int, eps: float, name: str) -> Tensor:
    """gW_eff = gW[:, :k] - Wp (gWp^T W_k): the complement Wp's cotangent folded into W_k.

    Defined only when the loss is blind to the basis of the complement, i.e. Wp^T gWp is
    symmetric; otherwise raise."""
    if W.shape[-1] == k:
        return gW
    Wk, Wp, gWk, gWp = W[..., :k], W[..., k:], gW[..., :k], gW[..., k:]
    M = (Wp.mT @ gWp).data
    asym = np.abs(M - np.swapaxes(M, -1, -2)).max(axis=(-2, -1))
    bound = _NUM_TOL * eps * np.abs(gWp.data).max(axis=(-2, -1))
    bad = np.flatnonzero(asym > bound)
    if bad.size:
        where_ = _batch_index(asym.shape, bad[0])
        raise LinAlgError(
            f"svd backward: the loss depends on the arbitrary basis of the complement "
            f"{name}[..., {k}:] (the extra {'columns' if name == 'U' else 'rows'} of the full "
            f"factor{where_}), so it has no gradient. Use a basis-free quantity such as the "
            f"projector {name}_p {name}_p^T, or full_matrices=False.")
    return gWk - Wp @ (gWp.mT @ Wk)


def _pole(num: Tensor, den: Tensor, s_tol: np.ndarray, eps: float, s: np.ndarray,
          s_used: np.ndarray | None, JK: list[np.ndarray], possible: bool) -> Tensor:
    """num / den off the diagonal, and 0 where den vanishes (a tie, or two zeros) -- after
    checking that num vanishes there too (else the loss depends on an arbitrary basis)
    and that S is not used with U or Vh there (else the limit is not 0 in general)."""
    k = s.shape[-1]
    off = ~np.eye(k, dtype=bool)
    at_pole = (np.abs(den.data) <= s_tol[..., None]) & off if possible else None
    if at_pole is not None and at_pole.any():
        # Rounding-level size of num, per batch element, from the size of J and K.
        noise = _NUM_TOL * eps * np.maximum.reduce([np.abs(t).max(axis=(-2, -1)) for t in JK])
        touch = sum(np.abs(t) + np.abs(np.swapaxes(t, -1, -2)) for t in JK)
        zero = s <= s_tol
        basis = at_pole & (np.abs(num.data) > noise[..., None, None])
        if basis.any():
            raise _tie_error(basis, s, zero, "the loss depends on the arbitrary choice of "
                             "singular vectors for them, so it has no gradient. Losses "
                             "that are well defined there (U @ Vh, functions of S, "
                             "projectors onto a gapped subspace) work.")
        if s_used is not None:
            both_zero = zero[..., :, None] & zero[..., None, :]
            s_pair = s_used[..., :, None] | s_used[..., None, :]
            limit = at_pole & s_pair & ((touch > noise[..., None, None]) | both_zero)
            if limit.any():
                raise _tie_error(limit, s, zero, _S_WITH_UV)
    else:  # the usual case: only the diagonal is a pole, where num is exactly 0 (skew)
        return num / where(Tensor._make(~off), 1.0, den)
    mask = Tensor._make(at_pole | ~off)
    return where(mask, 0.0, num / where(mask, 1.0, den))


_S_WITH_UV = (
    "the loss uses S together with U or Vh there (like U diag(S) Vh): its gradient at an "
    "exact tie depends on how the loss changes as the tie splits, which first derivatives "
    "at the tie cannot tell. Perturb A off the tie; if S enters the loss only on its own "
    "(not multiplying U or Vh), take it from a separate mg.linalg.svdvals(A).")


def _tie_error(where_: np.ndarray, s: np.ndarray, zero: np.ndarray, why: str) -> LinAlgError:
    """Name the first offending pair (i, j) of singular values, and its batch element."""
    *b, i, j = (int(v) for v in np.argwhere(where_)[0])
    batch = f" in batch element {tuple(b)}" if b else ""
    v = float(s[tuple(b) + (i,)])
    what = (f"s[{i}] = s[{j}] = 0 (rank deficiency)" if zero[tuple(b) + (i,)]
            else f"s[{i}] = s[{j}] = {v:.6g} (repeated)")
    return LinAlgError(f"svd backward: singular values {what}{batch}: {why}")


def _over_s(R: Tensor, S: Tensor, zero: np.ndarray, tol: np.ndarray, name: str,
            s_used: np.ndarray | None) -> Tensor:
    """R S^-1 (columns divided by s), with 0 for columns at s = 0, which must be 0 there."""
    if zero.any():
        col = np.abs(R.data).max(axis=-2)  # (*, k)
        bad = zero & (col > _NUM_TOL * tol[..., None])
        ambiguous = zero & s_used if s_used is not None else None
        for mask, why in ((bad, f"the loss moves {name} out of the column space there, "
                           "which depends on an arbitrary null-space basis, so it has no "
                           "gradient."),
                          (ambiguous, _S_WITH_UV)):
            if mask is not None and mask.any():
                *b, i = (int(v) for v in np.argwhere(mask)[0])
                batch = f" in batch element {tuple(b)}" if b else ""
                raise LinAlgError(f"svd backward: singular value s[{i}] = 0{batch} "
                                  f"(rank deficiency): {why}")
        z = Tensor._make(zero[..., None, :])
        return where(z, 0.0, R / where(z, 1.0, S.unsqueeze(-2)))
    return R / S.unsqueeze(-2)


def _absmax(t: Tensor) -> np.ndarray:
    return np.abs(t.data).max(axis=(-2, -1))


def _batch_index(shape: tuple, flat: int) -> str:
    if not shape:
        return ""
    return f", batch element {tuple(int(v) for v in np.unravel_index(flat, shape))}"
