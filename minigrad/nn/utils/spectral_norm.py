"""Spectral normalisation with torch's legacy spelling (``torch.nn.utils.spectral_norm``):
W / sigma_max(W), sigma_max exact (differentiable SVD) or estimated by power iteration in
that function's classic order (Miyato et al., 2018). torch's current one is
``nn.utils.parametrizations.spectral_norm``."""

from __future__ import annotations

import numpy as np

from ...autograd.grad_mode import no_grad
from ...creation import default_generator
from ...linalg import svdvals
from ...tensor import Tensor
from ..module import Module
from ._reparam import WeightHook, install, uninstall


class SpectralNorm(WeightHook):
    def __init__(self, name: str, n_power_iterations: int, dim: int, eps: float,
                 exact: bool) -> None:
        super().__init__(name)
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.n_power_iterations, self.dim, self.eps, self.exact = (
            n_power_iterations, dim, eps, exact)

    def matrix(self, weight: Tensor) -> Tensor:
        """The weight as a matrix with ``dim`` as rows (all other dims flattened)."""
        if self.dim != 0:
            rest = [d for d in range(weight.ndim) if d != self.dim]
            weight = weight.permute(self.dim, *rest)
        return weight.reshape(weight.shape[0], -1)

    def power_iteration(self, mat: np.ndarray, u: np.ndarray, n: int) -> tuple:
        """n rounds of v = W^T u / |W^T u|, u = W v / |W v|: (u, v) -> top singular pair."""
        for _ in range(n):
            v = _normalize(mat.T @ u, self.eps)
            u = _normalize(mat @ v, self.eps)
        return u, v

    def compute(self, module: Module, update: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        mat = self.matrix(weight)
        if self.exact:
            sigma = svdvals(mat)[0].clamp(min=self.eps)
        else:
            u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
            if update:
                new_u, new_v = self.power_iteration(mat._array, u._array, self.n_power_iterations)
                with no_grad():
                    u.copy_(Tensor(new_u))
                    v.copy_(Tensor(new_v))
            # Clones: sigma's graph must not see the next in-place update of the buffers.
            sigma = u.detach().clone().dot(mat.matmul(v.detach().clone()))
        return weight / sigma


def _normalize(x: np.ndarray, eps: float) -> np.ndarray:
    return x / max(float(np.linalg.norm(x)), eps)


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None, exact: bool = True) -> Module:
    """Reparametrise ``module.<name>`` as ``W / sigma_max(W)`` so its spectral norm is 1.

    ``exact=True`` takes sigma_max from the differentiable SVD (``mg.linalg.svdvals``), so
    the bound holds at every step and the gradient is the true one. ``exact=False`` is the
    estimate of torch's legacy ``torch.nn.utils.spectral_norm``, in its order: per
    training-mode forward, ``n_power_iterations`` rounds of v = W^T u / |W^T u|, then
    u = W v / |W v|, on buffers ``<name>_u``, ``<name>_v`` with no gradient through them
    (minigrad runs 15 rounds at registration, torch none). torch's current
    ``parametrizations.spectral_norm`` runs the rounds the other way round (u first): for
    that, use ``mg.nn.utils.parametrizations.spectral_norm``. The learnable parameter
    becomes ``<name>_orig``; ``<name>`` is recomputed before every forward, so assign to
    ``<name>_orig`` (assigning ``<name>`` raises at the next forward).

    >>> layer = nn.utils.spectral_norm(nn.Linear(20, 40))
    >>> layer(mg.ones(1, 20)).shape, round(float(mg.linalg.svdvals(layer.weight)[0]), 4)
    ((1, 40), 1.0)
    """
    if dim is None:
        dim = 0  # torch uses 1 for ConvTranspose; minigrad has no such layer
    fn = SpectralNorm(name, n_power_iterations, dim, eps, exact)
    install(module, fn)
    if not exact:
        mat = fn.matrix(getattr(module, name + "_orig"))._array
        rng = default_generator.rng
        u = _normalize(rng.standard_normal(mat.shape[0]).astype(mat.dtype), eps)
        u, v = fn.power_iteration(mat, u, 15)  # start from a good estimate, as torch's does
        module.register_buffer(name + "_u", Tensor(u))
        module.register_buffer(name + "_v", Tensor(v))
    fn.refresh(module, False)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Undo ``spectral_norm``: ``<name>`` becomes a Parameter holding the normalised weight."""
    uninstall(module, name, SpectralNorm)
    for buf in (name + "_u", name + "_v"):
        if buf in module._buffers:
            del module._buffers[buf]
    return module
