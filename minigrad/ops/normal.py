"""The standard normal's log-CDF (log_ndtr) and quantile (ndtri), accurate in both tails.

log Phi(x) = log(erfcx(-x / sqrt 2) / 2) - x^2 / 2 for x < 0 (no underflow of Phi), and
log1p(-(1 - Phi(x))) above. Its derivative is the inverse Mills ratio R = phi / Phi
= sqrt(2 / pi) / erfcx(-x / sqrt 2), whose own is -R (x + R): every order from ops. (For
x << -1, R ~ -x and x + R cancels: the second derivative there keeps ~16 - 2 log10|x|
digits.) ndtri(p) = sqrt 2 erfinv(2p - 1) on [1/4, 3/4], where 2p - 1 is exact; in the tails
Newton's method on log Phi(x) = log p (on 1 - p, exact, above 3/4), from the asymptotic
x ~ -sqrt(-2 log p - log(-2 log p) - log 2 pi) where erfinv has lost p's digits.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._kernel_registry import kernels
from ._base import _Unary

_SQRT2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_SQRT_2PI = math.sqrt(2.0 * math.pi)


def _erf_kernels():
    return kernels("erf")


def _log_ndtr(x: np.ndarray) -> np.ndarray:
    k = _erf_kernels()
    out = np.empty(x.shape)
    neg = x < 0
    xn = x[neg]
    with np.errstate(over="ignore", divide="ignore"):
        out[neg] = np.log(k.erfcx(-xn / _SQRT2) * 0.5) - xn * xn * 0.5
        out[~neg] = np.log1p(-_upper_tail(x[~neg]))
    return out


def _upper_tail(x: np.ndarray) -> np.ndarray:
    """1 - Phi(x) = erfcx(x / sqrt 2) exp(-x^2 / 2) / 2 for x >= 0 (erfc(x / sqrt 2) would
    turn the rounding of x / sqrt 2 into ~x^2 ulps)."""
    return 0.5 * _erf_kernels().erfcx(x / _SQRT2) * _half_square_exp(x)


def _mills(x: np.ndarray) -> np.ndarray:
    """phi(x) / Phi(x): sqrt(2 / pi) / erfcx(-x / sqrt 2) below 0; above, phi over 1 - Q with
    x^2 split (erfcx of a negative argument is exp of its rounded square)."""
    out = np.empty(x.shape)
    neg = ~(x > 0)  # nan too
    with np.errstate(divide="ignore"):
        out[neg] = _SQRT_2_OVER_PI / _erf_kernels().erfcx(-x[neg] / _SQRT2)
    xp = x[~neg]
    out[~neg] = _half_square_exp(xp) / _SQRT_2PI / (1.0 - _upper_tail(xp))
    return out


def _half_square_exp(x: np.ndarray) -> np.ndarray:
    return _erf_kernels().exp_square(x, -0.5)


def _lower_quantile(q: np.ndarray) -> np.ndarray:
    """ndtri(q) for q in [0, 1/4): Newton on log Phi(x) = log q."""
    x = np.full(q.shape, -np.inf)
    pos = q > 0
    q = q[pos]
    with np.errstate(divide="ignore"):
        two_log = -2.0 * np.log(q)
        far = -np.sqrt(np.maximum(two_log - np.log(two_log) - math.log(2.0 * math.pi), 1.0))
    y = np.where(q > 1e-10, _SQRT2 * _erf_kernels().erfinv(2.0 * q - 1.0), far)
    log_q = np.log(q)
    for _ in range(50):  # converges quadratically: ~4 steps from the guesses
        step = (_log_ndtr(y) - log_q) / _mills(y)
        y = y - step
        if np.all(np.abs(step) <= 1e-15 * np.abs(y)):
            break
    x[pos] = y
    return x


def _ndtri(p: np.ndarray) -> np.ndarray:
    p = np.asarray(p, np.float64)
    out = np.full(p.shape, np.nan)
    mid = (p >= 0.25) & (p <= 0.75)
    out[mid] = _SQRT2 * _erf_kernels().erfinv(2.0 * p[mid] - 1.0)
    lo = (p >= 0.0) & (p < 0.25)
    hi = (p > 0.75) & (p <= 1.0)
    out[lo] = _lower_quantile(p[lo])
    out[hi] = -_lower_quantile(1.0 - p[hi])
    return out


def _in_float64(f):
    """f computed in float64, its result in the input's dtype."""
    return staticmethod(lambda x: f(x.astype(np.float64)).astype(x.dtype, copy=False))


class LogNdtr(_Unary):
    """log Phi(a), Phi the standard normal CDF."""

    fn = _in_float64(_log_ndtr)
    grad = staticmethod(lambda a, g: g * InverseMills.apply(a))


def _mills_slope(a: Any, g: Any) -> Any:
    r = InverseMills.apply(a)
    return -g * r * (a + r)


class InverseMills(_Unary):
    """R(a) = phi(a) / Phi(a), the derivative of log Phi; R' = -R (a + R)."""

    fn = _in_float64(_mills)
    grad = staticmethod(_mills_slope)


def _ndtri_slope(p: Any, g: Any) -> Any:
    x = Ndtri.apply(p)
    return g * _SQRT_2PI * (x * x * 0.5).exp()


class Ndtri(_Unary):
    """Phi^-1(p): -inf at 0, inf at 1, nan outside [0, 1]; its derivative 1 / phi(Phi^-1(p))
    = sqrt(2 pi) exp(x^2 / 2)."""

    fn = _in_float64(_ndtri)
    grad = staticmethod(_ndtri_slope)
