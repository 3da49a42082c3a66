"""dtype and device conversions (``to``, ``float()``, ``cuda()`` ...) and torch's ``new_*``
factories, plus the helpers that read torch's ``to(...)`` arguments."""

# mypy: disable-error-code="misc"
# (The methods take self as the Tensor they are mixed into, which mypy's check that a
# self annotation is a supertype of its class, error code misc, would refuse.)

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import dtypes
from .._device import CPU, check_device, is_device
from .._device import device as Device
from .._dims import shape_arg
from ..autograd import function
from ..autograd.function import is_tensor
from ..dtypes import Number
from ..ops import unary

if TYPE_CHECKING:
    from ..tensor import Tensor


# torch's legacy tensor-type names (Tensor.type()), by dtype
_TYPE_NAMES = {np.dtype(k): v + "Tensor" for k, v in (
    (np.float16, "Half"), (np.float32, "Float"), (np.float64, "Double"), (np.int64, "Long"),
    (np.int32, "Int"), (np.int16, "Short"), (np.int8, "Char"), (np.uint8, "Byte"),
    (np.bool_, "Bool"), (np.complex64, "ComplexFloat"), (np.complex128, "ComplexDouble"))}
_TYPE_OF = {v: k for k, v in _TYPE_NAMES.items()}  # and back


class ConvertMethods:
    """The convert methods of Tensor (mixed into it by tensor.py)."""

    def to(self: Tensor, *args: Any, dtype: Any = None, device: Any = None,
           non_blocking: builtins.bool = False, copy: builtins.bool = False) -> Tensor:
        """Cast to a dtype given by name, positionally or as another tensor's, as torch's
        ``to(dtype)``, ``to(device, dtype)``, ``to(other)``; the device can only be the CPU.
        The gradient flows back cast to the source dtype.

        >>> mg.ones(2).to("cpu", mg.float64).dtype
        dtype('float64')
        """
        dt = to_args(args, dtype, device)
        out = self if dt is None else self._cast(dt)
        return out.clone() if copy and out is self else out

    def _cast(self: Tensor, dt: Any) -> Tensor:
        dt = dtypes.to_dtype(dt)
        return self if dt == self._array.dtype else unary.Cast.apply(self, dt)

    def type(self: Tensor, dtype: Any = None, non_blocking: builtins.bool = False) -> Any:
        """With no dtype, the type's name ('minigrad.DoubleTensor', torch's 'torch.' names
        spelled the same way); else the cast to a dtype or to such a name, so ported
        ``x.type(y.type())`` and ``x.type('torch.FloatTensor')`` work.

        >>> mg.ones(2).type(), mg.ones(2).type('torch.DoubleTensor').dtype
        ('minigrad.FloatTensor', dtype('float64'))
        """
        if dtype is None:
            return "minigrad." + _TYPE_NAMES[self._array.dtype]
        if isinstance(dtype, str) and dtype.endswith("Tensor"):
            lib, _, name = dtype.rpartition(".")
            if lib.endswith(".cuda"):
                check_device("cuda")
            found = _TYPE_OF.get(name)
            if lib not in ("torch", "minigrad") or found is None:
                raise ValueError(f"invalid type: {dtype!r}")
            dtype = found
        return self._cast(dtype)

    def float(self: Tensor) -> Tensor:
        return self._cast(np.float32)

    def double(self: Tensor) -> Tensor:
        return self._cast(np.float64)

    def half(self: Tensor) -> Tensor:
        return self._cast(np.float16)

    def long(self: Tensor) -> Tensor:
        return self._cast(np.int64)

    def int(self: Tensor) -> Tensor:
        return self._cast(np.int32)

    def bool(self: Tensor) -> Tensor:
        return self._cast(np.bool_)

    def type_as(self: Tensor, other: Tensor) -> Tensor:
        return self._cast(other.dtype)

    @property
    def device(self: Tensor) -> Device:
        """Where the values live: always ``mg.device("cpu")`` (it equals ``"cpu"``)."""
        return CPU

    @property
    def is_cuda(self: Tensor) -> builtins.bool:
        return False

    @property
    def is_cpu(self: Tensor) -> builtins.bool:
        return True

    def cpu(self: Tensor) -> Tensor:
        return self

    def cuda(self: Tensor, device: Any = None, non_blocking: builtins.bool = False) -> Tensor:
        """Refused: minigrad runs on the CPU only (``.cuda(device="cpu")`` is the CPU)."""
        check_device("cuda" if device is None else device)
        return self

    def new_tensor(self: Tensor, data: Any, dtype: Any = None, device: Any = None,
                   requires_grad: builtins.bool = False) -> Tensor:
        """A copy of ``data`` as a new leaf, in this tensor's dtype unless ``dtype`` is given."""
        if device is not None:
            check_device(device)
        arr = np.array(data._array if is_tensor(data) else data)
        return function.tensor_class(arr, self.dtype if dtype is None else dtype, requires_grad)

    def new_full(self: Tensor, size: Sequence[builtins.int], fill_value: Number, dtype: Any = None,
                 device: Any = None, requires_grad: builtins.bool = False) -> Tensor:
        """A new tensor of ``size`` filled with ``fill_value``, in this tensor's dtype."""
        if device is not None:
            check_device(device)
        dt = self.dtype if dtype is None else dtypes.to_dtype(dtype)
        return function.tensor_class(np.full(shape_arg((size,)), fill_value, dt),
                                     requires_grad=requires_grad)

    def new_zeros(self: Tensor, *sizes: Any, size: Any = None, dtype: Any = None,
                  device: Any = None, requires_grad: builtins.bool = False) -> Tensor:
        return self.new_full(shape_arg(sizes, size, "size", "new_zeros"), 0, dtype, device,
                             requires_grad)

    def new_ones(self: Tensor, *sizes: Any, size: Any = None, dtype: Any = None,
                 device: Any = None, requires_grad: builtins.bool = False) -> Tensor:
        return self.new_full(shape_arg(sizes, size, "size", "new_ones"), 1, dtype, device,
                             requires_grad)

    def new_empty(self: Tensor, *sizes: Any, size: Any = None, dtype: Any = None,
                  device: Any = None, requires_grad: builtins.bool = False) -> Tensor:
        return self.new_full(shape_arg(sizes, size, "size", "new_empty"), 0, dtype, device,
                             requires_grad)


def to_args(args: Sequence[Any], dtype: Any = None, device: Any = None) -> np.dtype | None:
    """The dtype torch's ``to(...)`` arguments ask for (None: keep it); checks the device."""
    for a in args:
        if is_tensor(a):
            dtype = a.dtype
        elif is_device(a):
            device = a
        elif a is not None:
            dtype = a
    if device is not None:
        check_device(device)
    return None if dtype is None else dtypes.to_dtype(dtype)
