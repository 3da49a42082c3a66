"""Activation checkpointing (torch.utils.checkpoint): keep a segment's inputs, not its
intermediate results, and run the segment again in the backward to get them back.

The segment runs once while recording, so that its graph shows where gradients leave it:
the leaves (parameters read by closure included) and the nodes made before it. That graph
is then cut down to one node whose edges are those exits; the intermediate results it saved
die with it. The node's backward runs the segment again (the random state as it was) and
walks the fresh graph to the same exits, recording when the outer walk records, so
create_graph (double backward) and autograd.grad work as in torch's non-reentrant variant.
A segment holding a node that may look at the loss past it in its backward (an SVD or eigh
near a tie, autograd/downstream.py) keeps its graph: a recomputed segment's walk starts
from constant gradients, where such a look would see no second derivatives beyond it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from typing import Any

from ..autograd.engine import run_backward
from ..autograd.function import Context, Function, is_tensor
from ..autograd.grad_mode import _state, enable_grad
from ..autograd.graph import ONE_OUTPUT, AccumulateGrad, _next_order
from ..creation import default_generator

__all__ = ["checkpoint", "checkpoint_sequential"]


def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None,
               **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``, saving none of its intermediate results for backward:
    the backward recomputes them (memory O(inputs) instead of O(activations)).

    ``preserve_rng_state=True`` (a keyword, as in torch) replays the random draws (dropout)
    of the first run. Both ``use_reentrant`` variants run the same way here, as torch's
    non-reentrant one (gradients of closure parameters, ``autograd.grad``, double
    backward); ``use_reentrant=True`` keeps torch's refusal of keyword arguments, and
    leaving it unset warns, as torch does.

    >>> x = mg.tensor([1.0, 2.0], requires_grad=True)
    >>> y = mg.utils.checkpoint.checkpoint(lambda t: (t * t).sin(), x, use_reentrant=False)
    >>> y.sum().backward(); x.grad.tolist() == (2 * x * (x * x).cos()).tolist()
    True
    """
    if use_reentrant is None:
        warnings.warn("minigrad.utils.checkpoint: the use_reentrant parameter should be passed "
                      "explicitly (as torch asks); use_reentrant=False is recommended",
                      stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if not _state.enabled:
        return function(*args, **kwargs)
    rng_state = default_generator.rng.bit_generator.state if preserve else None
    start = _next_order()
    out = function(*args, **kwargs)
    end = _next_order()
    outs = [t for t in _tensors(out) if t.grad_fn is not None and end < t.grad_fn._order < start]
    if not outs:
        return out  # nothing of the segment's graph reaches its outputs: nothing to drop
    exits, wants = _exits([t.grad_fn for t in outs], start, end)
    if wants:
        # a node inside (an SVD or eigh near a tie) may look at the loss past the segment
        # in its backward: that needs this graph itself, so the segment keeps it
        return out
    ctx = Context((True,) * len(exits), _Recompute)
    ctx.save_for_backward(*_tensors((args, kwargs)))
    ctx.rerun, ctx.rng_state = (lambda: function(*args, **kwargs)), rng_state
    ctx.picked = [i for i, t in enumerate(_tensors(out)) if any(t is o for o in outs)]
    ctx._record(tuple(exits), ONE_OUTPUT if len(outs) == 1 else
                tuple([(t.shape, t.dtype) for t in outs]))
    for nr, t in enumerate(outs):
        if t._base is not None and not any(t._base is o for o in outs):
            t._base = t._replay = None  # a view of an intermediate would keep it alive
        t.grad_fn, t._output_nr = ctx, nr
    return out


class _Recompute(Function):
    """The node that stands for a checkpointed segment (``checkpoint`` records it)."""

    @staticmethod
    def backward(ctx: Context, *grads: Any) -> tuple:
        ctx.saved_tensors  # noqa: B018  (raises if the graph was freed or an input changed)
        rng = default_generator.rng.bit_generator
        now = rng.state
        if ctx.rng_state is not None:
            rng.state = ctx.rng_state
        try:
            with enable_grad():
                out = ctx.rerun()
        finally:
            rng.state = now
        every = list(_tensors(out))
        outs = [every[i] for i in ctx.picked] if len(every) > max(ctx.picked) else []
        if len(outs) != len(grads) or any(
                not o.requires_grad or o.shape != g.shape for o, g in zip(outs, grads)):
            raise RuntimeError("torch.utils.checkpoint: recomputed outputs differ from the "
                               "first run's (number, shapes or requires_grad): the "
                               "checkpointed function must be deterministic")
        targets = [edge[:2] for edge in ctx._next_edges]
        # The outer walk runs the hooks (and retain_grad) of the exits when it gets there:
        # the inner one, which stops at them, must not run them first.
        held = [(n, n._hooks, n._retained) for n in {node for node, _ in targets}]
        for n, _, _ in held:
            n._hooks = n._retained = None
        try:
            return tuple(run_backward(outs, list(grads), None, _state.enabled, inputs=targets))
        finally:
            for n, hooks, retained in held:
                n._hooks, n._retained = hooks, retained


def _tensors(obj: Any) -> Iterable:
    """The Tensors in ``obj``, depth first through tuples, lists and dict values."""
    if is_tensor(obj):
        yield obj
    elif isinstance(obj, (tuple, list)):
        for o in obj:
            yield from _tensors(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _tensors(o)


def _exits(nodes: list, start: int, end: int) -> tuple[list[tuple], bool]:
    """The edges by which the graph recorded between orders ``start`` and ``end`` (orders
    fall) leaves it, each once: to leaves' sinks and to nodes recorded before it."""
    seen, todo, exits, found = set(nodes), list(nodes), [], set()
    wants = False
    while todo:
        node = todo.pop()
        wants = wants or getattr(node, "_wants_downstream", False)
        for edge in node._next_edges:
            if edge is None:
                continue
            child = edge[0]
            inside = type(child) is not AccumulateGrad and end < child._order < start
            if inside:
                if child not in seen:
                    seen.add(child)
                    todo.append(child)
            elif (child, edge[1]) not in found:
                found.add((child, edge[1]))
                exits.append(edge)
    return exits, wants


def checkpoint_sequential(functions: Any, segments: int, input: Any,
                          use_reentrant: bool | None = None, **kwargs: Any) -> Any:
    """Run ``functions`` (an nn.Sequential or a list of modules) on ``input`` in
    ``segments`` chunks, checkpointing all but the last (torch's split).

    >>> net = nn.Sequential(nn.Linear(2, 4), nn.Tanh(), nn.Linear(4, 1))
    >>> y = mg.utils.checkpoint.checkpoint_sequential(net, 2, mg.ones(3, 2),
    ...                                                use_reentrant=False)
    >>> y.shape
    (3, 1)
    """
    if use_reentrant is None:
        warnings.warn("minigrad.utils.checkpoint.checkpoint_sequential: the use_reentrant "
                      "parameter should be passed explicitly (as torch asks)", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if not isinstance(functions, (list, tuple)):
        functions = list(functions.children())

    def run(lo: int, hi: int) -> Callable:
        def forward(x: Any) -> Any:
            for f in functions[lo:hi]:
                x = f(x)
            return x
        return forward

    size = len(functions) // segments
    last = size * (segments - 1)  # the last segment runs plainly, as torch's
    for lo in range(0, last, size):
        input = checkpoint(run(lo, lo + size), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run(last, len(functions))(input)
