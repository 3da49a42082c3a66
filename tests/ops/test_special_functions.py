"""The gamma family (lgamma, digamma, polygamma, mvlgamma) and mg.special: accuracy against
mpmath at 30 digits, values and gradients against torch.special, gradients of every order by
finite differences, special values and torch's errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd import gradcheck, gradgradcheck

S = mg.special


def _points() -> np.ndarray:
    # with points just off the poles on both sides (x - floor(x) rounds there) and the
    # halves (where cot(pi x) = 0)
    near = np.array([1e-8, 1e-12, 1e-15, 1e-100])
    x = np.concatenate([np.linspace(-30.3, 50.0, 801), np.geomspace(1e-8, 1e8, 60),
                        0.37 - np.geomspace(1e-6, 1e3, 60), -near, -1 - near, -1 + near,
                        -3 + near, [-0.5, -2.5, -3.75, -1000.3]])
    return x[x != np.floor(x)]  # the poles are checked apart


@pytest.mark.parametrize("n", [0, 1, 2, 3, 6])
def test_polygamma_is_accurate_against_mpmath(n: int) -> None:
    mpmath = pytest.importorskip("mpmath")
    x = _points()
    got = mg.polygamma(n, mg.tensor(x)).numpy()
    with mpmath.workdps(30):
        ref = np.array([float(mpmath.polygamma(n, mpmath.mpf(v))) for v in x])
    # Near a root the value is the difference of terms of size ~|psi^(n)| at the neighbouring
    # pole-free scale: judge the error against that scale (1 + |ref| or the term sizes).
    big = ~np.isfinite(ref)  # 1 / x^(n+1) overflows next to 0
    np.testing.assert_array_equal(got[big], ref[big])
    scale = np.maximum(np.abs(ref[~big]), math.factorial(n))
    assert np.max(np.abs(got[~big] - ref[~big]) / scale) < 1e-13


def test_far_left_by_the_reflection_formula() -> None:
    # psi(x) = psi(1 - x) - pi cot(pi x) and psi'(x) = pi^2 / sin^2(pi x) - psi'(1 - x), in
    # mpmath (its own polygamma climbs |x| there); minigrad reflects, so this takes no time
    mpmath = pytest.importorskip("mpmath")
    x = np.array([-1e7 - 0.3, -1e12 + 0.5, -123456.789])
    with mpmath.workdps(40):
        for n, ref in [
            (0, lambda v: mpmath.digamma(1 - v) - mpmath.pi * mpmath.cot(mpmath.pi * v)),
            (1, lambda v: (mpmath.pi / mpmath.sin(mpmath.pi * v)) ** 2
             - mpmath.polygamma(1, 1 - v)),
        ]:
            want = np.array([float(ref(mpmath.mpf(v))) for v in x])
            got = mg.polygamma(n, mg.tensor(x)).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-13)


def test_lgamma_is_accurate_against_mpmath() -> None:
    mpmath = pytest.importorskip("mpmath")
    x = _points()
    got = mg.lgamma(mg.tensor(x)).numpy()
    ref = np.array([float(mpmath.log(abs(mpmath.gamma(mpmath.mpf(v))))) for v in x])
    assert np.max(np.abs(got - ref) / np.maximum(np.abs(ref), 1.0)) < 1e-14


def test_gradients_are_the_next_function_to_every_order() -> None:
    x = mg.tensor([0.3, 1.7, 4.2, -1.5, -2.25], dtype=mg.float64, requires_grad=True)
    assert gradcheck(mg.lgamma, (x,)) and gradgradcheck(mg.lgamma, (x,))
    for n in (0, 1, 4):
        assert gradgradcheck(lambda t, n=n: t.polygamma(n), (x,))
    (g,) = mg.autograd.grad(mg.lgamma(x).sum(), x, create_graph=True)
    (h,) = mg.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(g.detach().numpy(), mg.digamma(x).detach().numpy(), rtol=0)
    np.testing.assert_allclose(h.numpy(), mg.polygamma(1, x).detach().numpy(), rtol=0)
    y = mg.tensor([1.6, 3.0], dtype=mg.float64, requires_grad=True)
    assert gradgradcheck(lambda t: t.mvlgamma(3), (y,))


def test_special_values_and_poles() -> None:
    torch = pytest.importorskip("torch")
    inf, nan = math.inf, math.nan
    x = [0.0, -0.0, -1.0, -2.0, 1e-300, 1.0, 1e10, inf, -inf, nan, -2.5]
    ours = lambda f: f(mg.tensor(x, dtype=mg.float64)).numpy()  # noqa: E731
    theirs = lambda f: f(torch.tensor(x, dtype=torch.float64)).numpy()  # noqa: E731
    np.testing.assert_allclose(ours(mg.lgamma), theirs(torch.lgamma), rtol=1e-14)
    np.testing.assert_allclose(ours(mg.digamma), theirs(torch.digamma), rtol=1e-14)
    for n in (1, 2, 3):
        got = ours(lambda t, n=n: mg.polygamma(n, t))
        ref = theirs(lambda t, n=n: torch.polygamma(n, t))
        # torch: polygamma(n >= 2, inf) is nan and polygamma(1, -1) a rounded 6.6e32; the
        # limit at +inf is 0 and the poles are +inf (odd n) or torch's -inf (even n)
        assert got[x.index(inf)] == 0.0
        for pole in (-1.0, -2.0):
            assert got[x.index(pole)] == (inf if n % 2 else -inf)
        keep = [i for i, v in enumerate(x) if v not in (inf, -1.0, -2.0, -inf)]
        np.testing.assert_array_equal(np.isfinite(got[keep]), np.isfinite(ref[keep]))
        # and the finite values are mpmath's (torch's trigamma is 5e-10 off: 1.6449340676
        # at 1, where pi^2 / 6 = 1.6449340668)
        mpmath = pytest.importorskip("mpmath")
        for i in keep:
            if np.isfinite(got[i]):
                want = float(mpmath.polygamma(n, mpmath.mpf(x[i])))
                assert abs(got[i] - want) <= 1e-14 * abs(want), (n, x[i])


def test_float32_integer_inputs_and_errors() -> None:
    torch = pytest.importorskip("torch")
    x = np.array([0.5, 1.5, 7.25], np.float32)
    for name in ("lgamma", "digamma"):
        got, ref = getattr(mg, name)(mg.tensor(x)), getattr(torch, name)(torch.tensor(x))
        assert got.dtype == np.float32
        np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=2e-6)
    assert mg.lgamma(mg.tensor([1, 2, 4])).dtype == np.float32
    assert mg.polygamma(1, mg.tensor([1, 2])).dtype == np.float32
    with pytest.raises(RuntimeError, match="does not support negative n"):
        mg.polygamma(-1, mg.tensor([1.0]))
    with pytest.raises(TypeError, match="'n' must be int"):
        mg.tensor([1.0]).polygamma(1.5)
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        mg.mvlgamma(mg.tensor([2.0]), 0)


# mg.special against torch.special: (name, minigrad call, torch call, input domain)
SPECIAL = [
    ("digamma", lambda m, x: m.digamma(x), (0.2, 4)),
    ("psi", lambda m, x: m.psi(x), (0.2, 4)),
    ("gammaln", lambda m, x: m.gammaln(x), (0.2, 4)),
    ("polygamma", lambda m, x: m.polygamma(3, x), (0.2, 4)),
    ("multigammaln", lambda m, x: m.multigammaln(x, 2), (0.8, 4)),
    ("erf", lambda m, x: m.erf(x), (-2, 2)),
    ("erfc", lambda m, x: m.erfc(x), (-2, 2)),
    ("erfinv", lambda m, x: m.erfinv(x), (-0.9, 0.9)),
    ("exp2", lambda m, x: m.exp2(x), (-2, 2)),
    ("expit", lambda m, x: m.expit(x), (-3, 3)),
    ("expm1", lambda m, x: m.expm1(x), (-2, 2)),
    ("log1p", lambda m, x: m.log1p(x), (-0.5, 2)),
    ("logit", lambda m, x: m.logit(x), (0.1, 0.9)),
    ("logsumexp", lambda m, x: m.logsumexp(x, 1), (-3, 3)),
    ("softmax", lambda m, x: m.softmax(x, 1), (-3, 3)),
    ("log_softmax", lambda m, x: m.log_softmax(x, 0), (-3, 3)),
    ("round", lambda m, x: m.round(x, decimals=1) * x, (-3, 3)),
    ("sinc", lambda m, x: m.sinc(x), (-2.5, 2.5)),
    ("entr", lambda m, x: m.entr(x), (0.1, 3)),
    ("ndtr", lambda m, x: m.ndtr(x), (-4, 4)),
    ("xlogy", lambda m, x: m.xlogy(x, x * x + 0.5), (-2, 2)),
    ("xlog1py", lambda m, x: m.xlog1py(x, x * x - 0.5), (-2, 2)),
    ("erfcx", lambda m, x: m.erfcx(x), (-2, 3)),
    ("log_ndtr", lambda m, x: m.log_ndtr(x), (-6, 3)),
    ("ndtri", lambda m, x: m.ndtri(x), (0.02, 0.98)),
    ("i0", lambda m, x: m.i0(x), (-4, 4)),
    ("i0e", lambda m, x: m.i0e(x), (-4, 4)),
    ("i1", lambda m, x: m.i1(x), (-4, 4)),
    ("i1e", lambda m, x: m.i1e(x), (-4, 4)),
    ("modified_bessel_i0", lambda m, x: m.modified_bessel_i0(x), (-4, 4)),
    ("modified_bessel_i1", lambda m, x: m.modified_bessel_i1(x), (-4, 4)),
]


TRIGAMMA = {"digamma", "psi"}  # their gradient is trigamma, polygamma(1)
# torch has no derivative for these two; they are i0 and i1, whose gradients it has
SAME_AS = {"modified_bessel_i0": "i0", "modified_bessel_i1": "i1"}


def test_every_special_name_has_a_row() -> None:
    assert sorted(S.__all__) == sorted(name for name, _, _ in SPECIAL)
    scope: dict = {}
    exec("from minigrad.special import *", scope)
    assert set(scope) - {"__builtins__"} == set(S.__all__)


@pytest.mark.parametrize("name, fn, domain", SPECIAL, ids=[s[0] for s in SPECIAL])
def test_special_matches_torch_special(name: str, fn, domain: tuple) -> None:
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(7).uniform(*domain, (3, 4))
    x, xt = mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    out, ref = fn(S, x), fn(torch.special, xt)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12,
                               atol=1e-14)
    if name in SAME_AS:
        ref = getattr(torch.special, SAME_AS[name])(xt)
    w = np.random.default_rng(8).standard_normal(tuple(ref.shape))
    (out * mg.tensor(w)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    want = xt.grad.numpy()
    if name in TRIGAMMA:  # torch's trigamma is 5e-10 off: mpmath's at 30 digits instead
        mpmath = pytest.importorskip("mpmath")
        want = w * np.vectorize(lambda v: float(mpmath.polygamma(1, v)))(a)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-10, atol=1e-12)
    assert gradgradcheck(lambda t: fn(S, t), (mg.tensor(a, requires_grad=True),))


def test_special_edges_match_torch() -> None:
    torch = pytest.importorskip("torch")
    x = [0.0, -1.0, 2.0, math.inf]
    np.testing.assert_array_equal(S.entr(mg.tensor(x)).numpy(),
                                  torch.special.entr(torch.tensor(x)).numpy())
    a, y = [0.0, 0.0, 0.0, 2.0], [-1.0, math.inf, math.nan, 1e-10]
    got = S.xlog1py(mg.tensor(a, dtype=mg.float64), mg.tensor(y, dtype=mg.float64)).numpy()
    ref = torch.special.xlog1py(torch.tensor(a, dtype=torch.float64),
                                torch.tensor(y, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-15)  # log1p: 2e-10 to the last digit
    # the slope -(log x + 1): +inf at 0 (as torch's; the one-sided quotient -log h grows
    # without bound), 0 where the value is the constant -inf
    z, zt = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    S.entr(z).sum().backward()
    torch.special.entr(zt).sum().backward()
    # torch's slope at x < 0 is nan; the value there is the constant -inf, so minigrad's is 0
    np.testing.assert_array_equal(z.grad.numpy()[[0, 2, 3]], zt.grad.numpy()[[0, 2, 3]])
    assert z.grad.numpy()[0] == math.inf and z.grad.numpy()[1] == 0.0
    # the lower tail: torch's ndtr(-10) is 0; erfc keeps it, to mpmath's 14 digits
    mpmath = pytest.importorskip("mpmath")
    t = np.array([-40.0, -10.0, -3.0, 0.0, 3.0])
    want = np.array([float(mpmath.ncdf(v)) for v in t])
    np.testing.assert_allclose(S.ndtr(mg.tensor(t)).numpy(), want, rtol=1e-13, atol=0)


# ---- erfcx, log_ndtr, ndtri and the modified Bessel functions: accuracy and the tails ----

def _rel_err(got: np.ndarray, want: np.ndarray) -> float:
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
    ok = np.isfinite(want) & (want != 0)
    np.testing.assert_array_equal(got[~ok], want[~ok])
    return float(np.max(np.abs(got[ok] - want[ok]) / np.abs(want[ok])))


@pytest.mark.parametrize("n", [0, 1, 2, 5])
def test_bessel_i_is_accurate_against_mpmath(n: int) -> None:
    # orders 2 and 5 are reached by derivatives only; |x| = 25 is where the power series
    # hands over to the asymptotic one; 713.98 is where I_0 overflows, past exp(x)'s 709.78
    mpmath = pytest.importorskip("mpmath")
    from minigrad.ops.bessel import BesselI

    finite = np.concatenate([np.linspace(-40.0, 40.0, 321), np.geomspace(1e-300, 713.9, 120),
                             -np.geomspace(1e-8, 100.0, 30), [24.999, 25.0, 25.001, 710.0,
                                                              714.0, 0.0]])
    x = np.concatenate([finite, [math.inf, -math.inf]])
    with mpmath.workdps(40):
        ref = [float(mpmath.besseli(n, mpmath.mpf(v))) for v in finite]
        ref_e = [float(mpmath.besseli(n, mpmath.mpf(v)) * mpmath.exp(-abs(v))) for v in finite]
    inf = [math.inf, math.inf if n % 2 == 0 else -math.inf]
    t = mg.tensor(x)
    assert _rel_err(BesselI.apply(t, n, False).numpy(), np.array(ref + inf)) < 4e-15
    assert _rel_err(BesselI.apply(t, n, True).numpy(), np.array(ref_e + [0.0, 0.0])) < 4e-15


def test_erfcx_and_its_slope_are_accurate_against_mpmath() -> None:
    mpmath = pytest.importorskip("mpmath")
    from minigrad.ops.unary import ErfcxSlope

    x = np.concatenate([np.linspace(-26.6, 40.0, 400), np.geomspace(1e-300, 1e12, 120),
                        -np.geomspace(1e-300, 26.0, 60), [7.99, 8.0, 25.99, 26.0, 1e8, 2e8]])
    with mpmath.workdps(80):  # erfcx'(x) = 2x erfcx(x) - 2/sqrt(pi) cancels ~log10(2x^2)
        f = [mpmath.exp(mpmath.mpf(v) ** 2) * mpmath.erfc(mpmath.mpf(v)) for v in x]
        ref = np.array([float(v) for v in f])
        slope = np.array([float(2 * mpmath.mpf(v) * w - 2 / mpmath.sqrt(mpmath.pi))
                          for v, w in zip(x, f)])
    t = mg.tensor(x)
    assert _rel_err(S.erfcx(t).numpy(), ref) < 1e-15
    # exact to rounding from x = 8 on (the asymptotic tail), to ~2x^2 ulps below it
    got = ErfcxSlope.apply(t).numpy()
    big = x >= 8.0
    assert _rel_err(got[big], slope[big]) < 2e-15
    np.testing.assert_array_equal(got[~np.isfinite(slope)], slope[~np.isfinite(slope)])
    fin = ~big & np.isfinite(slope)
    err = np.abs(got[fin] - slope[fin]) / np.abs(slope[fin])
    assert np.all(err < 4e-16 * np.maximum(2.0 * x[fin] ** 2, 2.0))
    v = S.erfcx(mg.tensor([math.inf, -math.inf, -26.7, math.nan])).numpy()
    assert v[0] == 0.0 and v[1] == v[2] == math.inf and math.isnan(v[3])


def test_log_ndtr_and_ndtri_are_accurate_in_both_tails() -> None:
    mpmath = pytest.importorskip("mpmath")
    x = np.concatenate([np.linspace(-40.0, 9.0, 300), -np.geomspace(1e-10, 1e5, 60),
                        np.geomspace(1e-10, 9.0, 40)])
    with mpmath.workdps(40):
        ref = np.array([float(mpmath.log(mpmath.ncdf(mpmath.mpf(v)))) for v in x])
        slope = np.array([float(mpmath.npdf(mpmath.mpf(v)) / mpmath.ncdf(mpmath.mpf(v)))
                          for v in x])  # phi / Phi
    t = mg.tensor(x, requires_grad=True)
    out = S.log_ndtr(t)
    assert _rel_err(out.detach().numpy(), ref) < 1e-15
    out.sum().backward()
    assert _rel_err(t.grad.numpy(), slope) < 1e-15
    # ndtri: p from the smallest subnormal to 1 - 2^-53, the quantiles by mpmath
    p = np.concatenate([[5e-324, 1e-300, 1e-100, 1e-20, 1e-11, 1e-9, 0.2499999, 0.25, 0.5,
                         0.5 + 2.0**-52, 0.75, 0.7500001, 1 - 1e-9, 1 - 2.0**-53],
                        np.linspace(0.01, 0.99, 50)])
    got = S.ndtri(mg.tensor(p)).numpy()
    with mpmath.workdps(40):  # the roots of log ncdf(x) = log p (well scaled in the tails),
        # from a start off minigrad's value by 1e-3, so that a wrong value cannot pass
        q = np.array([float(mpmath.findroot(
            lambda t, v=v: mpmath.log(mpmath.ncdf(t)) - mpmath.log(v), g + 1e-3))
            for v, g in zip(p, got)])
    np.testing.assert_allclose(got, q, rtol=4e-15, atol=1e-30)  # ndtri(0.5) = 0
    v = S.ndtri(mg.tensor([0.0, 1.0, -0.1, 1.1, math.nan])).numpy()
    assert v[0] == -math.inf and v[1] == math.inf and np.isnan(v[2:]).all()
    w = S.log_ndtr(mg.tensor([math.inf, -math.inf, math.nan])).numpy()
    assert w[0] == 0.0 and w[1] == -math.inf and math.isnan(w[2])


def test_new_specials_differentiate_to_every_order() -> None:
    x = mg.tensor([-30.0, -3.0, -0.7, 0.4, 2.5, 31.0], dtype=mg.float64, requires_grad=True)
    for fn in (S.i0, S.i0e, S.i1, S.i1e):
        assert gradcheck(fn, (x,)) and gradgradcheck(fn, (x,))
    e = mg.tensor([-5.0, -0.7, 0.4, 2.5, 12.0, 31.0], dtype=mg.float64, requires_grad=True)
    assert gradcheck(S.erfcx, (e,)) and gradgradcheck(S.erfcx, (e,))
    y = mg.tensor([-8.0, -1.5, 0.0, 2.0, 7.0], dtype=mg.float64, requires_grad=True)
    assert gradcheck(S.log_ndtr, (y,)) and gradgradcheck(S.log_ndtr, (y,))
    p = mg.tensor([1e-6, 0.1, 0.5, 0.8, 0.999], dtype=mg.float64, requires_grad=True)
    assert gradcheck(S.ndtri, (p,)) and gradgradcheck(S.ndtri, (p,))
    # at x = 0, where I_1 / x (the other form of I_1') is 0 / 0: I_1 = x/2 + x^3/16 + ...,
    # so I_1'(0) = 1/2, I_1''(0) = 0, I_1'''(0) = 3/8; and I_0''(0) = 1/2
    z = mg.tensor([0.0], dtype=mg.float64, requires_grad=True)
    d = [S.i1(z)]
    for _ in range(3):
        (g,) = mg.autograd.grad(d[-1].sum(), z, create_graph=True)
        d.append(g)
    assert [float(v.detach().numpy()[0]) for v in d] == [0.0, 0.5, 0.0, 0.375]
    (g,) = mg.autograd.grad(S.i0(z).sum(), z, create_graph=True)
    (h,) = mg.autograd.grad(g.sum(), z)
    assert h.numpy()[0] == 0.5


def test_new_specials_edges_and_dtypes() -> None:
    torch = pytest.importorskip("torch")
    for name in ("i0", "i0e", "i1", "i1e", "erfcx", "log_ndtr", "ndtri"):
        f32 = getattr(S, name)(mg.tensor([0.3, 0.6], dtype=mg.float32))
        assert f32.dtype == np.float32, name
        assert getattr(S, name)(mg.tensor([0, 1])).dtype == np.float32, name
    assert mg.i0(mg.tensor([1.0])).numpy()[0] == S.i0(mg.tensor([1.0])).numpy()[0]
    # the kink of i0e at 0: torch's slope there, sign(0) = 0 (as minigrad's |x|)
    x = [0.0, -2.0, 3.0]
    a, at = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    S.i0e(a).sum().backward()
    torch.special.i0e(at).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), at.grad.numpy(), rtol=1e-6, atol=0)
    assert a.grad.numpy()[0] == 0.0
    # the tails beside torch's, which is exact there too
    t = [-40.0, -10.0, 0.0, 10.0]
    np.testing.assert_allclose(S.log_ndtr(mg.tensor(t, dtype=mg.float64)).numpy(),
                               torch.special.log_ndtr(torch.tensor(t, dtype=torch.float64)),
                               rtol=1e-14)
    e = [-5.0, 0.5, 30.0, 1e5]
    np.testing.assert_allclose(S.erfcx(mg.tensor(e, dtype=mg.float64)).numpy(),
                               torch.special.erfcx(torch.tensor(e, dtype=torch.float64)),
                               rtol=1e-14)
