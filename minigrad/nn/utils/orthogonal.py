"""Orthogonal weights through the polar factor U Vh of a free matrix."""

from __future__ import annotations

from ...tensor import Tensor
from ..module import Module
from ._reparam import WeightHook, install, uninstall


class Orthogonal(WeightHook):
    def compute(self, module: Module, update: bool) -> Tensor:
        from ...linalg import svd

        u, _, vh = svd(getattr(module, self.name + "_orig"), full_matrices=False)
        return u @ vh


def orthogonal(module: Module, name: str = "weight") -> Module:
    """Reparametrise ``module.<name>`` as the polar factor ``U @ Vh`` of a free matrix
    ``<name>_orig`` (the orthogonal matrix nearest to it; semi-orthogonal when not square;
    leading dims are a batch).

    The gradient goes through the differentiable SVD and stays finite when singular values
    repeat (e.g. at the identity, where torch's SVD backward gives NaN).

    >>> layer = nn.utils.orthogonal(nn.Linear(4, 4))
    >>> (layer.weight.T @ layer.weight)  # doctest: +SKIP  (the identity)
    """
    install(module, Orthogonal(name))
    setattr(module, name, Orthogonal(name).compute(module, False))
    return module


def remove_orthogonal(module: Module, name: str = "weight") -> Module:
    """Undo ``orthogonal``: ``<name>`` becomes a Parameter holding the orthogonal weight."""
    return uninstall(module, name, Orthogonal)
