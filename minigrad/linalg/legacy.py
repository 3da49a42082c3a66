"""torch's older spellings of the decompositions, still in torch and in code ported from it:
``torch.svd`` (V, not Vh; ``some``; ``compute_uv``), ``torch.cholesky(upper=)``,
``torch.qr(some=)``, ``torch.triangular_solve``, ``torch.lu`` and ``torch.lu_solve``. Each is
the torch.linalg function underneath, gradients included."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..autograd.function import make_tensor
from ..tensor import Tensor
from ._checks import adjoint, check_matrix
from .lu import LUFactorExResult, LUFactorResult, lu_factor_ex
from .lu import lu_solve as linalg_lu_solve
from .qr import QRResult
from .qr import qr as linalg_qr
from .solve import cholesky as linalg_cholesky
from .solve import solve_triangular
from .svd import svd as linalg_svd
from .svd import svdvals


class SVDLegacyResult(NamedTuple):
    U: Tensor
    S: Tensor
    V: Tensor


def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> SVDLegacyResult:
    """torch.svd: input = U diag(S) V^H, returning V itself (linalg.svd returns Vh = V^H).

    ``some=True`` gives the reduced U (*, m, k) and V (*, n, k); ``some=False`` the full
    (*, m, m) and (*, n, n). With ``compute_uv=False`` only S is computed and U, V are
    zero-filled (*, m, m) and (*, n, n), as in torch; S then still differentiates.

    >>> U, S, V = mg.svd(mg.tensor([[3.0, 0.0], [0.0, -4.0]])); S, V.shape
    (tensor([4., 3.]), (2, 2))
    """
    check_matrix(input, "svd", "input", complex_ok=True)
    if not compute_uv:
        m, n = input.shape[-2:]
        batch = input.shape[:-2]
        U = make_tensor(np.zeros(batch + (m, m), input.dtype))
        V = make_tensor(np.zeros(batch + (n, n), input.dtype))
        return SVDLegacyResult(U, svdvals(input), V)
    U, S, Vh = linalg_svd(input, full_matrices=not some)
    return SVDLegacyResult(U, S, adjoint(Vh))


def cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """torch.cholesky: linalg.cholesky with ``upper`` positional (L, or U = L^T if upper).

    >>> mg.cholesky(mg.tensor([[4.0, 2.0], [2.0, 2.0]]), upper=True)
    tensor([[2., 1.],
            [0., 1.]])
    """
    return linalg_cholesky(input, upper=upper)


def qr(input: Tensor, some: bool = True) -> QRResult:
    """torch.qr: linalg.qr with mode "reduced" (``some=True``) or "complete".

    >>> Q, R = mg.qr(mg.tensor([[3.0], [4.0]]), some=False); Q.shape, R.shape
    ((2, 2), (2, 1))
    """
    return linalg_qr(input, "reduced" if some else "complete")


class TriangularSolveResult(NamedTuple):
    solution: Tensor
    cloned_coefficient: Tensor


def triangular_solve(b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False) -> TriangularSolveResult:
    """torch.triangular_solve (b first, upper by default): X with T X = b, or T^T X = b when
    transpose, T A's upper (lower) triangle; returns X and a copy of A.

    >>> mg.triangular_solve(mg.tensor([[3.0], [4.0]]), mg.tensor([[2.0, 1.0], [0.0, 4.0]]))[0]
    tensor([[1.],
            [1.]])
    """
    T = A.mT if transpose else A
    X = solve_triangular(T, b, upper=upper != transpose, unitriangular=unitriangular)
    # the copy of A has the solution's batch shape, as torch's
    return TriangularSolveResult(X, A.broadcast_to(X.shape[:-2] + A.shape[-2:]).clone())


def lu(A: Tensor, pivot: bool = True,
       get_infos: bool = False) -> LUFactorResult | LUFactorExResult:
    """torch.lu: (LU, pivots) of linalg.lu_factor_ex, a singular matrix factored as torch's
    (its info only with ``get_infos``: (LU, pivots, infos)).

    >>> mg.lu(mg.tensor([[1.0, 2.0], [3.0, 4.0]]))[1]
    tensor([2, 2], dtype=minigrad.int32)
    """
    res = lu_factor_ex(A, pivot=pivot)
    return res if get_infos else LUFactorResult(res.LU, res.pivots)


def lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
    """torch.lu_solve (b first): linalg.lu_solve(LU_data, LU_pivots, b).

    >>> LU, piv = mg.lu(mg.tensor([[2.0, 0.0], [0.0, 4.0]]))
    >>> mg.lu_solve(mg.tensor([[2.0], [2.0]]), LU, piv)
    tensor([[1. ],
            [0.5]])
    """
    return linalg_lu_solve(LU_data, LU_pivots, b)
