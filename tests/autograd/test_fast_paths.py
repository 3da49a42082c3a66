"""The fast paths issue 14 cut per-op overhead with: the engine's newest-first walk, the
wants-downstream registry, the fused cross_entropy, softmax as one node, log_softmax's
backward from its output, relu's typed zero and the transposes. Each must give the same
values and gradients (first and second order) as the composite it replaced."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F
from minigrad.autograd import Function
from minigrad.autograd import function as _function


def f64(a, grad: bool = True) -> mg.Tensor:
    return mg.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


# ---- the walk -------------------------------------------------------------------------------
def test_a_node_waits_for_every_consumer_whatever_order_the_graph_was_built_in() -> None:
    x = f64([0.3, -1.2, 2.0])
    u = x.exp()  # made first, consumed last
    v = x * x
    w = v * u
    loss = (w + u * 3 + (v.sin() * u)).sum()
    loss.backward()
    xv = x.detach().numpy()
    e, s = np.exp(xv), xv * xv
    expected = 2 * xv * e + s * e + 3 * e + np.cos(s) * 2 * xv * e + np.sin(s) * e
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-13)


class _Explodes(Function):
    """Identity whose backward must never run: nothing reaches it but None."""

    @staticmethod
    def forward(ctx, x):
        return x._array.copy()

    @staticmethod
    def backward(ctx, g):
        raise AssertionError("backward ran though no gradient reached it")


class _OnlyFirst(Function):
    """a + b whose backward sends nothing to b."""

    @staticmethod
    def forward(ctx, a, b):
        return a._array + b._array

    @staticmethod
    def backward(ctx, g):
        return g, None


def test_a_node_that_only_none_reaches_never_runs() -> None:
    x = f64([1.0, 2.0])
    out = _OnlyFirst.apply(x * 2, _Explodes.apply(x))
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


class _Wants(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.wants_downstream = True
        return x._array * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_the_wants_downstream_registry_lives_exactly_as_long_as_its_nodes() -> None:
    gc.collect()
    before = len(_function.WANTING_DOWNSTREAM)
    x = f64([1.0, 2.0])
    y = _Wants.apply(x)
    assert y.grad_fn.ctx.wants_downstream
    assert len(_function.WANTING_DOWNSTREAM) == before + 1
    (gx,) = mg.autograd.grad(y.sum(), x)  # a walk that meets it records itself ...
    assert not gx.requires_grad  # ... and hands back detached results
    np.testing.assert_array_equal(gx.numpy(), [2.0, 2.0])
    del y
    gc.collect()
    assert len(_function.WANTING_DOWNSTREAM) == before


# ---- the fused losses and softmax ---------------------------------------------------------
_CASES = [
    dict(),
    dict(weight=True),
    dict(ignore_index=3),
    dict(reduction="sum"),
    dict(weight=True, ignore_index=1, reduction="sum"),
]


@pytest.mark.parametrize("classes", [4, 50])  # reduced transposed, and rows as they lie
@pytest.mark.parametrize("case", _CASES, ids=lambda c: ",".join(c) or "plain")
def test_fused_cross_entropy_matches_the_composite_and_differentiates_twice(case,
                                                                              classes) -> None:
    from minigrad.nn.functional import _fused
    assert (classes >= _fused._ROWWISE_FROM) == (classes == 50)
    rng = np.random.default_rng(0)
    x0, t = rng.standard_normal((6, classes)), mg.tensor([0, 3, 1, 3, 2, 1])
    kw = dict(case)
    if kw.pop("weight", False):
        kw["weight"] = f64(rng.uniform(0.5, 2.0, classes), grad=False)

    def fused(x):
        return F.cross_entropy(x, t, **kw)

    def composite(x):
        return F.nll_loss(F.log_softmax(x, 1), t, **kw)

    x = f64(x0)
    assert fused(x).grad_fn.name() == "_CrossEntropyBackward"  # the path under test
    np.testing.assert_allclose(fused(x).item(), composite(x).item(), rtol=1e-14)
    (g1,) = mg.autograd.grad(fused(x), x)
    (g2,) = mg.autograd.grad(composite(x), x)
    np.testing.assert_allclose(g1.numpy(), g2.numpy(), rtol=1e-13, atol=1e-16)
    assert mg.autograd.gradcheck(fused, (f64(x0),))
    assert mg.autograd.gradgradcheck(fused, (f64(x0),))


def test_fused_cross_entropy_against_torch_on_images_and_on_one_sample() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    for x0, t0 in ((rng.standard_normal((2, 5, 3)), rng.integers(0, 5, (2, 3))),
                   (rng.standard_normal(5), np.int64(4)),
                   (np.array([[1000.0, -1000.0, -np.inf]]), np.array([1]))):
        x, xt = f64(x0), torch.tensor(x0, requires_grad=True)
        loss = F.cross_entropy(x, mg.tensor(t0))
        ref = torch.nn.functional.cross_entropy(xt, torch.tensor(t0))
        loss.backward()
        ref.backward()
        np.testing.assert_allclose(loss.item(), ref.item(), rtol=1e-13)
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_fused_cross_entropy_with_every_target_ignored_is_nan_like_torch() -> None:
    x = f64(np.zeros((2, 3)))
    loss = F.cross_entropy(x, mg.tensor([-100, -100]))
    assert np.isnan(loss.item())


def test_softmax_is_one_node_and_differentiates_twice() -> None:
    x0 = np.random.default_rng(2).standard_normal((3, 4))
    x = f64(x0)
    s = x.softmax(1)
    assert s.grad_fn.name() == "SoftmaxBackward"
    assert s.grad_fn._next_edges[0][0] is x._accumulator
    e = np.exp(x0 - x0.max(1, keepdims=True))
    np.testing.assert_allclose(s.detach().numpy(), e / e.sum(1, keepdims=True), rtol=1e-15)
    for dim in (0, 1):
        assert mg.autograd.gradgradcheck(lambda t, d=dim: t.softmax(d) * t, (f64(x0),))
    ints = mg.tensor([[1, 2], [3, 4]])
    with pytest.raises(NotImplementedError, match="dtype="):  # torch has no integer softmax
        ints.softmax(1)
    assert ints.softmax(1, dtype=mg.float32).dtype == mg.float32


def test_log_softmax_backward_from_its_output_differentiates_twice() -> None:
    x0 = np.random.default_rng(3).standard_normal((3, 4))
    assert mg.autograd.gradcheck(lambda t: F.log_softmax(t, 1) ** 2, (f64(x0),))
    assert mg.autograd.gradgradcheck(lambda t: F.log_softmax(t, 0) ** 2, (f64(x0),))
    assert mg.autograd.gradgradcheck(lambda t: F.log_softmax(t, 0), (f64(0.7),))


# ---- relu and the transposes --------------------------------------------------------------
def test_relu_keeps_dtype_and_nan_and_sends_zero_at_zero() -> None:
    assert mg.tensor(np.array([-1, 3], np.int8)).relu().dtype == np.int8
    x = f64([-1.5, 0.0, 2.0, np.nan])
    y = x.relu()
    np.testing.assert_array_equal(y.detach().numpy(), [0.0, 0.0, 2.0, np.nan])
    y[:3].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 1.0, 0.0])
    with mg.no_grad():
        assert x.relu().grad_fn is None


def test_transposes_are_views_that_differentiate() -> None:
    x = f64(np.arange(24.0).reshape(2, 3, 4))
    for t, perm in ((x.mT, (0, 2, 1)), (x.T, (2, 1, 0)), (x.transpose(0, -1), (2, 1, 0))):
        np.testing.assert_array_equal(t.detach().numpy(), x.detach().numpy().transpose(perm))
        assert t._version_counter is x._version_counter  # a view: it shares the version counter
    with pytest.raises(RuntimeError, match="mT is only supported"):
        _ = f64([1.0, 2.0]).mT
    assert mg.autograd.gradgradcheck(lambda t: (t.mT @ t) * 1.0, (f64(np.ones((3, 2))),))


def test_softmax_first_order_backward_is_numpy_and_the_recorded_rules_numbers(
        monkeypatch) -> None:
    # a gradient laid out otherwise than s (a transposed view, as attention's
    # scores.transpose(2, 1).contiguous() sends back): no op runs, the numbers are those of
    # the recorded rule s (g - sum(g s)) bit for bit, and torch's
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    x0, g0 = rng.standard_normal((3, 5, 5)), rng.standard_normal((3, 5, 5)).swapaxes(1, 2)
    x = f64(x0)
    s = x.softmax(2)
    (recorded,) = mg.autograd.grad(s, x, mg.tensor(g0), retain_graph=True, create_graph=True)
    calls: list = []
    for name in ("__mul__", "__rmul__", "__sub__"):
        monkeypatch.setattr(mg.Tensor, name, lambda *a: calls.append(1))
    (plain,) = mg.autograd.grad(s, x, mg.tensor(g0))
    monkeypatch.undo()
    assert not calls
    np.testing.assert_array_equal(plain.numpy(), recorded.detach().numpy())
    u = torch.tensor(x0, requires_grad=True)
    (want,) = torch.autograd.grad(u.softmax(2), u, torch.tensor(g0))
    np.testing.assert_allclose(plain.numpy(), want.numpy(), rtol=1e-12, atol=1e-15)


def test_x_times_x_first_order_backward_makes_one_gradient(monkeypatch) -> None:
    # g x doubled in place, not two products the engine adds: 2 g x, and to second order
    from minigrad.autograd import engine
    added: list = []
    real = engine._add
    monkeypatch.setattr(engine, "_add", lambda *a: (added.append(1), real(*a))[1])
    x0 = np.random.default_rng(5).standard_normal((4, 3))
    x = f64(x0)
    (x * x).sum().backward()
    assert not added
    np.testing.assert_array_equal(x.grad.numpy(), 2 * x0)
    assert mg.autograd.gradgradcheck(lambda t: (t * t).sin(), (f64(x0),))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(), (3,)])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "pow"])
def test_first_order_numpy_backwards_give_the_recorded_rules_numbers(op, shape, dtype) -> None:
    # A plain walk runs numpy in place of the recorded rules; on 0-d operands numpy answers
    # with scalars, and a Tensor holding one promoted the next product as a Python number:
    # 1 / (2 x) gave a float64 gradient with float32's digits (CTMRG's specific heat was
    # 1e-8 off without create_graph)
    rng = np.random.default_rng(6)
    a0, b0 = (rng.uniform(0.5, 2.0, shape).astype(dtype) for _ in range(2))

    def grads(create_graph: bool) -> list:
        a, b = (mg.tensor(v, requires_grad=True) for v in (a0, b0))
        out = getattr(mg, op)(2 * a, 3 * b)
        return [g.detach().numpy() for g in mg.autograd.grad(
            (out * 5).sum(), (a, b), create_graph=create_graph)]

    for plain, recorded in zip(grads(False), grads(True)):
        assert plain.dtype == recorded.dtype == dtype
        np.testing.assert_array_equal(plain, recorded)
