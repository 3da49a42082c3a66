"""The tape walk: the recorded nodes newest first, iterative, freeing as it goes.

Broadcasting and dtype promotion are undone here and nowhere else: a gradient arriving at
an input is summed back to the input's shape and cast to the input's dtype.

With ``inputs`` (autograd.grad) only the nodes on a path to an input run, as in torch; the
walk stops at the inputs.

``reference.py`` is the plain definition of this walk. It has one extension point: a walk
that reaches a node asking for its downstream (the SVD's and eigh's tie limits) keeps the
graph, and records itself for the nodes that ask, by replays or from the start
(``downstream.py``); ``look_downstream=False`` turns that off.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from heapq import heappop, heappush
from typing import TYPE_CHECKING, Any

import numpy as np

from .._broadcast import binary
from ..ops.reduce_fast import fast_sum
from . import downstream, function, quiet
from .accumulate import _accumulating, accumulate
from .context import _FREED
from .downstream import current_walk, recorded_output_grads, result_is_differentiated
from .function import is_tensor, make_tensor
from .grad_mode import _state
from .graph import AccumulateGrad, Node, required_edge, sink

if TYPE_CHECKING:
    from ..tensor import Tensor
    from .context import Context
    from .graph import WalkNode

__all__ = ["run_backward", "accumulate", "sum_to_shape",
           # the downstream protocol, re-exported where linalg imports it from
           "current_walk", "recorded_output_grads", "result_is_differentiated"]

_new = object.__new__
_np_add = np.add


def sum_to_shape(g: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum ``g`` over the axes that broadcasting added or stretched, giving ``shape``."""
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1
    )
    if not _state.enabled and g._array.dtype.kind == "f":  # nothing records: numpy alone
        # (the sum Tensor.sum takes, without its node's machinery: the same numbers)
        arr = fast_sum(g._array, axes, True) if axes else g._array
        return make_tensor(arr.reshape(shape)) if lead or axes else g
    if axes:
        g = g.sum(dim=axes, keepdim=True)
    if lead:
        g = g.reshape(shape)
    return g


def _fit(g: Tensor, shape: tuple, dtype: np.dtype, node: Node) -> Tensor:
    if g.shape != shape:
        try:
            g = sum_to_shape(g, shape)
            fits = g.shape == shape
        except Exception:
            fits = False
        if not fits:
            raise RuntimeError(
                f"{node._name} returned a gradient that cannot be summed to its input's "
                f"shape {shape}"
            )
    if g.dtype != dtype:
        if g._array.dtype.kind == "c" and dtype.kind != "c":
            g = g.real  # a real input of a complex op: dL/dx is the real part (torch's rule)
        g = g.to(dtype)
    return g


def run_backward(
    roots: Sequence[Tensor],
    grad_roots: Sequence[Tensor],
    retain_graph: bool | None,
    create_graph: bool,
    inputs: Sequence[Tensor | tuple[Node, int]] | None = None,
    look_downstream: bool = True,
) -> list[Tensor | None] | None:
    """Propagate ``grad_roots`` from ``roots``; accumulate into leaves, or return the
    gradients of ``inputs`` (Tensors, or ``(node, output_nr)`` pairs) when given.

    ``retain_graph=None`` is torch's default: keep the graph exactly when recording it.

    ``look_downstream=False``: record only as ``create_graph`` says, whatever the nodes
    want (a walk made by a node's backward, which has what it needs; see downstream.py)."""
    buffers: dict[WalkNode, list[Tensor | None]]
    if len(roots) == 1 and not create_graph:  # a loss's backward(): _seed, inlined
        root = roots[0]  # edge_of(root) without the call
        assert root.requires_grad  # (its caller checked)
        node = root.grad_fn or root._accumulator or sink(root)
        nr = root._output_nr
        buf: list[Tensor | None] = [None] * len(node._out_meta)
        buf[nr] = grad_roots[0]
        buffers, starts = {node: buf}, [node]
    else:
        buffers, starts = _seed(roots, grad_roots, create_graph)
    if inputs is None and not (retain_graph or create_graph or downstream.WANTING):
        walk = _new(_Walk)  # a loss's backward(): the class defaults are its settings
    else:
        walk = _Walk(starts, inputs, retain_graph, create_graph, look_downstream)
        if walk.optimistic:  # where a replay starts (copies: the walk empties its buffers)
            walk.seed = (starts, {n: list(b) for n, b in buffers.items()})
    try:
        results = _drive(walk, buffers, starts)
    except downstream.Restart:  # replays came to cost more than a record: one from the start
        seed = walk.seed[1]
        walk = _Walk(starts, inputs, retain_graph, create_graph, True, record=True)
        results = _drive(walk, seed, starts)
    if inputs is None:
        return None
    if walk.records and not create_graph:
        return [None if g is None else g.detach() for g in results]
    return results


