"""The numba loop for batches of tiny matrix products (ops/matmul.py): the same numbers as
numpy's matmul on every layout it accepts, numpy's path for everything else, gradients."""

import numpy as np
import pytest

import minigrad as mg
from minigrad._kernel_registry import kernels
from minigrad.autograd import gradcheck, gradgradcheck
from minigrad.ops import matmul as M

rng = np.random.default_rng(0)


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-14), (np.float32, 1e-5)])
@pytest.mark.parametrize("sa, sb", [
    ((64, 3, 3), (64, 3, 3)),
    ((5, 7, 2, 3), (5, 7, 3, 4)),  # several batch dims, non-square
    ((2, 3), (40, 3, 1)),  # a single matrix beside a batch
    ((40, 1, 4), (4, 4)),
    ((17, 4, 4), (17, 4, 4)),
    ((33, 2, 2), (33, 2, 2)),
    ((20, 5, 1), (20, 1, 5)),  # an outer product: k = 1
    ((256, 1, 3), (256, 3, 3)),  # a centroid through rotations (constant bounds)
    ((256, 3, 1), (256, 1, 3)),  # its backward's outer products (constant bounds)
    ((16, 4, 4), (16, 4, 4)),
])
def test_kernel_matches_numpy(sa, sb, dtype, tol):
    x, y = rng.standard_normal(sa).astype(dtype), rng.standard_normal(sb).astype(dtype)
    out = M._tiny_batched(x, y)
    assert out is not None  # the kernel took it
    ref = np.matmul(x, y)
    assert out.shape == ref.shape and out.dtype == ref.dtype
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol)


def test_kernel_reads_transposed_and_broadcast_operands():
    x = rng.standard_normal((64, 3, 3))
    xt = np.swapaxes(rng.standard_normal((64, 3, 3)), -1, -2)  # a view: not contiguous
    m = np.broadcast_to(rng.standard_normal((3, 3)), (64, 3, 3))  # read-only, stride 0
    p = rng.standard_normal((64, 1, 3))  # a row through transposed 3x3s (g R^T)
    for a, b in ((x, xt), (xt, x), (xt, xt), (m, x), (x, m), (p, xt)):
        np.testing.assert_allclose(M._tiny_batched(a, b), np.matmul(a, b), rtol=1e-14,
                                   atol=1e-14)


@pytest.mark.parametrize("sa, sb, dtype", [
    ((64, 8, 8), (64, 8, 8), np.float64),  # too big: m k n > 64
    ((4, 3, 3), (4, 3, 3), np.float64),  # too short a batch
    ((64, 3, 3), (64, 3, 3), np.int64),  # not float
    ((64, 3, 3), (64, 3, 3), np.float16),
    ((8, 1, 3, 3), (1, 8, 3, 3), np.float64),  # broadcast batch dims
    ((3, 3), (3, 3), np.float64),  # no batch
    ((64, 3, 0), (64, 0, 3), np.float64),  # empty sum
])
def test_numpy_takes_the_rest(sa, sb, dtype):
    x = rng.standard_normal(sa).astype(dtype)
    y = rng.standard_normal(sb).astype(dtype)
    assert M._tiny_batched(x, y) is None
    out = (mg.tensor(x) @ mg.tensor(y)).numpy()
    np.testing.assert_array_equal(out, np.matmul(x, y))


def test_non_finite_values_propagate_as_in_numpy():
    x = rng.standard_normal((32, 3, 3))
    y = rng.standard_normal((32, 3, 3))
    x[3, 1, 2], y[5, 0, 0] = np.inf, np.nan
    np.testing.assert_array_equal(np.isnan(M._tiny_batched(x, y)), np.isnan(x @ y))
    np.testing.assert_array_equal(np.isinf(M._tiny_batched(x, y)), np.isinf(x @ y))


def test_gradients_through_the_kernel_path():
    a = mg.tensor(rng.standard_normal((16, 3, 2)), requires_grad=True)
    b = mg.tensor(rng.standard_normal((16, 2, 3)), requires_grad=True)
    w = mg.tensor(rng.standard_normal((16, 3, 3)))
    assert M._tiny_batched(a.detach().numpy(), b.detach().numpy()) is not None
    assert gradcheck(lambda a, b: ((a @ b) * w).sum(), (a, b))
    assert gradgradcheck(lambda a, b: ((a @ b) ** 2 * w).sum(), (a, b), fast_mode=True)


def test_gradients_match_torch():
    torch = pytest.importorskip("torch")
    a0, b0 = rng.standard_normal((32, 4, 3)), rng.standard_normal((3, 2))
    a, b = mg.tensor(a0, requires_grad=True), mg.tensor(b0, requires_grad=True)
    ((a @ b) ** 2).sum().backward()
    ta, tb = torch.tensor(a0, requires_grad=True), torch.tensor(b0, requires_grad=True)
    ((ta @ tb) ** 2).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seconds, enabled, said", [(0.3, True, True), (0.0, True, False),
                                                     (0.3, False, False)])
