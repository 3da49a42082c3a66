"""Regression tests for issue 9 in the autograd core: 0-d intermediates, first-order-only
backwards (once_differentiable), saved outputs without reference cycles, hook results."""

from __future__ import annotations

import gc
import tracemalloc
import weakref

import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd import Function
from minigrad.autograd.function import once_differentiable


def scalar(v: float) -> mg.Tensor:
    return mg.tensor(v, dtype=mg.float64, requires_grad=True)


# ---- 1. 0-d intermediates used twice --------------------------------------------------------
def test_a_0d_intermediate_used_twice_accumulates() -> None:
    b = scalar(0.5)
    c = b * 2
    (c.exp() * c).backward()  # d/db (2b e^{2b}) = 2 e^{2b} (1 + 2b)
    assert isinstance(b.grad._array, np.ndarray) and b.grad.shape == ()
    assert b.grad.item() == pytest.approx(2 * np.exp(1.0) * 2.0, rel=1e-14)


def micrograd_sanity(m, x):
    z = 2 * x + 2 + x
    q = z.relu() + z * x
    h = (z * z).relu()
    return h + q + q * x


def micrograd_more_ops(m, a, b):
    c = a + b
    d = a * b + b ** 3
    c = c + c + 1
    c = c + 1 + c + (-a)
    d = d + d * 2 + (b + a).relu()
    d = d + 3 * d + (b - a).relu()
    e = c - d
    f = e ** 2
    g = f / 2.0
    return g + 10.0 / f


def test_micrograd_scalar_tests_match_finite_differences_and_torch() -> None:
    # micrograd's test_sanity_check / test_more_ops, on 0-d tensors
    x, a, b = scalar(-4.0), scalar(-4.0), scalar(2.0)
    assert mg.autograd.gradcheck(lambda t: micrograd_sanity(mg, t), (x,))
    assert mg.autograd.gradcheck(lambda s, t: micrograd_more_ops(mg, s, t), (a, b))
    micrograd_more_ops(mg, a, b).backward()
    torch = pytest.importorskip("torch")
    ta, tb = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (-4.0, 2.0))
    micrograd_more_ops(torch, ta, tb).backward()
    assert a.grad.item() == pytest.approx(ta.grad.item(), rel=1e-12)
    assert b.grad.item() == pytest.approx(tb.grad.item(), rel=1e-12)


@pytest.mark.parametrize("fn", [
    lambda t: t.softmax(0), lambda t: t.log_softmax(0), lambda t: t.logsumexp(0),
    lambda t: mg.nn.functional.log_softmax(t, 0), lambda t: t.sum(), lambda t: t.mean(),
    lambda t: t.prod(), lambda t: t.amax(), lambda t: t.norm(), lambda t: t.norm(3),
    lambda t: t.var(correction=0), lambda t: t.cumsum(0), lambda t: (t * t).sqrt(),
], ids=["softmax", "log_softmax", "logsumexp", "F.log_softmax", "sum", "mean", "prod", "amax",
        "norm", "norm3", "var", "cumsum", "sqrt"])
def test_0d_reductions_and_softmax_backward_when_used_twice(fn) -> None:
    x = scalar(0.7)
    assert mg.autograd.gradcheck(lambda t: fn(t) * fn(t) + fn(t), (x,))


def test_gradients_are_always_arrays_never_numpy_scalars() -> None:
    x = scalar(1.5)
    y = x * x
    z = y + y  # two 0-d gradients meet in the engine's accumulation
    (gx,) = mg.autograd.grad(z * z, x)
    assert type(gx._array) is np.ndarray and gx.item() == pytest.approx(16 * 1.5 ** 3)
    assert type((-mg.tensor(2.0))._array) is np.ndarray
    assert type(mg.Tensor._make(np.float64(3.0))._array) is np.ndarray


