"""The recorded graph: a Node per recorded call, an AccumulateGrad sink per leaf, and the
Edges from a node to where its inputs' gradients go."""

from __future__ import annotations

import itertools
import weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..tensor import Tensor
    from .function import Context, Function


class Node:
    """A recorded call: the Function's backward, its ctx, and edges to the inputs' nodes.

    ``next_edges[i]`` is the ``Edge`` to input i, or None when that input needs no
    gradient; its shape and dtype let the engine undo broadcasting and casting.

    ``order`` falls with each node made: a node's edges lead only to nodes made before it,
    so the engine runs nodes by ``order`` (as torch's by sequence number) and never has to
    count a node's incoming edges first.
    """

    __slots__ = ("fn", "ctx", "next_edges", "out_meta", "hooks", "retained", "order",
                 "__weakref__")

    def __init__(self, fn: type[Function] | None, ctx: Context | None, next_edges: tuple,
                 out_meta: tuple) -> None:
        # Function.apply inlines this for the one-output op: keep the two in step.
        self.order = _next_order()
        self.fn = fn
        self.ctx = ctx
        self.next_edges = next_edges
        self.out_meta = out_meta  # (shape, dtype) per output, to materialise missing grads
        self.hooks: dict[int, list] | None = None  # output_nr -> hooks on that output's grad
        self.retained: dict[int, weakref.ref] | None = None  # output_nr -> tensor.retain_grad()

    def name(self) -> str:
        return f"{self.fn.__name__}Backward" if self.fn is not None else "AccumulateGrad"

    def __repr__(self) -> str:
        return f"<{self.name()}>"


# Falling numbers, so that the newest node comes first out of a min-heap. next() on a count
# is atomic under the GIL, so threads recording at once still get distinct numbers.
_next_order = itertools.count(0, -1).__next__


class AccumulateGrad(Node):
    """The sink of a leaf that requires grad: the engine adds into ``leaf.grad``.

    The leaf holds its sink (and the hooks on it) strongly; the sink holds the leaf weakly,
    so the pair is no cycle. A leaf freed while a graph still reaches its sink gets nothing:
    no one is left to read that gradient."""

    __slots__ = ("_leaf",)

    def __init__(self, leaf: Tensor) -> None:
        super().__init__(None, None, (), ((leaf._array.shape, leaf._array.dtype),))
        self._leaf = weakref.ref(leaf)

    @property
    def leaf(self) -> Tensor | None:
        return self._leaf()


# Where a gradient goes: into output ``output_nr`` of ``node``, once summed to ``shape`` and
# cast to ``dtype`` (the input's, which broadcasting and promotion may have changed). A
# plain tuple, read by unpacking: one is made for every input of every recorded op, and a
# NamedTuple takes 4x as long to build through tuple.__new__, 9x through its constructor.
Edge = tuple  # (node: Node, output_nr: int, shape: tuple[int, ...], dtype: np.dtype)


def edge_of(t: Tensor) -> Edge | None:
    """The edge to where ``t``'s gradient goes, or None when it needs none."""
    if not t.requires_grad:
        return None
    arr = t._array
    return (t.grad_fn or t._accumulator or sink(t), t._output_nr, arr.shape, arr.dtype)


def sink(leaf: Tensor) -> AccumulateGrad:
    """The AccumulateGrad of a leaf that requires grad, made on first use."""
    leaf._accumulator = node = AccumulateGrad(leaf)
    return node
