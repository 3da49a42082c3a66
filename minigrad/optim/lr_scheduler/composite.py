"""Schedulers made of other schedulers: one after another (SequentialLR) or all at once
(ChainedScheduler)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

from ..optimizer import Optimizer
from ._base import LRScheduler
from .plateau import ReduceLROnPlateau


def _check_children(owner: str, optimizer: Optimizer, schedulers: Sequence[Any]) -> None:
    if len(schedulers) < 1:
        raise ValueError(f"{owner} expects at least one scheduler, but got no scheduler.")
    for i, s in enumerate(schedulers):
        if not hasattr(s, "optimizer"):
            raise TypeError(f"{owner} at index {i} should have `optimizer` as its attribute.")
        if isinstance(s, ReduceLROnPlateau):
            raise ValueError(f"{owner} does not support `ReduceLROnPlateau` scheduler as it "
                             "requires additional kwargs to be specified when calling `step`, "
                             f"but got one at index {i} in the given schedulers sequence.")
        if s.optimizer is not optimizer:
            raise ValueError(f"{owner} expects all schedulers to belong to the same optimizer, "
                             f"but got scheduler {type(s).__name__} at index {i} with another "
                             "optimizer.")


class _Composite(LRScheduler):
    """state_dict of a scheduler made of schedulers: each child saves its own state."""

    _schedulers: list[LRScheduler]

    def state_dict(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        children = state.pop("_schedulers")
        self.__dict__.update(state)
        for s, child in zip(self._schedulers, children, strict=True):
            s.load_state_dict(child)


class SequentialLR(_Composite):
    """Run ``schedulers[i]`` between ``milestones[i - 1]`` and ``milestones[i]``; each starts
    afresh (from initial_lr) at its milestone.

    >>> opt = mg.optim.SGD([nn.Parameter(mg.zeros(1))], lr=0.1)
    >>> from minigrad.optim.lr_scheduler import LinearLR, StepLR
    >>> warm = LinearLR(opt, start_factor=0.5, total_iters=2)
    >>> sched = SequentialLR(opt, [warm, StepLR(opt, step_size=1, gamma=0.5)], milestones=[2])
    >>> lrs = []
    >>> for epoch in range(4):
    ...     opt.step(); sched.step(); lrs.append(round(sched.get_last_lr()[0], 6))
    >>> lrs  # warm-up to 0.1, then halving from the initial lr
    [0.075, 0.1, 0.05, 0.025]
    """

    def __init__(self, optimizer: Optimizer, schedulers: list[LRScheduler],
                 milestones: list[int], last_epoch: int = -1) -> None:
        _check_children(type(self).__name__, optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to be "
                             "one more than the number of milestone points, but got number of "
                             f"schedulers {len(schedulers)} and the number of milestones to be "
                             f"equal to {len(milestones)}")
        self._schedulers, self._milestones = list(schedulers), list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # The children's constructors each took a step; undo them and start the first one.
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        self._undo_steps(self)
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    @classmethod
    def _undo_steps(cls, sched: Any) -> None:
        if hasattr(sched, "_schedulers"):
            for s in sched._schedulers:
                cls._undo_steps(s)
        elif hasattr(sched, "last_epoch"):
            sched.last_epoch -= 1

    def step(self) -> None:  # type: ignore[override]
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        sched = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            sched._update_lr(0)  # restart it at its own epoch 0 (closed form)
        else:
            sched.step()
        self._last_lr = sched.get_last_lr()


class ChainedScheduler(_Composite):
    """Step every scheduler in turn at each step, so their (chainable) factors multiply."""

    def __init__(self, schedulers: Sequence[LRScheduler],
                 optimizer: Optimizer | None = None) -> None:
        optimizer = optimizer or (schedulers[0].optimizer if schedulers else None)
        _check_children(type(self).__name__, optimizer, schedulers)  # type: ignore[arg-type]
        self._schedulers = list(schedulers)
        self.optimizer = optimizer  # type: ignore[assignment]
        self._last_lr = self._lrs()

    def step(self) -> None:  # type: ignore[override]
        for s in self._schedulers:
            s.step()
        self._last_lr = self._lrs()
