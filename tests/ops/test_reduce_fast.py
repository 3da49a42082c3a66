"""The layout-routed sums, sums of squares and maxima (ops/reduce_fast.py) against numpy's
plain reduce, the ops built on them (sum, mean, var, std, norm, amax) against torch,
forward and backward, and the float32 accuracy of long sums."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd import engine
from minigrad.ops import reduce, reduce_fast
from minigrad.ops._layout_kernels import BLOCK as KERNEL_BLOCK
from minigrad.ops.reduce_fast import fast_max, fast_sum, fast_sumsq, plain_sum

SHAPES = [(256, 100, 3), (64, 3, 1000), (300, 40), (5, 1, 7, 300, 2), (3000, 2), (2, 5000),
          (3, 2100, 2), (5000,)]


def _layouts(a: np.ndarray):
    """a itself, a transposed view, a sliced (strided) view, float32 of a, and broadcast
    views (a backward's gradients): one repeated along its second dim, one of a single
    value."""
    yield a
    yield a.T
    yield a[..., ::2] if a.shape[-1] > 1 else a[::2]
    yield a.astype(np.float32)
    yield np.broadcast_to(a[:, :1] if a.ndim > 1 else a[:1], a.shape)
    yield np.broadcast_to(a.reshape(-1)[:1].reshape((1,) * a.ndim), a.shape)


def _all_dims(ndim: int):
    for r in range(1, ndim + 1):
        yield from itertools.combinations(range(ndim), r)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("block", [1024, 7])
def test_fast_sum_matches_the_plain_sum_on_every_layout_and_dims(shape, block,
                                                                  monkeypatch) -> None:
    monkeypatch.setattr(reduce_fast, "_BLOCK", block)  # 7: blocks of blocks, and remainders
    a = np.random.default_rng(0).standard_normal(shape)
    for v in _layouts(a):
        for dims in _all_dims(v.ndim):
            for keepdim in (False, True):
                got, ref = fast_sum(v, dims, keepdim), plain_sum(v, dims, keepdim)
                assert got.shape == ref.shape and got.dtype == ref.dtype
                assert not np.shares_memory(got, v)
                tol = 1e-5 if v.dtype == np.float32 else 1e-12
                np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * np.sqrt(v.size))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("block", [1024, 7])
def test_fast_sumsq_matches_the_plain_sum_of_squares_on_every_layout_and_dims(
        shape, block, monkeypatch) -> None:
    monkeypatch.setattr(reduce_fast, "_BLOCK", block)  # 7: rows of blocks, and tails
    monkeypatch.setattr(reduce_fast, "_DOT_FROM", 2)  # short rows take the dots too
    a = np.random.default_rng(7).standard_normal(shape)
    for v in _layouts(a):
        for dims in _all_dims(v.ndim):
            for keepdim in (False, True):
                got, ref = fast_sumsq(v, dims, keepdim), plain_sum(v * v, dims, keepdim)
                assert got.shape == ref.shape and got.dtype == ref.dtype
                assert not np.shares_memory(got, v)
                tol = 1e-5 if v.dtype == np.float32 else 1e-12
                np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * np.sqrt(v.size))


def test_sums_of_squares_over_long_rows_are_dots(monkeypatch) -> None:
    # no squared copy: x * x would be one
    monkeypatch.setattr(reduce_fast, "plain_sumsq", None)
    rng = np.random.default_rng(8)
    for dtype in (np.float32, np.float64):
        a = rng.standard_normal((64, 3, 1000)).astype(dtype)
        for dims, keepdim in (((2,), False), ((1, 2), True), ((0, 1, 2), False)):
            tol = 1e-5 if dtype == np.float32 else 1e-12
            np.testing.assert_allclose(fast_sumsq(a, dims, keepdim),
                                       plain_sum(a * a, dims, keepdim), rtol=tol)
    x = rng.random(10**6, np.float32) + 1  # as accurate as numpy's pairwise sum
    exact = (x.astype(np.float64) ** 2).sum()
    assert abs(float(fast_sumsq(x, (0,), False)) - exact) / exact < 1e-6


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_whole_arrays_sum_of_squares_is_the_blocked_kernels(dtype, monkeypatch) -> None:
    """All dims of a C-contiguous array: the kernel (blocks of 1024 squares, their sums
    summed in two levels here, and a tail), every term counted once; no dots. Squares of
    0, 1 and 2 keep every partial sum an integer below 2^24: exact in float32 too, in any
    order the vector lanes of a CPU take (the accuracy test above is numpy's pairwise sum's)."""
    monkeypatch.setattr(reduce_fast, "_dots", None)
    monkeypatch.setattr(reduce_fast, "plain_sumsq", None)
    x = np.random.default_rng(9).integers(0, 3, 1024 * 1030 + 5).astype(dtype)  # 3 | size
    x[-1] = 2  # the tail's last term
    exact = int((x.astype(np.int64) ** 2).sum())
    assert exact < 2**24
    for shape in [(x.size,), (3, x.size // 3), (1, x.size)]:
        for keepdim in (True, False):
            got = fast_sumsq(x.reshape(shape), tuple(range(len(shape))), keepdim)
            assert got.shape == ((1,) * len(shape) if keepdim else ()) and got.dtype == dtype
            assert float(got.reshape(())) == exact
    small = np.array([3.0, 4.0], dtype)
    assert float(fast_sumsq(small, (0,), False)) == 25.0
    scalar = fast_sumsq(np.asarray(-3.0, dtype), (), True)  # 0-d: all (no) dims
    assert scalar.shape == () and scalar.dtype == dtype and float(scalar) == 9.0


@pytest.mark.parametrize("shape", SHAPES)
def test_fast_max_equals_numpy_on_every_layout_and_dims(shape) -> None:
    a = np.random.default_rng(1).standard_normal(shape)
    a.flat[::5] = a.flat[2]  # ties
    a.flat[7] = np.nan
    for v in [*_layouts(a), np.nan_to_num(a * 100).astype(np.int32)]:
        for dims in _all_dims(v.ndim):
            for keepdim, is_max in itertools.product((False, True), (False, True)):
                ufunc = np.maximum if is_max else np.minimum
                got = fast_max(v, dims, keepdim, is_max)
                ref = ufunc.reduce(v, axis=dims, keepdims=keepdim)
                assert got.shape == ref.shape and got.dtype == ref.dtype
                np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_max_kernels_keep_numpys_nan_and_order_without_numpys_reduce(dtype,
                                                                          monkeypatch) -> None:
    info = np.finfo(dtype)
    special = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, info.max, -info.max,
                        info.tiny, -info.tiny, info.smallest_subnormal, 1.0, -1.0], dtype)
    rng = np.random.default_rng(11)
    # rows (short and long), and kept last axes of 40 to 200 lanes: each a kernel's
    for shape, dims in (((40, 1000), (1,)), ((300, 17), (1,)), ((5, 20, 3, 17), (2, 3)),
                        ((3, 50, 40), (1,)), ((50, 100), (0,)), ((2, 3, 5, 200), (1, 2))):
        a = rng.standard_normal(shape).astype(dtype)
        flat = a.reshape(-1)
        flat[rng.integers(0, flat.size, 3 * special.size)] = np.tile(special, 3)
        flat[rng.integers(0, flat.size, 10)] = np.nan
        flat[:17] = flat[-1] = np.nan  # at the ends of rows (of 17: one wholly)
        flat[flat.size // 2: flat.size // 2 + 40] = -np.inf
        for is_max, keepdim in itertools.product((True, False), (False, True)):
            ufunc = np.maximum if is_max else np.minimum
            ref = ufunc.reduce(a, axis=dims, keepdims=keepdim)
            with monkeypatch.context() as m:  # numpy's max and min are not called
                m.setattr(reduce_fast, "_maximum", None)
                m.setattr(reduce_fast, "_minimum", None)
                got = fast_max(a, dims, keepdim, is_max)
            assert got.shape == ref.shape and got.dtype == ref.dtype
            np.testing.assert_array_equal(got, ref)  # NaN where numpy's is, and values
            assert np.isnan(got).any() and not np.isnan(got).all()


@pytest.mark.parametrize("n", [10**6, 3 * 10**6 + 17])
def test_a_long_float32_sum_keeps_the_accuracy_of_a_pairwise_sum(n) -> None:
    # one float32 accumulator running over all of them is off by ~1e-5 here; a single BLAS
    # dot by ~1e-7; numpy's pairwise sum (and the blocks) by ~1e-8
    rng = np.random.default_rng(2)
    for x in (rng.random(n, np.float32), (rng.random(n) + 1).astype(np.float32)):
        exact = x.astype(np.float64).sum()
        for view in (x, x.reshape(-1, 1) if n % 2 else x.reshape(2, -1)):
            got = fast_sum(view, tuple(range(view.ndim)), False)
            assert abs(float(got) - exact) / exact < 1e-6
    rows = rng.random((3, 700_000), np.float32)  # long rows, and a long middle axis
    exact = rows.astype(np.float64).sum(axis=1)
    assert np.max(np.abs(fast_sum(rows, (1,), False) - exact) / exact) < 1e-6
    cols = np.ascontiguousarray(rows.T.reshape(700_000, 3, 1))
    assert np.max(np.abs(fast_sum(cols, (0,), False).ravel() - exact) / exact) < 1e-6


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_middle_sum_of_short_rows_is_one_selector_product(dtype, monkeypatch) -> None:
    # (b, r, k) over r, k <= 4, in a batch: one product with a 0/1 selector, as accurate as
    # the ones vector's; long rows, few matrices or much work keep the ones vector
    made = []
    real = reduce_fast._selector.__wrapped__
    monkeypatch.setattr(reduce_fast, "_selector", lambda *a: made.append(a) or real(*a))
    rng = np.random.default_rng(7)
    tol = 1e-5 if dtype == np.float32 else 1e-13
    for shape, taken in (((256, 100, 3), True), ((4096, 10, 2), True), ((64, 20, 4), True),
                         ((8, 100, 3), False), ((256, 100, 8), False), ((64, 1000, 3), False)):
        a = (rng.random(shape) + 1).astype(dtype)  # terms of one sign: a relative bound
        made.clear()
        got = fast_sum(a, (1,), False)
        assert bool(made) is taken
        exact = a.astype(np.float64).sum(axis=1)
        assert got.dtype == dtype and np.max(np.abs(got - exact) / exact) < tol
        np.testing.assert_allclose(fast_sum(a, (1,), True), got[:, None], rtol=0)


def test_the_engine_undoes_broadcasting_through_the_fast_sum(monkeypatch) -> None:
    calls = []

    def spy(x, dims, keepdim):
        calls.append((x.shape, dims))
        return fast_sum(x, dims, keepdim)

    monkeypatch.setattr(reduce, "fast_sum", spy)
    monkeypatch.setattr(engine, "fast_sum", spy)  # a first-order walk sums there itself
    rng = np.random.default_rng(3)
    x = mg.tensor(rng.standard_normal((256, 100, 3)))
    c = mg.tensor(rng.standard_normal((256, 1, 3)), requires_grad=True)
    g = rng.standard_normal((256, 100, 3))
    (x - c).backward(mg.tensor(g))
    assert ((256, 100, 3), (1,)) in calls
    np.testing.assert_allclose(c.grad.numpy(), -plain_sum(g, (1,), True), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_sum_over_broadcast_dims_is_their_count_times_one_term(dtype) -> None:
    # n equal terms sum to n times one of them, rounded once (numpy's loop adds them one by
    # one, rounding each time: it differs from n * x here, so this fails without the rule)
    col = (np.arange(1, 257, dtype=dtype) / 10).reshape(256, 1, 1)
    g = np.broadcast_to(col, (256, 100, 3))
    for dims, keepdim in (((1,), True), ((1, 2), False), ((0, 1, 2), False), ((2,), True)):
        got = fast_sum(g, dims, keepdim)
        want = plain_sum(np.ascontiguousarray(g[:, :1, :1]), dims, keepdim) * dtype(
            np.prod([(1, 100, 3)[d] for d in dims]))
        if 0 not in dims:
            want = want * np.ones_like(plain_sum(g, dims, keepdim))  # the kept dims' shape
        assert got.dtype == dtype and got.shape == plain_sum(g, dims, keepdim).shape
        assert got.flags.c_contiguous and got.flags.writeable
        np.testing.assert_array_equal(got, want)
    assert not np.array_equal(plain_sum(g, (1,), True), fast_sum(g, (1,), True))


def test_small_sums_keep_numpys_reduce(monkeypatch) -> None:
    # below the threshold the ufunc alone runs: it is the cheaper one there
    monkeypatch.setattr(reduce_fast, "_sum_rows", None)
    monkeypatch.setattr(reduce_fast, "_sum_middle", None)
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(fast_sum(x, (0,), False), x.sum(0))


OPS = {
    "sum": lambda t, d: t.sum(d),
    "mean": lambda t, d: t.mean(d),
    "var": lambda t, d: t.var(d),
    "std": lambda t, d: t.std(d),
    "norm": lambda t, d: t.norm(dim=d),
    "amax": lambda t, d: t.amax(d),
    "amin": lambda t, d: t.amin(d),
}


@pytest.mark.parametrize("op", OPS)
def test_reductions_agree_with_torch_forward_and_backward(op) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    for shape, dtype in (((64, 30, 3), np.float64), ((16, 3, 200), np.float32)):
        a = rng.standard_normal(shape).astype(dtype)
        if op in ("amax", "amin"):
            a[:, :2] = np.round(a[:, :2])  # ties
        for dim in [*range(len(shape)), (0, 2), None]:
            x, t = mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
            y, u = OPS[op](x, dim), OPS[op](t, dim)
            g = rng.standard_normal(tuple(u.shape)).astype(dtype)
            y.backward(mg.tensor(g))
            u.backward(torch.tensor(g))
            tol = 1e-4 if dtype == np.float32 else 1e-10
            np.testing.assert_allclose(y.detach().numpy(), u.detach().numpy(), rtol=tol,
                                       atol=tol)
            np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("op", OPS)
def test_reductions_gradcheck_to_second_order(op, monkeypatch) -> None:
    # small arrays through the fast route, with blocks of 4 so they are split too
    monkeypatch.setattr(reduce_fast, "_FAST_FROM", 1)
    monkeypatch.setattr(reduce_fast, "_BLOCK", 4)
    monkeypatch.setattr(reduce_fast, "_DOT_FROM", 2)  # the norm's rows of dots too
    rng = np.random.default_rng(5)
    a = mg.tensor(rng.standard_normal((3, 9, 2)), requires_grad=True)
    for dim in (0, 1, 2, (0, 2)):
        def f(t, dim=dim):
            return (OPS[op](t, dim) ** 2).sum()
        assert mg.autograd.gradcheck(f, (a,))
        if op not in ("amax", "amin"):  # piecewise linear: its second derivative is 0 a.e.
            assert mg.autograd.gradgradcheck(f, (a,))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_whole_norms_first_order_gradient_is_the_recorded_one(dtype) -> None:
    """A first-order backward takes numpy's steps alone (one norm: 0-d operands): the same
    numbers, dtype and shape as the recorded backward's, at 0 too (its subgradient 0)."""
    rng = np.random.default_rng(11)
    for shape, keepdim in (((80, 80), False), ((20, 4, 20), True), ((7,), False),
                           ((1, 5), True), ((3, 0), False)):
        for a in (rng.standard_normal(shape).astype(dtype), np.zeros(shape, dtype)):
            dim = None if not keepdim else tuple(range(len(shape)))
            x = mg.tensor(a, requires_grad=True)
            y = x.norm(2, dim, keepdim)
            g = mg.tensor(rng.standard_normal(tuple(y.shape)).astype(dtype))
            first, = mg.autograd.grad(y, x, g)
            recorded, = mg.autograd.grad(x.norm(2, dim, keepdim), x, g,
                                         create_graph=True)
            assert first.dtype == recorded.dtype and first.shape == recorded.shape
            np.testing.assert_array_equal(first.numpy(), recorded.detach().numpy())


def test_amax_finds_its_ties_after_forward_and_refuses_an_inplace_change() -> None:
    x = mg.tensor([[1.0, 3.0, 3.0], [2.0, 0.0, -1.0]], requires_grad=True)
    y = x.amax(1)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0.5, 0.5], [1, 0, 0]])
    x2 = mg.tensor([[1.0, 3.0]], requires_grad=True)
    z = x2 * 1.0
    m = z.amax(1)
    z.mul_(2.0)  # the ties found in backward would be the new ones: refused, as in torch
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        m.sum().backward()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_sum_of_everything_is_one_product_and_numpys_sum(dtype, monkeypatch) -> None:
    # a C-contiguous array summed over all its dims skips the routing: its block sums come
    # from one product, added pairwise with the remainder (blocks of 7: many, and a tail)
    monkeypatch.setattr(reduce_fast, "_sum_rows", None)
    monkeypatch.setattr(reduce_fast, "_sum_middle", None)
    rng = np.random.default_rng(6)
    for block in (1024, 7):
        monkeypatch.setattr(reduce_fast, "_BLOCK", block)
        for shape in ((256, 100, 3), (64, 3, 1000), (5003,)):
            a = rng.standard_normal(shape).astype(dtype)
            for keepdim in (False, True):
                dims = tuple(range(a.ndim))
                got, ref = fast_sum(a, dims, keepdim), plain_sum(a, dims, keepdim)
                assert got.shape == ref.shape and got.dtype == ref.dtype
                tol = 1e-5 if dtype == np.float32 else 1e-12
                np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * np.sqrt(a.size))
    x = mg.tensor(a.reshape(-1, 1), requires_grad=True)  # and through sum and mean
    for keepdim in (False, True):
        x.grad = None
        x.mean(keepdim=keepdim).backward()
        np.testing.assert_allclose(x.grad.numpy(), np.full(x.shape, 1 / x.numel()), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_sum_kernel_over_block_edges_and_levels_matches_the_plain_sum(dtype) -> None:
    # a whole contiguous array: the kernel's blocks, their tails and a third level
    rng = np.random.default_rng(9)
    block = KERNEL_BLOCK
    for n in (4096, block * 5 - 1, block * 5 + 1, block * block, block * block + 17,
              2 * block * block + 5):
        a = rng.standard_normal(n).astype(dtype)
        got, ref = fast_sum(a, (0,), False), plain_sum(a, (0,), False)
        assert got.shape == ref.shape == () and got.dtype == ref.dtype
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * np.sqrt(n))
        if n <= block * block + 17:  # and as rows: the row kernel, its scratch reused
            rows = rng.standard_normal((3, n)).astype(dtype)
            got, ref = fast_sum(rows, (1,), True), plain_sum(rows, (1,), True)
            assert got.shape == ref.shape == (3, 1) and got.dtype == ref.dtype
            np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * np.sqrt(n))
    swapped = rng.standard_normal((5, 1000)).astype(np.dtype(dtype).newbyteorder())
    raw = np.zeros(5000 * swapped.itemsize + 1, np.uint8)
    unaligned = np.ndarray(swapped.shape, dtype, raw.data, 1)  # one byte off
    unaligned[...] = swapped
    for v in (swapped, unaligned):  # neither is the kernels' (a big-endian one's bytes)
        for dims in ((0, 1), (1,), (0,)):
            np.testing.assert_allclose(fast_sum(v, dims, False), swapped.sum(dims), rtol=1e-5)
    for bad, want in (([np.nan], np.nan), ([np.inf], np.inf), ([np.inf, -np.inf], np.nan),
                      ([-np.inf], -np.inf)):
        a = np.ones(5000, dtype)
        a[[17, 4999][:len(bad)]] = bad
        np.testing.assert_array_equal(fast_sum(a, (0,), False), np.asarray(want, dtype))


