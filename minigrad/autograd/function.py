"""Function, and its ctx: the graph node that ``Function.apply`` records.

This module is also the seam between autograd and the Tensor class: ``apply`` builds
Tensors and Tensor's methods call Functions, so one side must learn of the other after
import. tensor.py calls ``bind_tensor_class(Tensor)`` once, right after defining the class
(as torch binds its Python Tensor class into autograd at init). Everything else in the
package tells a Tensor by ``is_tensor`` and wraps arrays with ``constant``.
"""

from __future__ import annotations

import functools
import inspect
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .grad_mode import _state
from .graph import ONE_OUTPUT, Node, _next_order, edge_of, sink
from .quiet import enter as _quiet
from .quiet import leave as _loud

if TYPE_CHECKING:
    from ..tensor import Tensor

_FREED = object()
_new = object.__new__

# numpy's functions as globals: CPython 3.11 does not cache lookups on the numpy module
# (each np.<name> is a full attribute lookup), and these are read on every op.
_ndarray = np.ndarray


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

    @property
    def ctx(self) -> Context:
        """This object: a node is its own ctx (kept for readers of ``grad_fn.ctx``)."""
        return self

    @property
    def wants_downstream(self) -> bool:
        """Set True in forward by a node whose backward may call
        ``engine.recorded_output_grads``; a walk that reaches such a node records itself."""
        return self._wants_downstream

    @wants_downstream.setter
    def wants_downstream(self, value: bool) -> None:
        self._wants_downstream = bool(value)
        if value:  # rare (an SVD or eigh near a tie): walks look for these only while any lives
            WANTING_DOWNSTREAM.add(weakref.ref(self, WANTING_DOWNSTREAM.discard))

    def __init__(self, needs_input_grad: tuple[bool, ...], fn: type) -> None:
        self.needs_input_grad = needs_input_grad
        self._fn = fn

    if TYPE_CHECKING:  # the attributes forward sets for backward: any name, unchecked
        def __getattr__(self, name: str) -> Any: ...
        def __setattr__(self, name: str, value: Any) -> None: ...

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


# Weak references to the live contexts that set wants_downstream (each drops out as its
# ctx dies). While there are none, a walk knows without looking that no node it reaches
# wants it. A set, not a WeakSet: a walk tests it for emptiness, which a WeakSet does in Python.
WANTING_DOWNSTREAM: set[weakref.ref] = set()


class _SavedOutput:
    """An output that forward saved, kept as its array and version counter only.

    Holding the output Tensor itself would close a cycle (output -> node -> output) that only
    the cyclic gc can free (torch's SavedVariable avoids it the same way). Unpacking rebuilds
    a Tensor with the same data and version whose grad_fn is the node (the ctx) and whose
    _output_nr is the output's index, so a backward written with it stays differentiable.
    """

    __slots__ = ("_array", "version", "output_nr")

    def __init__(self, out: Tensor) -> None:
        self._array, self.version = out._array, out._version_counter
        self.output_nr = out._output_nr

    def unpack(self, ctx: Context) -> Tensor:
        t = make_tensor(self._array)
        t._version_counter = self.version
        t.grad_fn, t._output_nr, t.requires_grad = ctx, self.output_nr, True
        return t


