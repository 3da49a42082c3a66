"""Shape methods: reshape/view, permute/transpose, squeeze/unsqueeze, expand, repeat, flip and
splitting. Those numpy answers with a view are marked as views (autograd/views.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._dims import infer_shape, shape_arg, wrap_dim
from ..autograd import views
from ..ops import shape

if TYPE_CHECKING:
    from ..tensor import Tensor


class ShapeMethods:
    """The shape methods of Tensor (mixed into it by tensor.py)."""

    @property
    def T(self) -> Tensor:
        return _permuted(self, tuple(reversed(range(self._array.ndim))))

    @property
    def mT(self) -> Tensor:
        n = self._array.ndim
        if n < 2:
            raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. "
                               f"Got {n}-D tensor.")
        return _permuted(self, _SWAP_LAST[n] if n < len(_SWAP_LAST) else _swap_last(n))

    def reshape(self, *shape_: Any) -> Tensor:
        s = infer_shape(shape_arg(shape_), self._array.size)
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
        n = self._array.ndim
        dims_ = tuple([wrap_dim(d, n) for d in shape_arg(dims)])
        if sorted(dims_) != list(range(n)):
            raise RuntimeError(f"permute: {dims_} is not a permutation of {n} dims")
        return _permuted(self, dims_)

    def transpose(self, dim0: int, dim1: int) -> Tensor:
        n = self._array.ndim
        d0, d1 = wrap_dim(dim0, n), wrap_dim(dim1, n)
        if n < 2:
            return self
        perm = list(range(n))
        perm[d0], perm[d1] = perm[d1], perm[d0]
        return _permuted(self, tuple(perm))

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

    def flip(self, *dims: Any) -> Tensor:
        """Reverse the order of elements along ``dims`` (a copy, as in torch)."""
        return shape.Flip.apply(self, tuple(wrap_dim(d, self.ndim) for d in shape_arg(dims)))

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


def _permuted(t: Tensor, dims: tuple[int, ...]) -> Tensor:
    """``t`` with its axes in the order ``dims`` (a permutation, checked by the caller)."""
    return views.view(t, shape.Permute.apply(t, dims), lambda b: shape.Permute.apply(b, dims))


def _swap_last(n: int) -> tuple[int, ...]:
    return tuple(range(n - 2)) + (n - 1, n - 2)


_SWAP_LAST = [(), (), *[_swap_last(n) for n in range(2, 9)]]  # mT's permutation, prebuilt
