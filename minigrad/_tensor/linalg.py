"""The linear-algebra methods of Tensor (``A.mH``, ``A.inverse()``, ``A.svd()`` ...): torch's
method spellings of the functions in minigrad.linalg, which they call."""

# mypy: disable-error-code="misc"
# (The methods take self as the Tensor they are mixed into, which mypy's check that a
# self annotation is a supertype of its class, error code misc, would refuse.)

from __future__ import annotations

from typing import TYPE_CHECKING

import minigrad

if TYPE_CHECKING:
    from ..linalg.det import SlogdetResult
    from ..linalg.legacy import SVDLegacyResult
    from ..linalg.qr import QRResult
    from ..tensor import Tensor


def _matrices_only(t: Tensor, attr: str) -> None:
    if t.ndim < 2:
        raise RuntimeError(f"tensor.{attr} is only supported on matrices or batches of "
                           f"matrices. Got {t.ndim}-D tensor.")


class LinalgMethods:
    """The linalg methods of Tensor (mixed into it by tensor.py). The conjugate transposes
    of real tensors are views, the transposes; of complex ones, conjugated copies (``conj``
    copies in minigrad: see _tensor/complex.py)."""

    @property
    def mH(self: Tensor) -> Tensor:
        """The conjugate transpose of the last two dims (real data: ``mT``)."""
        _matrices_only(self, "mH")
        return self.transpose(-2, -1).conj()

    @property
    def H(self: Tensor) -> Tensor:
        """The conjugate transpose of a matrix (2-D only, as in torch)."""
        if self.ndim != 2:
            raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got "
                               f"{self.ndim}-D tensor.")
        return self.transpose(0, 1).conj()

    def adjoint(self: Tensor) -> Tensor:
        """``mH`` as a method (torch.adjoint)."""
        _matrices_only(self, "adjoint()")
        return self.transpose(-2, -1).conj()

    def inverse(self: Tensor) -> Tensor:
        """A^-1 (linalg.inv)."""
        return minigrad.linalg.inv(self)

    def det(self: Tensor) -> Tensor:
        return minigrad.linalg.det(self)

    def logdet(self: Tensor) -> Tensor:
        return minigrad.logdet(self)

    def slogdet(self: Tensor) -> SlogdetResult:
        return minigrad.linalg.slogdet(self)

    def pinverse(self: Tensor, rcond: float = 1e-15) -> Tensor:
        return minigrad.pinverse(self, rcond)

    def matrix_power(self: Tensor, n: int) -> Tensor:
        return minigrad.linalg.matrix_power(self, n)

    def matrix_exp(self: Tensor) -> Tensor:
        return minigrad.linalg.matrix_exp(self)

    def svd(self: Tensor, some: bool = True, compute_uv: bool = True) -> SVDLegacyResult:
        """torch.svd's (U, S, V), V not Vh; see ``mg.svd``."""
        return minigrad.svd(self, some, compute_uv)

    def cholesky(self: Tensor, upper: bool = False) -> Tensor:
        return minigrad.cholesky(self, upper)

    def qr(self: Tensor, some: bool = True) -> QRResult:
        return minigrad.qr(self, some)
