"""The shortcuts issue 14 took for the tiny graph ((a + b) * b).sum(): a first-order walk
computes sum's and mul's gradients with numpy alone, apply finds needs_input_grad and the
edges in one pass, and a loss's backward() skips the general set-up; a recorded call's node
is its ctx, and a gradient only the walk holds becomes the leaf's .grad without a copy. Each
shortcut must give what the general path gives, and the general path (a recorded gradient)
must still be taken when the walk records (create_graph) so that higher order keeps working."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd import Function


def f64(a, grad: bool = True) -> mg.Tensor:
    return mg.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


def _first_and_recorded(fn, x0: np.ndarray, *, seed: int = 0):
    """d sum(w * fn(x)) / dx twice: by a first-order walk (the shortcuts) and by a recorded
    one (create_graph, the general path); the second must carry a graph (w requires grad,
    so it does even where fn is linear)."""
    x = f64(x0)
    out = fn(x)
    wt = f64(np.random.default_rng(seed).standard_normal(out.shape))
    (fast,) = mg.autograd.grad((out * wt).sum(), x)
    (slow,) = mg.autograd.grad((fn(x) * wt).sum(), x, create_graph=True)
    assert not fast.requires_grad and slow.requires_grad and slow.grad_fn is not None
    return fast.numpy(), slow.detach().numpy()


# ---- sum ------------------------------------------------------------------------------------
_SUMS = [((4, 5), None, False), ((4, 5), 0, False), ((4, 5), 1, True), ((1, 3), 0, False),
         ((2, 1, 3), (0, 1), True), ((2, 3, 4), -1, False), ((), None, False),
         ((300, 300), 0, False), ((300, 300), None, True)]  # the last two: broadcast views


@pytest.mark.parametrize("shape,dim,keepdim", _SUMS)
def test_sum_gradient_without_a_node_matches_the_recorded_one(shape, dim, keepdim) -> None:
    x0 = np.random.default_rng(1).standard_normal(shape)

    def fn(t):
        return t.sum(dim, keepdim=keepdim) if dim is not None else t.sum()

    fast, slow = _first_and_recorded(fn, x0)
    np.testing.assert_array_equal(fast, slow)
    assert fast.shape == shape


def test_sum_backward_matches_torch_and_keeps_dtype() -> None:
    torch = pytest.importorskip("torch")
    x0 = np.random.default_rng(2).standard_normal((3, 4, 5)).astype(np.float32)
    for dim, keepdim in ((None, False), (1, False), ((0, 2), True)):
        x, xt = mg.tensor(x0, requires_grad=True), torch.tensor(x0, requires_grad=True)
        g0 = np.random.default_rng(3).standard_normal(
            (x.sum() if dim is None else x.sum(dim, keepdim=keepdim)).shape).astype(np.float32)
        out = x.sum() if dim is None else x.sum(dim, keepdim=keepdim)
        ref = xt.sum() if dim is None else xt.sum(dim, keepdim=keepdim)
        out.backward(mg.tensor(g0))
        ref.backward(torch.tensor(g0))
        assert x.grad.dtype == mg.float32
        np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())


def test_sum_over_a_size_one_dim_differentiates_twice() -> None:
    # SumBackward's own backward once dropped the size-1 dim and then summed everything
    x = f64(np.arange(1.0, 4.0).reshape(1, 3))
    assert mg.autograd.gradgradcheck(lambda t: t.sum(0) * t.sum(0), (x,))
    assert mg.autograd.gradgradcheck(lambda t: t.sum((0, 1), keepdim=True) ** 2, (x,))
    assert mg.autograd.gradgradcheck(lambda t: (t * t).sum(), (f64(0.5),))


# ---- mul ------------------------------------------------------------------------------------
@pytest.mark.parametrize("other", ["tensor", "constant", "number", "int", "broadcast"])
def test_mul_gradient_without_a_node_matches_the_recorded_one(other) -> None:
    rng = np.random.default_rng(4)
    x0, y0 = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    y = {"tensor": f64(y0), "constant": f64(y0, grad=False), "number": 2.5, "int": 3,
         "broadcast": f64(rng.standard_normal(4))}[other]
    fast, slow = _first_and_recorded(lambda t: t * y * t, x0)
    np.testing.assert_allclose(fast, slow, rtol=1e-15, atol=0)


def test_mul_backward_promotes_as_the_op_does() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    x0, y0 = rng.standard_normal(5).astype(np.float32), rng.standard_normal(5)
    for y, yt in ((mg.tensor(y0), torch.tensor(y0)),  # float32 * float64 -> float64
                  (mg.tensor([1, 2, 3, 4, 5]), torch.tensor([1, 2, 3, 4, 5])),  # * int64
                  (mg.tensor([True, False, True, True, False]),
                   torch.tensor([True, False, True, True, False]))):
        x, xt = mg.tensor(x0, requires_grad=True), torch.tensor(x0, requires_grad=True)
        (x * y).sum().backward()
        (xt * yt).sum().backward()
        assert x.grad.dtype == mg.float32
        np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())


def test_the_tiny_graph_matches_torch_and_differentiates_twice() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    a0, b0 = rng.standard_normal((16, 16)), rng.standard_normal((16, 16))
    a, b = f64(a0), f64(b0, grad=False)
    at, bt = torch.tensor(a0, requires_grad=True), torch.tensor(b0)
    for _ in range(2):  # the second backward adds into the grad the first left
        ((a + b) * b).sum().backward()
        ((at + bt) * bt).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), at.grad.numpy(), rtol=1e-15)
    b3 = f64(b0[:3, :3], grad=False)
    assert mg.autograd.gradgradcheck(lambda t: ((t + b3) * t).sum(), (f64(a0[:3, :3]),))


# ---- apply: needs_input_grad and the edges in one pass ---------------------------------------
class _Record(Function):
    """Sums its tensor arguments, noting needs_input_grad."""

    @staticmethod
    def forward(ctx, *args):
        ctx.seen = ctx.needs_input_grad
        return sum(a._array for a in args if mg.is_tensor(a))

    @staticmethod
    def backward(ctx, g):
        return tuple(g if n else None for n in ctx.needs_input_grad)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_apply_records_needs_and_edges_for_every_arity(n) -> None:
    leaf = f64([1.0, 2.0])
    inner = leaf * 3.0  # a non-leaf: its edge goes to its node
    pool = [leaf, 7, f64([0.5, 0.5], grad=False), inner, "opt"]
    args = tuple(pool[(i * 3) % 5] for i in range(n)) if n > 1 else (inner,)
    out = _Record.apply(*args)
    needs = tuple(mg.is_tensor(a) and a.requires_grad for a in args)
    assert out.grad_fn.ctx.seen == needs
    for a, need, edge in zip(args, needs, out.grad_fn._next_edges):
        if not need:
            assert edge is None
            continue
        node = a.grad_fn if a.grad_fn is not None else a._accumulator
        assert edge == (node, a._output_nr, a.shape, a.dtype)
    out.sum().backward()
    expected = sum(3.0 if a is inner else 1.0 for a in args if a is leaf or a is inner)
    np.testing.assert_array_equal(leaf.grad.numpy(), [expected, expected])


# ---- the walk's general set-up is still taken where it must be ---------------------------
def test_hooks_retain_grad_and_a_second_backward_behave_as_before() -> None:
    a, b = f64([1.0, -2.0]), f64([3.0, 4.0], grad=False)
    seen = []
    s = a + b
    s.retain_grad()
    s.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 2)
    loss = (s * b).sum()
    loss.backward()
    np.testing.assert_array_equal(seen[0], [3.0, 4.0])
    np.testing.assert_array_equal(s.grad.numpy(), [6.0, 8.0])  # after the hook, as torch
    np.testing.assert_array_equal(a.grad.numpy(), [6.0, 8.0])  # the hook's doubled grad
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


def test_an_in_place_change_of_a_saved_operand_still_raises() -> None:
    a, b = f64([1.0, 2.0]), f64([3.0, 4.0], grad=False)
    loss = (a * b).sum()
    b.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


# ---- the walk: a lone waiting node skips the heap ------------------------------------------
def test_chains_forks_and_joins_in_one_walk_give_every_gradient_once() -> None:
    # chain (exp, *2), fork (sin, cos of one node), join (their product), chain again: the
    # walk goes from the lone waiting node to the heap and back; each node must run once,
    # after all its consumers
    x0 = np.array([0.3, -0.8, 1.7])
    x = f64(x0)
    u = (x.exp() * 2.0) + 1.0
    v = u.sin() * u.cos()
    loss = ((v * 3.0) * u).sum()
    loss.backward()
    u0 = 2 * np.exp(x0) + 1
    du = 3 * (np.cos(2 * u0) * u0 + np.sin(u0) * np.cos(u0))
    np.testing.assert_allclose(x.grad.numpy(), du * 2 * np.exp(x0), rtol=1e-13)
    assert mg.autograd.gradgradcheck(
        lambda t: (((t.exp() * 2.0) + 1.0).sin() * ((t.exp() * 2.0) + 1.0)).sum(), (f64(x0),))


def test_views_as_operands_get_their_gradients_and_keep_the_version_check() -> None:
    x0 = np.arange(6.0).reshape(2, 3)
    x, w = f64(x0), f64(np.array([[1.0, -1.0], [2.0, 0.5], [3.0, -2.0]]), grad=False)
    (x.T * w).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), w.numpy().T)
    fast, slow = _first_and_recorded(lambda t: t[:, 1:] * t[:, :2], x0)
    np.testing.assert_array_equal(fast, slow)
    base = f64(x0, grad=False)
    view = base[0]
    y = f64([1.0, 2.0, 3.0])
    loss = (y * view).sum()  # saves the view for y's gradient
    base.mul_(2.0)  # writes through the view's memory
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_a_hook_on_the_leaf_sees_and_replaces_its_gradient_in_a_plain_backward() -> None:
    a, b = f64([1.0, 2.0]), f64([3.0, 5.0], grad=False)
    seen = []
    a.register_hook(lambda g: seen.append(g.numpy().copy()) or g + 1.0)
    ((a + b) * b).sum().backward()
    np.testing.assert_array_equal(seen[0], [3.0, 5.0])
    np.testing.assert_array_equal(a.grad.numpy(), [4.0, 6.0])


# ---- ops whose forward is numpy alone run without the grad-mode switch -----------------------
def _all_functions(cls=Function):
    for sub in cls.__subclasses__():
        yield sub
        yield from _all_functions(sub)


def _numpy_forward_args(cls):
    from minigrad.nn.functional import _conv
    from minigrad.ops import _base, arith, matmul, reduce, shape, unary
    from minigrad.ops import complex as complex_ops

    x = f64(np.array([[0.5, 0.25], [0.75, 0.125]]))
    if issubclass(cls, _base._Unary):
        return (x,)
    if cls in (arith.Add, arith.Sub, arith.Mul, arith.Div, matmul.MatMul):
        return (x, f64(np.array([[1.5, 2.0], [0.5, 3.0]])))
    if cls in (reduce.Sum, reduce.Mean):
        return (x, (0,), False)
    if cls in (reduce.Amax, reduce.Amin):
        return (x, (0,), False)
    if cls is reduce.Var:
        return (x, (0,), 1, False)
    if cls is matmul.TensorDot:  # x's dim 1 with the other's dim 0
        return (x, f64(np.array([[1.5, 2.0], [0.5, 3.0]])), (0,), (1,), (0,), (1,))
    if cls.__name__ == "_SmallDet":
        return (x,)
    if cls in (unary.Neg, unary.Abs, unary.Clone):
        return (x,)
    if cls is unary.Rounding:
        return (x, np.floor)
    if cls in (shape.Reshape, shape.Expand):
        return (x, (1, 2, 2))
    if cls is shape.Permute:
        return (x, (1, 0))
    if cls is shape.GetItem:
        return (x, 0)
    if cls is shape.IndexAdd:
        return (f64(np.array([1.0, 2.0])), 0, (2, 2))
    if cls in (shape.Diagonal, shape.DiagEmbed):
        return (x, 0, 0, 1)
    if cls is shape._DiagScatter:
        return (f64(np.array([1.0, 2.0])), (2, 2), 0, 0, 1)
    if cls is arith.Clamp:
        return (x, 0.2, 0.6)
    if cls is arith.Where:
        return (mg.tensor(np.array([[True, False], [False, True]])), x, 0.0)
    if cls is reduce.SumBackward:
        return (f64(np.array([1.0, 2.0])), (2, 2), (0,))
    z = mg.tensor(np.array([[0.5 + 1j, 0.25], [0.75j, 0.125]]), requires_grad=True)
    if cls in (complex_ops.Conj, complex_ops.Real, complex_ops.Imag, complex_ops.ViewAsReal):
        return (z,)
    if cls is complex_ops.Complex:
        return (x, x)
    if cls is complex_ops.ViewAsComplex:
        return (f64(np.ones((2, 2))),)
    if cls is _conv._Unfold:  # windows of 2 over a length 3 padded by one on the left
        return (f64(np.ones((1, 1, 3))), (2,), (1,), (1,), ((1, 0),), 0.0)
    if cls.__name__ == "_Cross":  # along dim 1 of two (2, 3)s
        return (f64(np.ones((2, 3))), f64(np.arange(6.0).reshape(2, 3)), 1)
    if cls is _conv._Fold:  # and back
        return (f64(np.ones((1, 1, 2, 3))), (1, 1, 3), (2,), (1,), (1,), ((1, 0),))
    raise AssertionError(f"{cls.__name__} claims a numpy-only forward: add a case here")


def test_a_numpy_only_forward_records_nothing_but_its_own_node() -> None:
    from minigrad.autograd.graph import _next_order, edge_of

    # subclasses inherit the flag with the forward: each is checked (those of _Unary too)
    from minigrad.ops._base import _Unary

    flagged = [c for c in set(_all_functions())  # less _Unary itself and bases with no fn
               if c._numpy_forward and getattr(c, "fn", None) is not _Unary.fn]
    assert len(flagged) > 20  # the arithmetic, sum and the elementwise family
    for cls in flagged:
        args = _numpy_forward_args(cls)
        for a in args:
            if mg.is_tensor(a):
                edge_of(a)  # the leaves' sinks (nodes too) made before counting
        before = _next_order()
        with np.errstate(all="ignore"):
            out = cls.apply(*args)
        after = _next_order()
        assert out.grad_fn is not None and out.grad_fn._fn is cls
        # orders fall by one per node made: the op's own node and nothing from its forward
        assert before - after == 2, f"{cls.__name__}'s forward recorded an op"
        assert mg.is_grad_enabled()


# ---- the node is its ctx ---------------------------------------------------------------------
class _Orders(Function):
    """A forward that sets ctx attributes named as a node's public-looking fields were."""

    @staticmethod
    def forward(ctx, x):
        ctx.order, ctx.hooks, ctx.retained, ctx.next_edges, ctx.fn = 5, "h", "r", (), None
        ctx.save_for_backward(x)
        return x._array * 2.0

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        assert ctx.order == 5 and ctx.hooks == "h"
        return g * 2.0


