"""The routes that replace a slow numpy loop with the same numbers: where as a bit select,
sigmoid as two exps, erf (and so the exact GELU) as the compiled libm loop, log-softmax and
logsumexp as one node, an integer index's gradient by whole rows, and a sum over broadcast
dims as a count times one term (in test_reduce_fast.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F
from minigrad.ops import _erf_kernels, arith, shape, unary

SPECIAL = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-30, -1e-30, 88.0, -88.0, 1e4, -1e4]


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).view(np.uint8).tobytes()


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal bit for bit (so -0.0 is not 0.0), a NaN's sign and payload aside."""
    nan = np.isnan(a)
    return bool((nan == np.isnan(b)).all()) and _bits(a[~nan]) == _bits(b[~nan])


def _data(n: int, dtype, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(n) * 20).astype(dtype)
    a[:len(SPECIAL)] = np.asarray(SPECIAL).astype(dtype)
    return a


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("n", [100, 8191, 8192, 65536, 70001])
def test_select_is_np_where_bit_for_bit_on_either_side_of_its_thresholds(dtype, n) -> None:
    x, y = _data(n, dtype, 0), _data(n, dtype, 1)[::-1].copy()
    cond = np.random.default_rng(2).random(n) < 0.5
    got = arith.select(cond, x, y)
    assert got.dtype == dtype and got.shape == (n,)
    assert _bits(got) == _bits(np.where(cond, x, y))
    shaped = (x.reshape(-1, 7), y.reshape(-1, 7), cond.reshape(-1, 7)) if n % 7 == 0 else None
    if shaped is not None:  # a 2-D view goes the same way
        assert _bits(arith.select(shaped[2], *shaped[:2])) == _bits(got)


def test_select_reads_a_bool_mask_by_value_not_by_byte() -> None:
    # a mask viewed from a buffer may hold any nonzero byte for True
    n = 10000
    cond = (np.arange(n) % 3).astype(np.uint8).view(bool)
    x, y = _data(n, np.float32, 12), _data(n, np.float32, 13)
    assert _bits(arith.select(cond, x, y)) == _bits(np.where(cond, x, y))
    got = mg.where(mg.tensor(cond), mg.tensor(x), mg.tensor(y)).numpy()
    assert _bits(got) == _bits(np.where(cond, x, y))


def test_select_leaves_mixed_shapes_dtypes_and_scalars_to_np_where() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((300, 300)).astype(np.float32)
    cond = x > 0
    for a, b, c in ((x, x[:1], cond), (x, x.astype(np.float64), cond), (x, 0.5, cond),
                    (x.astype(np.int32), x.astype(np.int32), cond)):
        got, want = arith.select(c, a, b), np.where(c, a, b)
        assert got.dtype == want.dtype and _bits(got) == _bits(want)


def test_where_takes_the_select_and_differentiates_to_second_order() -> None:
    rng = np.random.default_rng(4)
    an, bn = rng.standard_normal((70, 1000)), rng.standard_normal((70, 1000))
    a, b = mg.tensor(an, requires_grad=True), mg.tensor(bn, requires_grad=True)
    c = a > b * 0.5
    cn = c.numpy()
    y = mg.where(c, a, b)
    assert _bits(y.detach().numpy()) == _bits(np.where(cn, an, bn))
    (ga,) = mg.autograd.grad((mg.where(c, a * a, b) ** 2).sum(), a, create_graph=True)
    np.testing.assert_allclose(ga.detach().numpy(), np.where(cn, 4 * an ** 3, 0))
    (gga,) = mg.autograd.grad(ga.sum(), a)
    np.testing.assert_allclose(gga.numpy(), np.where(cn, 12 * an ** 2, 0))


