"""Utilities with torch.utils' names: ``checkpoint`` (activation checkpointing)."""

from . import checkpoint

__all__ = ["checkpoint"]
