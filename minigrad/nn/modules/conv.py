"""Convolution layers: Conv1d and Conv2d (torch's names, arguments, init and repr)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...tensor import Tensor
from .. import functional as F
from ..functional._conv import _tuple
from ..module import Module
from ..parameter import Parameter
from .layers import _factory_dtype, reset_affine

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    _n: int  # spatial dims

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        n = self._n
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {set(_PADDING_MODES)}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride = _tuple(kernel_size, n), _tuple(stride, n)
        self.dilation = _tuple(dilation, n)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 "{'valid', 'same'}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            self.padding: Any = padding
        else:
            self.padding = _tuple(padding, n)
        self.padding_mode = padding_mode
        self.output_padding, self.transposed = (0,) * n, False
        dt = _factory_dtype(device, dtype)
        self.weight = Parameter(np.empty((out_channels, in_channels // groups,
                                          *self.kernel_size), dt))
        if bias:
            self.bias = Parameter(np.empty(out_channels, dt))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        reset_affine(self.weight, self.bias,
                     self.in_channels // self.groups * math.prod(self.kernel_size))

    def _padding_sides(self) -> tuple[int, ...]:
        """F.pad's (left_last, right_last, ...) for a padding_mode other than zeros."""
        if self.padding == "valid":
            return (0, 0) * self._n
        sides: list[int] = []
        for k, d, p in zip(self.kernel_size[::-1], self.dilation[::-1],
                           ((None,) * self._n if self.padding == "same" else
                            self.padding[::-1])):
            if p is None:
                total = d * (k - 1)
                sides += [total // 2, total - total // 2]
            else:
                sides += [p, p]
        return tuple(sides)

    def forward(self, input: Tensor) -> Tensor:
        conv = F.conv1d if self._n == 1 else F.conv2d
        if self.padding_mode == "zeros":
            return conv(input, self.weight, self.bias, self.stride, self.padding,
                        self.dilation, self.groups)
        padded = F.pad(input, self._padding_sides(), mode=self.padding_mode)
        return conv(padded, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * self._n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._n:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """F.conv1d with a learnt weight (out_channels, in_channels / groups, kernel_size) and
    bias, initialised as torch's (and as Linear: U(-1/sqrt(fan_in), 1/sqrt(fan_in))).

    >>> nn.Conv1d(3, 8, kernel_size=1)(mg.ones(4, 3, 100)).shape
    (4, 8, 100)
    """

    _n = 1


class Conv2d(_ConvNd):
    """F.conv2d with a learnt weight (out_channels, in_channels / groups, kH, kW) and bias.

    >>> nn.Conv2d(1, 4, 3, padding="same")(mg.ones(2, 1, 5, 5)).shape
    (2, 4, 5, 5)
    """

    _n = 2
