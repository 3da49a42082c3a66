"""Function, its ctx, and the graph nodes that ``Function.apply`` records."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from .grad_mode import _state

if TYPE_CHECKING:
    from ..tensor import Tensor

_FREED = object()


class Context:
    """What ``forward`` hands to ``backward``: saved tensors and flags, as in torch."""

    # Class-level defaults: most ops set only what they use, keeping op calls cheap.
    materialize_grads = True
    _saved: Any = ()
    _versions: tuple[int, ...] = ()
    _non_diff: tuple = ()

    def __init__(self, needs_input_grad: tuple[bool, ...], fn: type) -> None:
        self.needs_input_grad = needs_input_grad
        self._fn = fn

    @property
    def _name(self) -> str:
        return f"{self._fn.__name__}Backward"

    def set_materialize_grads(self, value: bool) -> None:
        """With False, backward gets None (not zeros) for outputs that received no gradient."""
        self.materialize_grads = value

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        """Keep tensors for backward; an in-place change to one before backward is an error."""
        self._saved = tensors
        self._versions = tuple(-1 if t is None else t._version[0] for t in tensors)

    @property
    def saved_tensors(self) -> tuple[Tensor, ...]:
        if self._saved is _FREED:
            raise RuntimeError(
                f"Trying to backward through the graph a second time ({self._name} has freed "
                "its saved tensors). Specify retain_graph=True on the first backward() or "
                "autograd.grad() call if you need to backward through the graph again."
            )
        for i, (t, v) in enumerate(zip(self._saved, self._versions)):
            if t is not None and t._version[0] != v:
                raise RuntimeError(
                    f"One of the tensors needed for gradient computation has been modified by "
                    f"an in-place operation: saved tensor {i} of {self._name} (shape "
                    f"{tuple(t.shape)}) is at version {t._version[0]}, expected version {v}. "
                    "Use an out-of-place operation or .clone() before modifying it."
                )
        return self._saved

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        """Outputs listed here never require grad (indices, masks)."""
        self._non_diff = tensors


class Node:
    """A recorded call: the Function's backward, its ctx, and edges to the inputs' nodes.

    ``next_edges[i]`` is ``(node, output_nr, shape, dtype)`` for input i, or None when that
    input needs no gradient; shape and dtype let the engine undo broadcasting and casting.
    """

    __slots__ = ("fn", "ctx", "next_edges", "out_meta", "hooks", "retained", "__weakref__")

    def __init__(self, fn: type[Function] | None, ctx: Context | None, next_edges: tuple,
                 out_meta: tuple) -> None:
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


class AccumulateGrad(Node):
    """The sink of a leaf that requires grad: the engine adds into ``leaf.grad``."""

    __slots__ = ("leaf",)

    def __init__(self, leaf: Tensor) -> None:
        super().__init__(None, None, (), ((leaf.data.shape, leaf.data.dtype),))
        self.leaf = leaf


def edge_of(t: Tensor) -> tuple | None:
    """The edge to where ``t``'s gradient goes, or None when it needs none."""
    if not t.requires_grad:
        return None
    node = t.grad_fn
    if node is None:
        node = t._accumulator
        if node is None:
            node = t._accumulator = AccumulateGrad(t)
    return (node, t._output_nr, t.data.shape, t.data.dtype)


class Function:
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)``; call ``apply``.

    forward runs under no_grad and may return Tensors or ndarrays; backward receives one
    gradient Tensor per output (zeros for outputs that got none) and returns one gradient
    (or None) per forward argument, written with minigrad ops so higher order works.

    Example::

        class Square(mg.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x
            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * x * g
    """

    @staticmethod
    def forward(ctx: Context, *args: Any) -> Any:
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Context, *grads: Any) -> Any:
        raise NotImplementedError

    @classmethod
    def apply(cls, *args: Any) -> Any:
        # The hot path of every op: kept flat and allocation-light on purpose.
        record = False
        if _state.enabled:
            for a in args:
                if isinstance(a, _Tensor) and a.requires_grad:
                    record = True
                    break
        try:
            if record:
                needs = tuple([isinstance(a, _Tensor) and a.requires_grad for a in args])
                ctx = Context(needs, cls)
                _state.enabled = False
                try:
                    raw = cls.forward(ctx, *args)
                finally:
                    _state.enabled = True
            else:
                ctx = Context(_NO_GRADS[len(args)], cls)
                raw = cls.forward(ctx, *args)
        except ValueError as e:
            if "broadcast" not in str(e):
                raise
            shapes = [tuple(a.shape) for a in args if isinstance(a, _Tensor)]
            raise RuntimeError(f"{cls.__name__}: shapes {shapes} are not broadcastable") from e
        if type(raw) is not tuple:
            out = _make(raw) if type(raw) is np.ndarray else _wrap(raw)
            if record and out.data.dtype.kind == "f" and not ctx._non_diff:
                if ctx._saved and type(raw) is not np.ndarray:  # maybe a saved output: below
                    ctx._saved = tuple([out if t is raw else t for t in ctx._saved])
                edges = tuple([edge_of(a) if n else None for a, n in zip(args, needs)])
                out.grad_fn = Node(cls, ctx, edges, ((out.data.shape, out.data.dtype),))
                out.requires_grad = True
            return out
        outs = tuple([_wrap(r) for r in raw])
        if record and ctx._saved:
            # Outputs saved in forward become the recorded outputs, so a backward written
            # with them is itself differentiable (higher order through this node).
            returned = {id(r): o for r, o in zip(raw, outs)}
            ctx._saved = tuple([returned.get(id(t), t) for t in ctx._saved])
        if record:
            edges = tuple([edge_of(a) if n else None for a, n in zip(args, needs)])
            node = Node(cls, ctx, edges, tuple([(o.data.shape, o.data.dtype) for o in outs]))
            # By identity of the array: forward may mark the Tensors or ndarrays it returns.
            non_diff = [id(t.data if isinstance(t, _Tensor) else t) for t in ctx._non_diff]
            for i, o in enumerate(outs):
                if o.data.dtype.kind == "f" and id(o.data) not in non_diff:
                    o.grad_fn = node
                    o._output_nr = i
                    o.requires_grad = True
        return outs


class _NoGrads(dict):
    """n -> (False,) * n, built on first use: a dict lookup keeps apply() cheap for any n."""

    def __missing__(self, n: int) -> tuple[bool, ...]:
        self[n] = (False,) * n
        return self[n]


_NO_GRADS = _NoGrads()


def constant(arr: Any) -> Tensor:
    """Wrap an ndarray (or numpy scalar) as a Tensor outside the graph: masks, weights."""
    return _make(np.asarray(arr))


# Filled in by tensor.py (which imports this module) to avoid an import cycle.
_Tensor: Any = None
_wrap: Any = None
_make: Any = None
