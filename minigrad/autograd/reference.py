"""The readable definition of autograd: a plain ``apply`` and a plain backward walk.

``Function.apply`` and the engine's walk (``engine.run_backward``) are this module made
fast: they must give the same gradients, and ``tests/test_reference_engine.py`` runs the
op table through both to hold them to it. Read this first; read the optimised versions
for what they add: hooks and ``retain_grad``, ``autograd.grad`` stopping at its inputs,
freeing the graph as the walk goes, in-place accumulation into ``.grad``, threads, and
the downstream extension (``downstream.py``).

Nothing here is on a hot path and nothing is inlined: it is micrograd's ``backward``
with several outputs per node, broadcasting undone and saved tensors freed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from . import function, quiet
from .engine import sum_to_shape
from .function import Context, _wrap, is_tensor
from .grad_mode import is_grad_enabled, no_grad, set_grad_enabled
from .graph import AccumulateGrad, Edge, Node, edge_of, required_edge

if TYPE_CHECKING:
    from ..tensor import Tensor


def apply(cls: type[function.Function], *args: Any) -> Any:
    """Run ``cls.forward`` on ``args`` without recording inside it; when grad mode is on
    and an input requires grad, record the call as a node (its ctx) that the float
    outputs not marked non-differentiable point to.

    >>> from minigrad.autograd import reference
    >>> from minigrad.ops.arith import Mul
    >>> x = mg.tensor([1.0, 2.0], requires_grad=True)
    >>> reference.apply(Mul, x, 3.0)
    tensor([3., 6.], grad_fn=<MulBackward>)
    """
    records = is_grad_enabled()
    edges = tuple([edge_of(a) if records and is_tensor(a) else None for a in args])
    ctx = Context(tuple([e is not None for e in edges]), cls)
    token = quiet.enter()
    try:
        with no_grad():
            raw = cls.forward(ctx, *args)
    except ValueError as e:
        if "broadcast" not in str(e):
            raise
        raise function.not_broadcastable(cls, args) from e
    finally:
        quiet.leave(token)
    single = type(raw) is not tuple
    raws = (raw,) if single else raw
    outs = tuple([_wrap(r) for r in raws])
    if any(e is not None for e in edges):
        ctx._record(edges, tuple([(o._array.shape, o._array.dtype) for o in outs]))
        marked = [id(t._array if is_tensor(t) else t) for t in ctx._non_diff]
        if single and marked:  # one output: any mark makes it non-differentiable
            marked = [id(outs[0]._array)]
        for nr, o in enumerate(outs):
            if o._array.dtype.kind in "fc" and id(o._array) not in marked:
                o.grad_fn, o._output_nr, o.requires_grad = ctx, nr, True
        if ctx._saved:
            ctx._pack_outputs(raws, outs)
    return outs[0] if single else outs


def backward(roots: Sequence[Tensor], grad_roots: Sequence[Tensor],
             inputs: Sequence[Tensor] | None = None, retain_graph: bool | None = None,
             create_graph: bool = False) -> list[Tensor | None] | None:
    """Propagate ``grad_roots`` from ``roots`` through every node, consumers before the
    nodes they consume; add into the leaves' ``.grad``, or return the gradients of
    ``inputs`` (their ``.grad`` untouched) when given.

    >>> from minigrad.autograd import reference
    >>> x = mg.tensor([1.0, 2.0], requires_grad=True)
    >>> reference.backward([(x * x).sum()], [mg.tensor(1.0)])
    >>> x.grad
    tensor([2., 4.])
    """
    if retain_graph is None:
        retain_graph = create_graph
    grads: dict[Node, list] = {}  # node -> the gradient of each of its outputs, summed
    for t, g in zip(roots, grad_roots):
        _send(grads, required_edge(t), g)
    token = quiet.enter()
    try:
        with set_grad_enabled(create_graph):
            for node in _consumers_first([required_edge(t)[0] for t in roots]):
                out_grads = grads.get(node)
                if out_grads is None:  # no gradient reached it: it does not run
                    continue
                if type(node) is AccumulateGrad:
                    leaf = node.leaf
                    if inputs is None and leaf is not None:
                        g = out_grads[0] if create_graph else out_grads[0].detach()
                        leaf.grad = g if leaf.grad is None else leaf.grad + g
                    continue
                assert isinstance(node, Context)
                if len(out_grads) > 1 and node.materialize_grads:
                    out_grads = [function.make_tensor(np.zeros(*meta)) if g is None else g
                                 for g, meta in zip(out_grads, node._out_meta)]
                in_grads = node._fn.backward(node, *out_grads)
                if type(in_grads) is not tuple:
                    in_grads = (in_grads,)
                if len(in_grads) != len(node._next_edges):
                    raise RuntimeError(f"{node._name} returned {len(in_grads)} gradients, "
                                       f"expected {len(node._next_edges)}")
                if not retain_graph:
                    node.free()
                for edge, g in zip(node._next_edges, in_grads):
                    if edge is not None and g is not None:
                        _send(grads, edge, g)
    finally:
        quiet.leave(token)
    if inputs is None:
        return None
    return [grads.get(e[0], [None] * (e[1] + 1))[e[1]] for e in map(required_edge, inputs)]


def _send(grads: dict[Node, list], edge: Edge, g: Any) -> None:
    """Add ``g`` into the gradient of output ``nr`` of ``node``, summed back to that
    input's shape (undoing broadcasting) and cast to its dtype."""
    node, nr, shape, dtype = edge
    g = g if is_tensor(g) else function.tensor_class(g)
    if g.shape != shape:
        g = sum_to_shape(g, shape)
    if g.dtype != dtype:
        g = g.to(dtype)
    buf = grads.setdefault(node, [None] * len(node._out_meta))
    buf[nr] = g if buf[nr] is None else buf[nr] + g


def _consumers_first(starts: list[Node]) -> list[Node]:
    """Every node reachable from ``starts``, each after all the nodes that consume it (a
    depth-first post-order, reversed), so its gradient is complete when its turn comes."""
    order: list[Node] = []
    seen: set[Node] = set()
    stack: list[tuple[Node, bool]] = [(s, False) for s in starts]
    while stack:
        node, finished = stack.pop()
        if finished:
            order.append(node)
        elif node not in seen:
            seen.add(node)
            stack.append((node, True))
            stack.extend((e[0], False) for e in node._next_edges if e is not None)
    return order[::-1]
