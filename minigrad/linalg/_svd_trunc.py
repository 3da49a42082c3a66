"""The truncated SVD A ~ U_k diag(S_k) V_k^T (the k largest triplets) and its exact backward,
which never sees the discarded spectrum (shared svd-math, "Truncated SVD").

The kept vectors' derivative has a part in the kept space, the usual pole terms among the k
(``svd_backward(..., kept_only=True)``, ties inside the kept block included), and a part in
the complement. With P = I - U_k U_k^T, Q = I - V_k V_k^T and B = P A Q the complement parts
X = P dU_k, Y = Q dV_k solve, column j by column j,

    X S_k - B Y = P dA V_k,     Y S_k - B^T X = Q dA^T U_k.

That operator is its own adjoint, so the pullback solves the same system with P gU_k, Q gV_k
on the right for (L, N) and gives gA = L V_k^T + U_k N^T. Eliminating L:

    (s_j^2 I - B^T B) n_j = s_j Q gv_j + B^T P gu_j,     l_j = (P gu_j + B n_j) / s_j,

on the smaller side of A (the other one by transposing). s_j^2 I - B^T B is positive definite
exactly when s_k exceeds every discarded value: its eigenvalues are s_j^2 - s_l^2 over the
discarded s_l (and s_j^2 on the kept space), so ties and noise among the discarded values
never enter, and the conditioning is that of the gap at the cut. ``_ShiftedSolve`` solves it
(n = min(m, n)) either densely, one eigendecomposition of B^T B serving every shift
(O(m n^2 + n^3) time, O(n^2) memory), or by conjugate gradients on the k systems at once
(O(m n k) a step, about sqrt(kappa) ln(1/eps) / 2 steps, kappa = s_k^2 / (s_k^2 - s_{k+1}^2);
O(n k) memory beyond A), whichever that count says is cheaper: large A with a clear gap
at the cut (svd_lowrank's case) never forms an n x n matrix. Its own backward is the same
solve of the cotangent (implicit differentiation, with minigrad ops), so the truncated
backward differentiates again. The forward's discarded triplets are not used: the backward
would then depend on them, and a second derivative with them.

Complex A: the same with conjugate transposes (B^H B Hermitian, S real, gA = L V^H + U N^H,
g shift_j = -Re w_j^H n_j), and the kept block's terms are the complex SVD's
(``_complex_svd``, with its phase test).

At a truncation inside a tie (s_k equal to the largest discarded value, to the accuracy of
the computed S) the kept vectors are not a function of A and the top-k singular values have
a kink: the backward raises (under every tie policy: the policies govern ties inside the
kept block), unless the loss gives the tied kept triplets exactly zero
cotangent (it reads only other triplets).
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import Context, Function, make_tensor
from ..functions import where
from ..tensor import Tensor
from . import ties as _ties
from ._checks import adjoint
from ._complex_forward import any_svd_forward
from ._complex_svd import complex_svd_backward, plan_complex_backward
from ._svd_backward import plan_backward, svd_backward
from ._svd_parts import batch_text
from ._svd_poles import tie_level
from ._tie_sources import Downstream
from .errors import LinAlgError


def top_forward(a: np.ndarray, k: int, tol: float | None,
                max_sweeps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The k largest triplets of each a (*, m, n) by the dense Jacobi SVD, and the (k+1)-th
    singular value (*,) that decides whether the cut is at a tie."""
    u, s, vh = any_svd_forward(a, False, True, tol=tol, max_sweeps=max_sweeps)
    return u[..., :k], s[..., :k], vh[..., :k, :], s[..., k]


def svd_top(A: Tensor, k: int, forward, policy: _ties.TiePolicy) -> tuple[Tensor, Tensor,
                                                                          Tensor]:
    """(U_k, S_k, Vh_k) from ``forward(a) -> (u_k, s_k, vh_k, s_next)`` for k < min(m, n),
    with the truncated SVD's exact backward."""
    return _SVDTop.apply(A, forward, policy)


class _SVDTop(Function):
    @staticmethod
    def forward(ctx: Context, A: Tensor, forward, policy: _ties.TiePolicy) -> tuple:
        u, s, vh, s_next = forward(A._array)
        outs = make_tensor(u), make_tensor(s), make_tensor(vh)
        ctx.save_for_backward(*outs)  # the outputs: the tie limits read them (Downstream)
        ctx.A = A  # an input: the complement solve reads it, and differentiates through it
        ctx.s_next = s_next
        ctx.set_materialize_grads(False)
        if u.dtype.kind == "c":
            plan_complex_backward(ctx, s, policy)
        else:
            plan_backward(ctx, s, policy, False)  # kept_only: no S^-1 terms
        return outs

    @staticmethod
    def backward(ctx: Context, gU: Tensor | None, gS: Tensor | None,
                 gVh: Tensor | None) -> tuple:
        U, S, Vh = ctx.saved_tensors
        A = ctx.A
        if S.shape[-1] == 0:
            return make_tensor(np.zeros(A.shape, A.dtype)), None, None
        tied = _tied_at_cut(S._array, ctx.s_next)
        _check_cut(tied, gU, gS, gVh, S._array, ctx.s_next)
        if U._array.dtype.kind == "c":
            gA = complex_svd_backward(U, S, Vh, gU, gS, gVh, ctx.policy, ctx, kept_only=True)
        else:
            down = Downstream(ctx, (gU, gS, gVh)) if ctx.wants_downstream else None
            gA = svd_backward(U, S, Vh, gU, gS, gVh, ctx.policy, down, ctx.no_poles,
                              kept_only=True)
        if gU is not None or gVh is not None:
            gA = gA + complement_pullback(A, U, S, adjoint(Vh), gU,
                                          None if gVh is None else adjoint(gVh), ctx.s_next,
                                          tied)
        return gA, None, None


