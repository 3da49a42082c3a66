"""inv, solve, solve_triangular and cholesky (torch.linalg names): LAPACK through numpy
forward (inv and solve of 2x2 to 4x4: closed forms, linalg/_small.py, LAPACK where those
may lose accuracy), backwards written with these same functions, so that every order
works.

Singular (or, for cholesky, non-positive-definite) input raises torch's LinAlgError naming
the batch element and the pivot, never an inf or NaN result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, NoReturn

import numpy as np

from ..autograd.function import Context, Function, make_tensor
from ..autograd.grad_mode import is_grad_enabled
from ..autograd.quiet import unrecorded
from ..tensor import Tensor
from . import _small
from ._checks import adjoint, batch_prefix, check_matrix, check_tensor, half_as_float
from ._lapack_info import cholesky_info, lu_info
from .errors import LinAlgError


def _raise_singular(fn: str, info: np.ndarray) -> NoReturn:
    """torch's error for the first singular matrix info (getrf's) marks."""
    bad = np.flatnonzero(info)
    if not bad.size:  # numpy's LAPACK hit a zero pivot our replay did not: name no pivot
        raise LinAlgError(f"{fn}: The input matrix is singular.")
    b = int(bad[0])
    raise LinAlgError(f"{fn}: {batch_prefix(info.shape, b)}The diagonal element "
                      f"{int(info.flat[b])} is zero, the inversion could not be completed "
                      "because the input matrix is singular.")


class _Inv(Function):
    """A^-1; d(A^-1) = -A^-1 dA A^-1, so gA = -A^-H g A^-H (A^-T when real)."""

    @staticmethod
    def forward(ctx: Context, A: Tensor) -> Tensor:
        out = make_tensor(_inv(A._array))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> tuple:
        (Ai,) = ctx.saved_tensors
        AiH = adjoint(Ai)
        return -(AiH @ g @ AiH),


def _inv(a: np.ndarray) -> np.ndarray:
    small = _small.batched(_small.inv, a) if _small.fits(a) else None
    if small is not None:
        return small
    try:
        return np.linalg.inv(a)
    except np.linalg.LinAlgError:
        _raise_singular("linalg.inv", lu_info(a))


@half_as_float
def inv(A: Tensor) -> Tensor:
    """The inverse of each square matrix of A (*, n, n); singular input raises LinAlgError.

    >>> mg.linalg.inv(mg.tensor([[2.0, 0.0], [0.0, 4.0]]))
    tensor([[0.5 , 0.  ],
            [0.  , 0.25]])
    """
    check_matrix(A, "linalg.inv", square=True, complex_ok=True)
    if not (A.requires_grad and is_grad_enabled()):  # nothing to record: no node
        return make_tensor(unrecorded(_inv, A._array))
    return _Inv.apply(A)


class _Solve(Function):
    """X = A^-1 B for B (*, n, k); gB = A^-H gX, gA = -gB X^H."""

    @staticmethod
    def forward(ctx: Context, A: Tensor, B: Tensor) -> Tensor:
        out = make_tensor(_solve(A._array, B._array))
        ctx.save_for_backward(A, out)
        return out

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> tuple:
        A, X = ctx.saved_tensors
        gB = _Solve.apply(adjoint(A), g)
        return (-(gB @ adjoint(X)) if ctx.needs_input_grad[0] else None), gB


def _solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype != b.dtype:  # (result_type alone costs a small solve's 0.6 us)
        dt = np.result_type(a.dtype, b.dtype)
        a, b = a.astype(dt, copy=False), b.astype(dt, copy=False)
    small = _small.batched(_small.solve, a, b) if _small.fits(a) and b.size else None
    if small is not None:
        return small
    try:
        return np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        _solver_failed("torch.linalg.solve", lu_info(np.broadcast_to(a, batch + a.shape[-2:])))


def _solver_failed(fn: str, info: np.ndarray) -> NoReturn:
    """torch's error for a singular matrix in solve, naming the first one info marks."""
    bad = np.flatnonzero(info)
    raise LinAlgError(f"{fn}: {batch_prefix(info.shape, int(bad[0]) if bad.size else 0)}The "
                      "solver failed because the input matrix is singular.") from None


