"""The tape walk: Kahn's algorithm over the recorded nodes, iterative, freeing as it goes.

Broadcasting and dtype promotion are undone here and nowhere else: a gradient arriving at
an input is summed back to the input's shape and cast to the input's dtype.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .function import _FREED, AccumulateGrad, Node, edge_of
from .grad_mode import _state

if TYPE_CHECKING:
    from ..tensor import Tensor


def sum_to_shape(g: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum ``g`` over the axes that broadcasting added or stretched, giving ``shape``."""
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1
    )
    if axes:
        g = g.sum(dim=axes, keepdim=True)
    if lead:
        g = g.reshape(shape)
    return g


def _fit(g: Tensor, shape: tuple, dtype, node: Node) -> Tensor:
    if g.shape != shape:
        try:
            g = sum_to_shape(g, shape)
        except Exception:
            g = None
        if g is None or g.shape != shape:
            raise RuntimeError(
                f"{node.name()} returned a gradient that cannot be summed to its input's "
                f"shape {shape}"
            )
    if g.dtype != dtype:
        g = g.to(dtype)
    return g


def run_backward(
    roots: Sequence[Tensor],
    grad_roots: Sequence[Tensor],
    retain_graph: bool,
    create_graph: bool,
    inputs: Sequence[Tensor] | None = None,
) -> list[Tensor | None] | None:
    """Propagate ``grad_roots`` from ``roots``; accumulate into leaves, or return the
    gradients of ``inputs`` when given (autograd.grad)."""
    buffers: dict[Node, list] = {}
    deps: dict[Node, int] = {}
    starts = []
    for t, g in zip(roots, grad_roots):
        node, nr = edge_of(t)[:2]
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * len(node.out_meta)
            starts.append(node)
            deps[node] = 0
        buf[nr] = g if buf[nr] is None else buf[nr] + g

    # Count the edges entering each node of the part of the graph we will walk.
    stack = list(starts)
    while stack:
        for edge in stack.pop().next_edges:
            if edge is not None:
                child = edge[0]
                n = deps.get(child)
                if n is None:
                    deps[child] = 1
                    stack.append(child)
                else:
                    deps[child] = n + 1

    captured: dict[tuple[Node, int], int] = {}
    results: list[Tensor | None] = []
    if inputs is not None:
        for i, t in enumerate(inputs):
            if not t.requires_grad:
                raise RuntimeError(f"input {i} of autograd.grad does not require grad")
            captured[edge_of(t)[:2]] = i
        results = [None] * len(inputs)

    ready = [n for n in starts if deps[n] == 0]
    prev = _state.enabled
    _state.enabled = create_graph
    try:
        while ready:
            node = ready.pop()
            grads = buffers.pop(node, None)
            if grads is not None:
                if node.hooks or node.retained:
                    _run_hooks(node, grads)
                if captured:
                    _capture(node, grads, captured, results)
            if type(node) is AccumulateGrad:
                if grads is not None and inputs is None and grads[0] is not None:
                    accumulate(node.leaf, grads[0], create_graph)
                continue
            if grads is None:  # nothing reached this node: its inputs get nothing from it
                in_grads = _NO_GRADS
            else:
                in_grads = _call(node, grads)
                if not retain_graph:
                    node.ctx._saved = _FREED
            for edge, g in zip(node.next_edges, in_grads):
                if edge is None:
                    continue
                child = edge[0]
                if g is not None:
                    if g.data.shape != edge[2] or g.data.dtype != edge[3]:
                        g = _fit(g, edge[2], edge[3], node)
                    buf = buffers.get(child)
                    if buf is None:
                        buf = buffers[child] = [None] * len(child.out_meta)
                    nr = edge[1]
                    old = buf[nr]
                    if old is None:
                        buf[nr] = g
                    elif create_graph:
                        buf[nr] = old + g
                    else:  # nothing records here: skip the op machinery (a hot path)
                        buf[nr] = _Tensor._make(old.data + g.data)
                left = deps[child] - 1
                deps[child] = left
                if left == 0:
                    ready.append(child)
    finally:
        _state.enabled = prev
    return results if inputs is not None else None


_NO_GRADS = itertools.repeat(None)  # endless Nones, zipped against a node's edges


def _capture(node: Node, grads: list, captured: dict, results: list) -> None:
    for nr, g in enumerate(grads):
        slot = captured.get((node, nr))
        if slot is not None and g is not None:
            results[slot] = g


def _run_hooks(node: Node, grads: list) -> None:
    if node.hooks:
        for nr, hooks in node.hooks.items():
            for hook in hooks:
                if grads[nr] is not None:
                    out = hook(grads[nr])
                    if out is not None:
                        grads[nr] = _hook_result(hook, grads[nr], out)
    if node.retained:
        for nr, ref in node.retained.items():
            t = ref()
            if t is not None and grads[nr] is not None:
                g = grads[nr]
                t.grad = g.detach() if t.grad is None else (t.grad + g).detach()


def _hook_result(hook: Any, g: Tensor, out: Any) -> Tensor:
    """A hook may replace a gradient, but not by one of another type or shape (torch)."""
    name = getattr(hook, "__name__", type(hook).__name__)
    if not isinstance(out, _Tensor):
        raise TypeError(f"expected Tensor, but hook '{name}' returned '{type(out).__name__}'")
    if out.shape != g.shape:
        raise RuntimeError(f"hook '{name}' has changed the size of value (was {tuple(g.shape)} "
                           f"got {tuple(out.shape)})")
    if out.dtype != g.dtype:
        raise RuntimeError(f"hook '{name}' has changed the type of value (was {g.dtype} got "
                           f"{out.dtype}); return grad.to({g.dtype}) instead")
    return out


def _call(node: Node, grads: list) -> tuple:
    ctx = node.ctx
    if len(grads) > 1 and ctx.materialize_grads and any(g is None for g in grads):
        grads = [_Tensor._make(np.zeros(*meta)) if g is None else g
                 for g, meta in zip(grads, node.out_meta)]
    out = node.fn.backward(ctx, *grads)
    if type(out) is not tuple:
        out = (out,)
    if len(out) != len(node.next_edges):
        raise RuntimeError(
            f"{node.name()} returned {len(out)} gradients, expected {len(node.next_edges)}"
        )
    for g in out:
        if g is not None and type(g) is not _Tensor:
            return tuple(g if g is None or isinstance(g, _Tensor) else _Tensor(g) for g in out)
    return out


def accumulate(leaf: Tensor, g: Tensor, create_graph: bool) -> None:
    """Add ``g`` into ``leaf.grad``: in place when that is safe, as torch does."""
    if leaf is None:  # the leaf was freed while its graph lived on: no one can read its grad
        return
    old = leaf.grad
    if old is None:
        # Always a fresh copy, as torch's: g may be a read-only broadcast view or the very
        # tensor another leaf receives. With a graph to keep, the copy is recorded (Clone).
        keep = create_graph and g.requires_grad
        leaf.grad = g.clone() if keep else _Tensor._make(np.array(g.data))
    elif create_graph or old.requires_grad:
        leaf.grad = old + g  # out of place: old may be part of a graph someone will use
    else:
        np.add(old.data, g.data, out=old.data)


_Tensor: Any = None  # set by tensor.py
