"""The walk's one extension point: a backward that differentiates its own incoming gradients.

Near a tie, the SVD's and eigh's backward (linalg/_tie_limits.py, linalg/_eigh_ties.py)
need more than the gradients of their outputs: they differentiate those gradients again,
as functions of the graph below the node (its "downstream"). A node asks for that by
setting ``ctx.wants_downstream = True`` in forward: it may need the record, and most such
nodes turn out not to (their backward decides from first-order data). So a walk that
reaches one (``reaches_wanting``, which the engine asks once per walk) runs without
recording but keeps the graph to its end (``optimistic``). When a node's backward asks for
``recorded_output_grads``, the walk replays itself from its start to that node, recording,
and hands over that record; once the node's backward is done the record is dropped. A node
passed on the way that looked already takes what it found then (its ``looks``, kept by the
walk), so a replay runs each backward between once and never looks. A walk through hooks
or through a Function not minigrad's own (each must run once: a user's backward may have
side effects or consume its ctx, unless its Function says ``replayable = True``), or with
create_graph, records itself from the start, hands out detached results unless
create_graph was asked for, and frees nothing until it ends. From inside its
backward the node reads ``recorded_output_grads`` and the state of the walk running it
(``current_walk``, ``result_is_differentiated``).

Cost, for a graph of G nodes: a walk where no node asks costs the plain walk's time and
holds the forward graph to its end (the forward's own peak), after one O(G) scan for
wanting nodes and hooks; each node that asks costs a scan for the nodes leading to it (O(G)
for the first, then only the nodes made since and those leading to it: ``Reach``) and a
recorded walk of the part of the graph below it (at most G), one at a time in memory.
Replays that would run more than G nodes in all give way to one recorded walk from the
start (``Restart``), as does a single replay of more than G / 2 with a wanting node below
it. Along a chain of n asking nodes that is O(n G) time, never more memory than one
recorded walk.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any, Protocol

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


class Restart(BaseException):
    """An optimistic walk's replays came to cost more than recording it: the engine runs
    it again from its start, recording. (Not an Exception: no ``except Exception`` in a
    backward may swallow it.)"""


def reaches_wanting(starts: Sequence[Node],
                    run: AbstractSet[Node] | None) -> tuple[bool, bool, int]:
    """Whether a walk from ``starts`` reaches (through the nodes in ``run``, or any when
    None) a node whose ctx set ``wants_downstream``; whether it reaches hooks or retained
    gradients (then a walk run twice would run them twice); how many nodes it reaches
    (all of them when there are no hooks)."""
    if not WANTING:
        return False, False, 0
    wants = hooked = False
    seen = set(starts)
    stack = list(starts)
    while stack and not (wants and hooked):
        node = stack.pop()
        if run is not None and node not in run:
            continue
        if getattr(node, "_wants_downstream", False):  # an AccumulateGrad has no ctx flags
            wants = True
        # (a node that must not run twice: a replay or Restart would, see Function.replayable)
        if not hooked and (node._hooks or node._retained
                           or not getattr(getattr(node, "_fn", None), "replayable", True)):
            hooked = True
        for edge in node._next_edges:
            if edge is not None and edge[0] not in seen:
                seen.add(edge[0])
                stack.append(edge[0])
    return wants, hooked, len(seen)




class RunningWalk(Protocol):
    """What a backward may read of the walk running it."""

    records: bool  # the walk records the gradients it computes as functions of the graph
    create_graph: bool  # its caller asked for create_graph=True
    optimistic: bool  # it does not record, but replays itself recording for a node that asks
    replaying: Any  # a replay: the optimistic walk (a RunningWalk) it records for
    looks: dict  # an optimistic walk's: node -> what its looks found, in order
    cursor: dict  # a replay's: node -> how many of those it has taken

    def replay(self, node: Node) -> list[Tensor | None]: ...


class _Walks(threading.local):
    def __init__(self) -> None:
        self.stack: list[RunningWalk] = []  # the walks running in this thread, innermost last
        self.reach: Reach | None = None  # while they run: what their nested walks scanned


running = _Walks()  # the engine pushes each walk here while it runs


_RUNS_WHEN_REACHED = 1  # the bit of a node that runs whenever a walk reaches it


class Reach:
    """Which wanting nodes each node has a path to, for the walks that backwards start
    inside a walk (the looks' Hessian-vector products and the replays): each is told to
    run only the nodes leading to its inputs, which are wanting nodes (``engine._leading_to``).

    Scanning the whole graph below each look for those costs O(G) a look, however few
    nodes lead to it: CTMRG's specific heat spent 3/4 of its time there (113 scans of
    ~12,000 nodes, to find 200-4,000). A node's edges never change once recorded, so what
    it reaches is fixed: each node keeps it, as a bit set over the K wanting nodes alive
    when the outermost walk's first nested walk began (``node._reach``, marked with a
    token of this object's, which the outermost walk drops when it ends: a node that
    outlives the walk, a parameter's sink, holds no wanting node alive through it). A
    nested walk then scans only the nodes made since and the nodes that lead to its
    inputs. Walks in other threads may overwrite a shared node's mark with their own:
    each call reads a mark once (``known``) and recomputes what is not its own, so it
    stays right, only slower. Cost: O(G K / 64) once, then O((new nodes + nodes leading
    to the inputs) K / 64) a walk; a K-bit int a node, which goes with the node."""

    def __init__(self) -> None:
        # What node._reach is marked with: a token, not this object, so that a node that
        # outlives the walk holds nothing of it (this object holds the wanting contexts).
        self.token = object()
        self.bit: dict[Node, int] = {}
        for ref in list(WANTING):
            ctx = ref()
            if ctx is not None:
                self.bit[ctx] = 2 << len(self.bit)

    def mask(self, targets: AbstractSet[Node]) -> int | None:
        """The bits of ``targets`` (with that of nodes that run when reached), or None
        when one is not a wanting node known here (then scan as before)."""
        mask = _RUNS_WHEN_REACHED
        for t in targets:
            b = self.bit.get(t)
            if b is None:
                return None
            mask |= b
        return mask

    def below(self, node: Node, known: dict | None = None) -> int:
        """The bits of the wanting nodes ``node`` has a path to (not its own), and
        ``_RUNS_WHEN_REACHED`` if it or a node below it runs when reached. ``known``: the
        bits this call has read (node._reach is shared with other threads' walks, whose
        Reach may overwrite it at any time: each is read once, as one tuple)."""
        if known is None:
            known = {}
        tok, bit = self.token, self.bit
        stack = [node]
        while stack:  # post-order: a node's bits once all its children's are known
            n = stack[-1]
            if n in known:
                stack.pop()
                continue
            r = n._reach
            if r is not None and r[0] is tok:
                known[n] = r[1]
                stack.pop()
                continue
            pending = False
            for e in n._next_edges:
                if e is not None and e[0] not in known:
                    rc = e[0]._reach
                    if rc is not None and rc[0] is tok:
                        known[e[0]] = rc[1]
                    else:
                        stack.append(e[0])
                        pending = True
            if pending:
                continue
            b = _RUNS_WHEN_REACHED if getattr(n._fn, "runs_when_reached", False) else 0
            for e in n._next_edges:
                if e is not None:
                    c = e[0]
                    b |= known[c] | bit.get(c, 0)
            known[n] = b
            n._reach = (tok, b)
            stack.pop()
        return known[node]

    def leading_to(self, mask: int, starts: Sequence[Node]) -> set[Node]:
        """The nodes from ``starts`` down with a path to a node of ``mask`` (or below
        one that runs when reached)."""
        known: dict = {}
        only = set()
        stack = [s for s in starts if self.below(s, known) & mask]
        while stack:
            n = stack.pop()
            if n in only:
                continue
            only.add(n)
            for e in n._next_edges:
                if e is not None:
                    c = e[0]
                    if c not in only and (known[c] if c in known else self.below(c, known)) & mask:
                        stack.append(c)
        return only


def wanting_below(node: Node) -> bool:
    """Whether a wanting node lies below ``node`` (from the running walks' ``Reach``; True
    when there is none to say)."""
    reach = running.reach
    return reach is None or bool(reach.below(node) & ~_RUNS_WHEN_REACHED)


def recorded_output_grads(node: Node, grads: Sequence[Tensor | None]) -> list[Tensor | None]:
    """From inside the backward of ``node`` (whose ctx set ``wants_downstream``): the
    gradients ``grads`` its outputs received, recorded as functions of the graph (so they
    can be differentiated again with respect to the node's outputs)."""
    walk = running.stack[-1]
    if walk.records:
        return list(grads)
    if walk.optimistic:
        return walk.replay(node)
    raise RuntimeError("recorded_output_grads: this walk was told not to record "
                       "(look_downstream=False)")


def current_walk() -> object:
    """The running walk (an object that identifies it while it runs): for a replay, the
    walk it replays, whose nodes it runs again."""
    walk = running.stack[-1]
    return walk.replaying or walk


def result_is_differentiated() -> bool:
    """Whether the running walk's caller asked for create_graph=True."""
    return running.stack[-1].create_graph
