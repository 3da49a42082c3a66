"""Autograd semantics: accumulation, reuse, grad modes, hooks, graph freeing, higher order,
version counters, deep graphs, custom Functions and gradcheck itself."""

from __future__ import annotations

import re
import threading

import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd import Function


def leaf(values, dtype=mg.float64) -> mg.Tensor:
    return mg.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


# ---- accumulation and reuse -----------------------------------------------------------------
def test_gradients_accumulate_across_backward_calls() -> None:
    x = leaf([1.0, 2.0])
    (x * 3).sum().backward()
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3 + 2, 3 + 4])
    x.grad = None
    (x * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3, 3])


def test_reused_inputs_sum_their_contributions() -> None:
    a = leaf([1.0, -2.0])
    (a + a).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [2, 2])
    x = leaf([3.0, 4.0])
    y = x * x
    (y + y * x).sum().backward()  # d/dx (x^2 + x^3) = 2x + 3x^2
    np.testing.assert_array_equal(x.grad.numpy(), [2 * 3 + 27, 2 * 4 + 48])


def test_leaf_grad_is_not_aliased_to_the_incoming_gradient() -> None:
    a, b = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    (a + b).sum().backward()
    a.grad.data[0] = 100.0
    assert b.grad.numpy()[0] == 1.0


def test_broadcast_gradient_is_summed_back_to_the_input_shape() -> None:
    a = leaf(np.ones((2, 3)))
    b = leaf(np.ones((3,)))
    c = leaf(np.ones((2, 1)))
    s = leaf(2.0)
    (a * b + c * s).sum().backward()
    assert b.grad.shape == (3,) and c.grad.shape == (2, 1) and s.grad.shape == ()
    np.testing.assert_array_equal(b.grad.numpy(), [2, 2, 2])
    np.testing.assert_array_equal(c.grad.numpy(), [[6], [6]])
    assert s.grad.item() == 6


def test_gradient_is_cast_back_to_the_leaf_dtype() -> None:
    a = leaf([1.0, 2.0], mg.float32)
    b = leaf([1.0, 2.0], mg.float64)
    out = a * b
    assert out.dtype == np.float64
    out.sum().backward()
    assert a.grad.dtype == np.float32 and b.grad.dtype == np.float64


def test_backward_with_explicit_gradient_and_nonscalar_error() -> None:
    x = leaf([1.0, 2.0])
    y = x * 2
    with pytest.raises(RuntimeError, match="scalar outputs"):
        y.backward()
    y.backward(mg.tensor(np.array([1.0, 10.0])))
    np.testing.assert_array_equal(x.grad.numpy(), [2, 20])


def test_backward_on_a_tensor_without_grad_raises() -> None:
    with pytest.raises(RuntimeError, match="does not require grad"):
        mg.tensor([1.0]).sum().backward()


# ---- grad modes -----------------------------------------------------------------------------
def test_no_grad_and_enable_grad_as_context_managers() -> None:
    x = leaf([1.0])
    with mg.no_grad():
        y = x * 2
        assert not mg.is_grad_enabled()
        with mg.enable_grad():
            z = x * 2
        assert not mg.is_grad_enabled()
    assert mg.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad and z.grad_fn is not None


def test_inference_mode_as_torchs_spellings() -> None:
    """``with torch.inference_mode():`` and ``@torch.inference_mode()`` in ported eval loops."""
    x = leaf([1.0])
    with mg.inference_mode():
        y = x * 2
        assert mg.is_inference_mode_enabled() and not mg.is_grad_enabled()
    with mg.inference_mode(False):
        assert (x * 2).requires_grad and not mg.is_inference_mode_enabled()

    @mg.inference_mode()
    def called():
        return x * 2

    @mg.autograd.inference_mode
    def bare():
        return x * 2

    assert not y.requires_grad and not called().requires_grad and not bare().requires_grad
    assert mg.is_grad_enabled() and not mg.is_inference_mode_enabled()


