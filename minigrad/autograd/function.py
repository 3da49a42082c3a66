"""Function and its ``apply``, which runs forward and records the call's ctx (context.py)
as a graph node.

This module is also the seam between autograd and the Tensor class: ``apply`` builds
Tensors and Tensor's methods call Functions, so one side must learn of the other after
import. tensor.py calls ``bind_tensor_class(Tensor)`` once, right after defining the class
(as torch binds its Python Tensor class into autograd at init). Everything else in the
package tells a Tensor by ``is_tensor`` and wraps arrays with ``make_tensor``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from . import downstream
from .context import Context  # re-exported: its home before context.py
from .grad_mode import _state
from .graph import ONE_OUTPUT, _next_order, edge_of, sink
from .quiet import enter as _quiet
from .quiet import leave as _loud

if TYPE_CHECKING:
    from ..tensor import Tensor

_new = object.__new__

# numpy's functions as globals: CPython 3.11 does not cache lookups on the numpy module
# (each np.<name> is a full attribute lookup), and these are read on every op.
_ndarray = np.ndarray


WANTING_DOWNSTREAM = downstream.WANTING  # the registry's name before downstream.py


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
    # A class of the setup_context style: the subclass its apply runs, made on first use,
    # and that subclass's forward signature (None: positional, without defaults).
    _with_ctx: type[Function]
    _signature: inspect.Signature | None
    # Whether running backward again in one walk is invisible (a replay, downstream.py):
    # minigrad's own Functions; a user's says so itself (its backward may have side effects
    # or consume its ctx, which torch allows: one run per walk). Set per class below.
    replayable: bool = True

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
        if "replayable" not in vars(cls):
            cls.replayable = cls.__module__.startswith("minigrad.")
        # The setup_context style gets an apply of its own, so the hot apply below (which
        # calls forward(ctx, ...)) stays as it is for every other Function.
        if cls.setup_context is not Function.setup_context and "apply" not in vars(cls):
            with_setup = classmethod(_apply_with_setup_context)
            cls.apply = with_setup  # type: ignore[method-assign, assignment]  # by design

    @classmethod
    def apply(cls, *args: Any) -> Any:
        """Run ``forward`` on ``args``; when grad mode is on and an input requires grad,
        record a Node so that backward can reach the inputs. Returns forward's output, or
        its tuple of outputs, as Tensors."""
        # The hot path of every op. reference.apply is its plain definition, and
        # tests/test_reference_engine.py holds the two to the same gradients. Each helper
        # call costs a small op ~5%: the single-output case below is written out.
        # edges is None when nothing records.
        edges: tuple | None
        if not _state.enabled:
            needs, edges = _NO_GRADS[len(args)], None
        elif len(args) == 2:  # binary ops are most: written out here, not in _inputs
            a, b = args
            ea = eb = None
            if isinstance(a, tensor_class) and a.requires_grad:
                arr = a._array
                ea = (a.grad_fn or a._accumulator or sink(a), a._output_nr, arr.shape, arr.dtype)
            if isinstance(b, tensor_class) and b.requires_grad:
                arr = b._array
                eb = (b.grad_fn or b._accumulator or sink(b), b._output_nr, arr.shape, arr.dtype)
            needs, edges = (_NO_GRADS[2], None) if ea is None and eb is None else (
                (ea is not None, eb is not None), (ea, eb))
        elif len(args) == 1:  # unary ops next: their one tensor, written out as well
            (a,) = args
            if isinstance(a, tensor_class) and a.requires_grad:
                arr = a._array
                needs, edges = (True,), ((a.grad_fn or a._accumulator or sink(a),
                                          a._output_nr, arr.shape, arr.dtype),)
            else:
                needs, edges = _NO_GRADS[1], None
        else:
            needs, edges = _inputs(args)
        ctx = _new(Context)  # Context(needs, cls) without the __init__ call
        ctx._fn, ctx.needs_input_grad = cls, needs
        ctx._non_diff = ()  # on the instance: read below (a class default's read is slow)
        token = _quiet()  # inf and nan silently, as torch (no numpy RuntimeWarning)
        try:
            if edges is None or cls._numpy_forward:  # nothing in forward can record
                if len(args) == 2:  # a plain call: Python runs it faster than f(*args)
                    a, b = args
                    raw = cls.forward(ctx, a, b)
                else:
                    raw = cls.forward(ctx, *args)
            else:
                raw = _forward_unrecorded(cls, ctx, args)
        except ValueError as e:
            if "broadcast" in str(e):  # numpy's words; torch raises a RuntimeError
                raise not_broadcastable(cls, args) from e
            raise
        finally:
            _loud(token)
        kind = type(raw)
        if kind is _ndarray:  # make_tensor(raw) without the call
            out = _new(tensor_class)
            out._array, out._version_counter = raw, [0]
        elif kind is tuple:
            return _outputs(cls, ctx, edges, raw)
        else:
            out = _wrap(raw)
        if edges is not None and out._array.dtype.kind in "fc" and not ctx._non_diff:
            # ctx._record(edges, ONE_OUTPUT) without the call (graph.py keeps the two alike)
            ctx._order, ctx._next_edges, ctx._out_meta = _next_order(), edges, ONE_OUTPUT
            ctx._hooks = ctx._retained = None
            out.grad_fn = ctx
            out.requires_grad = True
            if kind is not _ndarray and ctx._saved:  # forward may have saved raw
                ctx._pack_outputs((raw,), (out,))
        return out


def forward_only(cls: type[Function], *args: Any) -> Any:
    """What ``cls.apply(*args)`` returns where it records nothing (grad mode off, or no
    Tensor argument requires grad), without its bookkeeping: forward's one output, wrapped.
    For a forward numpy does not warn in (a view) or a caller already quiet (a backward
    walk): numpy's warnings are left as they are."""
    ctx = _new(Context)
    ctx._fn, ctx.needs_input_grad, ctx._non_diff = cls, _NO_GRADS[len(args)], ()
    raw = cls.forward(ctx, *args)
    if type(raw) is _ndarray:  # make_tensor(raw) without the call
        out = _new(tensor_class)
        out._array, out._version_counter = raw, [0]
        return out
    return _wrap(raw)


