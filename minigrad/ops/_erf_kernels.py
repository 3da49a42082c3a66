"""erf, erfc, erfinv and erfcx in numba (numpy has none; scipy is not a runtime dependency).

ndarrays in, ndarrays out; compiled lazily on first call and cached on disk. erf and erfc
are libm's (``math.erf``), except float32's erf: a rational function evaluated in float64
and rounded once (_erf_float32), which vectorises where libm's runs one element at a time
(~10 ns each: GELU's float32 forward took 18x torch's time, now 2.6x). erfinv starts from
Giles' single-precision polynomial and takes two Newton steps on erf (on erfc near +-1,
where 1 - x is exact), which bring it to float64 accuracy. erfcx(x) = exp(x^2) erfc(x)
multiplies libm's erfc by exp(x^2) taken with x^2 split exactly in two, up to x = 26 (erfc
is still normal there), and beyond sums its asymptotic series.
"""

import math

import numpy as np

from minigrad._numba_cache import njit


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


# erf(x) = x P(x^2) / Q(x^2) on |x| <= 4, fitted here (iteratively reweighted least squares
# of erf(x) / x in t = x^2 at 4000 Chebyshev nodes of [0, 4], P(0) held at 2 / sqrt(pi), so
# that tiny x get libm's slope): relative error at most 2.5e-9 on 2,000,000 points of (0, 4],
# 0.04 of a float32 ulp; Q >= 1 there (no pole). Past 4, 1 - erf(x) < 1.6e-8 is under half a
# float32 ulp of 1: erf rounds to +-1.
_P = (1.1283791670955126, 0.18533274521024393, 0.05435248693388444, 0.003857567430847952,
      0.0003805342918832272, 4.705047859118119e-06, -1.3311620696260054e-08)
_Q = (1.0, 0.49758025492593616, 0.1140282905452602, 0.015480821955273569,
      0.0013104832829970543, 6.330890317012422e-05)


@njit(inline="always", error_model="numpy")  # (python's model tests q for 0: a branch)
def _erf32_one(v: float) -> np.float32:
    """erf(v) for a float32 v given as a float64: v P(v^2) / Q(v^2) (v clamped to [-4, 4];
    a NaN stays one), rounded once to float32: within an ulp of libm's erf rounded so, and
    equal to it but where the exact value lies within 0.04 ulp of a rounding tie. One select
    and no call, so loops over it vectorise."""
    p0, p1, p2, p3, p4, p5, p6 = _P
    q1, q2, q3, q4, q5 = _Q[1:]
    a = abs(v)
    a = 4.0 if a > 4.0 else a
    t = a * a
    p = p0 + t * (p1 + t * (p2 + t * (p3 + t * (p4 + t * (p5 + t * p6)))))
    q = 1.0 + t * (q1 + t * (q2 + t * (q3 + t * (q4 + t * q5))))
    return np.float32(math.copysign(a * p / q, v))


@njit(cache=True, error_model="numpy")
def _erf_float32(x: np.ndarray, out: np.ndarray) -> None:
    """out = erf(x) for flat float32 arrays (_erf32_one)."""
    for i in range(x.shape[0]):
        out[i] = _erf32_one(np.float64(x[i]))


_HALF, _ONE = np.float32(0.5), np.float32(1.0)
_ROOT_HALF = np.float32(math.sqrt(0.5))  # what numpy's float32 x * math.sqrt(0.5) takes


@njit(cache=True, error_model="numpy")
def _gelu_float32(x: np.ndarray, out: np.ndarray) -> None:
    """out = x * 0.5 * (1 + erf(x * sqrt(0.5))) for flat float32 arrays, each step in
    float32 as numpy takes the formula (so the same bits as it with _erf_float32's erf), in
    one pass where numpy took five around the erf."""
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = v * _HALF * (_ONE + _erf32_one(np.float64(v * _ROOT_HALF)))


_MINUS_HALF = np.float32(-0.5)
_INV_ROOT_TWO_PI = np.float32(1 / math.sqrt(2 * math.pi))  # numpy's float32 product takes


@njit(cache=True, error_model="numpy")
def _gelu_square_float32(x: np.ndarray, out: np.ndarray) -> None:
    """out = x * x * -0.5 for flat float32 arrays (the argument of GELU's phi), in float32."""
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = v * v * _MINUS_HALF


@njit(cache=True, error_model="numpy")
def _gelu_slope_float32(x: np.ndarray, e: np.ndarray) -> None:
    """e = (erf(x sqrt(0.5)) + 1) * 0.5 + x * (e / sqrt(2 pi)) in place, e = exp(-x^2 / 2)
    by numpy's SIMD exp (numba's scalar exp is ~10x slower): GELU's derivative Phi(x) +
    x phi(x), each step in float32 as numpy takes it, in one pass where numpy took eight."""
    for i in range(x.shape[0]):
        v = x[i]
        phi = e[i] * _INV_ROOT_TWO_PI
        e[i] = (_erf32_one(np.float64(v * _ROOT_HALF)) + _ONE) * _HALF + v * phi


def gelu_slope(x: np.ndarray) -> np.ndarray:
    """GELU's derivative of a float32 array in three passes: x * x * -0.5 (a kernel),
    numpy's exp in place, and the rest (a kernel); the same bits as those steps in numpy
    with this module's float32 erf."""
    flat = _flat_float32(x)
    e = np.empty_like(flat)
    _gelu_square_float32(flat, e)
    np.exp(e, out=e)
    _gelu_slope_float32(flat, e)
    return e.reshape(x.shape)