def test_inference_mode_nested_as_torchs() -> None:
    """enable_grad inside inference_mode records nothing; inference_mode(False) inside one
    (or inside no_grad) turns inference off and recording on; each restores on exit."""
    x = leaf([1.0])
    with mg.inference_mode():
        with mg.enable_grad():
            assert not (x * 2).requires_grad
        with mg.inference_mode(False):
            assert not mg.is_inference_mode_enabled() and mg.is_grad_enabled()
            assert (x * 2).requires_grad
        assert mg.is_inference_mode_enabled() and not (x * 2).requires_grad
    with mg.no_grad():
        with mg.inference_mode(False):
            assert (x * 2).requires_grad
        assert not mg.is_grad_enabled()
    assert mg.is_grad_enabled() and not mg.is_inference_mode_enabled()


def test_grad_modes_restore_state_after_an_exception() -> None:
    with pytest.raises(ValueError):
        with mg.no_grad():
            raise ValueError
    assert mg.is_grad_enabled()


def test_grad_modes_as_decorators() -> None:
    x = leaf([1.0])

    @mg.no_grad()
    def off():
        return x * 2, mg.is_grad_enabled()

    @mg.enable_grad()
    def on():
        return x * 2

    @mg.set_grad_enabled(False)
    def off2():
        return x * 2

    assert mg.is_grad_enabled()  # decorating does not switch anything
    y, flag = off()
    assert not y.requires_grad and not flag
    with mg.no_grad():
        assert on().requires_grad
    assert not off2().requires_grad
    assert mg.is_grad_enabled()
    assert off.__name__ == "off"


def test_set_grad_enabled_as_function_and_context_manager() -> None:
    x = leaf([1.0])
    with mg.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert mg.is_grad_enabled()
    mg.set_grad_enabled(False)
    try:
        assert not mg.is_grad_enabled()
    finally:
        mg.set_grad_enabled(True)
    with mg.no_grad():
        with mg.set_grad_enabled(True):
            assert (x * 2).requires_grad


def test_grad_mode_is_thread_local() -> None:
    seen = {}
    inside = threading.Event()
    release = threading.Event()

    def worker() -> None:
        seen["start"] = mg.is_grad_enabled()
        with mg.no_grad():
            inside.set()
            release.wait(5)
            seen["inner"] = mg.is_grad_enabled()

    t = threading.Thread(target=worker)
    t.start()
    inside.wait(5)
    try:
        assert mg.is_grad_enabled()  # the worker's no_grad does not leak here
        assert (leaf([1.0]) * 2).requires_grad
    finally:
        release.set()
        t.join()
    assert seen == {"start": True, "inner": False}
    with mg.no_grad():
        t = threading.Thread(target=lambda: seen.__setitem__("new", mg.is_grad_enabled()))
        t.start()
        t.join()
    assert seen["new"] is True  # every thread starts with recording on, as in torch


# ---- detach, requires_grad ------------------------------------------------------------------
def test_detach_shares_memory_and_does_not_require_grad() -> None:
    x = leaf([1.0, 2.0])
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    assert np.shares_memory(d.numpy(), y._array)
    d[0] = 7.0
    assert y.data[0] == 7.0


def test_only_float_tensors_can_require_grad() -> None:
    with pytest.raises(RuntimeError, match="floating point"):
        mg.tensor([1, 2]).requires_grad_()
    with pytest.raises(RuntimeError, match="floating point"):
        mg.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match="floating point"):
        mg.tensor([True]).requires_grad_()
    x = mg.tensor([1.0]).requires_grad_()
    assert x.requires_grad and x.is_leaf
    assert not x.requires_grad_(False).requires_grad


def test_integer_results_of_differentiable_inputs_do_not_require_grad() -> None:
    x = leaf([[1.0, 5.0], [3.0, 2.0]])
    values, indices = x.max(1)
    assert values.requires_grad and not indices.requires_grad
    assert indices.dtype == np.int64
    assert not x.argmax().requires_grad and not (x > 1).requires_grad
    n = mg.tensor([1, 2]) * 3
    assert n.dtype == np.int64 and not n.requires_grad


def test_is_leaf_and_grad_fn() -> None:
    x = leaf([1.0])
    y = x.exp()
    assert x.is_leaf and x.grad_fn is None
    assert not y.is_leaf and "Exp" in repr(y.grad_fn)
    assert mg.tensor([1.0]).is_leaf


# ---- retain_grad and hooks ------------------------------------------------------------------
def test_retain_grad_keeps_a_non_leaf_gradient() -> None:
    x = leaf([1.0, 2.0])
    y = x * 3
    z = y * y
    y.retain_grad()
    assert y.retains_grad
    z.sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [6, 12])
    w = x * 3
    (w * w).sum().backward()
    assert w.grad is None  # not retained