def _tied_at_cut(s: np.ndarray, s_next: np.ndarray) -> np.ndarray:
    """(*, k): kept values equal to the largest discarded one, to the accuracy of S."""
    level = tie_level(np.concatenate([s, s_next[..., None]], axis=-1), np.finfo(s.dtype).eps)
    return s - s_next[..., None] <= level


def _check_cut(tied: np.ndarray, gU: Tensor | None, gS: Tensor | None, gVh: Tensor | None,
               s: np.ndarray, s_next: np.ndarray) -> None:
    if not tied.any():
        return
    live = np.zeros(tied.shape, bool)
    for g, axis in ((gS, None), (gU, -2), (gVh, -1)):
        if g is not None:
            live |= (g._array != 0) if axis is None else np.any(g._array != 0, axis=axis)
    bad = np.argwhere(tied & live)
    if bad.size:
        b, j = list(bad[0][:-1]), int(bad[0][-1])
        k = s.shape[-1]
        raise LinAlgError(
            f"svd backward: the truncation to the top {k} singular values cuts through a "
            f"repeated value{batch_text(b)}: s[{j}] = {s[tuple(b) + (j,)]:.6g} equals the "
            f"largest discarded one, {s_next[tuple(b)]:.6g}. The kept vectors are an "
            f"arbitrary basis of the tied block there (not a function of A), and the kept "
            f"singular values have a kink; keep the whole tied block or cut at a gap.")


def complement_pullback(A: Tensor, U: Tensor, S: Tensor, V: Tensor, gU: Tensor | None,
                        gV: Tensor | None, s_next: np.ndarray,
                        skip: np.ndarray | None = None) -> Tensor:
    """gA = L V^H + U N^H from the self-adjoint system on the complement (module docstring),
    using only A and the kept triplets; ``s_next`` (*,), the largest discarded value, only
    chooses how to solve. ``skip`` (*, k): columns whose cotangents are all zero and whose
    system may be singular (kept values tied with a discarded one)."""
    if skip is not None and skip.all():
        return make_tensor(np.zeros(A.shape, A.dtype))
    if A.shape[-2] < A.shape[-1]:  # solve on the smaller side
        return adjoint(complement_pullback(adjoint(A), V, S, U, gV, gU, s_next, skip))
    B = _deflate(A, U, V)  # P A Q
    PgU = None if gU is None else gU - U @ (adjoint(U) @ gU)
    rhs = None
    if gV is not None:
        rhs = (gV - V @ (adjoint(V) @ gV)) * S.unsqueeze(-2).to(A.dtype)
    if PgU is not None:
        rhs = adjoint(B) @ PgU if rhs is None else rhs + adjoint(B) @ PgU
    shift, Sd = S * S, S
    if skip is not None and skip.any():  # zero right-hand sides: any definite shift will do
        mask = make_tensor(skip)
        shift = where(mask, (S[..., :1] * S[..., :1]) * 2.0, shift)
        Sd = where(mask, S[..., :1], S)
    N = _ShiftedSolve.apply(A, U, V, shift, rhs, s_next * s_next)
    L = B @ N if PgU is None else PgU + B @ N
    return (L / Sd.unsqueeze(-2).to(A.dtype)) @ adjoint(V) + U @ adjoint(N)


def np_adjoint(x: np.ndarray) -> np.ndarray:
    """x^H of the last two dims of an ndarray (x^T when real, without a copy)."""
    x = np.swapaxes(x, -1, -2)
    return x.conj() if x.dtype.kind == "c" else x


def _deflate(A, U, V, tr=adjoint):
    """B = P A Q = (I - U U^H) A (I - V V^H), for Tensors or (with tr=np_adjoint) ndarrays."""
    AQ = A - (A @ V) @ tr(V)
    return AQ - U @ (tr(U) @ AQ)


