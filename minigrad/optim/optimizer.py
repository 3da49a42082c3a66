"""Optimizer: parameter groups, per-parameter state, zero_grad (torch.optim.Optimizer)."""

from __future__ import annotations

import copy
import functools
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..autograd.function import make_tensor
from ..autograd.grad_mode import enable_grad, no_grad
from ..nn.module import RemovableHandle
from ..nn.parameter import clear_grad
from ..tensor import Tensor

# torch.optim.optimizer's global hooks: run around the step of every optimizer.
_global_step_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_step_post_hooks: OrderedDict[int, Callable] = OrderedDict()


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """``hook(optimizer, args, kwargs)`` before every optimizer's step (see
    ``Optimizer.register_step_pre_hook``)."""
    return _add_hook(_global_step_pre_hooks, hook)


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """``hook(optimizer, args, kwargs)`` after every optimizer's step."""
    return _add_hook(_global_step_post_hooks, hook)


def _add_hook(hooks: OrderedDict, hook: Callable) -> RemovableHandle:
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


def _with_hooks(step: Callable) -> Callable:
    """``step`` with the pre / post hooks around it, marking the optimizer as stepped (the
    schedulers' order check reads that). A subclass's step calling ``super().step()`` runs
    the hooks once: only the outermost call does."""

    @functools.wraps(step)
    def hooked(*args: Any, **kwargs: Any) -> Any:
        self = args[0]  # the hooks see the optimizer in args too, as torch's
        if self._stepping:
            return step(*args, **kwargs)
        for hook in [*_global_step_pre_hooks.values(), *self._step_pre_hooks.values()]:
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(f"{hook} must return None or a tuple of (new_args, "
                                       f"new_kwargs), but got {result}.")
                args, kwargs = result
        self._opt_called = True
        self._stepping = True
        try:
            out = step(*args, **kwargs)
        finally:
            self._stepping = False
        for hook in [*_global_step_post_hooks.values(), *self._step_post_hooks.values()]:
            hook(self, args, kwargs)
        return out

    hooked._with_hooks = True  # type: ignore[attr-defined]
    return hooked


