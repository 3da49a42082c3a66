"""LU with partial pivoting (torch.linalg.lu_factor, lu_factor_ex, lu, lu_solve): LAPACK's getrf
replayed in vectorised numpy (numpy has no getrf), square matrices; the backward written with
minigrad ops, so every order works.

With P A = L U (P from the pivots, L unit lower, U upper) and X = L^-1 P dA U^-1, the packed
factor moves by dLU = L tril(X, -1) + triu(X) U, so a cotangent gLU gives

    gA = P^T L^-H [tril(L^H gL, -1) + triu(gU U^H)] U^-H,  gL = tril(gLU, -1), gU = triu(gLU).
"""

from __future__ import annotations

from typing import NamedTuple, NoReturn

import numpy as np

from ..autograd.function import Context, Function, make_tensor
from ..tensor import Tensor
from ._checks import adjoint, batch_prefix, check_matrix
from ._lapack_info import lu_packed
from .errors import LinAlgError
from .solve import solve_triangular


class LUFactorResult(NamedTuple):
    LU: Tensor
    pivots: Tensor


class LUFactorExResult(NamedTuple):
    LU: Tensor
    pivots: Tensor
    info: Tensor


class LUResult(NamedTuple):
    P: Tensor
    L: Tensor
    U: Tensor


def _row_order(pivots: np.ndarray) -> np.ndarray:
    """The rows of A in the order P A takes them: LAPACK's swaps applied in turn."""
    n = pivots.shape[-1]
    order = np.broadcast_to(np.arange(n), pivots.shape).copy()
    if order.size == 0:
        return order
    flat, piv = order.reshape(-1, n), pivots.reshape(-1, n) - 1
    rows = np.arange(flat.shape[0])
    for k in range(n):
        top = flat[rows, k].copy()
        flat[rows, k] = flat[rows, piv[:, k]]
        flat[rows, piv[:, k]] = top
    return order


def _perm(pivots: np.ndarray, dtype: np.dtype) -> Tensor:
    """P (*, n, n) with P A = A's rows in the pivoted order."""
    n = pivots.shape[-1]
    return make_tensor(np.eye(n, dtype=dtype)[_row_order(pivots)])


def _factors(LU: Tensor) -> tuple[Tensor, Tensor]:
    n = LU.shape[-1]
    return LU.tril(-1) + make_tensor(np.eye(n, dtype=LU.dtype)), LU.triu()


class _LUFactor(Function):
    """The packed factor of A; the pivots come with it, outside the graph."""

    @staticmethod
    def forward(ctx: Context, A: Tensor, lu: np.ndarray, pivots: np.ndarray) -> Tensor:
        out = make_tensor(lu)
        ctx.pivots = pivots
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> tuple:
        (LU,) = ctx.saved_tensors
        L, U = _factors(LU)
        X = (adjoint(L) @ g.tril(-1)).tril(-1) + (g.triu() @ adjoint(U)).triu()
        # (the solves read their triangle of LU, as lu_solve's)
        Y = solve_triangular(adjoint(LU), X, upper=True, unitriangular=True)
        Z = adjoint(solve_triangular(LU, adjoint(Y), upper=True))  # Y U^-H
        return adjoint(_perm(ctx.pivots, LU.dtype)) @ Z, None, None


def lu_factor_ex(A: Tensor, *, pivot: bool = True,
                 check_errors: bool = False) -> LUFactorExResult:
    """(LU, pivots, info): LAPACK's getrf of each square matrix of A (*, n, n), as torch's:
    P A = L U packed in LU (L's unit diagonal implied), pivots 1-based int32, info the
    1-based index of U's first zero diagonal entry (0: none); differentiable in A.

    >>> mg.linalg.lu_factor_ex(mg.tensor([[1.0, 2.0], [2.0, 4.0]])).info
    tensor(2, dtype=minigrad.int32)
    """
    check_matrix(A, "linalg.lu_factor_ex", complex_ok=True)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    if A.shape[-2] != A.shape[-1]:
        raise NotImplementedError("minigrad's linalg.lu_factor takes square matrices only")
    lu, pivots, info = lu_packed(A._array)
    if check_errors and info.any():
        _zero_pivot("torch.linalg.lu_factor_ex", info)
    return LUFactorExResult(_LUFactor.apply(A, lu.astype(A.dtype, copy=False), pivots),
                            make_tensor(pivots), make_tensor(info.astype(np.int32)))


