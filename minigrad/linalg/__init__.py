"""Linear algebra: the differentiable Jacobi SVD and the norms built on it (torch.linalg names)."""

from .errors import LinAlgError
from .norms import matrix_norm, nuclear_norm
from .svd import SVDResult, svd, svdvals
from .ties import TiePolicy, tie_policy

__all__ = ["svd", "svdvals", "SVDResult", "LinAlgError", "matrix_norm", "nuclear_norm",
           "tie_policy", "TiePolicy"]
