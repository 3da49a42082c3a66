"""Module-level tensor functions, torch style: ``mg.cat``, ``mg.exp(x)``, ``mg.where`` ...

Most are a Tensor method itself (``mg.exp is Tensor.exp``): every public method of the
elementwise, special-function, reduction, sorting and product families, and the methods named in
``METHOD_FORMS`` from the others. The rest (joining, broadcasting, number-first arithmetic,
``where``'s argument order) are defined here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ._dims import wrap_dim
from ._tensor import ElementwiseMethods, ProductMethods, ReduceMethods, SortMethods, SpecialMethods
from ._tensor.arith import tensor_like
from ._tensor.complex import complex, is_complex, polar, view_as_complex, view_as_real  # noqa: F401  (public: in __all__ below)
from ._tensor.elementwise import bool_mask
from .ops import arith, shape
from .tensor import Tensor

# Whole families: a method added to one of them is public as a function too (and in
# mg.__all__), with no list to extend.
WHOLE_FAMILIES = (ElementwiseMethods, SpecialMethods, ReduceMethods, SortMethods,
                  ProductMethods)
# The function forms from the other families (arithmetic, shape, indexing, graph), by name:
# those families also hold methods torch has no function for (view, expand, scatter_ ...).
METHOD_FORMS = (
    "abs", "absolute", "adjoint", "allclose", "angle", "argwhere", "bmm", "chunk", "clone", "conj",
    "conj_physical", "detach", "diag", "diag_embed", "diagonal", "dot", "dsplit", "eq",
    "equal", "flatten", "flip", "fliplr", "flipud", "float_power", "floor_divide", "gather", "ge",
    "gt", "hsplit", "index_add", "index_copy", "index_fill", "index_select", "is_conj",
    "is_floating_point", "isclose", "le", "logical_and", "logical_not", "logical_or", "logical_xor",
    "lt", "masked_select", "mm", "moveaxis", "movedim", "multiply", "narrow", "ne", "neg",
    "negative", "nonzero", "numel", "permute", "positive", "ravel", "remainder",
    "repeat_interleave", "reshape", "resolve_conj", "roll", "rot90", "scatter", "scatter_add",
    "scatter_reduce", "select", "split", "squeeze", "subtract", "swapaxes", "swapdims", "t", "take",
    "take_along_dim", "tensor_split", "tile", "trace", "transpose", "tril", "triu", "true_divide",
    "unbind", "unsqueeze", "vsplit",
)
_FORMS = [n for family in WHOLE_FAMILIES for n in vars(family) if not n.startswith("_")]
_FORMS += METHOD_FORMS
# Bound first, so that the definitions below replace the few whose function form differs.
globals().update({n: getattr(Tensor, n) for n in _FORMS})


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Concatenate along an existing dim."""
    ts = list(tensors)
    if not ts:
        raise RuntimeError("cat expects a non-empty list of tensors")
    if ts[0].ndim == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = wrap_dim(dim, ts[0].ndim)
    for t in ts[1:]:
        rest, ref = t.shape[:d] + t.shape[d + 1:], ts[0].shape[:d] + ts[0].shape[d + 1:]
        if t.ndim != ts[0].ndim or rest != ref:
            raise RuntimeError(f"cat: sizes of tensors must match except in dimension {d}: "
                               f"got {tuple(ts[0].shape)} and {tuple(t.shape)}")
    return shape.Cat.apply(d, *ts)


concat = concatenate = cat


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join along a new dim; all tensors must have the same shape."""
    ts = list(tensors)
    if not ts:
        raise RuntimeError("stack expects a non-empty list of tensors")
    if len({t.shape for t in ts}) > 1:  # (not any(): this module binds mg.any)
        raise RuntimeError(f"stack expects each tensor to be equal size, got "
                           f"{[tuple(t.shape) for t in ts]}")
    d = wrap_dim(dim, ts[0].ndim + 1)
    return cat([t.unsqueeze(d) for t in ts], d)


def where(condition: Any, input: Any = None, other: Any = None) -> Any:
    """``input`` where ``condition`` holds, else ``other``; the condition gets no gradient.
    With the condition alone, its non-zero indices, one tensor per dim (torch's
    ``where(condition)``, ``nonzero(as_tuple=True)``).

    >>> mg.where(mg.tensor([0.0, 2.0]) > 1)
    (tensor([1]),)
    """
    if input is None and other is None:
        return tensor_like(condition, condition).nonzero(as_tuple=True)
    return arith.Where.apply(bool_mask(condition), input, other)


def matmul(input: Tensor, other: Any) -> Tensor:
    return input.matmul(other)


def pow(input: Any, exponent: Any) -> Tensor:
    """input ** exponent; either may be a number (torch.pow's ``self`` number first)."""
    return arith.Pow.apply(input, exponent)


def add(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    return arith.Add.apply(input, other if alpha == 1 else other * alpha)


def sub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    return arith.Sub.apply(input, other if alpha == 1 else other * alpha)


def mul(input: Any, other: Any) -> Tensor:
    return arith.Mul.apply(input, other)


def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    """input / other, rounded as Tensor.divide rounds when ``rounding_mode`` is given; either
    may be a number.

    >>> mg.div(mg.tensor([7, -7]), 2, rounding_mode="floor")
    tensor([ 3, -4])
    """
    if rounding_mode is None:
        return arith.Div.apply(input, other)
    x = input if is_tensor(input) else Tensor(input)  # a number as torch wraps it (0-d)
    return x.divide(other, rounding_mode=rounding_mode)


divide = div  # torch's alias (a number first too, which Tensor.divide cannot take)


def polygamma(n: int, input: Tensor) -> Tensor:
    """psi^(n)(input), number first as in torch.

    >>> mg.polygamma(1, mg.tensor([1.0])).round(decimals=4)
    tensor([1.6449])
    """
    return input.polygamma(n)


def real(input: Tensor) -> Tensor:
    """The real parts of ``input``, a view (torch.real).

    >>> mg.real(mg.tensor([1 + 2j]))
    tensor([1.])
    """
    return input.real


def imag(input: Tensor) -> Tensor:
    """The imaginary parts of a complex ``input``, a view (torch.imag).

    >>> mg.imag(mg.tensor([1 + 2j]))
    tensor([2.])
    """
    return input.imag


def is_tensor(x: Any) -> bool:
    return isinstance(x, Tensor)


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))


def broadcast_to(input: Tensor, size: Sequence[int]) -> Tensor:
    return tensor_like(input, input).expand(tuple(size))


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """Each tensor expanded (a view) to the shapes' common broadcast shape.

    >>> [t.shape for t in mg.broadcast_tensors(mg.ones(3, 1), mg.ones(4))]
    [(3, 4), (3, 4)]
    """
    common = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(t.expand(common) for t in tensors)


__all__ = sorted({*_FORMS, "add", "broadcast_shapes", "broadcast_tensors", "broadcast_to", "cat",
                   "complex", "concat", "concatenate", "div", "divide", "imag", "is_complex",
                   "is_tensor", "matmul", "mul", "polar", "polygamma", "pow", "real", "stack",
                   "sub", "view_as_complex", "view_as_real", "where"})