def _drive(walk: _Walk, buffers: dict[WalkNode, list[Tensor | None]],
           starts: list[WalkNode]) -> list[Tensor | None]:
    """Run ``walk`` with grad mode as it records, inside the running walks; its results."""
    walks = downstream.running  # (a thread-local: each read of it costs ~50 ns)
    running = walks.stack
    # The outermost walk holds off the cyclic collector: what a walk makes (gradients, the
    # graph it records) stays alive until it ends, so collections during it rescan a growing
    # heap and free nothing (a second-order TRG pass through tied SVDs spent 3/4 of its time
    # there at 8 steps). Cycles made meanwhile are collected after it.
    hold = not running and gc.isenabled()
    if hold:
        gc.disable()
    running.append(walk)
    prev = _state.enabled
    _state.enabled = walk.records
    token = quiet.enter()  # the backward's inf and nan silently too, as torch
    try:
        walk.run(buffers, starts)
        if walk.deferred:
            walk.flush()
    except downstream.Restart:
        walk.kept = []  # the walk runs again over the graph: free none of it yet
        raise
    except BaseException:
        walk.flush()  # leaves reached before the error keep their gradients, as a plain walk's
        raise
    finally:
        quiet.leave(token)
        _state.enabled = prev
        running.pop()
        if not running:
            walks.reach = None  # the next walk may meet wanting nodes it lacks
        if hold:
            gc.enable()
        for node in walk.kept:  # what a walk that records or may replay kept to its end
            node.free()
    return walk.results


def _seed(roots: Sequence[Tensor], grad_roots: Sequence[Tensor],
          create_graph: bool) -> tuple[dict[WalkNode, list[Tensor | None]], list[WalkNode]]:
    """The gradient buffers the walk starts from (one list per node, a slot per output),
    and the roots' nodes, each once."""
    buffers: dict[WalkNode, list[Tensor | None]] = {}
    starts: list[WalkNode] = []
    for t, g in zip(roots, grad_roots):
        node, nr = required_edge(t)[:2]
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * len(node._out_meta)
            starts.append(node)
        buf[nr] = g if buf[nr] is None else _add(buf[nr], g, create_graph)
    return buffers, starts


