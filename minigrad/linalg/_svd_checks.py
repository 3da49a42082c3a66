"""What the SVD forward accepts and refuses: the input's dtype and shape, tol and
max_sweeps (to the kernels' Tol), a kernel's status code, and singular values that overflow
the output dtype."""

from __future__ import annotations

import functools
import math
import numbers
import operator

import numpy as np

from minigrad.linalg._jacobi_contract import NOT_CONVERGED, NOT_FINITE, Tol
from minigrad.linalg.errors import LinAlgError

DEFAULT_MAX_SWEEPS = 60  # one-sided Jacobi typically needs 5-12; dgesvj caps at 30
_SWEEPS_CAP = 2**31 - 1  # more is "no cap" in practice, and must fit the kernel's int

_WORK_DTYPE = {np.dtype(np.float16): np.float32, np.dtype(np.float32): np.float32,
               np.dtype(np.float64): np.float64}


def default_tol(rows: int, work) -> float:
    """The relative orthogonality threshold: sqrt(rows) * eps, as dgesvj."""
    return float(np.sqrt(rows) * np.finfo(work).eps)


def _tolerances(tol, max_sweeps, rows: int, work):
    """The kernels' Tol from the user's tol and max_sweeps, both validated."""
    if tol is None and type(max_sweeps) is int and max_sweeps == DEFAULT_MAX_SWEEPS:  # usual
        return _default_tolerances(rows, work)  # (a dtype or its type: both hash)
    return _checked_tolerances(tol, max_sweeps, rows, work)


@functools.lru_cache(maxsize=256)
def _default_tolerances(rows: int, work: np.dtype | type):
    return _checked_tolerances(None, DEFAULT_MAX_SWEEPS, rows, work)


def _checked_tolerances(tol, max_sweeps, rows: int, work):
    if max_sweeps is True or max_sweeps is False:
        raise TypeError(f"svd: max_sweeps must be an integer, got {max_sweeps!r}")
    try:
        sweeps = operator.index(max_sweeps)
    except TypeError:
        raise TypeError(f"svd: max_sweeps must be an integer, got "
                        f"{type(max_sweeps).__name__}") from None
    if sweeps < 1:
        raise ValueError(f"svd: max_sweeps must be at least 1, got {sweeps}")
    default = default_tol(rows, work)
    if tol is None:
        tol = default
    elif isinstance(tol, bool) or not isinstance(tol, numbers.Real):
        raise TypeError(f"svd: tol must be a real number, got {type(tol).__name__}")
    elif not 0.0 < float(tol) < 1.0:  # also refuses NaN
        raise ValueError(f"svd: tol is the relative orthogonality threshold |cos| of two "
                         f"columns and must lie in (0, 1), got {tol!r}; the default is "
                         f"sqrt(rows) * eps = {default:.3g}")
    finfo = np.finfo(work)
    # Rows reduced to noise are dropped at the dtype's rounding level, whatever tol is: a
    # loose tol must not zero real columns.
    return Tol(float(tol), min(float(tol), default), float(finfo.tiny / finfo.eps),
               min(sweeps, _SWEEPS_CAP))


def _as_input(a) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim < 2:
        raise ValueError(
            f"svd expects an array of shape (*, m, n) with at least 2 dimensions, "
            f"got shape {a.shape}")
    if a.dtype.kind == "f" and not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    if a.dtype not in _WORK_DTYPE:
        raise TypeError(
            f"svd needs a real floating-point array (float16, float32 or float64), got "
            f"{a.dtype}; convert it first, e.g. a.astype(np.float64)")
    return a


def _raise_for(status: int, index: tuple, max_sweeps: int) -> None:
    """The LinAlgError for a kernel status code (batch index () for a lone matrix)."""
    if status == NOT_FINITE:
        where = f" at batch index {index}" if index else ""
        raise LinAlgError(f"svd: the input is not finite (contains NaN or Inf){where}")
    if status == NOT_CONVERGED:
        where = f" for batch index {index}" if index else ""
        raise LinAlgError(
            f"svd: Jacobi did not converge in {max_sweeps} sweeps{where}; "
            f"raise max_sweeps or loosen tol")


# finfo(dtype).max by dtype (and by type): finfo is a lookup of ~0.2 us on every SVD
_BIG: dict[object, float] = {}
for _t in (np.float16, np.float32, np.float64):
    _BIG[_t] = _BIG[np.dtype(_t)] = float(np.finfo(_t).max)


def check_fits(s: np.ndarray, dtype) -> None:
    """Raise if a singular value (computed in a wider dtype) is out of dtype's range, as
    torch refuses an overflowing cast, instead of returning inf beside finite values."""
    big = _BIG.get(dtype) or float(np.finfo(dtype).max)
    # NaN counts as out of range; a few values in Python (numpy's ufunc, ~1 us, is most of
    # a lone tiny SVD's check); more by their largest (singular values are >= 0; NaN
    # propagates), one reduction where the count of |s| <= big took three
    if not all(map(big.__ge__, map(abs, s.tolist()))) if s.ndim == 1 and s.size <= 16 else \
            not (s.size == 0 or float(s.max()) <= big):
        value = float(np.max(s))
        shown = f"{value:.6g}" if math.isfinite(value) else f"above {np.finfo(s.dtype).max:.6g}"
        raise LinAlgError(
            f"svd: a singular value ({shown}) cannot be represented in {np.dtype(dtype)} "
            f"without overflow (largest {big:.6g}); compute in a wider dtype, e.g. "
            f"A.double(), or scale A down")
