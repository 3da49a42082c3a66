"""The recorded graph: a Node per recorded call, an AccumulateGrad sink per leaf, and the
Edges from a node to where its inputs' gradients go."""

from __future__ import annotations

import itertools
import weakref
from typing import TYPE_CHECKING, TypeAlias, final

if TYPE_CHECKING:
    from ..tensor import Tensor
    from .context import Context
    from .function import Function


class Node:
    """A recorded call: the Function's backward, and edges to the inputs' nodes.

    For a Function's call the node is its ctx too (``function.Context`` subclasses Node),
    as in torch, where forward's ctx is the output's grad_fn: one object per recorded call
    instead of two. Hence the node's own fields have private names, so that an attribute a
    forward sets on ctx (``ctx.order``, ``ctx.hooks``) cannot clobber them.

    ``_next_edges[i]`` is the ``Edge`` to input i, or None when that input needs no
    gradient; its shape and dtype let the engine undo broadcasting and casting.
    ``_out_meta`` is (shape, dtype) per output, to materialise the missing gradients of a
    node of several outputs; a node of one output runs only when its gradient arrived, so
    its ``_out_meta`` is ``ONE_OUTPUT`` (no shape to read off, no tuples to build per op).

    ``_order`` falls with each node made: a node's edges lead only to nodes made before it,
    so the engine runs nodes by ``_order`` (as torch's by sequence number) and never has to
    count a node's incoming edges first.
    """

    # Class-level defaults; _record sets the fields of a recorded call (Function.apply
    # writes them out for a one-output op, where the call would cost ~5%).
    _fn: type[Function] | None = None
    _next_edges: tuple = ()
    _hooks: dict[int, list] | None = None  # output_nr -> hooks on that output's grad
    _retained: dict[int, weakref.ref] | None = None  # output_nr -> tensor.retain_grad()
    _order: int
    _out_meta: tuple
    _reach: tuple | None = None  # (its Reach's token, the bits it found): downstream.Reach

    def _record(self, next_edges: tuple, out_meta: tuple) -> None:
        self._order = _next_order()
        self._next_edges = next_edges
        self._out_meta = out_meta
        # Set on the node, though the class defaults say the same: CPython 3.11 reads an
        # instance's own attribute fast, a class default through the full lookup, and the
        # walk reads these at every node.
        self._hooks = self._retained = None

    @property
    def _name(self) -> str:
        return "AccumulateGrad" if self._fn is None else f"{self._fn.__name__}Backward"

    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"<{self._name}>"


ONE_OUTPUT = (None,)  # the _out_meta of a node of one output: it never materialises zeros

# Falling numbers, so that the newest node comes first out of a min-heap. next() on a count
# is atomic under the GIL, so threads recording at once still get distinct numbers.
_next_order = itertools.count(0, -1).__next__


@final
class AccumulateGrad(Node):
    """The sink of a leaf that requires grad: the engine adds into ``leaf.grad``.

    The leaf holds its sink (and the hooks on it) strongly; the sink holds the leaf weakly,
    so the pair is no cycle. A leaf freed while a graph still reaches its sink gets nothing:
    no one is left to read that gradient."""

    def __init__(self, leaf: Tensor) -> None:
        self._record((), ONE_OUTPUT)
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


def required_edge(t: Tensor) -> Edge:
    """``edge_of`` a tensor known to require grad (a root of a walk, or an input of
    autograd.grad, which the callers checked)."""
    edge = edge_of(t)
    assert edge is not None
    return edge


def sink(leaf: Tensor) -> AccumulateGrad:
    """The AccumulateGrad of a leaf that requires grad, made on first use."""
    leaf._accumulator = node = AccumulateGrad(leaf)
    return node


if TYPE_CHECKING:
    # What the walk meets: a recorded call's ctx, or a leaf's sink (the walk tells them
    # apart by type, hence AccumulateGrad is final).
    WalkNode: TypeAlias = Context | AccumulateGrad
