"""Module utilities: reparametrisations (torch's parametrize API and the SVD-powered ones)
and gradient clipping."""

from . import parametrizations, parametrize
from .clip_grad import clip_grad_norm_
from .orthogonal import orthogonal, remove_orthogonal
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["spectral_norm", "remove_spectral_norm", "orthogonal", "remove_orthogonal",
           "clip_grad_norm_", "parametrizations", "parametrize", "weight_norm",
           "remove_weight_norm"]
