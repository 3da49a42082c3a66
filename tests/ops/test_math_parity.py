"""The elementwise math ported code reaches for (the op table's parity rows,
tests/ops/table.py), against torch on the same inputs: values, dtype and shape, gradients by
float64 finite differences (first and second order), and torch's errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd import gradcheck, gradgradcheck
from tests.ops.table import PARITY, Op

torch = pytest.importorskip("torch")


def _inputs(case: Op, dtype: np.dtype, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(lo, hi, s).astype(dtype) for (lo, hi), s in zip(case.domain, case.shapes)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", PARITY, ids=lambda c: c.name)
def test_values_dtype_shape_match_torch(case: Op, dtype: np.dtype) -> None:
    xs = _inputs(case, dtype)
    ours = case.fn(mg, *[mg.tensor(x) for x in xs])
    ref = case.fn(torch, *[torch.tensor(x) for x in xs])
    assert ours.shape == tuple(ref.shape)
    assert str(ours.dtype) == str(ref.dtype).removeprefix("torch.")
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("case", PARITY, ids=lambda c: c.name)
def test_gradients_match_finite_differences(case: Op) -> None:
    xs = [mg.tensor(x, requires_grad=True) for x in _inputs(case, np.float64, 1)]
    assert gradcheck(lambda *a: case.fn(mg, *a), xs)
    if case.smooth:
        assert gradgradcheck(lambda *a: case.fn(mg, *a), xs)


# torch's digamma backward, its trigamma, is 5e-10 off (mpmath at 30 digits says ours is
# 4e-16): tests/ops/test_special_functions.py compares it with mpmath; finite differences
# check it above
TORCH_GRAD_OFF = {"digamma"}


@pytest.mark.parametrize("case", [c for c in PARITY if c.name not in TORCH_GRAD_OFF],
                         ids=lambda c: c.name)
def test_gradients_match_torch(case: Op) -> None:
    xs = _inputs(case, np.float64, 2)
    ours = [mg.tensor(x, requires_grad=True) for x in xs]
    refs = [torch.tensor(x, requires_grad=True) for x in xs]
    case.fn(mg, *ours).sum().backward()
    case.fn(torch, *refs).sum().backward()
    for o, r in zip(ours, refs):
        # None (ours) and torch's ZeroTensor both stand for a zero gradient.
        got = np.zeros(o.shape) if o.grad is None else o.grad.numpy()
        want = np.zeros(o.shape) if r.grad._is_zerotensor() else r.grad.numpy()
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["tan", "sinh", "asin", "atan", "erf", "erfinv", "log2",
                                  "exp2", "sinc", "deg2rad", "logit"])
def test_integer_inputs_give_float32(name: str) -> None:
    x = np.array([0, 1, 2])
    ours = getattr(mg, name)(mg.tensor(x))
    ref = getattr(torch, name)(torch.tensor(x))
    assert ours.dtype == np.float32 and ref.dtype == torch.float32
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-6)


def test_methods_are_the_functions() -> None:
    x = mg.tensor([0.25, 0.5])
    for name in ["cosh", "sinh", "asin", "acos", "atan", "asinh", "atanh", "erf", "erfc",
                 "erfinv", "log2", "log10", "exp2", "sinc", "frac", "deg2rad", "rad2deg",
                 "logit", "signbit", "sgn"]:
        assert getattr(x, name)().tolist() == getattr(mg, name)(x).tolist(), name
    assert x.arctan2(x).tolist() == mg.atan2(x, x).tolist()


def test_special_values_match_torch() -> None:
    inf, nan = math.inf, math.nan
    x = [0.0, -0.0, 1.0, -1.0, inf, -inf, nan, 2.0]
    for name in ["erf", "erfc", "erfinv", "asin", "acosh", "atanh", "log2", "log10", "exp2",
                 "sinc", "cosh", "logit", "signbit"]:
        ours = getattr(mg, name)(mg.tensor(x, dtype=mg.float64)).numpy()
        ref = getattr(torch, name)(torch.tensor(x, dtype=torch.float64)).numpy()
        np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-15, err_msg=name)
    y = [0.0, -1.0, inf, nan, 0.0, 2.0]
    a = [0.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    np.testing.assert_array_equal(mg.xlogy(mg.tensor(a), mg.tensor(y)).numpy(),
                                  torch.xlogy(torch.tensor(a), torch.tensor(y)).numpy())
    big = [1000.0, -inf, inf]
    np.testing.assert_array_equal(mg.logaddexp(mg.tensor(big), mg.tensor(big)).numpy(),
                                  torch.logaddexp(torch.tensor(big), torch.tensor(big)).numpy())
    z = [nan, inf, -inf, 1.0]
    for kw in [{}, {"nan": 2.0, "posinf": 5.0, "neginf": -7.0}]:
        np.testing.assert_array_equal(mg.nan_to_num(mg.tensor(z), **kw).numpy(),
                                      torch.nan_to_num(torch.tensor(z), **kw).numpy())
    h = [-1.0, 0.0, 2.0, nan]
    np.testing.assert_array_equal(
        mg.heaviside(mg.tensor(h), mg.tensor([0.5])).numpy(),
        torch.heaviside(torch.tensor(h), torch.tensor([0.5])).numpy())
    np.testing.assert_array_equal(mg.copysign(mg.tensor([1.0, 2.0]), mg.tensor([-0.0, 0.0])),
                                  [-1.0, 2.0])


def test_erf_family_is_accurate_in_float64() -> None:
    x = np.linspace(-5, 5, 201)
    t = torch.tensor(x)
    np.testing.assert_allclose(mg.erf(mg.tensor(x)).numpy(), torch.erf(t).numpy(), rtol=1e-14,
                               atol=1e-16)
    np.testing.assert_allclose(mg.erfc(mg.tensor(x)).numpy(), torch.erfc(t).numpy(),
                               rtol=1e-13, atol=0)
    p = np.concatenate([np.linspace(-0.999999, 0.999999, 201), [1e-300, -1e-10, 0.5]])
    y = mg.erfinv(mg.tensor(p)).numpy()
    np.testing.assert_allclose(y, torch.erfinv(torch.tensor(p)).numpy(), rtol=1e-13,
                               atol=1e-300)
    np.testing.assert_allclose(mg.erf(mg.tensor(y)).numpy(), p, rtol=1e-14)  # a round trip


def test_gradients_at_the_awkward_points() -> None:
    # sinc at 0 (removable singularity): first and second order by finite differences.
    x = mg.tensor([0.0, 1.0, -0.5], dtype=mg.float64, requires_grad=True)
    assert gradcheck(mg.sinc, (x,)) and gradgradcheck(mg.sinc, (x,))
    # hypot and atan2 at the origin: 0 (torch gives nan there); elsewhere as torch.
    a = mg.tensor([0.0, 3.0], dtype=mg.float64, requires_grad=True)
    b = mg.tensor([0.0, 4.0], dtype=mg.float64, requires_grad=True)
    mg.hypot(a, b).sum().backward()
    assert a.grad.tolist() == [0.0, 0.6] and b.grad.tolist() == [0.0, 0.8]
    a.grad = b.grad = None
    mg.atan2(a, b).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [0.0, 4 / 25])
    # xlogy where x = 0: d/dx = log(y) for y > 0 (the function is x log y), 0 at y = 0.
    xs = mg.tensor([0.0, 0.0, 1.0], dtype=mg.float64, requires_grad=True)
    ys = mg.tensor([2.0, 0.0, 3.0], dtype=mg.float64, requires_grad=True)
    mg.xlogy(xs, ys).sum().backward()
    np.testing.assert_allclose(xs.grad.numpy(), [math.log(2), 0.0, math.log(3)])
    assert not np.isnan(ys.grad.numpy()).any()
    # logaddexp at ties and at equal infinities: 1/2 each side, never nan.
    u = mg.tensor([1.0, -math.inf], dtype=mg.float64, requires_grad=True)
    mg.logaddexp(u, u.detach()).sum().backward()
    assert u.grad.tolist() == [0.5, 0.5]
    # nan_to_num passes the gradient where finite only.
    v = mg.tensor([1.0, math.nan, math.inf], requires_grad=True)
    mg.nan_to_num(v).sum().backward()
    assert v.grad.tolist() == [1.0, 0.0, 0.0]


def test_nondifferentiable_and_bool_results() -> None:
    x = mg.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    out = mg.heaviside(x, mg.tensor([0.5]))
    with pytest.raises(RuntimeError, match="derivative for 'heaviside'"):
        out.sum().backward()
    assert mg.signbit(mg.tensor([-0.0, 1.0])).tolist() == [True, False]
    got = mg.isclose(mg.tensor([1.0, math.nan, 2.0]), mg.tensor([1.0 + 1e-7, math.nan, 2.1]),
                     equal_nan=True)
    assert got.tolist() == torch.isclose(torch.tensor([1.0, math.nan, 2.0]),
                                         torch.tensor([1.0 + 1e-7, math.nan, 2.1]),
                                         equal_nan=True).tolist()


def test_errors_follow_torch() -> None:
    with pytest.raises(TypeError):
        mg.heaviside(mg.tensor([1.0]), 0.5)
    with pytest.raises(RuntimeError, match="different dtypes"):
        mg.heaviside(mg.tensor([1.0]), mg.tensor([1], dtype=mg.int64))
    for fn in (mg.fmod, mg.remainder):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            fn(mg.tensor([3]), mg.tensor([0]))
    assert mg.fmod(mg.tensor([-3, 3]), 2).tolist() == torch.fmod(torch.tensor([-3, 3]),
                                                                 2).tolist()


def test_in_place_clamp_and_clip() -> None:
    x = mg.tensor([-2.0, 0.5, 3.0])
    assert x.clip_(-1, 1) is x and x.tolist() == [-1.0, 0.5, 1.0]
    assert mg.tensor([-2.0, 3.0]).clamp_(max=0).tolist() == [-2.0, 0.0]


def test_constants() -> None:
    assert (mg.pi, mg.e, mg.inf) == (torch.pi, torch.e, torch.inf) and math.isnan(mg.nan)


ALIASES = [  # fn(m, a, b) on float64 inputs; a in (-2, 2), b in (0.5, 2) with a nan
    ("clamp_min", lambda m, a, b: m.clamp_min(a, 0.3)),
    ("clamp_max", lambda m, a, b: a.clamp_max(b)),
    ("absolute", lambda m, a, b: m.absolute(a)),
    ("negative", lambda m, a, b: m.negative(a)),
    ("positive", lambda m, a, b: m.positive(a)),
    ("multiply", lambda m, a, b: m.multiply(a, b)),
    ("subtract", lambda m, a, b: m.subtract(a, b, alpha=2)),
    ("divide", lambda m, a, b: m.divide(a, b)),
    ("divide_trunc", lambda m, a, b: m.divide(a * 4, b, rounding_mode="trunc")),
    ("divide_floor", lambda m, a, b: a.divide(4, rounding_mode="floor")),
    ("fmax", lambda m, a, b: m.fmax(a, b)),
    ("fmin", lambda m, a, b: a.fmin(b)),
    ("logaddexp2", lambda m, a, b: m.logaddexp2(a, b)),
]


@pytest.mark.parametrize("fn", [c[1] for c in ALIASES], ids=[c[0] for c in ALIASES])
def test_aliases_and_nan_aware_extrema_match_torch(fn) -> None:
    rng = np.random.default_rng(5)
    a = rng.uniform(-2, 2, (2, 4))
    b = rng.uniform(0.5, 2, (4,))
    b[1] = math.nan
    ours = [mg.tensor(a, requires_grad=True), mg.tensor(b, requires_grad=True)]
    refs = [torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)]
    out, ref = fn(mg, *ours), fn(torch, *refs)
    assert out.shape == tuple(ref.shape) and str(out.dtype) == str(ref.dtype)[6:]
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
    w = rng.standard_normal(out.shape)
    (out * mg.tensor(w)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    for o, r in zip(ours, refs):
        got = np.zeros(o.shape) if o.grad is None else o.grad.numpy()
        want = np.zeros(o.shape) if r.grad is None or r.grad._is_zerotensor() else r.grad.numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)


def test_integer_division_modes_and_logic() -> None:
    a, b = [-7, 7, -8, 2**40 + 1, 0], [2, -2, 2, 2, 3]
    for mode in ("trunc", "floor"):
        ours = mg.divide(mg.tensor(a), mg.tensor(b), rounding_mode=mode)
        ref = torch.divide(torch.tensor(a), torch.tensor(b), rounding_mode=mode)
        assert ours.dtype == np.int64 and ours.tolist() == ref.tolist()
    with pytest.raises(ValueError, match="rounding_mode"):
        mg.divide(mg.tensor(a), 2, rounding_mode="round")
    p, q = [True, False, True, False], [1.0, 0.0, 0.0, 2.0]
    for name in ("logical_and", "logical_or", "logical_xor"):
        ours = getattr(mg, name)(mg.tensor(p), mg.tensor(q))
        assert ours.tolist() == getattr(torch, name)(torch.tensor(p), torch.tensor(q)).tolist()
    assert mg.logical_not(mg.tensor(q)).tolist() == torch.logical_not(torch.tensor(q)).tolist()
    v = [math.inf, -math.inf, math.nan, 1.0]
    for name in ("isposinf", "isneginf", "isreal"):
        assert getattr(mg, name)(mg.tensor(v)).tolist() == getattr(torch, name)(
            torch.tensor(v)).tolist()


@pytest.mark.parametrize("name,args", [
    ("addcmul_", lambda m: (m.tensor([1.0, 2.0]), m.tensor([3.0, -1.0]))),
    ("addcdiv_", lambda m: (m.tensor([1.0, 2.0]), m.tensor([3.0, -1.0]))),
    ("lerp_", lambda m: (m.tensor([1.0, 2.0]), 0.25)),
    ("clamp_min_", lambda m: (0.6,)), ("clamp_max_", lambda m: (0.6,)),
    ("nan_to_num_", lambda m: ()), ("log_", lambda m: ()), ("reciprocal_", lambda m: ()),
    ("square_", lambda m: ()), ("floor_", lambda m: ()), ("ceil_", lambda m: ()),
    ("round_", lambda m: ()), ("trunc_", lambda m: ()),
])
def test_in_place_forms_match_torch(name: str, args) -> None:
    kw = {"value": 0.5} if name in ("addcmul_", "addcdiv_") else {}
    ours, ref = mg.tensor([0.5, 1.75]), torch.tensor([0.5, 1.75])
    assert getattr(ours, name)(*args(mg), **kw) is ours
    getattr(ref, name)(*args(torch), **kw)
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-6)
    # recorded like every in-place op: the gradient flows through the write
    x = mg.tensor([0.5, 1.75], requires_grad=True)
    tx = torch.tensor([0.5, 1.75], requires_grad=True)
    getattr(x * 1, name)(*args(mg), **kw).sum().backward()
    getattr(tx * 1, name)(*args(torch), **kw).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)


def test_sign_of_integers_and_bools_as_torch() -> None:
    """sign of integer data keeps the dtype; of bool data it is the data itself, as bool
    (numpy's sign refuses bool)."""
    for values, dtype in (([-3, 0, 5], np.int64), ([True, False, True], np.bool_)):
        ours = mg.sign(mg.tensor(np.array(values, dtype)))
        ref = torch.sign(torch.tensor(values))
        assert ours.tolist() == ref.tolist()
        assert str(ours.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]
