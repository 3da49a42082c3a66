"""Reductions as Tensor methods: sum, mean, max/min (with indices), aminmax, prod, var/std,
norms, the nan-ignoring sum and mean, count_nonzero, logsumexp and the softmaxes (composed
from primitives, shifted so they never overflow)."""

# mypy: disable-error-code="misc"
# (The methods take self as the Tensor they are mixed into, which mypy's check that a
# self annotation is a supertype of its class, error code misc, would refuse.)

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

# linalg is built on Tensor, so Tensor.norm("nuc") reaches it through the package at call
# time, as torch's Tensor.norm does (the package is in sys.modules before this file runs).
import minigrad

from .. import dtypes
from .._dims import (
    count_over,
    inverse_permutation,
    legacy_unbiased,
    norm_dims,
    numpy_dims,
    numpy_kwargs,
    wrap_dim,
)
from ..autograd.context import Context
from ..autograd.function import Function, is_tensor, make_tensor
from ..autograd.grad_mode import _state
from ..autograd.quiet import unrecorded
from ..ops import arith, reduce
from ._operand import as_asked, floating, real_only

if TYPE_CHECKING:
    from ..tensor import Tensor

_new = object.__new__
# bound once: see _tensor/arith.py
_sum, _mean = reduce.Sum.apply, reduce.Mean.apply


def _unrecorded(fn: type[Function], x: Tensor, dims: tuple[int, ...], keepdim: bool) -> Tensor:
    """``fn.apply(x, dims, keepdim)`` where that would record nothing (x needs no gradient or
    grad mode is off): fn's forward alone, on a ctx that is dropped. The callers test for
    recording themselves, so a recorded call pays no extra call."""
    return make_tensor(unrecorded(fn.forward, _new(Context), x, dims, keepdim))


def _extreme(x: Tensor, fn: type[Function], name: str, dim: Any, keepdim: bool,
             numpy: dict) -> Tensor:
    """amax or amin (``fn``), numpy's axis= spelling read inline (numpy_dims's wrapper costs
    a call), unrecorded where nothing records."""
    if numpy:
        dim, keepdim = numpy_kwargs(name, numpy, dim, keepdim)
    dims = norm_dims(dim, x._array.ndim)
    if x.requires_grad and _state.enabled:
        return fn.apply(x, dims, keepdim)
    # (numpy's max warns of nothing: no quiet state to enter)
    return make_tensor(reduce.extreme_values(x._array, dims, keepdim, fn is reduce.Amax))


class MinMax(NamedTuple):
    """What ``max(dim)`` and ``min(dim)`` return, as torch's ``return_types.max``."""

    values: Tensor
    indices: Tensor


class AMinMax(NamedTuple):
    """What ``aminmax`` returns."""

    min: Tensor
    max: Tensor


