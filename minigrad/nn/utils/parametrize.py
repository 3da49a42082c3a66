"""Parametrizations as torch spells them (``torch.nn.utils.parametrize``).

``register_parametrization(module, "weight", P)`` moves the parameter to
``module.parametrizations.weight.original`` and turns ``module.weight`` into a property that
computes ``P(original)`` on every access. Assigning ``module.weight = W`` goes through
``P.right_inverse(W)`` (under no_grad) into ``original``, or raises when P has none. The
state-dict keys are torch's (``parametrizations.weight.original``, and a parametrization's
own buffers under ``parametrizations.weight.0.``), so a state dict moves between the two.

>>> class Symmetric(nn.Module):
...     def forward(self, X):
...         return X.triu() + X.triu(1).mT
>>> layer = nn.utils.parametrize.register_parametrization(nn.Linear(3, 3), "weight", Symmetric())
>>> bool((layer.weight == layer.weight.T).all())
True
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from ..module import Module
from ..modules import ModuleDict, ModuleList
from ..parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations"]

_cache_enabled = 0
_cache: dict[tuple[int, str], Tensor] = {}


@contextmanager
def cached() -> Iterator[None]:
    """Inside this block each parametrized tensor is computed once, on first access, and
    reused (torch's ``parametrize.cached``): for a weight read several times per step."""
    global _cache_enabled, _cache
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module: Module, name: str, X: Tensor) -> None:
    if isinstance(X, Parameter):
        module.register_parameter(name, X)
    else:
        module.register_buffer(name, X)


