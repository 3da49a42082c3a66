"""Linear algebra: the differentiable Jacobi SVD and the norms built on it (torch.linalg names).

float16 input is computed in float32 by every function and comes back as float16,
differentiably (torch refuses float16 here; LAPACK has no half precision)."""

from .errors import IllConditionedWarning, LinAlgError
from .norms import matrix_norm, nuclear_norm
from .svd import SVDResult, svd, svdvals
from .ties import TiePolicy, tie_policy
from .det import SlogdetResult, det, slogdet
from .eigh import EighResult, eigh, eigvalsh
from .products import cross, diagonal, matmul, matrix_power, multi_dot, vecdot
from .qr import householder_product, QRResult, qr
from .solve import (cholesky, cholesky_ex, CholeskyExResult, inv, inv_ex, InvExResult, solve,
                    solve_ex, SolveExResult, solve_triangular)
from .spectral import LstsqResult, cond, lstsq, matrix_rank, pinv
from .vector_norms import norm, vector_norm

__all__ = ["svd", "svdvals", "SVDResult", "LinAlgError", "IllConditionedWarning",
           "matrix_norm", "nuclear_norm", "tie_policy", "TiePolicy"]
__all__ += ["det", "slogdet", "SlogdetResult", "eigh", "eigvalsh", "EighResult", "cross",
            "matrix_power", "multi_dot", "qr", "QRResult", "cholesky", "inv", "solve",
            "solve_triangular", "cond", "lstsq", "LstsqResult", "matrix_rank", "pinv", "norm",
            "vector_norm"]
from .matrix_exp import matrix_exp  # noqa: E402
from .lu import (lu, lu_factor, lu_factor_ex, lu_solve, LUFactorExResult,  # noqa: E402
                 LUFactorResult, LUResult)

__all__ += ["matrix_exp", "vecdot", "matmul", "diagonal", "inv_ex", "InvExResult", "solve_ex",
            "SolveExResult", "cholesky_ex", "CholeskyExResult", "householder_product", "lu",
            "lu_factor", "lu_factor_ex", "lu_solve", "LUFactorResult", "LUFactorExResult",
            "LUResult"]
