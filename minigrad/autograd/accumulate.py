"""Adding a gradient into a leaf's ``.grad``, where every backward ends: in place when
that is safe, without a copy when the walk holds the only reference (as torch does), and
under one lock, since walks in several threads may add into the same leaf.
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING

import numpy as np

from . import function

if TYPE_CHECKING:
    from ..tensor import Tensor


# References to a gradient (and to its array) that only the walk holds, as counted inside
# accumulate: the walk's buffer, accumulate's argument and getrefcount's own (the array: its
# Tensor, accumulate's name for it and getrefcount's). Trusted on CPython before 3.14 only,
# whose borrowed stack references getrefcount may not count.
_ONLY_WALK_REFS = (3, 3) if (sys.implementation.name == "cpython"
                             and sys.version_info < (3, 14)) else (0, 0)


# Backward walks in several threads may add into one leaf's .grad: numpy releases the GIL
# inside a large in-place add, so two unguarded read-add-write steps lose one of them.
_accumulating = threading.Lock()


def accumulate(leaf: Tensor | None, g: Tensor, create_graph: bool) -> None:
    """Add ``g`` into ``leaf.grad``: in place when that is safe, as torch does."""
    if leaf is None:  # the leaf was freed while its graph lived on: no one can read its grad
        return
    with _accumulating:
        old = leaf.grad
        if old is None:
            if create_graph and g.requires_grad:  # a graph to keep: the copy is recorded
                leaf.grad = g.clone()
                return
            arr = g._array
            g_refs, arr_refs = _ONLY_WALK_REFS
            # A gradient no one else holds, whose memory is its own, becomes .grad as it is
            # (torch steals it the same way); any other is copied: it may be a read-only
            # broadcast view, the very tensor another leaf receives, or one a hook kept.
            if (sys.getrefcount(g) <= g_refs and sys.getrefcount(arr) <= arr_refs
                    and type(g) is function.tensor_class and arr.base is None
                    and not g.requires_grad):
                leaf.grad = g
            else:
                leaf.grad = function.make_tensor(np.array(arr))
        elif create_graph or old.requires_grad:
            leaf.grad = old + g  # out of place: old may be part of a graph someone will use
        else:
            np.add(old._array, g._array, out=old._array)