def test_hook_can_replace_the_gradient_and_be_removed() -> None:
    x = leaf([1.0, 2.0])
    seen = []

    def hook(g):
        seen.append(g.numpy().copy())
        return g * 10

    handle = x.register_hook(hook)
    (x * x).sum().backward()
    np.testing.assert_array_equal(seen[0], [2, 4])
    np.testing.assert_array_equal(x.grad.numpy(), [20, 40])
    handle.remove()
    x.grad = None
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2, 4])
    assert len(seen) == 1


def test_hook_on_a_non_leaf_changes_what_flows_upstream() -> None:
    x = leaf([1.0, 2.0])
    y = x * 2
    y.register_hook(lambda g: g * 0)
    (y * y).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0])
    observed = []
    z = x * 2
    z.register_hook(lambda g: observed.append(g.numpy().copy()))  # returns None: unchanged
    x.grad = None
    (z * z).sum().backward()
    np.testing.assert_array_equal(observed[0], [4, 8])
    np.testing.assert_array_equal(x.grad.numpy(), [8, 16])


def test_hook_on_tensor_without_grad_raises() -> None:
    with pytest.raises(RuntimeError):
        mg.tensor([1.0]).register_hook(lambda g: g)


# ---- graph freeing and retain_graph ---------------------------------------------------------
def test_second_backward_without_retain_graph_raises_clearly() -> None:
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="second time.*retain_graph=True"):
        y.backward()


def test_retain_graph_allows_a_second_backward() -> None:
    x = leaf([1.0, 2.0])
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first)


def test_autograd_grad_frees_the_graph_unless_retained() -> None:
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    (g,) = mg.autograd.grad(y, x, retain_graph=True)
    (g2,) = mg.autograd.grad(y, x)
    np.testing.assert_array_equal(g.numpy(), g2.numpy())
    with pytest.raises(RuntimeError, match="second time"):
        mg.autograd.grad(y, x)
    assert x.grad is None  # autograd.grad returns, it does not accumulate


# ---- higher order ---------------------------------------------------------------------------
def test_create_graph_gives_second_derivatives() -> None:
    x = leaf([0.5, -1.0, 2.0])
    y = (x ** 3).sum() + (x.sin() * x).sum()
    (g,) = mg.autograd.grad(y, x, create_graph=True)
    xv = x.detach().numpy()
    np.testing.assert_allclose(g.detach().numpy(), 3 * xv ** 2 + np.cos(xv) * xv + np.sin(xv))
    assert g.requires_grad
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * xv - np.sin(xv) * xv + 2 * np.cos(xv))


def test_backward_with_create_graph_leaves_a_differentiable_grad() -> None:
    x = leaf([2.0])
    (x ** 4).sum().backward(create_graph=True)
    g = x.grad
    assert g.requires_grad and g.item() == 32.0
    (g2,) = mg.autograd.grad(g.sum(), x)
    assert g2.item() == 48.0


def test_third_derivative() -> None:
    x = leaf([1.5])
    y = x.tanh().sum()
    (g1,) = mg.autograd.grad(y, x, create_graph=True)
    (g2,) = mg.autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = mg.autograd.grad(g2.sum(), x)
    t = np.tanh(1.5)
    np.testing.assert_allclose(g3.item(), -2 * (1 - t * t) * (1 - 3 * t * t), rtol=1e-12)


def test_autograd_grad_allow_unused() -> None:
    x, y = leaf([1.0]), leaf([2.0])
    out = (x * 3).sum()
    with pytest.raises(RuntimeError, match="allow_unused"):
        mg.autograd.grad(out, [x, y], retain_graph=True)
    gx, gy = mg.autograd.grad(out, [x, y], allow_unused=True)
    assert gx.item() == 3.0 and gy is None


def test_autograd_grad_of_intermediate_and_multiple_outputs() -> None:
    x = leaf([1.0, 2.0])
    h = x * 2
    out1, out2 = (h * h).sum(), h.sum()
    gh, gx = mg.autograd.grad([out1, out2], [h, x],
                              grad_outputs=[mg.tensor(1.0, dtype=mg.float64),
                                            mg.tensor(10.0, dtype=mg.float64)])
    np.testing.assert_array_equal(gh.numpy(), 2 * h.detach().numpy() + 10)
    np.testing.assert_array_equal(gx.numpy(), 2 * gh.numpy())


