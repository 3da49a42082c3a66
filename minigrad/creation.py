"""Creating tensors: from data, filled, ranges and random (with a seedable generator)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import dtypes
from ._device import check_device
from ._dims import shape_arg
from .autograd.function import make_tensor
from .tensor import Tensor


def _float_dtype(dtype: Any) -> np.dtype:
    return dtypes.DEFAULT_FLOAT if dtype is None else dtypes.to_dtype(dtype)


def _new(arr: np.ndarray, requires_grad: bool, device: Any = None) -> Tensor:
    if device is not None:
        check_device(device)
    t = make_tensor(arr)
    return t.requires_grad_() if requires_grad else t


def tensor(data: Any, dtype: Any = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data``: Python floats -> float32, ints -> int64,
    numpy arrays keep their dtype (torch.tensor)."""
    src = data._array if isinstance(data, Tensor) else data
    arr = np.array(src, copy=True) if isinstance(src, np.ndarray) else src
    if device is not None:
        check_device(device)
    return Tensor(arr, dtype=dtype, requires_grad=requires_grad)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """Like ``tensor`` but shares memory with a numpy array of the right dtype."""
    if device is not None:
        check_device(device)
    if isinstance(data, Tensor):
        return data if dtype is None else data.to(dtype)
    return Tensor(data, dtype=dtype)


def from_numpy(a: np.ndarray) -> Tensor:
    """A tensor sharing memory with ``a`` (changes show through both ways)."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"expected np.ndarray, got {type(a).__name__}")
    return Tensor(a)


# The creation functions take their size as torch's do: zeros(2, 3), zeros((2, 3)) or
# zeros(size=(2, 3)).
def zeros(*sizes: Any, size: Any = None, dtype: Any = None, device: Any = None,
          requires_grad: bool = False) -> Tensor:
    shape = shape_arg(sizes, size, "size", "zeros")
    return _new(np.zeros(shape, _float_dtype(dtype)), requires_grad, device)


def ones(*sizes: Any, size: Any = None, dtype: Any = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    shape = shape_arg(sizes, size, "size", "ones")
    return _new(np.ones(shape, _float_dtype(dtype)), requires_grad, device)


def empty(*sizes: Any, size: Any = None, dtype: Any = None, device: Any = None,
          requires_grad: bool = False) -> Tensor:
    shape = shape_arg(sizes, size, "size", "empty")
    return zeros(shape, dtype=dtype, device=device, requires_grad=requires_grad)


def full(size: Sequence[int], fill_value: Any, dtype: Any = None,
         device: Any = None, requires_grad: bool = False) -> Tensor:
    """Filled with ``fill_value``; the dtype follows the value (bool, int64 or float32)."""
    dt = dtypes.scalar_dtype(fill_value) if dtype is None else dtypes.to_dtype(dtype)
    return _new(np.full(tuple(size), fill_value, dt), requires_grad, device)


def eye(n: int, m: int | None = None, dtype: Any = None, device: Any = None,
        requires_grad: bool = False) -> Tensor:
    return _new(np.eye(n, m, dtype=_float_dtype(dtype)), requires_grad, device)


def arange(start: float = 0, end: float | None = None, step: float = 1, dtype: Any = None,
           device: Any = None, requires_grad: bool = False) -> Tensor:
    """[start, end) by ``step``; int64 when all three are integers, else float32 (torch).
    One number is the end, as is ``end=`` alone.

    >>> mg.arange(end=3)
    tensor([0, 1, 2])
    """
    if end is None:
        start, end = 0, start
    if dtype is None:
        ints = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
        dtype = np.int64 if ints else dtypes.DEFAULT_FLOAT
    arr = np.arange(start, end, step).astype(dtypes.to_dtype(dtype))
    return _new(arr, requires_grad, device)


def linspace(start: float, end: float, steps: int, dtype: Any = None,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    arr = np.linspace(start, end, steps, dtype=_float_dtype(dtype))
    return _new(arr, requires_grad, device)


def logspace(start: float, end: float, steps: int, base: float = 10.0, dtype: Any = None,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    return _new(np.logspace(start, end, steps, base=base).astype(_float_dtype(dtype)),
                requires_grad, device)


def _like(t: Tensor, dtype: Any) -> np.dtype:
    return t.dtype if dtype is None else dtypes.to_dtype(dtype)


def zeros_like(input: Tensor, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    return _new(np.zeros(input.shape, _like(input, dtype)), requires_grad, device)


def ones_like(input: Tensor, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    return _new(np.ones(input.shape, _like(input, dtype)), requires_grad, device)


def full_like(input: Tensor, fill_value: Any, dtype: Any = None,
              device: Any = None, requires_grad: bool = False) -> Tensor:
    return _new(np.full(input.shape, fill_value, _like(input, dtype)), requires_grad, device)


def empty_like(input: Tensor, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    return zeros_like(input, dtype, device, requires_grad)


# ---- random ---------------------------------------------------------------------------------
class Generator:
    """A random source; ``manual_seed`` makes draws repeatable (torch.Generator)."""

    def __init__(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)
        self._seed = seed

    def manual_seed(self, seed: int) -> Generator:
        self._rng = np.random.default_rng(seed)
        self._seed = seed
        return self

    def initial_seed(self) -> int | None:
        return self._seed

    @property
    def rng(self) -> np.random.Generator:
        return self._rng


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator used by rand, randn, randint, randperm and nn.init."""
    return default_generator.manual_seed(seed)