def _sigmoid_by_sign(x: np.ndarray) -> np.ndarray:
    """The plain form the two-exp route replaced: 1/(1+e) or e/(1+e), e = exp(-|x|)."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_sigmoid_is_the_by_sign_form_bit_for_bit(dtype) -> None:
    x = _data(20000, dtype, 5)
    assert _same(unary._sigmoid(x), _sigmoid_by_sign(x))  # the kernel's route
    wide = x.reshape(100, 200).T  # numpy's route
    assert _same(unary._sigmoid(wide), _sigmoid_by_sign(wide))
    e = np.exp(-np.abs(x))  # the derivative: the kernel's against numpy's form
    assert _same(unary._sigmoid_grad(x), e / ((1 + e) * (1 + e)))
    assert _same(unary._sigmoid_grad(wide), unary._sigmoid_grad(x).reshape(100, 200).T)
    assert _same(unary._sigmoid(x[4:5].reshape(())).reshape(1), _sigmoid_by_sign(x[4:5]))
    s = mg.tensor(x).sigmoid().numpy()
    assert s[(x > 0) & np.isfinite(x)].min() >= 0.5 and s[x == -1e4][0] == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoids_first_order_gradient_is_the_recorded_ones_bit_for_bit(dtype,
                                                                         monkeypatch) -> None:
    """A first-order walk multiplies g into the derivative's kernel pass; with create_graph
    the derivative and the product are recorded ops: the same bits (infinities, NaN and
    large |x| included); a gradient laid out otherwise takes the recorded route."""
    a = _data(20000, dtype, 6).reshape(200, 100)
    g = np.random.default_rng(7).standard_normal((100, 200)).astype(dtype).T  # transposed
    e = np.exp(-np.abs(a))
    kinds: list = []
    kernel = unary.pass_kernel
    monkeypatch.setattr(unary, "pass_kernel", lambda k, dt: kinds.append(k) or kernel(k, dt))
    for gg, fused in ((np.ascontiguousarray(g), True), (g, False)):
        kinds.clear()
        x = mg.tensor(a, requires_grad=True)
        x.sigmoid().backward(mg.from_numpy(gg))
        assert ("sigmoid_grad" in kinds) == fused
        y = mg.tensor(a, requires_grad=True)
        (d,) = mg.autograd.grad(y.sigmoid(), y, mg.from_numpy(gg), create_graph=True)
        assert _same(x.grad.numpy(), d.detach().numpy())
        assert _same(x.grad.numpy(), gg * (e / ((1 + e) * (1 + e))))


def _erf_float32_in_numpy(x: np.ndarray) -> np.ndarray:
    """float32's erf route in numpy's float64 operations: x P(x^2) / Q(x^2), x clamped to
    [-4, 4], in the kernel's order."""
    v = x.astype(np.float64)
    a = np.abs(v)
    a = np.where(a > 4.0, 4.0, a)
    t = a * a
    p, q = np.full_like(t, _erf_kernels._P[-1]), np.full_like(t, _erf_kernels._Q[-1])
    for c in _erf_kernels._P[-2::-1]:
        p = c + t * p
    for c in _erf_kernels._Q[-2::-1]:
        q = c + t * q
    return np.copysign(a * p / q, v).astype(np.float32)


def _libm_erf(x: np.ndarray) -> np.ndarray:
    return np.array([math.erf(float(v)) for v in x])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_erf_and_the_exact_gelu_take_their_dtypes_erf(dtype) -> None:
    """float64: libm's erf, bit for bit. float32: the rational route, bit for bit as numpy
    computes it, and within 0.55 of an ulp of libm's float64 erf (rounding, plus the fit's
    0.04); the exact GELU with that erf, in x's dtype as torch's formula."""
    x = _data(5000, dtype, 6)
    got = mg.tensor(x).erf().numpy()
    if dtype == np.float64:
        assert _same(got, _libm_erf(x))
    else:
        assert _same(got, _erf_float32_in_numpy(x))
        dense = np.concatenate([x, np.linspace(-5, 5, 200001, dtype=np.float32),
                                np.float32(1e-20) * x[np.isfinite(x)]])
        exact, near = _libm_erf(dense), mg.tensor(dense).erf().numpy()
        ok = np.isfinite(exact)
        below = np.nextafter(np.abs(near[ok]), np.float32(0))  # ulp from the smaller side
        ulp = np.minimum(np.spacing(np.abs(near[ok])), np.spacing(below)).astype(np.float64)
        assert (np.abs(near[ok] - exact[ok]) / ulp).max() <= 0.55
    g = F.gelu(mg.tensor(x)).numpy()
    z = x * math.sqrt(0.5)  # the formula in x's dtype, as torch's, with that erf
    erf_z = _libm_erf(z).astype(dtype) if dtype == np.float64 else _erf_float32_in_numpy(z)
    with np.errstate(invalid="ignore"):  # -inf * 0: nan, as in minigrad's and torch's
        assert _same(g, x * 0.5 * (1 + erf_z))
    assert np.isnan(g[2]) and g[0] == np.inf  # (-inf gives 0 * -inf = nan, as torch)