# ---- version counter and in-place ops -------------------------------------------------------
def test_modifying_a_saved_tensor_raises_naming_the_op() -> None:
    a = leaf([1.0, 2.0])
    x = a * 1
    y = x.exp()
    x.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*ExpBackward"):
        y.sum().backward()


def test_modifying_a_saved_tensor_through_a_view_or_detach_raises() -> None:
    a = leaf([[1.0, 2.0], [3.0, 4.0]])
    x = a * 1
    y = (x * a).sum()
    with mg.no_grad():
        x[0].mul_(5)  # a view of x: same memory, same version counter
    with pytest.raises(RuntimeError, match="MulBackward"):
        y.backward()
    b = leaf([1.0])
    z = b.sin()
    b.detach().zero_()  # detach shares the version counter too
    with pytest.raises(RuntimeError, match="SinBackward"):
        z.backward()


def test_in_place_op_on_a_leaf_that_requires_grad_raises() -> None:
    x = leaf([1.0])
    with pytest.raises(RuntimeError, match="leaf"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="leaf"):
        x[0] = 2.0
    with mg.no_grad():
        x.mul_(3)  # allowed: an optimizer step
    assert x.item() == 3.0 and x.requires_grad and x.is_leaf


def test_in_place_ops_are_differentiable() -> None:
    a, b = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    x = a * 1
    x.mul_(b)
    x.add_(a, alpha=2)
    x.sub_(1.0)
    x.div_(2.0)
    assert not x.is_leaf
    x.sum().backward()
    # x = (a*b + 2a - 1) / 2
    np.testing.assert_array_equal(a.grad.numpy(), (b.detach().numpy() + 2) / 2)
    np.testing.assert_array_equal(b.grad.numpy(), a.detach().numpy() / 2)


def test_setitem_and_copy_are_differentiable() -> None:
    a, v = leaf([1.0, 2.0, 3.0]), leaf([10.0])
    x = a * 2
    x[1:2] = v * 3
    assert x.detach().numpy().tolist() == [2.0, 30.0, 6.0]
    x.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [2, 0, 2])
    np.testing.assert_array_equal(v.grad.numpy(), [3])
    dst = mg.zeros(3, dtype=mg.float64)
    src = leaf([1.0, 2.0, 3.0])
    dst.copy_(src * src)
    assert dst.requires_grad and not dst.is_leaf
    dst.sum().backward()
    np.testing.assert_array_equal(src.grad.numpy(), [2, 4, 6])


def test_in_place_on_a_non_leaf_with_a_saved_old_value_still_gives_right_grads() -> None:
    a = leaf([1.0, 2.0])
    x = a * a  # MulBackward saved a, not x
    x.mul_(3)
    x.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [6, 12])


def test_fill_and_zero_cut_the_gradient_to_the_old_value() -> None:
    a = leaf([1.0, 2.0])
    x = a * 2
    x.fill_(5.0)
    assert x.detach().tolist() == [5.0, 5.0]
    x.sum().backward()  # torch keeps x in the graph, with a zero gradient to a
    assert a.grad is None or not np.any(a.grad.numpy())
    a.grad = None
    y = a * 2
    z = y * 1
    z.zero_()
    (z + y).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [2, 2])


# ---- deep graphs ----------------------------------------------------------------------------
def test_a_100000_op_chain_backwards_without_recursion() -> None:
    x = leaf([1.0])
    y = x
    for _ in range(100_000):
        y = y + 1e-5
    y.sum().backward()
    assert x.grad.item() == 1.0
    np.testing.assert_allclose(y.item(), 2.0)


# ---- custom Functions -----------------------------------------------------------------------
class Cube(Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        ctx.seen_needs = ctx.needs_input_grad
        return x.data ** 3 * scale

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x * ctx.scale, None


class WrongCube(Cube):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2 * x * x * ctx.scale, None  # deliberately wrong


def test_custom_function_contract() -> None:
    x = leaf([1.0, 2.0])
    y = Cube.apply(x, 2.0)
    assert y.requires_grad and "Cube" in repr(y.grad_fn)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [6, 24])
    assert mg.autograd.gradcheck(lambda t: Cube.apply(t, 2.0), [leaf([0.3, -1.2])])
    assert mg.autograd.gradgradcheck(lambda t: Cube.apply(t, 2.0), [leaf([0.3, -1.2])])


