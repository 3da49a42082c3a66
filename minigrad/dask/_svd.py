"""mg.linalg.svd and svdvals over a Dask array of matrices, one batch block at a time."""

from __future__ import annotations

import functools
from typing import NamedTuple

import dask.array as da
import numpy as np

from .. import linalg
from ..autograd.grad_mode import no_grad
from ..creation import from_numpy
from ._blocks import batch_blocks

_FLOATS = (np.float16, np.float32, np.float64)


class SVDResult(NamedTuple):
    U: da.Array
    S: da.Array
    Vh: da.Array


def svd(A: da.Array, full_matrices: bool = True, *, tol: float | None = None,
        max_sweeps: int | None = None, threads: int = 1) -> SVDResult:
    """A = U diag(S) Vh for a Dask array A (*, m, n), by mg.linalg.svd on each batch block.

    Shapes, signs and options are mg.linalg.svd's (torch.linalg.svd's): U (*, m, m) and
    Vh (*, n, n) with ``full_matrices=True``, else (*, m, k) and (*, k, n), k = min(m, n),
    S (*, k) descending, all blocked like A's batch (the matrices are rechunked whole).
    ``tol`` and ``max_sweeps`` tune the Jacobi iteration (None: mg.linalg.svd's defaults);
    ``threads`` is the SVD and BLAS threads each block may use (see minigrad.dask).

    >>> A = da.from_array(np.arange(90.0).reshape(10, 3, 3) ** 0.5, chunks=(4, 3, 3))
    >>> U, S, Vh = svd(A)
    >>> U.shape, S.chunks
    ((10, 3, 3), ((4, 4, 2), (3,)))
    """
    m, n = _check(A, "svd", threads)
    k = min(m, n)
    full = bool(full_matrices)
    fn = functools.partial(_svd_block, full=full, options=_options(tol, max_sweeps))
    shapes = [(m, m if full else k), (k,), (n if full else k, n)]
    return SVDResult(*batch_blocks(fn, "minigrad.dask.svd", A, (),
                                   [(s, A.dtype) for s in shapes], threads))


def svdvals(A: da.Array, *, tol: float | None = None, max_sweeps: int | None = None,
            threads: int = 1) -> da.Array:
    """The singular values (*, k) of a Dask array A (*, m, n), descending, by
    mg.linalg.svdvals on each batch block (no U or Vh is formed).

    >>> A = da.from_array(np.stack([np.diag([3.0, -4.0])] * 5), chunks=(2, 2, 2))
    >>> svdvals(A).compute()[0]
    array([4., 3.])
    """
    m, n = _check(A, "svdvals", threads)
    fn = functools.partial(_svdvals_block, options=_options(tol, max_sweeps))
    (S,) = batch_blocks(fn, "minigrad.dask.svdvals", A, (), [((min(m, n),), A.dtype)],
                        threads)
    return S


def _svd_block(a: np.ndarray, full: bool, options: dict) -> tuple[np.ndarray, ...]:
    with no_grad():
        U, S, Vh = linalg.svd(from_numpy(np.asarray(a)), full, **options)
    return U.numpy(), S.numpy(), Vh.numpy()


def _svdvals_block(a: np.ndarray, options: dict) -> tuple[np.ndarray]:
    with no_grad():
        return (linalg.svdvals(from_numpy(np.asarray(a)), **options).numpy(),)


def _options(tol: float | None, max_sweeps: int | None) -> dict:
    """Only the options given, so the in-memory call's defaults stay the defaults."""
    options = {} if tol is None else {"tol": tol}
    if max_sweeps is not None:
        options["max_sweeps"] = max_sweeps
    return options


def _check(A: object, name: str, threads: object) -> tuple[int, int]:
    """(m, n) of a valid input, else torch's error types with what to do about it."""
    if not isinstance(A, da.Array):
        raise TypeError(
            f"minigrad.dask.{name}(): argument 'A' must be a dask.array.Array, not "
            f"{type(A).__name__}; wrap it with dask.array.from_array(A, chunks=...) or call "
            f"mg.linalg.{name} for an in-memory array")
    if A.ndim < 2:
        raise ValueError(f"minigrad.dask.{name}(): A must have shape (*, m, n) with at "
                         f"least 2 dimensions, got shape {A.shape}")
    if A.dtype not in _FLOATS:
        raise TypeError(f"minigrad.dask.{name}(): expected a float16, float32 or float64 "
                        f"array, got {A.dtype}; convert it with A.astype(np.float64)")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"minigrad.dask.{name}(): threads must be a positive int, "
                         f"got {threads!r}")
    return A.shape[-2], A.shape[-1]
