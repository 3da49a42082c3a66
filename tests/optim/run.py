"""The training run the optimizer tests share: the same parameters, loss and steps in minigrad
or in torch, in one group or several."""

from __future__ import annotations

from typing import Any

import numpy as np

import minigrad as mg
import minigrad.nn as nn

STEPS = 12
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
    """The same training run in minigrad or torch: three parameters, in one group or in
    ``groups``. An optimizer told to maximize climbs the negated loss, so that every run
    descends the same valley and stays finite (SGD climbing the quartic overflows)."""

    def __init__(self, lib: Any, opt_name: str, groups: list[dict] | None, kw: dict,
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
        self.sign = -1.0 if kw.get("maximize") else 1.0

    def steps(self, n: int) -> Run:
        for _ in range(n):
            self.opt.zero_grad()
            (self.sign * loss_of(self.lib, *self.params, self.x, self.y)).backward()
            self.opt.step()
        return self

    def values(self) -> list[np.ndarray]:
        return [p.detach().numpy().copy() for p in self.params]


def assert_same(a: list[np.ndarray], b: list[np.ndarray], what: str = "") -> None:
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x, y, rtol=RTOL, atol=ATOL, err_msg=what)
