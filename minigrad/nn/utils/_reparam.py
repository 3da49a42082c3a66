"""Shared plumbing for weight reparametrisations: ``<name>_orig`` is the learnable Parameter
and ``<name>`` is recomputed from it by a forward pre-hook (torch's classic spectral_norm)."""

from __future__ import annotations

from typing import Any

from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from ..module import Module
from ..parameter import Parameter


class WeightHook:
    """Forward pre-hook setting ``module.<name> = compute(module, update)`` before each call."""

    # The learnable originals, ``<name><suffix>``, and how the weight splits into them.
    suffixes: tuple[str, ...] = ("_orig",)

    def split(self, weight: Parameter) -> tuple[Parameter, ...]:
        return (weight,)

    def _originals(self) -> str:
        return " and ".join(self.name + s for s in self.suffixes)

    def __init__(self, name: str) -> None:
        self.name = name
        self.last: Tensor | None = None  # what it last set: an assignment is not lost quietly

    def compute(self, module: Module, update: bool) -> Tensor:
        raise NotImplementedError

    def refresh(self, module: Module, update: bool) -> None:
        self.last = self.compute(module, update)
        setattr(module, self.name, self.last)

    def __call__(self, module: Module, args: Any) -> None:
        if module.__dict__.get(self.name) is not self.last:
            raise RuntimeError(
                f"{type(module).__name__}.{self.name} was assigned, but it is recomputed from "
                f"{self._originals()} before every forward, so the assignment would be lost; "
                f"assign to {self._originals()} instead, or use nn.utils.parametrizations, "
                "where assigning goes through right_inverse")
        # Power iterations (the only state that moves) advance only in training mode.
        self.refresh(module, module.training)


def install(module: Module, hook: WeightHook) -> None:
    """Move ``module.<name>`` to ``<name>_orig`` (``hook``'s originals) and let ``hook``
    recompute ``<name>``."""
    name = hook.name
    for h in module._forward_pre_hooks.values():
        if isinstance(h, WeightHook) and h.name == name:
            raise RuntimeError(f"Cannot register two reparametrizations on parameter '{name}' "
                               f"of {type(module).__name__}")
    weight = module._parameters.get(name)
    if not isinstance(weight, Parameter):
        raise ValueError(f"{type(module).__name__} has no parameter named '{name}'")
    del module._parameters[name]
    for suffix, part in zip(hook.suffixes, hook.split(weight)):
        module.register_parameter(name + suffix, part)
    module.register_forward_pre_hook(hook)


def uninstall(module: Module, name: str, kind: type[WeightHook]) -> Module:
    """Undo ``install``: ``<name>`` becomes a plain Parameter holding the current weight."""
    for key, h in list(module._forward_pre_hooks.items()):
        if isinstance(h, kind) and h.name == name:
            with no_grad():
                weight = h.compute(module, False)
            del module._forward_pre_hooks[key]
            module.__dict__.pop(name, None)
            for suffix in h.suffixes:
                delattr(module, name + suffix)
            module.register_parameter(name, Parameter(weight.detach().clone()))
            return module
    raise ValueError(f"{kind.__name__} of '{name}' not found in {type(module).__name__}")
