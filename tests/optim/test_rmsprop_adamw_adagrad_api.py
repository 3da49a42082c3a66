"""optim parity with torch: RMSprop, AdamW and Adagrad step for step (float64, 1e-10), and the
optimizer API that training loops touch: per-group options, add_param_group, named
parameters, state_dict round trips, zero_grad, maximize, argument checks."""

from __future__ import annotations

import copy
import io

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn as nn
import minigrad.optim as optim

STEPS = 8
RTOL, ATOL = 1e-10, 1e-12


def problem(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return dict(w=rng.standard_normal((3, 2)), b=rng.standard_normal(3), v=rng.standard_normal(3),
                x=rng.standard_normal((5, 2)), y=rng.standard_normal((5, 3)))


def loss_of(lib, w, b, v, x, y):
    """Quartic in w and b, and v enters only through a product, so each group sees a
    different, parameter-dependent gradient."""
    return (((x @ w.T + b) * v - y) ** 4).mean()


class Run:
    """The same training run in minigrad or torch: three parameters in two groups."""

    def __init__(self, lib, opt_name: str, groups: list[dict] | None, kw: dict,
                 seed: int = 0) -> None:
        self.lib, self.is_torch = lib, lib.__name__ == "torch"
        d = problem(seed)
        make = ((lambda a: lib.tensor(a, requires_grad=True)) if self.is_torch
                else (lambda a: nn.Parameter(mg.tensor(a))))
        self.params = [make(d[k]) for k in ("w", "b", "v")]
        self.x, self.y = lib.tensor(d["x"]), lib.tensor(d["y"])
        if groups is None:
            spec = self.params
        else:
            spec = [dict(g, params=[self.params[i] for i in g["params"]]) for g in groups]
        self.opt = getattr(lib.optim, opt_name)(spec, **kw)

    def steps(self, n: int) -> Run:
        for _ in range(n):
            self.opt.zero_grad()
            loss_of(self.lib, *self.params, self.x, self.y).backward()
            self.opt.step()
        return self

    def values(self) -> list[np.ndarray]:
        return [p.detach().numpy().copy() for p in self.params]


def assert_same(a: list[np.ndarray], b: list[np.ndarray]) -> None:
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=RTOL, atol=ATOL)


CONFIGS = {
    "RMSprop": [dict(), dict(lr=0.01, alpha=0.9, eps=1e-6, weight_decay=0.1),
                dict(momentum=0.8), dict(centered=True),
                dict(centered=True, momentum=0.5, weight_decay=0.05, maximize=True)],
    "AdamW": [dict(), dict(lr=0.02, weight_decay=0.3, amsgrad=True),
              dict(lr=0.01, weight_decay=0.1, betas=(0.5, 0.8), eps=1e-4, maximize=True),
              dict(lr=0.01, weight_decay=0)],
    "Adagrad": [dict(), dict(lr=0.1, lr_decay=0.05), dict(weight_decay=0.1, eps=1e-6),
                dict(lr=0.05, initial_accumulator_value=0.3, maximize=True)],
    "Adam": [dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)],
}
CASES = [(name, kw) for name, kws in CONFIGS.items() for kw in kws]


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_steps_match_torch(name, kw) -> None:
    torch = pytest.importorskip("torch")
    start = Run(mg, name, None, kw).values()
    ours, theirs = Run(mg, name, None, kw).steps(STEPS), Run(torch, name, None, kw).steps(STEPS)
    assert_same(ours.values(), theirs.values())
    assert not np.allclose(ours.values()[0], start[0])  # the parameters did move


