"""The dtype= argument of the reductions and the softmaxes in every spelling torch has
(method, mg.X, F.X, special.X), and the dtypes other arguments give a result.

dtype= casts the input first, so a float32 tensor summed with dtype=float64 is a float64 sum
of its values, not a float32 sum widened; the gradient comes back in the input's dtype. An
integer softmax without dtype is torch's NotImplementedError. Values against numpy, gradients
by gradcheck in float64, and each call beside torch's when torch is installed."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd import gradcheck

RNG = np.random.default_rng(0)
FLOATS = RNG.standard_normal((3, 4)).astype(np.float32)  # float32: a cast after the op shows
INTS = RNG.integers(-3, 5, (3, 4))


def F(lib):  # noqa: N802  (torch's spelling)
    return lib.nn.functional


def _softmax(a: np.ndarray, dim: int) -> np.ndarray:
    e = np.exp(a - a.max(dim, keepdims=True))
    return e / e.sum(dim, keepdims=True)


def _f64(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float64)


# (id, the call on (library, tensor) with dtype float64, numpy's answer on the input array)
CASTS: list[tuple[str, Callable, Callable]] = [
    ("sum", lambda m, x: x.sum(1, dtype=m.float64), lambda a: _f64(a).sum(1)),
    ("mg.sum", lambda m, x: m.sum(x, dtype=m.float64), lambda a: _f64(a).sum()),
    ("mean", lambda m, x: x.mean(0, dtype=m.float64), lambda a: _f64(a).mean(0)),
    ("nansum", lambda m, x: x.nansum(1, dtype=m.float64), lambda a: _f64(a).sum(1)),
    ("prod", lambda m, x: x.prod(dtype=m.float64), lambda a: np.prod(_f64(a))),
    ("prod_dim_keepdim", lambda m, x: x.prod(1, keepdim=True, dtype=m.float64),
     lambda a: np.prod(_f64(a), 1, keepdims=True)),
    ("mg.prod", lambda m, x: m.prod(x, -1, dtype=m.float64), lambda a: np.prod(_f64(a), -1)),
    ("cumsum", lambda m, x: x.cumsum(1, dtype=m.float64), lambda a: np.cumsum(_f64(a), 1)),
    ("mg.cumsum", lambda m, x: m.cumsum(x, dim=-2, dtype=m.float64),
     lambda a: np.cumsum(_f64(a), 0)),
    ("cumprod", lambda m, x: x.cumprod(0, dtype=m.float64), lambda a: np.cumprod(_f64(a), 0)),
    ("softmax", lambda m, x: x.softmax(1, dtype=m.float64), lambda a: _softmax(_f64(a), 1)),
    ("softmax_dtype_positional", lambda m, x: x.softmax(-1, m.float64),
     lambda a: _softmax(_f64(a), 1)),
    ("mg.softmax", lambda m, x: m.softmax(x, 0, dtype=m.float64),
     lambda a: _softmax(_f64(a), 0)),
    ("F.softmax", lambda m, x: F(m).softmax(x, 1, dtype=m.float64),
     lambda a: _softmax(_f64(a), 1)),
    ("special.softmax", lambda m, x: m.special.softmax(x, 0, dtype=m.float64),
     lambda a: _softmax(_f64(a), 0)),
    ("log_softmax", lambda m, x: x.log_softmax(1, dtype=m.float64),
     lambda a: np.log(_softmax(_f64(a), 1))),
    ("mg.log_softmax", lambda m, x: m.log_softmax(x, -1, m.float64),
     lambda a: np.log(_softmax(_f64(a), 1))),
    ("F.log_softmax", lambda m, x: F(m).log_softmax(x, 0, dtype=m.float64),
     lambda a: np.log(_softmax(_f64(a), 0))),
    ("special.log_softmax", lambda m, x: m.special.log_softmax(x, 1, dtype=m.float64),
     lambda a: np.log(_softmax(_f64(a), 1))),
    ("F.softmin", lambda m, x: F(m).softmin(x, 1, dtype=m.float64),
     lambda a: _softmax(-_f64(a), 1)),
]
IDS = [c[0] for c in CASTS]
INPUTS = [pytest.param(FLOATS, id="float32"), pytest.param(INTS, id="int64")]


@pytest.mark.parametrize("a", INPUTS)
@pytest.mark.parametrize("name, call, ref", CASTS, ids=IDS)
def test_dtype_casts_the_input_before_the_op(name, call, ref, a) -> None:
    if name == "mean" and a.dtype.kind == "i" or a.dtype.kind == "i" and "prod" in name:
        a = a % 3 + 1  # small positive products; a mean of the ints as floats
    out = call(mg, mg.tensor(a))
    assert out.dtype == np.float64
    # float64 digits: the op ran on the cast values (a float32 op widened after is ~1e-7 off)
    np.testing.assert_allclose(out.numpy(), ref(a), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("name, call, ref", CASTS, ids=IDS)
def test_the_gradient_comes_back_in_the_inputs_dtype(name, call, ref) -> None:
    x = mg.tensor(FLOATS, requires_grad=True)
    wide = mg.tensor(_f64(FLOATS), requires_grad=True)  # the same op on float64 values
    w = mg.tensor(RNG.standard_normal(call(mg, wide).shape))
    (call(mg, x) * w).sum().backward()
    (call(mg, wide) * w).sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_allclose(x.grad.numpy(), wide.grad.numpy().astype(np.float32),
                               rtol=1e-6, atol=1e-6)
    assert gradcheck(lambda t: call(mg, t), (mg.tensor(_f64(FLOATS), requires_grad=True),))


SOFTMAXES = [
    ("Tensor.softmax", lambda m, x, **kw: x.softmax(1, **kw)),
    ("mg.softmax", lambda m, x, **kw: m.softmax(x, 1, **kw)),
    ("F.softmax", lambda m, x, **kw: F(m).softmax(x, 1, **kw)),
    ("F.softmin", lambda m, x, **kw: F(m).softmin(x, 1, **kw)),
    ("special.softmax", lambda m, x, **kw: m.special.softmax(x, 1, **kw)),
    ("Tensor.log_softmax", lambda m, x, **kw: x.log_softmax(1, **kw)),
    ("mg.log_softmax", lambda m, x, **kw: m.log_softmax(x, 1, **kw)),
    ("F.log_softmax", lambda m, x, **kw: F(m).log_softmax(x, 1, **kw)),
    ("special.log_softmax", lambda m, x, **kw: m.special.log_softmax(x, 1, **kw)),
]


@pytest.mark.parametrize("name, call", SOFTMAXES, ids=[s[0] for s in SOFTMAXES])
def test_an_integer_softmax_is_refused_and_says_what_to_do(name, call) -> None:
    with pytest.raises(NotImplementedError, match=r"pass dtype=mg\.float32 or convert"):
        call(mg, mg.tensor(INTS))
    with pytest.raises(NotImplementedError, match="int64"):  # a cast to an integer dtype
        call(mg, mg.tensor(FLOATS), dtype=mg.int64)
    if "softmin" not in name:  # (softmin negates first: a bool has no negation, as in torch)
        with pytest.raises(NotImplementedError, match="bool"):
            call(mg, mg.tensor(INTS > 0))
    ok = call(mg, mg.tensor(INTS), dtype=mg.float32)
    assert ok.dtype == np.float32 and ok.shape == INTS.shape


def test_logcumsumexp_refuses_integers_and_logsumexp_takes_them_as_floats() -> None:
    with pytest.raises(NotImplementedError, match=r"convert it with \.float\(\)"):
        mg.tensor(INTS).logcumsumexp(0)
    for a in (INTS, INTS > 0):
        out = mg.tensor(a).logsumexp(1)
        assert out.dtype == np.float32
        np.testing.assert_allclose(out.numpy(), np.log(np.exp(_f64(a)).sum(1)), rtol=1e-6)
    out = mg.special.logsumexp(mg.tensor(INTS > 0), (0, 1), keepdim=True)
    assert out.shape == (1, 1) and out.dtype == np.float32


# ---- dtypes the other arguments give ---------------------------------------------------------
def test_clamp_takes_the_dtype_its_bounds_promote_to() -> None:
    ints = mg.tensor([1, 2, 3])
    out = ints.clamp(min=1.5)  # an integer tensor at a float bound: float, not a floor at 1
    assert out.dtype == np.float32 and out.tolist() == [1.5, 2.0, 3.0]
    assert ints.clamp(max=2.5).tolist() == [1.0, 2.0, 2.5]
    assert ints.clamp_min(1.5).dtype == np.float32
    assert mg.tensor([True, False]).clamp(min=0).dtype == np.int64  # bool with an int: int64
    assert mg.tensor([1, 5], dtype=mg.int32).clamp(2, 4).dtype == np.int32
    wide = mg.tensor([0.5, 2.5], dtype=mg.float64)
    x = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    lo = mg.tensor([1.5, 1.5, 1.5], dtype=mg.float64, requires_grad=True)
    out = x.clamp(min=lo)
    assert out.dtype == np.float64 and out.tolist() == [1.5, 2.0, 3.0]
    out.sum().backward()
    assert x.grad.dtype == np.float32 and x.grad.tolist() == [0.0, 1.0, 1.0]
    assert lo.grad.tolist() == [1.0, 0.0, 0.0]
    assert mg.tensor([1.0, 2.0]).clamp(wide[0]).dtype == np.float32  # a 0-d bound: no widening
    b = mg.tensor(_f64(FLOATS), requires_grad=True)
    assert gradcheck(lambda t, u: t.clamp(min=u), (b, mg.tensor(0.1 * _f64(INTS),
                                                                 requires_grad=True)))


def test_bool_masks_keep_their_dtype_through_tril_and_triu_and_square_to_int64() -> None:
    mask = mg.ones(3, 3, dtype=mg.bool)
    causal = mask.tril()
    assert causal.dtype == np.bool_
    np.testing.assert_array_equal(causal.numpy(), np.tril(np.ones((3, 3), bool)))
    assert mask.triu(1).dtype == np.bool_ and mask.triu(1).numpy().sum() == 3
    assert mg.ones(2, 2, dtype=mg.int32).tril().dtype == np.int32
    sq = mg.tensor([True, False]).square()
    assert sq.dtype == np.int64 and sq.tolist() == [1, 0]


# ---- beside torch ---------------------------------------------------------------------------
def _same(ours: mg.Tensor, theirs, rtol: float) -> None:
    assert ours.shape == tuple(theirs.shape)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol,
                               atol=rtol)


@pytest.mark.parametrize("a", INPUTS)
@pytest.mark.parametrize("name, call, ref", CASTS, ids=IDS)
def test_dtype_calls_match_torch(name, call, ref, a) -> None:
    torch = pytest.importorskip("torch")
    if name == "mean" and a.dtype.kind == "i" or a.dtype.kind == "i" and "prod" in name:
        a = a % 3 + 1
    grad = a.dtype.kind == "f"
    x, t = mg.tensor(a, requires_grad=grad), torch.tensor(a, requires_grad=grad)
    ours, theirs = call(mg, x), call(torch, t)
    _same(ours, theirs, 1e-12)
    if grad:
        w = RNG.standard_normal(tuple(theirs.shape))
        (ours * mg.tensor(w)).sum().backward()
        (theirs * torch.tensor(w)).sum().backward()
        _same(x.grad, t.grad, 1e-5)


@pytest.mark.parametrize("name, call", SOFTMAXES, ids=[s[0] for s in SOFTMAXES])
def test_integer_softmaxes_fail_as_torchs(name, call) -> None:
    torch = pytest.importorskip("torch")
    for lib in (mg, torch):
        with pytest.raises(NotImplementedError):
            call(lib, lib.tensor(INTS))
        with pytest.raises(NotImplementedError):
            call(lib, lib.tensor(FLOATS), dtype=lib.int64)
    _same(call(mg, mg.tensor(INTS), dtype=mg.float32),
          call(torch, torch.tensor(INTS), dtype=torch.float32), 1e-6)


def test_logsumexp_clamp_tril_and_square_dtypes_match_torch() -> None:
    torch = pytest.importorskip("torch")
    calls = [
        lambda m: m.tensor(INTS > 0).logsumexp(1),
        lambda m: m.tensor(INTS).logsumexp(0, keepdim=True),
        lambda m: m.tensor(INTS).clamp(min=0.5, max=2.5),
        lambda m: m.tensor(INTS).clamp(min=m.tensor(FLOATS)),
        lambda m: m.tensor(INTS > 0).clamp(min=0),
        lambda m: m.tensor(FLOATS).clamp(max=m.tensor(_f64(FLOATS) / 2)),
        lambda m: m.tensor(INTS > 0).tril(-1),
        lambda m: m.tensor(INTS > 0).triu(),
        lambda m: m.tensor(INTS > 0).square(),
    ]
    for call in calls:
        _same(call(mg), call(torch), 1e-6)


NARROW = np.array([[7, -3, 2], [40000, 2, -1]], np.int32)  # 40000 * 40000 wraps in int32


@pytest.mark.parametrize("name, call, ref", [
    ("sum", lambda m, x: x.sum(1, dtype=m.int32), lambda a: a.sum(1, dtype=np.int32)),
    ("prod", lambda m, x: x.prod(0, dtype=m.int32), lambda a: np.prod(a, 0, dtype=np.int32)),
    ("prod_all", lambda m, x: (x * x).prod(dtype=m.int32),
     lambda a: np.prod(a.astype(np.int64) ** 2).astype(np.int32)),
    ("prod_bool", lambda m, x: x.prod(dtype=m.bool), lambda a: np.asarray(a.all())),
    ("sum_bool", lambda m, x: x.sum(dtype=m.bool), lambda a: np.asarray(a.any())),
    ("cumsum", lambda m, x: x.cumsum(1, dtype=m.int32), lambda a: np.cumsum(a, 1, np.int32)),
    ("cumprod", lambda m, x: x.cumprod(0, dtype=m.int32), lambda a: np.cumprod(a, 0, np.int32)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_a_narrow_integer_dtype_is_the_results(name, call, ref) -> None:
    """Integer sums and products accumulate in int64 unless dtype= names another, which is
    then the result's (int32 wrapping as int32 arithmetic does, as torch's)."""
    got = call(mg, mg.tensor(NARROW))
    want = ref(NARROW)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got.numpy(), want)
    try:
        import torch
    except ImportError:  # numpy's answer above decides without it
        return
    t = call(torch, torch.tensor(NARROW))
    assert str(t.dtype).replace("torch.", "") == str(got.dtype)
    np.testing.assert_array_equal(t.numpy(), got.numpy())


def test_integer_division_with_a_rounding_mode_keeps_the_dividends_dtype() -> None:
    """int32 // int stays int32 with 'trunc' too (its correction once came back int64), and
    mg.divide is mg.div (a number first too)."""
    x = mg.tensor(np.array([7, -7, 6, -6], np.int32))
    for mode, want in (("trunc", [3, -3, 3, -3]), ("floor", [3, -4, 3, -3])):
        for q in (x.div(2, rounding_mode=mode), mg.div(x, 2, rounding_mode=mode),
                  x.divide(2, rounding_mode=mode)):
            assert q.dtype == np.int32 and q.tolist() == want
    assert mg.divide is mg.div
    assert mg.divide(7, mg.tensor([2, -2]), rounding_mode="floor").tolist() == [3, -4]
