"""lgamma and the polygamma functions in numba (numpy has neither; scipy is not a runtime
dependency).

ndarrays in, ndarrays out, computed in float64; compiled lazily on first call and cached on
disk. lgamma is libm's (``math.lgamma``). psi^(n) (n = 0 is digamma) climbs by its
recurrence to an argument where the asymptotic (Euler-Maclaurin) series with seven Bernoulli
terms is below rounding; negative arguments are reflected first, so the climb is bounded.
"""

import math

import numpy as np

from minigrad._numba_cache import njit

# B_2k / (2k)! for k = 1..7 (the Bernoulli numbers' weights in the asymptotic series of
# zeta(s, x)) and B_2k / (2k) (those of digamma's)
_B = (1.0 / 12.0, -1.0 / 720.0, 1.0 / 30240.0, -1.0 / 1209600.0, 1.0 / 47900160.0,
      -691.0 / 1307674368000.0, 1.0 / 74724249600.0)
_B_DIGAMMA = (1.0 / 12.0, -1.0 / 120.0, 1.0 / 252.0, -1.0 / 240.0, 1.0 / 132.0,
              -691.0 / 32760.0, 1.0 / 12.0)


@njit(cache=True)
def _lgamma(x: np.ndarray) -> np.ndarray:
    out = np.empty(x.size)
    for i in range(x.size):
        out[i] = math.lgamma(x[i])
    return out


@njit(cache=True)
def _cot_pi(x: float) -> float:
    """cot(pi x) to rounding near its poles (the integers) and its zeros (the halves)."""
    r = x - math.floor(x + 0.5)  # period 1: the distance to the nearest integer, exact
    a = abs(r)  # in [0, 1/2]; past 1/4, cot(pi a) = tan(pi (1/2 - a)), 1/2 - a exact
    c = math.tan(math.pi * (0.5 - a)) if a > 0.25 else 1.0 / math.tan(math.pi * a)
    return math.copysign(c, r)


@njit(cache=True)
def _digamma_one(x: float) -> float:
    if math.isnan(x) or x == -math.inf:
        return math.nan
    if x == 0.0:
        return -math.copysign(math.inf, x)  # the pole's side, as libm's tgamma
    acc = 0.0
    if x < 0.0:
        if x == math.floor(x):
            return math.nan
        # psi(x) = psi(1 - x) - pi cot(pi x)
        acc = -math.pi * _cot_pi(x)
        x = 1.0 - x
    while x < 10.0:  # psi(x) = psi(x + 1) - 1/x
        acc -= 1.0 / x
        x += 1.0
    w = 1.0 / (x * x)
    tail = 0.0
    for k in range(6, -1, -1):  # sum_k B_2k / (2k) x^-2k, by Horner in x^-2
        tail = (tail + _B_DIGAMMA[k]) * w
    return acc + math.log(x) - 0.5 / x - tail


@njit(cache=True)
def _polygamma_one(n: int, x: float) -> float:
    """psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x) for n >= 1."""
    if math.isnan(x) or x == -math.inf:
        return math.nan
    if x == math.inf:
        return 0.0
    if x <= 0.0 and x == math.floor(x):
        # a pole of order n + 1: +inf from both sides for odd n; for even n torch's -inf,
        # the limit from the right
        return math.inf if n % 2 == 1 else -math.inf
    if x < 0.0:
        return _reflected(n, x)
    return _climbed(n, x)


@njit(cache=True)
def _climbed(n: int, x: float) -> float:
    """psi^(n)(x) for x > 0: the recurrence up to 20 + 2n, then the asymptotic series."""
    s = n + 1.0
    acc = 0.0
    top = 20.0 + 2.0 * n  # where the series' terms fall fast for this order
    while x < top:  # zeta(s, x) = x^-s + zeta(s, x + 1)
        acc += x ** -s
        x += 1.0
    # zeta(s, x) ~ x^(1-s)/(s-1) + x^-s/2 + sum_k B_2k/(2k)! s(s+1)..(s+2k-2) x^(1-s-2k)
    tail = x ** (1.0 - s) / (s - 1.0) + 0.5 * x ** -s
    rising = s
    power = x ** (-s - 1.0)
    for k in range(7):
        tail += _B[k] * rising * power
        rising *= (s + 2 * k + 1) * (s + 2 * k + 2)
        power /= x * x
    sign = 1.0 if n % 2 == 1 else -1.0
    return sign * math.gamma(n + 1.0) * (acc + tail)


@njit(cache=True)
def _reflected(n: int, x: float) -> float:
    """psi^(n)(x) for x < 0 from psi^(n)(1 - x): the n-th derivative of the reflection
    psi(1 - x) - psi(x) = pi cot(pi x) gives psi^(n)(x) = (-1)^n psi^(n)(1 - x) -
    pi^(n+1) P_n(cot(pi x)), with P_0(c) = c and P_(k+1)(c) = -(1 + c^2) P_k'(c)."""
    p = np.zeros(n + 2)
    p[1] = 1.0
    for _ in range(n):  # coefficients of P_k, low order first
        d = np.zeros(n + 2)
        for j in range(1, n + 2):
            d[j - 1] = j * p[j]  # P_k'
        p[:] = 0.0
        for j in range(n):  # -(1 + c^2) P_k': P_k' has degree k <= n - 1
            p[j] -= d[j]
            p[j + 2] -= d[j]
    c = _cot_pi(x)
    poly = 0.0
    for j in range(n + 1, -1, -1):
        poly = poly * c + p[j]
    sign = 1.0 if n % 2 == 0 else -1.0
    return sign * _climbed(n, 1.0 - x) - math.pi ** (n + 1) * poly


@njit(cache=True)
def _polygamma(n: int, x: np.ndarray) -> np.ndarray:
    out = np.empty(x.size)
    for i in range(x.size):
        out[i] = _digamma_one(x[i]) if n == 0 else _polygamma_one(n, x[i])
    return out


def lgamma(x: np.ndarray) -> np.ndarray:
    flat = np.ascontiguousarray(x, dtype=np.float64).reshape(-1)
    return _lgamma(flat).reshape(x.shape).astype(x.dtype, copy=False)


def polygamma(n: int, x: np.ndarray) -> np.ndarray:
    flat = np.ascontiguousarray(x, dtype=np.float64).reshape(-1)
    return _polygamma(n, flat).reshape(x.shape).astype(x.dtype, copy=False)
