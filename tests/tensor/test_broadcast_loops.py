"""Broadcast operands widened for long numpy loops (minigrad/_broadcast.py): the same
values as numpy's own broadcasting, through the elementwise ops and the engine."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import minigrad as mg
from minigrad import _broadcast
from minigrad._broadcast import long_loops, widen
from minigrad.ops import arith

SHAPES = [(64, 80, 3), (64, 1, 3), (1, 1, 3), (64, 80, 1), (64, 1, 1), (1, 80, 3), (80, 3),
          (3,), (1,), (40, 1, 7, 20), (1, 30, 1, 20), (40, 30, 7, 1)]


def test_widened_operands_give_numpys_values_for_every_broadcast() -> None:
    rng = np.random.default_rng(0)
    for s1, s2 in itertools.product(SHAPES, SHAPES):
        try:
            shape = np.broadcast_shapes(s1, s2)
        except ValueError:
            continue
        x, y = rng.standard_normal(s1), rng.standard_normal(s2)
        for xv in (x, np.broadcast_to(x, shape)):  # a broadcast view, as a sum's gradient
            a, b = long_loops(xv, y)
            np.testing.assert_array_equal(a - b, xv - y)
            np.testing.assert_array_equal(a * b, xv * y)


def test_a_middle_broadcast_is_repeated_and_a_cheap_one_left_alone() -> None:
    shape = (256, 100, 3)
    assert widen(np.ones((256, 1, 3)), shape).shape == shape  # loops of 3: repeated
    assert widen(np.ones((1, 1, 3)), shape).shape == (1, 100, 3)  # long enough after one
    cheap = np.ones((256, 1, 1))  # numpy's loop runs over 300 already
    assert widen(cheap, shape) is cheap


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_elementwise_ops_and_their_gradients_match_torch_on_middle_broadcasts(op) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((64, 80, 3)), rng.standard_normal((64, 1, 3)) + 3
    x, y = mg.tensor(a, requires_grad=True), mg.tensor(b, requires_grad=True)
    u, v = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    g = rng.standard_normal(a.shape)
    out, ref = getattr(x, op)(y), getattr(u, op)(v)
    (out.mean(1, keepdim=True) * out).backward(mg.tensor(g))  # broadcast views meet in it
    (ref.mean(1, keepdim=True) * ref).backward(torch.tensor(g))
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-13)
    np.testing.assert_allclose(x.grad.numpy(), u.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(y.grad.numpy(), v.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_the_elementwise_ops_and_the_engine_take_the_wide_path(monkeypatch) -> None:
    calls = []
    real = _broadcast.widen

    def spy(y, shape):
        calls.append(y.shape)
        return real(y, shape)

    monkeypatch.setattr(_broadcast, "widen", spy)
    x = mg.tensor(np.ones((64, 80, 3)), requires_grad=True)
    c = mg.tensor(np.ones((64, 1, 3)), requires_grad=True)
    (x - c).sum().backward()
    assert (64, 1, 3) in calls


def test_a_scalar_operand_is_left_as_it_is() -> None:
    # a 0-d divisor keeps Div's own handling of x / 0 (inf, silently, as torch)
    zero = np.zeros(())
    assert widen(zero, (256, 100, 3)) is zero
    x = mg.tensor(np.ones((256, 100, 3)))
    with np.errstate(all="raise"):
        assert np.isinf((x / mg.tensor(0.0)).numpy()).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.complex64,
                                   np.uint8, np.complex128])
def test_the_repeat_kernel_gives_numpys_repeat_for_every_item_size_and_layout(dtype) -> None:
    # 4- and 8-byte items take the kernel (their bits copied), the others np.repeat
    rng = np.random.default_rng(2)
    for shape, axis in (((256, 1, 3), 1), ((7, 1), 1), ((1, 5), 0), ((3, 1, 4, 2), 1),
                        ((2, 3, 1, 5), 2), ((4, 1, 20), 1)):
        y = (rng.standard_normal(shape) * 100).astype(dtype)
        for v in (y, np.asfortranarray(y), y[::-1]):
            got = _broadcast.repeat(v, 37, axis)
            assert got.flags.c_contiguous and got.dtype == v.dtype
            np.testing.assert_array_equal(got, np.repeat(v, 37, axis=axis))
    raw = np.zeros(24 * np.dtype(dtype).itemsize + 1, np.uint8)
    unaligned = np.ndarray((8, 1, 3), dtype, raw.data, 1)  # one byte off: np.repeat's
    np.testing.assert_array_equal(_broadcast.repeat(unaligned, 4, 1),
                                  np.repeat(unaligned, 4, axis=1))
    nan = np.array([[[np.nan, -0.0, np.inf]]], dtype) if np.dtype(dtype).kind in "fc" else None
    if nan is not None:  # bits, not values: nan and -0.0 stay what they were
        got = _broadcast.repeat(nan, 5, 1)
        assert np.array_equal(got.view(np.uint8), np.repeat(nan, 5, axis=1).view(np.uint8))


def test_short_rows_are_repeated_by_the_kernel(monkeypatch) -> None:
    monkeypatch.setattr(_broadcast.np, "repeat", None)  # np.repeat is not called
    y = np.arange(6.0).reshape(2, 1, 3)
    np.testing.assert_array_equal(widen(y, (2, 4000, 3)), np.broadcast_to(y, (2, 4000, 3)))


def test_a_broadcast_subtrahend_is_summed_before_it_is_negated(monkeypatch) -> None:
    # x - mean(x): the mean's gradient is -sum(g), negated at the mean's size, not g's
    torch = pytest.importorskip("torch")
    negated = []
    real = mg.Tensor.__neg__

    def spy(t):
        negated.append(tuple(t.shape))
        return real(t)

    def spy_numpy(a):  # a first-order walk negates in numpy
        negated.append(a.shape)
        return np.negative(a)

    monkeypatch.setattr(mg.Tensor, "__neg__", spy)
    monkeypatch.setattr(arith, "_negative", spy_numpy)
    a = np.random.default_rng(3).standard_normal((64, 80, 3))
    g = np.random.default_rng(4).standard_normal(a.shape)
    u = torch.tensor(a, requires_grad=True)
    (u - u.mean(1, keepdim=True)).backward(torch.tensor(g))
    for create_graph in (False, True):
        x = mg.tensor(a, requires_grad=True)
        (x - x.mean(1, keepdim=True)).backward(mg.tensor(g), create_graph=create_graph)
        assert negated == [(64, 1, 3)]
        negated.clear()
        np.testing.assert_allclose(x.grad.numpy(), u.grad.numpy(), rtol=1e-12, atol=1e-14)
    c = mg.tensor(a[:2, :3], requires_grad=True)  # and to second order, a 1-d subtrahend
    assert mg.autograd.gradgradcheck(lambda c: ((c - c[0, 0]) ** 3).sum(), (c,))


def test_a_widened_operand_takes_the_result_in_place(monkeypatch) -> None:
    # binary writes fn(x, y) into the fresh array widen made, not a new one: numpy's values,
    # either side widened, through the ops and the engine's add of a broadcast gradient
    made = []
    real = _broadcast.widen

    def spy(y, shape):
        out = real(y, shape)
        made.append(out)
        return out

    monkeypatch.setattr(_broadcast, "widen", spy)
    rng = np.random.default_rng(5)
    x, m = rng.standard_normal((64, 80, 3)), rng.standard_normal((64, 1, 3))
    for fn, a, b in ((np.subtract, x, m), (np.subtract, m, x), (np.add, m, x),
                     (np.multiply, x.astype(np.float32), m.astype(np.float32)),
                     (np.add, np.ones((64, 80, 3), np.int64), np.ones((64, 1, 3), np.int64))):
        made.clear()
        out = _broadcast.binary(fn, a, b)
        np.testing.assert_array_equal(out, fn(a, b))
        assert any(np.shares_memory(out, w) for w in made if w is not a and w is not b)
    np.testing.assert_array_equal((mg.tensor(x) - mg.tensor(m)).numpy(), x - m)
    t, g = mg.tensor(x, requires_grad=True), m * np.ones_like(x)
    (t - t.mean(1, keepdim=True) * 2).backward(mg.tensor(g))
    want = g - 2 * g.sum(1, keepdims=True) / 80  # g, and the mean's share of -2 g
    np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_operands_each_widened_partly_keep_the_broadcast_shape(op) -> None:
    """(1, 64, 1) with a (64, 64, 3) expanded from (1, 64, 1): each is widened only where
    its own loop was short, and together they had lost the first axis ((1, 64, 3)); the
    engine's adding of two such gradients failed to sum to the input's shape."""
    rng = np.random.default_rng(0)
    a0, b0 = rng.random((1, 64, 1)), rng.random((1, 64, 1))
    a, b = mg.tensor(a0), mg.tensor(b0).expand(64, 64, 3)
    f = {"add": np.add, "sub": np.subtract, "mul": np.multiply}[op]
    out = {"add": a + b, "sub": a - b, "mul": a * b}[op]
    np.testing.assert_array_equal(out.numpy(), f(a0, np.broadcast_to(b0, (64, 64, 3))))
    x = mg.tensor(rng.random((64, 64, 3)), requires_grad=True)
    y = x * 2.0
    G1, G2 = (mg.tensor(rng.random((1, 64, 1))).expand(64, 64, 3) for _ in range(2))
    (g,) = mg.autograd.grad([y, y], [x], [G1, G2])
    np.testing.assert_allclose(g.numpy(), 2 * (G1.numpy() + G2.numpy()))
