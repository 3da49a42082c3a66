"""Pooling layers: MaxPool1d/2d, AvgPool1d/2d, AdaptiveAvgPool1d/2d (torch's arguments and
repr); the work is in nn.functional."""

from __future__ import annotations

from typing import Any

from ...tensor import Tensor
from .. import functional as F
from ..module import Module


class _MaxPoolNd(Module):
    _n: int

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 dilation: Any = 1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input: Tensor) -> Any:
        pool = F.max_pool1d if self._n == 1 else F.max_pool2d
        return pool(input, self.kernel_size, self.stride, self.padding, self.dilation,
                    ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """F.max_pool1d as a layer.

    >>> nn.MaxPool1d(2)(mg.ones(1, 3, 8)).shape
    (1, 3, 4)
    """

    _n = 1


class MaxPool2d(_MaxPoolNd):
    """F.max_pool2d as a layer.

    >>> nn.MaxPool2d(3, stride=2)(mg.ones(1, 3, 9, 9)).shape
    (1, 3, 4, 4)
    """

    _n = 2


class AvgPool1d(Module):
    """F.avg_pool1d as a layer.

    >>> nn.AvgPool1d(3, stride=1)(mg.ones(2, 8)).shape
    (2, 6)
    """

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True) -> None:
        super().__init__()
        # torch keeps 1-d pooling sizes as 1-tuples (it shows them so in the repr)
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


def _single(v: Any) -> tuple:
    return tuple(v) if isinstance(v, (tuple, list)) else (v,)


class AvgPool2d(Module):
    """F.avg_pool2d as a layer.

    >>> nn.AvgPool2d(2)(mg.ones(1, 3, 8, 6)).shape
    (1, 3, 4, 3)
    """

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AdaptiveAvgPoolNd(Module):
    _n: int

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        pool = F.adaptive_avg_pool1d if self._n == 1 else F.adaptive_avg_pool2d
        return pool(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """F.adaptive_avg_pool1d as a layer.

    >>> nn.AdaptiveAvgPool1d(1)(mg.ones(2, 3, 7)).shape
    (2, 3, 1)
    """

    _n = 1


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """F.adaptive_avg_pool2d as a layer.

    >>> nn.AdaptiveAvgPool2d((1, 1))(mg.ones(2, 3, 7, 5)).shape
    (2, 3, 1, 1)
    """

    _n = 2
