"""A Lipschitz-bounded MLP: regression with exactly spectral-normalised layers.

Every Linear layer goes through ``nn.utils.spectral_norm``, which divides the weight by
its largest singular value from minigrad's differentiable SVD (not a power-iteration
estimate), and the output is scaled by L = 1. With 1-Lipschitz activations (ReLU) the model
is then L-Lipschitz by construction, at every step of training. The target,
y = tanh(3 x1) cos(x2) plus noise, is steeper than that (slope up to 3), so the bound is
active: the script checks at every few steps that each layer's spectral norm is 1 and that
the largest input-gradient norm stays below L, and shows that the same MLP trained without
spectral norm does exceed L.

    python examples/spectral_norm_regression.py [--fast] [--plot-dir DIR]
"""

from __future__ import annotations

import time

import numpy as np
from _common import parse_args, save_loss_curve

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
import minigrad.optim as optim

LIPSCHITZ = 1.0


class LipschitzMLP(nn.Module):
    """L * f(x), where f is a ReLU MLP whose every weight has spectral norm 1
    (``normalise=False`` gives the same MLP unconstrained, for comparison)."""

    def __init__(self, sizes: list[int], lipschitz: float, normalise: bool = True) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
            layer = nn.Linear(a, b)
            layers.append(nn.utils.spectral_norm(layer) if normalise else layer)
            if i < len(sizes) - 2:
                layers.append(nn.ReLU())
        self.net = nn.Sequential(*layers)
        self.lipschitz = lipschitz

    def forward(self, x: mg.Tensor) -> mg.Tensor:
        return self.net(x) * self.lipschitz


def make_data(n: int, seed: int) -> tuple[mg.Tensor, mg.Tensor]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, (n, 2)).astype(np.float32)
    y = np.tanh(3 * x[:, :1]) * np.cos(x[:, 1:]) + 0.05 * rng.standard_normal((n, 1))
    return mg.tensor(x), mg.tensor(y.astype(np.float32))


def lipschitz_checks(model: LipschitzMLP, x: mg.Tensor) -> tuple[float, float]:
    """(largest layer spectral norm, largest |d model / d x| over the points x)."""
    sigmas = [np.linalg.svd(m.weight.detach().numpy(), compute_uv=False)[0]
              for m in model.modules() if isinstance(m, nn.Linear)]
    return max(sigmas), max_input_gradient(model, x)


def max_input_gradient(model: nn.Module, x: mg.Tensor) -> float:
    x = x.detach().requires_grad_()
    (g,) = mg.autograd.grad(model(x).sum(), [x])
    return float(np.linalg.norm(g.numpy(), axis=1).max())


def train_plain(x: mg.Tensor, y: mg.Tensor, x_test: mg.Tensor, steps: int) -> float:
    """The same MLP without spectral norm: its max |grad_x f| after training."""
    mg.manual_seed(0)
    plain = LipschitzMLP([2, 32, 32, 1], LIPSCHITZ, normalise=False)
    opt = optim.Adam(plain.parameters(), lr=0.03)
    for _ in range(steps):
        opt.zero_grad()
        F.mse_loss(plain(x), y).backward()
        opt.step()
    return max_input_gradient(plain, x_test)


def main(fast: bool = False, plot_dir: str | None = None) -> dict:
    steps = 150 if fast else 600
    mg.manual_seed(0)
    x, y = make_data(256, seed=0)
    x_test, y_test = make_data(512, seed=1)
    model = LipschitzMLP([2, 32, 32, 1], LIPSCHITZ)
    opt = optim.Adam(model.parameters(), lr=0.03)
    print(f"spectral-norm regression: ReLU MLP 2-32-32-1, bound L = {LIPSCHITZ}, {steps} steps")
    losses, worst_sigma, worst_grad = [], 0.0, 0.0
    t0 = time.perf_counter()
    for step in range(steps):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if step % (steps // 10) == 0 or step == steps - 1:
            sigma, grad_norm = lipschitz_checks(model, x_test)
            worst_sigma, worst_grad = max(worst_sigma, sigma), max(worst_grad, grad_norm)
            print(f"  step {step:4d}  mse {loss.item():.4f}  max layer sigma {sigma:.6f}  "
                  f"max |grad_x f| {grad_norm:.3f} <= {LIPSCHITZ:g}")
    with mg.no_grad():
        test_mse = F.mse_loss(model(x_test), y_test).item()
    png = save_loss_curve(losses, plot_dir, "spectral_norm_regression", "train mse")
    if png:
        print(f"  loss curve saved to {png}")
    plain_grad = train_plain(x, y, x_test, steps)
    print(f"  the same MLP without spectral norm reaches max |grad_x f| {plain_grad:.3f}")
    held = worst_grad <= LIPSCHITZ * (1 + 1e-5) and worst_sigma <= 1 + 1e-5
    print(f"spectral_norm_regression: test mse {test_mse:.4f}, max |grad_x f| {worst_grad:.3f} "
          f"<= L = {LIPSCHITZ:g} {'held' if held else 'VIOLATED'} at every check (unconstrained: "
          f"{plain_grad:.2f}), max layer sigma {worst_sigma:.6f} "
          f"({time.perf_counter() - t0:.1f} s)")
    return {"test_mse": test_mse, "max_grad_norm": worst_grad, "max_sigma": worst_sigma,
            "lipschitz": LIPSCHITZ, "held": held, "plain_grad_norm": plain_grad,
            "losses": losses}


if __name__ == "__main__":
    main(**vars(parse_args(__doc__)))
