"""Scalar helpers that let one Jacobi kernel serve real and complex matrices: numba picks
each helper's implementation by the argument's type when it compiles a kernel, so a real
specialisation compiles to exactly the code it had before (each real helper is an
identity or the cast it replaces) and a complex one gets the Hermitian inner product and
complex (phase) rotations. Under NUMBA_DISABLE_JIT the plain Python bodies run.

A complex Jacobi rotation of a pair with off-diagonal (or inner product) g = |g| ph is the
real one of |g| after a phase: ``split(g) = (|g|, ph)``; for real g it is ``(g, 1.0)``,
which leaves the real formulas (signed g) as they were.
"""

import math

import numpy as np
from numba import types
from numba.extending import overload


def wide(x):
    """x in float64, or complex128 if complex: the precision sums accumulate in."""
    return np.complex128(x) if np.iscomplexobj(x) else np.float64(x)


def wide_conj(x):
    """conj(wide(x)): the left factor of a Hermitian inner product."""
    return np.conj(np.complex128(x)) if np.iscomplexobj(x) else np.float64(x)


def conj(x):
    """x's complex conjugate (x itself when real)."""
    return np.conj(x) if np.iscomplexobj(x) else x


def abs2(x):
    """|x|^2 in float64."""
    if np.iscomplexobj(x):
        return float(x.real) ** 2 + float(x.imag) ** 2
    return np.float64(x) ** 2


def modulus(x):
    """|x|, for complex x written out (scaled, so that no square under- or overflows) rather
    than numba's abs, whose hypot made the ahead-of-time module differ from the JIT in the
    last bit."""
    if np.iscomplexobj(x):
        big = max(abs(x.real), abs(x.imag))
        if big == 0.0:
            return 0.0
        return big * math.sqrt((x.real / big) ** 2 + (x.imag / big) ** 2)
    return abs(x)


def split(g):
    """(|g|, g / |g|) for complex g (ph = 1 at g = 0); (g, 1.0) for real g."""
    if np.iscomplexobj(g):
        a = modulus(g)
        return a, (complex(g.real / a, g.imag / a) if a > 0.0 else 1.0 + 0.0j)
    return g, 1.0


def unit(x):
    """The unit factor that makes x real and positive when divided out: x / |x| if complex
    (1 at 0), the sign of x (1 at 0) if real."""
    if np.iscomplexobj(x):
        return split(x)[1]
    return -1.0 if x < 0 else 1.0


def ldexp(x, e):
    """x * 2^e, exact, for real or complex x."""
    if np.iscomplexobj(x):
        return complex(math.ldexp(x.real, e), math.ldexp(x.imag, e))
    return math.ldexp(x, e)


def wide_empty(x, m):
    """An empty vector of m entries in the dtype of wide(x's entries)."""
    return np.empty(m, np.complex128 if np.iscomplexobj(x) else np.float64)


def like(x, v):
    """v as the scalar type x's rotations run in: x's own dtype for real arrays (float32
    rotations keep float32's SIMD width), v unchanged for complex ones (a real cosine stays
    real, a complex sine complex128)."""
    return v if np.iscomplexobj(x) else x.dtype.type(v)


# ---- numba's implementations, chosen by type (small functions: LLVM inlines them) -----------

@overload(wide)
def _wide(x):
    if isinstance(x, types.Complex):
        return lambda x: np.complex128(x)
    return lambda x: np.float64(x)


@overload(wide_conj)
def _wide_conj(x):
    if isinstance(x, types.Complex):
        return lambda x: np.conj(np.complex128(x))
    return lambda x: np.float64(x)


@overload(conj)
def _conj(x):
    if isinstance(x, types.Complex):
        return lambda x: np.conj(x)
    return lambda x: x


@overload(abs2)
def _abs2(x):
    if isinstance(x, types.Complex):
        return lambda x: np.float64(x.real) ** 2 + np.float64(x.imag) ** 2
    return lambda x: np.float64(x) ** 2


@overload(modulus)
def _modulus(x):
    if isinstance(x, types.Complex):
        def impl(x):
            big = max(abs(x.real), abs(x.imag))
            if big == 0.0:
                return 0.0
            return big * math.sqrt((x.real / big) ** 2 + (x.imag / big) ** 2)
        return impl
    return lambda x: abs(x)


@overload(split)
def _split(g):
    if isinstance(g, types.Complex):
        def impl(g):
            a = modulus(g)
            return a, (complex(g.real / a, g.imag / a) if a > 0.0 else 1.0 + 0.0j)
        return impl
    return lambda g: (g, 1.0)


@overload(unit)
def _unit(x):
    if isinstance(x, types.Complex):
        return lambda x: split(x)[1]
    return lambda x: -1.0 if x < 0 else 1.0


@overload(ldexp)
def _ldexp(x, e):
    if isinstance(x, types.Complex):
        return lambda x, e: complex(math.ldexp(x.real, e), math.ldexp(x.imag, e))
    return lambda x, e: math.ldexp(x, e)


@overload(like)
def _like(x, v):
    if isinstance(x.dtype, types.Complex):
        return lambda x, v: v
    return lambda x, v: x.dtype.type(v)


@overload(wide_empty)
def _wide_empty(x, m):
    if isinstance(x.dtype, types.Complex):
        return lambda x, m: np.empty(m, np.complex128)
    return lambda x, m: np.empty(m)
