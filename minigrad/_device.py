"""Devices: minigrad computes on the CPU only. ``mg.device`` is torch.device's shape (a type
and an optional index) so that ported code which names the CPU runs unchanged, and every
other device is refused with an error that says so."""

from __future__ import annotations

from typing import Any

# torch's device types: any of them parses; only "cpu" is usable here.
_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip",
                 "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                 "privateuseone")


class device:  # noqa: N801  (torch spells it torch.device)
    """A device as torch names it: ``device("cpu")``, ``device("cpu:0")``, ``device("cpu", 0)``.

    Only the CPU exists; ``device("cuda")`` parses (so it can be compared and printed) but any
    tensor or module asked to go there refuses. A device equals its string (``"cpu"``).

    >>> mg.device("cpu"), mg.zeros(2).device == "cpu", mg.zeros(2).device.type
    (device(type='cpu'), True, 'cpu')
    """

    __slots__ = ("type", "index")

    def __init__(self, type: Any, index: int | None = None) -> None:  # noqa: A002
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments: expected "
                            f"a string like 'cpu', got {type.__class__.__name__}")
        kind, _, num = type.partition(":")
        if kind not in _DEVICE_TYPES:
            raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at "
                               f"start of device string: {type}")
        if num:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was "
                                   f"passed explicitly: {type}")
            if not num.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(num)
        if index is not None and (not isinstance(index, int) or index < 0):
            raise RuntimeError(f"Device index must not be negative, got {index}")
        object.__setattr__(self, "type", kind)
        object.__setattr__(self, "index", index)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a device is immutable")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = device(other)
            except RuntimeError:
                return False
        if not isinstance(other, device):
            return NotImplemented
        return (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        extra = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{extra})"

    def __reduce__(self) -> tuple:
        return device, (self.type, self.index)


CPU = device("cpu")


def check_device(where: Any) -> None:
    """Accept the CPU however it is spelled (``"cpu"``, ``"cpu:0"``, a ``device``, a torch
    device); refuse anything else with an error that says minigrad has no other device."""
    kind = getattr(where, "type", where)
    if isinstance(kind, str) and kind.partition(":")[0] == "cpu":
        return
    raise RuntimeError(f"minigrad runs on the CPU only; cannot use device {str(where)!r}. "
                       "Drop the device argument or pass 'cpu'.")


def is_device(value: Any) -> bool:
    """Whether a positional ``to(...)`` argument names a device (a device or a device string)."""
    if isinstance(value, device) or type(value).__name__ == "device":  # ours or torch's
        return True
    return isinstance(value, str) and value.partition(":")[0] in _DEVICE_TYPES
