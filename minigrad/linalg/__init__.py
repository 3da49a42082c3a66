"""Linear algebra: the differentiable Jacobi SVD (torch.linalg names)."""

from .errors import LinAlgError
from .svd import SVDResult, svd, svdvals

__all__ = ["svd", "svdvals", "SVDResult", "LinAlgError"]
