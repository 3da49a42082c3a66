"""Tensor: an ndarray plus autograd metadata. This file holds the class core: construction,
metadata, conversion out, the autograd entry points (requires_grad_, detach, hooks,
backward) and copying. The operator, elementwise, reduction, shape, indexing, in-place and
dtype methods live in ``_tensor/``, one family per file; they delegate to the Functions in
ops/."""

from __future__ import annotations

import copy
import weakref
from collections.abc import Callable, Sequence
from typing import Any, SupportsIndex

import numpy as np

from . import dtypes
from ._dims import wrap_dim
from ._tensor import (
    ArithMethods,
    ComplexMethods,
    ConvertMethods,
    ElementwiseMethods,
    IndexingMethods,
    InplaceMethods,
    LinalgMethods,
    ProductMethods,
    ReduceMethods,
    ShapeMethods,
    SortMethods,
    SpecialMethods,
)
from .autograd import api as _api
from .autograd import engine as _engine
from .autograd.function import bind_tensor_class, make_tensor
from .autograd.graph import edge_of
from .autograd.views import Views
from .dtypes import Number
from .ops import unary

_new = object.__new__

# numpy's functions as globals: CPython 3.11 does not cache lookups on the numpy module
# (each np.<name> is a full attribute lookup), and these are read on every op.
_ndarray, _np_array = np.ndarray, np.array
_CANONICAL = dtypes.CANONICAL


def _as_array(data: Any, dtype: Any = None) -> np.ndarray:
    """torch.tensor's conversion: Python floats become float32, complex numbers complex64,
    ints int64; arrays keep dtype."""
    if isinstance(data, Tensor):
        arr = data._array
    elif isinstance(data, (np.ndarray, np.generic)):
        arr = np.asarray(data)  # numpy arrays and scalars keep their dtype
    else:
        arr = np.asarray(data)
        if dtype is None and arr.dtype.kind == "f":
            arr = arr.astype(dtypes.DEFAULT_FLOAT)
        elif dtype is None and arr.dtype.kind == "c":
            arr = arr.astype(dtypes.complex_of(dtypes.DEFAULT_FLOAT))
        elif dtype is None and arr.dtype.kind in "iu":
            arr = arr.astype(np.int64)
    if dtype is not None:
        arr = arr.astype(dtypes.to_dtype(dtype), copy=False)
    if dtypes.category(arr.dtype) > 3:
        raise TypeError(f"minigrad tensors hold float, complex, integer or bool data, not "
                        f"{arr.dtype}")
    return arr


class _HookHandle:
    def __init__(self, hooks: list, hook: Callable) -> None:
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


