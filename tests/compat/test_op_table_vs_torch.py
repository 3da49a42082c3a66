"""The op table and a few composite graphs against torch (float64): values, gradients and
second derivatives; type promotion against torch.result_type. Skips without torch."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings

import minigrad as mg
from tests.ops.table import NUMPY, NUMPY_IDS, SMOOTH, Op, make_arrays
from tests.ops.test_op_table import _is_bool, binary_case

torch = pytest.importorskip("torch")

RTOL, ATOL = 1e-10, 1e-12


def _weights(out_shape: tuple, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(out_shape)


def _run_minigrad(op: Op, arrays: list, w: np.ndarray | None, order: int) -> tuple:
    xs = [mg.tensor(a, requires_grad=True) for a in arrays]
    out = op.fn(mg, *xs)
    if w is None:
        return out.detach().numpy(), ()
    loss = (out * mg.tensor(w)).sum()
    grads = mg.autograd.grad(loss, xs, create_graph=order > 1)
    if order == 1:
        return out.detach().numpy(), [g.numpy() for g in grads]
    total = sum((g * g).sum() for g in grads)  # a scalar built from the first derivatives
    if not total.requires_grad:  # first derivatives constant (a linear op): zero
        return out.detach().numpy(), [np.zeros(a.shape) for a in arrays]
    return out.detach().numpy(), [
        (np.zeros(a.shape) if g is None else g.numpy())
        for g, a in zip(mg.autograd.grad(total, xs, allow_unused=True), arrays)]


def _run_torch(op: Op, arrays: list, w: np.ndarray | None, order: int) -> tuple:
    xs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = op.fn(torch, *xs)
    if w is None:
        return out.detach().numpy(), ()
    loss = (out * torch.tensor(w)).sum()
    grads = torch.autograd.grad(loss, xs, create_graph=order > 1)
    if order == 1:
        return out.detach().numpy(), [g.numpy(force=True) for g in grads]
    total = sum((g * g).sum() for g in grads)
    if not total.requires_grad:
        return out.detach().numpy(), [np.zeros(a.shape) for a in arrays]
    return out.detach().numpy(), [
        (np.zeros(a.shape) if g is None else g.numpy(force=True))
        for g, a in zip(torch.autograd.grad(total, xs, allow_unused=True), arrays)]


def _close(a: np.ndarray, b: np.ndarray, what: str) -> None:
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL * max(1.0, float(np.abs(b).max(
        initial=0.0))), err_msg=what)


@pytest.mark.parametrize("op", NUMPY, ids=NUMPY_IDS)
def test_values_and_gradients_match_torch(op: Op) -> None:
    arrays = make_arrays(op)
    ours, _ = _run_minigrad(op, arrays, None, 1)
    w = _weights(ours.shape)
    ours, our_grads = _run_minigrad(op, arrays, w, 1)
    theirs, their_grads = _run_torch(op, arrays, w, 1)
    assert ours.shape == theirs.shape
    _close(ours, theirs, f"{op.name} value")
    for i, (g, h) in enumerate(zip(our_grads, their_grads)):
        _close(g, h, f"{op.name} gradient of input {i}")


@pytest.mark.parametrize("op", SMOOTH, ids=[op.name for op in SMOOTH])
def test_second_derivatives_match_torch(op: Op) -> None:
    arrays = make_arrays(op)
    w = _weights(_run_minigrad(op, arrays, None, 1)[0].shape)
    _, ours = _run_minigrad(op, arrays, w, 2)
    _, theirs = _run_torch(op, arrays, w, 2)
    for i, (g, h) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(g, h, rtol=1e-9, atol=1e-9,
                                   err_msg=f"{op.name} second derivative, input {i}")


def _graphs(m, x, w1, w2, b):
    """A few graphs mixing broadcasting, reuse, indexing and reductions."""
    h = (x @ w1 + b).relu()
    logits = h @ w2
    ce = -(logits.log_softmax(-1)[[0, 1, 2, 3], [1, 0, 2, 1]]).mean()
    attn = (x @ x.mT / 2.0).softmax(-1) @ x
    norm = (x - x.mean(0, keepdim=True)) / (x.var(0, keepdim=True) + 1e-5).sqrt()
    return ce + attn.tanh().sum() * 0.1 + (norm * norm.sigmoid()).amax() + \
        m.stack([h.sum(1), logits.logsumexp(1)], 1).prod(1).sum() * 1e-3


def test_composite_graph_matches_torch() -> None:
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s) for s in ((4, 5), (5, 6), (6, 3), (6,))]
    ours_x = [mg.tensor(a, requires_grad=True) for a in arrays]
    theirs_x = [torch.tensor(a, requires_grad=True) for a in arrays]
    ours, theirs = _graphs(mg, *ours_x), _graphs(torch, *theirs_x)
    _close(ours.detach().numpy(), theirs.detach().numpy(), "composite value")
    ours.backward()
    theirs.backward()
    for i, (a, b) in enumerate(zip(ours_x, theirs_x)):
        _close(a.grad.numpy(), b.grad.numpy(), f"composite gradient of input {i}")


def test_in_place_graph_matches_torch() -> None:
    def run(m, a, b):
        x = a * 1
        x.mul_(b)
        x[1:3] = b[:2].exp()
        x.add_(a.sin(), alpha=0.5)
        return (x * x).sum()

    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal(5) for _ in range(2)]
    ours_x = [mg.tensor(a, requires_grad=True) for a in arrays]
    theirs_x = [torch.tensor(a, requires_grad=True) for a in arrays]
    run(mg, *ours_x).backward()
    run(torch, *theirs_x).backward()
    for a, b in zip(ours_x, theirs_x):
        _close(a.grad.numpy(), b.grad.numpy(), "in-place graph gradient")


def _to_torch(x: object) -> object:
    return torch.from_numpy(np.array(x.numpy())) if isinstance(x, mg.Tensor) else x


TORCH_BINARY = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y,
                "mul": lambda x, y: x * y, "div": lambda x, y: x / y}


@settings(max_examples=100, deadline=None)
@given(binary_case())
def test_binary_promotion_matches_torch(case: tuple) -> None:
    name, (a, b) = case
    ta, tb = _to_torch(a), _to_torch(b)
    if name == "sub" and any(_is_bool(v) for v in (a, b)):
        with pytest.raises(RuntimeError, match="bool"):
            ta - tb
        return
    if name == "maximum":
        assume(isinstance(ta, torch.Tensor) and isinstance(tb, torch.Tensor))
        expected = torch.maximum(ta, tb)
    else:
        expected = TORCH_BINARY[name](ta, tb)
    ours = mg.maximum(a, b) if name == "maximum" else TORCH_BINARY[name](a, b)
    assert str(ours.dtype) == str(expected.dtype).removeprefix("torch."), (name, a, b)
    np.testing.assert_allclose(ours.numpy().astype(np.float64),
                               expected.numpy().astype(np.float64), rtol=2e-3, atol=1e-3)


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64, np.int64, np.bool_])
@pytest.mark.parametrize("scalar", [True, 2, 2.5])
def test_scalar_promotion_matches_torch(dt: type, scalar: object) -> None:
    ours = mg.tensor(np.ones(2, dt)) * scalar
    theirs = torch.from_numpy(np.ones(2, dt)) * scalar
    assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