def test_rmsprop_step_by_hand() -> None:
    """Two centered, momentum steps written out with numpy (no torch needed)."""
    p = nn.Parameter(mg.tensor([1.0, -2.0], dtype=mg.float64))
    opt = optim.RMSprop([p], lr=0.1, alpha=0.9, eps=1e-8, momentum=0.5, centered=True)
    x, sq, avg, buf = np.array([1.0, -2.0]), 0.0, 0.0, 0.0
    for _ in range(2):
        opt.zero_grad()
        (p ** 3).sum().backward()
        g = 3 * x ** 2
        sq = 0.9 * sq + 0.1 * g * g
        avg = 0.9 * avg + 0.1 * g
        buf = 0.5 * buf + g / (np.sqrt(sq - avg * avg) + 1e-8)
        x = x - 0.1 * buf
        opt.step()
        np.testing.assert_allclose(p.detach().numpy(), x, rtol=1e-14)


def test_adagrad_and_adamw_steps_by_hand() -> None:
    p = nn.Parameter(mg.tensor([0.5, 2.0], dtype=mg.float64))
    opt = optim.Adagrad([p], lr=0.1, lr_decay=0.5, initial_accumulator_value=0.2)
    x, s = np.array([0.5, 2.0]), 0.2
    for t in (1, 2, 3):
        opt.zero_grad()
        (p ** 2).sum().backward()
        s = s + (2 * x) ** 2
        x = x - 0.1 / (1 + (t - 1) * 0.5) * 2 * x / (np.sqrt(s) + 1e-10)
        opt.step()
    np.testing.assert_allclose(p.detach().numpy(), x, rtol=1e-14)

    # AdamW's decay does not enter the moments: with a zero gradient only the decay acts.
    q = nn.Parameter(mg.tensor([1.0, -3.0], dtype=mg.float64))
    adamw = optim.AdamW([q], lr=0.1, weight_decay=0.5)
    q.grad = mg.zeros(2, dtype=mg.float64)
    adamw.step()
    np.testing.assert_allclose(q.detach().numpy(), np.array([1.0, -3.0]) * (1 - 0.1 * 0.5))


def test_adamw_default_weight_decay_is_torchs() -> None:
    p = nn.Parameter(mg.ones(2))
    assert optim.AdamW([p]).param_groups[0]["weight_decay"] == 1e-2
    assert optim.Adam([p]).param_groups[0]["weight_decay"] == 0


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


def test_named_parameters_are_accepted_and_their_names_saved() -> None:
    torch = pytest.importorskip("torch")
    net, tnet = nn.Linear(2, 3), torch.nn.Linear(2, 3)
    ours = optim.AdamW(net.named_parameters(), lr=0.1)
    theirs = torch.optim.AdamW(tnet.named_parameters(), lr=0.1)
    assert ours.param_groups[0]["param_names"] == ["weight", "bias"]
    assert (ours.state_dict()["param_groups"][0]["param_names"]
            == theirs.state_dict()["param_groups"][0]["param_names"])
    assert ours.param_groups[0]["params"][0] is net.weight
    with pytest.raises(ValueError, match="with/without names"):
        optim.SGD([("w", net.weight), net.bias])
    with pytest.raises(ValueError, match="with/without names"):
        ours.add_param_group({"params": [nn.Parameter(mg.ones(1))]})


@pytest.mark.parametrize("name,kw", [("RMSprop", dict(momentum=0.9, centered=True)),
                                     ("AdamW", dict(amsgrad=True)),
                                     ("Adagrad", dict(lr_decay=0.1)),
                                     ("SGD", dict(lr=0.01, momentum=0.9))])
def test_state_dict_round_trip_resumes_exactly(name, kw) -> None:
    full = Run(mg, name, None, kw).steps(6)
    first = Run(mg, name, None, kw).steps(3)
    saved = copy.deepcopy(first.opt.state_dict())
    first.steps(1)  # the saved copy must not see later steps
    resumed, done = Run(mg, name, None, kw), Run(mg, name, None, kw).steps(3)
    with mg.no_grad():
        for p, q in zip(resumed.params, done.params):
            p.copy_(q.detach())
    resumed.opt.load_state_dict(saved)
    owned = [v for s in resumed.opt.state.values() for v in s.values() if isinstance(v, mg.Tensor)]
    given = [v for s in saved["state"].values() for v in s.values() if isinstance(v, mg.Tensor)]
    assert owned and not {id(v) for v in owned} & {id(v) for v in given}  # loading copies
    resumed.steps(3)
    for a, b in zip(full.values(), resumed.values()):
        np.testing.assert_array_equal(a, b)


