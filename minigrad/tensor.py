"""Tensor: an ndarray plus autograd metadata. Operators delegate to the Functions in ops/;
composite operations (mean, softmax, var, ...) are written here from those primitives."""

from __future__ import annotations

import copy
import math
import warnings
import weakref
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

# linalg is built on Tensor, so Tensor.norm reaches linalg through the package, at call
# time (as torch's Tensor.norm does): the package is in sys.modules before this module runs.
import minigrad

from . import dtypes
from ._dims import count_over, infer_shape, norm_dims, shape_arg, wrap_dim
from .autograd import api as _api
from .autograd import engine as _engine
from .autograd import views
from .autograd.function import bind_tensor_class, edge_of
from .ops import arith, matmul, reduce, shape, unary

Number = int | float | bool


def _as_array(data: Any, dtype: Any = None) -> np.ndarray:
    """torch.tensor's conversion: Python floats become float32, ints int64; arrays keep dtype."""
    if isinstance(data, Tensor):
        arr = data.data
    elif isinstance(data, (np.ndarray, np.generic)):
        arr = np.asarray(data)  # numpy arrays and scalars keep their dtype
    else:
        arr = np.asarray(data)
        if dtype is None and arr.dtype.kind == "f":
            arr = arr.astype(dtypes.DEFAULT_FLOAT)
        elif dtype is None and arr.dtype.kind in "iu":
            arr = arr.astype(np.int64)
    if dtype is not None:
        arr = arr.astype(dtypes.to_dtype(dtype), copy=False)
    if dtypes.category(arr.dtype) > 2:
        raise TypeError(f"minigrad tensors hold float, integer or bool data, not {arr.dtype}")
    return arr


class _HookHandle:
    def __init__(self, hooks: list, hook: Callable) -> None:
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


class MinMax(NamedTuple):
    values: Tensor
    indices: Tensor