def _forward_unrecorded(cls: type[Function], ctx: Context, args: tuple) -> Any:
    """``cls.forward`` with recording off: a forward written with minigrad ops must not
    record (the node apply records stands for all it does). Called with recording on."""
    _state.enabled = False
    try:
        return cls.forward(ctx, *args)
    finally:
        _state.enabled = True


def not_broadcastable(cls: type[Function], args: tuple) -> RuntimeError:
    """torch's error for operands whose shapes do not broadcast (the rightmost dim of the
    result where tensors a and b differ and neither is 1), the shapes named after it."""
    shapes = [tuple(a.shape) for a in args if isinstance(a, tensor_class)]
    said = f"{cls.__name__}: shapes {shapes} are not broadcastable"
    if len(shapes) == 2:
        (a, b), n = shapes, max(map(len, shapes))
        for k in range(1, min(len(a), len(b)) + 1):
            p, q = a[-k], b[-k]
            if p != q and p != 1 and q != 1:
                return RuntimeError(f"The size of tensor a ({p}) must match the size of "
                                    f"tensor b ({q}) at non-singleton dimension {n - k} "
                                    f"({said})")
    return RuntimeError(said)


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

        runner = cast("type[Function]", type(
            cls.__name__, (cls,), {"forward": staticmethod(forward),
                                   "apply": Function.__dict__["apply"],
                                   "__module__": cls.__module__,
                                   "__qualname__": cls.__qualname__}))
        # forward's signature, worked out once (inspect.signature costs ~14 us a call)
        runner._signature = (inspect.signature(user_forward)
                             if _has_defaults(user_forward) else None)
        cls._with_ctx = runner
    sig = runner._signature
    if kwargs or sig is not None:
        bound = (sig or inspect.signature(cls.forward)).bind(*args, **kwargs)
        bound.apply_defaults()
        args = bound.args
    return Function.__dict__["apply"].__func__(runner, *args)


def _has_defaults(fn: Callable) -> bool:
    code = getattr(fn, "__code__", None)
    return code is None or bool(fn.__defaults__) or bool(fn.__kwdefaults__)