def test_needs_input_grad_reports_which_inputs_need_grad() -> None:
    seen = []

    class Probe(Function):
        @staticmethod
        def forward(ctx, a, b, k):
            seen.append(ctx.needs_input_grad)
            return a.data + b.data * k

        @staticmethod
        def backward(ctx, g):
            return g, g * 2, None

    Probe.apply(leaf([1.0]), mg.tensor([1.0], dtype=mg.float64), 2)
    Probe.apply(mg.tensor([1.0]), leaf([1.0], mg.float32), 2)
    assert seen == [(True, False, False), (False, True, False)]
    with mg.no_grad():
        Probe.apply(leaf([1.0]), leaf([1.0]), 2)
    assert seen[-1] == (False, False, False)


def test_forward_runs_without_recording() -> None:
    class Inner(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.inner = (a * 2)  # an op inside forward must not be recorded
            return ctx.inner

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = leaf([1.0])
    y = Inner.apply(x)
    assert not y.grad_fn.ctx.inner.requires_grad
    y.sum().backward()
    assert x.grad.item() == 2.0


def test_mark_non_differentiable() -> None:
    class SortWithIndex(Function):
        @staticmethod
        def forward(ctx, a):
            order = np.argsort(a.data)
            vals = a.data[order]
            pos = order.astype(a.data.dtype)  # float, yet not differentiable
            ctx.mark_non_differentiable(pos)
            ctx.order = order
            return vals, pos

        @staticmethod
        def backward(ctx, g, g_pos):
            out = np.zeros(g.shape)
            out[ctx.order] = g.numpy()
            return mg.tensor(out)

    x = leaf([3.0, 1.0, 2.0])
    vals, pos = SortWithIndex.apply(x)
    assert vals.requires_grad and not pos.requires_grad
    (vals * mg.tensor([1.0, 10.0, 100.0], dtype=mg.float64)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [100, 1, 10])

    class Rank(Function):
        @staticmethod
        def forward(ctx, a):
            r = np.argsort(np.argsort(a.data)).astype(a.data.dtype)
            ctx.mark_non_differentiable(r)
            return r

        @staticmethod
        def backward(ctx, g):
            raise AssertionError("never called")

    r = Rank.apply(x)
    assert not r.requires_grad and r.grad_fn is None


def test_missing_output_gradients_are_materialized_as_zeros() -> None:
    class Split(Function):
        @staticmethod
        def forward(ctx, a):
            return a.data * 2, a.data * 3

        @staticmethod
        def backward(ctx, g1, g2):
            assert g1 is not None and g2 is not None
            return g1 * 2 + g2 * 3

    x = leaf([1.0])
    p, _ = Split.apply(x)
    p.sum().backward()
    assert x.grad.item() == 2.0


def test_backward_returning_wrong_number_of_grads_raises() -> None:
    class Bad(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a.data + b.data

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="returned 1 gradients, expected 2"):
        Bad.apply(leaf([1.0]), leaf([1.0])).sum().backward()


# ---- gradcheck itself -----------------------------------------------------------------------
def test_gradcheck_catches_a_wrong_backward_and_names_the_spot() -> None:
    x = leaf([0.5, -1.5])
    with pytest.raises(RuntimeError) as info:
        mg.autograd.gradcheck(lambda t: WrongCube.apply(t, 1.0), [x])
    msg = str(info.value)
    assert "input 0" in msg and "element (0,)" in msg
    # 2 * .5^2 vs 3 * .5^2; the central difference is 0.75 up to its rounding (~1e-11)
    found = re.search(r"analytic ([-\d.e]+), numerical ([-\d.e]+)", msg)
    assert found and float(found[1]) == 0.5 and abs(float(found[2]) - 0.75) < 1e-8
    assert not mg.autograd.gradcheck(lambda t: WrongCube.apply(t, 1.0), [x],
                                     raise_exception=False)
    with pytest.raises(RuntimeError, match="random projection"):
        mg.autograd.gradcheck(lambda t: WrongCube.apply(t, 1.0), [x], fast_mode=True)


def test_gradcheck_names_the_second_input() -> None:
    class WrongMul(Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a.data * b.data

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b, g * b  # second is wrong

    with pytest.raises(RuntimeError, match="input 1 element"):
        mg.autograd.gradcheck(WrongMul.apply, [leaf([1.0, 2.0]), leaf([3.0, 4.0])])


def test_gradgradcheck_catches_a_wrong_second_derivative() -> None:
    class FirstOrderOnly(Function):
        """Right first derivative of x^3, but backward uses a constant (no second order)."""

        @staticmethod
        def forward(ctx, x):
            ctx.d = mg.tensor(3 * x.data ** 2)
            return x.data ** 3

        @staticmethod
        def backward(ctx, g):
            return g * ctx.d

    x = leaf([0.7, 1.3])
    assert mg.autograd.gradcheck(FirstOrderOnly.apply, [x])
    with pytest.raises(RuntimeError, match="Jacobian mismatch"):
        mg.autograd.gradgradcheck(FirstOrderOnly.apply, [x])


def test_gradcheck_options_are_keyword_only() -> None:
    x = leaf([1.0, 2.0])
    with pytest.raises(TypeError):
        mg.autograd.gradcheck(lambda t: t * t, [x], 1e-6)
    with pytest.raises(TypeError):
        mg.autograd.gradgradcheck(lambda t: t * t, [x], None, 1e-6)
    assert mg.autograd.gradgradcheck(lambda t: t * t, [x], None, eps=1e-6)


class OffBy(Function):
    """The identity, whose backward is off by ``delta`` on every diagonal Jacobian entry."""

    @staticmethod
    def forward(ctx, x, delta):
        ctx.delta = delta
        return x.data.clone()

    @staticmethod
    def backward(ctx, g):
        return g * (1 + ctx.delta), None


@pytest.mark.parametrize("fast", [False, True])
def test_fast_mode_accepts_what_the_entrywise_check_accepts(fast: bool) -> None:
    # Entries off by half of atol pass the entry-wise check, so they must pass the
    # projected one: its atol is scaled by sum(u) sum(v) >= u.v (torch's _adjusted_atol).
    x = leaf(np.linspace(-1.0, 1.0, 100).reshape(10, 10))
    check = mg.autograd.gradcheck
    assert check(lambda t: OffBy.apply(t, 5e-6), [x], atol=1e-5, rtol=0.0, fast_mode=fast)
    assert not check(lambda t: OffBy.apply(t, 0.5), [x], atol=1e-5, rtol=1e-3,
                     fast_mode=fast, raise_exception=False)


def test_slow_mode_checks_every_output_of_a_multi_output_function() -> None:
    class SecondWrong(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.data * 2, x.data * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 2  # d(3x)/dx is 3, not 2

    x = leaf([0.5, 1.0, 2.0])
    with pytest.raises(RuntimeError, match="output 1 element \\(0,\\), input 0 element \\(0,\\)"):
        mg.autograd.gradcheck(SecondWrong.apply, [x])
    with pytest.raises(RuntimeError, match="output 1, input 0, random projection"):
        mg.autograd.gradcheck(SecondWrong.apply, [x], fast_mode=True)


def test_gradcheck_warns_for_float32_inputs() -> None:
    with pytest.warns(UserWarning, match="float64"):
        mg.autograd.gradcheck(lambda t: t * 2, [leaf([1.0], mg.float32)], atol=1e-2,
                              rtol=1e-2)


def test_no_grad_as_bare_decorator():
    x = mg.randn(3, requires_grad=True)

    @mg.no_grad
    def double(a):
        return a * 2

    assert not double(x).requires_grad
    assert (x * 2).requires_grad  # the decorator leaves the mode as it was


def test_setitem_drops_leading_unit_dims_like_torch():
    x = mg.zeros(3, dtype=mg.float64, requires_grad=True)
    v = mg.tensor(np.array([[30.0]]), requires_grad=True)
    y = x * 2
    y[1] = v
    (y * mg.tensor(np.array([1.0, 2.0, 3.0]))).sum().backward()
    np.testing.assert_array_equal(y.detach().numpy(), [0.0, 30.0, 0.0])
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 0.0, 6.0])
    assert v.grad.shape == (1, 1) and v.grad.item() == 2.0
    with pytest.raises(RuntimeError, match="shape mismatch"):
        y[1] = mg.tensor(np.array([1.0, 2.0]))


def test_function_saving_its_output_gives_correct_second_derivatives():
    """A backward written with a saved *output* must differentiate through that output."""

    class MyExp(Function):
        @staticmethod
        def forward(ctx, x):
            out = x.exp()
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, g):
            (out,) = ctx.saved_tensors
            return g * out

    x = mg.tensor(np.array([0.3, -1.2, 2.0]), requires_grad=True)
    assert mg.autograd.gradgradcheck(MyExp.apply, (x,))
    (g,) = mg.autograd.grad(MyExp.apply(x).sum(), x, create_graph=True)
    (gg,) = mg.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), np.exp(x.detach().numpy()), rtol=1e-12)