class Tensor:
    """An n-dimensional array that can record the operations applied to it.

    >>> x = mg.tensor([1.0, 2.0], requires_grad=True)
    >>> (x * x).sum().backward(); x.grad
    tensor([2., 4.])
    """

    __array_priority__ = 1000  # so ndarray (op) Tensor defers to Tensor's reflected operator

    # Class-level defaults keep op outputs cheap to create: _make sets only data and version.
    requires_grad: bool = False
    grad: Tensor | None = None
    grad_fn: Any = None
    _output_nr: int = 0
    _accumulator: Any = None
    _base: Tensor | None = None
    _replay: Callable[[Tensor], Tensor] | None = None  # a view: redo it from its _base
    _views: weakref.WeakSet | None = None  # a base: its live views, rebased by in-place ops
    _retains: bool = False

    def __init__(self, data: Any, dtype: Any = None, requires_grad: bool = False) -> None:
        self.data = _as_array(data, dtype)
        self._version = [0]
        if requires_grad:
            self.requires_grad_(True)

    @classmethod
    def _make(cls, data: np.ndarray) -> Tensor:
        """Wrap an ndarray without copies (the fast path for op outputs).

        numpy hands back a scalar, not a 0-d array, for arithmetic on 0-d arrays
        (``a0 + b0``, ``-a0``, ``np.sqrt(a0)``); such a scalar is turned back into a 0-d array
        here, so ``.data`` is always an ndarray whoever built the tensor."""
        t = object.__new__(cls)
        t.data = data if type(data) is np.ndarray else np.asarray(data)
        t._version = [0]
        return t

    # ---- metadata -------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def T(self) -> Tensor:
        return self.permute(*reversed(range(self.ndim)))

    @property
    def mT(self) -> Tensor:
        return self.transpose(-2, -1)

    @property
    def device(self) -> str:
        return "cpu"

    def size(self, dim: int | None = None) -> tuple[int, ...] | int:
        return self.shape if dim is None else self.shape[wrap_dim(dim, self.ndim)]

    def dim(self) -> int:
        return self.ndim

    def numel(self) -> int:
        return self.data.size

    def is_floating_point(self) -> bool:
        return self.data.dtype.kind == "f"

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        body = np.array2string(self.data, separator=", ", prefix="tensor(")
        extra = ""
        if self.data.dtype not in (np.float32, np.int64, np.bool_):
            extra += f", dtype=minigrad.{self.data.dtype}"
        if self.grad_fn is not None:
            extra += f", grad_fn={self.grad_fn!r}"
        elif self.requires_grad:
            extra += ", requires_grad=True"
        return f"tensor({body}{extra})"

    # ---- conversion -----------------------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """The underlying ndarray (shared memory); like torch, refused while it requires grad."""
        if self.requires_grad:
            raise RuntimeError(
                "Can't call numpy() on a Tensor that requires grad. Use tensor.detach().numpy()."
            )
        return self.data

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        arr = self.numpy()
        return arr if dtype is None else arr.astype(dtype)

    def item(self) -> Number:
        if self.data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self.data.size} elements cannot be converted to a Python scalar"
            )
        return self.data.reshape(()).item()

    def tolist(self) -> Any:
        return self.data.tolist()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __bool__(self) -> bool:
        if self.data.size != 1:
            raise RuntimeError("Boolean value of a Tensor with more than one value is ambiguous")
        return bool(self.data.reshape(()))

    def __index__(self) -> int:
        if self.data.dtype.kind not in "iub" or self.data.size != 1:
            raise TypeError("only integer tensors of a single element can be used as an index")
        return int(self.item())

    def to(self, *args: Any, dtype: Any = None, device: Any = None, non_blocking: bool = False,
           copy: bool = False) -> Tensor:
        """Cast to a dtype given by name, positionally or as another tensor's, as torch's
        ``to(dtype)``, ``to(device, dtype)``, ``to(other)``; the device can only be the CPU.
        The gradient flows back cast to the source dtype.

        >>> mg.ones(2).to("cpu", mg.float64).dtype
        dtype('float64')
        """
        dt = to_args(args, dtype, device)
        out = self if dt is None else self._cast(dt)
        return out.clone() if copy and out is self else out

    def _cast(self, dt: Any) -> Tensor:
        dt = dtypes.to_dtype(dt)
        return self if dt == self.data.dtype else unary.Cast.apply(self, dt)

    def type(self, dtype: Any) -> Tensor:
        return self._cast(dtype)

    def float(self) -> Tensor:
        return self._cast(np.float32)

    def double(self) -> Tensor:
        return self._cast(np.float64)

    def half(self) -> Tensor:
        return self._cast(np.float16)

    def long(self) -> Tensor:
        return self._cast(np.int64)

    def int(self) -> Tensor:
        return self._cast(np.int32)

    def bool(self) -> Tensor:
        return self._cast(np.bool_)

    def type_as(self, other: Tensor) -> Tensor:
        return self._cast(other.dtype)

    def cpu(self) -> Tensor:
        return self

    def cuda(self, device: Any = None, non_blocking: bool = False) -> Tensor:
        check_device("cuda" if device is None else device)
        return self

    # ---- new tensors like this one (torch's new_* methods) --------------------------------
    def new_tensor(self, data: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
        """A copy of ``data`` as a new leaf, in this tensor's dtype unless ``dtype`` is given."""
        arr = np.array(data.data if isinstance(data, Tensor) else data)
        return Tensor(arr, self.dtype if dtype is None else dtype, requires_grad)

    def new_full(self, size: Sequence[int], fill_value: Number, dtype: Any = None,
                 requires_grad: bool = False) -> Tensor:
        """A new tensor of ``size`` filled with ``fill_value``, in this tensor's dtype."""
        dt = self.dtype if dtype is None else dtypes.to_dtype(dtype)
        return Tensor(np.full(shape_arg((size,)), fill_value, dt), requires_grad=requires_grad)

    def new_zeros(self, *size: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
        return self.new_full(shape_arg(size), 0, dtype, requires_grad)

    def new_ones(self, *size: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
        return self.new_full(shape_arg(size), 1, dtype, requires_grad)

    def new_empty(self, *size: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
        return self.new_full(shape_arg(size), 0, dtype, requires_grad)

    # ---- autograd -------------------------------------------------------------------------
    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Start (or stop) recording operations on this leaf."""
        if not self.is_leaf:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf tensors; use .detach() first"
            )
        if requires_grad and self.data.dtype.kind != "f":
            raise RuntimeError(
                f"only floating point tensors can require gradients, got {self.data.dtype}; "
                "convert with .float() or .double() first"
            )
        self.requires_grad = bool(requires_grad)
        return self

    def detach(self) -> Tensor:
        """A tensor sharing memory with this one, cut from the graph (requires_grad=False)."""
        out = Tensor._make(self.data)
        out._version = self._version
        return out

    def detach_(self) -> Tensor:
        self.grad_fn = None
        self.requires_grad = False
        return self

    def clone(self) -> Tensor:
        return unary.Clone.apply(self)

    def contiguous(self) -> Tensor:
        """This tensor if its memory is C-contiguous, else a contiguous copy (as in torch, the
        copy of a transposed or expanded tensor is fresh memory that can be written to)."""
        return self if self.data.flags.c_contiguous else self.clone()

    def is_contiguous(self) -> bool:
        return bool(self.data.flags.c_contiguous)

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after backward (no-op for leaves)."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on a Tensor that has requires_grad=False")
        if self.grad_fn is None or self._retains:
            return
        node = self.grad_fn
        if node.retained is None:
            node.retained = {}
        node.retained[self._output_nr] = weakref.ref(self)
        self._retains = True

    @property
    def retains_grad(self) -> bool:
        return self._retains

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> _HookHandle:
        """Call ``hook(grad)`` when this tensor's gradient is computed; a return replaces it."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        node, nr = edge_of(self)[:2]
        if node.hooks is None:
            node.hooks = {}
        hooks = node.hooks.setdefault(nr, [])
        hooks.append(hook)
        return _HookHandle(hooks, hook)

    def backward(self, gradient: Tensor | None = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs: Sequence[Tensor] | None = None) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad`` (reverse mode)."""
        if gradient is None and inputs is None and self.requires_grad and self.data.size == 1:
            # The common case (a scalar loss), without the general argument handling.
            one = Tensor._make(np.ones_like(self.data))
            _engine.run_backward((self,), (one,), _api.keep_graph(retain_graph, create_graph),
                                 create_graph)
            return
        _api.backward([self], None if gradient is None else [gradient], retain_graph,
                           create_graph, inputs=inputs)

    # ---- pickling and copying -------------------------------------------------------------
    _copies_grad = True  # deepcopy copies .grad (torch's Tensor; its Parameter does not)

    def __reduce_ex__(self, protocol: int) -> tuple:
        """Pickle the values and ``requires_grad`` only, as torch does: the graph, ``.grad``,
        hooks and view bookkeeping stay behind, so a view or a non-leaf comes back as a leaf
        of its own (numpy pickles a view's values, not its base)."""
        return _rebuild, (type(self), self.data, self.requires_grad)

    def __deepcopy__(self, memo: dict) -> Tensor:
        """A copy in memory of its own, with ``requires_grad`` and a copy of ``.grad``.

        A view of a tensor copied by the same deepcopy stays a view of that copy (as in
        torch); other views get memory of their own. The graph is not copied: a non-leaf
        copies as a leaf (torch refuses instead), the same thing pickling gives."""
        done = memo.get(id(self))
        if done is not None:
            return done
        data = None
        if self._base is not None and self.grad_fn is None:
            data = _same_view(self.data, self._base.data, copy.deepcopy(self._base, memo).data)
        out = type(self)._make(self.data.copy(order="K") if data is None else data)
        if data is not None:
            out._base = memo[id(self._base)]
            out._version = out._base._version
        out.requires_grad = self.requires_grad
        memo[id(self)] = out
        if self.grad is not None and self._copies_grad:
            out.grad = copy.deepcopy(self.grad, memo)
        return out

    # ---- in-place ----
    def add_(self, other: Any, alpha: Number = 1) -> Tensor:
        return views.inplace(self, lambda s: s + (other if alpha == 1 else other * alpha),
                             (other,))

    def sub_(self, other: Any, alpha: Number = 1) -> Tensor:
        return views.inplace(self, lambda s: s - (other if alpha == 1 else other * alpha),
                             (other,))

    def mul_(self, other: Any) -> Tensor:
        return views.inplace(self, lambda s: s * other, (other,))

    def div_(self, other: Any) -> Tensor:
        return views.inplace(self, lambda s: s / other, (other,))

    def clamp_(self, min: Number | None = None, max: Number | None = None) -> Tensor:
        return views.inplace(self, lambda s: s.clamp(min, max))

    def pow_(self, exponent: Any) -> Tensor:
        return views.inplace(self, lambda s: s ** exponent, (exponent,))

    def neg_(self) -> Tensor:
        return views.inplace(self, lambda s: -s)

    def abs_(self) -> Tensor:
        return views.inplace(self, lambda s: s.abs())

    def exp_(self) -> Tensor:
        return views.inplace(self, lambda s: s.exp())

    def sqrt_(self) -> Tensor:
        return views.inplace(self, lambda s: s.sqrt())

    def relu_(self) -> Tensor:
        return views.inplace(self, lambda s: s.relu())

    def sigmoid_(self) -> Tensor:
        return views.inplace(self, lambda s: s.sigmoid())

    def tanh_(self) -> Tensor:
        return views.inplace(self, lambda s: s.tanh())

    def masked_fill_(self, mask: Any, value: Number | Tensor) -> Tensor:
        return views.inplace(self, lambda s: s.masked_fill(mask, value), (value,))

    def copy_(self, src: Any) -> Tensor:
        """Copy ``src`` (broadcast, cast to this dtype) into this tensor."""
        src_t = src if isinstance(src, Tensor) else Tensor(src)
        return views.inplace(self,
            lambda s: shape.CopyInto.apply(s, src_t.to(self.dtype)), (src_t,))

    def fill_(self, value: Number) -> Tensor:
        return views.inplace(self, lambda s: shape.CopyInto.apply(s, value))

    def zero_(self) -> Tensor:
        return self.fill_(0)

    def __setitem__(self, index: Any, value: Any) -> None:
        idx = shape.normalize_index(index)
        if not isinstance(value, Tensor):
            value = Tensor(np.asarray(value, dtype=self.data.dtype))
        views.inplace(self, lambda s: shape.SetItem.apply(s, value.to(self.dtype), idx), (value,))

    # ---- arithmetic -----------------------------------------------------------------------
    def __add__(self, o: Any) -> Tensor:
        return arith.Add.apply(self, o)

    def __radd__(self, o: Any) -> Tensor:
        return arith.Add.apply(o, self)

    def __sub__(self, o: Any) -> Tensor:
        return arith.Sub.apply(self, o)

    def __rsub__(self, o: Any) -> Tensor:
        return arith.Sub.apply(o, self)

    def __mul__(self, o: Any) -> Tensor:
        return arith.Mul.apply(self, o)

    def __rmul__(self, o: Any) -> Tensor:
        return arith.Mul.apply(o, self)

    def __truediv__(self, o: Any) -> Tensor:
        return arith.Div.apply(self, o)

    def __rtruediv__(self, o: Any) -> Tensor:
        return arith.Div.apply(o, self)

    def __pow__(self, o: Any) -> Tensor:
        return arith.Pow.apply(self, o)

    def __rpow__(self, o: Any) -> Tensor:
        return arith.Pow.apply(o, self)

    def __neg__(self) -> Tensor:
        return unary.Neg.apply(self)

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return unary.Abs.apply(self)

    def __matmul__(self, o: Any) -> Tensor:
        return self.matmul(o)

    def __rmatmul__(self, o: Any) -> Tensor:
        return _tensor_like(o, self).matmul(self)

    def __iadd__(self, o: Any) -> Tensor:
        return self.add_(o)

    def __isub__(self, o: Any) -> Tensor:
        return self.sub_(o)

    def __imul__(self, o: Any) -> Tensor:
        return self.mul_(o)

    def __itruediv__(self, o: Any) -> Tensor:
        return self.div_(o)

    add = __add__
    sub = __sub__
    mul = __mul__
    div = __truediv__
    pow = __pow__
    neg = __neg__
    abs = __abs__

    def __floordiv__(self, o: Any) -> Tensor:
        """floor(self / o); like torch, backward through it raises (it has no derivative)."""
        return arith.FloorDivide.apply(self, o)

    def __rfloordiv__(self, o: Any) -> Tensor:
        return arith.FloorDivide.apply(o, self)

    def __mod__(self, o: Any) -> Tensor:
        """self - o * floor(self / o), with the sign of ``o`` (torch.remainder, Python's %)."""
        return arith.Remainder.apply(self, o)

    def __rmod__(self, o: Any) -> Tensor:
        return arith.Remainder.apply(o, self)

    floor_divide = __floordiv__
    remainder = __mod__

    # ---- comparisons and logic (no gradient) ----------------------------------------------
    def __eq__(self, o: Any) -> Tensor:  # type: ignore[override]
        return _constant(np.equal, self, o)

    def __ne__(self, o: Any) -> Tensor:  # type: ignore[override]
        return _constant(np.not_equal, self, o)

    def __lt__(self, o: Any) -> Tensor:
        return _constant(np.less, self, o)

    def __le__(self, o: Any) -> Tensor:
        return _constant(np.less_equal, self, o)

    def __gt__(self, o: Any) -> Tensor:
        return _constant(np.greater, self, o)

    def __ge__(self, o: Any) -> Tensor:
        return _constant(np.greater_equal, self, o)

    def __and__(self, o: Any) -> Tensor:
        return _constant(np.bitwise_and, self, o)

    def __or__(self, o: Any) -> Tensor:
        return _constant(np.bitwise_or, self, o)

    def __xor__(self, o: Any) -> Tensor:
        return _constant(np.bitwise_xor, self, o)

    def __invert__(self) -> Tensor:
        return Tensor._make(np.invert(self.data))

    eq, ne, lt, le, gt, ge = __eq__, __ne__, __lt__, __le__, __gt__, __ge__

    def isnan(self) -> Tensor:
        return Tensor._make(np.isnan(self.data))

    def isinf(self) -> Tensor:
        return Tensor._make(np.isinf(self.data))

    def isfinite(self) -> Tensor:
        return Tensor._make(np.isfinite(self.data))

    def sign(self) -> Tensor:
        return Tensor._make(np.sign(self.data))

    def all(self, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
        dims = norm_dims(dim, self.ndim)  # torch's IndexError for a dim out of range
        return Tensor._make(np.asarray(np.all(self.data, axis=dims, keepdims=keepdim)))

    def any(self, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
        dims = norm_dims(dim, self.ndim)
        return Tensor._make(np.asarray(np.any(self.data, axis=dims, keepdims=keepdim)))

    def allclose(self, other: Any, rtol: float = 1e-5, atol: float = 1e-8) -> bool:
        other = other.data if isinstance(other, Tensor) else np.asarray(other)
        return bool(np.allclose(self.data, other, rtol, atol))

    def equal(self, other: Tensor) -> bool:
        return self.shape == other.shape and bool(np.array_equal(self.data, other.data))

    # ---- elementwise math -----------------------------------------------------------------
    def exp(self) -> Tensor:
        return unary.Exp.apply(self)

    def log(self) -> Tensor:
        return unary.Log.apply(self)

    def sqrt(self) -> Tensor:
        return unary.Sqrt.apply(self)

    def rsqrt(self) -> Tensor:
        return 1 / self.sqrt()

    def sin(self) -> Tensor:
        return unary.Sin.apply(self)

    def cos(self) -> Tensor:
        return unary.Cos.apply(self)

    def tanh(self) -> Tensor:
        return unary.Tanh.apply(self)

    def sigmoid(self) -> Tensor:
        return unary.Sigmoid.apply(self)

    def relu(self) -> Tensor:
        return unary.Relu.apply(self)

    def floor(self) -> Tensor:
        """Round down; the gradient is zero, as in torch."""
        return unary.Rounding.apply(self, np.floor)

    def ceil(self) -> Tensor:
        return unary.Rounding.apply(self, np.ceil)

    def trunc(self) -> Tensor:
        return unary.Rounding.apply(self, np.trunc)

    fix = trunc

    def round(self, decimals: int = 0) -> Tensor:
        """Round half to even (as torch and numpy do); the gradient is zero."""
        return unary.Rounding.apply(self, lambda x: np.round(x, decimals))

    def square(self) -> Tensor:
        return self * self

    def reciprocal(self) -> Tensor:
        return 1 / self

    def log1p(self) -> Tensor:
        """log(1 + x), accurate for tiny x (``log(x + 1)`` would round 1 + x first)."""
        return unary.Log1p.apply(self)

    def expm1(self) -> Tensor:
        """exp(x) - 1, accurate for tiny x (``exp(x) - 1`` would cancel)."""
        return unary.Expm1.apply(self)

    def maximum(self, other: Any) -> Tensor:
        """Elementwise max; at ties the gradient is split evenly, as in torch."""
        return arith.Maximum.apply(self, other)

    def minimum(self, other: Any) -> Tensor:
        return arith.Minimum.apply(self, other)

    def clamp(self, min: Number | Tensor | None = None,
              max: Number | Tensor | None = None) -> Tensor:
        """Clip to [min, max]; the gradient passes where min <= x <= max (torch's rule)."""
        if min is None and max is None:
            raise RuntimeError("clamp: at least one of 'min' or 'max' must not be None")
        return arith.Clamp.apply(self, min, max)

    clip = clamp

    def where(self, condition: Any, other: Any) -> Tensor:
        """``self`` where ``condition`` holds, else ``other`` (torch's method form)."""
        return arith.Where.apply(_bool_mask(condition), self, other)

    def masked_fill(self, mask: Any, value: Number | Tensor) -> Tensor:
        return arith.Where.apply(_bool_mask(mask), value, self)

    def lerp(self, end: Any, weight: Any) -> Tensor:
        return self + weight * (end - self)

    # ---- reductions -----------------------------------------------------------------------
    def sum(self, dim: int | Sequence[int] | None = None, keepdim: bool = False,
            dtype: Any = None) -> Tensor:
        """Sum over ``dim`` (all dims when None); integer and bool sums are int64, as in torch."""
        x = self if dtype is None else self.to(dtype)
        return reduce.Sum.apply(x, norm_dims(dim, x.ndim), keepdim)

    def mean(self, dim: int | Sequence[int] | None = None, keepdim: bool = False,
             dtype: Any = None) -> Tensor:
        x = self if dtype is None else self.to(dtype)
        if x.data.dtype.kind != "f":
            raise RuntimeError(
                f"mean(): input dtype must be floating point, got {x.dtype}; "
                "pass dtype=mg.float32 or call .float() first"
            )
        dims = norm_dims(dim, x.ndim)
        return reduce.Sum.apply(x, dims, keepdim) / count_over(x.shape, dims)  # 0/0: nan if empty

    def amax(self, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
        """Max over ``dim``; ties share the gradient evenly (torch's amax rule)."""
        return reduce.Amax.apply(self, norm_dims(dim, self.ndim), keepdim, True)

    def amin(self, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
        return reduce.Amax.apply(self, norm_dims(dim, self.ndim), keepdim, False)

    def max(self, dim: Any = None, keepdim: bool = False) -> Tensor | MinMax:
        """``max()`` is the largest element; ``max(dim)`` is ``(values, indices)``;
        ``max(other)`` is the elementwise maximum, as in torch."""
        if isinstance(dim, Tensor):
            return self.maximum(dim)
        if dim is None:
            return self.amax()
        return MinMax(*reduce.ArgReduce.apply(self, wrap_dim(int(dim), self.ndim), keepdim,
                                              True))

    def min(self, dim: Any = None, keepdim: bool = False) -> Tensor | MinMax:
        if isinstance(dim, Tensor):
            return self.minimum(dim)
        if dim is None:
            return self.amin()
        return MinMax(*reduce.ArgReduce.apply(self, wrap_dim(int(dim), self.ndim), keepdim,
                                              False))

    def argmax(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        if dim is None:
            return Tensor._make(np.asarray(np.argmax(self.data), dtype=np.int64))
        return self.max(dim, keepdim).indices

    def argmin(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        if dim is None:
            return Tensor._make(np.asarray(np.argmin(self.data), dtype=np.int64))
        return self.min(dim, keepdim).indices

    def prod(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        return reduce.Prod.apply(self, dim, keepdim)

    def var(self, dim: int | Sequence[int] | None = None, correction: int = 1,
            keepdim: bool = False, unbiased: bool | None = None) -> Tensor:
        """Variance with Bessel's correction by default (``correction=1``), as in torch."""
        if unbiased is not None:
            correction = int(unbiased)
        if self.data.dtype.kind != "f":
            raise RuntimeError(f"std and var only support floating point dtypes, got {self.dtype}")
        dims = norm_dims(dim, self.ndim)
        count = count_over(self.shape, dims)
        if count - correction <= 0:
            warnings.warn("var(): degrees of freedom is <= 0. Correction should be strictly "
                          "less than the reduction factor (input numel divided by output "
                          "numel).", UserWarning, stacklevel=2)
        centred = self - reduce.Sum.apply(self, dims, True) / count
        return (centred * centred).sum(dims, keepdim=keepdim) / max(count - correction, 0)

    def std(self, dim: int | Sequence[int] | None = None, correction: int = 1,
            keepdim: bool = False, unbiased: bool | None = None) -> Tensor:
        return self.var(dim, correction, keepdim, unbiased).sqrt()

    def norm(self, p: Any = "fro", dim: int | Sequence[int] | None = None,
             keepdim: bool = False, dtype: Any = None) -> Tensor:
        """torch's ``Tensor.norm``: ``'fro'`` (or 2) the 2-norm of the entries over ``dim``
        (all dims when None), ``'nuc'`` the nuclear norm over two dims, a number p the vector
        p-norm (sum |x|^p)^(1/p), with 0 counting non-zeros and +-inf the max / min |x|.

        >>> mg.tensor([3.0, -4.0]).norm(), mg.tensor([3.0, -4.0]).norm(1)
        (tensor(5.), tensor(7.))
        """
        x = self if dtype is None else self.to(dtype)
        if isinstance(p, str):
            if p == "fro":
                return reduce.Norm2.apply(x, norm_dims(dim, x.ndim), keepdim)
            if p == "nuc":
                dims = tuple(range(x.ndim)) if dim is None else dim
                if isinstance(dims, int) or len(dims) != 2:
                    raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dims}")
                return minigrad.linalg.matrix_norm(x, "nuc", tuple(dims), keepdim)
            raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported; use 'fro', 'nuc' "
                               "or a number")
        dims = norm_dims(dim, x.ndim)
        if p == 2:
            return reduce.Norm2.apply(x, dims, keepdim)
        if p == 1:
            return x.abs().sum(dims, keepdim)
        if p == math.inf or p == -math.inf:
            return x.abs().amax(dims, keepdim) if p > 0 else x.abs().amin(dims, keepdim)
        if p == 0:  # piecewise constant: no gradient, as in torch
            count = np.count_nonzero(x.data, axis=dims, keepdims=keepdim)
            return Tensor._make(np.asarray(count, x.data.dtype if x.is_floating_point()
                                           else dtypes.DEFAULT_FLOAT))
        return reduce.NormP.apply(x, dims, keepdim, float(p))

    def logsumexp(self, dim: int | Sequence[int], keepdim: bool = False) -> Tensor:
        """log(sum(exp(x))) over ``dim``, shifted by the max m so it never overflows.

        As m + log1p(sum(exp(x - m)) - 1), with one maximum's term entering the sum as
        expm1(0) = 0: the small terms then keep their digits (logsumexp([0, -40]) is
        4.2e-18, as in scipy; torch rounds it to 0)."""
        dims = norm_dims(dim, self.ndim)
        m = _max_shift(self, dims)
        z = self - m
        if self.data.size == 0:
            out = z.exp().sum(dims, keepdim=True).log() + m
        else:
            one_max = Tensor._make(_one_max(self.data, dims))
            out = arith.Where.apply(one_max, z.expm1(), z.exp()).sum(dims, keepdim=True)
            out = out.log1p() + m
        return out if keepdim else out.squeeze(dims)

    def softmax(self, dim: int) -> Tensor:
        """exp(x) / sum(exp(x)) over ``dim``, computed from x - max(x) so it never overflows."""
        # Not exp(x - logsumexp(x)): at |x| ~ 1000 rounding logsumexp costs float32 digits.
        dims = norm_dims(dim, self.ndim)
        e = (self - _max_shift(self, dims)).exp()
        return e / e.sum(dims, keepdim=True)

    def log_softmax(self, dim: int) -> Tensor:
        """x - logsumexp(x) over ``dim``, as (x - max) - log(sum(exp(x - max)))."""
        dims = norm_dims(dim, self.ndim)
        z = self - _max_shift(self, dims)
        return z - z.exp().sum(dims, keepdim=True).log()

    def cumsum(self, dim: int) -> Tensor:
        return reduce.Cumsum.apply(self, wrap_dim(dim, self.ndim))

    # ---- shape ----------------------------------------------------------------------------
    def reshape(self, *shape_: Any) -> Tensor:
        s = infer_shape(shape_arg(shape_), self.data.size)
        return views.view(self, shape.Reshape.apply(self, s), lambda b: shape.Reshape.apply(b, s))

    def view(self, *shape_: Any) -> Tensor:
        return self.reshape(*shape_)

    def view_as(self, other: Tensor) -> Tensor:
        return self.reshape(other.shape)

    def reshape_as(self, other: Tensor) -> Tensor:
        return self.reshape(other.shape)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        s, e = wrap_dim(start_dim, self.ndim), wrap_dim(end_dim, self.ndim)
        if self.ndim == 0:
            return self.reshape(1)
        if s > e:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        return self.reshape(self.shape[:s] + (-1,) + self.shape[e + 1:])

    def unflatten(self, dim: int, sizes: Sequence[int]) -> Tensor:
        d = wrap_dim(dim, self.ndim)
        return self.reshape(self.shape[:d] + tuple(sizes) + self.shape[d + 1:])

    def permute(self, *dims: Any) -> Tensor:
        dims_ = tuple(wrap_dim(d, self.ndim) for d in shape_arg(dims))
        if sorted(dims_) != list(range(self.ndim)):
            raise RuntimeError(f"permute: {dims_} is not a permutation of {self.ndim} dims")
        return views.view(self, shape.Permute.apply(self, dims_),
                     lambda b: shape.Permute.apply(b, dims_))

    def transpose(self, dim0: int, dim1: int) -> Tensor:
        d0, d1 = wrap_dim(dim0, self.ndim), wrap_dim(dim1, self.ndim)
        if self.ndim < 2:
            return self
        perm = list(range(self.ndim))
        perm[d0], perm[d1] = perm[d1], perm[d0]
        return self.permute(*perm)

    def swapaxes(self, dim0: int, dim1: int) -> Tensor:
        return self.transpose(dim0, dim1)

    def t(self) -> Tensor:
        if self.ndim > 2:
            raise RuntimeError("t() expects a tensor with <= 2 dimensions; use .mT or transpose")
        return self.T

    def unsqueeze(self, dim: int) -> Tensor:
        d = wrap_dim(dim, self.ndim + 1)
        return self.reshape(self.shape[:d] + (1,) + self.shape[d:])

    def squeeze(self, dim: int | Sequence[int] | None = None) -> Tensor:
        """Drop size-1 dims (only those in ``dim`` when given; others are kept, as in torch)."""
        if dim is None:
            dims = {i for i, n in enumerate(self.shape) if n == 1}
        else:
            dims = {wrap_dim(d, self.ndim) for d in ([dim] if isinstance(dim, int) else dim)}
            dims = {d for d in dims if self.ndim and self.shape[d] == 1}
        return self.reshape(tuple(n for i, n in enumerate(self.shape) if i not in dims))

    def expand(self, *sizes: Any) -> Tensor:
        """Broadcast to ``sizes`` without copying; -1 keeps a dim."""
        sizes_ = shape_arg(sizes)
        lead = len(sizes_) - self.ndim
        if lead < 0:
            raise RuntimeError(f"expand: cannot expand shape {self.shape} to {sizes_}")
        target = tuple(self.shape[i - lead] if (n == -1 and i >= lead) else n
                       for i, n in enumerate(sizes_))
        if target == self.shape:
            return self
        return views.view(self, shape.Expand.apply(self, target),
                     lambda b: shape.Expand.apply(b, target))

    def expand_as(self, other: Tensor) -> Tensor:
        return self.expand(other.shape)

    def broadcast_to(self, shape_: Sequence[int]) -> Tensor:
        return self.expand(tuple(shape_))

    def repeat(self, *sizes: Any) -> Tensor:
        """This tensor tiled ``sizes[i]`` times along dim i (new leading dims as needed): a
        copy, as in torch, so the result can be written to.

        >>> mg.tensor([1, 2]).repeat(2, 2).tolist()
        [[1, 2, 1, 2], [1, 2, 1, 2]]
        """
        reps = shape_arg(sizes)
        if len(reps) < self.ndim:
            raise RuntimeError("Number of dimensions of repeat dims can not be smaller than "
                               "number of dimensions of tensor")
        if any(r < 0 for r in reps):
            raise RuntimeError(f"Trying to create tensor with negative dimension: {list(reps)}")
        return shape.Repeat.apply(self, reps)

    def __getitem__(self, index: Any) -> Tensor:
        idx = shape.normalize_index(index)
        out = shape.GetItem.apply(self, idx)
        if shape.is_basic(idx):
            return views.view(self, out, lambda b: shape.GetItem.apply(b, idx))
        return out

    def flip(self, *dims: Any) -> Tensor:
        """Reverse the order of elements along ``dims`` (a copy, as in torch)."""
        return shape.Flip.apply(self, tuple(wrap_dim(d, self.ndim) for d in shape_arg(dims)))

    def gather(self, dim: int, index: Tensor) -> Tensor:
        """Pick along ``dim``: out[i][j] = self[index[i][j]][j] for dim 0 (and so on); the
        gradient is added back where it was picked, repeats accumulating.

        >>> mg.tensor([[1., 2.], [3., 4.]]).gather(1, mg.tensor([[1], [0]])).tolist()
        [[2.0], [3.0]]
        """
        d = wrap_dim(dim, self.ndim)
        idx = _index_array(index, "gather")
        if self.ndim == 0:
            return self.reshape(1).gather(0, Tensor._make(idx.reshape(1))).reshape(())
        if idx.ndim != self.ndim:
            raise RuntimeError("Index tensor must have the same number of dimensions as input "
                               "tensor")
        for i, (n, m) in enumerate(zip(idx.shape, self.shape)):
            if i != d and n > m:
                raise RuntimeError(f"Size does not match at dimension {i} expected index "
                                   f"{list(idx.shape)} to be no larger than self "
                                   f"{list(self.shape)} apart from dimension {d}")
        _check_bounds(idx, self.shape[d], d)
        grid = np.ix_(*[np.arange(n) for n in idx.shape])  # the other dims, as an open mesh
        return shape.GetItem.apply(self, tuple(idx if i == d else g for i, g in enumerate(grid)))

    def index_select(self, dim: int, index: Tensor) -> Tensor:
        """The entries ``index`` (a 1-D integer tensor) along ``dim``; repeats accumulate in
        the gradient."""
        d = wrap_dim(dim, self.ndim)
        idx = _index_array(index, "index_select").reshape(-1)
        _check_bounds(idx, self.shape[d] if self.ndim else 1, d)
        if self.ndim == 0:
            return self.reshape(1)[idx].reshape(idx.shape if index.ndim else ())
        return shape.GetItem.apply(self, (slice(None),) * d + (idx,))

    def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
        return shape.Diagonal.apply(self, offset, wrap_dim(dim1, self.ndim),
                                    wrap_dim(dim2, self.ndim))

    def diag_embed(self, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
        n = self.ndim + 1
        return shape.DiagEmbed.apply(self, offset, wrap_dim(dim1, n), wrap_dim(dim2, n))

    def diag(self, diagonal: int = 0) -> Tensor:
        """1-D -> square matrix with it on a diagonal; 2-D -> that diagonal (torch.diag)."""
        if self.ndim == 1:
            return self.diag_embed(diagonal)
        if self.ndim == 2:
            return self.diagonal(diagonal)
        raise RuntimeError(f"diag expects a 1-D or 2-D tensor, got {self.ndim}-D")

    def tril(self, diagonal: int = 0) -> Tensor:
        _check_matrix(self, "tril")
        mask = np.tri(*self.shape[-2:], k=diagonal, dtype=bool)
        return arith.Where.apply(Tensor._make(mask), self, 0)

    def triu(self, diagonal: int = 0) -> Tensor:
        _check_matrix(self, "triu")
        mask = ~np.tri(*self.shape[-2:], k=diagonal - 1, dtype=bool)
        return arith.Where.apply(Tensor._make(mask), self, 0)

    def trace(self) -> Tensor:
        if self.ndim != 2:
            raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {self.ndim}")
        return self.diagonal().sum()

    def chunk(self, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
        size = -(-self.shape[wrap_dim(dim, self.ndim)] // chunks)
        return self.split(size, dim)

    def split(self, split_size: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
        d = wrap_dim(dim, self.ndim)
        n = self.shape[d]
        sizes = ([split_size] * (-(-n // split_size)) if isinstance(split_size, int)
                 else list(split_size))
        out, start = [], 0
        for s in sizes:
            s = min(s, n - start)
            out.append(self[(slice(None),) * d + (slice(start, start + s),)])
            start += s
        return tuple(out)

    def unbind(self, dim: int = 0) -> tuple[Tensor, ...]:
        d = wrap_dim(dim, self.ndim)
        return tuple(self[(slice(None),) * d + (i,)] for i in range(self.shape[d]))

    # ---- linear algebra -------------------------------------------------------------------
    def matmul(self, other: Any) -> Tensor:
        """Matrix product with batch broadcasting; 1-D operands as in torch.matmul."""
        other = _tensor_like(other, self)
        if self.ndim == 0 or other.ndim == 0:
            raise RuntimeError("both arguments to matmul need to be at least 1D")
        a = self.unsqueeze(0) if self.ndim == 1 else self
        b = other.unsqueeze(-1) if other.ndim == 1 else other
        out = matmul.MatMul.apply(a, b)
        if self.ndim == 1:  # first: -2 is still the added row dim
            out = out.squeeze(-2)
        if other.ndim == 1:
            out = out.squeeze(-1)
        return out

    def mm(self, other: Tensor) -> Tensor:
        return self.matmul(other)

    def bmm(self, mat2: Tensor) -> Tensor:
        """Batched matrix product of (b, n, m) and (b, m, p) tensors; no broadcasting."""
        for name, t in (("batch1", self), ("batch2", mat2)):
            if t.ndim != 3:
                raise RuntimeError(f"{name} must be a 3D tensor")
        b, _, m = self.shape
        if mat2.shape[:2] != (b, m):
            raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                               f"[{b}, {m}] but got: [{mat2.shape[0]}, {mat2.shape[1]}].")
        return matmul.MatMul.apply(self, mat2)

    def dot(self, other: Tensor) -> Tensor:
        return (self * other).sum()


# ---- helpers used above and by ops ---------------------------------------------------------
def _check_matrix(x: Tensor, fn: str) -> None:
    if x.ndim < 2:  # numpy would broadcast a 1-D tensor against a 2-D mask
        raise RuntimeError(f"{fn}: input tensor must have at least 2 dimensions")


def _rebuild(cls: type, data: np.ndarray, requires_grad: bool) -> Tensor:
    """Unpickle a Tensor (or Parameter) from its values and requires_grad."""
    t = cls._make(data)
    t.requires_grad = bool(requires_grad)
    return t


def _same_view(view: np.ndarray, base: np.ndarray, new_base: np.ndarray) -> np.ndarray | None:
    """The view of ``new_base`` that ``view`` is of ``base`` (same offset and strides), or
    None when ``new_base`` does not lay its memory out like ``base``."""
    if new_base.strides != base.strides or new_base.shape != base.shape:
        return None
    offset = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    try:
        out = np.ndarray(view.shape, view.dtype, buffer=new_base, offset=offset,
                         strides=view.strides)
    except (TypeError, ValueError):  # a base numpy cannot hand out as a buffer
        return None
    out.flags.writeable = view.flags.writeable
    return out


def _index_array(index: Any, fn: str) -> np.ndarray:
    idx = np.asarray(index.data if isinstance(index, Tensor) else index)
    if idx.dtype.kind not in "iu":
        raise RuntimeError(f"{fn}(): Expected dtype int64 for index, got {idx.dtype}")
    return idx


def _check_bounds(idx: np.ndarray, size: int, dim: int) -> None:
    """torch refuses negative or too large indices here, where numpy would wrap or raise."""
    bad = idx[(idx < 0) | (idx >= size)]
    if bad.size:
        raise IndexError(f"index {bad.flat[0]} is out of bounds for dimension {dim} with size "
                         f"{size}")


def check_device(device: Any) -> None:
    """minigrad has one device: refuse any other clearly instead of ignoring it."""
    kind = str(getattr(device, "type", device)).split(":")[0]
    if kind != "cpu":
        raise RuntimeError(f"minigrad runs on the CPU only; cannot use device {device!r}")


_DEVICE_NAMES = ("cpu", "cuda", "mps", "xpu", "meta", "hip", "xla", "hpu", "ipu", "mtia")


def to_args(args: Sequence[Any], dtype: Any = None, device: Any = None) -> np.dtype | None:
    """The dtype torch's ``to(...)`` arguments ask for (None: keep it); checks the device."""
    for a in args:
        if isinstance(a, Tensor):
            dtype = a.dtype
        elif isinstance(a, str) and a.split(":")[0] in _DEVICE_NAMES:
            device = a
        elif a is not None:
            dtype = a
    if device is not None:
        check_device(device)
    return None if dtype is None else dtypes.to_dtype(dtype)


def _max_shift(x: Tensor, dims: tuple[int, ...]) -> Tensor:
    """max(x) over ``dims`` (kept), as a constant: a shift softmax and logsumexp are exact
    under, so it needs no gradient; infinite maxima become 0 to avoid inf - inf."""
    m = np.max(x.data, axis=dims, keepdims=True) if x.data.size else np.zeros(())
    return Tensor._make(np.where(np.isfinite(m), m, 0).astype(x.data.dtype))


def _one_max(a: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    """A bool mask, True at one maximum (the first) of each slice over ``dims``."""
    rest = [d for d in range(a.ndim) if d not in dims]
    moved = np.transpose(a, rest + list(dims))
    lead = moved.shape[:len(rest)]
    flat = moved.reshape(lead + (-1,))
    hit = np.arange(flat.shape[-1]) == np.argmax(flat, axis=-1)[..., None]
    return np.transpose(hit.reshape(moved.shape), np.argsort(rest + list(dims)))


def _tensor_like(x: Any, ref: Tensor) -> Tensor:
    if isinstance(x, Tensor):
        return x
    arr = np.asarray(x)
    return Tensor._make(arr.astype(ref.dtype) if arr.dtype.kind == "f" else arr)


def _bool_mask(x: Any) -> Tensor:
    t = x if isinstance(x, Tensor) else Tensor._make(np.asarray(x))
    if t.data.dtype != np.bool_:
        raise TypeError(f"expected a bool condition/mask, got dtype {t.data.dtype}")
    return t


def _constant(fn: Callable, a: Any, b: Any) -> Tensor:
    """Apply a numpy function that has no gradient (comparisons, floor division)."""
    x, y = arith.operands(a, b)
    return Tensor._make(np.asarray(fn(x, y)))


bind_tensor_class(Tensor)