@pytest.mark.parametrize("name", ["leaky_relu", "elu"])
def test_leaky_relu_and_elu_through_select_keep_their_values_and_slopes(name) -> None:
    rng = np.random.default_rng(7)
    a = rng.standard_normal(20000)
    x = mg.tensor(a, requires_grad=True)
    fn = getattr(F, name)
    y = fn(x)
    y.backward(mg.ones_like(y))
    if name == "leaky_relu":
        want, slope = np.where(a > 0, a, 0.01 * a), np.where(a > 0, 1.0, 0.01)
    else:
        want, slope = np.where(a > 0, a, np.expm1(np.minimum(a, 0))), np.where(
            a > 0, 1.0, np.exp(np.minimum(a, 0)))
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-15, atol=0)
    np.testing.assert_allclose(x.grad.numpy(), slope, rtol=1e-15, atol=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_logsumexp_over_one_dim_is_the_recorded_formula_in_one_node(dtype) -> None:
    # The recorded ops (taken for several dims) over (d, a length-1 dim) are the reference.
    rng = np.random.default_rng(8)
    x = (rng.standard_normal((5, 7, 6)) * 10).astype(dtype)
    x[0, 0, :] = -np.inf
    x[1, 1, 2], x[2, 2, 3], x[3, 3, :], x[4, 4, :2] = np.inf, np.nan, 0, 3
    for d in range(3):
        y = mg.tensor(x).logsumexp(d)
        assert y.grad_fn is None and _same(
            y.numpy(), mg.tensor(x[..., None]).logsumexp((d, 3)).numpy())
    t = mg.tensor(rng.standard_normal((4, 5)), requires_grad=True)
    assert t.logsumexp(1, keepdim=True).grad_fn.name() == "LogSumExpBackward"
    assert mg.autograd.gradcheck(lambda v: v.logsumexp(1) ** 2, (t,))
    assert mg.autograd.gradgradcheck(lambda v: v.logsumexp(0, keepdim=True) ** 2, (t,))


def test_log_softmax_is_one_node_from_the_tensor_and_from_f() -> None:
    rng = np.random.default_rng(9)
    t = mg.tensor(rng.standard_normal((4, 300)), requires_grad=True)
    for y in (t.log_softmax(1), F.log_softmax(t, 1)):
        assert y.grad_fn.name() == "LogSoftmaxBackward"
        a = t.detach().numpy()
        z = a - a.max(1, keepdims=True)
        np.testing.assert_allclose(y.detach().numpy(), z - np.log(np.exp(z).sum(1, keepdims=True)),
                                   rtol=1e-14, atol=1e-14)
    assert mg.autograd.gradgradcheck(lambda v: v.log_softmax(0) ** 2, (t[:, :5],))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index_shape, row", [((3000,), (7,)), ((40, 60), (3, 2)),
                                              ((5000,), ())])
def test_add_rows_is_np_add_at_bit_for_bit(dtype, index_shape, row) -> None:
    rng = np.random.default_rng(10)
    m = 37
    index = rng.integers(-m, m, index_shape)  # negatives and many repeats
    g = (rng.standard_normal(index_shape + row) * 1e3).astype(dtype)
    g.reshape(-1)[:4] = [-0.0, np.nan, np.inf, 1e-30]
    out, want = np.zeros((m,) + row, dtype), np.zeros((m,) + row, dtype)
    assert shape.add_rows(out, index, g)
    np.add.at(want, index, g)
    assert _bits(out) == _bits(want)


