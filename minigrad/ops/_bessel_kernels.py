"""The modified Bessel functions of the first kind, I_n(x) and exp(-|x|) I_n(x), for integer
n >= 0, in numba (numpy has only i0, without the scaled form; scipy is not a runtime
dependency).

ndarrays in, ndarrays out, computed in float64; compiled lazily on first call and cached on
disk. Up to |x| = _SERIES_MAX the power series, whose terms are all positive (no
cancellation; each term from the last by products of x / 2k, unbiased rounding); beyond it
the large-x asymptotic series, summed until its terms fall below rounding, which they do
there for the small orders the derivatives reach.
"""

import math

import numpy as np

from minigrad._numba_cache import njit

_SERIES_MAX = 25.0
_E32 = math.exp(32.0)


@njit(cache=True)
def _series(n: int, ax: float) -> float:
    """I_n(ax) = sum_k (ax/2)^(2k+n) / (k! (k+n)!), ax >= 0."""
    h = 0.5 * ax
    t = 1.0
    for k in range(1, n + 1):
        t *= h / k
    s = t
    k = 0
    while t > 1e-17 * s:
        k += 1
        t *= (h / k) * (h / (k + n))
        s += t
    return s


@njit(cache=True)
def _asymptotic(n: int, ax: float) -> float:
    """sqrt(2 pi ax) exp(-ax) I_n(ax) for large ax: sum_k (-1)^k prod_j (4n^2 - (2j-1)^2)
    / (k! (8 ax)^k), to its smallest term."""
    mu = 4.0 * n * n
    s = 1.0
    term = 1.0
    for k in range(1, 200):
        new = -term * (mu - (2 * k - 1) ** 2) / (8.0 * k * ax)
        if abs(new) >= abs(term):  # the series has begun to diverge: stop at its smallest
            break
        term = new
        s += term
        if abs(term) <= 1e-17 * abs(s):
            break
    return s


@njit(cache=True)
def _bessel_i_one(n: int, x: float, scaled: bool) -> float:
    if math.isnan(x):
        return x
    ax = abs(x)
    if math.isinf(x):
        v = 0.0 if scaled else math.inf
    elif ax <= _SERIES_MAX:
        v = _series(n, ax)
        if scaled:
            v *= math.exp(-ax)
    else:
        v = _asymptotic(n, ax) / math.sqrt(2.0 * math.pi * ax)
        if not scaled:
            # exp(ax) of the exact argument (exp of a rounded ax - log(...) would lose
            # ax's condition number in digits); past 700, in two factors, so that I_n
            # overflows where it does (713.98 for n = 0) and not where exp(ax) does
            v = v * math.exp(ax) if ax <= 700.0 else math.exp(ax - 32.0) * (v * _E32)
    return -v if x < 0.0 and n % 2 == 1 else v


@njit(cache=True)
def _bessel_i(n: int, x: np.ndarray, scaled: bool) -> np.ndarray:
    out = np.empty(x.size)
    for i in range(x.size):
        out[i] = _bessel_i_one(n, x[i], scaled)
    return out


def bessel_i(n: int, x: np.ndarray, scaled: bool) -> np.ndarray:
    """I_n(x) (scaled: exp(-|x|) I_n(x)) elementwise, in x's dtype."""
    flat = np.ascontiguousarray(x, dtype=np.float64).reshape(-1)
    return _bessel_i(n, flat, scaled).reshape(x.shape).astype(x.dtype, copy=False)
