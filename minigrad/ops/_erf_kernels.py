"""erf, erfc and erfinv in numba (numpy has none; scipy is not a runtime dependency).

ndarrays in, ndarrays out; compiled lazily on first call and cached on disk. erf and erfc
are libm's (``math.erf``); erfinv starts from Giles' single-precision polynomial and takes
two Newton steps on erf (on erfc near +-1, where 1 - x is exact), which bring it to
float64 accuracy.
"""

import math

import numpy as np
from numba import njit


@njit(cache=True)
def _erf(x: np.ndarray, complement: bool) -> np.ndarray:
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = math.erfc(x[i]) if complement else math.erf(x[i])
    return out


@njit(cache=True)
def _erfinv_one(x: float) -> float:
    if math.isnan(x) or abs(x) > 1.0:
        return math.nan
    if abs(x) == 1.0:
        return math.copysign(math.inf, x)
    w = -math.log((1.0 - x) * (1.0 + x))
    if w < 5.0:
        w -= 2.5
        p = 2.81022636e-08
        for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941):
            p = c + p * w
    else:
        w = math.sqrt(w) - 3.0
        p = -0.000200214257
        for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                  -0.0076224613, 0.00943887047, 1.00167406, 2.83297682):
            p = c + p * w
    a = abs(x)
    y = p * a
    for _ in range(2):  # Newton on erf(y) = a: erf'(y) = 2/sqrt(pi) exp(-y^2)
        # Near 1, on erfc(y) = 1 - a instead: 1 - a is exact there, erf(y) - a cancels.
        r = (1.0 - a) - math.erfc(y) if a > 0.5 else math.erf(y) - a
        y -= r / (1.1283791670955126 * math.exp(-y * y))
    return math.copysign(y, x)


@njit(cache=True)
def _erfinv(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = _erfinv_one(x[i])
    return out


def erf(x: np.ndarray) -> np.ndarray:
    return _erf(np.ascontiguousarray(x).reshape(-1), False).reshape(x.shape)


def erfc(x: np.ndarray) -> np.ndarray:
    return _erf(np.ascontiguousarray(x).reshape(-1), True).reshape(x.shape)


def erfinv(x: np.ndarray) -> np.ndarray:
    return _erfinv(np.ascontiguousarray(x).reshape(-1)).reshape(x.shape)
