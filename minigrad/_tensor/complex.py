"""Complex tensors' methods: the real and imaginary parts as views, the conjugate, the
phase; and the functions between complex tensors and real ones (``mg.complex``,
``mg.polar``, ``mg.view_as_real``, ``mg.view_as_complex``).

``conj()`` is a copy here, where torch returns a lazy view with a conjugate bit: values,
dtypes and gradients are the same, ``is_conj()`` is always False, and a write into the
conjugate does not reach the tensor (torch's would). ``.real`` and ``.imag`` are views as
torch's: writes through them change the tensor, and gradients flow through the writes."""

# mypy: disable-error-code="misc"
# (The methods take self as the Tensor they are mixed into, which mypy's check that a
# self annotation is a supertype of its class, error code misc, would refuse.)

from __future__ import annotations

from typing import TYPE_CHECKING

from ..autograd import views
from ..ops import complex as ops

if TYPE_CHECKING:
    from ..tensor import Tensor


class ComplexMethods:
    """The complex methods of Tensor (mixed into it by tensor.py)."""

    @property
    def real(self: Tensor) -> Tensor:
        """The real parts, a view (a real tensor's is itself, as torch's).

        >>> z = mg.tensor([1 + 2j]); _ = z.real.mul_(3); z
        tensor([3.+2.j])
        """
        if self._array.dtype.kind != "c":
            return self
        return views.view(self, ops.Real.apply(self), ops.Real.apply)

    @property
    def imag(self: Tensor) -> Tensor:
        """The imaginary parts, a view; refused for real tensors, as torch does.

        >>> mg.tensor([1 + 2j, 3 - 1j]).imag
        tensor([ 2., -1.])
        """
        if self._array.dtype.kind != "c":
            raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
        return views.view(self, ops.Imag.apply(self), ops.Imag.apply)

    def conj(self: Tensor) -> Tensor:
        """x - iy, a copy (torch's is a lazy view: the values and gradients are the same);
        a real tensor's is itself.

        >>> mg.tensor([1 + 2j]).conj()
        tensor([1.-2.j])
        """
        return ops.conj(self)

    def conj_physical(self: Tensor) -> Tensor:
        """x - iy as fresh memory (``conj`` is that too in minigrad).

        >>> mg.tensor([1 - 1j]).conj_physical()
        tensor([1.+1.j])
        """
        return ops.conj(self)

    def resolve_conj(self: Tensor) -> Tensor:
        """Itself: minigrad's conjugates are never lazy.

        >>> mg.tensor([1j]).conj().resolve_conj()
        tensor([0.-1.j])
        """
        return self

    def is_conj(self: Tensor) -> bool:
        """False: minigrad's conjugates are copies, never lazy views.

        >>> mg.tensor([1j]).conj().is_conj()
        False
        """
        return False

    def angle(self: Tensor) -> Tensor:
        """arg z = atan2(Im z, Re z), real; for real tensors 0 or pi (torch's).

        >>> mg.tensor([1j, -1 + 0j]).angle().round(decimals=4)
        tensor([1.5708, 3.1416])
        """
        return ops.Angle.apply(self)


def complex(real: Tensor, imag: Tensor) -> Tensor:
    """real + i imag, for real and imag of one float dtype (torch.complex).

    >>> mg.complex(mg.tensor([1.0]), mg.tensor([2.0]))
    tensor([1.+2.j])
    """
    return ops.Complex.apply(real, imag)


def polar(abs: Tensor, angle: Tensor) -> Tensor:
    """abs (cos angle + i sin angle), for abs and angle of one float dtype.

    >>> mg.polar(mg.tensor([2.0]), mg.tensor([0.0]))
    tensor([2.+0.j])
    """
    return ops.Complex.apply(abs * angle.cos(), abs * angle.sin())


def view_as_real(input: Tensor) -> Tensor:
    """A complex tensor's memory as (real, imaginary) pairs in a new last dim of 2, a view.

    >>> mg.view_as_real(mg.tensor([1 + 2j]))
    tensor([[1., 2.]])
    """
    return views.view(input, ops.ViewAsReal.apply(input), ops.ViewAsReal.apply)


def view_as_complex(input: Tensor) -> Tensor:
    """Real pairs in a last dim of 2 (stride 1) as complex numbers, a view.

    >>> mg.view_as_complex(mg.tensor([[1.0, 2.0]]))
    tensor([1.+2.j])
    """
    return views.view(input, ops.ViewAsComplex.apply(input), ops.ViewAsComplex.apply)


def is_complex(input: Tensor) -> bool:
    """Whether ``input``'s dtype is complex (torch.is_complex).

    >>> mg.is_complex(mg.tensor([1j]))
    True
    """
    return input.is_complex()
