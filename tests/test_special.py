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
]


TRIGAMMA = {"digamma", "psi"}  # their gradient is trigamma, polygamma(1)


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