class _ShiftedSolve(Function):
    """N with (shift_j I - B^H B) n_j = r_j for each column j, B = P A Q (A tall).

    Differentiable to every order by implicit differentiation: with W the same solve of the
    cotangent, g shift_j = -Re w_j^H n_j and (A, U, V) get the gradient of <B W, B N> with W, N
    held, which is written with minigrad ops (and this solve)."""

    @staticmethod
    def forward(ctx: Context, A: Tensor, U: Tensor, V: Tensor, shift: Tensor, R: Tensor,
                floor: np.ndarray) -> Tensor:
        out = make_tensor(shifted_solve(A._array, U._array, V._array, shift._array,
                                         R._array, floor))
        ctx.save_for_backward(A, U, V, shift, out)  # the output itself: higher order
        ctx.floor = floor
        return out

    @staticmethod
    def backward(ctx: Context, gN: Tensor) -> tuple:
        A, U, V, shift, N = ctx.saved_tensors
        W = _ShiftedSolve.apply(A, U, V, shift, gN, ctx.floor)
        B = _deflate(A, U, V)
        H = adjoint
        Z = (B @ N) @ H(W) + (B @ W) @ H(N)  # d<BW, BN> = <dB, Z>
        ZQ = Z - (Z @ V) @ H(V)
        PZ = Z - U @ (H(U) @ Z)
        gA = PZ - (PZ @ V) @ H(V)  # B = P A Q: <dB, Z> = <dA, P Z Q> + <dP, Z Q A^H> + ...
        ZtU = H(Z) @ U
        gU = -(ZQ @ (H(A) @ U) + A @ (ZtU - V @ (H(V) @ ZtU)))  # dP = -(dU U^H + U dU^H)
        gV = -(H(A) @ (PZ @ V) + H(Z) @ (A @ V - U @ (H(U) @ (A @ V))))
        WN = (W.conj() * N).real if W._array.dtype.kind == "c" else W * N
        return gA, gU, gV, -WN.sum(-2), W, None


def shifted_solve(a: np.ndarray, u: np.ndarray, v: np.ndarray, shift: np.ndarray,
                  r: np.ndarray, floor: np.ndarray) -> np.ndarray:
    """n_j = (shift_j I - B^T B)^-1 r_j, B = P a Q (a tall), ``floor`` (*,) the largest
    eigenvalue of B^T B (s_{k+1}^2), below every shift.

    Dense: B^T B = W diag(l) W^T once, then n_j = W (W^T r_j / (shift_j - l)) for every j,
    O(m n^2 + n^3) for n = min(m, n). Iterative: conjugate gradients on the k positive
    definite systems at once, by products with a, u and v, O(m n k) a step; the steps grow
    as sqrt(kappa), kappa = s_k^2 / (s_k^2 - s_{k+1}^2) (the gap at the cut). Whichever
    costs less by that count runs; gradients are the dense form's if CG stalls."""
    m, n = a.shape[-2:]
    k = r.shape[-1]
    eps = float(np.finfo(a.dtype).eps)
    low = np.min(shift, axis=-1)
    kappa = float(np.max(low / np.maximum(low - floor, np.finfo(a.dtype).tiny)))
    steps = 0.5 * np.sqrt(kappa) * np.log(1 / eps) + 10
    if steps * 4 * m * n * k < 2 * m * n * n + 9 * n ** 3:
        out = _cg(a, u, v, shift, r, int(3 * steps))
        if out is not None:
            return out
    b = _deflate(a, u, v, np_adjoint)
    lam, w = np.linalg.eigh(np_adjoint(b) @ b)
    return w @ ((np_adjoint(w) @ r) / (shift[..., None, :] - lam[..., :, None]))


def _cg(a: np.ndarray, u: np.ndarray, v: np.ndarray, shift: np.ndarray, r: np.ndarray,
        max_steps: int) -> np.ndarray | None:
    def op(x: np.ndarray) -> np.ndarray:
        y = a @ (x - v @ (np_adjoint(v) @ x))
        z = np_adjoint(a) @ (y - u @ (np_adjoint(u) @ y))
        return x * shift[..., None, :] - (z - v @ (np_adjoint(v) @ z))

    def dot(x: np.ndarray, y: np.ndarray) -> np.ndarray:  # Re x^H y, column by column
        return np.sum((x.conj() * y).real if x.dtype.kind == "c" else x * y, axis=-2)

    x = np.zeros_like(r)
    res = r.copy()
    p = res.copy()
    rs = dot(res, res)
    stop = (64.0 * np.sqrt(a.shape[-1]) * np.finfo(a.dtype).eps) ** 2 * rs
    for _ in range(max_steps):
        live = rs > stop
        if not live.any():
            return x
        mp = op(p)
        curv = dot(p, mp)
        alpha = np.where(live, rs / np.where(live, curv, 1.0), 0.0)
        x += alpha[..., None, :] * p
        res -= alpha[..., None, :] * mp
        rs_new = dot(res, res)
        p = res + np.where(live, rs_new / np.where(live, rs, 1.0), 0.0)[..., None, :] * p
        rs = rs_new
    return None