def test_state_dict_layout_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    groups = [dict(params=[0, 1], centered=True), dict(params=[2], momentum=0.9)]
    ours = Run(mg, "RMSprop", groups, dict(lr=0.01)).steps(2).opt.state_dict()
    theirs = Run(torch, "RMSprop", groups, dict(lr=0.01)).steps(2).opt.state_dict()
    assert sorted(ours["state"]) == sorted(theirs["state"]) == [0, 1, 2]
    for i in ours["state"]:
        assert sorted(ours["state"][i]) == sorted(theirs["state"][i])
        assert ours["state"][i]["step"] == float(theirs["state"][i]["step"]) == 2
        for key, value in ours["state"][i].items():
            if key != "step":
                np.testing.assert_allclose(value.numpy(), theirs["state"][i][key].numpy(),
                                           rtol=RTOL, atol=ATOL)
    assert [g["params"] for g in ours["param_groups"]] == [[0, 1], [2]]
    for o, t in zip(ours["param_groups"], theirs["param_groups"]):
        assert all(t[k] == v for k, v in o.items())


def test_adagrad_state_exists_before_the_first_step_as_in_torch() -> None:
    p = nn.Parameter(mg.ones(2, 2))
    state = optim.Adagrad([p], initial_accumulator_value=0.5).state_dict()["state"]
    assert state[0]["step"] == 0
    np.testing.assert_array_equal(state[0]["sum"].numpy(), np.full((2, 2), 0.5, np.float32))