class _Walk:
    """One backward pass: which nodes run, where it stops, what it hands back, whether it
    records itself (or may replay itself, recording: ``optimistic``). The innermost one
    running is ``downstream.running.stack[-1]``."""

    # Class-level defaults, the settings of a loss's backward() (to the leaves, recording
    # nothing, freeing as it goes), which run_backward makes without calling __init__.
    captured: dict[tuple[Node, int], int] = {}  # (node, output_nr) -> result slot; never
    results: list[Tensor | None] = []  # written through: __init__ makes fresh ones
    only: set[Node] | None = None  # the nodes whose backward runs; None: all
    targets: AbstractSet[Node] = frozenset()  # the nodes of the inputs, where the walk stops
    kept: list[Context] = []
    records = create_graph = keeps = optimistic = False
    size = 0  # an optimistic walk's: the nodes it can reach
    seed: tuple[list[WalkNode], dict[WalkNode, list[Tensor | None]]]  # and where it starts
    looks: dict[Node, list]  # and what each node's looks found (tie_sources)
    cursor: dict[Node, int]  # a replay's: how many of those each node has taken
    to_leaves = frees = True
    replaying: _Walk | None = None  # a replay: the optimistic walk it records for
    deferred: list[tuple[AccumulateGrad, Tensor]] | None = None  # an optimistic walk's adds
    # What run() reads, in one load: a default walk has no attributes of its own, and each
    # read of a class default takes CPython 3.11's full attribute lookup.
    _settings = (only, records, frees, keeps, create_graph, to_leaves, deferred)

    def __init__(self, starts: list[WalkNode], inputs: Sequence | None,
                 retain_graph: bool | None, create_graph: bool, look_downstream: bool,
                 record: bool = False) -> None:
        if inputs is not None:
            self.captured = {}
            for i, t in enumerate(inputs):
                if type(t) is tuple:
                    self.captured[t] = i
                    continue
                if not t.requires_grad:
                    raise RuntimeError(f"input {i} of autograd.grad does not require grad")
                self.captured[required_edge(t)[:2]] = i
            self.results = [None] * len(inputs)
            self.targets = {node for node, _ in self.captured}
            self.only = _leading_to(self.targets, starts)
        # the extension point: a node that wants its downstream makes the walk record, or
        # first try without (downstream.py)
        wants = hooked = False
        if not (create_graph or record) and look_downstream:
            wants, hooked, self.size = downstream.reaches_wanting(starts, self.only)
            # autograd.grad's inputs run their hooks even where off ``only`` (_arrive)
            hooked = hooked or (wants and any(n._hooks or n._retained for n in self.targets))
        self.records = create_graph or record or (wants and hooked)
        self.optimistic = wants and not hooked
        self.create_graph = create_graph
        self.to_leaves = inputs is None  # backward() fills .grad; grad() returns instead
        if retain_graph is None:
            retain_graph = create_graph
        # A recorded backward may be differentiated again within this walk, and that reaches
        # back into nodes already run; a walk that may run again needs them all: then they
        # are freed (kept) only when the walk ends.
        self.frees = not retain_graph and not (self.records and not create_graph) and not (
            self.optimistic)
        self.keeps = not retain_graph and not self.frees
        if self.keeps:
            self.kept = []
        if self.optimistic:
            self.looks = {}
            self.replayed = 0  # nodes its replays have run
            if self.to_leaves:  # it may run again: add into leaves only once it has ended
                self.deferred = []
        self._settings = (self.only, self.records, self.frees, self.keeps, self.create_graph,
                          self.to_leaves, self.deferred)

    def flush(self) -> None:
        """Add what an optimistic walk held back into the leaves, once it has ended."""
        deferred = self.deferred
        while deferred:
            node, g = deferred.pop()
            accumulate(node._leaf(), g, False)

    def replay(self, node: Node) -> list[Tensor | None]:
        """For a node of this optimistic walk that asks for its record: the walk again from
        its start to ``node``'s outputs, recording (the graph it kept), and the gradients
        there as functions of the graph. The nodes between were run already: those that
        looked take what they found then (``looks``), so a replay never looks again.

        Replays that would run more nodes in all than the graph has (many asks, far from
        the start) cost more than recording the walk: then ``Restart``, and at once for a
        replay of more than half of it when a wanting node below may ask too (a second
        such replay would; a second pass meets its SVDs after the whole recorded first
        pass). A lone ask replays: a restart would record, and keep, the walk below it
        too. So a walk's replays never record more than the graph once."""
        starts, seed = self.seed
        sub = _Walk(starts, [(node, i) for i in range(len(node._out_meta))], True, False,
                    False, record=True)
        assert sub.only is not None  # a walk given inputs runs the nodes leading to them
        if self.replayed + len(sub.only) > self.size or (
                2 * len(sub.only) > self.size and downstream.wanting_below(node)):
            raise downstream.Restart
        self.replayed += len(sub.only)
        sub.replaying, sub.cursor = self, {}
        return _drive(sub, {n: list(b) for n, b in seed.items()}, starts)

    def run(self, buffers: dict[WalkNode, list[Tensor | None]], starts: list[WalkNode]) -> None:
        """Newest node first (edges lead only to older nodes): when a node comes off the
        heap, every node that can send it a gradient has run, so its buffer is complete.
        A node that no gradient reached never runs.

        ``reference.backward`` is the plain definition of this loop, and
        tests/test_reference_engine.py holds the two to the same gradients. It is kept flat
        on purpose: a helper call per edge (adding into a buffer, scheduling the child)
        costs a chain's backward ~6%."""
        only, records, frees, keeps, create_graph, to_leaves, deferred = self._settings
        tensor = function.tensor_class
        heap: list[tuple[int, WalkNode]] = []  # (node._order, node): orders are unique
        # While a single node waits (along a chain, the usual case) it waits in lone, not in
        # the heap: it is the newest of one.
        lone = starts[0] if len(starts) == 1 else None
        if lone is None:
            for n in starts:
                heappush(heap, (n._order, n))
        while lone is not None or heap:
            if lone is not None:
                node, lone = lone, None
            else:
                node = heappop(heap)[1]
            grads = buffers.pop(node)
            # hooks, retain_grad, and autograd.grad's inputs and the nodes off its paths
            if (only is not None or node._hooks or node._retained) and not self._arrive(
                    node, grads):
                continue
            if type(node) is AccumulateGrad:
                if to_leaves and grads[0] is not None:
                    # what the last node run left in these names would look like a holder
                    # of the gradient to accumulate's count of references: drop it
                    g = arr = in_grads = None
                    if deferred is not None:
                        deferred.append((node, grads[0]))
                    else:
                        accumulate(node._leaf(), grads[0], create_graph)
                continue
            # The backward call, written out (a helper's call per node cost a tiny graph's
            # backward ~4%); a Function's node is its own ctx.
            if len(grads) == 1:
                in_grads = node._fn.backward(node, grads[0])
            else:
                in_grads = node._fn.backward(node, *_materialized(node, grads))
            if type(in_grads) is not tuple:
                in_grads = (in_grads,)
            if len(in_grads) != len(node._next_edges):  # not zip(strict=True): twice as slow
                raise RuntimeError(f"{node._name} returned {len(in_grads)} gradients, "
                                   f"expected {len(node._next_edges)}")
            if frees:
                node._saved = _FREED  # node.free() without the call
            elif keeps:
                self.kept.append(node)
            for edge, g in zip(node._next_edges, in_grads):
                if edge is None or g is None:
                    continue
                # g into the child's buffer, summed and cast to the input's shape and dtype
                child, nr, shape, dtype = edge
                if type(g) is not tensor:
                    g = _as_tensor(g)
                arr = g._array
                # dtype identity first: comparing dtypes by value is slow
                if arr.shape != shape or (arr.dtype is not dtype and arr.dtype != dtype):
                    g = _fit(g, shape, dtype, node)
                buf = buffers.get(child)
                if buf is not None:  # the child waits already: add g in
                    old = buf[nr]
                    buf[nr] = g if old is None else _add(old, g, records)
                    continue
                n_out = len(child._out_meta)
                buffers[child] = [g] if n_out == 1 else _slot(n_out, nr, g)
                if lone is None and not heap:
                    lone = child
                else:
                    if lone is not None:
                        heappush(heap, (lone._order, lone))
                        lone = None
                    heappush(heap, (child._order, child))

    def _arrive(self, node: WalkNode, grads: list[Tensor | None]) -> bool:
        """The gradients of ``node``'s outputs are complete: hooks see (and may replace)
        them, retain_grad() keeps them, and autograd.grad takes those of its inputs.
        Whether the node runs: autograd.grad stops at its inputs (after their hooks), and
        skips the nodes off every path to one."""
        runs = self.only is None or node in self.only
        if not runs and node not in self.targets:
            return False
        if node._hooks or node._retained:
            _run_hooks(node, grads)
        for nr, g in enumerate(grads):
            slot = self.captured.get((node, nr))
            if slot is not None and g is not None:
                self.results[slot] = g
        return runs


