"""optim: SGD and Adam update rules (against hand-computed steps and torch), in-place updates
under no_grad, parameter groups, zero_grad, state dicts, closures, and a real fit."""

from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
import minigrad.optim as optim


def quad_problem(seed: int = 0):
    """Parameters and a loss with a non-trivial, parameter-dependent gradient."""
    rng = np.random.default_rng(seed)
    w0, b0 = rng.standard_normal((3, 2)), rng.standard_normal(3)
    x, y = rng.standard_normal((5, 2)), rng.standard_normal((5, 3))
    return w0, b0, x, y


def run_minigrad(opt_cls, steps: int, **kw) -> list[np.ndarray]:
    w0, b0, x, y = quad_problem()
    w, b = nn.Parameter(mg.tensor(w0)), nn.Parameter(mg.tensor(b0))
    opt = opt_cls([w, b], **kw)
    xt, yt = mg.tensor(x), mg.tensor(y)
    for _ in range(steps):
        opt.zero_grad()
        (((xt @ w.T + b) - yt) ** 4).mean().backward()
        opt.step()
    return [w.detach().numpy(), b.detach().numpy()]


def run_torch(torch, opt_cls, steps: int, **kw) -> list[np.ndarray]:
    w0, b0, x, y = quad_problem()
    w = torch.tensor(w0, requires_grad=True)
    b = torch.tensor(b0, requires_grad=True)
    opt = opt_cls([w, b], **kw)
    xt, yt = torch.tensor(x), torch.tensor(y)
    for _ in range(steps):
        opt.zero_grad()
        (((xt @ w.T + b) - yt) ** 4).mean().backward()
        opt.step()
    return [w.detach().numpy(), b.detach().numpy()]


SGD_CONFIGS = [
    dict(lr=0.01),
    dict(lr=0.01, momentum=0.9),
    dict(lr=0.01, momentum=0.9, dampening=0.3),
    dict(lr=0.01, momentum=0.9, nesterov=True),
    dict(lr=0.01, momentum=0.5, weight_decay=0.1),
    dict(lr=0.01, weight_decay=0.1, maximize=True),
]
ADAM_CONFIGS = [
    dict(lr=0.01),
    dict(lr=0.05, betas=(0.8, 0.9), eps=1e-6),
    dict(lr=0.01, weight_decay=0.1),
    dict(lr=0.01, amsgrad=True),
    dict(lr=0.01, weight_decay=0.1, maximize=True),
]


# ---- update rules ---------------------------------------------------------------------------
def test_sgd_steps_follow_the_formula() -> None:
    p = nn.Parameter(mg.tensor([1.0, -2.0], dtype=mg.float64))
    opt = optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.5)
    grads = [np.array([1.0, 1.0]), np.array([0.5, -1.0])]
    expected, buf = np.array([1.0, -2.0]), None
    for g in grads:
        p.grad = mg.tensor(g)
        opt.step()
        d = g + 0.5 * expected
        buf = d.copy() if buf is None else 0.9 * buf + d
        expected = expected - 0.1 * buf
        np.testing.assert_allclose(p.detach().numpy(), expected, rtol=1e-14)


def test_adam_steps_follow_the_formula() -> None:
    p = nn.Parameter(mg.tensor([1.0, -2.0, 3.0], dtype=mg.float64))
    opt = optim.Adam([p], lr=0.1, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.2)
    m = v = np.zeros(3)
    expected = np.array([1.0, -2.0, 3.0])
    for t, g in enumerate([np.array([1.0, -1.0, 0.0]), np.array([0.3, 2.0, -1.0])], start=1):
        p.grad = mg.tensor(g)
        opt.step()
        d = g + 0.2 * expected
        m, v = 0.9 * m + 0.1 * d, 0.99 * v + 0.01 * d * d
        expected = expected - 0.1 * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.99 ** t)) + 1e-8)
        np.testing.assert_allclose(p.detach().numpy(), expected, rtol=1e-12)
    assert opt.state[p]["step"] == 2


@pytest.mark.parametrize("kw", SGD_CONFIGS, ids=str)
def test_sgd_matches_torch(kw) -> None:
    torch = pytest.importorskip("torch")
    for ours, ref in zip(run_minigrad(optim.SGD, 6, **kw),
                         run_torch(torch, torch.optim.SGD, 6, **kw), strict=True):
        np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kw", ADAM_CONFIGS, ids=str)
def test_adam_matches_torch(kw) -> None:
    torch = pytest.importorskip("torch")
    for ours, ref in zip(run_minigrad(optim.Adam, 6, **kw),
                         run_torch(torch, torch.optim.Adam, 6, **kw), strict=True):
        np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-12)