def test_add_rows_declines_what_it_does_not_cover() -> None:
    out = np.zeros((10, 300))
    g = np.ones((20, 300))
    assert not shape.add_rows(out, np.full(20, 10), g)  # out of bounds: np.add.at raises
    assert not shape.add_rows(out, np.full(20, -11), g)
    assert not shape.add_rows(out, np.ones(20, bool), g[:1])  # a mask
    assert not shape.add_rows(out, np.zeros(20, np.uint64), g)  # past int64: not cast
    assert not shape.add_rows(out.astype(np.float16), np.zeros(20, int), g.astype(np.float16))
    assert not shape.add_rows(out, (np.zeros(20, int), np.zeros(20, int)), g[:, 0])
    assert not shape.add_rows(np.asfortranarray(out), np.zeros(20, int), g)  # not C-ordered
    assert not out.any()


def test_gathers_send_their_gradient_back_by_rows() -> None:
    rng = np.random.default_rng(11)
    w0 = rng.standard_normal((50, 64))
    idx = rng.integers(0, 50, (30, 20))
    g0 = rng.standard_normal((30, 20, 64))
    want = np.zeros_like(w0)
    np.add.at(want, idx, g0)
    w = mg.tensor(w0, requires_grad=True)
    w[mg.tensor(idx)].backward(mg.tensor(g0))
    assert _bits(w.grad.numpy()) == _bits(want)
    w.grad = None
    F.embedding(mg.tensor(idx), w).backward(mg.tensor(g0))
    assert _bits(w.grad.numpy()) == _bits(want)
    assert mg.autograd.gradgradcheck(lambda v: v[mg.tensor(idx[:4, :2])] ** 2, (w[:, :2],))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_kernel_is_np_maximum_bit_for_bit_and_its_mask_is_x_above_zero(dtype) -> None:
    x = _data(30000, dtype, 14).reshape(300, 100)
    for v in (x, x.T, x[:40]):  # the kernel (C-contiguous), numpy (a transposed view), small
        t = mg.tensor(v, requires_grad=True)
        y = t.relu()
        assert _same(y.detach().numpy(), np.maximum(v, dtype(0)))
        y.backward(mg.ones_like(y))  # a NaN's gradient passes, as torch's (not x <= 0)
        assert _bits(t.grad.numpy()) == _bits((~(v <= 0)).astype(dtype))
        assert np.isnan(v).any() and t.grad.numpy()[np.isnan(v)].min() == 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cumsum_kernel_adds_in_numpys_order_on_every_axis_and_layout(dtype) -> None:
    x = _data(6 * 70 * 50, dtype, 15).reshape(6, 70, 50)
    x[0, :3, 0] = [-0.0, -0.0, 1e-30]  # a running -0.0 stays -0.0, as numpy's
    for v in (x, x.transpose(2, 0, 1), x[:, ::-1], x[..., ::2]):
        for d in range(3):
            assert _same(mg.tensor(v).cumsum(d).numpy(), np.cumsum(v, axis=d))
    t = mg.tensor(np.random.default_rng(16).standard_normal((2, 40, 30)), requires_grad=True)
    assert t.numel() >= 2048  # the kernel, forward and (reversed) backward
    assert mg.autograd.gradcheck(lambda v: v.cumsum(1) ** 2, (t,))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_leaky_relu_kernel_and_select_give_np_wheres_bits_and_slopes(dtype) -> None:
    x = _data(30000, dtype, 17).reshape(300, 100)
    for v in (x, x.T, x[:10]):  # the kernel, then select (a transposed view, a small one)
        t = mg.tensor(v, requires_grad=True)
        y = F.leaky_relu(t, 0.3)
        assert y.dtype == dtype
        assert _same(y.detach().numpy(), np.where(v > 0, v, v * 0.3))
        y.backward(mg.ones_like(y))
        assert _bits(t.grad.numpy()) == _bits(np.where(v > 0, 1.0, 0.3).astype(dtype))