def _as_tensor(g: Any) -> Tensor:
    """A gradient a backward returned as a Tensor subclass, an ndarray or a number."""
    return g if isinstance(g, function.tensor_class) else function.tensor_class(g)


def _leading_to(targets: AbstractSet[Node], starts: list[WalkNode]) -> set[Node]:
    """The nodes with a path to one of ``targets``: the only ones autograd.grad must run.
    Inside a walk (a look's), from what the walks before it found (``downstream.Reach``)."""
    if downstream.running.stack:
        reach = downstream.running.reach
        if reach is None:
            reach = downstream.running.reach = downstream.Reach()
        mask = reach.mask(targets)
        if mask is not None:
            return reach.leading_to(mask, starts)
    return _scan_leading_to(targets, starts)


def _scan_leading_to(targets: AbstractSet[Node], starts: list[WalkNode]) -> set[Node]:
    """``_leading_to`` by one scan of every node reachable from ``starts``."""
    leads: dict[Node, bool] = {}
    for s in starts:
        todo = [s]
        while todo:
            n = todo[-1]
            if n in leads:
                todo.pop()
                continue
            children = [e[0] for e in n._next_edges if e is not None]
            fresh = [c for c in children if c not in leads]
            if fresh:
                todo.extend(fresh)
                continue
            todo.pop()
            leads[n] = any(c in targets or leads[c] for c in children) or getattr(
                n._fn, "runs_when_reached", False)
    return {n for n, yes in leads.items() if yes}