def test_ctx_attributes_cannot_clobber_the_node_it_is() -> None:
    x = f64([1.0, 2.0])
    y = _Orders.apply(x * 1.0)  # a node before it: the walk must still order the two
    assert y.grad_fn is y.grad_fn.ctx and y.grad_fn.name() == "_OrdersBackward"
    y.retain_grad()
    y.register_hook(lambda g: g * 3.0)
    (y * y).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [12.0, 24.0])  # 3 * 2y: after the hook
    np.testing.assert_array_equal(x.grad.numpy(), [24.0, 48.0])
    assert mg.autograd.gradgradcheck(lambda t: _Orders.apply(t * t).sum(), (f64([0.5, 1.5]),))


def test_a_saved_output_unpacks_to_the_recorded_output_of_this_node() -> None:
    x = f64([0.3, -0.7])
    y = x.softmax(0)  # saves its output
    (saved,) = y.grad_fn.saved_tensors
    assert saved.grad_fn is y.grad_fn and saved._output_nr == 0
    np.testing.assert_array_equal(saved.detach().numpy(), y.detach().numpy())
    w = f64([1.0, 3.0], grad=False)
    assert mg.autograd.gradgradcheck(lambda t: (t.softmax(0) * w).sum(), (x,))


# ---- accumulate: a gradient only the walk holds becomes .grad without a copy -------------------
_STEALS = sys.implementation.name == "cpython" and sys.version_info < (3, 14)


