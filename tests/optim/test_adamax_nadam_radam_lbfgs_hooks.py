"""Adamax, NAdam, RAdam and LBFGS against torch step by step (float64, 1e-10), optimizer
step hooks, and the warning for lr_scheduler.step() called before optimizer.step()."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn as nn
import minigrad.optim as optim

RTOL, ATOL = 1e-10, 1e-12


def _params(lib, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal((3, 2)), rng.standard_normal(3)]
    if lib is mg:
        return [nn.Parameter(mg.tensor(a)) for a in arrays]
    return [lib.tensor(a, requires_grad=True) for a in arrays]


def _loss(lib, w, b):
    x = lib.tensor(np.linspace(-1, 1, 10).reshape(5, 2))
    y = lib.tensor(np.cos(np.arange(15.0)).reshape(5, 3))
    return (((x @ w.T + b) - y) ** 4).mean() + (w * w).sum() * 0.01


def _values(params) -> list[np.ndarray]:
    return [p.detach().numpy().copy() for p in params]


CONFIGS = {
    "Adamax": [dict(), dict(lr=0.05, betas=(0.5, 0.9), eps=1e-4, weight_decay=0.1),
               dict(lr=0.01, maximize=True)],
    "NAdam": [dict(), dict(lr=0.05, momentum_decay=0.01, weight_decay=0.1),
              dict(lr=0.02, weight_decay=0.2, decoupled_weight_decay=True),
              dict(lr=0.01, betas=(0.8, 0.9), maximize=True)],
    "RAdam": [dict(), dict(lr=0.05, weight_decay=0.1),
              dict(lr=0.02, weight_decay=0.2, decoupled_weight_decay=True),
              dict(lr=0.01, betas=(0.5, 0.6), maximize=True)],  # rho_t > 5 from step 2 on
}
CASES = [(name, kw) for name, kws in CONFIGS.items() for kw in kws]


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_new_optimizers_match_torch_step_by_step(name: str, kw: dict) -> None:
    torch = pytest.importorskip("torch")
    # torch keeps NAdam's mu_product in its default float dtype: float64 makes it exact
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        _compare_runs(torch, name, kw)
    finally:
        torch.set_default_dtype(default)


def _compare_runs(torch, name: str, kw: dict) -> None:
    ours, theirs = _params(mg), _params(torch)
    start = _values(ours)
    opt, topt = getattr(optim, name)(ours, **kw), getattr(torch.optim, name)(theirs, **kw)
    for step in range(12):
        for o, ps, lib in ((opt, ours, mg), (topt, theirs, torch)):
            o.zero_grad()
            _loss(lib, *ps).backward()
            o.step()
        for a, b in zip(_values(ours), _values(theirs), strict=True):
            np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg=f"step {step}")
    assert not np.allclose(_values(ours)[0], start[0])
    # the state round-trips and continues identically
    fresh = getattr(optim, name)(ours, **kw)
    fresh.load_state_dict(opt.state_dict())
    assert fresh.state_dict()["state"][0]["step"] == 12


def test_new_optimizers_refuse_bad_arguments() -> None:
    p = [nn.Parameter(mg.zeros(2))]
    for cls in (optim.Adamax, optim.NAdam, optim.RAdam):
        with pytest.raises(ValueError, match="Invalid learning rate"):
            cls(p, lr=-1.0)
        with pytest.raises(ValueError, match="Invalid beta parameter at index 1"):
            cls(p, betas=(0.9, 1.0))
        with pytest.raises(NotImplementedError, match="differentiable"):
            cls(p, differentiable=True)
    with pytest.raises(ValueError, match="Invalid momentum_decay value"):
        optim.NAdam(p, momentum_decay=-1.0)


# ---- LBFGS --------------------------------------------------------------------------------
def _rosenbrock(lib, xy):
    return (1 - xy[0]) ** 2 + 100 * (xy[1] - xy[0] ** 2) ** 2 + ((xy[2:] - 0.5) ** 2).sum()


def _lbfgs_run(lib, kw: dict, calls: int,
               jitter: int | None = None) -> list[tuple[np.ndarray, float, int, int]]:
    """x, the loss, and the evaluation and iteration counts after each call. ``jitter``
    seeds a relative error of at most eps put into the start and into every gradient:
    last-digit differences like those of another BLAS or CPU."""
    rng = None if jitter is None else np.random.default_rng(jitter)
    eps = np.finfo(np.float64).eps

    def rounded(a: np.ndarray) -> np.ndarray:
        return a if rng is None else a * (1 + eps * rng.uniform(-1, 1, a.shape))

    start = rounded(np.array([-1.2, 1.0, 2.0, -1.0]))
    x = nn.Parameter(mg.tensor(start)) if lib is mg else lib.tensor(start, requires_grad=True)
    opt = (optim if lib is mg else lib.optim).LBFGS([x], **kw)

    def closure():
        opt.zero_grad()
        loss = _rosenbrock(lib, x)
        loss.backward()
        if rng is not None:
            x.grad = mg.tensor(rounded(x.grad.numpy()))
        return loss

    out = []
    for _ in range(calls):
        first = float(opt.step(closure).detach())
        state = opt.state[x]
        out.append((x.detach().numpy().copy(), first, state["func_evals"], state["n_iter"]))
    return out


LBFGS_CASES = [dict(), dict(line_search_fn="strong_wolfe"),
               dict(lr=0.5, max_iter=5, history_size=3),
               dict(line_search_fn="strong_wolfe", max_iter=7, history_size=2),
               dict(line_search_fn="strong_wolfe", tolerance_grad=1e-3, max_eval=12)]


@pytest.mark.parametrize("kw", LBFGS_CASES, ids=[str(k) for k in LBFGS_CASES])
def test_lbfgs_matches_torch_call_by_call(kw: dict) -> None:
    torch = pytest.importorskip("torch")
    ours, theirs = _lbfgs_run(mg, kw, 6), _lbfgs_run(torch, kw, 6)
    # numpy's and torch's dot products round differently, and differently on each CPU and
    # BLAS kernel; the Rosenbrock valley amplifies last-digit differences (by up to ~1e7).
    # Every branch taken must agree exactly: the evaluation and iteration counts. The
    # values must agree within 10x the spread that last-digit errors in the start and in
    # every gradient give this problem (its own conditioning, measured on minigrad).
    runs = [_lbfgs_run(mg, kw, 6, jitter=seed) for seed in range(3)]
    for i, (o, t) in enumerate(zip(ours, theirs, strict=True)):
        assert o[2:] == t[2:], f"call {i}: evaluations and iterations"
        assert all(r[i][2:] == o[2:] for r in runs), f"call {i}: rounding moved a branch"
        x_tol = 10 * max(np.abs(r[i][0] - o[0]).max() for r in runs) + 1e-14
        f_tol = 10 * max(abs(r[i][1] - o[1]) for r in runs) + 1e-14 * max(abs(t[1]), 1.0)
        np.testing.assert_allclose(o[0], t[0], rtol=0, atol=x_tol, err_msg=f"call {i}")
        np.testing.assert_allclose(o[1], t[1], rtol=0, atol=f_tol, err_msg=f"call {i}")


def test_lbfgs_with_line_search_converges_on_rosenbrock() -> None:
    kw = dict(line_search_fn="strong_wolfe", max_iter=200, max_eval=400, tolerance_grad=1e-12,
              tolerance_change=1e-15)
    x = _lbfgs_run(mg, kw, 1)[-1][0]
    np.testing.assert_allclose(x, [1.0, 1.0, 0.5, 0.5], atol=1e-6)


def test_lbfgs_refusals() -> None:
    p = nn.Parameter(mg.zeros(2))
    with pytest.raises(ValueError, match="only 'strong_wolfe'"):
        optim.LBFGS([p], line_search_fn="armijo")
    with pytest.raises(ValueError, match="parameter groups"):
        optim.LBFGS([{"params": [p]}, {"params": [nn.Parameter(mg.zeros(1))]}])
    with pytest.raises(RuntimeError, match="needs a closure"):
        optim.LBFGS([p]).step()


# ---- hooks and the scheduler order warning -------------------------------------------------
def test_step_hooks_run_around_the_step_and_can_be_removed() -> None:
    p = nn.Parameter(mg.tensor([1.0]))
    opt = optim.SGD([p], lr=0.5)
    seen = []
    pre = opt.register_step_pre_hook(lambda o, a, k: seen.append(("pre", p.item(), o is opt)))
    post = opt.register_step_post_hook(lambda o, a, k: seen.append(("post", p.item())))
    glob = optim.optimizer.register_optimizer_step_post_hook(lambda o, a, k: seen.append("g"))
    try:
        (p * p).sum().backward()
        opt.step()
        assert seen == [("pre", 1.0, True), "g", ("post", 0.0)]
        pre.remove(), post.remove(), glob.remove()
        opt.step()
        assert len(seen) == 3
    finally:
        glob.remove()


def test_pre_hook_can_replace_arguments_and_runs_once_for_subclasses() -> None:
    class Loud(optim.SGD):
        def step(self, closure=None):
            return super().step(closure)

    p = nn.Parameter(mg.tensor([1.0]))
    opt = Loud([p], lr=0.1)
    calls = []
    opt.register_step_pre_hook(lambda o, a, k: calls.append(1) or ((o, lambda: 7.0), {}))
    assert opt.step() == 7.0 and calls == [1]  # the hook's closure was used, the hook ran once
    opt.register_step_pre_hook(lambda o, a, k: 3)
    with pytest.raises(RuntimeError, match="must return None or a tuple"):
        opt.step()


def test_hooks_match_torch_order_and_arguments() -> None:
    torch = pytest.importorskip("torch")
    logs = []
    for lib, o in ((mg, optim), (torch, torch.optim)):
        p = nn.Parameter(mg.tensor([1.0])) if lib is mg else torch.tensor([1.0],
                                                                           requires_grad=True)
        opt = o.Adam([p])
        log = []
        for kind in ("pre", "post"):
            getattr(opt, f"register_step_{kind}_hook")(
                lambda o_, a, k, kind=kind, log=log, opt=opt: log.append(
                    (kind, o_ is opt, a[0] is opt, len(a), k)))
        opt.step(closure=None)
        logs.append(log)
    assert logs[0] == logs[1]


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