def test_load_state_dict_checks_layout_and_casts_buffers_like_torch() -> None:
    a, b = nn.Parameter(mg.ones(2)), nn.Parameter(mg.ones(3))
    opt = optim.Adam([a, b], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt.load_state_dict({"state": {}, "param_groups": [{"params": [0]}, {"params": [1]}]})
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        opt.load_state_dict({"state": {}, "param_groups": [{"params": [0]}]})
    # A float64 checkpoint loaded into float32 parameters; string keys as a file may give.
    saved = {"state": {"1": {"step": 1, "exp_avg": mg.ones(3, dtype=mg.float64),
                             "exp_avg_sq": mg.ones(3, dtype=mg.float64)}},
             "param_groups": [dict(opt.state_dict()["param_groups"][0], lr=0.5)]}
    opt.load_state_dict(saved)
    assert opt.param_groups[0]["lr"] == 0.5 and opt.param_groups[0]["params"] == [a, b]
    assert opt.state[b]["exp_avg"].dtype == mg.float32 and opt.state[b]["step"] == 1


def _saves_nested_dicts() -> bool:
    """Whether mg.save/mg.load round-trip a nested dict (another change of issue 13 adds it)."""
    buf = io.BytesIO()
    try:
        mg.save({"state": {0: {"step": 1}}, "groups": [{"lr": 0.1}]}, buf)
        buf.seek(0)
        back = mg.load(buf)
        return back["state"][0]["step"] == 1 and back["groups"][0]["lr"] == 0.1
    except (TypeError, ValueError, KeyError):
        return False


@pytest.mark.skipif(not _saves_nested_dicts(), reason="mg.save does not store nested dicts yet")
def test_state_dict_through_mg_save_and_load() -> None:
    groups = [dict(params=[0, 1]), dict(params=[2], lr=0.1)]
    run = Run(mg, "AdamW", groups, dict(amsgrad=True)).steps(2)
    buf = io.BytesIO()
    mg.save(run.opt.state_dict(), buf)
    buf.seek(0)
    other = Run(mg, "AdamW", groups, dict(amsgrad=True))
    other.opt.load_state_dict(mg.load(buf))
    assert other.opt.param_groups[1]["lr"] == 0.1
    assert tuple(other.opt.param_groups[0]["betas"]) == (0.9, 0.999)
    for p, q in zip(run.params, other.params):
        for k, v in run.opt.state[p].items():
            w = other.opt.state[q][k]
            assert (v == w) if k == "step" else np.array_equal(v.numpy(), w.numpy())


@pytest.mark.parametrize("opt_cls", [optim.RMSprop, optim.AdamW, optim.Adagrad])
def test_zero_grad_sets_to_none_by_default_or_zeros(opt_cls) -> None:
    p = nn.Parameter(mg.ones(3))
    opt = opt_cls([p])
    (p * p).sum().backward()
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(p.grad.numpy(), np.zeros(3))
    (p * p).sum().backward()
    opt.zero_grad()
    assert p.grad is None
    before = p.detach().numpy().copy()
    opt.step()  # no gradient: nothing moves, no state is made
    np.testing.assert_array_equal(p.detach().numpy(), before)


@pytest.mark.parametrize("opt_cls", [optim.RMSprop, optim.AdamW, optim.Adagrad])
def test_maximize_climbs(opt_cls) -> None:
    p = nn.Parameter(mg.tensor([0.3], dtype=mg.float64))
    opt = opt_cls([p], lr=0.05, maximize=True)
    for _ in range(5):
        opt.zero_grad()
        (-(p - 1.0) ** 2).sum().backward()  # maximum at 1
        opt.step()
    assert 0.3 < p.item() < 1.3


def test_argument_checks_match_torch() -> None:
    torch = pytest.importorskip("torch")
    p, tp = nn.Parameter(mg.ones(1)), torch.nn.Parameter(torch.ones(1))
    cases = [("RMSprop", dict(lr=-1)), ("RMSprop", dict(alpha=-0.1)),
             ("RMSprop", dict(momentum=-1)), ("RMSprop", dict(eps=-1)),
             ("RMSprop", dict(weight_decay=-1)), ("AdamW", dict(betas=(1.0, 0.9))),
             ("AdamW", dict(betas=(0.9, -0.1))), ("AdamW", dict(weight_decay=-1)),
             ("Adagrad", dict(lr_decay=-1)), ("Adagrad", dict(initial_accumulator_value=-1)),
             ("Adagrad", dict(eps=-1))]
    for name, kw in cases:
        with pytest.raises(ValueError) as theirs:
            getattr(torch.optim, name)([tp], **kw)
        with pytest.raises(ValueError, match=str(theirs.value).replace("(", r"\(")
                           .replace(")", r"\)")):
            getattr(optim, name)([p], **kw)
    with pytest.raises(TypeError, match="one of the params is int"):
        optim.RMSprop([p, 3])
    with pytest.raises(TypeError, match="ordered collections"):
        optim.AdamW([{"params": {p}}])


def test_performance_flags_are_accepted_and_differentiable_refused() -> None:
    p = nn.Parameter(mg.ones(2))
    optim.AdamW([p], foreach=True, fused=False, capturable=False)
    optim.RMSprop([p], foreach=False, capturable=True)
    optim.Adagrad([p], fused=True)
    for opt_cls in (optim.AdamW, optim.RMSprop, optim.Adagrad, optim.SGD, optim.Adam):
        with pytest.raises(NotImplementedError, match="differentiable"):
            opt_cls([p], differentiable=True)


def test_centered_rmsprop_never_takes_the_root_of_a_negative() -> None:
    """With equal gradients v and m^2 agree in exact arithmetic; rounding must not give NaN."""
    p = nn.Parameter(mg.full((64,), 0.1, dtype=mg.float64))
    opt = optim.RMSprop([p], lr=1e-3, alpha=0.5, centered=True)
    for _ in range(60):
        p.grad = mg.full((64,), 0.7, dtype=mg.float64)
        opt.step()
    assert np.isfinite(p.detach().numpy()).all()