class Optimizer:
    """Base class. ``params`` is an iterable of Tensors or of dicts (parameter groups) with
    per-group options overriding ``defaults``; ``state[p]`` holds each parameter's buffers."""

    _opt_called = False  # set by the first step (lr schedulers check the call order)
    _stepping = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__ and not getattr(cls.step, "_with_hooks", False):
            cls.step = _with_hooks(cls.step)

    def __init__(self, params: Iterable[Tensor] | Iterable[dict], defaults: dict) -> None:
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got a Tensor")
        self.defaults = defaults
        self._step_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._step_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        self.state: defaultdict[Tensor, dict] = defaultdict(dict)
        self.param_groups: list[dict] = []
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters with its own options (e.g. a smaller lr); the parameters
        may be given as ``(name, tensor)`` pairs, as ``model.named_parameters()`` yields them.

        >>> opt = mg.optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1)
        >>> opt.add_param_group({"params": nn.Linear(2, 1).parameters(), "lr": 1e-4})
        >>> [group["lr"] for group in opt.param_groups]
        [0.1, 0.0001]
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        group = dict(param_group)
        params = group["params"]
        if isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        params = [params] if isinstance(params, Tensor) else list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        group["params"] = [p[1] if isinstance(p, tuple) else p for p in params]
        if names:
            if len(names) != len(params):
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")
            group["param_names"] = names
        if self.param_groups and ("param_names" in group) != (
                "param_names" in self.param_groups[0]):
            raise ValueError("all optimizer param groups should be with/without names.")
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                f"{type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for key, value in self.defaults.items():
            group.setdefault(key, value)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(optimizer, args, kwargs)`` before each ``step`` (``args`` starts with
        the optimizer, as in torch); returning a pair ``(new_args, new_kwargs)`` replaces the
        step's arguments. ``remove()`` the handle.

        >>> opt = mg.optim.SGD([nn.Parameter(mg.zeros(1))], lr=0.1)
        >>> h = opt.register_step_pre_hook(lambda o, args, kwargs: print("stepping"))
        >>> opt.step(); h.remove(); opt.step()
        stepping
        """
        return _add_hook(self._step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(optimizer, args, kwargs)`` after each ``step``."""
        return _add_hook(self._step_post_hooks, hook)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimised parameters (to None by default, like torch)."""
        for group in self.param_groups:
            for p in group["params"]:
                clear_grad(p, set_to_none)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns ``closure()`` if given."""
        loss = self._closure(closure)
        with no_grad():
            for group in self.param_groups:
                wd = group["weight_decay"]
                coupled = wd != 0 and not group.get("decoupled_weight_decay", False)
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    g = -p.grad._array if group["maximize"] else p.grad._array
                    if coupled:
                        g = g + wd * p._array  # L2, after the sign flip, as torch does
                    if p._array.dtype.kind == "c":  # as torch: a complex p steps as pairs
                        real_p = make_tensor(pairs(p._array))
                        step = self._update(pairs(g), real_p, group, self.state[p])
                        p.sub_(make_tensor(step.view(p._array.dtype)[..., 0]))
                        continue
                    p.sub_(make_tensor(self._update(g, p, group, self.state[p])))
        return loss

    step = _with_hooks(step)

    def _update(self, g: np.ndarray, p: Tensor, group: dict, state: dict) -> np.ndarray:
        """The step to subtract from ``p`` given its gradient ``g`` (sign-flipped for
        ``maximize``, plus ``weight_decay * p`` unless the group decouples the decay).

        The buffers in ``state`` belong to the optimizer and are never in a graph, so
        subclasses update their arrays in place."""
        raise NotImplementedError

    def _closure(self, closure: Callable[[], Any] | None) -> Any:
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def state_dict(self) -> dict:
        """{'state': {index: {...}}, 'param_groups': [{..., 'params': [index, ...]}]} (copies)."""
        index: dict[int, int] = {}
        groups = []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            packed["params"] = [index.setdefault(id(p), len(index)) for p in g["params"]]
            groups.append(packed)
        state = {index[id(p)]: {k: _copy(v) for k, v in s.items()}
                 for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore hyperparameters and buffers saved by ``state_dict`` (same parameter layout);
        floating-point buffers take the dtype of their parameter, as in torch."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(a["params"]) != len(b["params"])
               for a, b in zip(groups, self.param_groups, strict=True)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        by_index = {}
        for saved, group in zip(groups, self.param_groups, strict=True):
            for i, p in zip(saved["params"], group["params"], strict=True):
                by_index[i] = p
            group.update({k: copy.deepcopy(v) for k, v in saved.items() if k != "params"})
        self.state = defaultdict(dict)
        for i, s in state_dict["state"].items():
            p = by_index[int(i)]  # keys may come back as strings from a file
            self.state[p] = {k: _copy(v, p) for k, v in s.items()}

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(g.items()) if k != "params"]
        return "\n".join(lines + [")"])


def pairs(a: np.ndarray) -> np.ndarray:
    """A complex array's memory as (real, imaginary) pairs in a last dim of 2 (a view)."""
    return a[..., None].view(a.real.dtype)


def start_state(state: dict, p: Tensor, *buffers: str) -> None:
    """A parameter's first step: step count 0 and each named buffer zeros shaped like p."""
    state["step"] = 0
    for name in buffers:
        state[name] = make_tensor(np.zeros_like(p._array))


def check_non_negative(**values: float) -> None:
    """torch's argument checks: a negative lr, momentum, eps or weight_decay is an error."""
    spelled = {"lr": "learning rate", "eps": "epsilon value"}  # torch's wording
    for name, value in values.items():
        if value < 0.0:
            raise ValueError(f"Invalid {spelled.get(name, name + ' value')}: {value}")


def check_betas(betas: tuple[float, float]) -> None:
    for i, b in enumerate(betas):
        if not 0.0 <= b < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {b}")


def _copy(v: Any, like: Tensor | None = None) -> Any:
    if not isinstance(v, Tensor):
        return copy.deepcopy(v)
    keep = like is None or v._array.dtype.kind != "f"
    return make_tensor(np.array(v._array, dtype=None if keep else like._array.dtype))


def check_differentiable(differentiable: bool) -> None:
    """torch's ``foreach``, ``fused`` and ``capturable`` pick among implementations of the same
    update, so minigrad's one implementation accepts and ignores them; ``differentiable=True``
    asks for a step recorded by autograd, which minigrad's steps are not."""
    if differentiable:
        raise NotImplementedError("differentiable=True is not supported: minigrad's optimizer "
                                  "steps run under no_grad and are not recorded by autograd")
