"""The walk's one extension point: a backward that differentiates its own incoming gradients.

Near a tie, the SVD's and eigh's backward (linalg/_tie_limits.py, linalg/_eigh_ties.py)
need more than the gradients of their outputs: they differentiate those gradients again,
as functions of the graph below the node (its "downstream"). A node asks for that by
setting ``ctx.wants_downstream = True`` in forward. A walk that reaches such a node
(``reaches_wanting``, which the engine asks once per walk) records itself, as
create_graph=True would, frees nothing until it ends, and hands out detached results
unless create_graph was asked for. From inside its backward the node then reads
``recorded_output_grads`` and the state of the walk running it (``current_walk``,
``result_is_differentiated``).

Nothing else in autograd knows of this: without a live wanting context, a walk is the
plain one and pays one test of an empty set.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..tensor import Tensor
    from .graph import Node


# Weak references to the live contexts that set wants_downstream (each drops out as its
# ctx dies). While there are none, a walk knows without looking that no node it reaches
# wants it. A set, not a WeakSet: a walk tests it for emptiness, which a WeakSet does in Python.
WANTING: set[weakref.ref] = set()


def register(ctx: Node) -> None:
    """Note ``ctx`` (which set wants_downstream) for as long as it lives."""
    WANTING.add(weakref.ref(ctx, WANTING.discard))


def reaches_wanting(starts: Sequence[Node], run: AbstractSet[Node] | None) -> bool:
    """Whether a walk from ``starts`` reaches (through the nodes in ``run``, or any when
    None) a node whose ctx set ``wants_downstream``: then the walk records itself."""
    if not WANTING:
        return False
    seen = set(starts)
    stack = list(starts)
    while stack:
        node = stack.pop()
        if run is not None and node not in run:
            continue
        if getattr(node, "_wants_downstream", False):  # an AccumulateGrad has no ctx flags
            return True
        for edge in node._next_edges:
            if edge is not None and edge[0] not in seen:
                seen.add(edge[0])
                stack.append(edge[0])
    return False


class RunningWalk(Protocol):
    """What a backward may read of the walk running it."""

    records: bool  # the walk records the gradients it computes as functions of the graph
    create_graph: bool  # its caller asked for create_graph=True


class _Walks(threading.local):
    def __init__(self) -> None:
        self.stack: list[RunningWalk] = []  # the walks running in this thread, innermost last


running = _Walks()  # the engine pushes each walk here while it runs


def recorded_output_grads(grads: Sequence[Tensor | None]) -> list[Tensor | None]:
    """From inside a backward whose ctx set ``wants_downstream``: the gradients ``grads``
    its node's outputs received, which the walk recorded as functions of the graph (so
    they can be differentiated again with respect to the node's outputs)."""
    if not running.stack[-1].records:
        raise RuntimeError("recorded_output_grads: this walk was told not to record "
                           "(look_downstream=False)")
    return list(grads)


def current_walk() -> object:
    """The running walk (an object that identifies it while it runs)."""
    return running.stack[-1]


def result_is_differentiated() -> bool:
    """Whether the running walk's caller asked for create_graph=True."""
    return running.stack[-1].create_graph
