"""Fused products and statistics as Tensor methods: addmm, addmv, baddbmm, kron, cov and
corrcoef, composed from matmul and the elementwise ops (so they differentiate again)."""

# mypy: disable-error-code="misc"
# (The methods take self as the Tensor they are mixed into, which mypy's check that a
# self annotation is a supertype of its class, error code misc, would refuse.)

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from ..dtypes import Number
from ..ops import complex as complex_ops

if TYPE_CHECKING:
    from ..tensor import Tensor


def _scaled(beta: Number, x: Tensor, alpha: Number, product: Tensor) -> Tensor:
    """beta x + alpha product; with beta = 0, x is ignored (nan and inf in it too), as in
    torch."""
    p = product if alpha == 1 else alpha * product
    if beta == 0:
        return p
    return (x if beta == 1 else beta * x) + p


class ProductMethods:
    """The fused product and covariance methods of Tensor (mixed into it by tensor.py)."""

    def addmm(self: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Number = 1,
              alpha: Number = 1) -> Tensor:
        """beta self + alpha mat1 @ mat2 (self broadcast to the product's shape).

        >>> mg.zeros(2, 2).addmm(mg.eye(2), mg.ones(2, 2)).tolist()
        [[1.0, 1.0], [1.0, 1.0]]
        """
        for name, m in (("mat1", mat1), ("mat2", mat2)):
            if m.ndim != 2:
                raise RuntimeError(f"{name} must be a matrix, got {m.ndim}-D tensor")
        return _scaled(beta, self, alpha, mat1.mm(mat2)).expand(mat1.shape[0], mat2.shape[1])

    def addmv(self: Tensor, mat: Tensor, vec: Tensor, *, beta: Number = 1,
              alpha: Number = 1) -> Tensor:
        """beta self + alpha mat @ vec."""
        if mat.ndim != 2 or vec.ndim != 1:
            raise RuntimeError(f"vector + matrix @ vector expected, got {self.ndim}, "
                               f"{mat.ndim}, {vec.ndim}")
        return _scaled(beta, self, alpha, mat.matmul(vec)).expand(mat.shape[0])

    def baddbmm(self: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Number = 1,
                alpha: Number = 1) -> Tensor:
        """beta self + alpha batch1 @ batch2, batch by batch."""
        out = batch1.bmm(batch2)
        return _scaled(beta, self, alpha, out).expand(out.shape)

    def mv(self: Tensor, vec: Tensor) -> Tensor:
        """Matrix times vector."""
        if self.ndim != 2 or vec.ndim != 1:
            raise RuntimeError(f"vector + matrix @ vector expected, got 1, {self.ndim}, "
                               f"{vec.ndim}")
        return self.matmul(vec)

    def inner(self: Tensor, other: Tensor) -> Tensor:
        """Sum over the last dims of both: out[i.., j..] = sum_k self[i.., k] other[j.., k]."""
        if self.ndim == 0 or other.ndim == 0:
            return self * other
        a = self.reshape(self.shape[:-1] + (1,) * (other.ndim - 1) + self.shape[-1:])
        return (a * other).sum(-1)

    def vdot(self: Tensor, other: Tensor) -> Tensor:
        """The dot product of two 1-D tensors, conjugating self: sum conj(self_i) other_i.

        >>> mg.vdot(mg.tensor([1j]), mg.tensor([1j]))
        tensor(1.+0.j)
        """
        if self.ndim != 1 or other.ndim != 1:
            raise RuntimeError(f"1D tensors expected, but got {self.ndim}D and {other.ndim}D "
                               "tensors")
        return self.conj().dot(other)

    def outer(self: Tensor, vec2: Tensor) -> Tensor:
        """The outer product of two vectors: out[i, j] = self[i] * vec2[j].

        >>> mg.tensor([1.0, 2.0]).outer(mg.tensor([1.0, 10.0])).tolist()
        [[1.0, 10.0], [2.0, 20.0]]
        """
        for name, v in (("self", self), ("vec2", vec2)):
            if v.ndim != 1:
                raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {v.ndim}-D")
        return self.unsqueeze(-1) * vec2

    ger = outer

    def dist(self: Tensor, other: Tensor, p: float = 2) -> Tensor:
        """The p-norm of self - other."""
        return (self - other).norm(p)

    def kron(self: Tensor, other: Tensor) -> Tensor:
        """The Kronecker product: blocks self[i, j] * other, for any number of dims.

        >>> mg.tensor([1, 2]).kron(mg.tensor([1, 10])).tolist()
        [1, 10, 2, 20]
        """
        n = max(self.ndim, other.ndim)
        a = self.reshape((1,) * (n - self.ndim) + self.shape)
        b = other.reshape((1,) * (n - other.ndim) + other.shape)
        a = a.reshape(tuple(v for s in a.shape for v in (s, 1)))
        b = b.reshape(tuple(v for s in b.shape for v in (1, s)))
        return (a * b).reshape(tuple(p * q for p, q in zip(a.shape[::2], b.shape[1::2])))

    def cov(self: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
            aweights: Tensor | None = None) -> Tensor:
        """The covariance matrix of the variables in the rows (observations in columns),
        optionally weighted by integer frequencies and/or observation weights, as torch.cov.

        >>> mg.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]).cov().tolist()
        [[1.0, -1.0], [-1.0, 1.0]]
        """
        if self.ndim > 2:
            raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got "
                               f"an input with {self.ndim} dimensions")
        x = self.reshape(1, -1) if self.ndim < 2 else self
        if not x.is_floating_point() and not x.is_complex():
            x = x.float()
        n = x.shape[1]
        w = None
        for name, wt in (("fweights", fweights), ("aweights", aweights)):
            if wt is None:
                continue
            if wt.ndim > 1 or wt.numel() != n:
                raise RuntimeError(f"cov(): expected {name} to have one element per observation "
                                   f"(got {tuple(wt.shape)} for {n} observations)")
            if name == "fweights" and wt.is_floating_point():
                raise RuntimeError("cov(): expected fweights to have integral dtype")
            if (wt._array < 0).any():
                raise RuntimeError(f"cov(): {name} cannot be negative")
            wt = wt.reshape(-1)  # (promoted with x, as torch does)
            w = wt if w is None else w * wt
        fact: Tensor | int
        if w is None:
            avg = x.mean(1, keepdim=True)
            fact = n - correction
        else:
            w_sum = w.sum()
            avg = (x * w).sum(1, keepdim=True) / w_sum
            fact = w_sum - (correction if aweights is None
                            else correction * (w * aweights.reshape(-1)).sum()
                            / w_sum)
        if float(fact) <= 0:
            warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly "
                          "less than the number of observations.", UserWarning, stacklevel=2)
            fact = fact * 0 if hasattr(fact, "shape") else 0
        xm = x - avg
        c = (xm if w is None else xm * w).matmul(xm.mH) / fact  # mH: complex rows too
        return c.reshape(()) if self.ndim < 2 else c

    def corrcoef(self: Tensor) -> Tensor:
        """Pearson correlation coefficients of the rows, clipped to [-1, 1] as in torch (a
        complex one's real and imaginary parts each)."""
        c = self.cov()
        if c.ndim == 0:
            return c / c
        s = c.diagonal().real.sqrt()
        r = c / s.unsqueeze(1) / s.unsqueeze(0)
        if r.is_complex():
            return complex_ops.Complex.apply(r.real.clamp(-1, 1), r.imag.clamp(-1, 1))
        return r.clamp(-1, 1)