def _layer_norm_ops(x: mg.Tensor, dims: tuple[int, ...], eps: float) -> mg.Tensor:
    """The composite the fused node replaced (still the route of float16 and empty input)."""
    centred = x - x.mean(dims, keepdim=True)
    return centred * ((centred * centred).mean(dims, keepdim=True) + eps).rsqrt()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_is_the_composites_numbers_in_one_node(dtype) -> None:
    rng = np.random.default_rng(18)
    x0 = rng.standard_normal((6, 20, 4, 8)).astype(dtype)
    g0 = rng.standard_normal(x0.shape).astype(dtype)
    for normalized in ((8,), (4, 8)):
        dims = tuple(range(4 - len(normalized), 4))
        x = mg.tensor(x0, requires_grad=True)
        y = F.layer_norm(x, normalized, eps=1e-3)
        assert y.grad_fn.name() == "_LayerNormBackward"
        ref = _layer_norm_ops(mg.tensor(x0, requires_grad=True), dims, 1e-3)
        assert _bits(y.detach().numpy()) == _bits(ref.detach().numpy())
        y.backward(mg.tensor(g0))  # the numpy rule, against the recorded one
        (recorded,) = mg.autograd.grad(F.layer_norm(x, normalized, eps=1e-3), x, mg.tensor(g0),
                                       create_graph=True)
        tol = 1e-5 if dtype == np.float32 else 1e-13
        np.testing.assert_allclose(x.grad.numpy(), recorded.detach().numpy(), rtol=tol,
                                   atol=tol)
    t = mg.tensor(rng.standard_normal((3, 2, 5)), requires_grad=True)
    w = mg.tensor(rng.standard_normal((2, 5)), requires_grad=True)
    b = mg.tensor(rng.standard_normal((2, 5)), requires_grad=True)
    assert mg.autograd.gradcheck(lambda v, w, b: F.layer_norm(v, (2, 5), w, b) ** 3, (t, w, b))
    assert mg.autograd.gradgradcheck(lambda v: F.layer_norm(v, (5,)) ** 3, (t,))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_row_operand_is_numpys_broadcast_bit_for_bit(dtype) -> None:
    from minigrad import _broadcast
    rng = np.random.default_rng(19)
    for size in ((300, 20), (6, 40, 64)):
        x = _data(int(np.prod(size)), dtype, 20).reshape(size)
        m = _data(int(np.prod(size[:-1])), dtype, 21).reshape(size[:-1] + (1,))
        for fn in (np.add, np.subtract, np.multiply, np.divide):
            with np.errstate(all="ignore"):
                assert _broadcast.one_per_row(fn, x, m)  # the kernel's
                got, want = _broadcast.row_op(fn, x, m), fn(x, m)
                assert _same(got, want)
                inplace = x.copy()  # into x itself, as softmax divides
                assert _broadcast.row_op(fn, inplace, m, out=inplace) is inplace
                assert _same(inplace, want)
    x = rng.standard_normal((300, 20)).astype(dtype)
    for y in (x[:, :1].copy().T, x[:1], x[:, :1]):  # a transposed column, a row, a strided column
        assert not _broadcast.one_per_row(np.subtract, x, y)
    assert not _broadcast.one_per_row(np.subtract, x[:, :8].copy(), x[:, :1].copy())  # short
    assert not _broadcast.one_per_row(np.power, x, x[:, :1].copy())
    column = x[:, :1]  # numpy's route gives the same, in place too
    assert _same(_broadcast.row_op(np.subtract, x, column), x - column)
    inplace = x.copy()
    assert _broadcast.row_op(np.divide, inplace, column, out=inplace) is inplace
    assert _same(inplace, x / column)
    t = mg.tensor(x, requires_grad=True)  # through Tensor ops, with their gradients
    total = t.abs().sum(1, keepdim=True)
    y = (t - t.amax(1, keepdim=True)) / total
    assert _bits(y.detach().numpy()) == _bits((x - x.max(1, keepdims=True))
                                              / total.detach().numpy())
    assert mg.autograd.gradcheck(lambda v: (v - v.mean(1, keepdim=True)) / v.norm(dim=1,
                                 keepdim=True), (mg.tensor(rng.standard_normal((300, 20)),
                                                            requires_grad=True)[:4],))