class Tensor(ArithMethods, ElementwiseMethods, SpecialMethods, ReduceMethods, ShapeMethods,
             IndexingMethods, InplaceMethods, ConvertMethods, LinalgMethods,
             SortMethods, ProductMethods, ComplexMethods):
    """An n-dimensional array that can record the operations applied to it.

    >>> x = mg.tensor([1.0, 2.0], requires_grad=True)
    >>> (x * x).sum().backward(); x.grad
    tensor([2., 4.])
    """

    __array_priority__ = 1000  # so ndarray (op) Tensor defers to Tensor's reflected operator

    # Every tensor has these two (set by __init__ and make_tensor); declared here, no value.
    _array: np.ndarray  # the values
    _version_counter: list[int]  # in-place writes, one cell shared with its views

    # Class-level defaults keep op outputs cheap to create: make_tensor sets data and version.
    requires_grad: bool = False
    grad: Tensor | None = None
    grad_fn: Any = None
    _output_nr: int = 0
    _accumulator: Any = None
    _base: Tensor | None = None
    _replay: Callable[[Tensor], Tensor] | None = None  # a view: redo it from its _base
    _views: Views | None = None  # a base: its views, rebased by in-place ops
    _retains: bool = False

    def __init__(self, data: Any, dtype: Any = None, requires_grad: bool = False) -> None:
        self._array = _as_array(data, dtype)
        self._version_counter = [0]
        if requires_grad:
            self.requires_grad_(True)

    @classmethod
    def _make(cls, data: np.ndarray) -> Tensor:
        """``make_tensor`` (autograd/function.py) for this class: wrap an ndarray without a
        copy, as an instance of ``cls`` (so a Parameter's copies and unpickled Parameters stay
        Parameters). As there, a numpy scalar, numpy's answer to arithmetic on 0-d arrays
        (``a0 + b0``, ``np.sqrt(a0)``), becomes a 0-d array: ``._array`` is always an
        ndarray."""
        t = _new(cls)
        t._array = data if type(data) is _ndarray else np.asarray(data)
        t._version_counter = [0]
        return t

    # ---- metadata -------------------------------------------------------------------------
    @property
    def data(self) -> Tensor:
        """This tensor's values as a tensor outside autograd, as torch's ``.data``: it shares
        memory, never requires grad, and changes made through it are not seen by autograd
        (no version bump), so ``p.data.mul_(0.8)`` rescales a parameter silently. Prefer
        ``detach()``, whose in-place changes autograd does check. The ndarray itself is
        ``numpy()``.

        >>> p = mg.ones(2, requires_grad=True); _ = p.data.mul_(0.5); p
        tensor([0.5, 0.5], requires_grad=True)
        """
        return make_tensor(self._array)

    @data.setter
    def data(self, value: Tensor) -> None:
        # torch's rule: the tensor keeps its identity, grad flags and hooks; only its values
        # (and shape) change. Only a Tensor is accepted, as in torch.
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be set to a Tensor, got {type(value).__name__}; wrap "
                            "it with mg.as_tensor(...)")
        self._array = value._array

    @property
    def shape(self) -> tuple[int, ...]:
        return self._array.shape

    @property
    def ndim(self) -> int:
        return self._array.ndim

    @property
    def dtype(self) -> np.dtype:
        dt = self._array.dtype
        return _CANONICAL.get(dt, dt)  # the one object per dtype: `is mg.float64` holds

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def _version(self) -> int:
        """How many in-place writes this tensor's memory has had, counted in the cell that
        its views share (``_version_counter``), as torch's ``_version``."""
        return self._version_counter[0]

    def size(self, dim: int | None = None) -> tuple[int, ...] | int:
        return self.shape if dim is None else self.shape[wrap_dim(dim, self.ndim)]

    def dim(self) -> int:
        return self.ndim

    def numel(self) -> int:
        return self._array.size

    def is_floating_point(self) -> bool:
        return self._array.dtype.kind == "f"

    def is_complex(self) -> bool:
        """Whether the dtype is complex64 or complex128."""
        return self._array.dtype.kind == "c"

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    # By identity, as torch's: the comparison operators build tensors, so Python would
    # otherwise drop the hash. object's own runs in C.
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        body = np.array2string(self._array, separator=", ", prefix="tensor(")
        extra = ""
        default = dtypes.DEFAULT_FLOAT  # as torch, the default float's dtype goes unsaid
        if self._array.dtype not in (default, np.int64, np.bool_, dtypes.complex_of(default)):
            extra += f", dtype=minigrad.{self._array.dtype}"
        if self.grad_fn is not None:
            extra += f", grad_fn={self.grad_fn!r}"
        elif self.requires_grad:
            extra += ", requires_grad=True"
        return f"tensor({body}{extra})"

    # ---- conversion -----------------------------------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The underlying ndarray (shared memory); like torch, refused while it requires grad,
        unless ``force`` (torch's detach().numpy(): the same memory still)."""
        if self.requires_grad and not force:
            raise RuntimeError(
                "Can't call numpy() on a Tensor that requires grad. Use tensor.detach().numpy()."
            )
        return self._array

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        arr = self.numpy()
        return arr if dtype is None else arr.astype(dtype)

    def item(self) -> Number:
        if self._array.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._array.size} elements cannot be converted to a Python scalar"
            )
        return self._array.reshape(()).item()

    def tolist(self) -> Any:
        return self._array.tolist()

    def __float__(self) -> float:
        return float(self._real_item("double"))

    def __int__(self) -> int:
        return int(self._real_item("int64_t"))

    def _real_item(self, ctype: str) -> Number:
        """item(), refused for a complex value with an imaginary part (torch's error)."""
        x = self.item()
        if isinstance(x, complex):
            if x.imag != 0:
                raise RuntimeError(f"value cannot be converted to type {ctype} without "
                                   "overflow")
            return x.real
        return x

    def __bool__(self) -> bool:
        if self._array.size != 1:
            raise RuntimeError("Boolean value of a Tensor with more than one value is ambiguous")
        return bool(self._array.reshape(()))

    def __index__(self) -> int:
        if self._array.dtype.kind not in "iub" or self._array.size != 1:
            raise TypeError("only integer tensors of a single element can be used as an index")
        return int(self.item())

    def __format__(self, spec: str) -> str:
        """A 0-d tensor formats as its number (``f"{loss:.4f}"``), as torch; others as str."""
        if self._array.ndim == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    # ---- autograd -------------------------------------------------------------------------
    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Start (or stop) recording operations on this leaf."""
        if not self.is_leaf:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf tensors; use .detach() first"
            )
        if requires_grad and self._array.dtype.kind not in "fc":
            raise RuntimeError(
                f"only Tensors of floating point and complex dtype can require gradients, got "
                f"{self._array.dtype}; convert with .float() or .double() first"
            )
        self.requires_grad = bool(requires_grad)
        return self

    def detach(self) -> Tensor:
        """A tensor sharing memory with this one, cut from the graph (requires_grad=False)."""
        out = make_tensor(self._array)
        out._version_counter = self._version_counter
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
        return self if self._array.flags.c_contiguous else self.clone()

    def is_contiguous(self) -> bool:
        return bool(self._array.flags.c_contiguous)

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after backward (no-op for leaves)."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on a Tensor that has requires_grad=False")
        if self.grad_fn is None or self._retains:
            return
        node = self.grad_fn
        if node._retained is None:
            node._retained = {}
        node._retained[self._output_nr] = weakref.ref(self)
        self._retains = True

    @property
    def retains_grad(self) -> bool:
        return self._retains

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> _HookHandle:
        """Call ``hook(grad)`` when this tensor's gradient is computed; a return replaces it."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        edge = edge_of(self)
        assert edge is not None  # it requires grad, so its gradient goes somewhere
        node, nr = edge[:2]
        if node._hooks is None:
            node._hooks = {}
        hooks = node._hooks.setdefault(nr, [])
        hooks.append(hook)
        return _HookHandle(hooks, hook)

    def backward(self, gradient: Tensor | None = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs: Sequence[Tensor] | None = None) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad`` (reverse mode)."""
        if (gradient is None and inputs is None and self.requires_grad
                and self._array.size == 1 and self._array.dtype.kind == "f"):
            # The common case (a scalar loss), without the general argument handling.
            arr = self._array  # np.ones_like costs 4x as much as this, in a hot path
            one = _new(Tensor)  # make_tensor, inlined
            one._array = (_np_array(1, arr.dtype) if arr.ndim == 0
                          else np.ones(arr.shape, arr.dtype))
            one._version_counter = [0]
            _engine.run_backward((self,), (one,), retain_graph, create_graph)
            return
        _api.backward([self], None if gradient is None else [gradient], retain_graph,
                           create_graph, inputs=inputs)

    # ---- pickling and copying -------------------------------------------------------------
    _copies_grad = True  # deepcopy copies .grad (torch's Tensor; its Parameter does not)

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple:
        """Pickle the values and ``requires_grad`` only, as torch does: the graph, ``.grad``,
        hooks and view bookkeeping stay behind, so a view or a non-leaf comes back as a leaf
        of its own (numpy pickles a view's values, not its base)."""
        return _rebuild, (type(self), self._array, self.requires_grad)

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
            new_base = copy.deepcopy(self._base, memo)._array
            data = _same_view(self._array, self._base._array, new_base)
        out = type(self)._make(self._array.copy(order="K") if data is None else data)
        if data is not None:
            out._base = memo[id(self._base)]
            out._version_counter = out._base._version_counter
        out.requires_grad = self.requires_grad
        memo[id(self)] = out
        if self.grad is not None and self._copies_grad:
            out.grad = copy.deepcopy(self.grad, memo)
        return out


def _rebuild(cls: type[Tensor], data: np.ndarray, requires_grad: bool) -> Tensor:
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


bind_tensor_class(Tensor)
