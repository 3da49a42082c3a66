"""Complex parameters (issue 27) step as torch steps them: as (real, imaginary) pairs, so
Adam's second moment is per part, never a complex square."""

from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg

OPTIMIZERS = {
    "SGD": {"lr": 0.1, "momentum": 0.9}, "Adam": {"lr": 0.05}, "AdamW": {"lr": 0.05},
    "RMSprop": {"lr": 0.01}, "Adagrad": {"lr": 0.1}, "Adamax": {"lr": 0.05},
    "NAdam": {"lr": 0.05}, "RAdam": {"lr": 0.05},
}


def _steps(lib, name: str, p0: np.ndarray, target: np.ndarray) -> np.ndarray:
    p = lib.tensor(p0, requires_grad=True)
    opt = getattr(lib.optim, name)([p], **OPTIMIZERS[name])
    for _ in range(4):
        opt.zero_grad()
        loss = ((p - lib.tensor(target)).abs() ** 2).sum() + (p * p).real.sum()
        loss.backward()
        opt.step()
    return p.detach().numpy()


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_complex_parameters_step_as_torchs(name: str) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    p0 = rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))
    target = rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # torch keeps some constants in its default float
    try:
        theirs = _steps(torch, name, p0, target)
    finally:
        torch.set_default_dtype(default)
    np.testing.assert_allclose(_steps(mg, name, p0, target), theirs, rtol=1e-10, atol=1e-12)


def _lbfgs(lib, p0: np.ndarray, target: np.ndarray, line_search: str | None) -> np.ndarray:
    p = lib.tensor(p0, requires_grad=True)
    opt = lib.optim.LBFGS([p], lr=0.5, max_iter=5, line_search_fn=line_search)

    def closure() -> object:
        opt.zero_grad()
        loss = ((p - lib.tensor(target)).abs() ** 4).sum() + (p * p).real.sum()
        loss.backward()
        return loss

    for _ in range(2):
        opt.step(closure)
    return p.detach().numpy()


@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_lbfgs_on_complex_parameters_as_torchs(line_search: str | None) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    p0 = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    target = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    np.testing.assert_allclose(_lbfgs(mg, p0, target, line_search),
                               _lbfgs(torch, p0, target, line_search), rtol=1e-9, atol=1e-12)
