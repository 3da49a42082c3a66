"""Context: what ``forward`` hands to ``backward``, and the graph node of a recorded call.

``Function.apply`` (function.py) makes one per call; when the call records, the ctx is
also the output's ``grad_fn``. Saved tensors are checked against in-place changes when
backward reads them, and freed once the engine has run the node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import downstream
from .graph import Node

if TYPE_CHECKING:
    import numpy as np

    from ..tensor import Tensor
    from .function import Function

_FREED = object()  # what a node's saved tensors become once freed


class Context(Node):
    """What ``forward`` hands to ``backward``: saved tensors and flags, as in torch.

    ``needs_input_grad`` is a tuple with one bool per forward argument: True where that
    argument is a Tensor that requires grad and apply is recording. ``backward`` may skip
    (return None for) the gradients marked False. Any other attribute forward sets on ctx
    (constants, shapes, masks) is there for backward, unchecked.

    When the call records, this ctx is also its graph node, the output's ``grad_fn`` (as in
    torch): one object per recorded call.
    """

    # Class-level defaults: most ops set only what they use, keeping op calls cheap.
    materialize_grads = True
    _saved: Any = ()
    _versions: tuple[int, ...] = ()
    _non_diff: tuple = ()
    _saves_outputs = False  # some of _saved are _SavedOutputs (see _pack_outputs)
    _wants_downstream = False
    _fn: type[Function]

    if TYPE_CHECKING:
        # forward may set any attribute on ctx for its backward (as torch's ctx allows):
        # for a type checker they are there, of any type
        def __getattr__(self, name: str) -> Any: ...
        def __setattr__(self, name: str, value: Any) -> None: ...

    @property
    def ctx(self) -> Context:
        """This object: a node is its own ctx (kept for readers of ``grad_fn.ctx``)."""
        return self

    @property
    def wants_downstream(self) -> bool:
        """Set True in forward by a node whose backward may call
        ``recorded_output_grads``; a walk that reaches such a node keeps the graph and
        records itself when the node asks (see downstream.py)."""
        return self._wants_downstream

    @wants_downstream.setter
    def wants_downstream(self, value: bool) -> None:
        self._wants_downstream = bool(value)
        if value:  # rare (an SVD or eigh near a tie): walks look for these only while any lives
            downstream.register(self)

    def __init__(self, needs_input_grad: tuple[bool, ...], fn: type) -> None:
        self.needs_input_grad = needs_input_grad
        self._fn = fn

    def set_materialize_grads(self, value: bool) -> None:
        """Call in forward. With False, a backward of several outputs gets None (instead of
        zeros of the output's shape) for each output that received no gradient. A backward
        of one output always gets its gradient: it runs only when one arrived."""
        self.materialize_grads = value

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        """Call in forward, at most once (a second call replaces the first), with Tensors or
        None: forward's inputs, or outputs it returns as Tensors. backward reads them from
        ``saved_tensors``. Numbers, ndarrays and anything else go on ctx as attributes.

        Each Tensor's version is noted here: if it is changed in place before backward,
        ``saved_tensors`` raises instead of handing back the new value. A saved output comes
        back as the recorded output (with its grad_fn), so a backward written with it
        differentiates again; it is held without a reference cycle."""
        self._saved = tensors
        self._saves_outputs = False  # _pack_outputs may say otherwise; read by saved_tensors
        if len(tensors) == 1:  # the usual cases, without a comprehension (hot path)
            (t,) = tensors
            self._versions = (-1 if t is None else t._version_counter[0],)
        elif len(tensors) == 2:
            t, u = tensors
            self._versions = (-1 if t is None else t._version_counter[0],
                              -1 if u is None else u._version_counter[0])
        else:
            self._versions = tuple([-1 if t is None else t._version_counter[0] for t in tensors])

    @property
    def saved_tensors(self) -> tuple[Tensor, ...]:
        """The tensors ``save_for_backward`` kept, in its order; read it in backward.

        Raises RuntimeError when the graph was freed (a second backward without
        ``retain_graph=True``) or when one of them was modified in place since it was
        saved, naming the tensor, its shape and both versions."""
        if self._saved is _FREED:
            raise RuntimeError(
                f"Trying to backward through the graph a second time ({self._name} has freed "
                "its saved tensors). Specify retain_graph=True on the first backward() or "
                "autograd.grad() call if you need to backward through the graph again."
            )
        saved = self._saved
        if self._saves_outputs:
            saved = tuple([t.unpack(self) if type(t) is _SavedOutput else t for t in saved])
        for t, v in zip(saved, self._versions):
            if t is not None and t._version_counter[0] != v:
                self._raise_modified(saved)
        return saved

    def _raise_modified(self, saved: tuple) -> None:
        for i, (t, v) in enumerate(zip(saved, self._versions)):
            if t is not None and t._version_counter[0] != v:
                raise RuntimeError(  # torch's words, so code matching them ports
                    f"one of the variables needed for gradient computation has been modified "
                    f"by an inplace operation: saved tensor {i} of {self._name} (shape "
                    f"{tuple(t.shape)}) is at version {t._version_counter[0]}; expected version "
                    f"{v} instead. Use an out-of-place operation or .clone() before modifying it."
                )

    def _pack_outputs(self, raw: tuple, outs: tuple) -> None:
        """Swap the outputs forward saved (matched by identity) for ``_SavedOutput``s."""
        returned = {id(r): o for r, o in zip(raw, outs) if o.grad_fn is self}
        if not returned:
            return
        self._saved = tuple([t if returned.get(id(t)) is None else _SavedOutput(returned[id(t)])
                             for t in self._saved])
        self._saves_outputs = True

    def input_like(self, i: int, values: np.ndarray) -> Tensor:
        """A tensor of ``values`` whose gradient goes where this call sends input i's: the
        input rebuilt from what the backward has (an SVD's from its factors) instead of kept
        alive from the forward. Its values are the caller's to vouch for."""
        from .function import make_tensor  # function imports this module

        t = make_tensor(values)
        edge = self._next_edges[i] if i < len(self._next_edges) else None
        if edge is not None:
            node = edge[0]
            t.requires_grad = True
            if node._fn is None:  # a leaf's sink: the tensor stands in for the leaf
                t._accumulator = node
            else:
                t.grad_fn, t._output_nr = node, edge[1]
        return t

    def free(self) -> None:
        """Drop the saved tensors. The engine calls it once this ctx's node has run in a
        backward without ``retain_graph``; ``saved_tensors`` raises from then on."""
        self._saved = _FREED

    def mark_non_differentiable(self, *tensors: Tensor | np.ndarray) -> None:
        """Call in forward with outputs (the Tensors or ndarrays it returns, matched by
        identity) that have no gradient, such as indices or masks: they do not require grad.
        For a Function of one output any mark makes that output non-differentiable (and
        backward never runs). With several outputs backward still gets a gradient argument
        for each: zeros (or None, see ``set_materialize_grads``) for the marked ones."""
        self._non_diff = tensors


class _SavedOutput:
    """An output that forward saved, kept as its array and version counter only.

    Holding the output Tensor itself would close a cycle (output -> node -> output) that only
    the cyclic gc can free (torch's SavedVariable avoids it the same way). Unpacking rebuilds
    a Tensor with the same data and version whose grad_fn is the node (the ctx) and whose
    _output_nr is the output's index, so a backward written with it stays differentiable.
    """

    __slots__ = ("_array", "version", "output_nr", "_make")

    def __init__(self, out: Tensor) -> None:
        self._array, self.version = out._array, out._version_counter
        self.output_nr = out._output_nr
        self._make = out._make  # the Tensor class's wrap, without importing it here

    def unpack(self, ctx: Context) -> Tensor:
        t = self._make(self._array)
        t._version_counter = self.version
        t.grad_fn, t._output_nr, t.requires_grad = ctx, self.output_nr, True
        return t