@half_as_float
def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """X with A X = B (or X A = B when not left), A (*, n, n); B is a batch of vectors (*, n)
    when it is 1-D or has A's shape without the last dim, else of matrices (*, n, k); batch
    dims broadcast, as in torch.

    >>> mg.linalg.solve(mg.tensor([[2.0, 0.0], [0.0, 4.0]]), mg.tensor([2.0, 2.0]))
    tensor([1. , 0.5])
    """
    check_matrix(A, "linalg.solve", square=True, complex_ok=True)
    check_tensor(B, "linalg.solve", "B")
    if B.ndim == 0:
        raise RuntimeError("linalg.solve: The input tensor B must have at least 1 dimension.")
    a, b = A._array, B._array
    if (a.ndim == 2 and b.ndim <= 2 and b.shape[0] == a.shape[0] and left
            and not ((A.requires_grad or B.requires_grad) and is_grad_enabled())):
        # One matrix, nothing to record: in numpy (no node, no unsqueeze and squeeze ops;
        # one matrix's batch dims cannot fail to broadcast, so the errors are _solve's).
        # B is a vector exactly when it is 1-D here (A.ndim - 1 == 1).
        if b.ndim == 1:
            return make_tensor(unrecorded(_solve, a, b[:, None])[:, 0])
        return make_tensor(unrecorded(_solve, a, b))
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])
    n = A.shape[-1]
    Bm = B.unsqueeze(-1) if vector else B
    if not left:
        Bm = Bm.mT
    if Bm.shape[-2] != n:
        r, c = (Bm.shape[-1], Bm.shape[-2]) if not left else Bm.shape[-2:]
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{eq} ({n}x{n} and {r}x{c})")
    X = _Solve.apply(A if left else A.mT, Bm)
    if not left:
        X = X.mT
    return X.squeeze(-1) if vector else X


class _SolveTriangular(Function):
    """X = T^-1 B with T the upper (or lower) triangle of A (unit diagonal if unitriangular);
    gB = T^-H gX, gA = the same triangle of -gB X^H (the other entries are never read)."""

    @staticmethod
    def forward(ctx: Context, A: Tensor, B: Tensor, upper: bool, unit: bool) -> Tensor:
        T = _triangle(A._array, upper, unit)
        dt = np.result_type(T.dtype, B._array.dtype)
        if not unit:
            n = T.shape[-1]  # (the batch is flattened by its size: n may be 0)
            zero = (np.diagonal(T, axis1=-2, axis2=-1) == 0).reshape(T.size // max(n * n, 1), n)
            if zero.any():
                b = int(np.flatnonzero(zero.any(-1))[0])
                raise LinAlgError(
                    f"linalg.solve_triangular: {batch_prefix(T.shape[:-2], b)}The diagonal "
                    f"element {int(np.argmax(zero[b])) + 1} is zero, the solve could not be "
                    "completed because the input matrix is singular.")
        out = make_tensor(np.linalg.solve(T.astype(dt, copy=False),
                                           B._array.astype(dt, copy=False)))
        ctx.upper, ctx.unit = upper, unit
        ctx.save_for_backward(A, out)
        return out

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> tuple:
        A, X = ctx.saved_tensors
        gB = _SolveTriangular.apply(adjoint(A), g, not ctx.upper, ctx.unit)
        gA = None
        if ctx.needs_input_grad[0]:
            G = -(gB @ adjoint(X))
            off = 1 if ctx.unit else 0
            gA = G.triu(off) if ctx.upper else G.tril(-off)
        return gA, gB, None, None


def _triangle(a: np.ndarray, upper: bool, unit: bool) -> np.ndarray:
    t = np.triu(a) if upper else np.tril(a)
    if unit:
        n = a.shape[-1]
        t[..., np.arange(n), np.arange(n)] = 1
    return t


@half_as_float
def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,
                     unitriangular: bool = False) -> Tensor:
    """X with T X = B (or X T = B when not left) for T the upper or lower triangle of A
    (*, n, n), with ones on the diagonal when unitriangular; B (*, n, k), batches broadcast.

    >>> mg.linalg.solve_triangular(mg.tensor([[2.0, 1.0], [0.0, 4.0]]),
    ...                            mg.tensor([[3.0], [4.0]]), upper=True)
    tensor([[1.],
            [1.]])
    """
    check_matrix(A, "linalg.solve_triangular", square=True, complex_ok=True)
    check_matrix(B, "linalg.solve_triangular", "B", complex_ok=True)
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the "
                           f"equation {'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{B.shape[-2]}x{B.shape[-1]})")
    if left:
        return _SolveTriangular.apply(A, B, bool(upper), bool(unitriangular))
    return _SolveTriangular.apply(A.mT, B.mT, not upper, bool(unitriangular)).mT


