"""Weight initialisation, in place and without gradient (torch.nn.init names and formulas).

Draws come from ``mg.manual_seed``'s default generator unless ``generator`` is given.
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd.function import make_tensor
from ..autograd.grad_mode import no_grad
from ..creation import Generator, rng_of
from ..tensor import Tensor


def _fill(tensor: Tensor, values: np.ndarray) -> Tensor:
    with no_grad():
        return tensor.copy_(make_tensor(np.asarray(values, dtype=tensor.dtype)))


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity: relu -> sqrt(2), tanh -> 5/3, linear -> 1.

    >>> nn.init.calculate_gain("relu")
    1.4142135623730951
    """
    if nonlinearity in ("linear", "conv1d", "conv2d", "conv3d", "sigmoid", "identity",
                        "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """fan_in = size(1) * receptive field, fan_out = size(0) * receptive field."""
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than "
                         "2 dimensions")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0,
             generator: Generator | None = None) -> Tensor:
    """Fill with U(a, b)."""
    return _fill(tensor, rng_of(generator).uniform(a, b, tensor.shape))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0,
            generator: Generator | None = None) -> Tensor:
    """Fill with N(mean, std^2)."""
    return _fill(tensor, rng_of(generator).normal(mean, std, tensor.shape))


def constant_(tensor: Tensor, val: float) -> Tensor:
    return _fill(tensor, np.full(tensor.shape, val))


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def eye_(tensor: Tensor) -> Tensor:
    """The identity matrix (2-D tensors only)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, np.eye(*tensor.shape))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0,
                    generator: Generator | None = None) -> Tensor:
    """U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)) (Glorot and Bengio, 2010)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0,
                   generator: Generator | None = None) -> Tensor:
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu",
                     generator: Generator | None = None) -> Tensor:
    """U(-b, b) with b = gain * sqrt(3 / fan) (He et al., 2015).

    ``nn.Linear`` uses ``a=sqrt(5)``, which gives b = 1 / sqrt(fan_in).
    """
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu",
                    generator: Generator | None = None) -> Tensor:
    """N(0, std^2) with std = gain / sqrt(fan)."""
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """A (semi-)orthogonal matrix: Q of the QR of a Gaussian matrix, signs fixed by diag(R)."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = rng_of(generator).standard_normal((rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))  # makes the distribution uniform (Haar)
    if rows < cols:
        q = q.T
    return _fill(tensor, gain * q.reshape(tensor.shape))