@pytest.mark.skipif(not _STEALS, reason="minigrad takes the gradient only on CPython < 3.14")
def test_a_gradient_only_the_walk_holds_becomes_the_leaf_grad() -> None:
    a, b = f64(np.ones((4, 4))), f64(np.full((4, 4), 2.0), grad=False)
    ids = []
    a.register_hook(lambda g: ids.append(id(g)))  # the id alone: no reference kept
    ((a + b) * b).sum().backward()
    assert id(a.grad) == ids[0]  # the very tensor the walk computed, alive as .grad
    np.testing.assert_array_equal(a.grad.numpy(), np.full((4, 4), 2.0))
    ((a + b) * b).sum().backward()  # and it is added into in place, as before
    np.testing.assert_array_equal(a.grad.numpy(), np.full((4, 4), 4.0))


def test_a_gradient_held_elsewhere_is_copied_into_grad() -> None:
    # two leaves given one tensor (Add's backward), a hook that keeps it, retain_grad of a
    # tensor whose gradient passes unchanged, a read-only broadcast view, the caller's own
    x, y = f64([1.0, 2.0]), f64([3.0, 4.0])
    kept = []
    x.register_hook(lambda g: kept.append(g) or None)
    s = x + y
    s.retain_grad()
    s.sum().backward()
    assert not np.shares_memory(x.grad.numpy(), y.grad.numpy())
    assert not np.shares_memory(x.grad.numpy(), s.grad.numpy())
    assert not np.shares_memory(y.grad.numpy(), s.grad.numpy())
    assert kept[0] is not x.grad and not np.shares_memory(kept[0].numpy(), x.grad.numpy())
    (x + y).sum().backward()  # adds in place into each .grad
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(y.grad.numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(s.grad.numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(kept[0].numpy(), [1.0, 1.0])
    big = f64(np.zeros((300, 300)))
    big.sum().backward()  # SumBackward hands a read-only broadcast view at this size
    assert big.grad.numpy().flags.writeable
    big.sum().backward()
    assert (big.grad.numpy() == 2.0).all()
    leaf, g0 = f64([1.0, 2.0]), mg.tensor(np.array([5.0, 6.0]))
    leaf.backward(g0)
    assert leaf.grad is not g0 and not np.shares_memory(leaf.grad.numpy(), g0.numpy())
    leaf.backward(g0)
    np.testing.assert_array_equal(g0.numpy(), [5.0, 6.0])
    np.testing.assert_array_equal(leaf.grad.numpy(), [10.0, 12.0])


def test_every_ops_node_keeps_its_name_method():
    # ctx is the node: an attribute a forward sets must not hide the node's own methods
    # (heaviside's ctx once stored its op's name as ctx.name)
    x = mg.tensor([1.0, -2.0, 0.0], requires_grad=True)
    outs = [x.heaviside(mg.tensor([0.5])), x.scatter_reduce(0, mg.tensor([0, 0, 1]), x, "prod"),
            x.exp(), x.sort()[0], x.cumsum(0), x[1:]]
    for y in outs:
        assert isinstance(y.grad_fn.name(), str) and y.grad_fn.name().endswith("Backward")
