"""lr_scheduler parity with torch: the lr (and cycled momentum) of two parameter groups after
every step, get_last_lr, last_epoch, state_dict resumes, the deprecated step(epoch), errors."""

from __future__ import annotations

import copy
import math
import warnings

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn as nn
import minigrad.optim as optim
from minigrad.optim import lr_scheduler as L

STEPS = 40


def plateau_metric(i: int) -> float:
    return 1.0 / (1 + i % 7)  # improves for a while, then jumps back: the lr gets cut


SCHEDULERS = {
    "LambdaLR": lambda S, o: S.LambdaLR(o, lambda e: 0.9 ** e),
    "LambdaLR-per-group": lambda S, o: S.LambdaLR(o, [lambda e: 1 / (1 + e), lambda e: 0.5]),
    "MultiplicativeLR": lambda S, o: S.MultiplicativeLR(o, lambda e: 0.97),
    "StepLR": lambda S, o: S.StepLR(o, 7, 0.5),
    "MultiStepLR": lambda S, o: S.MultiStepLR(o, [3, 10, 10, 25], 0.3),
    "ConstantLR": lambda S, o: S.ConstantLR(o, 0.25, 6),
    "LinearLR": lambda S, o: S.LinearLR(o, 0.1, 0.9, 12),
    "LinearLR-default": lambda S, o: S.LinearLR(o),
    "ExponentialLR": lambda S, o: S.ExponentialLR(o, 0.93),
    "PolynomialLR": lambda S, o: S.PolynomialLR(o, 15, 2.0),
    "CosineAnnealingLR": lambda S, o: S.CosineAnnealingLR(o, 9, 0.001),
    "ReduceLROnPlateau": lambda S, o: S.ReduceLROnPlateau(o, patience=2, cooldown=1, factor=0.5,
                                                          min_lr=[0.01, 0.001]),
    "ReduceLROnPlateau-max-abs": lambda S, o: S.ReduceLROnPlateau(
        o, mode="max", threshold=0.05, threshold_mode="abs", patience=1),
    "CyclicLR": lambda S, o: S.CyclicLR(o, 0.01, [0.2, 0.1], 5, 3, mode="triangular2"),
    "CyclicLR-exp": lambda S, o: S.CyclicLR(o, 0.01, 0.2, 4, mode="exp_range", gamma=0.97),
    "CyclicLR-fn": lambda S, o: S.CyclicLR(o, 0.01, 0.2, 3, scale_fn=lambda x: 0.8 ** x,
                                           scale_mode="iterations", cycle_momentum=False),
    "CosineAnnealingWarmRestarts": lambda S, o: S.CosineAnnealingWarmRestarts(o, 4, 2, 0.001),
    "CosineAnnealingWarmRestarts-1": lambda S, o: S.CosineAnnealingWarmRestarts(o, 6),
    "OneCycleLR": lambda S, o: S.OneCycleLR(o, [0.5, 0.2], total_steps=STEPS),
    "OneCycleLR-3-linear": lambda S, o: S.OneCycleLR(o, 0.5, epochs=4, steps_per_epoch=10,
                                                     three_phase=True, anneal_strategy="linear"),
    "SequentialLR": lambda S, o: S.SequentialLR(
        o, [S.LinearLR(o, 0.1, total_iters=5), S.CosineAnnealingLR(o, 20), S.StepLR(o, 3)],
        [5, 25]),
    "ChainedScheduler": lambda S, o: S.ChainedScheduler([S.ConstantLR(o, 0.5, 4),
                                                         S.ExponentialLR(o, 0.9)]),
}
MOMENTUM = ("CyclicLR", "OneCycleLR")


def optimizer(lib, opt_name: str = "SGD"):
    params = [lib.nn.Parameter(lib.zeros(2)), lib.nn.Parameter(lib.zeros(2))]
    groups = [{"params": [params[0]], "lr": 0.1}, {"params": [params[1]], "lr": 0.03}]
    if opt_name == "SGD":
        return lib.optim.SGD(groups, momentum=0.9)
    return lib.optim.Adam(groups)


def trace(sched, opt, steps: int, start: int = 0) -> np.ndarray:
    """lr of both groups from get_last_lr() and the groups, and the first group's momentum."""
    rows = []
    for i in range(start, start + steps):
        opt.step()
        if type(sched).__name__ == "ReduceLROnPlateau":
            sched.step(plateau_metric(i))
        else:
            sched.step()
        g = opt.param_groups
        assert list(sched.get_last_lr()) == [g[0]["lr"], g[1]["lr"]]
        momentum = g[0]["momentum"] if "momentum" in g[0] else g[0]["betas"][0]
        rows.append([g[0]["lr"], g[1]["lr"], momentum])
    return np.array(rows)


