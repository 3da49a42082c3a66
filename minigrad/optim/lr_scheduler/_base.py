"""The scheduler base class (last_epoch, the chainable step, state_dict) and the schedules
that apply a user's function of the epoch."""

from __future__ import annotations

import types
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from ..optimizer import Optimizer

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated "
    "where possible. Please use `scheduler.step()` to step the scheduler. During the "
    "deprecation, if epoch is different from None, the closed form is used instead of the new "
    "chainable form, where available."
)


ORDER_WARNING = (
    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. Since PyTorch 1.1.0 "
    "the optimizer steps first: call `optimizer.step()` and then `lr_scheduler.step()`, or "
    "the first value of the learning-rate schedule is skipped."
)


def check_optimizer(optimizer: Any) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


def per_group(name: str, optimizer: Optimizer, value: Any) -> list:
    """One value per parameter group: a list/tuple must have one entry per group."""
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. "
                             f"{name} has {len(value)} values, param_groups has {n}.")
        return list(value)
    return [value] * n


class LRScheduler:
    """Base class: subclasses give ``get_lr()`` (the chainable rule) and optionally
    ``_get_closed_form_lr()`` (the lr as a function of ``last_epoch``).

    >>> opt = mg.optim.SGD([nn.Parameter(mg.zeros(1))], lr=0.1)
    >>> sched = mg.optim.lr_scheduler.StepLR(opt, step_size=2)
    >>> for epoch in range(4):
    ...     opt.step()  # after the epoch's training steps
    ...     sched.step()
    >>> [round(lr, 6) for lr in sched.get_last_lr()]
    [0.001]
    """

    _in_step = False  # get_lr() called by a user outside step() gets torch's warning
    _is_initial = False  # the step the constructor takes

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] "
                                   "when resuming scheduler with last_epoch >= 0; load the "
                                   "optimizer's state_dict first, or use last_epoch=-1")
        self.base_lrs: list[float] = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        """The next lr of each group (called by ``step``; to read the lr use ``get_last_lr``)."""
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The lr of each parameter group as this scheduler last set it."""
        return self._last_lr

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (or, deprecated, jump to ``epoch``) and write the new lrs."""
        self._warn_if_before_optimizer()
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _warn_if_before_optimizer(self) -> None:
        """torch's order check, on the first step after construction: a scheduler stepped
        before its optimizer ever was skips the schedule's first value."""
        if self._step_count == 1 and not self._is_initial and not getattr(
                self.optimizer, "_opt_called", True):
            warnings.warn(ORDER_WARNING, UserWarning, stacklevel=3)

    def _update_lr(self, epoch: int | None = None) -> None:
        self._in_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed = getattr(self, "_get_closed_form_lr", None)
                values = closed() if closed is not None else self.get_lr()
        finally:
            self._in_step = False
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            group["lr"] = lr
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def _warn_if_called_directly(self) -> None:
        if not self._in_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning, stacklevel=3)

    def _lrs(self) -> list[float]:
        return [g["lr"] for g in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        """Everything but the optimizer (load it with ``load_state_dict``)."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)


_LRScheduler = LRScheduler  # the name torch < 2.0 used


class _LambdaScheduler(LRScheduler):
    """Shared by LambdaLR and MultiplicativeLR: one function of the epoch per group. Plain
    functions are not saved by state_dict (as in torch); callable objects save their __dict__."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable | Sequence[Callable],
                 last_epoch: int = -1) -> None:
        check_optimizer(optimizer)
        n = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != n:
                raise ValueError(f"Expected {n} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * n
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                               for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        saved = state.pop("lr_lambdas")
        self.__dict__.update(state)
        for fn, attrs in zip(self.lr_lambdas, saved, strict=True):
            if attrs is not None:
                fn.__dict__.update(attrs)


class LambdaLR(_LambdaScheduler):
    """lr = initial_lr * lr_lambda(epoch).

    >>> opt = mg.optim.SGD([nn.Parameter(mg.zeros(1))], lr=0.1)
    >>> sched = LambdaLR(opt, lambda epoch: 0.5 ** epoch); opt.step(); sched.step()
    >>> sched.get_last_lr()
    [0.05]
    """

    def get_lr(self) -> list[float]:
        self._warn_if_called_directly()
        return [base * fn(self.last_epoch)
                for fn, base in zip(self.lr_lambdas, self.base_lrs, strict=True)]


class MultiplicativeLR(_LambdaScheduler):
    """lr <- lr * lr_lambda(epoch) at every step after the first."""

    def get_lr(self) -> list[float]:
        self._warn_if_called_directly()
        if self._is_initial:
            return self._lrs()
        return [g["lr"] * fn(self.last_epoch)
                for fn, g in zip(self.lr_lambdas, self.optimizer.param_groups, strict=True)]