class _Cholesky(Function):
    """A = L L^H from A's lower triangle. With Phi(X) = tril(X) with its diagonal halved,
    dL = L Phi(L^-1 dA L^-H), so for Hermitian dA: gA = herm(L^-H Phi(L^H gL) L^-1), the
    Hermitian part (torch's adds an anti-Hermitian part no Hermitian dA can see)."""

    @staticmethod
    def forward(ctx: Context, A: Tensor) -> Tensor:
        a = A._array
        try:
            out = np.linalg.cholesky(a)
        except np.linalg.LinAlgError:
            _not_positive_definite(cholesky_info(a))
        if not np.isfinite(out).all():  # numpy lets a NaN pivot through; LAPACK's potrf and
            info = cholesky_info(a)  # torch refuse it, as a minor that is not positive
            if info.any():
                _not_positive_definite(info)
        L = make_tensor(out)
        ctx.save_for_backward(L)
        return L

    @staticmethod
    def backward(ctx: Context, gL: Tensor) -> tuple:
        (L,) = ctx.saved_tensors
        LH = adjoint(L)
        P = LH @ gL
        P = P.tril(-1) + P.diagonal(0, -2, -1).diag_embed() * 0.5
        Y = _SolveTriangular.apply(LH, P, True, False)  # L^-H Phi
        Z = adjoint(_SolveTriangular.apply(LH, adjoint(Y), True, False))  # ... L^-1
        return (Z + adjoint(Z)) * 0.5,


def _not_positive_definite(info: np.ndarray, fn: str = "linalg.cholesky") -> NoReturn:
    """torch's error for the first matrix of a whose factorisation failed (info: potrf's)."""
    bad = np.flatnonzero(info)
    b = int(bad[0]) if bad.size else 0
    order = f" (the leading minor of order {int(info.flat[b])} is not " \
            "positive-definite)" if bad.size else ""
    raise LinAlgError(f"{fn}: {batch_prefix(info.shape, b)}The factorization could "
                      f"not be completed because the input is not positive-definite{order}.") \
        from None


@half_as_float
def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """L lower triangular with A = L L^H (or U = L^H when upper) for Hermitian (real:
    symmetric) positive definite A (*, n, n), read from its lower (upper) triangle; gradients
    Hermitian. Not positive definite: LinAlgError naming the failing leading minor.

    >>> mg.linalg.cholesky(mg.tensor([[4.0, 2.0], [2.0, 2.0]]))
    tensor([[2., 0.],
            [1., 1.]])
    """
    check_matrix(A, "linalg.cholesky", square=True, complex_ok=True)
    if upper:
        return adjoint(_Cholesky.apply(adjoint(A)))
    return _Cholesky.apply(A)


def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False) -> Tensor:
    """X with A X = B for A = L L^H (U^H U when upper) given its Cholesky factor, as
    torch.cholesky_solve (B first); two triangular solves, differentiable in B and L.

    >>> mg.cholesky_solve(mg.tensor([[2.0], [2.0]]), mg.tensor([[2.0, 0.0], [1.0, 1.0]]))
    tensor([[0.],
            [1.]])
    """
    Lo = adjoint(L) if upper else L
    return solve_triangular(adjoint(Lo), solve_triangular(Lo, B, upper=False), upper=True)


def cholesky_inverse(L: Tensor, upper: bool = False) -> Tensor:
    """(L L^H)^-1 (or (U^H U)^-1 when upper) from a Cholesky factor, as torch.cholesky_inverse.

    >>> mg.cholesky_inverse(mg.tensor([[2.0, 0.0], [0.0, 1.0]]))
    tensor([[0.25, 0.  ],
            [0.  , 1.  ]])
    """
    check_matrix(L, "cholesky_inverse", "input", square=True, complex_ok=True)
    eye = make_tensor(np.broadcast_to(np.eye(L.shape[-1], dtype=L.dtype), L.shape).copy())
    return cholesky_solve(eye, L, upper)


