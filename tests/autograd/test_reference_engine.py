"""The optimised autograd (Function.apply and the engine's walk) against its readable
definition, minigrad/autograd/reference.py: every op of the op table, and graphs with
shared subexpressions, several outputs, views, in-place writes and retained graphs, give
the same gradients (first and second order, float64) both ways."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd import Function, reference
from tests.ops.table import NUMPY, NUMPY_IDS, SMOOTH, Op, make_arrays

RTOL, ATOL = 1e-12, 1e-14  # the two walks may add a node's gradients in another order


@contextlib.contextmanager
def reference_apply() -> Iterator[None]:
    """Every Function's apply is the reference one while inside."""
    real = Function.__dict__["apply"]
    Function.apply = classmethod(reference.apply)
    try:
        yield
    finally:
        Function.apply = real


def leaves(arrays: list[np.ndarray]) -> list[mg.Tensor]:
    return [mg.tensor(a.copy(), requires_grad=True) for a in arrays]


def assert_same(got: list, want: list) -> None:
    assert [g is None for g in got] == [w is None for w in want]
    for g, w in zip(got, want):
        if g is not None:
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(),
                                       rtol=RTOL, atol=ATOL)


def compare_backward(build: Callable, arrays: list[np.ndarray], seed: int = 0) -> None:
    """.grad of the leaves after backward(), the engine's against the reference's."""
    xs = leaves(arrays)
    out = build(*xs)
    g = mg.tensor(np.random.default_rng(seed).standard_normal(out.shape))
    out.backward(g)
    with reference_apply():
        ys = leaves(arrays)
        reference.backward([build(*ys)], [g])
    assert_same([y.grad for y in ys], [x.grad for x in xs])


def compare_second_order(build: Callable, arrays: list[np.ndarray]) -> None:
    """d/dx <v, d<g, f(x)>/dx>, the engine's (autograd.grad) against the reference's."""
    rng = np.random.default_rng(1)
    vs = [mg.tensor(rng.standard_normal(a.shape)) for a in arrays]

    def contracted(grads: list) -> mg.Tensor | None:
        terms = [(gi * v).sum() for gi, v in zip(grads, vs) if gi is not None
                 and gi.requires_grad]
        return sum(terms[1:], terms[0]) if terms else None

    xs = leaves(arrays)
    out = build(*xs)
    g = mg.tensor(rng.standard_normal(out.shape))
    firsts = mg.autograd.grad(out, xs, [g], create_graph=True, allow_unused=True)
    s = contracted(list(firsts))
    want = None if s is None else list(mg.autograd.grad(s, xs, allow_unused=True))
    with reference_apply():
        ys = leaves(arrays)
        firsts_ref = reference.backward([build(*ys)], [g], inputs=ys, create_graph=True)
        assert_same(firsts_ref, list(firsts))
        s_ref = contracted(firsts_ref)
        assert (s_ref is None) == (s is None)
        if s_ref is not None:
            assert_same(reference.backward([s_ref], [mg.tensor(1.0)], inputs=ys), want)


def run_op(op: Op) -> Callable:
    return lambda *xs: op.fn(mg, *xs)


@pytest.mark.parametrize("op", NUMPY, ids=NUMPY_IDS)
def test_every_op_backward_agrees_with_the_reference(op: Op) -> None:
    compare_backward(run_op(op), make_arrays(op))


@pytest.mark.parametrize("op", SMOOTH, ids=[op.name for op in SMOOTH])
def test_every_smooth_op_second_order_agrees_with_the_reference(op: Op) -> None:
    compare_second_order(run_op(op), make_arrays(op))


# ---- graphs that stress the walk's order and accumulation ---------------------------------
def shared(x: mg.Tensor, w: mg.Tensor) -> mg.Tensor:
    u = x.exp()  # made first, consumed last and by four nodes
    v = x * w
    h = v * u + u * 3 + (v.sin() * u) + (u.mT @ w).sum(0)
    return h * h + h.tanh() * v


def several_outputs(x: mg.Tensor, w: mg.Tensor) -> mg.Tensor:
    a, b, c = (x @ w.mT).split([1, 1, 1], dim=0)  # one node of three outputs
    q, r = mg.linalg.qr(x.mT @ x + w.mT @ w)
    return a * b + c.exp() + q.sum() + (r * r).sum() * 0  # r reached, yet only through zero


def views_and_inplace(x: mg.Tensor, w: mg.Tensor) -> mg.Tensor:
    y = x * 1.0
    row = y[1]  # a view of y ...
    y[0].mul_(w[0])  # ... that an in-place write on another view of y rebases
    y.mT[1:3].add_(row[:2].clone().unsqueeze(1) * w[2, :3])  # reads what it writes
    z = y.view(-1)[::2] * y.reshape(-1)[1::2]
    return z.unsqueeze(0) * row.sum() + y.sum(1, keepdim=True)


GRAPHS = [shared, several_outputs, views_and_inplace]


@pytest.mark.parametrize("build", GRAPHS, ids=lambda f: f.__name__)
def test_graphs_with_shared_nodes_several_outputs_and_views_agree(build: Callable) -> None:
    rng = np.random.default_rng(2)
    arrays = [rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (3, 4))]
    compare_backward(build, arrays)
    compare_second_order(build, arrays)


def test_a_retained_graph_runs_twice_and_a_freed_one_refuses_both_ways() -> None:
    rng = np.random.default_rng(3)
    arrays = [rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (3, 4))]
    xs = leaves(arrays)
    loss = shared(*xs).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()
    with reference_apply():
        ys = leaves(arrays)
        loss_ref = shared(*ys).sum()
        one = mg.tensor(1.0)
        reference.backward([loss_ref], [one], retain_graph=True)
        reference.backward([loss_ref], [one])
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            reference.backward([loss_ref], [one])
    assert_same([y.grad for y in ys], [x.grad for x in xs])


def test_the_walks_agree_when_one_backward_starts_from_several_roots() -> None:
    rng = np.random.default_rng(4)
    arrays = [rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (3, 4))]
    xs = leaves(arrays)
    h = shared(*xs)
    roots = [h, h.exp(), h[0]]  # h is a root and an input of the other two
    grads = [mg.tensor(rng.standard_normal(r.shape)) for r in roots]
    mg.autograd.backward(roots, grads)
    with reference_apply():
        ys = leaves(arrays)
        h_ref = shared(*ys)
        reference.backward([h_ref, h_ref.exp(), h_ref[0]], grads)
    assert_same([y.grad for y in ys], [x.grad for x in xs])