class ReduceMethods:
    """The reduce methods of Tensor (mixed into it by tensor.py)."""

    @numpy_dims
    def all(self: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
        dims = norm_dims(dim, self.ndim)  # torch's IndexError for a dim out of range
        return make_tensor(np.asarray(np.all(self._array, axis=dims, keepdims=keepdim)))

    @numpy_dims
    def any(self: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
        dims = norm_dims(dim, self.ndim)
        return make_tensor(np.asarray(np.any(self._array, axis=dims, keepdims=keepdim)))

    def sum(self: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False,
            dtype: Any = None, **numpy: Any) -> Tensor:
        """Sum over ``dim`` (all dims when None); integer and bool sums are int64, as in torch.
        numpy's ``axis=`` and ``keepdims=`` are accepted too."""
        if numpy:
            dim, keepdim = numpy_kwargs("sum", numpy, dim, keepdim)
        x = self if dtype is None else self.to(dtype)
        dims = norm_dims(dim, x._array.ndim)
        if x.requires_grad:  # (apply records nothing where grad mode is off)
            return _sum(x, dims, keepdim)
        return as_asked(_unrecorded(reduce.Sum, x, dims, keepdim), dtype)

    def mean(self: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False,
             dtype: Any = None, **numpy: Any) -> Tensor:
        if numpy:
            dim, keepdim = numpy_kwargs("mean", numpy, dim, keepdim)
        x = self if dtype is None else self.to(dtype)
        if x._array.dtype.kind not in "fc":
            raise RuntimeError(
                f"mean(): input dtype must be floating point, got {x.dtype}; "
                "pass dtype=mg.float32 or call .float() first"
            )
        dims = norm_dims(dim, x._array.ndim)
        if x.requires_grad:  # (apply records nothing where grad mode is off)
            return _mean(x, dims, keepdim)
        return _unrecorded(reduce.Mean, x, dims, keepdim)

    def amax(self: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False,
             **numpy: Any) -> Tensor:
        """Max over ``dim``; ties share the gradient evenly (torch's amax rule).

        >>> mg.tensor([[1.0, 3.0], [3.0, 2.0]]).amax(0)
        tensor([3., 3.])
        """
        return _extreme(self, reduce.Amax, "amax", dim, keepdim, numpy)

    def amin(self: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False,
             **numpy: Any) -> Tensor:
        """Min over ``dim``; ties share the gradient evenly (torch's amin rule).

        >>> mg.tensor([[1.0, 3.0], [0.0, 2.0]]).amin(1)
        tensor([1., 0.])
        """
        return _extreme(self, reduce.Amin, "amin", dim, keepdim, numpy)

    @numpy_dims
    def max(self: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor | MinMax:
        """``max()`` is the largest element; ``max(dim)`` is ``(values, indices)``;
        ``max(other)`` is the elementwise maximum, as in torch."""
        if is_tensor(dim):
            return self.maximum(dim)
        if dim is None:
            return self.amax()
        return MinMax(*reduce.ArgReduce.apply(self, wrap_dim(int(dim), self.ndim), keepdim,
                                              True))

    @numpy_dims
    def min(self: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor | MinMax:
        if is_tensor(dim):
            return self.minimum(dim)
        if dim is None:
            return self.amin()
        return MinMax(*reduce.ArgReduce.apply(self, wrap_dim(int(dim), self.ndim), keepdim,
                                              False))

    @numpy_dims
    def argmax(self: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """The index of the largest entry along ``dim``; with no dim, into the flattened
        tensor (kept as a 1 in every dim when ``keepdim``, as in torch).

        >>> mg.tensor([[1.0, 5.0], [3.0, 2.0]]).argmax(keepdim=True)
        tensor([[1]])
        """
        if self._array.dtype.kind == "c":
            raise RuntimeError("argmax(): does not support complex input")
        if dim is None:
            return _flat_index(np.argmax(self._array), self.ndim, keepdim)
        return self.max(dim, keepdim).indices

    @numpy_dims
    def argmin(self: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
        if self._array.dtype.kind == "c":
            raise RuntimeError("argmin(): does not support complex input")
        if dim is None:
            return _flat_index(np.argmin(self._array), self.ndim, keepdim)
        return self.min(dim, keepdim).indices

    @numpy_dims
    def prod(self: Tensor, dim: int | None = None, keepdim: bool = False, *,
             dtype: Any = None) -> Tensor:
        """The product over ``dim`` (all entries when None); integer and bool products are
        int64, as in torch; ``dtype`` casts the input first.

        >>> mg.tensor([[1, 2], [3, 4]]).prod(1, dtype=mg.float64)
        tensor([ 2., 12.], dtype=minigrad.float64)
        """
        return as_asked(reduce.Prod.apply(self if dtype is None else self.to(dtype), dim,
                                          keepdim), dtype)

    @numpy_dims
    def var(self: Tensor, dim: int | Sequence[int] | None = None, correction: int = 1,
            keepdim: bool = False, unbiased: bool | None = None) -> Tensor:
        """Variance with Bessel's correction by default (``correction=1``), as in torch; of
        a complex tensor, the real mean of |x - mean|^2 (torch's)."""
        dim, unbiased = legacy_unbiased(dim, unbiased)
        if unbiased is not None:
            correction = int(unbiased)
        if self._array.dtype.kind not in "fc":
            raise RuntimeError(f"std and var only support floating point dtypes, got {self.dtype}")
        dims = norm_dims(dim, self.ndim)
        count = count_over(self.shape, dims)
        if count - correction <= 0:
            warnings.warn("var(): degrees of freedom is <= 0. Correction should be strictly "
                          "less than the reduction factor (input numel divided by output "
                          "numel).", UserWarning, stacklevel=2)
        if self._array.dtype.kind == "f":
            return reduce.Var.apply(self, dims, correction, keepdim)
        centred = self - reduce.Mean.apply(self, dims, True)
        # |c|^2 as Re^2 + Im^2: smooth where c = 0
        squares = centred.real.square() + centred.imag.square()
        return squares.sum(dims, keepdim=keepdim) / max(count - correction, 0)

    @numpy_dims
    def std(self: Tensor, dim: int | Sequence[int] | None = None, correction: int = 1,
            keepdim: bool = False, unbiased: bool | None = None) -> Tensor:
        return self.var(dim, correction, keepdim, unbiased).sqrt()

    def norm(self: Tensor, p: Any = "fro", dim: int | Sequence[int] | None = None,
             keepdim: bool = False, dtype: Any = None) -> Tensor:
        """torch's ``Tensor.norm``: a number p (or None: 2) is the vector p-norm
        (sum |x|^p)^(1/p) over ``dim`` (all dims when None; 0 counts non-zeros, +-inf the
        max / min |x|); ``'fro'`` over at most two dims is the 2-norm of the entries; any
        other string (``'nuc'``, ``'fro'`` over more dims) is linalg.matrix_norm over ``dim``
        (all dims when None), which refuses what is not two dims. ``dtype`` casts the input
        first, under linalg's rules (a float input, not narrowed), as torch's.

        >>> mg.tensor([3.0, -4.0]).norm(), mg.tensor([3.0, -4.0]).norm(1)
        (tensor(5.), tensor(7.))
        """
        x = self
        if dtype is not None:
            fn = "linalg.matrix_norm" if p == "nuc" else "linalg.vector_norm"
            x = minigrad.linalg._checks.norm_input(self, dtype, fn)
        if isinstance(p, str):
            if p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2):
                return x.norm(2, dim, keepdim)
            # matrix_norm gives torch's error for what is not two dims
            dims: Any = tuple(range(x.ndim)) if dim is None else dim
            return minigrad.linalg.matrix_norm(x, p, dims, keepdim)
        p = 2 if p is None else p
        if x.dtype.kind == "c":  # the norm of the moduli, as torch's
            return x.abs().norm(p, dim, keepdim)
        if x.dtype.kind != "f" or isinstance(p, bool) or p in (0, 1, math.inf, -math.inf):
            return minigrad.linalg.vector_norm(x, p, dim, keepdim)  # its checks and errors
        dims = norm_dims(dim, x.ndim)
        if p == 2:
            return reduce.Norm2.apply(x, dims, keepdim)
        # NormP refuses the infinite slope of 0 < p < 1 at a zero entry (torch returns 0)
        return reduce.NormP.apply(x, dims, keepdim, float(p))

    @numpy_dims
    def logsumexp(self: Tensor, dim: int | Sequence[int], keepdim: bool = False) -> Tensor:
        """log(sum(exp(x))) over ``dim``, shifted by the max m so it never overflows.

        As m + log1p(sum(exp(x - m)) - 1), with one maximum's term entering the sum as
        expm1(0) = 0: the small terms then keep their digits (logsumexp([0, -40]) is
        4.2e-18, as in scipy; torch rounds it to 0). Integer and bool x is taken as the
        default float, as torch takes it."""
        x = self if self._array.dtype.kind in "fc" else self.to(dtypes.DEFAULT_FLOAT)
        dims = norm_dims(dim, x.ndim)
        if len(dims) == 1 and x._array.dtype.kind == "f" and x._array.size:
            out = reduce.LogSumExp.apply(x, dims[0])
            return out if keepdim else out.squeeze(dims)
        m = _max_shift(x, dims)
        z = x - m
        if x._array.size == 0:
            out = z.exp().sum(dims, keepdim=True).log() + m
        else:
            one_max = make_tensor(_one_max(x._array, dims))
            out = arith.Where.apply(one_max, z.expm1(), z.exp()).sum(dims, keepdim=True)
            out = out.log1p() + m
        return out if keepdim else out.squeeze(dims)

    @numpy_dims
    def softmax(self: Tensor, dim: int, dtype: Any = None) -> Tensor:
        """exp(x) / sum(exp(x)) over ``dim``, computed from x - max(x) so it never overflows;
        ``dtype`` casts x first, the one way to take an integer x (as in torch).

        >>> mg.tensor([0, 0]).softmax(0, dtype=mg.float64)
        tensor([0.5, 0.5], dtype=minigrad.float64)
        """
        x = floating(self, dtype, "softmax")
        # Not exp(x - logsumexp(x)): at |x| ~ 1000 rounding logsumexp costs float32 digits.
        return reduce.Softmax.apply(x, norm_dims(dim, x.ndim), None)

    @numpy_dims
    @real_only
    def log_softmax(self: Tensor, dim: int, dtype: Any = None) -> Tensor:
        """x - logsumexp(x) over ``dim``, as (x - max) - log(sum(exp(x - max))); ``dtype``
        casts x first, the one way to take an integer x (as in torch).

        >>> mg.tensor([0, 0]).log_softmax(0, dtype=mg.float64).exp()
        tensor([0.5, 0.5], dtype=minigrad.float64)
        """
        x = floating(self, dtype, "log_softmax")
        return reduce.LogSoftmax.apply(x, norm_dims(dim, x.ndim))

    @numpy_dims
    def cumsum(self: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
        """The running sum along ``dim``; integer and bool sums are int64, as in torch;
        ``dtype`` casts the input first.

        >>> mg.tensor([1, 2, 3]).cumsum(0, dtype=mg.float32)
        tensor([1., 3., 6.])
        """
        x = self if dtype is None else self.to(dtype)
        return as_asked(reduce.Cumsum.apply(x, wrap_dim(dim, x.ndim)), dtype)

    @numpy_dims
    def aminmax(self: Tensor, *, dim: int | None = None, keepdim: bool = False) -> AMinMax:
        """(amin, amax) over ``dim`` (all entries when None)."""
        if self.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as "
                               "the operation has no identity.")
        return AMinMax(self.amin(dim, keepdim), self.amax(dim, keepdim))

    @numpy_dims
    def nansum(self: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
               dtype: Any = None) -> Tensor:
        """Sum treating nan as 0."""
        if not self.is_floating_point():
            return self.sum(dim, keepdim, dtype=dtype)
        zero = make_tensor(np.isnan(self._array))
        return arith.Where.apply(zero, 0, self).sum(dim, keepdim, dtype=dtype)

    @numpy_dims
    def nanmean(self: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
                dtype: Any = None) -> Tensor:
        """Mean of the entries that are not nan (nan when there are none)."""
        x = self if dtype is None else self.to(dtype)
        if not x.is_floating_point():
            raise RuntimeError(f"nanmean(): expected input to have floating point dtype but "
                               f"got {x.dtype}")
        count = np.sum(~np.isnan(x._array), axis=norm_dims(dim, x.ndim), keepdims=keepdim)
        empty = count == 0  # nan there, without a 0/0 in forward or backward
        mean = x.nansum(dim, keepdim) / make_tensor(np.where(empty, 1, count).astype(x.dtype))
        return arith.Where.apply(make_tensor(empty), np.nan, mean) if np.any(empty) else mean

    @numpy_dims
    def count_nonzero(self: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
        dims = norm_dims(dim, self.ndim)
        return make_tensor(np.asarray(np.count_nonzero(self._array, axis=dims),
                                               np.int64))


def _flat_index(i: Any, ndim: int, keepdim: bool) -> Tensor:
    """argmax / argmin over all dims: 0-d, or with every dim kept as 1."""
    out = np.asarray(i, np.int64)
    return make_tensor(out.reshape((1,) * ndim) if keepdim else out)


def _max_shift(x: Tensor, dims: tuple[int, ...]) -> Tensor:
    """max(x) over ``dims`` (kept), as a constant: a shift softmax and logsumexp are exact
    under, so it needs no gradient; infinite maxima become 0 to avoid inf - inf. Of a
    complex x, the max of the real parts (what exp's size depends on)."""
    a = x._array.real
    m = np.max(a, axis=dims, keepdims=True) if a.size else np.zeros(())
    return make_tensor(np.where(np.isfinite(m), m, 0).astype(x._array.dtype))


def _one_max(a: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    """A bool mask, True at one maximum (the first) of each slice over ``dims``."""
    rest = [d for d in range(a.ndim) if d not in dims]
    moved = np.transpose(a, rest + list(dims))
    lead = moved.shape[:len(rest)]
    flat = moved.reshape(lead + (-1,))
    hit = np.arange(flat.shape[-1]) == np.argmax(flat, axis=-1)[..., None]
    return np.transpose(hit.reshape(moved.shape), inverse_permutation(tuple(rest + list(dims))))