# ---- 2. first-order-only backwards ----------------------------------------------------------
class CubeFirstOrder(Function):
    """x^3 whose backward is computed outside the graph (numpy), declared first-order only."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.data ** 3

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * mg.tensor(3 * x.data ** 2)


def test_once_differentiable_first_order_is_right_and_second_order_raises() -> None:
    x = mg.tensor([1.0, -2.0], dtype=mg.float64, requires_grad=True)
    (g,) = mg.autograd.grad(CubeFirstOrder.apply(x).sum(), x)
    np.testing.assert_allclose(g.numpy(), [3.0, 12.0])
    assert mg.autograd.gradcheck(lambda t: CubeFirstOrder.apply(t), (x,))
    (g,) = mg.autograd.grad(CubeFirstOrder.apply(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [3.0, 12.0])  # the backward still runs
    assert g.requires_grad
    with pytest.raises(RuntimeError, match="once_differentiable: CubeFirstOrderBackward"):
        mg.autograd.grad((g + x * x).sum(), x)  # never a silently missing second term
    with pytest.raises(RuntimeError, match="CubeFirstOrderBackward"):
        mg.autograd.gradgradcheck(lambda t: CubeFirstOrder.apply(t), (x,))


def test_once_differentiable_backward_runs_without_recording() -> None:
    seen = []

    class Probe(Function):
        @staticmethod
        def forward(ctx, x):
            return x.data * 2

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            seen.append(mg.is_grad_enabled())
            return g * 2

    x = scalar(1.0)
    Probe.apply(x).backward(create_graph=True)
    assert seen == [False] and x.grad.item() == 2.0
    assert mg.autograd.function.once_differentiable is once_differentiable


# ---- 9. no reference cycles: outputs are freed without the cyclic gc ------------------------
def _live_outputs(step) -> int:
    """How many of 30 iterations' outputs are still alive, with the cyclic gc off."""
    refs = []
    was = gc.isenabled()
    step(0)  # compile first: numba's caught exceptions hold frames (and their locals) in
    gc.collect()  # cycles that only the collector frees
    gc.disable()
    try:
        for i in range(30):
            refs += [weakref.ref(out) for out in step(i)]
        return sum(r() is not None for r in refs)
    finally:
        if was:
            gc.enable()


def test_svd_outputs_and_temporary_leaves_are_freed_without_gc() -> None:
    def svd_step(i):
        A = mg.tensor(np.random.default_rng(i).standard_normal((6, 4)), requires_grad=True)
        U, S, Vh = mg.linalg.svd(A, full_matrices=False)
        (U[:, :2].abs().sum() + S.sum() + (Vh * Vh).sum()).backward()
        return U, S, Vh, A

    def no_backward_step(i):  # the graph is never run or freed by backward
        A = mg.tensor(np.random.default_rng(i).standard_normal((5, 5)), requires_grad=True)
        U, S, Vh = mg.linalg.svd(A)
        return U, S, Vh, A

    assert _live_outputs(svd_step) == 0
    assert _live_outputs(no_backward_step) == 0


def _array_bytes() -> int:
    """Bytes of live ndarray buffers (numpy reports them to tracemalloc in its own domain,
    apart from Python's free lists)."""
    only_arrays = tracemalloc.DomainFilter(True, np.lib.tracemalloc_domain)
    return sum(t.size for t in tracemalloc.take_snapshot().filter_traces([only_arrays]).traces)


def test_memory_stays_flat_over_a_long_svd_loop_without_gc() -> None:
    w = mg.tensor(np.random.default_rng(0).standard_normal((8, 8)), requires_grad=True)
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    tracemalloc.start()
    try:
        used = []
        for i in range(200):  # an evaluation loop: graphs are recorded, never run
            U, S, Vh = mg.linalg.svd(w * (1 + i * 1e-3))
            loss = (U @ Vh).sum() + S.sum()
            if i in (20, 199):
                used.append(_array_bytes())
    finally:
        tracemalloc.stop()
        if was:
            gc.enable()
    # a leak of U, S and Vh alone would be 180 * 1088 bytes
    assert loss.requires_grad and used[1] - used[0] < 1088, used