def _inputs(args: tuple) -> tuple[tuple[bool, ...], tuple | None]:
    """needs_input_grad and the edges of a call: per argument, whether it is a Tensor
    that requires grad, and the edge to where its gradient goes (or None). The edges are
    None as a whole when no argument requires grad: nothing records."""
    # Every op but a unary or binary one comes here (apply writes those cases out). Three
    # arguments (a reduction's tensor, dims and keepdim) are unrolled, with edge_of written
    # out for a Tensor argument first: no loop, comprehension or call is paid per argument.
    n = len(args)
    if n == 3:
        a = args[0]
        if not (isinstance(a, tensor_class) and a.requires_grad):
            ea = None
        else:
            arr = a._array
            ea = (a.grad_fn or a._accumulator or sink(a), a._output_nr, arr.shape, arr.dtype)
        b, c = args[1], args[2]  # seldom Tensors (where's are)
        eb = edge_of(b) if isinstance(b, tensor_class) else None
        ec = edge_of(c) if isinstance(c, tensor_class) else None
        if ea is None and eb is None and ec is None:
            return _NO_GRADS[3], None
        return (ea is not None, eb is not None, ec is not None), (ea, eb, ec)
    for a in args:  # most calls record nothing: tell so before building edges
        if isinstance(a, tensor_class) and a.requires_grad:
            break
    else:
        return _NO_GRADS[n], None
    edges = tuple([edge_of(a) if isinstance(a, tensor_class) else None for a in args])
    return tuple([e is not None for e in edges]), edges  # (one requires grad: above)


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
        if o._array.dtype.kind in "fc" and id(o._array) not in non_diff:
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


class OnceDifferentiableError(RuntimeError):
    """Raised where a ``once_differentiable`` backward would be differentiated (torch raises a
    RuntimeError there too); ``fn_name`` names that backward."""

    def __init__(self, message: str, fn_name: str) -> None:
        super().__init__(message)
        self.fn_name = fn_name


class DelayedError(Function):
    """The node behind a gradient that a ``once_differentiable`` backward produced while
    recording: reaching it means differentiating that backward, which it cannot do."""

    # It has no inputs, yet a walk that reaches it must run it (and raise) rather than
    # skip it as leading nowhere: the derivative it stands for is not zero.
    runs_when_reached = True

    @staticmethod
    def backward(ctx: Context, *grads: Any) -> Any:
        raise OnceDifferentiableError(
            f"trying to differentiate twice a function that was marked with "
            f"@once_differentiable: {ctx.fn_name} computes its gradient outside the graph, so "
            "it has no second derivative; take this derivative without create_graph=True, "
            "or write that backward with minigrad ops", ctx.fn_name)


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
    if not isinstance(g, tensor_class) or g._array.dtype.kind not in "fc":
        return g
    err = Context((), DelayedError)
    err.fn_name = ctx._name
    err._record((), ONE_OUTPUT)
    out = make_tensor(g._array)
    out.grad_fn = err
    out.requires_grad = True
    return out


def make_tensor(arr: Any) -> Tensor:
    """Wrap an ndarray as a Tensor, without a copy and outside the graph: an op's output
    before it is recorded, a mask, a weight. A numpy scalar (numpy's answer to arithmetic on
    0-d arrays) or anything else np.asarray takes becomes its array. ``cls._make`` is the
    same for a class of one's own (a Parameter's copies stay Parameters)."""
    t = _new(tensor_class)
    t._array = arr if type(arr) is _ndarray else np.asarray(arr)
    t._version_counter = [0]
    return t


def _wrap(r: Any) -> Tensor:
    """Turn what a Function's forward returned into a fresh output Tensor (a Tensor's own
    version counter comes along: forward may have returned a view of an input)."""
    if isinstance(r, tensor_class):
        out = make_tensor(r._array)
        out._version_counter = r._version_counter
        return out
    return make_tensor(r)


# ---- the seam with tensor.py ---------------------------------------------------------------
# Unset until tensor.py has defined the class: read it at call time (``function.tensor_class``
# or a name of this module), never copy it at import.
tensor_class: type[Tensor]


def bind_tensor_class(cls: type[Tensor]) -> None:
    """Tell autograd which class its Tensors are; tensor.py calls it once, at import."""
    global tensor_class
    tensor_class = cls


def is_tensor(x: Any) -> bool:
    """Whether ``x`` is a minigrad Tensor (or a subclass, such as nn.Parameter)."""
    return isinstance(x, tensor_class)
