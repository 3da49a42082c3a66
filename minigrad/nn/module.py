"""Module: the base class of layers and models (torch.nn.Module, the parts people use)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

import numpy as np

from .._tensor.convert import check_device, to_args
from ..autograd.function import make_tensor
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor
from .parameter import Parameter, clear_grad


class IncompatibleKeys(NamedTuple):
    """What ``load_state_dict`` returns: keys it expected but did not get, and the reverse."""

    missing_keys: list[str]
    unexpected_keys: list[str]


class RemovableHandle:
    """Returned by ``register_forward_pre_hook`` / ``register_forward_hook``; ``remove()`` it."""

    _next_id = 0

    def __init__(self, hooks: dict) -> None:
        self._hooks = hooks
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1

    def remove(self) -> None:
        self._hooks.pop(self.id, None)


class Module:
    """Base class: assigning a Parameter or Module attribute registers it (as in torch).

    >>> class Affine(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.w = nn.Parameter(mg.ones(3))
    ...     def forward(self, x):
    ...         return x * self.w
    >>> [name for name, _ in Affine().named_parameters()]
    ['w']
    """

    training: bool

    def __init__(self) -> None:
        # Written through __dict__: our own __setattr__ needs these dicts to exist first.
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent"] = set()
        d["_modules"] = OrderedDict()
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_hooks"] = OrderedDict()

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"Module [{type(self).__name__}] is missing 'forward'")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not (self._forward_pre_hooks or self._forward_hooks):
            return self.forward(*args, **kwargs)
        for hook in list(self._forward_pre_hooks.values()):
            out = hook(self, args)
            if out is not None:
                args = out if isinstance(out, tuple) else (out,)
        result = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            out = hook(self, args, result)
            if out is not None:
                result = out
        return result

    # ---- registration -------------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, (Parameter, Module)):
            if params is None:
                raise AttributeError(
                    f"cannot assign {type(value).__name__} before Module.__init__() call")
            for store in (d, params, self._buffers, self._modules):
                store.pop(name, None)
            self._non_persistent.discard(name)
            (params if isinstance(value, Parameter) else self._modules)[name] = value
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(mg.nn.Parameter or None expected)")
            params[name] = None
        elif params is not None and name in self._modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module "
                                f"'{name}' (mg.nn.Module or None expected)")
            self._modules[name] = None
        elif params is not None and name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(mg.Tensor or None expected)")
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails: parameters, buffers and children live here.
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            s = d.get(store)
            if s is not None and name in s:
                return s[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                self._non_persistent.discard(name)
                return
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or a None placeholder, as for ``bias=False``)."""
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (mg.nn.Parameter or None required)")
        if "." in name or name == "":
            raise KeyError(f"parameter name can't contain \".\" or be empty: {name!r}")
        self.__dict__.pop(name, None)
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add state that is not learnable (saved in ``state_dict`` when ``persistent``)."""
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}'")
        if "." in name or name == "":
            raise KeyError(f"buffer name can't contain \".\" or be empty: {name!r}")
        self.__dict__.pop(name, None)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self.__dict__.pop(name, None)
        self._modules[name] = module

    register_module = add_module

    def register_forward_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, args)`` runs before ``forward``; a non-None return replaces args."""
        handle = RemovableHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[handle.id] = hook
        return handle

    def register_forward_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, args, output)`` runs after ``forward``; a non-None return replaces it."""
        handle = RemovableHandle(self._forward_hooks)
        self._forward_hooks[handle.id] = hook
        return handle

    # ---- traversal ----------------------------------------------------------------------
    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """This module and all below it, depth first, as (dotted name, module)."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(memo, f"{prefix}.{name}" if prefix else name,
                                               remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def _named_members(self, store: str, prefix: str, recurse: bool,
                       remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        seen: set[int] = set()
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mod_prefix, mod in mods:
            for name, t in getattr(mod, store).items():
                if t is None or (remove_duplicate and id(t) in seen):
                    continue
                seen.add(id(t))
                yield (f"{mod_prefix}.{name}" if mod_prefix else name), t

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """(dotted name, parameter) pairs; a shared parameter is listed once."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call ``fn`` on every submodule (children first) and on self; returns self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # ---- modes and gradients ------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set training mode here and below (affects e.g. spectral_norm's power iteration)."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            m.training = mode
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    # ---- dtype and device ------------------------------------------------------------------
    def to(self, *args: Any, dtype: Any = None, device: Any = None,
           non_blocking: bool = False) -> Module:
        """Cast floating-point parameters and buffers in place (torch's ``Module.to``: they
        stay the same objects, so optimizers still hold them); the device can only be the CPU."""
        dt = to_args(args, dtype, device)
        if dt is None:
            return self
        if dt.kind != "f":
            raise TypeError("nn.Module.to only accepts floating point dtypes, but got desired "
                            f"dtype={dt}")
        return self._cast(dt)

    def float(self) -> Module:
        return self._cast(np.dtype(np.float32))

    def double(self) -> Module:
        return self._cast(np.dtype(np.float64))

    def half(self) -> Module:
        return self._cast(np.dtype(np.float16))

    def cpu(self) -> Module:
        return self

    def cuda(self, device: Any = None) -> Module:
        """Refused: minigrad runs on the CPU only."""
        check_device("cuda" if device is None else device)
        return self

    def _cast(self, dt: np.dtype) -> Module:
        for t in [*self.parameters(), *self.buffers()]:
            if t._array.dtype.kind == "f" and t._array.dtype != dt:
                t._array = t._array.astype(dt)  # a leaf keeps its identity; only its array changes
                if t.grad is not None:
                    t.grad = make_tensor(t.grad._array.astype(dt))
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to None by default, as torch does."""
        for p in self.parameters():
            clear_grad(p, set_to_none)

    # ---- state ----------------------------------------------------------------------------
    def state_dict(self, destination: OrderedDict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> OrderedDict[str, Tensor]:
        """name -> tensor for every parameter and persistent buffer, detached (shared memory).

        >>> list(nn.Linear(2, 3).state_dict())
        ['weight', 'bias']
        """
        out: OrderedDict[str, Tensor] = OrderedDict() if destination is None else destination
        for mod_prefix, mod in self.named_modules(prefix=prefix.rstrip(".")):
            dot = f"{mod_prefix}." if mod_prefix else ""
            for name, p in mod._parameters.items():
                if p is not None:
                    out[dot + name] = p if keep_vars else p.detach()
            for name, b in mod._buffers.items():
                if b is not None and name not in mod._non_persistent:
                    out[dot + name] = b if keep_vars else b.detach()
        return out

    def load_state_dict(self, state_dict: Mapping[str, Any],
                        strict: bool = True) -> IncompatibleKeys:
        """Copy values into this module's parameters and buffers (in place, no grad).

        A shape mismatch is always an error; with ``strict`` so are missing or unexpected keys.
        """
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        for k, target in own.items():
            if k not in state_dict:
                continue
            value = state_dict[k]
            arr = value._array if isinstance(value, Tensor) else np.asarray(value)
            if arr.shape != target.shape:
                errors.append(f"size mismatch for {k}: copying a param with shape "
                              f"{tuple(arr.shape)} from checkpoint, the shape in current model "
                              f"is {tuple(target.shape)}.")
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in unexpected) + ".")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in missing) + ".")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        with no_grad():
            for k, target in own.items():
                if k in state_dict:
                    value = state_dict[k]
                    target.copy_(value if isinstance(value, Tensor) else Tensor(np.asarray(value)))
        return IncompatibleKeys(missing, unexpected)

    # ---- printing -------------------------------------------------------------------------
    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = [f"({name}): " + repr(m).replace("\n", "\n  ") for name, m in self._modules.items()]
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not lines:
            return head + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers)
                      | set(self._modules))