def _by_float32_kernel(kernel, x: np.ndarray) -> np.ndarray:
    """kernel(flat x, out) over a float32 array of any layout, in x's shape (a read-only
    input is copied: numba types it apart, another signature to compile)."""
    flat = _flat_float32(x)
    out = np.empty_like(flat)
    kernel(flat, out)
    return out.reshape(x.shape)


def _flat_float32(x: np.ndarray) -> np.ndarray:
    """x as a flat C-contiguous writeable float32 array (a copy where it must be: numba
    types a read-only array apart, another signature to compile)."""
    flat = np.ascontiguousarray(x).reshape(-1)
    return flat if flat.flags.writeable else flat.copy()


def erf(x: np.ndarray) -> np.ndarray:
    """erf rounded to x's dtype: float32's by _erf_float32, any other's by libm's erf in
    float64 (one compiled signature each)."""
    if x.dtype == np.float32:
        return _by_float32_kernel(_erf_float32, x)
    return _erf(_float64(x), False).reshape(x.shape).astype(x.dtype, copy=False)


def gelu(x: np.ndarray) -> np.ndarray:
    """The exact GELU of a float32 array, x * 0.5 * (1 + erf(x sqrt(0.5))), in one pass."""
    return _by_float32_kernel(_gelu_float32, x)


def erfc(x: np.ndarray) -> np.ndarray:
    return _erf(_float64(x), True).reshape(x.shape).astype(x.dtype, copy=False)


def _float64(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float64).reshape(-1)


def erfinv(x: np.ndarray) -> np.ndarray:
    return _erfinv(np.ascontiguousarray(x).reshape(-1)).reshape(x.shape)


_INV_SQRT_PI = 0.5641895835477563


@njit(cache=True)
def _exp_square(x: float, c: float = 1.0) -> float:
    """exp(c x^2) (c a power of 2, or minus one) with x^2 = h^2 + l (2h + l) and h^2 exact
    (h: x's upper 26 bits): the rounding of x * x would cost x^2 ulps of it."""
    if abs(x) > 1e150:  # the split would overflow; exp(c x^2) is 0 or inf anyway
        return math.exp(c * x * x)
    v = 134217729.0 * x  # Veltkamp's split
    h = v - (v - x)
    lo = x - h
    return math.exp(c * (h * h)) * math.exp(c * (lo * (2.0 * h + lo)))


@njit(cache=True)
def _exp_squares(x: np.ndarray, c: float) -> np.ndarray:
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = _exp_square(x[i], c)
    return out


def exp_square(x: np.ndarray, c: float) -> np.ndarray:
    """exp(c x^2) elementwise, without the rounding of x^2 (c = -1/2: the normal density's)."""
    flat = np.ascontiguousarray(x, dtype=np.float64).reshape(-1)
    return _exp_squares(flat, c).reshape(x.shape)


@njit(cache=True)
def _tail(x: float) -> float:
    """sqrt(pi) x erfcx(x) - 1 = sum_(k >= 1) (-1)^k (2k-1)!! / (2x^2)^k for x >= 8, to
    rounding (the smallest term is ~exp(-x^2))."""
    y = 0.5 / (x * x)
    term = -y
    s = term
    k = 1
    while abs(term) > 1e-17 * abs(s):
        k += 1
        term *= -(2 * k - 1) * y
        s += term
    return s


@njit(cache=True)
def _erfcx_nonneg(x: float) -> float:
    if x < 26.0:
        return _exp_square(x) * math.erfc(x)
    if x > 1e8:  # the series' second term is below rounding
        return _INV_SQRT_PI / x
    return _INV_SQRT_PI * (1.0 + _tail(x)) / x


@njit(cache=True)
def _erfcx(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    for i in range(x.size):
        v = x[i]
        if math.isnan(v):
            out[i] = v
        elif v >= 0.0:
            out[i] = _erfcx_nonneg(v)
        elif v < -26.7:  # 2 exp(x^2) overflows
            out[i] = math.inf
        else:  # erfc(-y) = 2 - erfc(y): 2 exp(y^2) >= 2 against erfcx(-y) <= 1, no cancellation
            out[i] = 2.0 * _exp_square(v) - _erfcx_nonneg(-v)
    return out


@njit(cache=True)
def _erfcx_slope(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    for i in range(x.size):
        v = x[i]
        if v < 8.0 or math.isnan(v):
            out[i] = 2.0 * v * _erfcx(x[i:i + 1])[0] - 2.0 * _INV_SQRT_PI
        elif v > 1e8:  # -1 / (sqrt(pi) x^2), underflowing to -0 as x grows
            out[i] = -_INV_SQRT_PI / v / v
        else:  # 2 x erfcx(x) - 2 / sqrt(pi) cancels there: 2 / sqrt(pi) times the tail
            out[i] = 2.0 * _INV_SQRT_PI * _tail(v)
    return out


def erfcx_slope(x: np.ndarray) -> np.ndarray:
    """erfcx'(x) = 2x erfcx(x) - 2 / sqrt(pi), from the asymptotic series where that cancels."""
    flat = np.ascontiguousarray(x, dtype=np.float64).reshape(-1)
    return _erfcx_slope(flat).reshape(x.shape).astype(x.dtype, copy=False)


def erfcx(x: np.ndarray) -> np.ndarray:
    flat = np.ascontiguousarray(x, dtype=np.float64).reshape(-1)
    return _erfcx(flat).reshape(x.shape).astype(x.dtype, copy=False)
