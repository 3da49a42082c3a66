"""Sorting, order statistics and scans as Tensor methods: sort/argsort/topk/kthvalue/median/
mode, quantile, unique, bincount, cummax/cummin/cumprod/logcumsumexp and diff.

Indices come from numpy and the values are ``gather``-ed at them, so the gradient goes to
the index returned (ties included) and differentiates again like gather's.
"""

# mypy: disable-error-code="misc"
# (The methods take self as the Tensor they are mixed into, which mypy's check that a
# self annotation is a supertype of its class, error code misc, would refuse.)

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .._dims import numpy_dims, wrap_dim
from ..autograd.function import is_tensor, make_tensor
from ..ops import arith, binary, shape
from ..ops._base import NotDifferentiable, refuse_complex
from ._operand import as_asked, floating, long_index, real_only

if TYPE_CHECKING:
    from ..tensor import Tensor


class ValuesIndices(NamedTuple):
    """What sort, topk, kthvalue, median(dim), mode, cummax and cummin return (torch's
    ``return_types``): the values and their int64 indices along the dim."""

    values: Tensor
    indices: Tensor


def _argsort(x: np.ndarray, d: int, descending: bool) -> np.ndarray:
    """Stable sort indices along ``d``; nan sorts as the largest value, as in torch."""
    if x.dtype.kind == "c":  # numpy orders complex numbers; torch refuses
        raise RuntimeError("Sort does not support complex dtypes on CPU")
    if x.ndim == 0:
        return np.zeros((), np.int64)
    if not descending:
        return np.argsort(x, axis=d, kind="stable").astype(np.int64, copy=False)
    # Stable descending: sort the reversed array ascending and reverse back, so ties keep
    # their original order (sorting -x would break for nan, bool and unsigned data).
    idx = np.argsort(np.flip(x, d), axis=d, kind="stable")
    return (x.shape[d] - 1 - np.flip(idx, d)).astype(np.int64)


def _picked(x: Tensor, d: int, idx: np.ndarray, keepdim: bool = True) -> ValuesIndices:
    """(x gathered at ``idx`` along ``d``, idx), with ``d`` squeezed unless ``keepdim``."""
    index = make_tensor(idx)
    values = x.gather(d, index) if x.ndim else x.clone()
    if not keepdim and x.ndim:
        values, index = values.squeeze(d), index.squeeze(d)
    return ValuesIndices(values, index)


def _slice(d: int, start: int | None, stop: int | None) -> tuple:
    return (slice(None),) * d + (slice(start, stop),)


def _scan(x: Tensor, d: int, op: Callable[[Tensor, Tensor], Tensor]) -> Tensor:
    """Inclusive scan of an associative ``op`` along ``d`` by Hillis-Steele doubling:
    log2(n) steps of minigrad ops, so it is exact where a closed-form backward divides by
    zero (cumprod), and it differentiates again."""
    n = x.shape[d] if x.ndim else 1
    k = 1
    while k < n:
        x = shape.Cat.apply(d, x[_slice(d, 0, k)], op(x[_slice(d, k, n)], x[_slice(d, 0, n - k)]))
        k *= 2
    return x


def _running_logaddexp(x: np.ndarray, d: int) -> np.ndarray:
    """log(cumsum(exp(x))) along d one element at a time, as torch's complex kernel."""
    out = np.array(x, copy=True)
    run = np.moveaxis(out, d, 0) if out.ndim else out[None]
    for i in range(1, run.shape[0]):
        run[i] = binary.logaddexp_complex(run[i], run[i - 1])
    return out


