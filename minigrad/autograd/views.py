"""The in-place and view protocol: how writing into a tensor's memory keeps gradients right.

The bookkeeping lives on the Tensor, in four attributes:

- ``_version``: a one-element list shared (by identity) between a tensor and every view of
  its memory. Each in-place write bumps it; ``ctx.saved_tensors`` compares it with the
  version seen at save time, so a backward that would read an overwritten value raises.
- ``_base``: on a view, the root tensor whose memory it shows (views of views point at
  the root too).
- ``_replay``: on a view, a function that redoes the view from its root (``view`` chains
  the replays of views of views).
- ``_views``: on a root, a weak set of its live views made while recording.

A recorded in-place op (``inplace``) runs out of place on a copy of the old value, writes
the result into the tensor's memory, and gives the tensor the result's place in the graph.
The write changed the values of the root's views too, so each one is then redone from the
root's new node (``_rebase_views``), as torch does: their gradients flow through the write.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from . import function
from .function import is_tensor
from .grad_mode import _state, no_grad

if TYPE_CHECKING:
    from ..tensor import Tensor


def view(base: Tensor, out: Tensor, replay: Callable[[Tensor], Tensor]) -> Tensor:
    """Mark ``out`` as a view of ``base`` when numpy gave a view, so they share a version.

    ``replay`` redoes the view from ``base``; the root base keeps its views weakly, so a
    recorded in-place op on it can redo them from its new node (``_rebase_views``)."""
    if out._array.base is not None and np.may_share_memory(out._array, base._array):
        out._version = base._version
        root = base._base
        out._base = base if root is None else root
        parent = base._replay
        # Nothing records here (a backward pass), or base itself could not be redone
        # (made under no_grad): there is no graph to rebase this view onto later.
        if not _state.enabled or (root is not None and parent is None):
            return out
        if root is None:
            root, out._replay = base, replay
        else:
            out._replay = lambda r: replay(parent(r))
        if root._views is None:
            root._views = weakref.WeakSet()
        root._views.add(out)
    return out


def inplace(t: Tensor, compute: Callable[[Tensor], Tensor],
            tracked_others: Sequence = ()) -> Tensor:
    """Run ``compute`` out of place, then write its result into ``t``'s memory.

    When recorded, ``t`` takes the result's place in the graph; its old value lives on as a
    copy, while ops that saved ``t`` itself trip the version check. ``tracked_others`` are
    the other operands: the write is recorded when any of them requires grad."""
    record = _state.enabled and (
        t.requires_grad or any(is_tensor(o) and o.requires_grad for o in tracked_others)
    )
    if not record:
        if _state.enabled:
            with no_grad():
                res = compute(t)
        else:  # already off (an optimizer's step): skip the context manager
            res = compute(t)
        write(t, res._array)
        return t
    if t.requires_grad and t.is_leaf:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation; "
            "wrap it in `with mg.no_grad():` or use an out-of-place op"
        )
    if t._base is not None:
        raise RuntimeError(
            "in-place operation on a view of another tensor while recording gradients is "
            "not supported; apply it to a .clone() instead"
        )
    # The old value as a copy: ops may save it for backward (x.mul_(y) needs x for
    # y's gradient), and the write below must not change it (torch clones here too).
    old = function.make_tensor(t._array.copy())
    old.requires_grad, old.grad_fn, old._output_nr = t.requires_grad, t.grad_fn, t._output_nr
    res = compute(old)
    write(t, res._array)
    t.grad_fn, t._output_nr, t.requires_grad = res.grad_fn, res._output_nr, res.requires_grad
    if t._views:
        _rebase_views(t)
    return t


def _rebase_views(root: Tensor) -> None:
    """Redo each live view from ``root``'s new node, as torch does: the write changed the
    views' values, so their gradients must flow through the write too."""
    for v in list(root._views):
        new = v._replay(root)
        v.grad_fn, v._output_nr, v.requires_grad = (
            new.grad_fn, new._output_nr, new.requires_grad)
        if v._retains:  # retain_grad() lives on the old node; move it to the new one
            v._retains = False
            v.retain_grad()


def write(t: Tensor, value: np.ndarray) -> None:
    """Copy ``value`` into ``t``'s memory and bump the version its views share."""
    if not t._array.flags.writeable:
        if any(st == 0 and n > 1 for st, n in zip(t._array.strides, t._array.shape)):
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor "
                "refers to a single memory location. Please clone() the tensor before "
                "performing the operation.")
        raise RuntimeError("this tensor's memory is read-only (it shares a read-only numpy "
                           "array); clone() it before writing to it")
    if not np.can_cast(value.dtype, t._array.dtype, "same_kind"):
        raise RuntimeError(
            f"result type {value.dtype} can't be cast to the desired output type "
            f"{t._array.dtype} of an in-place operation"
        )
    np.copyto(t._array, value, casting="same_kind")
    t._version[0] += 1
