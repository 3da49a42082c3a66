"""Weight normalisation with torch's legacy spelling (``torch.nn.utils.weight_norm``):
W = g v / |v| recomputed before every forward from the Parameters ``<name>_g`` and
``<name>_v`` (Salimans and Kingma, 2016). torch's current one is
``nn.utils.parametrizations.weight_norm``."""

from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from ..module import Module
from ..parameter import Parameter
from ._reparam import WeightHook, install, uninstall
from .parametrizations import _norm_except_dim


class WeightNorm(WeightHook):
    suffixes = ("_g", "_v")

    def __init__(self, name: str, dim: int) -> None:
        super().__init__(name)
        self.dim = dim

    def split(self, weight: Parameter) -> tuple[Parameter, ...]:
        with no_grad():
            return (Parameter(_norm_except_dim(weight, self.dim).detach().clone()),
                    Parameter(weight.detach().clone()))

    def compute(self, module: Module, update: bool) -> Tensor:
        g, v = getattr(module, self.name + "_g"), getattr(module, self.name + "_v")
        return v * (g / _norm_except_dim(v, self.dim))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrise ``module.<name>`` as g v / |v|, the norm over every dim but ``dim``
    (None: over all), as torch's legacy ``nn.utils.weight_norm``: Parameters ``<name>_g``
    and ``<name>_v``; assign to those, not to ``<name>``.

    >>> layer = nn.utils.weight_norm(nn.Linear(3, 2))
    >>> sorted(layer.state_dict()), layer.weight_g.shape
    (['bias', 'weight_g', 'weight_v'], (2, 1))
    """
    hook = WeightNorm(name, -1 if dim is None else dim)
    install(module, hook)
    hook.refresh(module, False)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Undo ``weight_norm``: ``<name>`` becomes a Parameter holding g v / |v|."""
    return uninstall(module, name, WeightNorm)
