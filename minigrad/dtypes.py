"""dtypes (numpy's) and torch's type promotion rules.

Complex tensors are numpy's complex64 and complex128 (torch's cfloat and cdouble); torch's
complex32 has no numpy dtype, so where torch would give complex32 (float16 beside a
complex operand of lower priority) minigrad gives complex64.

The dtype names are numpy's dtype objects themselves, one object per dtype (as torch's
are), and ``Tensor.dtype`` returns that same object: ported code that tests
``t.dtype is mg.float64`` takes the branch torch would, and ``t.dtype == np.float64`` holds
as before.
"""

from __future__ import annotations

from typing import Any

import numpy as np

float16 = np.dtype(np.float16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
int64 = np.dtype(np.int64)
int32 = np.dtype(np.int32)
bool_ = np.dtype(np.bool_)
complex64 = np.dtype(np.complex64)
complex128 = np.dtype(np.complex128)
half, double, long = float16, float64, int64
cfloat, cdouble = complex64, complex128

# numpy makes each builtin dtype once, but an unpickled array (mg.load, multiprocessing)
# carries an equal copy, and 'q' and 'l' are equal int64s: both map to the one object.
CANONICAL = {dt: dt for dt in map(np.dtype, (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128))}

Number = int | float | bool | complex  # a Python scalar, as Tensor methods take and item() returns

DEFAULT_FLOAT = float32
_INT64 = int64
_BOOL = bool_


_COMPLEX_OF = {float16: complex64, float32: complex64, float64: complex128}
_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def category(dt: np.dtype) -> int:
    """0 bool, 1 integer, 2 floating, 3 complex (4: a kind minigrad does not hold)."""
    return _CATEGORY.get(dt.kind, 4)


def complex_of(dt: np.dtype) -> np.dtype:
    """The complex dtype whose parts are ``dt`` (a complex dtype is its own).

    >>> mg.dtypes.complex_of(mg.float64)
    dtype('complex128')
    """
    return dt if dt.kind == "c" else _COMPLEX_OF[dt]


def real_of(dt: np.dtype) -> np.dtype:
    """The dtype of a complex dtype's real and imaginary parts (a real dtype is its own).

    >>> mg.dtypes.real_of(mg.complex64)
    dtype('float32')
    """
    return np.dtype(dt.char.lower()) if dt.kind == "c" else dt


def scalar_dtype(x: Any) -> np.dtype:
    """The dtype torch gives a Python scalar: bool, int64, the default float, or the
    complex of the default float."""
    if isinstance(x, (bool, np.bool_)):
        return _BOOL
    if isinstance(x, (int, np.integer)):
        return _INT64
    if isinstance(x, (float, np.floating)):
        return DEFAULT_FLOAT
    if isinstance(x, (complex, np.complexfloating)):
        return _COMPLEX_OF[DEFAULT_FLOAT]
    raise TypeError(f"unsupported operand of type {type(x).__name__}; "
                    "expected a Tensor or a number")


def result_dtype(*operands: Any) -> np.dtype:
    """torch's promotion: the highest category wins; within it, dimensioned tensors take
    precedence over zero-dim tensors, which take precedence over Python scalars. A complex
    operand of lower precedence than a floating one gives the complex of that float
    (float64 tensor + complex64 zero-dim: complex128), as torch's.

    ``operands`` are ndarrays (a tensor's ``._array``) and scalars, so that this module needs
    nothing from autograd."""
    groups: list[list[np.dtype]] = [[], [], []]  # dimensioned, zero-dim, scalar
    for x in operands:
        if isinstance(x, np.ndarray):
            groups[0 if x.ndim else 1].append(x.dtype)
        else:
            groups[2].append(scalar_dtype(x))
    out: np.dtype | None = None
    for g in reversed(groups):  # lowest precedence first: each group is the higher one
        if g:
            out = _combine(_group_dtype(g), out)
    assert out is not None  # at least one operand
    return out


def _group_dtype(g: list[np.dtype]) -> np.dtype:
    """One precedence group's dtype: its highest category's members promoted (complex with
    the floats: complex64 beside float64 is complex128, as torch's)."""
    top = max(category(d) for d in g)
    best = [d for d in g if category(d) == top or category(d) == 2 and top == 3]
    out = best[0]
    for d in best[1:]:
        out = np.promote_types(out, d)
    return out


def _combine(higher: np.dtype, lower: np.dtype | None) -> np.dtype:
    """torch's combine_categories: the group of higher precedence keeps its dtype unless
    the lower one's category is higher; a complex lower beside a float higher gives the
    complex of that float."""
    if lower is None:
        return higher
    ch, cl = category(higher), category(lower)
    if ch >= cl:
        return higher
    if cl == 3 and ch == 2:
        return _COMPLEX_OF[higher]
    return lower


def to_dtype(dtype: Any) -> np.dtype:
    """Normalise a dtype argument (mg.float32, 'float32', np.dtype) to np.dtype."""
    dt = np.dtype(dtype)
    if category(dt) > 3:
        raise TypeError(f"minigrad supports float16/32/64, complex64/128, integer and bool "
                        f"dtypes, not {dt}")
    return dt


def get_default_dtype() -> np.dtype:
    """The dtype Python floats and the float factories get (float32 unless set).

    >>> mg.get_default_dtype()
    dtype('float32')
    """
    return DEFAULT_FLOAT


def set_default_dtype(d: Any) -> None:
    """Make ``d`` (float16, float32 or float64) the default float, as torch.set_default_dtype:
    Python floats, ``mg.tensor([1.5])``, the float factories, layers' parameters and integer
    input to float functions take it; complex numbers take its complex dtype.

    >>> mg.set_default_dtype(mg.float64); mg.tensor([1.5]).dtype
    dtype('float64')
    >>> mg.set_default_dtype(mg.float32)
    """
    global DEFAULT_FLOAT
    dt = to_dtype(d)
    if dt.kind != "f":
        raise TypeError("only floating-point types are supported as the default type")
    DEFAULT_FLOAT = dt


class finfo:  # noqa: N801  (torch's spelling)
    """Machine limits of a floating dtype (default float32; a complex dtype's real part), as
    torch.finfo, with Python numbers: eps, tiny (= smallest_normal), max, min, resolution, bits.

    >>> mg.finfo(mg.float32).eps, mg.finfo().dtype
    (1.1920928955078125e-07, 'float32')
    """

    def __init__(self, type: Any = None) -> None:  # noqa: A002  (torch's argument name)
        dt = DEFAULT_FLOAT if type is None else to_dtype(type)
        if dt.kind not in "fc":
            raise TypeError("mg.finfo() requires a floating point input type. Use mg.iinfo "
                            "to handle 'mg.finfo'")
        f = np.finfo(dt)
        self.bits, self.dtype = int(f.bits), str(f.dtype)
        self.eps, self.max, self.min = float(f.eps), float(f.max), float(f.min)
        self.tiny = self.smallest_normal = float(f.smallest_normal)
        self.resolution = 10.0 ** -int(f.precision)  # exact, not rounded to the dtype

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:  # noqa: N801  (torch's spelling)
    """Limits of an integer dtype, as torch.iinfo: min, max, bits (bool is refused, as torch).

    >>> mg.iinfo(mg.int32).max
    2147483647
    """

    def __init__(self, type: Any) -> None:  # noqa: A002  (torch's argument name)
        dt = to_dtype(type)
        if dt.kind not in "iu":
            raise TypeError(f"{dt} is not supported by mg.iinfo" if dt.kind == "b" else
                            "mg.iinfo() requires an integer input type. Use mg.finfo to "
                            "handle 'mg.iinfo'")
        i = np.iinfo(dt)
        self.bits, self.dtype = int(i.bits), str(i.dtype)
        self.min, self.max = int(i.min), int(i.max)

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