def test_a_kernel_that_compiles_says_so_once_on_stderr(monkeypatch, capsys, seconds, enabled,
                                                       said):
    # numba stood in for by a decorator that takes ``seconds`` (a compile) or none (a load
    # from the cache); the warm-up turns the notice off, as it prints its own progress
    import time

    from minigrad.ops import _matmul_kernels as mk

    def slow_njit(*args, **kwargs):
        time.sleep(seconds)
        return lambda f: f

    monkeypatch.setattr(mk, "njit", slow_njit)
    monkeypatch.setattr(mk, "NOTICE_AFTER_S", 0.1)
    monkeypatch.setattr(mk, "notice_compiles", enabled)
    monkeypatch.setattr(mk, "jitted", {})  # not a kernel for the warm-up to build
    kernel = mk.compile_for(abs, None, "a test kernel", "test")
    time.sleep(0.15)  # past the notice's time, were it still waiting
    assert kernel is abs
    err = capsys.readouterr().err
    assert ("compiling a test kernel, once" in err) is said


@pytest.mark.parametrize("shapes", [((16, 10, 3), (16, 10, 3)), ((8, 5, 4), (8, 5, 6))])
def test_a_transposed_stacks_gradient_comes_in_its_bases_layout(shapes):
    # the alignment's X^T Y: X's gradient arrives C-contiguous (it was a transposed view,
    # added to X's other gradients by a strided loop), with torch's values; the same for a
    # transposed right operand (Y^T X: Y^T on the right is X^T Y's mirror)
    torch = pytest.importorskip("torch")
    a, b = (rng.standard_normal(s) for s in shapes)
    x, y = mg.tensor(a, requires_grad=True), mg.tensor(b, requires_grad=True)
    u, v = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    g = rng.standard_normal((shapes[0][0], shapes[0][2], shapes[1][2]))
    (x.transpose(2, 1) @ y).backward(mg.tensor(g))
    (u.transpose(2, 1) @ v).backward(torch.tensor(g))
    gt = rng.standard_normal((shapes[0][0], shapes[1][2], shapes[0][2]))
    (y.transpose(2, 1) @ x).backward(mg.tensor(gt))  # x is now the right operand
    (v.transpose(2, 1) @ u).backward(torch.tensor(gt))
    assert x.grad.numpy().flags.c_contiguous and y.grad.numpy().flags.c_contiguous
    np.testing.assert_allclose(x.grad.numpy(), u.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(y.grad.numpy(), v.grad.numpy(), rtol=1e-12)
    p, q = (mg.tensor(t[:2, :3], requires_grad=True) for t in (a, b))
    assert gradgradcheck(lambda p, q: (p.transpose(2, 1) @ q).sin().sum(), (p, q))
    w = mg.tensor(rng.standard_normal((2, 2, shapes[0][2])), requires_grad=True)
    assert gradgradcheck(lambda w, p: (w @ p.transpose(2, 1)).sin().sum(), (w, p))


def test_a_first_order_backward_multiplies_without_recording_ops(monkeypatch):
    # no MatMul or transpose nodes in a plain backward: the products alone, same numbers
    torch = pytest.importorskip("torch")
    for sa, sb in (((64, 3, 3), (64, 3, 3)), ((6, 100, 3), (6, 3, 3)), ((2, 3), (40, 3, 1)),
                   ((5, 4, 7), (7, 2))):
        a, b = rng.standard_normal(sa), rng.standard_normal(sb)
        g = rng.standard_normal(np.broadcast_shapes(sa[:-1] + (1,), sb[:-2] + (1, 1))[:-1]
                                + (sb[-1],))
        x, y = mg.tensor(a, requires_grad=True), mg.tensor(b.astype(np.float32),
                                                            requires_grad=True)
        # (torch refuses a float64 @ float32 product: its y in float64, the same values)
        u, v = torch.tensor(a, requires_grad=True), torch.tensor(
            b.astype(np.float32).astype(np.float64), requires_grad=True)
        out = x.transpose(-1, -2).transpose(-1, -2) @ y
        calls: list = []

        def counted(cls, *args, calls=calls):
            calls.append(1)
            return Function_apply(cls, *args)

        monkeypatch.setattr(M.MatMul, "apply", classmethod(counted))
        out.backward(mg.tensor(g))
        monkeypatch.undo()
        (u @ v).backward(torch.tensor(g))
        assert calls == []
        np.testing.assert_allclose(x.grad.numpy(), u.grad.numpy(), rtol=1e-12)
        np.testing.assert_allclose(y.grad.numpy(), v.grad.numpy(), rtol=1e-5)
        assert y.grad.dtype == mg.float32


Function_apply = M.Function.apply.__func__


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-14), (np.float32, 1e-5)])
def test_point_clouds_through_3x3s_take_their_kernel(dtype, tol):
    # (*, m, 3) @ (*, 3, 3), m past the tiny kernel's sizes: the point-cloud loop, numpy's
    # values (a transposed or broadcast 3x3 read as it lies); numpy's matmul for the rest
    x = rng.standard_normal((20, 50, 3)).astype(dtype)
    y = rng.standard_normal((20, 3, 3)).astype(dtype)
    for a, b in ((x, y), (x, y.swapaxes(1, 2)), (x.reshape(4, 5, 50, 3), y.reshape(4, 5, 3, 3))):
        out = M._tiny_batched(a, b)
        assert out is not None and out.dtype == dtype and out.shape == a.shape
        np.testing.assert_allclose(out, np.matmul(a, b), rtol=tol, atol=tol)
    assert M._tiny_batched(x[:, ::2], y) is None  # strided rows
    assert M._tiny_batched(x, y[:1]) is None  # a broadcast batch
    assert M._tiny_batched(x[:4], y[:4]) is None  # a batch too small to pay
    assert M._tiny_batched(x, rng.standard_normal((20, 3, 4)).astype(dtype)) is None
    p = mg.tensor(rng.standard_normal((16, 9, 3)), requires_grad=True)
    r = mg.tensor(rng.standard_normal((16, 3, 3)), requires_grad=True)
    assert gradgradcheck(lambda p, r: (p @ r).sin().sum(), (p, r))


