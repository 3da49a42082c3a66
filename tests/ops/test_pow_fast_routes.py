"""The fast routes of ``x ** b`` for b in 0, 1, 2, 3, -1, -2, 0.5, -0.5: values bitwise as
torch's (which special-cases the same exponents), edge values included, dtypes as torch's,
and first and second derivatives against finite differences and torch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import minigrad as mg

torch = pytest.importorskip("torch")

FAST = [0, 1, 2, 3, -1, -2, 0.5, -0.5, 2.0, 3.0, -1.0]
EDGES = [-2.5, -1.0, -0.0, 0.0, 0.3, 1.0, 2.0, np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("b", FAST)
def test_values_and_dtype_match_torch_bitwise(dtype: type, b: float) -> None:
    rng = np.random.default_rng(0)
    x = np.concatenate([np.array(EDGES), rng.standard_normal(50) * 3]).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 0 ** -1 = inf and (-1) ** 0.5 = nan silently, as torch
        ours = (mg.tensor(x) ** b).numpy()
    theirs = (torch.tensor(x) ** b).numpy()
    assert ours.dtype == theirs.dtype
    if dtype is np.float32 and b == 0.5:
        # torch's float32 sqrt is off by an ulp at times; ours is numpy's, correctly rounded.
        with np.errstate(invalid="ignore"):
            np.testing.assert_array_equal(ours, np.sqrt(x))
        np.testing.assert_array_max_ulp(ours, theirs, maxulp=1)
        return
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("b", [2, 3, 0.5, -1])
def test_integer_base_follows_torch_promotion(b: float) -> None:
    x = np.array([0, 1, 2, 5, 9])
    if b == -1:
        with pytest.raises(RuntimeError, match="negative integer powers"):
            mg.tensor(x) ** b
        return
    ours, theirs = (mg.tensor(x) ** b).numpy(), (torch.tensor(x) ** b).numpy()
    assert ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_zero_dim_and_out_is_fresh_memory() -> None:
    x = mg.tensor(np.float64(1.5))
    for b in FAST:
        y = x ** b
        assert y.shape == () and type(y.numpy()) is np.ndarray
        assert y.item() == pytest.approx(1.5 ** b)
    y = x ** 1
    y.numpy()[...] = 7.0
    assert x.item() == 1.5


@pytest.mark.parametrize("b", FAST)
def test_gradients_match_torch_at_edges(b: float) -> None:
    # Includes 0 and negatives, where torch's g * (b * x ** (b - 1)) gives inf or nan.
    x0 = np.array([-2.0, -0.0, 0.0, 0.3, 1.0, 2.5])
    x = mg.tensor(x0, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (x ** b).backward(mg.ones(6, dtype=mg.float64))  # no .sum(): inf + -inf warns
    tx = torch.tensor(x0, requires_grad=True)
    (tx ** b).backward(torch.ones(6, dtype=torch.float64))
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


@pytest.mark.parametrize("b", FAST)
def test_gradcheck_and_gradgradcheck(b: float) -> None:
    x = mg.tensor(np.random.default_rng(1).uniform(0.5, 2.0, (3, 4)), requires_grad=True)
    assert mg.autograd.gradcheck(lambda t: t ** b, (x,))
    assert mg.autograd.gradgradcheck(lambda t: t ** b, (x,))


@pytest.mark.parametrize("b", [2, 3, -1, 0.5, -0.5])
def test_second_derivative_matches_torch(b: float) -> None:
    x0 = np.array([0.4, 1.0, 2.5])
    x = mg.tensor(x0, requires_grad=True)
    (g,) = mg.autograd.grad((x ** b).sum(), x, create_graph=True)
    (gg,) = mg.autograd.grad(g.sum(), x)
    tx = torch.tensor(x0, requires_grad=True)
    (tg,) = torch.autograd.grad((tx ** b).sum(), tx, create_graph=True)
    (tgg,) = torch.autograd.grad(tg.sum(), tx)
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=1e-15)
    np.testing.assert_allclose(gg.numpy(), tgg.numpy(), rtol=1e-14)


def test_zero_exponent_gradient_is_zeros_as_torch() -> None:
    x = mg.tensor([0.0, np.nan, 2.0], requires_grad=True)
    (x ** 0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0])


def test_saved_base_is_version_checked() -> None:
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = y ** 3
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_where_against_zero_is_bitwise_np_where(dtype: type) -> None:
    # Where(mask, g, 0) (relu's backward) takes a bit-mask route: inf, nan and -0.0 must
    # survive where taken and become +0.0 elsewhere, as np.where (and torch) give.
    x = np.array([[1.5, -0.0, np.inf, np.nan], [-np.inf, 0.0, -2.0, np.nan]], dtype)
    cond = np.array([[True, True, True, True], [False, False, False, False]])
    for z in (0, 0.0):
        for keep in (True, False):
            want = np.where(cond, x, z) if keep else np.where(cond, z, x)
            got = (mg.where(mg.tensor(cond), mg.tensor(x), z) if keep
                   else mg.where(mg.tensor(cond), z, mg.tensor(x))).numpy()
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    g = mg.tensor(x.T[:3])  # a transposed (non-contiguous) operand
    got = np.ascontiguousarray(mg.where(mg.tensor(cond.T[:3].copy()), g, 0).numpy())
    want = np.ascontiguousarray(np.where(cond.T[:3], x.T[:3], 0))
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