def lu_factor(A: Tensor, *, pivot: bool = True) -> LUFactorResult:
    """(LU, pivots) of lu_factor_ex; a singular matrix raises, as torch's.

    >>> LU, piv = mg.linalg.lu_factor(mg.tensor([[1.0, 2.0], [3.0, 4.0]])); piv
    tensor([2, 2], dtype=minigrad.int32)
    """
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)
    if info._array.any():
        _zero_pivot("torch.linalg.lu_factor", info._array)
    return LUFactorResult(LU, pivots)


def _zero_pivot(fn: str, info: np.ndarray) -> NoReturn:
    """torch's error for the first matrix whose U has a zero pivot (info: getrf's)."""
    b = int(np.flatnonzero(info)[0])
    i = int(info.flat[b])
    raise LinAlgError(f"{fn}: {batch_prefix(info.shape, b)}U[{i},{i}] is zero and using it "
                      "on lu_solve would result in a division by zero. If you still want to "
                      "perform the factorization, consider calling linalg.lu(A, pivot) or "
                      "linalg.lu_factor_ex(A, pivot)")


def lu(A: Tensor, *, pivot: bool = True) -> LUResult:
    """(P, L, U) with A = P L U, as torch.linalg.lu (square A); differentiable in A.

    >>> P, L, U = mg.linalg.lu(mg.tensor([[1.0, 2.0], [3.0, 4.0]])); P
    tensor([[0., 1.],
            [1., 0.]])
    """
    LU, pivots, _ = lu_factor_ex(A, pivot=pivot)
    return LUResult(*lu_unpack(LU, pivots))


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor) -> LUResult:
    """(P, L, U) from a packed factor and its pivots, as torch.lu_unpack: A = P L U.

    >>> mg.lu_unpack(*mg.linalg.lu_factor(mg.tensor([[1.0, 2.0], [3.0, 4.0]]))).U
    tensor([[3.       , 4.       ],
            [0.       , 0.6666666]])
    """
    L, U = _factors(LU_data)
    return LUResult(adjoint(_perm(LU_pivots._array, LU_data.dtype)), L, U)


def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True,
             adjoint: bool = False) -> Tensor:
    """X with A X = B (A^H X = B when adjoint; X A = B when not left) for A = P^T L U given
    by lu_factor; differentiable in LU and B.

    >>> LU, piv = mg.linalg.lu_factor(mg.tensor([[2.0, 0.0], [0.0, 4.0]]))
    >>> mg.linalg.lu_solve(LU, piv, mg.tensor([[2.0], [2.0]]))
    tensor([[1. ],
            [0.5]])
    """
    check_matrix(B, "linalg.lu_solve", "B", complex_ok=True)
    if not left:  # X A = B  <=>  A^H X^H = B^H
        return _adj(lu_solve(LU, pivots, _adj(B), adjoint=not adjoint))
    # solve_triangular reads only its triangle (and its gradient lands there): LU itself
    P = _perm(pivots._array, LU.dtype)
    if adjoint:  # U^H L^H P X = B
        Y = solve_triangular(_adj(LU), B, upper=False)
        return _adj(P) @ solve_triangular(_adj(LU), Y, upper=True, unitriangular=True)
    Y = solve_triangular(LU, P @ B, upper=False, unitriangular=True)
    return solve_triangular(LU, Y, upper=True)


_adj = adjoint  # (lu_solve's keyword of that name hides the function there)