def test_point_clouds_kernel_gives_the_products_plain_loop_bits():
    # bmm3 reads each cloud as one flat row (which LLVM vectorises): the same products and
    # sums as the row-by-row loop, so the same bits, in both dtypes
    for dtype in (np.float32, np.float64):
        x = rng.standard_normal((17, 41, 3)).astype(dtype)
        y = rng.standard_normal((17, 3, 3)).astype(dtype)
        ref = np.empty_like(x)
        for p in range(17):
            for j in range(3):
                ref[p, :, j] = x[p, :, 0] * y[p, 0, j] + x[p, :, 1] * y[p, 1, j] \
                    + x[p, :, 2] * y[p, 2, j]
        assert M._tiny_batched(x, y).tobytes() == ref.tobytes()


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-13), (np.float32, 1e-5)])
def test_cross_covariances_of_point_clouds_take_their_kernel(dtype, tol):
    # c.mT @ y, c and y (*, r, 3) C-contiguous (Kabsch's and Umeyama's H = X^T Y): the
    # kernel, without the transposed copy; numpy's values; numpy's matmul for the rest
    c = rng.standard_normal((20, 50, 3)).astype(dtype)
    y = rng.standard_normal((20, 50, 3)).astype(dtype)
    real = M._cross
    for a, b in ((c, y), (c.reshape(4, 5, 50, 3), y.reshape(4, 5, 50, 3))):
        out = M._tiny_batched(a.swapaxes(-1, -2), b)
        assert out is not None and out.dtype == dtype and out.shape == a.shape[:-2] + (3, 3)
        ref = np.matmul(a.swapaxes(-1, -2).astype(np.float64), b.astype(np.float64))
        np.testing.assert_allclose(out, ref, rtol=tol, atol=tol * a.shape[-2])
    assert real(c[:, ::2].swapaxes(1, 2), y[:, ::2]) is None  # strided clouds
    assert real(c.swapaxes(1, 2), y[:, ::-1]) is None
    assert real(c[:4].swapaxes(1, 2), y[:4]) is None  # a batch too small to pay
    assert M._tiny_batched(np.ascontiguousarray(c.swapaxes(1, 2)), y) is None  # BLAS's
    assert real(c[:, :0].swapaxes(1, 2), y[:, :0]) is None  # no points: numpy's zeros
    one = np.empty((20, 3, 3), dtype)  # one point (the kernel's shortest cloud)
    getattr(kernels("small"), M._CROSS3[c.dtype.char])(c[:, :1].copy(), y[:, :1].copy(), one)
    np.testing.assert_array_equal(one, c[:, 0, :, None] * y[:, 0, None, :])
    p = mg.tensor(rng.standard_normal((16, 9, 3)), requires_grad=True)
    q = mg.tensor(rng.standard_normal((16, 9, 3)), requires_grad=True)
    assert gradgradcheck(lambda p, q: (p.mT @ q).sin().sum(), (p, q))


def test_a_large_transposed_left_stack_goes_to_blas_uncopied(monkeypatch):
    # BLAS packs a transposed left matrix as it lies from m, k, n >= 64: no copy of it
    copied = []
    real = M._blasable
    monkeypatch.setattr(M, "_blasable", lambda x: (copied.append(x), real(x))[1])
    for m, k, n in ((64, 64, 64), (70, 80, 65), (8, 80, 65)):
        xt = rng.standard_normal((3, k, m)).swapaxes(1, 2)
        y = rng.standard_normal((3, k, n))
        copied.clear()
        np.testing.assert_allclose(M._product(xt, y), np.matmul(np.ascontiguousarray(xt), y),
                                   rtol=1e-12, atol=1e-12)
        assert any(c is xt for c in copied) == (min(m, k, n) < M._BLAS_T)