class SavesItsOutput(Function):
    @staticmethod
    def forward(ctx, x):
        out = mg.Tensor._make(np.exp(x.data))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        SavesItsOutput.seen.append(out)
        return g * out

    seen: list = []


def test_a_saved_output_comes_back_as_the_recorded_output() -> None:
    SavesItsOutput.seen = []
    x = mg.tensor([0.3, -0.2], dtype=mg.float64, requires_grad=True)
    y = SavesItsOutput.apply(x)
    (g,) = mg.autograd.grad(y.sum(), x, create_graph=True)
    (out,) = SavesItsOutput.seen
    assert out.grad_fn is y.grad_fn and out._output_nr == y._output_nr
    np.testing.assert_array_equal(out.detach().numpy(), y.detach().numpy())
    # higher order flows through the saved output: d2/dx2 e^x = e^x
    (gg,) = mg.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), np.exp([0.3, -0.2]), rtol=1e-14)
    assert mg.autograd.gradgradcheck(lambda t: SavesItsOutput.apply(t), (x,))
    # ... and the version check still sees in-place writes to it
    z = SavesItsOutput.apply(x)
    with mg.no_grad():
        z.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_svd_saved_outputs_keep_their_node_and_output_index() -> None:
    A = mg.tensor(np.random.default_rng(3).standard_normal((4, 3)), requires_grad=True)
    U, S, Vh = mg.linalg.svd(A, full_matrices=False)
    saved = U.grad_fn.ctx.saved_tensors
    assert [t.grad_fn for t in saved] == [U.grad_fn] * 3
    assert [t._output_nr for t in saved] == [0, 1, 2]
    assert mg.autograd.gradgradcheck(
        lambda a: mg.linalg.svd(a, full_matrices=False).S, (A,))


def test_a_leaf_freed_before_backward_does_not_break_it() -> None:
    kept = mg.tensor([1.0, 2.0], requires_grad=True)
    y = (kept * mg.tensor([3.0, 4.0], requires_grad=True)).sum()  # the second leaf dies here
    y.backward()
    np.testing.assert_array_equal(kept.grad.numpy(), [3.0, 4.0])


# ---- 11. hooks may not change a gradient's dtype or shape -----------------------------------
def test_hook_results_of_another_dtype_or_shape_are_refused_like_torch() -> None:
    def to_int(g):
        return g.long()

    x = mg.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(to_int)
    with pytest.raises(RuntimeError, match="hook 'to_int' has changed the type of value "
                                           r"\(was float32 got int64\)"):
        (x * 2).sum().backward()
    y = mg.tensor([1.0, 2.0], requires_grad=True)
    z = y * 2
    z.register_hook(lambda g: g.sum())
    with pytest.raises(RuntimeError, match="has changed the size of value"):
        (z * 2).sum().backward()
    w = mg.tensor([1.0], requires_grad=True)
    w.register_hook(lambda g: 3)
    with pytest.raises(TypeError, match="expected Tensor, but hook '<lambda>' returned 'int'"):
        (w * 2).sum().backward()
    v = mg.tensor([1.0, 2.0], requires_grad=True)
    v.register_hook(lambda g: g.double().float() * 10)  # same dtype and shape: allowed
    (v * 2).sum().backward()
    assert v.grad.dtype == np.float32 and v.grad.tolist() == [20.0, 20.0]


def test_create_graph_leaf_gradient_is_fresh_writable_memory() -> None:
    a = mg.tensor(np.ones(300 * 300), requires_grad=True)  # big: SumBackward broadcasts
    b = mg.tensor(np.ones(300 * 300), requires_grad=True)
    g0 = mg.tensor(2.0, dtype=mg.float64, requires_grad=True)
    (a + b).sum().backward(g0, create_graph=True)
    assert a.grad is not b.grad and a.grad._array.flags.writeable
    assert not np.shares_memory(a.grad._array, b.grad._array)
    (ga,) = mg.autograd.grad(a.grad.sum(), g0)  # still differentiable
    assert ga.item() == 300 * 300