# ---- views and in-place ops on their base -----------------------------------------------------
def test_a_view_taken_before_an_in_place_op_on_its_base_follows_the_write() -> None:
    x = leaf([1.0, 2.0, 3.0])
    y = x * 1
    v = y[0:2]
    v.retain_grad()
    vv = v[1]  # a view of a view
    r = y.reshape(3, 1)
    y.mul_(2)
    assert v.tolist() == [2.0, 4.0] and vv.item() == 4.0
    (v.sum() + vv + r.sum()).backward()  # torch: [2, 2, 0] + [0, 2, 0] + [2, 2, 2]
    np.testing.assert_array_equal(x.grad.numpy(), [4, 6, 2])
    np.testing.assert_array_equal(v.grad.numpy(), [1, 1])
    # A base that needed no gradient gets one through the write, and so do its views.
    x.grad = None
    z = mg.zeros(3, dtype=mg.float64)
    w = z[1:]
    z.add_(x * x)
    assert w.requires_grad
    (w * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 12, 18])


def test_in_place_on_a_base_under_no_grad_leaves_its_views_graphs_alone() -> None:
    x = leaf([1.0, 2.0, 3.0])
    y = x * 1
    v = y[0:2]
    with mg.no_grad():
        y.mul_(2)  # not recorded: as in torch, the views' graphs do not change
    v.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1, 1, 0])


