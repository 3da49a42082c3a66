"""The optimizer API that training loops touch: argument checks in torch's words, in-place
steps under no_grad, zero_grad, parameter groups and named parameters, closures, and the
step hooks."""

from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn as nn
import minigrad.optim as optim


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


def test_adamax_nadam_radam_refuse_bad_arguments() -> None:
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


def test_adamw_default_weight_decay_is_torchs() -> None:
    p = nn.Parameter(mg.ones(2))
    assert optim.AdamW([p]).param_groups[0]["weight_decay"] == 1e-2
    assert optim.Adam([p]).param_groups[0]["weight_decay"] == 0


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


def test_param_groups_have_their_own_options() -> None:
    a, b = nn.Parameter(mg.ones(1)), nn.Parameter(mg.ones(1))
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1, momentum=0.9)
    assert opt.param_groups[1]["momentum"] == 0.9 and opt.param_groups[1]["lr"] == 0.5
    a.grad, b.grad = mg.ones(1), mg.ones(1)
    opt.step()
    assert a.detach().item() == pytest.approx(0.9) and b.detach().item() == pytest.approx(0.5)


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
