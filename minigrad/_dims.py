"""Dimension arithmetic shared by Tensor methods, ops and nn: plain ints and tuples, no Tensor.

Each helper raises torch's error (type and wording) for a dim or shape torch refuses.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

_ALL = [tuple(range(n)) for n in range(33)]  # norm_dims(None, n), prebuilt for the hot path


def wrap_dim(dim: int, ndim: int) -> int:
    """``dim`` as a non-negative index into ``ndim`` dims (a 0-d tensor counts as 1-d, as in
    torch), raising torch's IndexError instead of wrapping around when out of range."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n


def norm_dims(dim: int | Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    """Reduction dims as sorted non-negative ints; None, like an empty tuple in torch, means
    all of them."""
    if type(dim) is int and -ndim <= dim < ndim:  # one dim, in range: the common call
        return (dim + ndim,) if dim < 0 else (dim,)
    if dim is None:  # all of them (a loss's sum or mean): the next most common
        return _ALL[ndim] if ndim < 33 else tuple(range(ndim))
    if type(dim) is tuple and dim:  # already the answer (the engine's broadcast sums)?
        last = -1
        for d in dim:
            if type(d) is not int or not last < d < ndim:
                break
            last = d
        else:
            return dim
    if isinstance(dim, (int, np.integer)):
        dims: Sequence[int] = (dim,)
    elif len(dim) == 0:  # (), as torch reads it: all of them, as None
        return norm_dims(None, ndim)
    else:
        dims = dim
    wrapped = {wrap_dim(d, ndim) for d in dims}
    if len(wrapped) != len(dims):
        check_distinct([wrap_dim(d, ndim) for d in dims])
    return tuple(sorted(wrapped)) if ndim else ()


def check_distinct(dims: Sequence[int]) -> None:
    """torch's error for wrapped ``dims`` that name one dim twice."""
    twice = next((w for i, w in enumerate(dims) if w in dims[:i]), None)
    if twice is not None:
        raise RuntimeError(f"dim {twice} appears multiple times in the list of dims")


def legacy_unbiased(dim: Any, unbiased: bool | None) -> tuple[Any, bool | None]:
    """(dim, unbiased) for var / std, reading torch's old ``x.var(False)``: a bool where the
    dim goes is ``unbiased``, over all dims (it is no dim: False would otherwise be dim 0)."""
    if isinstance(dim, bool):
        return None, dim
    return dim, unbiased


def shape_arg(args: tuple, by_name: Any = None, name: str = "size",
              fn: str = "") -> tuple[int, ...]:
    """Accept ``f(2, 3)``, ``f((2, 3))`` and, given the keyword's value ``by_name``, torch's
    ``f(size=(2, 3))`` (``name`` and ``fn`` for the error when both are given)."""
    if by_name is not None:
        if args:
            raise TypeError(f"{fn}() got multiple values for argument '{name}'")
        args = (by_name,)
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple([int(n) for n in args[0]])
    return tuple([int(n) for n in args])


def infer_shape(shape: tuple[int, ...], size: int) -> tuple[int, ...]:
    """Resolve one -1 in ``shape`` and check the element count, with torch's message."""
    if -1 not in shape:
        if math.prod(shape) != size:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {size}")
        return shape
    i = shape.index(-1)
    rest = shape[:i] + shape[i + 1:]
    if -1 in rest:
        raise RuntimeError("only one dimension can be inferred (-1)")
    known = math.prod(rest)
    if known == 0 or size % known:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {size}")
    return shape[:i] + (size // known,) + shape[i + 1:]


def inverse_permutation(perm: tuple[int, ...]) -> tuple[int, ...]:
    """The permutation that undoes ``perm``: x.permute(perm).permute(inverse) is x."""
    return tuple(sorted(range(len(perm)), key=perm.__getitem__))


def count_over(shape: tuple[int, ...], dims: tuple[int, ...]) -> int:
    """How many elements a reduction over ``dims`` combines."""
    return math.prod(shape[d] for d in dims)


def numpy_dims(fn: Callable) -> Callable:
    """Let a method taking ``dim`` (and ``keepdim``) also take numpy's ``axis=`` (and
    ``keepdims=``), as torch's do; passing a name and its alias is a TypeError. (sum and
    mean, which backward calls per broadcast, use ``numpy_kwargs`` inline instead: the
    wrapper costs a call.)"""
    params = inspect.signature(fn).parameters
    names = list(params)
    pos = names.index("dim") if params["dim"].kind != params["dim"].KEYWORD_ONLY else None
    aliases = [("axis", "dim", pos)]
    if "keepdim" in params:
        keep = params["keepdim"]
        aliases.append(("keepdims", "keepdim",
                        names.index("keepdim") if keep.kind != keep.KEYWORD_ONLY else None))

    @functools.wraps(fn)
    def method(*args: Any, **kwargs: Any) -> Any:
        if kwargs and ("axis" in kwargs or "keepdims" in kwargs):
            for alias, name, at in aliases:
                if alias in kwargs:
                    if name in kwargs or (at is not None and len(args) > at):
                        raise TypeError(f"{fn.__name__}() got multiple values for argument "
                                        f"'{name}' ('{alias}' is its numpy name)")
                    kwargs[name] = kwargs.pop(alias)
        return fn(*args, **kwargs)

    return method


def numpy_kwargs(fn: str, extra: dict, dim: Any, keepdim: bool) -> tuple[Any, bool]:
    """(dim, keepdim) with numpy's ``axis`` / ``keepdims`` from ``extra`` (a method's
    ``**kwargs``) taken in; anything else, or a name given twice, is a TypeError."""
    extra = dict(extra)
    if "axis" in extra:
        if dim is not None:
            raise TypeError(f"{fn}() got multiple values for argument 'dim' ('axis' is its "
                            "numpy name)")
        dim = extra.pop("axis")
    if "keepdims" in extra:
        if keepdim:
            raise TypeError(f"{fn}() got multiple values for argument 'keepdim' ('keepdims' "
                            "is its numpy name)")
        keepdim = extra.pop("keepdims")
    if extra:
        raise TypeError(f"{fn}() got an unexpected keyword argument '{next(iter(extra))}'")
    return dim, keepdim
