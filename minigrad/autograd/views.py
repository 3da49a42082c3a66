"""The in-place and view protocol: how writing into a tensor's memory keeps gradients right.

The bookkeeping lives on the Tensor, in four attributes:

- ``_version_counter``: a one-element list shared (by identity) between a tensor and every
  view of its memory (``_version`` reads it as an int, as torch's). Each in-place write
  bumps it; ``ctx.saved_tensors`` compares it with the version seen at save time, so a
  backward that would read an overwritten value raises.
- ``_base``: on a view, the root tensor whose memory it shows (views of views point at
  the root too).
- ``_replay``: on a view made while recording, a function that redoes the view from its
  root (``view`` chains the replays of views of views).
- ``_views``: on a root, weak references to its views made while recording (``Views``).

A recorded in-place op (``inplace``) runs out of place on a copy of the old value, writes
the result into the tensor's memory, and gives the tensor the result's place in the graph.
An op on a view is recorded on its root, as torch's CopySlices does: the root's new value
is its old one with the op's result written over the view's region (``WriteView``). The
write changed the values of the root's views (the written view among them), so each one
is then redone from the root's new node (``_rebase_views``), as torch does: their
gradients flow through the write.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from . import function
from .function import is_tensor, make_tensor
from .grad_mode import _state, no_grad

if TYPE_CHECKING:
    from ..tensor import Tensor


def view(base: Tensor, out: Tensor, replay: Callable[[Tensor], Tensor]) -> Tensor:
    """Mark ``out`` as a view of ``base`` when numpy gave a view, so they share a version.

    ``replay`` redoes the view from ``base``; the root base keeps its views weakly, so a
    recorded in-place op on it can redo them from its new node (``_rebase_views``)."""
    arr, base_arr = out._array, base._array
    owner = arr.base
    # numpy points a view at the array that owns the memory: the same owner as base's
    # answers most calls without np.may_share_memory (~0.5 us)
    if owner is not None and ((owner is base_arr or owner is base_arr.base) and arr.size or (
            np.may_share_memory(arr, base_arr) if arr.size
            else _owner(arr) is _owner(base_arr))):
        out._version_counter = base._version_counter
        root = base._base
        out._base = base if root is None else root
        parent = base._replay
        # Nothing records here (a backward pass, or no_grad), or base itself could not be
        # redone (made under no_grad, parent None): no graph to rebase this view onto later.
        if not _state.enabled:
            return out
        if root is None:
            root, out._replay = base, replay
        elif parent is None:
            return out
        else:
            out._replay = lambda r: replay(parent(r))
        known = root._views
        if known is None:
            root._views = Views([_ref(out)])
        else:
            known.append(_ref(out))
            if len(known) >= known.limit:
                known.prune()
    return out


_ref = weakref.ref


class Views(list):
    """A root's views made while recording, as weak references without callbacks.

    A WeakSet costs a Python callback as each view dies, and its add as much again: a
    view (x.t(), x.view(...)) is made often and redone seldom. The dead references are
    dropped when the list doubles since the last pruning, so it stays within twice the
    live views (and 64)."""

    __slots__ = ("limit",)

    def __init__(self, refs: list) -> None:
        super().__init__(refs)
        self.limit = 64

    def prune(self) -> None:
        self[:] = [r for r in self if r() is not None]
        self.limit = max(64, 2 * len(self))

    def live(self) -> list[Tensor]:
        return [v for r in self if (v := r()) is not None]


def _owner(arr: np.ndarray) -> object:
    """The object that owns ``arr``'s memory (numpy points a view's base at the owner)."""
    return arr if arr.base is None else arr.base


def inplace(t: Tensor, compute: Callable[[Tensor], Tensor],
            tracked_others: Sequence = ()) -> Tensor:
    """Run ``compute`` out of place, then write its result into ``t``'s memory.

    When recorded, ``t`` takes the result's place in the graph; its old value lives on as a
    copy, while ops that saved ``t`` itself trip the version check. On a view, the op is
    recorded on its root (see the module's docstring). ``tracked_others`` are the other
    operands: the write is recorded when any of them requires grad."""
    record = _state.enabled and (
        t.requires_grad or any(is_tensor(o) and o.requires_grad for o in tracked_others)
    )
    base = t._base
    if not record:
        if _state.enabled:
            if base is not None and base.requires_grad and t._replay is None:
                raise RuntimeError(_NO_GRAD_VIEW)
            with no_grad():
                res = compute(t)
        else:  # already off (an optimizer's step): skip the context manager
            res = compute(t)
        write(t, res._array)
        return t
    if base is not None:  # torch's checks, in torch's order, with its words
        if t._replay is None:
            raise RuntimeError(_NO_GRAD_VIEW)
        if base.requires_grad and base.is_leaf:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in "
                               "an in-place operation.")
    if t.requires_grad and t.is_leaf:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation; "
            "wrap it in `with mg.no_grad():` or use an out-of-place op"
        )
    if base is None:
        _record(t, compute)
        return t
    replay = t._replay
    assert replay is not None  # a view recorded while recording (checked above)

    def on_base(b: Tensor) -> Tensor:
        res = compute(replay(b))
        _check_writable(t, res._array)  # before the root's memory is written
        return WriteView.apply(b, res, replay)

    _record(base, on_base)
    return t


_NO_GRAD_VIEW = (
    "A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
    "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify "
    "your code by moving both the view and the inplace either both inside the no_grad block "
    "(if you don't want the inplace to be tracked) or both outside (if you want the inplace "
    "to be tracked).")


def _record(t: Tensor, compute: Callable[[Tensor], Tensor]) -> None:
    """The recorded in-place op on ``t``, a root: ``compute`` of its old value is written
    into its memory and takes its place in the graph, and its views are redone from it."""
    # The old value as a copy: ops may save it for backward (x.mul_(y) needs x for
    # y's gradient), and the write below must not change it (torch clones here too).
    old = make_tensor(t._array.copy())
    old.requires_grad, old.grad_fn, old._output_nr = t.requires_grad, t.grad_fn, t._output_nr
    res = compute(old)
    write(t, res._array)
    _move(t, res)
    if t._views:
        _rebase_views(t)


def _rebase_views(root: Tensor) -> None:
    """Redo each live view from ``root``'s new node, as torch does: the write changed the
    views' values, so their gradients must flow through the write too."""
    if root._views is not None:
        for v in root._views.live():
            replay = v._replay
            assert replay is not None  # only views that can be redone are registered
            _move(v, replay(root))


def _move(t: Tensor, new: Tensor) -> None:
    """Give ``t`` the graph place of ``new``, its value now. A ``retain_grad()`` moves along
    (torch's too): ``t.grad`` is the gradient of its latest value, not of the one before."""
    old_node, old_nr = t.grad_fn, t._output_nr
    t.grad_fn, t._output_nr, t.requires_grad = new.grad_fn, new._output_nr, new.requires_grad
    if t._retains:
        if old_node is not None and old_node._retained:  # (detach_() leaves no node)
            old_node._retained.pop(old_nr, None)
        t._retains = False
        t.retain_grad()


class WriteView(function.Function):
    """``base`` with ``value`` written over the region its view ``replay(base)`` shows: the
    root's new value after an in-place op on that view (torch's CopySlices). Gradients:
    the root's, zero on the region; the value's, the view of the root's (``replay(g)``).

    The region is found by redoing the view on numbers that name the root's elements. A
    complex root's real and imaginary parts are named apart (2k + i (2k + 1)), so that a
    view of its parts (``.real``, ``view_as_real``) names the parts it shows; a view that
    makes complex numbers of a real root (``view_as_complex``) names two elements each."""

    @staticmethod
    def forward(ctx: function.Context, base: Tensor, value: Tensor,
                replay: Callable[[Tensor], Tensor]) -> np.ndarray:
        arr = base._array
        cplx = arr.dtype.kind == "c"
        if cplx:  # the parts in a flat real copy: part numbers index it
            flat = np.stack([arr.real, arr.imag], -1).reshape(-1)
            k = np.arange(0, 2 * arr.size, 2, dtype=np.float64).reshape(arr.shape)
            names = k + 1j * (k + 1)
        else:
            flat = arr.copy().reshape(-1)
            names = np.arange(arr.size, dtype=np.float64).reshape(arr.shape)
        pos = replay(make_tensor(names))._array
        v = value._array
        region = np.zeros(flat.size, dtype=bool)
        if pos.dtype.kind == "c":  # a complex view: each value's two parts, each its place
            parts = [(pos.real, np.real(v)), (pos.imag, np.imag(v))]
        else:
            parts = [(pos, v)]
        for p, part in parts:
            at = p.astype(np.intp)
            flat[at] = part
            region[at] = True
        ctx.cplx, ctx.replay = cplx, replay
        if cplx:
            ctx.region = make_tensor(region[0::2].reshape(arr.shape)), make_tensor(
                region[1::2].reshape(arr.shape))
            return flat.view(arr.dtype).reshape(arr.shape)
        ctx.region = make_tensor(region.reshape(arr.shape))
        return flat.reshape(arr.shape)

    @staticmethod
    def backward(ctx: function.Context, g: Tensor) -> tuple:
        if ctx.cplx:  # each part kept where it was not written
            re, im = ctx.region
            kept = g.real.masked_fill(re, 0) + g.imag.masked_fill(im, 0) * 1j
            return kept, ctx.replay(g), None
        return g.masked_fill(ctx.region, 0), ctx.replay(g), None


def _check_writable(t: Tensor, value: np.ndarray) -> None:
    """Refuse, as torch does, to write ``value`` into ``t``'s memory where it would land
    twice on one element, go to read-only memory, cast to another kind or not fit."""
    arr = t._array
    if not arr.flags.writeable:
        if any(st == 0 and n > 1 for st, n in zip(arr.strides, arr.shape)):
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor "
                "refers to a single memory location. Please clone() the tensor before "
                "performing the operation.")
        raise RuntimeError("this tensor's memory is read-only (it shares a read-only numpy "
                           "array); clone() it before writing to it")
    if not np.can_cast(value.dtype, arr.dtype, "same_kind"):
        raise RuntimeError(
            f"result type {value.dtype} can't be cast to the desired output type "
            f"{arr.dtype} of an in-place operation"
        )
    if value.shape != arr.shape:
        shape = np.broadcast_shapes(value.shape, arr.shape)  # the op broadcast them already
        if shape != arr.shape:
            raise RuntimeError(f"output with shape {list(arr.shape)} doesn't match the "
                               f"broadcast shape {list(shape)}")


def write(t: Tensor, value: np.ndarray) -> None:
    """Copy ``value`` into ``t``'s memory and bump the version its views share."""
    try:  # numpy checks as it copies (a hot path: optimizers write every step)
        np.copyto(t._array, value, casting="same_kind")
    except (TypeError, ValueError):
        _check_writable(t, value)  # torch's error for it
        raise
    t._version_counter[0] += 1
