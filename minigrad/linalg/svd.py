"""The differentiable SVD: torch.linalg.svd's interface over the Jacobi kernels; the
backward (exact at repeated and zero singular values) is in ``_svd_backward.py``."""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import numpy as np

from ..autograd.function import Context, Function, make_tensor
from ..autograd.grad_mode import is_grad_enabled
from ..autograd.quiet import unrecorded
from ..tensor import Tensor
from . import _complex_svd as _complex
from . import ties as _ties
from ._checks import check_matrix, half_as_float
from ._svd_backward import plan_backward, svd_backward
from ._svd_forward import DEFAULT_MAX_SWEEPS, svd_forward
from ._svd_trunc import svd_top, top_forward
from ._tie_sources import Downstream


class SVDResult(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


@half_as_float
def svd(A: Tensor, full_matrices: bool = True, *, tol: float | None = None,
        max_sweeps: int = DEFAULT_MAX_SWEEPS,
        ties: str | _ties.TiePolicy | None = None, top_k: int | None = None,
        driver: str | None = None) -> SVDResult:
    """A = U diag(S) Vh, batched over leading dims, differentiable through all three.

    U is (*, m, m) and Vh (*, n, n) with ``full_matrices=True`` (torch's default), else
    (*, m, k) and (*, k, n), k = min(m, n); S (*, k) is descending. float16 is computed in
    float32. ``tol`` and ``max_sweeps`` tune the Jacobi iteration. The backward is exact at
    repeated and zero singular values, and raises where the loss has no gradient; ``ties``
    ("exact", "zero" or a TiePolicy; default: ``mg.linalg.tie_policy``'s) chooses otherwise.
    ``driver`` is torch's CUDA-only choice: None, or an error as torch's on the CPU.

    ``top_k`` (minigrad's, keyword only; needs ``full_matrices=False``, as JAX's
    ``subset_by_index``): only the top_k largest triplets, U (*, m, top_k), S (*, top_k),
    Vh (*, top_k, n), with the truncated SVD's own backward. It reads A and the kept triplets
    only (a Sylvester system on the complement, ``_svd_trunc.py``), so ties and noise among
    the discarded values never matter; a cut at a tie raises LinAlgError in the backward.

    >>> U, S, Vh = mg.linalg.svd(mg.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    >>> U.shape, S.shape, Vh.shape
    ((3, 3), (2,), (2, 2))
    >>> U, S, Vh = mg.linalg.svd(mg.eye(4) * mg.arange(1.0, 5.0), False, top_k=2); S
    tensor([4., 3.])
    """
    check_matrix(A, "linalg.svd", complex_ok=True)
    _check_driver(driver)
    # (the policy in force is looked up only where it is used: ~0.5 us of a lone 3x3's call)
    policy = None if ties is None else _ties.resolve(ties)
    if top_k is not None:
        k = _check_top_k(top_k, full_matrices, A.shape)
        if k < min(A.shape[-2:]):
            return SVDResult(*svd_top(A, k, partial(top_forward, k=k, tol=tol,
                                                    max_sweeps=max_sweeps),
                                      _ties.resolve(None) if policy is None else policy))
    if A._array.dtype.kind == "c":
        return SVDResult(*_complex.svd(A, full_matrices, tol, max_sweeps,
                                       _ties.resolve(None) if policy is None else policy))
    if not (A.requires_grad and is_grad_enabled()):  # nothing to record: no node, no plan
        return SVDResult(*map(make_tensor, unrecorded(svd_forward, A._array,
                                                       bool(full_matrices), True, tol=tol,
                                                       max_sweeps=max_sweeps)))
    return SVDResult(*_SVD.apply(A, bool(full_matrices), tol, max_sweeps,
                                 _ties.resolve(None) if policy is None else policy))


def _check_driver(driver: object) -> None:
    if driver is not None:  # ported code passes driver=None off the GPU
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on "
                           "CUDA inputs with cuSOLVER backend (minigrad runs on the CPU).")


def _check_top_k(top_k: object, full_matrices: bool, shape: tuple) -> int:
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)):
        raise TypeError(f"linalg.svd(): top_k must be an int, not {type(top_k).__name__}")
    kmin = min(shape[-2:])
    if not 0 <= top_k <= kmin:
        raise ValueError(f"linalg.svd(): top_k must be in [0, min(m, n)] = [0, {kmin}], "
                         f"got {top_k}")
    if full_matrices:
        raise ValueError("linalg.svd(): top_k returns the reduced factors of the kept "
                         "triplets; pass full_matrices=False with it")
    return int(top_k)


@half_as_float
def svdvals(A: Tensor, *, tol: float | None = None,
            max_sweeps: int = DEFAULT_MAX_SWEEPS, driver: str | None = None) -> Tensor:
    """The singular values of A (*, k), descending; d/dA of sum(g * S) is U diag(g) Vh.

    >>> mg.linalg.svdvals(mg.tensor([[3.0, 0.0], [0.0, -4.0]]))
    tensor([4., 3.])
    """
    _check_driver(driver)
    if isinstance(A, Tensor) and A._array.dtype.kind == "c" and A.ndim >= 2:
        return svd(A, False, tol=tol, max_sweeps=max_sweeps).S
    check_matrix(A, "linalg.svdvals")
    if A.requires_grad and is_grad_enabled():
        return svd(A, full_matrices=False, tol=tol, max_sweeps=max_sweeps).S
    _, s, _ = unrecorded(svd_forward, A._array, False, False, tol=tol, max_sweeps=max_sweeps)
    return make_tensor(s)


class _SVD(Function):
    @staticmethod
    def forward(ctx: Context, A: Tensor, full_matrices: bool, tol: float | None,
                max_sweeps: int, policy: _ties.TiePolicy) -> tuple[Tensor, Tensor, Tensor]:
        u, s, vh = svd_forward(A._array, full_matrices, True, tol=tol, max_sweeps=max_sweeps)
        outs = make_tensor(u), make_tensor(s), make_tensor(vh)
        ctx.save_for_backward(*outs)  # the outputs themselves: higher order flows through them
        ctx.set_materialize_grads(False)
        plan_backward(ctx, s, policy, u.shape[-2] != vh.shape[-1])
        return outs

    @staticmethod
    def backward(ctx: Context, gU: Tensor | None, gS: Tensor | None,
                 gVh: Tensor | None) -> tuple:
        U, S, Vh = ctx.saved_tensors
        down = Downstream(ctx, (gU, gS, gVh)) if ctx.wants_downstream else None
        return (svd_backward(U, S, Vh, gU, gS, gVh, ctx.policy, down, ctx.no_poles), None,
                None, None, None)