def test_invalid_hyperparameters_are_rejected() -> None:
    p = [nn.Parameter(mg.zeros(1))]
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD(p, lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.1, nesterov=True)
    with pytest.raises(ValueError, match="learning rate"):
        optim.SGD(p, lr=-1.0)
    with pytest.raises(ValueError, match="beta"):
        optim.Adam(p, betas=(1.0, 0.9))
    with pytest.raises(ValueError, match="empty"):
        optim.Adam([])
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([p[0] * 2], lr=0.1)
    with pytest.raises(ValueError, match="more than one"):
        optim.SGD([{"params": p}, {"params": p}], lr=0.1)


# ---- in place, under no_grad ----------------------------------------------------------------
@pytest.mark.parametrize("opt_cls", [optim.SGD, optim.Adam])
def test_step_updates_in_place_without_recording(opt_cls) -> None:
    p = nn.Parameter(mg.tensor([1.0, 2.0]))
    data, version = p._array, p._version
    p.grad = mg.tensor([1.0, 1.0])
    opt_cls([p], lr=0.1).step()
    assert p._array is data and p._version > version  # same memory, version bumped
    assert p.is_leaf and p.grad_fn is None and p.requires_grad
    assert p.detach().numpy()[0] < 1.0


def test_a_graph_that_saved_a_parameter_notices_the_step() -> None:
    p = nn.Parameter(mg.tensor([1.0, 2.0]))
    loss = (p * p).sum()  # saves p for backward
    p.grad = mg.tensor([1.0, 1.0])
    optim.SGD([p], lr=0.1).step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_parameters_without_grad_are_skipped_and_zero_grad() -> None:
    a, b = nn.Parameter(mg.ones(2)), nn.Parameter(mg.ones(2))
    opt = optim.SGD([a, b], lr=1.0)
    a.grad = mg.ones(2)
    opt.step()
    np.testing.assert_array_equal(b.detach().numpy(), [1, 1])
    np.testing.assert_array_equal(a.detach().numpy(), [0, 0])
    opt.zero_grad(set_to_none=False)
    assert a.grad is not None and not a.grad.numpy().any()
    opt.zero_grad()
    assert a.grad is None


def test_param_groups_have_their_own_options() -> None:
    a, b = nn.Parameter(mg.ones(1)), nn.Parameter(mg.ones(1))
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1, momentum=0.9)
    assert opt.param_groups[1]["momentum"] == 0.9 and opt.param_groups[1]["lr"] == 0.5
    a.grad, b.grad = mg.ones(1), mg.ones(1)
    opt.step()
    assert a.detach().item() == pytest.approx(0.9) and b.detach().item() == pytest.approx(0.5)


def test_closure_is_called_with_grad_enabled_and_returned() -> None:
    p = nn.Parameter(mg.tensor([3.0]))
    opt = optim.SGD([p], lr=0.1)

    def closure() -> mg.Tensor:
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with mg.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 9.0 and p.detach().item() == pytest.approx(3.0 - 0.1 * 6.0)


def test_optimizer_state_dict_roundtrip_resumes_identically() -> None:
    def make():
        p = nn.Parameter(mg.tensor([1.0, -1.0], dtype=mg.float64))
        return p, optim.Adam([p], lr=0.1)

    def steps(p, opt, n):
        for _ in range(n):
            opt.zero_grad()
            ((p - 3) ** 2).sum().backward()
            opt.step()

    p1, o1 = make()
    steps(p1, o1, 3)
    p2, o2 = make()
    with mg.no_grad():
        p2.copy_(p1.detach())
    o2.load_state_dict(o1.state_dict())
    steps(p1, o1, 2)
    steps(p2, o2, 2)
    np.testing.assert_array_equal(p1.detach().numpy(), p2.detach().numpy())


# ---- training ---------------------------------------------------------------------------------
@pytest.mark.parametrize("opt_cls,kw", [(optim.SGD, dict(lr=0.5, momentum=0.9)),
                                        (optim.Adam, dict(lr=0.05))])
def test_an_mlp_learns_xor(opt_cls, kw) -> None:
    mg.manual_seed(0)
    x = mg.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    y = mg.tensor([0, 1, 1, 0])
    net = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2))
    opt = opt_cls(net.parameters(), **kw)
    for _ in range(200):
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
    assert loss.item() < 0.05
    np.testing.assert_array_equal(net(x).detach().numpy().argmax(1), [0, 1, 1, 0])


# ---- issue 9: 0-d parameters (PyTorch's polynomial tutorial) --------------------------------
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


def test_every_optimizer_keeps_a_0d_parameter_a_0d_array() -> None:
    classes = [c for c in vars(optim).values()
               if isinstance(c, type) and issubclass(c, optim.Optimizer) and c is not
               optim.Optimizer]
    assert classes
    for cls in classes:
        p = nn.Parameter(mg.tensor(2.0))
        opt = cls([p], lr=0.1)
        def closure(p=p, opt=opt):
            opt.zero_grad()
            loss = p * p
            loss.backward()
            return loss

        for _ in range(2):
            closure()
            opt.step(closure)  # LBFGS needs the closure; the others call it once more
        assert type(p._array) is np.ndarray and p.shape == () and p.item() < 2.0, cls.__name__
