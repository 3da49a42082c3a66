"""Convolutions (conv1d, conv2d) as im2col and one batched matmul.

``_Unfold`` copies the sliding windows of a padded input out as (N, C, *kernel, *out) and
``_Fold`` sums such windows back into the input's place: each is the other's adjoint, so
each one's backward is the other and gradients of every order come for free. The rest of a
convolution is reshapes and a matmul, which minigrad differentiates already.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ...autograd.function import Context, Function
from ...tensor import Tensor


def _tuple(value: Any, n: int) -> tuple[int, ...]:
    """An int or a sequence of n ints as a tuple of n ints (torch's _single / _pair)."""
    if isinstance(value, (tuple, list)):
        if len(value) != n:
            raise RuntimeError(f"expected {n} values, got {list(value)}")
        return tuple(int(v) for v in value)
    return (int(value),) * n


def _out_sizes(sizes: tuple, kernel: tuple, stride: tuple, dilation: tuple,
               pads: tuple) -> tuple[int, ...]:
    """The window count per dim: floor((L + pads - d (k - 1) - 1) / s) + 1."""
    return tuple((n + lo + hi - d * (k - 1) - 1) // s + 1
                 for n, k, s, d, (lo, hi) in zip(sizes, kernel, stride, dilation, pads))


class _Unfold(Function):
    """(N, C, *L) -> (N, C, *kernel, *out): the windows of x padded by ``pads`` with
    ``fill``, one copy (im2col)."""

    _numpy_forward = True

    @staticmethod
    def forward(ctx: Context, x: Tensor, kernel: tuple, stride: tuple, dilation: tuple,
                pads: tuple, fill: float) -> np.ndarray:
        a = x._array
        if any(lo or hi for lo, hi in pads):
            a = np.pad(a, ((0, 0), (0, 0), *pads), constant_values=fill)
        ctx.meta = (x.shape, kernel, stride, dilation, pads)
        out = _out_sizes(x.shape[2:], kernel, stride, dilation, pads)
        st = a.strides[2:]
        view = as_strided(a, a.shape[:2] + kernel + out,
                          a.strides[:2] + tuple(s * d for s, d in zip(st, dilation))
                          + tuple(s * k for s, k in zip(st, stride)), writeable=False)
        return np.ascontiguousarray(view)

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> tuple:
        return (_Fold.apply(g, *ctx.meta), None, None, None, None, None)


class _Fold(Function):
    """The adjoint of ``_Unfold``: windows (N, C, *kernel, *out) summed into (N, C, *L)."""

    _numpy_forward = True

    @staticmethod
    def forward(ctx: Context, g: Tensor, shape: tuple, kernel: tuple, stride: tuple,
                dilation: tuple, pads: tuple) -> np.ndarray:
        ctx.meta = (kernel, stride, dilation, pads)
        n = len(kernel)
        ga = g._array
        out_sizes = ga.shape[2 + n:]
        padded = shape[:2] + tuple(m + lo + hi for m, (lo, hi) in zip(shape[2:], pads))
        acc = np.zeros(padded, ga.dtype)
        for off in np.ndindex(*kernel):  # one strided add per kernel tap
            where = tuple(slice(o * d, o * d + (m - 1) * s + 1, s)
                          for o, d, m, s in zip(off, dilation, out_sizes, stride))
            acc[(Ellipsis, *where)] += ga[(slice(None), slice(None), *off)]
        crop = tuple(slice(lo, lo + m) for (lo, _), m in zip(pads, shape[2:]))
        return np.ascontiguousarray(acc[(Ellipsis, *crop)])

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> tuple:
        return (_Unfold.apply(g, *ctx.meta, 0.0), None, None, None, None, None)


def _batched(input: Tensor, n: int, name: str) -> tuple[Tensor, bool]:
    """``input`` with a batch dim (torch accepts one sample without it) and whether it had
    one."""
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to "
                           f"{name}, but got input of size: {list(input.shape)}")
    return (input, True) if input.ndim == n + 2 else (input.unsqueeze(0), False)


def _conv_pads(padding: Any, kernel: tuple, stride: tuple, dilation: tuple) -> tuple:
    n = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * n
        if padding != "same":
            raise RuntimeError(f"Invalid padding string: {padding!r}")
        if any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        # torch puts the odd one of an even total on the right
        totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return tuple((t // 2, t - t // 2) for t in totals)
    pads = _tuple(padding, n)
    if any(p < 0 for p in pads):
        raise RuntimeError("negative padding is not supported")
    return tuple((p, p) for p in pads)


def _conv(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any,
          dilation: Any, groups: int, n: int) -> Tensor:
    x, batched = _batched(input, n, f"conv{n}d")
    stride, dilation = _tuple(stride, n), _tuple(dilation, n)
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    kernel = tuple(weight.shape[2:])
    pads = _conv_pads(padding, kernel, stride, dilation)
    batch, channels = x.shape[:2]
    out_ch = weight.shape[0]
    if weight.ndim != n + 2 or channels != weight.shape[1] * groups or out_ch % groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, "
                           f"expected input{list(x.shape)} to have "
                           f"{weight.shape[1] * groups} channels, but got {channels} channels "
                           "instead")
    for other, what in ((weight, "weight"), (bias, "bias")):
        if other is not None and other.dtype != x.dtype:
            raise RuntimeError(f"Input type ({x.dtype}) and {what} type ({other.dtype}) should "
                               "be the same")
    padded = tuple(m + lo + hi for m, (lo, hi) in zip(x.shape[2:], pads))
    if any(p < d * (k - 1) + 1 for p, k, d in zip(padded, kernel, dilation)):
        raise RuntimeError(f"Calculated padded input size per channel: {_dims(padded)}. "
                           f"Kernel size: {_dims(kernel)}. Kernel size can't be greater than "
                           "actual input size")
    if all(k == 1 for k in kernel) and all(s == 1 for s in stride) and padded == x.shape[2:]:
        out_sizes = tuple(x.shape[2:])  # a pointwise conv: no windows to copy
        cols = x.reshape(batch, groups, channels // groups, -1)
    else:
        cols = _Unfold.apply(x, kernel, stride, dilation, pads, 0.0)
        out_sizes = tuple(cols.shape[2 + n:])
        cols = cols.reshape(batch, groups, channels // groups * math.prod(kernel), -1)
    # (G, O/G, C/G * K) @ (N, G, C/G * K, L): one matmul per batch and group
    out = (weight.reshape(groups, out_ch // groups, -1) @ cols).reshape(batch, out_ch,
                                                                        *out_sizes)
    if bias is not None:
        out = out + bias.reshape(out_ch, *([1] * n))
    return out if batched else out.squeeze(0)


def _dims(sizes: tuple) -> str:
    return "(" + " x ".join(str(s) for s in sizes) + ")"


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """out[n, o, l] = b[o] + sum_{c, k} w[o, c, k] xp[n, c_o + c, s l + d k]: cross-correlation
    (as torch) of the zero-padded input xp, c_o the first input channel of o's group;
    padding an int, a tuple, "same" or "valid".

    >>> F.conv1d(mg.ones(1, 2, 5), mg.ones(3, 2, 3), padding=1).tolist()[0][0]
    [4.0, 6.0, 6.0, 6.0, 4.0]
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """conv1d over two spatial dims: input (N, C, H, W), weight (O, C / groups, kH, kW).

    >>> F.conv2d(mg.ones(1, 1, 4, 4), mg.ones(2, 1, 3, 3), stride=2, padding="valid").shape
    (1, 2, 1, 1)
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2)