def _add(old: Tensor, g: Tensor, create_graph: bool) -> Tensor:
    if create_graph:
        return old + g
    # Nothing records here: skip the op machinery (a hot path). make_tensor turns the
    # scalar numpy returns for the sum of two 0-d arrays back into an array.
    x, y = old._array, g._array
    if 0 in x.strides or 0 in y.strides:  # a broadcast view (a sum's gradient): long loops
        return make_tensor(binary(_np_add, x, y))
    return make_tensor(x + y)


def _slot(n_out: int, nr: int, g: Tensor) -> list[Tensor | None]:
    """A fresh buffer for a node of ``n_out`` outputs, holding ``g`` for output ``nr``."""
    buf: list[Tensor | None] = [None] * n_out
    buf[nr] = g
    return buf


def _run_hooks(node: Node, grads: list) -> None:
    if node._hooks:
        for nr, hooks in node._hooks.items():
            for hook in hooks:
                if grads[nr] is not None:
                    out = hook(grads[nr])
                    if out is not None:
                        grads[nr] = _hook_result(hook, grads[nr], out)
    if node._retained:
        for nr, ref in node._retained.items():
            t = ref()
            if t is not None and grads[nr] is not None:
                g = grads[nr]
                with _accumulating:
                    t.grad = g.detach() if t.grad is None else (t.grad + g).detach()


def _hook_result(hook: Any, g: Tensor, out: Any) -> Tensor:
    """A hook may replace a gradient, but not by one of another type or shape (torch)."""
    name = getattr(hook, "__name__", type(hook).__name__)
    if not is_tensor(out):
        raise TypeError(f"expected Tensor, but hook '{name}' returned '{type(out).__name__}'")
    if out.shape != g.shape:
        raise RuntimeError(f"hook '{name}' has changed the size of value (was {tuple(g.shape)} "
                           f"got {tuple(out.shape)})")
    if out.dtype != g.dtype:
        raise RuntimeError(f"hook '{name}' has changed the type of value (was {g.dtype} got "
                           f"{out.dtype}); return grad.to({g.dtype}) instead")
    return out


def _materialized(node: Context, grads: list[Tensor | None]) -> list[Tensor | None]:
    """The gradients for a backward of several outputs: zeros for those that got none,
    unless its ctx asked for None (``set_materialize_grads(False)``)."""
    if node.materialize_grads and any(g is None for g in grads):
        return [make_tensor(np.zeros(*meta)) if g is None else g
                for g, meta in zip(grads, node._out_meta)]
    return grads
