"""``mg.accelerator``: torch.accelerator as it answers on a machine without one, so that
PyTorch's tutorial line ``device = torch.accelerator.current_accelerator().type if
torch.accelerator.is_available() else "cpu"`` picks the CPU."""

from __future__ import annotations

__all__ = ["is_available", "current_accelerator", "device_count"]


def is_available() -> bool:
    """Always False: minigrad runs on the CPU only.

    >>> mg.accelerator.is_available()
    False
    """
    return False


def current_accelerator() -> None:
    """None: there is no accelerator."""
    return None


def device_count() -> int:
    return 0