def both(name: str, opt_name: str = "SGD", steps: int = STEPS):
    torch = pytest.importorskip("torch")
    runs = []
    for lib, S in ((mg, L), (torch, torch.optim.lr_scheduler)):
        opt = optimizer(lib, opt_name)
        sched = SCHEDULERS[name](S, opt)
        runs.append((sched, opt, [opt.param_groups[0]["lr"], opt.param_groups[1]["lr"]]))
    return runs


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_lr_after_every_step_matches_torch(name) -> None:
    (ours, o1, first1), (theirs, o2, first2) = both(name)
    np.testing.assert_allclose(first1, first2, rtol=1e-12)  # the constructor's own step
    a, b = trace(ours, o1, STEPS), trace(theirs, o2, STEPS)
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
    assert len(np.unique(a[:, 0])) > 1  # the schedule did change the lr


@pytest.mark.parametrize("name", [n for n in SCHEDULERS if n.startswith(MOMENTUM)])
def test_momentum_cycling_drives_adams_beta1_like_torch(name) -> None:
    (ours, o1, _), (theirs, o2, _) = both(name, "Adam")
    a, b = trace(ours, o1, STEPS), trace(theirs, o2, STEPS)
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
    if "fn" not in name:
        assert len(np.unique(a[:, 2])) > 2
    assert o1.param_groups[0]["betas"][1] == 0.999


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_state_dict_resume_continues_the_same_schedule(name) -> None:
    opt = optimizer(mg)
    sched = SCHEDULERS[name](L, opt)
    full = trace(sched, opt, 30)

    opt = optimizer(mg)
    sched = SCHEDULERS[name](L, opt)
    trace(sched, opt, 12)
    saved_opt, saved_sched = copy.deepcopy(opt.state_dict()), copy.deepcopy(sched.state_dict())
    assert "optimizer" not in saved_sched

    opt2 = optimizer(mg)
    sched2 = SCHEDULERS[name](L, opt2)  # torch's order: scheduler first, then load both
    opt2.load_state_dict(saved_opt)
    sched2.load_state_dict(saved_sched)
    assert getattr(sched2, "last_epoch", None) == getattr(sched, "last_epoch", None)
    np.testing.assert_array_equal(trace(sched2, opt2, 18, start=12), full[12:])


def test_last_epoch_resumes_from_initial_lr_as_torch() -> None:
    torch = pytest.importorskip("torch")
    results = []
    for lib, S in ((mg, L), (torch, torch.optim.lr_scheduler)):
        opt = optimizer(lib)
        for g in opt.param_groups:
            g["initial_lr"] = g["lr"] * 2
        sched = S.StepLR(opt, step_size=3, gamma=0.5, last_epoch=4)
        assert sched.last_epoch == 5 and sched.base_lrs == [0.2, 0.06]
        results.append(trace(sched, opt, 8))
    np.testing.assert_allclose(*results, rtol=1e-12)
    with pytest.raises(KeyError, match="initial_lr"):
        L.StepLR(optimizer(mg), 3, last_epoch=2)


@pytest.mark.parametrize("make", [
    lambda S, o: S.StepLR(o, 4, 0.5), lambda S, o: S.MultiStepLR(o, [2, 5], 0.5),
    lambda S, o: S.ExponentialLR(o, 0.9), lambda S, o: S.CosineAnnealingLR(o, 10, 0.01),
    lambda S, o: S.LinearLR(o, 0.2, total_iters=6), lambda S, o: S.PolynomialLR(o, 8),
    lambda S, o: S.ConstantLR(o, 0.5, 3), lambda S, o: S.LambdaLR(o, lambda e: 1 / (e + 1)),
    lambda S, o: S.CosineAnnealingWarmRestarts(o, 3, 2)])
def test_deprecated_step_with_epoch_uses_the_closed_form_like_torch(make) -> None:
    torch = pytest.importorskip("torch")
    results, warned = [], []
    for lib, S in ((mg, L), (torch, torch.optim.lr_scheduler)):
        opt = optimizer(lib)
        sched = make(S, opt)
        lrs = []
        fractional = isinstance(sched, S.CosineAnnealingWarmRestarts)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            for epoch in (3, 7, 1, 12, 2.5 if fractional else 9):
                sched.step(epoch)
                lrs.append(sched.get_last_lr())
        results.append(np.array(lrs))
        warned.append(sum("epoch parameter" in str(w.message) for w in seen))
    np.testing.assert_allclose(*results, rtol=1e-12)
    assert warned[0] == warned[1]  # the deprecation warning, where torch gives it