def test_layer_norm_refuses_an_empty_normalized_shape_as_torch() -> None:
    with pytest.raises(RuntimeError, match="at least 1-dimensional"):
        F.layer_norm(mg.tensor(np.ones((3, 4))), ())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelus_first_order_gradient_is_the_recorded_ones_bit_for_bit(dtype,
                                                                      monkeypatch) -> None:
    """The first-order walk takes df's steps on arrays (_Pointwise's dnp: float32's by the
    erf family's gelu_slope kernels); with create_graph it records them: the same numbers,
    and the recorded one differentiates again (gelu'' = phi(x) (2 - x^2))."""
    a = _data(4096, dtype, 8)
    g = np.random.default_rng(9).standard_normal(a.shape).astype(dtype)
    calls: list = []
    slope = _erf_kernels.gelu_slope
    monkeypatch.setattr(_erf_kernels, "gelu_slope", lambda v: calls.append(1) or slope(v))
    x = mg.tensor(a, requires_grad=True)
    F.gelu(x).backward(mg.tensor(g))
    assert bool(calls) == (dtype == np.float32)
    y = mg.tensor(a, requires_grad=True)
    (d,) = mg.autograd.grad(F.gelu(y), y, mg.tensor(g), create_graph=True)
    assert _same(x.grad.numpy(), d.detach().numpy())
    (dd,) = mg.autograd.grad(d.sum(), y)
    ok = np.isfinite(a) & (np.abs(a) < 8)
    phi = np.exp(-0.5 * a[ok].astype(np.float64) ** 2) / math.sqrt(2 * math.pi)
    want = g[ok] * phi * (2 - a[ok].astype(np.float64) ** 2)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    assert np.allclose(dd.numpy()[ok], want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("dim", [-1, 1, (0, 2)])
def test_log_softmaxs_first_order_gradient_is_the_recorded_ones_bit_for_bit(dtype, dim,
                                                                            monkeypatch
                                                                            ) -> None:
    """A first-order walk takes the rule's steps on arrays (one new array, no node per step);
    with create_graph it records them: the same bits, a gradient laid out transposed too,
    and the recorded one differentiates again (checked against finite differences)."""
    rng = np.random.default_rng(4)
    a = (rng.standard_normal((6, 5, 7)) * 3).astype(dtype)
    g = rng.standard_normal((7, 5, 6)).astype(dtype).transpose(2, 1, 0)  # not C-contiguous
    from minigrad.ops.reduce import LogSoftmax

    def f(t, over=dim):  # (log_softmax takes one dim; its node takes several)
        return mg.log_softmax(t, over) if isinstance(over, int) else LogSoftmax.apply(t, over)

    from minigrad.ops import reduce

    calls: list = []
    vjp = reduce._log_softmax_vjp
    monkeypatch.setattr(reduce, "_log_softmax_vjp", lambda *v: calls.append(1) or vjp(*v))
    # (the row kernels' route from 4096 elements: 8 rows of 1024, over the last dim)
    wide = (rng.standard_normal((8, 1024)) * 3).astype(dtype)
    for arr, grad, over in ((a, g, dim), (wide, rng.standard_normal(wide.shape).astype(dtype),
                                          -1)):
        calls.clear()
        x = mg.tensor(arr, requires_grad=True)
        f(x, over).backward(mg.from_numpy(grad))
        assert calls  # the array route was taken
        y = mg.tensor(arr, requires_grad=True)
        (d,) = mg.autograd.grad(f(y, over), y, mg.from_numpy(grad), create_graph=True)
        assert _same(x.grad.numpy(), d.detach().numpy())
    if dtype == np.float64:
        z = mg.tensor(a[:2, :3, :4].copy(), requires_grad=True)
        assert mg.autograd.gradgradcheck(f, (z,))
