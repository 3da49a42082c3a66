"""Pooling: max and average over sliding windows (through ``_conv._Unfold``, so their
gradients are differentiable again) and adaptive average pooling (a fixed averaging matrix
per spatial dim)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...autograd.function import make_tensor
from ...tensor import Tensor
from ._conv import _batched, _tuple, _Unfold


def _pool_out(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """torch's pooling_output_shape: with ceil_mode a last, partial window counts, unless it
    would start past the input and its left padding."""
    out = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _windows(input: Tensor, name: str, n: int, kernel_size: Any, stride: Any, padding: Any,
             dilation: Any, ceil_mode: bool, fill: float) -> tuple:
    """The windows of ``input`` (N, C, K, *out) with K the flattened kernel, and the
    settings: input with a batch dim, whether it had one, kernel, stride, padding,
    dilation, output sizes."""
    if input.dtype.kind != "f":
        raise NotImplementedError(f'"{name}" not implemented for {input.dtype}: pooling takes '
                                  "floating-point input")
    x, batched = _batched(input, n, name)
    k, p, d = _tuple(kernel_size, n), _tuple(padding, n), _tuple(dilation, n)
    s = k if stride is None or stride == [] else _tuple(stride, n)
    if any(v <= 0 for v in s):
        raise RuntimeError(f"{name}() stride must be greater than zero, but got {_one(s)}")
    if any(2 * pp > kk for pp, kk in zip(p, k)):
        raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                           f"pad={_one(p)}, kernel_size={_one(k)} and dilation={_one(d)}")
    sizes = x.shape[2:]
    outs = tuple(_pool_out(*a, ceil_mode) for a in zip(sizes, k, s, p, d))
    if any(o <= 0 for o in outs):
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, x.shape[1:]))}). Calculated "
                           f"output size: ({'x'.join(map(str, (x.shape[1], *outs)))}). Output "
                           "size is too small")
    # ceil_mode's last window may hang over the right padding: pad a little more
    pads = tuple((pp, max(pp, (o - 1) * ss + dd * (kk - 1) + 1 - m - pp))
                 for m, kk, ss, pp, dd, o in zip(sizes, k, s, p, d, outs))
    cols = _Unfold.apply(x, k, s, d, pads, fill)
    cols = cols.reshape(*x.shape[:2], math.prod(k), *outs)
    return cols, x, batched, k, s, p, d, outs


def _one(t: tuple) -> Any:
    return t[0] if len(set(t)) == 1 else t


def _max_pool(input: Tensor, n: int, kernel_size: Any, stride: Any, padding: Any,
              dilation: Any, ceil_mode: bool, return_indices: bool) -> Any:
    name = f"max_pool{n}d"
    cols, x, batched, k, s, p, d, outs = _windows(input, name, n, kernel_size, stride, padding,
                                                  dilation, ceil_mode, -np.inf)
    # the first maximum of a window (a NaN counts as the largest), as torch picks it
    arg = np.argmax(cols._array, axis=2)[:, :, None]
    out = cols.gather(2, make_tensor(arg)).squeeze(2)
    if not batched:
        out = out.squeeze(0)
    if not return_indices:
        return out
    # each pick's place in the unpadded input, flattened over the spatial dims as torch does
    taps = np.unravel_index(arg[:, :, 0], k)
    flat = np.zeros(arg.shape[:2] + outs, np.int64)
    for i, (kk, ss, pp, dd, m) in enumerate(zip(taps, s, p, d, x.shape[2:])):
        pos = np.arange(outs[i]).reshape((-1,) + (1,) * (n - 1 - i)) * ss - pp + kk * dd
        flat = flat * m + pos
    idx = make_tensor(flat if batched else flat[0])
    return out, idx


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """out[n, c, l] = max_k x[n, c, s l + d k - p] (padding counts as -inf); with
    ``return_indices`` also where each maximum sits in the input.

    >>> F.max_pool1d(mg.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0]]]), 2).tolist()
    [[[3.0, 5.0]]]
    """
    return _max_pool(input, 1, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """max_pool1d over two spatial dims; indices are flat over (H, W), as torch's.

    >>> F.max_pool2d(mg.arange(16.0).reshape(1, 1, 4, 4), 2).tolist()
    [[[[5.0, 7.0], [13.0, 15.0]]]]
    """
    return _max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def _avg_pool(input: Tensor, n: int, kernel_size: Any, stride: Any, padding: Any,
              ceil_mode: bool, count_include_pad: bool, divisor_override: int | None) -> Tensor:
    cols, x, batched, k, s, p, _, outs = _windows(input, f"avg_pool{n}d", n, kernel_size,
                                                  stride, padding, 1, ceil_mode, 0.0)
    total = cols.sum(dim=2)
    if divisor_override is not None:
        if divisor_override == 0:
            raise RuntimeError("divisor must be not zero")
        out = total / divisor_override
    else:
        divisor = np.ones((), x.dtype)
        for i, (m, kk, ss, pp, o) in enumerate(zip(x.shape[2:], k, s, p, outs)):
            # torch's window sizes: padding counts (count_include_pad) but not the overhang
            # of a ceil_mode window
            start = np.arange(o) * ss - pp
            end = np.minimum(start + kk, m + pp)
            if not count_include_pad:
                start, end = np.maximum(start, 0), np.minimum(end, m)
            divisor = divisor * (end - start).reshape((-1,) + (1,) * (n - 1 - i))
        out = total / make_tensor(divisor.astype(x.dtype))
    return out if batched else out.squeeze(0)


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """out[n, c, l] = mean_k x[n, c, s l + k - p], zero padding counted in the mean unless
    ``count_include_pad=False``.

    >>> F.avg_pool1d(mg.tensor([[[1.0, 3.0, 2.0, 6.0]]]), 2).tolist()
    [[[2.0, 4.0]]]
    """
    return _avg_pool(input, 1, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     None)


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """avg_pool1d over two spatial dims; ``divisor_override`` replaces the window size.

    >>> F.avg_pool2d(mg.ones(1, 1, 4, 4), 2, divisor_override=1).tolist()
    [[[[4.0, 4.0], [4.0, 4.0]]]]
    """
    return _avg_pool(input, 2, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def _averaging(size: int, out: int, dtype: np.dtype) -> np.ndarray:
    """(out, size): row o averages x[floor(o size / out) : ceil((o + 1) size / out)]."""
    a = np.zeros((out, size), dtype)
    for o in range(out):
        lo, hi = o * size // out, -(-(o + 1) * size // out)
        a[o, lo:hi] = 1.0 / (hi - lo)
    return a


def _adaptive_avg_pool(input: Tensor, output_size: Any, n: int) -> Tensor:
    x, batched = _batched(input, n, f"adaptive_avg_pool{n}d")
    if x.dtype.kind != "f":
        raise NotImplementedError(f'"adaptive_avg_pool{n}d" not implemented for {x.dtype}')
    sizes = output_size if isinstance(output_size, (tuple, list)) else (output_size,) * n
    if len(sizes) != n:
        raise ValueError(f"adaptive_avg_pool{n}d: output_size must be {n} ints, got "
                         f"{output_size}")
    outs = [m if o is None else int(o) for o, m in zip(sizes, x.shape[2:])]
    out = x @ make_tensor(_averaging(x.shape[-1], outs[-1], x.dtype).T)
    if n == 2:
        out = make_tensor(_averaging(x.shape[-2], outs[0], x.dtype)) @ out
    return out if batched else out.squeeze(0)


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """Averages over ``output_size`` windows that tile the last dim as evenly as integers
    allow (window o: floor(o L / out) to ceil((o + 1) L / out)).

    >>> F.adaptive_avg_pool1d(mg.tensor([[[1.0, 3.0, 2.0, 6.0, 4.0]]]), 2).tolist()
    [[[2.0, 4.0]]]
    """
    return _adaptive_avg_pool(input, output_size, 1)


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """adaptive_avg_pool1d over (H, W); an int is both sizes, None keeps the input's.

    >>> F.adaptive_avg_pool2d(mg.ones(2, 3, 5, 7), (1, None)).shape
    (2, 3, 1, 7)
    """
    return _adaptive_avg_pool(input, output_size, 2)