def test_step_lr_by_hand_and_get_lr_warning() -> None:
    opt = optimizer(mg)
    sched = L.StepLR(opt, step_size=2, gamma=0.1)
    lrs = [sched.get_last_lr()[0]]
    for _ in range(5):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    np.testing.assert_allclose(lrs, [0.1, 0.1, 0.01, 0.01, 0.001, 0.001])
    assert opt.param_groups[0]["initial_lr"] == 0.1
    with pytest.warns(UserWarning, match="get_last_lr"):
        sched.get_lr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.step()  # no warning from inside step


def test_cosine_annealing_formula_and_plateau_by_hand() -> None:
    opt = optimizer(mg)
    sched = L.CosineAnnealingLR(opt, T_max=8, eta_min=0.02)
    for t in range(1, 12):
        opt.step()
        sched.step()
        want = 0.02 + (0.1 - 0.02) * (1 + math.cos(math.pi * t / 8)) / 2
        assert sched.get_last_lr()[0] == pytest.approx(want, rel=1e-12)

    opt = optimizer(mg)
    plateau = L.ReduceLROnPlateau(opt, patience=2, factor=0.5)
    for loss in (1.0, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9):
        plateau.step(mg.tensor(loss))  # a 0-d tensor metric works, as in torch
    assert plateau.get_last_lr() == [0.05, 0.015] and plateau.num_bad_epochs == 2


def test_errors_match_torch() -> None:
    opt = optimizer(mg)
    other = optimizer(mg)
    with pytest.raises(TypeError, match="is not an Optimizer"):
        L.StepLR(object(), 3)
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        L.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode max2 is unknown"):
        L.ReduceLROnPlateau(opt, mode="max2")
    with pytest.raises(ValueError, match="expected 2 min_lrs, got 3"):
        L.ReduceLROnPlateau(opt, min_lr=[0, 0, 0])
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        L.LambdaLR(opt, [lambda e: 1.0])
    with pytest.raises(ValueError, match="between 0 and 1"):
        L.ConstantLR(opt, factor=2.0)
    with pytest.raises(ValueError, match="greater than 0"):
        L.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="number of milestones"):
        L.SequentialLR(opt, [L.StepLR(opt, 2), L.StepLR(opt, 3)], milestones=[])
    with pytest.raises(ValueError, match="same optimizer"):
        L.SequentialLR(opt, [L.StepLR(opt, 2), L.StepLR(other, 3)], milestones=[2])
    with pytest.raises(ValueError, match="ReduceLROnPlateau"):
        L.ChainedScheduler([L.ReduceLROnPlateau(opt)])
    with pytest.raises(ValueError, match="either total_steps OR"):
        L.OneCycleLR(opt, 0.1)
    with pytest.raises(ValueError, match="Expected positive integer T_0"):
        L.CosineAnnealingWarmRestarts(opt, 0)
    with pytest.raises(ValueError, match="support momentum"):
        p = nn.Parameter(mg.ones(1))
        L.OneCycleLR(mg.optim.Adagrad([p]), 0.1, total_steps=10)
    one = L.OneCycleLR(optimizer(mg), 0.1, total_steps=2)
    one.step()
    one.step()
    with pytest.raises(ValueError, match="Tried to step 3 times"):
        one.step()


def test_scheduler_works_with_every_optimizer() -> None:
    p = nn.Parameter(mg.ones(2))
    for opt in (mg.optim.RMSprop([p], lr=0.1), mg.optim.AdamW([p], lr=0.1),
                mg.optim.Adagrad([p], lr=0.1)):
        sched = L.ExponentialLR(opt, gamma=0.5)
        (p * p).sum().backward()
        opt.step()
        sched.step()
        assert opt.param_groups[0]["lr"] == 0.05 == sched.get_last_lr()[0]
        opt.zero_grad()


def _scheduled(lib, o, first: str) -> list:
    p = nn.Parameter(mg.zeros(1)) if lib is mg else lib.zeros(1, requires_grad=True)
    opt = o.SGD([p], lr=0.1)
    sched = o.lr_scheduler.StepLR(opt, 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            if first == "scheduler":
                sched.step()
                opt.step()
            else:
                opt.step()
                sched.step()
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def test_scheduler_before_optimizer_warns_once_as_torch() -> None:
    ours = _scheduled(mg, optim, "scheduler")
    assert len(ours) == 1 and ours[0].startswith(
        "Detected call of `lr_scheduler.step()` before `optimizer.step()`")
    assert _scheduled(mg, optim, "optimizer") == []
    torch = pytest.importorskip("torch")
    theirs = _scheduled(torch, torch.optim, "scheduler")
    assert len(theirs) == 1 and theirs[0][:60] == ours[0][:60]
    assert _scheduled(torch, torch.optim, "optimizer") == []