def rng_of(generator: Generator | None) -> np.random.Generator:
    """The numpy generator behind ``generator``, or behind the default one when None."""
    return (generator or default_generator).rng


def rand(*sizes: Any, size: Any = None, generator: Generator | None = None,
         dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Uniform on [0, 1) (a complex dtype: its real and imaginary parts each, as torch)."""
    dt, shape = _float_dtype(dtype), shape_arg(sizes, size, "size", "rand")
    rng = rng_of(generator)
    arr = rng.random(shape) if dt.kind != "c" else rng.random(shape) + 1j * rng.random(shape)
    return _new(arr.astype(dt), requires_grad, device)


def randn(*sizes: Any, size: Any = None, generator: Generator | None = None,
          dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Standard normal; a complex dtype's has E|z|^2 = 1, its parts each variance 1/2
    (torch's).

    >>> mg.randn(2, dtype=mg.cfloat).dtype
    dtype('complex64')
    """
    dt, shape = _float_dtype(dtype), shape_arg(sizes, size, "size", "randn")
    rng = rng_of(generator)
    arr = rng.standard_normal(shape)
    if dt.kind == "c":
        arr = (arr + 1j * rng.standard_normal(shape)) * np.sqrt(0.5)
    return _new(arr.astype(dt), requires_grad, device)


def randint(low: int = 0, high: Any = None, size: Sequence[int] = (), *,
            generator: Generator | None = None, dtype: Any = None, device: Any = None,
            requires_grad: bool = False) -> Tensor:
    """Integers in [low, high) (int64): ``randint(low, high, size)``, or torch's
    ``randint(high, size)`` with low 0.

    >>> mg.randint(1, (3,)).tolist()
    [0, 0, 0]
    """
    if high is None or isinstance(high, (tuple, list)):  # randint(high[, size]): a size
        low, high, size = 0, low, size if high is None else high  # is a sequence (Size too)
    low, high = int(low), int(high)  # (0-d tensors too, as torch takes them)
    dt = np.int64 if dtype is None else dtypes.to_dtype(dtype)
    return _new(rng_of(generator).integers(low, high, tuple(size)).astype(dt), requires_grad,
                device)


def randperm(n: int, *, generator: Generator | None = None, dtype: Any = None,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """A random permutation of 0 .. n-1 (int64 unless ``dtype`` is given)."""
    dt = np.int64 if dtype is None else dtypes.to_dtype(dtype)
    return _new(rng_of(generator).permutation(n).astype(dt), requires_grad, device)


def rand_like(input: Tensor, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    return rand(input.shape, dtype=_like(input, dtype), device=device,
                requires_grad=requires_grad)


def randn_like(input: Tensor, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    return randn(input.shape, dtype=_like(input, dtype), device=device,
                 requires_grad=requires_grad)