def _maybe_set(dest: Tensor, src: Tensor) -> None:
    """torch's ``dest.set_(src)``: ``dest`` (the same object, so optimizers holding it still
    do) takes the values of ``src``, copied so the two never alias; its version moves."""
    value = src.detach()._array
    if dest._array.shape == value.shape and dest._array.dtype == value.dtype \
            and dest._array.flags.writeable:
        np.copyto(dest._array, value)
    else:
        dest._array = value.copy()
    dest._version_counter[0] += 1


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the ``original`` they act on.

    ``right_inverse(value)`` sets ``original`` so that the chain gives back ``value``."""

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        shape, dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass  # then right_inverse is taken as the identity, as in torch
        if not isinstance(new, (Tensor, Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if new.dtype != dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change "
                                 f"the dtype.\noriginal.dtype: {dtype}\n"
                                 f"right_inverse(original).dtype: {new.dtype}")
            with no_grad():
                _maybe_set(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, t in enumerate(new):
                if not isinstance(t, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of "
                                     f"tensors (list, tuple...). Got element {i} of the "
                                     f"sequence with type {type(t).__name__}.")
                t = t.detach().clone()
                if isinstance(original, Parameter):
                    t = Parameter(t, original.requires_grad)
                elif original.requires_grad:
                    t.requires_grad_(True)
                _register_parameter_or_buffer(self, f"original{i}", t)
        if not self.unsafe:
            Z = self()
            if not isinstance(Z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(Z).__name__}.")
            if Z.dtype != dtype:
                raise ValueError("Registering a parametrization may not change the dtype of "
                                 "the tensor, unless `unsafe` flag is enabled.\n"
                                 f"unparametrized dtype: {dtype}\nparametrized dtype: {Z.dtype}")
            if Z.shape != shape:
                raise ValueError("Registering a parametrization may not change the shape of "
                                 "the tensor, unless `unsafe` flag is enabled.\n"
                                 f"unparametrized shape: {shape}\nparametrized shape: {Z.shape}")

    def right_inverse(self, value: Tensor) -> None:
        """Set the original(s) so that the parametrized tensor is ``value`` (no grad)."""
        with no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       "implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got "
                                     f"{type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype "
                                     f"{value.dtype} while `original` has dtype "
                                     f"{self.original.dtype}")
                _maybe_set(self.original, value)
                return
            if not isinstance(value, Sequence) or len(value) != self.ntensors:
                raise ValueError(f"'right_inverse' must return a sequence of {self.ntensors} "
                                 f"tensors. Got {type(value).__name__}.")
            for i, t in enumerate(value):
                original = getattr(self, f"original{i}")
                if not isinstance(t, Tensor) or t.dtype != original.dtype:
                    raise ValueError(f"Tensor {i} returned by `right_inverse` must be a tensor "
                                     f"of dtype {original.dtype}")
                _maybe_set(original, t)

    def forward(self) -> Tensor:
        mods = list(self)
        if self.is_tensor:
            x = mods[0](self.original)
        else:
            x = mods[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for m in mods[1:]:
            x = m(x)
        return x


def _inject_new_class(module: Module) -> None:
    """Give ``module`` a class of its own, ``Parametrized<Class>``, to hang properties on."""
    cls = module.__class__

    def __setattr__(self: Module, name: str, value: Any) -> None:
        plists = self.__dict__["_modules"].get("parametrizations")
        if plists is not None and name in plists._modules:
            plists._modules[name].right_inverse(value)  # the assignment goes to the original
        else:
            cls.__setattr__(self, name, value)

    def __reduce_ex__(self: Module, protocol: int) -> tuple:
        # The class is made at run time, so pickle rebuilds it (torch refuses to pickle).
        names = tuple(self.__dict__["_modules"]["parametrizations"]._modules)
        return _rebuild_parametrized, (cls, names), self.__dict__

    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,),
                            {"__setattr__": __setattr__, "__reduce_ex__": __reduce_ex__})


def _rebuild_parametrized(cls: type, names: tuple[str, ...]) -> Module:
    """A bare parametrized ``cls`` instance; pickle (or deepcopy) then fills its __dict__."""
    module = cls.__new__(cls)
    _inject_new_class(module)
    for name in names:
        _inject_property(module, name)
    return module


def _inject_property(module: Module, tensor_name: str) -> None:
    def get_parametrized(self: Module) -> Tensor:
        plist = self.__dict__["_modules"]["parametrizations"]._modules[tensor_name]
        if not _cache_enabled:
            return plist()
        key = (id(self), tensor_name)
        tensor = _cache.get(key)
        if tensor is None:
            tensor = _cache[key] = plist()
        return tensor

    def set_original(self: Module, value: Tensor) -> None:
        self.__dict__["_modules"]["parametrizations"]._modules[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Compute ``module.<tensor_name>`` as ``parametrization(original)`` from now on.

    The parameter (or buffer) moves to ``module.parametrizations.<tensor_name>.original``,
    set to ``parametrization.right_inverse(tensor)`` when the parametrization has one.
    Registering a second parametrization on the same tensor chains it after the first.
    ``unsafe=True`` skips the checks that shape and dtype are kept.

    >>> m = nn.utils.parametrize.register_parametrization(nn.Linear(2, 2), "weight", nn.Tanh())
    >>> [name for name, _ in m.named_parameters()]
    ['bias', 'parametrizations.weight.original']
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            Y = getattr(module, tensor_name)
            X = parametrization(Y)
            if not isinstance(X, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(X).__name__}.")
            if X.dtype != Y.dtype or X.shape != Y.shape:
                raise ValueError("Registering a parametrization may not change the dtype or "
                                 "shape of the tensor, unless the `unsafe` flag is enabled.\n"
                                 f"module.{tensor_name}: {Y.dtype} {tuple(Y.shape)}\n"
                                 f"parametrization(module.{tensor_name}): {X.dtype} "
                                 f"{tuple(X.shape)}")
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization (on ``tensor_name``, when given)."""
    plists = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(plists, ModuleDict):
        return False
    return len(plists) > 0 if tensor_name is None else tensor_name in plists


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Undo ``register_parametrization`` on ``tensor_name``: it becomes a plain parameter (or
    buffer) again, holding the parametrized value (``leave_parametrized=True``) or the
    original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
                _maybe_set(original, t)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                             "that is parametrized in terms of a sequence of tensors.")
        with no_grad():
            t = getattr(module, tensor_name).detach().clone()
        original = Parameter(t) if plist.original0.requires_grad else t
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The class ``module`` had before its first parametrization."""
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)