def test_var_is_one_node_with_one_temporary_and_second_derivatives_through_it() -> None:
    import tracemalloc
    a = np.random.default_rng(10).standard_normal((500, 400))
    x = mg.tensor(a, requires_grad=True)
    tracemalloc.start()
    try:
        y = x.var(0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.5 * a.nbytes  # the centred copy, squared in place; no squares beside it
    assert y.grad_fn.name() == "VarBackward"  # one node (as ops, the last was a divide)
    b = mg.tensor(a[:6, :5], requires_grad=True)
    for dim, correction in ((0, 1), (1, 0), ((0, 1), 2), (None, 1)):
        def f(t, dim=dim, correction=correction):
            return (t.var(dim, correction=correction) ** 2).sum()
        assert mg.autograd.gradcheck(f, (b,))
        assert mg.autograd.gradgradcheck(f, (b,))


def test_a_reduction_that_records_nothing_skips_apply_and_stays_quiet(monkeypatch) -> None:
    import warnings

    rng = np.random.default_rng(12)
    a = rng.standard_normal((64, 3, 100)).astype(np.float32)
    want = {"sum": fast_sum(a, (1,), False), "mean": fast_sum(a, (1,), False) / 3,
            "amax": a.max(1), "amin": a.min(1)}
    from minigrad._tensor import reduce as methods

    for fn in (reduce.Sum, reduce.Mean, reduce.Amax, reduce.Amin):  # forward alone
        monkeypatch.setattr(fn, "apply", None)
    for bound in ("_sum", "_mean", "_amax", "_amin"):
        monkeypatch.setattr(methods, bound, None, raising=False)
    x = mg.tensor(a)
    for name, ref in want.items():
        y = getattr(x, name)(1)
        assert not y.requires_grad and y.grad_fn is None
        np.testing.assert_allclose(y.numpy(), ref, rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # overflow and 0 / 0 silently, as apply runs them
        assert mg.tensor(np.array([3e38, 3e38], np.float32)).sum().item() == np.inf
        assert np.isnan(mg.tensor(np.zeros((0, 2), np.float32)).mean().item())
    monkeypatch.undo()
    w = mg.tensor(a, requires_grad=True)
    with mg.no_grad():
        assert w.sum().grad_fn is None and not w.amax().requires_grad
    names = [getattr(w, name)(1).grad_fn.name() for name in want]  # recorded: a node each
    assert names == ["SumBackward", "MeanBackward", "AmaxBackward", "AminBackward"]


def test_float16_mean_over_more_elements_than_float16_holds():
    """torch sums and divides a float16 mean in float32: a count past 65504 (float16's
    largest) was inf here, the mean 0 and its gradient 0."""
    torch = pytest.importorskip("torch")
    for lib in (mg, torch):
        x = (lib.ones(70000, dtype=lib.float16) * 0.5).requires_grad_(True)
        m = x.mean()
        m.backward()
        assert float(m) == 0.5 and float(x.detach().mean(0)) == 0.5
        assert float(x.grad[0]) == np.float16(1 / 70000)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_non_finite_entry_stays_in_its_own_column_of_a_middle_axis_sum(dtype) -> None:
    """The selector product (a cloud's mean) multiplies every entry by 0s as well: an Inf
    or NaN there made its row's other columns NaN. sum, mean and the broadcast-undo of a
    bias's gradient keep numpy's values."""
    X = np.random.default_rng(0).random((256, 100, 3)).astype(dtype)
    X[0, 0, 0], X[1, 2, 1], X[2, 5, 2] = np.inf, np.nan, -np.inf
    np.testing.assert_allclose(mg.tensor(X).sum(1).numpy(), X.sum(1), rtol=1e-5)
    np.testing.assert_allclose(mg.tensor(X).mean(-2).numpy(), X.mean(-2), rtol=1e-5)
    b = mg.tensor(np.zeros((256, 1, 3), dtype), requires_grad=True)
    (mg.tensor(X) + b).backward(mg.tensor(X))
    np.testing.assert_allclose(b.grad.numpy(), X.sum(1, keepdims=True), rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_middle_axis_sum_finds_its_non_finite_rows_among_large_finite_ones(dtype) -> None:
    """The selector product looks for non-finite rows only where some entry of its result
    is not finite: sums near the largest float stay as they are, and a NaN among them
    is still found and kept in its column."""
    big = np.finfo(dtype).max / 4
    X = np.random.default_rng(1).random((256, 100, 3)).astype(dtype)
    X[::8, 0, :] = big  # column sums near the largest float, each finite
    got = fast_sum(X, (1,), False)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, plain_sum(X, (1,), False), rtol=1e-5)
    X[3, 7, 1] = np.nan
    want = plain_sum(X, (1,), False)
    got = fast_sum(X, (1,), False)
    assert np.isnan(got[3, 1]) and np.isfinite(np.delete(got, 3, axis=0)).all()
    np.testing.assert_allclose(got, want, rtol=1e-5)