class Function:
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)``; call ``apply``.

    ``forward`` receives apply's arguments as given: Tensors stay Tensors (read their values
    through ``._array``), numbers and other objects pass unchanged. It runs under no_grad and
    returns a Tensor, an ndarray or a number, or a tuple of them (one output each); float
    outputs require grad when any input did. ``backward`` runs when a gradient reaches an
    output. It receives one gradient Tensor per output (zeros for outputs that got none,
    see ``set_materialize_grads``) and returns one gradient or None per forward argument
    (a single value when forward took one). A gradient may keep a broadcast shape or
    another float dtype: the engine sums and casts it to the input's. Write backward with
    minigrad ops so higher order works, or mark it ``once_differentiable``.

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

    # True on a built-in op whose forward computes with numpy alone (it calls no minigrad
    # op, so it cannot record): apply then skips switching recording off around it, which
    # costs as much as the rest of a small op's bookkeeping (the switch is thread-local).
    _numpy_forward: bool = False

    @staticmethod
    def forward(ctx: Context, *args: Any) -> Any:
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Context, *grads: Any) -> Any:
        raise NotImplementedError

    @staticmethod
    def setup_context(ctx: Context, inputs: tuple, output: Any) -> None:
        """torch 2's other style: override it with ``forward(*args)`` (no ctx), and it gets
        the ctx, forward's arguments (defaults bound) and what forward returned."""
        raise NotImplementedError("setup_context is not implemented.")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # The setup_context style gets an apply of its own, so the hot apply below (which
        # calls forward(ctx, ...)) stays as it is for every other Function.
        if cls.setup_context is not Function.setup_context and "apply" not in vars(cls):
            cls.apply = classmethod(_apply_with_setup_context)

    @classmethod
    def apply(cls, *args: Any) -> Any:
        """Run ``forward`` on ``args``; when grad mode is on and an input requires grad,
        record a Node so that backward can reach the inputs. Returns forward's output, or
        its tuple of outputs, as Tensors."""
        # The hot path of every op. No comprehensions here: each builds and calls a function
        # object (Python < 3.12). needs_input_grad and the edges (None when nothing requires
        # grad) as _inputs finds them, its two-argument case inlined (binary ops are most).
        n = len(args)
        if not _state.enabled:
            needs, edges = _NO_GRADS[n], None
        elif n == 2:
            a, b = args
            ea = eb = None
            if isinstance(a, tensor_class) and a.requires_grad:
                arr = a._array
                ea = (a.grad_fn or a._accumulator or sink(a), a._output_nr, arr.shape, arr.dtype)
            if isinstance(b, tensor_class) and b.requires_grad:
                arr = b._array
                eb = (b.grad_fn or b._accumulator or sink(b), b._output_nr, arr.shape, arr.dtype)
            if ea is None and eb is None:
                needs, edges = _NO_GRADS[2], None
            else:
                needs, edges = (ea is not None, eb is not None), (ea, eb)
        else:
            needs, edges = _inputs(args)
        ctx = _new(Context)  # Context(needs, cls) without the __init__ call
        ctx._fn = cls
        ctx.needs_input_grad = needs
        ctx._non_diff = ()  # on the instance: read below (a class default's read is slow)
        token = _quiet()  # inf and nan silently, as torch (no numpy RuntimeWarning)
        try:
            if edges is None or cls._numpy_forward:
                if n == 2:  # a plain call: Python runs it faster than f(*args)
                    a, b = args
                    raw = cls.forward(ctx, a, b)
                else:
                    raw = cls.forward(ctx, *args)
            else:
                _state.enabled = False
                try:
                    raw = cls.forward(ctx, *args)
                finally:
                    _state.enabled = True
        except ValueError as e:
            if "broadcast" not in str(e):
                raise
            shapes = [tuple(a.shape) for a in args if isinstance(a, tensor_class)]
            raise RuntimeError(f"{cls.__name__}: shapes {shapes} are not broadcastable") from e
        finally:
            _loud(token)
        kind = type(raw)
        if kind is _ndarray:  # Tensor._make, inlined
            out = _new(tensor_class)
            out._array, out._version_counter = raw, [0]
        elif kind is tuple:
            return _outputs(cls, ctx, edges, raw)
        else:
            out = _wrap(raw) if isinstance(raw, tensor_class) else make_tensor(raw)
        if edges is not None and out._array.dtype.kind == "f" and not ctx._non_diff:
            ctx._order = _next_order()  # ctx._record(edges, ONE_OUTPUT), inlined
            ctx._next_edges = edges
            ctx._out_meta = ONE_OUTPUT
            ctx._hooks = ctx._retained = None
            out.grad_fn = ctx
            out.requires_grad = True
            if kind is not _ndarray and ctx._saved:  # forward may have saved raw
                ctx._pack_outputs((raw,), (out,))
        return out


