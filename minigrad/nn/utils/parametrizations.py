"""torch.nn.utils.parametrizations' spelling of the same reparametrisations, so that
``from torch.nn.utils.parametrizations import orthogonal`` ports by changing the package."""

from .orthogonal import orthogonal
from .spectral_norm import spectral_norm

__all__ = ["orthogonal", "spectral_norm"]