class SortMethods:
    """The sorting and selection methods of Tensor (mixed into it by tensor.py)."""

    @numpy_dims
    def sort(self: Tensor, dim: int = -1, descending: bool = False, *,
             stable: bool = False) -> ValuesIndices:
        """(values, indices) sorted along ``dim``; always stable, nan last (first when
        descending).

        >>> mg.tensor([3.0, 1.0, 2.0]).sort(descending=True).indices
        tensor([0, 2, 1])
        """
        d = wrap_dim(dim, self.ndim)
        return _picked(self, d, _argsort(self._array, d, descending))

    @numpy_dims
    def argsort(self: Tensor, dim: int = -1, descending: bool = False, *,
                stable: bool = False) -> Tensor:
        d = wrap_dim(dim, self.ndim)
        return make_tensor(_argsort(self._array, d, descending))

    def msort(self: Tensor) -> Tensor:
        """Sorted along dim 0."""
        return self.sort(0).values

    @numpy_dims
    def topk(self: Tensor, k: int, dim: int = -1, largest: bool = True,
             sorted: bool = True) -> ValuesIndices:
        """The k largest (or smallest) entries along ``dim`` and their indices, in order.

        >>> mg.tensor([1.0, 5.0, 3.0]).topk(2).values
        tensor([5., 3.])
        """
        d = wrap_dim(dim, self.ndim)
        n = self.shape[d] if self.ndim else 1
        if not 0 <= k <= n:
            raise RuntimeError("selected index k out of range")
        idx = _argsort(self._array, d, largest)
        return _picked(self, d, idx[_slice(d, 0, k)] if self.ndim else idx)

    @numpy_dims
    def kthvalue(self: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> ValuesIndices:
        """The k-th smallest entry (k counts from 1) along ``dim`` and its index."""
        if self._array.dtype.kind == "c":
            raise refuse_complex("kthvalue_cpu", self._array.dtype)
        d = wrap_dim(dim, self.ndim)
        n = self.shape[d] if self.ndim else 1
        if not 1 <= k <= n:
            raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
        idx = _argsort(self._array, d, False)
        return _picked(self, d, idx[_slice(d, k - 1, k)] if self.ndim else idx, keepdim)

    @numpy_dims
    def median(self: Tensor, dim: int | None = None,
               keepdim: bool = False) -> Tensor | ValuesIndices:
        """The lower median: ``median()`` of all entries, ``median(dim)`` (values, indices)
        along ``dim``; nan where a slice holds nan (at its first nan), as in torch.

        >>> mg.tensor([1.0, 4.0, 2.0, 3.0]).median()
        tensor(2.)
        """
        return _median(self, dim, keepdim, skip_nan=False)

    @numpy_dims
    def nanmedian(self: Tensor, dim: int | None = None,
                  keepdim: bool = False) -> Tensor | ValuesIndices:
        """median of the entries that are not nan (nan, at index 0, when a slice has none).

        >>> mg.tensor([1.0, mg.nan, 4.0, 2.0]).nanmedian()
        tensor(2.)
        """
        return _median(self, dim, keepdim, skip_nan=True)

    @numpy_dims
    @real_only
    def mode(self: Tensor, dim: int = -1, keepdim: bool = False) -> ValuesIndices:
        """The most frequent value along ``dim`` (the smallest of equally frequent ones) and
        the index of its last occurrence, as torch."""
        d = wrap_dim(dim, self.ndim)
        x = self._array
        if x.ndim == 0:
            return _picked(self, 0, np.zeros((), np.int64))
        rows = np.moveaxis(x, d, -1).reshape(-1, x.shape[d])
        idx = np.empty(rows.shape[0], np.int64)
        for i, row in enumerate(rows):
            values, counts = np.unique(row, return_counts=True)
            hit = np.flatnonzero(row == values[np.argmax(counts)])
            idx[i] = hit[-1]
        kept = np.moveaxis(x, d, -1).shape[:-1] + (1,)
        return _picked(self, d, np.moveaxis(idx.reshape(kept), -1, d), keepdim)

    @numpy_dims
    def cummax(self: Tensor, dim: int) -> ValuesIndices:
        """Running maximum along ``dim``; at ties the index moves to the latest, as torch."""
        return _running(self, dim, np.maximum)

    @numpy_dims
    def cummin(self: Tensor, dim: int) -> ValuesIndices:
        return _running(self, dim, np.minimum)

    @numpy_dims
    def cumprod(self: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
        """Running product along ``dim``; the gradient is exact at zeros (a doubling scan of
        minigrad ops rather than the division by the input)."""
        x = self if dtype is None else self.to(dtype)
        d = wrap_dim(dim, x.ndim)
        if not x.is_floating_point() and not x.is_complex():
            return as_asked(make_tensor(np.cumprod(x._array.reshape(x.shape or (1,)), axis=d,
                                                   dtype=np.int64).reshape(x.shape)), dtype)
        return _scan(x, d, lambda a, b: a * b)

    @numpy_dims
    def logcumsumexp(self: Tensor, dim: int) -> Tensor:
        """log(cumsum(exp(x))) along ``dim``, without overflow (a scan of logaddexp).

        Complex x: the logarithm's branch is torch's, whose running sum takes one element
        at a time (each step ``logaddexp``'s branch); the scan's values can differ from it
        by 2 pi i k, which is added as a constant (no effect on the derivatives).

        Integer and bool x is refused, as torch refuses it (convert it first).

        >>> mg.tensor([0.0, 0.0, 0.0]).logcumsumexp(0).exp()
        tensor([1., 2., 3.])
        """
        x = floating(self, None, "logcumsumexp", takes_dtype=False)
        d = wrap_dim(dim, x.ndim)
        out = _scan(x, d, binary.LogAddExp.apply)
        if not x.is_complex():
            return out
        return out + make_tensor(_running_logaddexp(x._array, d) - out._array)

    @numpy_dims
    def diff(self: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,
             append: Tensor | None = None) -> Tensor:
        """The n-th forward difference along ``dim`` (xor for bool), after joining
        ``prepend`` and ``append``.

        >>> mg.tensor([1, 4, 9]).diff()
        tensor([3, 5])
        """
        if self.ndim == 0:
            raise RuntimeError("diff expects input to be at least one-dimensional")
        d = wrap_dim(dim, self.ndim)
        parts = [p for p in (prepend, self, append) if p is not None]
        x = shape.Cat.apply(d, *parts) if len(parts) > 1 else self
        for _ in range(n):
            m = x.shape[d]
            hi, lo = x[_slice(d, 1, m)], x[_slice(d, 0, m - 1)]
            x = hi != lo if x.dtype == np.bool_ else hi - lo
        return x

    @real_only
    def unique(self: Tensor, sorted: bool = True, return_inverse: bool = False,
               return_counts: bool = False, dim: int | None = None) -> Any:
        """The distinct values (slices along ``dim`` when given), sorted, with the inverse
        indices and counts when asked; not differentiable, as in torch."""
        x = self._array
        d = None if dim is None else wrap_dim(dim, x.ndim)
        vals, inv, counts = np.unique(x, return_inverse=True, return_counts=True, axis=d)
        out = [NotDifferentiable.apply("unique", lambda a: vals, self)]
        if return_inverse:
            out.append(make_tensor(inv.reshape(x.shape if d is None else -1)
                                            .astype(np.int64)))
        if return_counts:
            out.append(make_tensor(counts.astype(np.int64)))
        return out[0] if len(out) == 1 else tuple(out)

    @numpy_dims
    def quantile(self: Tensor, q: float | Tensor, dim: int | None = None, keepdim: bool = False, *,
                 interpolation: str = "linear") -> Tensor:
        """The q-th quantiles along ``dim`` (of all entries when None), interpolated between
        the order statistics as numpy and torch do; nan where a slice holds nan. A tensor of
        q puts its dim first. Differentiable (a lerp of sorted values).

        >>> mg.tensor([1.0, 2.0, 4.0]).quantile(0.75)
        tensor(3.)
        """
        return _quantile(self, q, dim, keepdim, interpolation, "quantile")

    @numpy_dims
    def nanquantile(self: Tensor, q: float | Tensor, dim: int | None = None, keepdim: bool = False,
                    *, interpolation: str = "linear") -> Tensor:
        """quantile of the entries that are not nan (nan where a slice has none).

        >>> mg.tensor([1.0, mg.nan, 2.0, 4.0]).nanquantile(0.75)
        tensor(3.)
        """
        return _quantile(self, q, dim, keepdim, interpolation, "nanquantile")

    def bincount(self: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
        """How often each value 0, 1, ... occurs in this 1-D non-negative integer tensor
        (summing ``weights`` instead when given)."""
        x = long_index(self, "bincount")
        if x.ndim != 1:
            raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
        if x.size and x.min() < 0:
            raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
        if weights is None:
            return make_tensor(np.bincount(x, minlength=minlength).astype(np.int64))
        size = max(minlength, int(x.max()) + 1 if x.size else 0)
        w = weights if weights.is_floating_point() else weights.double()
        return shape.IndexAdd.apply(w, x, (size,))


def _running(x: Tensor, dim: int, pick: np.ufunc) -> ValuesIndices:
    if x._array.dtype.kind == "c":
        raise refuse_complex("cummax_cpu" if pick is np.maximum else "cummin_cpu",
                             x._array.dtype)
    d = wrap_dim(dim, x.ndim)
    a = x._array
    if a.ndim == 0:
        return _picked(x, 0, np.zeros((), np.int64))
    run = pick.accumulate(a, axis=d)
    hit = a == run
    if a.dtype.kind == "f":
        hit |= np.isnan(a)  # a nan takes over the running value, and its index with it
    shape_ = [1] * a.ndim
    shape_[d] = a.shape[d]
    pos = np.where(hit, np.arange(a.shape[d]).reshape(shape_), 0)
    return _picked(x, d, np.maximum.accumulate(pos, axis=d).astype(np.int64))


def _quantile(self: Tensor, q: Any, dim: int | None, keepdim: bool, interpolation: str,
              fn: str) -> Tensor:
    """quantile and nanquantile: the order statistics at q (k - 1) of each slice's sorted
    values, k its length (quantile; a slice with nan gives nan) or its count of numbers
    (nanquantile; nan sorts last, so those are the first k)."""
    # (torch's messages say quantile() for nanquantile too)
    if not self.is_floating_point():
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    qs = np.asarray(q._array if is_tensor(q) else q, np.float64)
    if qs.ndim > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if not np.all((qs >= 0) & (qs <= 1)):  # nan fails too
        if is_tensor(q):
            raise RuntimeError("quantile() q values must be in the range [0, 1]")
        raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q}")
    if interpolation not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise RuntimeError("quantile() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    x = self.reshape(-1) if dim is None else self
    d = 0 if dim is None else wrap_dim(dim, x.ndim)
    x = x.movedim(d, -1) if x.ndim else x.reshape(1)  # the reduced dim last
    n = x.shape[-1]
    if n == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    srt = x.sort(-1).values
    nan = np.isnan(x._array)
    k = (~nan).sum(-1) if fn == "nanquantile" else np.full(x.shape[:-1], n)
    top = np.maximum(k - 1, 0)
    pos = qs.reshape((-1,) + (1,) * top.ndim) * top  # (q, slices)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, top)
    frac = pos - lo
    if interpolation == "lower":
        hi, frac = lo, frac * 0
    elif interpolation == "higher":
        lo = hi = np.ceil(pos).astype(np.int64)
        frac = frac * 0
    elif interpolation == "nearest":  # ties to even, as torch (numpy's around)
        lo = hi = np.around(pos).astype(np.int64)
        frac = frac * 0
    elif interpolation == "midpoint":
        frac = np.where(frac > 0, 0.5, 0.0)
    # Pick from the flat sorted values: a gather from srt expanded to (q, slices, n) would
    # make its backward as large as that
    flat = srt.reshape(-1)
    start = (np.arange(srt.numel() // n) * n).reshape(top.shape)  # each slice's offset
    v_lo = flat[make_tensor(start + lo)]
    out = v_lo
    if np.any(frac):
        v_hi = flat[make_tensor(start + hi)]
        out = v_lo + (v_hi - v_lo) * make_tensor(np.asarray(frac, x.dtype))
    empty = k == 0 if fn == "nanquantile" else nan.any(-1)
    if np.any(empty):
        out = arith.Where.apply(make_tensor(np.broadcast_to(empty, out.shape)), np.nan, out)
    if keepdim:  # the q dim first, as torch; the reduced dim (size 1) back in its place
        out = out.unsqueeze(d + 1) if dim is not None else out.reshape(
            (out.shape[0],) + (1,) * self.ndim)
    return out.reshape(out.shape[1:]) if qs.ndim == 0 else out


def _median(x: Tensor, dim: int | None, keepdim: bool, skip_nan: bool) -> Any:
    """median and nanmedian: the lower middle of each slice's sorted values (nan sorts
    last); median answers nan at a slice's first nan, nanmedian counts the numbers only."""
    if x._array.dtype.kind == "c":
        raise refuse_complex("median_cpu", x._array.dtype)
    if dim is None:
        if x.numel() == 0:
            return make_tensor(np.asarray(np.nan, x._array.dtype))
        return _median(x.reshape(-1), 0, False, skip_nan).values
    d = wrap_dim(dim, x.ndim)
    a = x._array
    if a.ndim == 0:
        return _picked(x, 0, np.zeros((), np.int64))
    n = a.shape[d]
    if n == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    order = _argsort(a, d, False)
    nan = np.isnan(a) if a.dtype.kind == "f" else np.zeros(a.shape, bool)
    if skip_nan:
        pos = np.maximum(((~nan).sum(d, keepdims=True) - 1) // 2, 0)
        idx = np.take_along_axis(order, np.broadcast_to(pos, order.shape)[_slice(d, 0, 1)], d)
    else:
        idx = order[_slice(d, (n - 1) // 2, (n - 1) // 2 + 1)]
        idx = np.where(nan.any(d, keepdims=True), nan.argmax(d, keepdims=True), idx)
    return _picked(x, d, idx, keepdim)