def _apply_with_setup_context(cls: type[Function], *args: Any, **kwargs: Any) -> Any:
    """apply for a Function of the ``forward(*args)`` + ``setup_context`` style: as torch,
    keyword arguments and forward's defaults become positional, then a subclass (made once
    per class) whose forward(ctx, ...) runs both goes through the usual apply."""
    runner = vars(cls).get("_with_ctx")
    if runner is None:
        user_forward, setup = cls.forward, cls.setup_context

        def forward(ctx: Context, *inputs: Any) -> Any:
            out = user_forward(*inputs)
            setup(ctx, inputs, out)
            return out

        runner = type(cls.__name__, (cls,), {"forward": staticmethod(forward),
                                             "apply": Function.__dict__["apply"],
                                             "__module__": cls.__module__,
                                             "__qualname__": cls.__qualname__})
        # forward's signature, worked out once (inspect.signature costs ~14 us a call)
        runner._signature = (inspect.signature(user_forward)
                             if _has_defaults(user_forward) else None)
        cls._with_ctx = runner
    sig = runner._signature
    if kwargs or sig is not None:
        bound = (sig or inspect.signature(cls.forward)).bind(*args, **kwargs)
        bound.apply_defaults()
        args = bound.args
    return Function.apply.__func__(runner, *args)


def _has_defaults(fn: Callable) -> bool:
    code = getattr(fn, "__code__", None)
    return code is None or bool(fn.__defaults__) or bool(fn.__kwdefaults__)


def _inputs(args: tuple) -> tuple[tuple[bool, ...], tuple | None]:
    """needs_input_grad and the edges of a call, in one pass: per argument, whether it is a
    Tensor that requires grad, and the edge to where its gradient goes (or None). The edges
    are None as a whole when no argument requires grad: nothing records. The usual one and
    three arguments have ``edge_of`` inlined; apply does two arguments itself."""
    tensor = tensor_class
    n = len(args)
    if n == 1:
        (a,) = args
        if not (isinstance(a, tensor) and a.requires_grad):
            return _NO_GRADS[1], None
        arr = a._array
        return (True,), ((a.grad_fn or a._accumulator or sink(a), a._output_nr, arr.shape,
                          arr.dtype),)
    if n == 3:  # a tensor and two options (sum's dims and keepdim), or where's three
        a, b, c = args
        ea = None
        if isinstance(a, tensor) and a.requires_grad:
            arr = a._array
            ea = (a.grad_fn or a._accumulator or sink(a), a._output_nr, arr.shape, arr.dtype)
        eb = edge_of(b) if isinstance(b, tensor) else None
        ec = edge_of(c) if isinstance(c, tensor) else None
        if ea is None and eb is None and ec is None:
            return _NO_GRADS[3], None
        return (ea is not None, eb is not None, ec is not None), (ea, eb, ec)
    edges = []
    for a in args:
        edges.append(edge_of(a) if isinstance(a, tensor) else None)
    needs = tuple([e is not None for e in edges])
    return (needs, tuple(edges)) if True in needs else (needs, None)


def _outputs(cls: type[Function], ctx: Context, edges: tuple | None, raw: tuple) -> tuple:
    """apply for a forward that returned a tuple: one output Tensor per item, all recorded
    on one Node (when ``edges``, the inputs' edges, says it records) except those marked
    non-differentiable (matched by identity of the array: forward may mark the Tensors or
    the ndarrays it returns) and non-float ones."""
    outs = tuple([_wrap(r) for r in raw])
    if edges is None:
        return outs
    ctx._record(edges, tuple([(o._array.shape, o._array.dtype) for o in outs]))
    non_diff = [id(t._array if isinstance(t, tensor_class) else t) for t in ctx._non_diff]
    for i, o in enumerate(outs):
        if o._array.dtype.kind == "f" and id(o._array) not in non_diff:
            o.grad_fn = ctx
            o._output_nr = i
            o.requires_grad = True
    if ctx._saved:
        # Outputs saved in forward come back from saved_tensors as the recorded outputs, so
        # a backward written with them is itself differentiable.
        ctx._pack_outputs(raw, outs)
    return outs


