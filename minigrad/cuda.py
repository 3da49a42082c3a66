"""``mg.cuda``: what torch.cuda reports on a machine without a GPU, so that the usual
``"cuda" if torch.cuda.is_available() else "cpu"`` picks the CPU. minigrad has no GPU."""

from __future__ import annotations

__all__ = ["is_available", "device_count", "manual_seed", "manual_seed_all"]


def is_available() -> bool:
    """Always False: minigrad runs on the CPU only.

    >>> mg.cuda.is_available()
    False
    """
    return False


def device_count() -> int:
    """The number of GPUs minigrad can use: 0."""
    return 0


def manual_seed(seed: int) -> None:
    """Seeds nothing, as torch.cuda.manual_seed does without a GPU (seed with mg.manual_seed)."""


def manual_seed_all(seed: int) -> None:
    """Seeds nothing, as torch.cuda.manual_seed_all does without a GPU."""