# ---- .grad of leaves: never aliased, never read-only ------------------------------------------
def test_leaf_grads_are_not_shared_after_a_create_graph_backward() -> None:
    x1, x2 = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    (x1 + x2).sum().backward(create_graph=True)  # both leaves receive the same gradient
    (x1 * 5).sum().backward()
    np.testing.assert_array_equal(x1.grad.numpy(), [6, 6])
    np.testing.assert_array_equal(x2.grad.numpy(), [1, 1])


def test_a_grad_carrying_a_graph_is_accumulated_out_of_place() -> None:
    x = leaf([1.0, 2.0])
    (x ** 3).sum().backward(create_graph=True)
    first = x.grad
    assert first.requires_grad
    (x * 2).sum().backward()  # without create_graph: must not write into first
    np.testing.assert_array_equal(first.detach().numpy(), [3, 12])
    np.testing.assert_array_equal(x.grad.numpy(), [5, 14])


@pytest.mark.parametrize("how", ["create_graph", "inputs"])
def test_a_large_broadcast_gradient_leaves_a_writable_grad(how: str) -> None:
    x = mg.randn(300, 300, dtype=mg.float64, requires_grad=True)  # SumBackward broadcasts
    if how == "create_graph":
        x.sum().backward(create_graph=True)
    else:
        x.sum().backward(inputs=[x])
    assert x.grad.numpy().flags.writeable
    x.sum().backward()
    assert np.all(x.grad.numpy() == 2)
    mg.optim.SGD([x], lr=0.1).zero_grad(set_to_none=False)
    assert not np.any(x.grad.numpy())


def test_backward_with_inputs_accumulates_like_backward() -> None:
    x, y = leaf([1.0, 2.0]), leaf([3.0])
    (x * y).sum().backward(inputs=[x])
    (x * y).sum().backward(inputs=[x])
    np.testing.assert_array_equal(x.grad.numpy(), [6, 6])
    assert y.grad is None