class _NoGrads(dict):
    """n -> (False,) * n, built on first use: a dict lookup keeps apply() cheap for any n."""

    def __missing__(self, n: int) -> tuple[bool, ...]:
        self[n] = (False,) * n
        return self[n]


_NO_GRADS = _NoGrads()


class DelayedError(Function):
    """The node behind a gradient that a ``once_differentiable`` backward produced while
    recording: reaching it means differentiating that backward, which it cannot do."""

    # It has no inputs, yet a walk that reaches it must run it (and raise) rather than
    # skip it as leading nowhere: the derivative it stands for is not zero.
    runs_when_reached = True

    @staticmethod
    def backward(ctx: Context, *grads: Any) -> Any:
        raise RuntimeError(
            f"trying to differentiate twice a function that was marked with "
            f"@once_differentiable: {ctx.fn_name} computes its gradient outside the graph, so "
            "it has no second derivative; take this derivative without create_graph=True, "
            "or write that backward with minigrad ops"
        )


def once_differentiable(backward: Callable) -> Callable:
    """Mark a Function's ``backward`` as first-order only (torch's decorator of that name).

    The decorated backward runs under ``no_grad`` (it may use numpy freely). Without
    ``create_graph`` nothing changes. With ``create_graph=True`` the backward still runs and
    its gradients come back requiring grad, but differentiating any of them again raises a
    RuntimeError that names the Function, instead of silently treating them as constants.
    Unlike torch, this holds even when only the saved tensors (not the incoming gradients)
    carry a graph: a second derivative is never silently missing.

    >>> class Cube(mg.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x._array ** 3
    ...     @staticmethod
    ...     @mg.autograd.function.once_differentiable
    ...     def backward(ctx, g):
    ...         (x,) = ctx.saved_tensors
    ...         return g * mg.tensor(3 * x._array ** 2)
    >>> x = mg.tensor(2.0, requires_grad=True)
    >>> mg.autograd.grad(Cube.apply(x), x)
    (tensor(12.),)
    """

    @functools.wraps(backward)
    def wrapper(ctx: Context, *grads: Any) -> Any:
        recording = _state.enabled
        _state.enabled = False
        try:
            out = backward(ctx, *grads)
        finally:
            _state.enabled = recording
        if not recording:
            return out
        if type(out) is not tuple:
            return _poisoned(out, ctx)
        return tuple([_poisoned(g, ctx) for g in out])

    return wrapper


def _poisoned(g: Any, ctx: Context) -> Any:
    """``g`` as a gradient whose own backward raises (see ``once_differentiable``)."""
    if not isinstance(g, tensor_class) or g._array.dtype.kind != "f":
        return g
    err = Context((), DelayedError)
    err.fn_name = ctx._name
    err._record((), ONE_OUTPUT)
    out = make_tensor(g._array)
    out.grad_fn = err
    out.requires_grad = True
    return out


def constant(arr: Any) -> Tensor:
    """Wrap an ndarray (or numpy scalar) as a Tensor outside the graph: masks, weights."""
    return make_tensor(np.asarray(arr))


def _wrap(r: Any) -> Tensor:
    """Turn what a Function's forward returned into a fresh output Tensor (a Tensor's own
    version counter comes along: forward may have returned a view of an input)."""
    if isinstance(r, tensor_class):
        out = make_tensor(r._array)
        out._version_counter = r._version_counter
        return out
    return make_tensor(r)


# ---- the seam with tensor.py ---------------------------------------------------------------
# Unset until tensor.py has defined the class: read them at call time (``function.tensor_class``
# or a name of this module), never copy them at import.
tensor_class: type[Tensor]
make_tensor: Callable[[np.ndarray], Tensor]  # Tensor._make: wrap an ndarray, no copy


def bind_tensor_class(cls: type[Tensor]) -> None:
    """Tell autograd which class its Tensors are; tensor.py calls it once, at import."""
    global tensor_class, make_tensor
    tensor_class, make_tensor = cls, cls._make


def is_tensor(x: Any) -> bool:
    """Whether ``x`` is a minigrad Tensor (or a subclass, such as nn.Parameter)."""
    return isinstance(x, tensor_class)
