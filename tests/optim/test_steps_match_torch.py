"""Every optimizer steps as torch's does, in float64 to 1e-10: each configuration at every
step of one training run, parameter groups with their own options, a group added
mid-training, and 0-d parameters (PyTorch's polynomial tutorial)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import minigrad as mg
import minigrad.optim as optim
from tests.optim.run import STEPS, Run, assert_same

CONFIGS = {
    "SGD": [dict(lr=0.01), dict(lr=0.01, momentum=0.9), dict(lr=0.01, momentum=0.9, dampening=0.3),
            dict(lr=0.01, momentum=0.9, nesterov=True),
            dict(lr=0.01, momentum=0.5, weight_decay=0.1),
            dict(lr=0.01, weight_decay=0.1, maximize=True)],
    "Adam": [dict(lr=0.01), dict(lr=0.05, betas=(0.8, 0.9), eps=1e-6),
             dict(lr=0.01, weight_decay=0.1), dict(lr=0.01, amsgrad=True),
             dict(lr=0.01, weight_decay=0.1, maximize=True),
             dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)],
    "AdamW": [dict(), dict(lr=0.02, weight_decay=0.3, amsgrad=True),
              dict(lr=0.01, weight_decay=0.1, betas=(0.5, 0.8), eps=1e-4, maximize=True),
              dict(lr=0.01, weight_decay=0)],
    "Adamax": [dict(), dict(lr=0.05, betas=(0.5, 0.9), eps=1e-4, weight_decay=0.1),
               dict(lr=0.01, maximize=True)],
    "NAdam": [dict(), dict(lr=0.05, momentum_decay=0.01, weight_decay=0.1),
              dict(lr=0.02, weight_decay=0.2, decoupled_weight_decay=True),
              dict(lr=0.01, betas=(0.8, 0.9), maximize=True)],
    "RAdam": [dict(), dict(lr=0.05, weight_decay=0.1),
              dict(lr=0.02, weight_decay=0.2, decoupled_weight_decay=True),
              dict(lr=0.01, betas=(0.5, 0.6), maximize=True)],  # rho_t > 5 from step 2 on
    "RMSprop": [dict(), dict(lr=0.01, alpha=0.9, eps=1e-6, weight_decay=0.1),
                dict(momentum=0.8), dict(centered=True),
                dict(centered=True, momentum=0.5, weight_decay=0.05, maximize=True)],
    "Adagrad": [dict(), dict(lr=0.1, lr_decay=0.05), dict(weight_decay=0.1, eps=1e-6),
                dict(lr=0.05, initial_accumulator_value=0.3, maximize=True)],
}
CASES = [(name, kw) for name, kws in CONFIGS.items() for kw in kws]


@pytest.fixture
def torch64() -> Iterator[Any]:
    """torch, computing in float64: it keeps NAdam's mu_product in its default float dtype."""
    torch = pytest.importorskip("torch")
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield torch
    finally:
        torch.set_default_dtype(default)


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_every_step_matches_torch(name: str, kw: dict, torch64: Any) -> None:
    ours, theirs = Run(mg, name, None, kw), Run(torch64, name, None, kw)
    start = ours.values()
    for step in range(STEPS):
        assert_same(ours.steps(1).values(), theirs.steps(1).values(), f"step {step}")
    assert not np.allclose(ours.values()[0], start[0])  # the parameters did move
    # the state round-trips; every optimizer but SGD counts its steps
    fresh = getattr(optim, name)(ours.params, **kw)
    fresh.load_state_dict(ours.opt.state_dict())
    counted = {s["step"] for s in fresh.state_dict()["state"].values() if "step" in s}
    assert counted == (set() if name == "SGD" else {STEPS})


GROUPS = [
    ("RMSprop", [dict(params=[0, 1], lr=0.02, centered=True), dict(params=[2], momentum=0.9)],
     dict(lr=0.01, alpha=0.95)),
    ("AdamW", [dict(params=[0], amsgrad=True), dict(params=[1, 2], lr=0.03, weight_decay=0.2)],
     dict(lr=0.01)),
    ("Adagrad", [dict(params=[0, 2], lr_decay=0.1), dict(params=[1], lr=0.2)], dict(lr=0.05)),
    ("SGD", [dict(params=[0], momentum=0.9, nesterov=True), dict(params=[1, 2])], dict(lr=0.01)),
]


@pytest.mark.parametrize("name,groups,kw", GROUPS, ids=[g[0] for g in GROUPS])
def test_param_groups_with_their_own_options_match_torch(name, groups, kw) -> None:
    torch = pytest.importorskip("torch")
    ours, theirs = Run(mg, name, groups, kw), Run(torch, name, groups, kw)
    for o, t in zip(ours.opt.param_groups, theirs.opt.param_groups):
        for key, value in o.items():
            if key != "params":
                assert t[key] == value, key
    assert_same(ours.steps(STEPS).values(), theirs.steps(STEPS).values())


@pytest.mark.parametrize("name", ["RMSprop", "AdamW", "Adagrad"])
def test_add_param_group_mid_training_matches_torch(name) -> None:
    torch = pytest.importorskip("torch")
    runs = [Run(lib, name, [dict(params=[0, 1])], dict(lr=0.02)) for lib in (mg, torch)]
    for r in runs:
        r.steps(3)
        r.opt.add_param_group({"params": r.params[2], "lr": 0.05})
        r.steps(4)
    assert runs[0].opt.param_groups[1]["lr"] == 0.05
    assert_same(runs[0].values(), runs[1].values())


def _polynomial_fit(m, opt_name: str, steps: int, **kw) -> list[float]:
    """y = a + b x + c x^2 + d x^3 fitted to sin(x), with four 0-d parameters."""
    x = m.tensor(np.linspace(-np.pi, np.pi, 50))
    y = x.sin()
    params = [m.tensor(v, dtype=m.float64, requires_grad=True) for v in (0.1, -0.2, 0.3, 0.05)]
    opt = getattr(m.optim, opt_name)(params, **kw)
    for _ in range(steps):
        a, b, c, d = params
        loss = ((a + b * x + c * x ** 2 + d * x ** 3 - y) ** 2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return [float(p.detach().numpy()) for p in params]


ZERO_D_CONFIGS = [("SGD", dict(lr=1e-4)), ("SGD", dict(lr=1e-4, momentum=0.9, nesterov=True)),
                  ("SGD", dict(lr=1e-4, weight_decay=0.1, maximize=False)),
                  ("Adam", dict(lr=1e-2)), ("Adam", dict(lr=1e-2, amsgrad=True, weight_decay=0.1))]


@pytest.mark.parametrize("name,kw", ZERO_D_CONFIGS, ids=str)
def test_optimizers_step_0d_parameters_like_torch(name: str, kw: dict) -> None:
    ours = _polynomial_fit(mg, name, 5, **kw)
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(ours, _polynomial_fit(torch, name, 5, **kw), rtol=1e-10)
