"""The update rules written out with numpy (no torch needed): SGD, Adam, RMSprop, Adagrad and
AdamW step by hand; maximize climbs, centered RMSprop stays finite, 0-d parameters stay
0-d, and an MLP learns XOR."""

from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
import minigrad.optim as optim


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


def test_centered_rmsprop_never_takes_the_root_of_a_negative() -> None:
    """With equal gradients v and m^2 agree in exact arithmetic; rounding must not give NaN."""
    p = nn.Parameter(mg.full((64,), 0.1, dtype=mg.float64))
    opt = optim.RMSprop([p], lr=1e-3, alpha=0.5, centered=True)
    for _ in range(60):
        p.grad = mg.full((64,), 0.7, dtype=mg.float64)
        opt.step()
    assert np.isfinite(p.detach().numpy()).all()


@pytest.mark.parametrize("opt_cls", [optim.RMSprop, optim.AdamW, optim.Adagrad])
def test_maximize_climbs(opt_cls) -> None:
    p = nn.Parameter(mg.tensor([0.3], dtype=mg.float64))
    opt = opt_cls([p], lr=0.05, maximize=True)
    for _ in range(5):
        opt.zero_grad()
        (-(p - 1.0) ** 2).sum().backward()  # maximum at 1
        opt.step()
    assert 0.3 < p.item() < 1.3


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