# ---- many inputs ------------------------------------------------------------------------------
def test_ops_with_more_than_64_inputs() -> None:
    assert mg.cat([mg.ones(1)] * 100).shape == (100,)
    assert mg.stack([mg.ones(2)] * 70, dim=1).shape == (2, 70)
    xs = [leaf([float(i)]) for i in range(100)]
    (mg.cat(xs) ** 2).sum().backward()
    assert [x.grad.item() for x in xs] == [2.0 * i for i in range(100)]


def test_view_of_a_no_grad_view_survives_an_in_place_write_on_the_base():
    x = mg.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    y = x * 1
    with mg.no_grad():
        v = y[0:2]
    w = v[0:1]  # a view of a view whose parent cannot be redone
    y.mul_(2)
    assert w.item() == 2.0  # shares memory: the write shows
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


def test_autograd_grad_runs_only_what_leads_to_its_inputs() -> None:
    """As in torch: a branch that cannot reach the inputs is not walked (its hooks stay
    quiet), and the walk stops at the inputs (whose own hooks see their gradient)."""
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    w = mg.tensor([3.0, 4.0], requires_grad=True)
    y, z = x * 2, w * 3
    seen = []
    z.register_hook(lambda g: seen.append("z"))
    y.register_hook(lambda g: seen.append("y"))
    (gy,) = mg.autograd.grad((y * z).sum(), [y])
    np.testing.assert_allclose(gy.numpy(), z.detach().numpy())
    assert seen == ["y"]  # z's branch did not run
    (gx,) = mg.autograd.grad((y * z).sum(), [x])
    np.testing.assert_allclose(gx.numpy(), 2 * z.detach().numpy())
    assert seen == ["y", "y"]


def test_a_walk_that_records_for_a_node_hands_out_plain_results() -> None:
    """An SVD at a tie makes the walk record (to differentiate its cotangents again); what
    reaches the user is still a plain, graph-free gradient, and the graph is freed."""
    A = mg.tensor(np.eye(3), dtype=mg.float64, requires_grad=True)
    U, S, Vh = mg.linalg.svd(A)
    loss = ((U * S) @ Vh).sum()
    (g,) = mg.autograd.grad(loss, A, retain_graph=True)
    assert not g.requires_grad and g.grad_fn is None
    loss.backward()
    assert not A.grad.requires_grad
    np.testing.assert_allclose(A.grad.numpy(), np.ones((3, 3)), atol=1e-13)
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()


def test_third_derivative_of_a_square_at_zero_is_zero_not_nan():
    """x ** 2 differentiated three times at 0: the a ** 0 -> 0 * a ** -1 step must not leave
    a nan that a later derivative multiplies through its mask."""
    x = mg.tensor([0.0, 1.5], dtype=mg.float64, requires_grad=True)
    (g1,) = mg.autograd.grad((x ** 2).sum(), x, create_graph=True)
    (g2,) = mg.autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = mg.autograd.grad(g2.sum(), x, allow_unused=True)
    assert g3 is None or np.array_equal(g3.numpy(), [0.0, 0.0])
    (h,) = mg.autograd.grad(((x ** 2) ** 2).sum(), x, create_graph=True)
    (h2,) = mg.autograd.grad(h.sum(), x, create_graph=True)
    (h3,) = mg.autograd.grad(h2.sum(), x)
    np.testing.assert_allclose(h3.numpy(), [0.0, 24 * 1.5])


def test_a_walk_holds_off_the_cyclic_collector_and_restores_it() -> None:
    # The collector is off while the outermost walk runs (nested walks and a user's own
    # gc.disable() are left alone), and back on after it, also when a backward raises.
    import gc

    seen, fail = [], [False]

    class Probe(Function):
        @staticmethod
        def forward(ctx, a):
            return a._array.copy()

        @staticmethod
        def backward(ctx, g):
            seen.append(gc.isenabled())
            if fail[0]:
                raise ValueError("probe")
            return g

    def run(fails: bool) -> None:
        fail[0] = fails
        Probe.apply(leaf([1.0, 2.0])).sum().backward()

    assert gc.isenabled()
    run(False)
    with pytest.raises(ValueError, match="probe"):
        run(True)
    assert seen == [False, False] and gc.isenabled()
    gc.disable()
    try:
        run(False)
        assert seen[-1] is False and not gc.isenabled()
    finally:
        gc.enable()