# ---- torch.linalg's *_ex forms: an info tensor (LAPACK's) instead of an error ------------------
class InvExResult(NamedTuple):
    inverse: Tensor
    info: Tensor


class SolveExResult(NamedTuple):
    result: Tensor
    info: Tensor


class CholeskyExResult(NamedTuple):
    L: Tensor
    info: Tensor


def _unless_failed(fn: Callable[[Tensor], Tensor], A: Tensor,
                   info_of: Callable[[np.ndarray], np.ndarray]) -> tuple[Tensor, np.ndarray]:
    """(fn(A), LAPACK's info per matrix of A): where a matrix failed, NaN (torch leaves
    LAPACK's garbage there); those are swapped for the identity before fn, so the gradient
    stays finite (0 there). info is replayed only after a failure."""
    from ..functions import where  # (functions imports linalg)
    try:
        return fn(A), np.zeros(A.shape[:-2], np.int64)
    except LinAlgError:
        info = info_of(A._array)
        if not info.any():  # LAPACK failed where the replay did not: keep its error
            raise
    mask = make_tensor((info != 0)[..., None, None])
    out = fn(where(mask, make_tensor(np.eye(A.shape[-1], dtype=A.dtype)), A))
    if out.ndim == A.ndim - 1:  # a batch of vectors
        mask = mask[..., 0]
    return where(mask, make_tensor(np.array(np.nan, out.dtype)), out), info


def _info(info: np.ndarray) -> Tensor:
    return make_tensor(info.astype(np.int32))


def inv_ex(A: Tensor, *, check_errors: bool = False) -> InvExResult:
    """(inverse, info): inv(A), info getrf's 1-based zero pivot per matrix (0: invertible);
    a singular matrix's inverse is NaN unless check_errors, which raises as inv does.

    >>> mg.linalg.inv_ex(mg.tensor([[2.0, 0.0], [0.0, 0.0]])).info
    tensor(2, dtype=minigrad.int32)
    """
    check_matrix(A, "linalg.inv_ex", square=True, complex_ok=True)
    out, info = _unless_failed(inv, A, lu_info)
    if check_errors and info.any():
        _raise_singular("linalg.inv_ex", info)
    return InvExResult(out, _info(info))


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True,
             check_errors: bool = False) -> SolveExResult:
    """(result, info): solve(A, B, left=left), info getrf's per matrix of A (0: solved); a
    singular A's result is NaN unless check_errors, which raises.

    >>> mg.linalg.solve_ex(mg.tensor([[2.0, 0.0], [0.0, 4.0]]), mg.tensor([2.0, 2.0]))
    SolveExResult(result=tensor([1. , 0.5]), info=tensor(0, dtype=minigrad.int32))
    """
    check_matrix(A, "linalg.solve_ex", square=True, complex_ok=True)
    out, info = _unless_failed(lambda a: solve(a, B, left=left), A, lu_info)
    if check_errors and info.any():
        _solver_failed("torch.linalg.solve_ex", info)
    return SolveExResult(out, _info(info))


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> CholeskyExResult:
    """(L, info): cholesky(A, upper=upper), info potrf's per matrix (the order of the first
    leading minor that is not positive definite, 0: factorised); a failed matrix's L is NaN
    unless check_errors, which raises.

    >>> mg.linalg.cholesky_ex(mg.tensor([[1.0, 0.0], [0.0, -1.0]])).info
    tensor(2, dtype=minigrad.int32)
    """
    check_matrix(A, "linalg.cholesky_ex", square=True, complex_ok=True)
    out, info = _unless_failed(lambda m: cholesky(m, upper=upper), A,
                               lambda a: cholesky_info(np.swapaxes(a, -1, -2).conj() if upper
                                                       else a))
    if check_errors and info.any():
        _not_positive_definite(info, "linalg.cholesky_ex")
    return CholeskyExResult(out, _info(info))
