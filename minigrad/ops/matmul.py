"""Matrix products: of (batched) matrices, batch dims broadcast and the engine un-broadcasts;
and tensordot's contraction, as one product of its operands arranged into matrices."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._dims import inverse_permutation
from .._kernel_registry import kernels
from ..autograd.function import Context, Function, make_tensor
from ..autograd.grad_mode import _state
from ._base import conj, operands


class MatMul(Function):
    """a @ b for a (*, m, k) and b (*, k, n); d/da = g b^H, d/db = a^H g (b^T, a^T: real)."""

    _numpy_forward = True  # np.matmul or the tiny-matrix kernel: nothing to record

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> np.ndarray:
        na, nb = ctx.needs_input_grad
        ctx.save_for_backward(a if nb else None, b if na else None)
        x, y = operands(a, b)
        if x.shape[-1] != y.shape[-2]:
            raise RuntimeError(
                f"mat1 and mat2 shapes cannot be multiplied ({x.shape[-2]}x{x.shape[-1]} "
                f"and {y.shape[-2]}x{y.shape[-1]})"
            )
        # a stack of transposed matrices (x.mT of a contiguous x) gets its gradient in that
        # layout, as (B G^T)^T: added to the contiguous gradient its base gets elsewhere, it
        # then makes one contiguous loop, not a strided one
        ctx.swapped = (_swapped(x) if na else False), (_swapped(y) if nb else False)
        return _product(x, y)

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        a, b = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        if g._array.dtype.kind == "c":  # g B^H and A^H g (a real side's: their real parts)
            return (g @ b.mH if na else None), (a.mH @ g if nb else None)
        sa, sb = ctx.swapped
        if not _state.enabled:  # nothing records (a first-order walk): the products alone
            ga = gb = None
            if na:
                x, y = operands(g, b)
                ga = make_tensor(_T(_product(y, _T(x))) if sa else _product(x, _T(y)))
            if nb:
                x, y = operands(a, g)
                gb = make_tensor(_T(_product(_T(y), x)) if sb else _product(_T(x), y))
            return ga, gb
        ga = ((b @ g.mT).mT if sa else g @ b.mT) if na else None
        gb = ((g.mT @ a).mT if sb else a.mT @ g) if nb else None
        return ga, gb


def _T(x: np.ndarray) -> np.ndarray:
    return x.swapaxes(-1, -2)


def _product(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = _tiny_batched(x, y)
    if out is not None:
        return out
    # BLAS packs a stack of large transposed left matrices as it is, as fast as a plain one
    # and to the same numbers: a contiguous copy would only add its pass (g.mT @ x in a
    # backward of attention's (256, 256) scores: 1.6x)
    left = x if x.ndim > 2 and min(x.shape[-2], x.shape[-1], y.shape[-1]) >= _BLAS_T \
        and _swapped(x) else _blasable(x)
    return np.matmul(left, _blasable(y))


def _swapped(x: np.ndarray) -> bool:
    """Whether x is a batch of transposed matrices: x.mT C-contiguous, x not."""
    return x.ndim > 2 and not x.flags.c_contiguous and x.swapaxes(-1, -2).flags.c_contiguous


def _blasable(x: np.ndarray) -> np.ndarray:
    """A contiguous copy of a strided stack of matrices: numpy's batched matmul falls back
    to a slow loop on such views (2x slower for 3x3 stacks), and the copy costs O(n^2)."""
    return x if x.ndim < 3 or x.flags.c_contiguous else np.ascontiguousarray(x)


# m, k and n from this on: BLAS's packed path, past its small-matrix kernels (below, a
# transposed left operand can run slower, or sum in another order)
_BLAS_T = 64
_TINY = 64  # m k n at most this: the numba loop beats numpy's ~150 ns per matrix (4x4: 3.5x)
_MIN_BATCH = 16  # below, numpy's fixed cost is smaller than the kernel's dispatch
# The kernels' names by dtype char: f"bmm_{dtype}" formats the dtype: ~5 us a call.
_BMM = {"f": "bmm_float32", "d": "bmm_float64"}
_BMM3 = {"f": "bmm3_float32", "d": "bmm3_float64"}
_CROSS3 = {"f": "cross3_float32", "d": "cross3_float64"}


def _tiny_batched(x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """x @ y by the numba batch loops when they pay: a batch of tiny float matrices, with
    equal batch dims or one side a single matrix, a batch of point clouds (m, 3) through
    3x3 matrices, or the clouds' cross-covariances c^T y. None: numpy's matmul should do it."""
    dt = x.dtype
    if x.ndim == y.ndim == 2 or dt != y.dtype or dt.char not in "fd" or not dt.isnative:
        return None
    m, k, n = x.shape[-2], x.shape[-1], y.shape[-1]
    if not 0 < m * k * n <= _TINY:
        return _clouds(x, y) if k == n == 3 else _cross(x, y) if m == n == 3 else None
    if x.ndim == 2:
        batch = y.shape[:-2]
    elif y.ndim == 2 or x.shape[:-2] == y.shape[:-2]:
        batch = x.shape[:-2]
    else:
        return None  # broadcast batch dims: reshaping those would copy
    count = math.prod(batch)
    if count < _MIN_BATCH:
        return None
    x3 = np.broadcast_to(x, (count, m, k)) if x.ndim == 2 else x.reshape(count, m, k)
    y3 = np.broadcast_to(y, (count, k, n)) if y.ndim == 2 else y.reshape(count, k, n)
    out = np.empty((count, m, n), dt)
    # The kernel compiled ahead of time by the warm-up (no numba import), else numba's.
    getattr(kernels("small"), _BMM[dt.char])(x3, y3, out)
    return out.reshape(batch + (m, n))


def _clouds(x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """x @ y for x (*, m, 3) C-contiguous and y (*, 3, 3) of the same batch dims, by the
    point-cloud kernel; None where it does not apply."""
    if x.ndim != y.ndim or x.shape[:-2] != y.shape[:-2] or not x.flags.c_contiguous:
        return None
    count = math.prod(x.shape[:-2])
    if count < _MIN_BATCH:
        return None
    out = np.empty(x.shape, x.dtype)
    getattr(kernels("small"), _BMM3[x.dtype.char])(
        x.reshape(count, x.shape[-2], 3), y.reshape(count, 3, 3), out.reshape(count, -1, 3))
    return out


def _cross(x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """x @ y for x = c.mT, c and y (*, r, 3) C-contiguous clouds of the same batch dims
    (c^T y: their cross-covariances), by the kernel; None where it does not apply."""
    if x.ndim != y.ndim or x.shape[:-2] != y.shape[:-2] or not y.flags.c_contiguous:
        return None
    c = x.swapaxes(-1, -2)
    count = math.prod(x.shape[:-2])
    if count < _MIN_BATCH or not c.flags.c_contiguous or c.shape[-2] == 0:
        return None
    out = np.empty(x.shape[:-2] + (3, 3), x.dtype)
    getattr(kernels("small"), _CROSS3[x.dtype.char])(
        c.reshape(count, -1, 3), y.reshape(count, -1, 3), out.reshape(count, 3, 3))
    return out


class TensorDot(Function):
    """a and b contracted over a's dims ``da`` and b's ``db`` (paired in order), the result's
    dims a's others ``ra`` then b's others ``rb`` (torch.tensordot): one (M, K) @ (K, N)
    product of the operands arranged (permuted and flattened) as X and Y. One node for the
    permutes, reshapes and matmul it is made of; its gradients are theirs, g Y^H and X^H g
    arranged back (recorded as tensordots when the backward records)."""

    _numpy_forward = True

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any, ra: tuple[int, ...], da: tuple[int, ...],
                db: tuple[int, ...], rb: tuple[int, ...]) -> np.ndarray:
        x, y = operands(a, b)
        xs, ys = x.shape, y.shape
        m, k, n = (math.prod([xs[d] for d in ra]), math.prod([xs[d] for d in da]),
                   math.prod([ys[d] for d in rb]))
        X, Y = x.transpose(ra + da).reshape(m, k), y.transpose(db + rb).reshape(k, n)
        na, nb = ctx.needs_input_grad[:2]
        if na or nb:
            ctx.dims, ctx.shapes = (ra, da, db, rb), (xs, ys)
            # X and Y as the composite's matmul saved them: one that shows its operand's
            # memory shares that operand's version (an in-place change is caught)
            ctx.save_for_backward(_arranged(X, a, x) if nb else None,
                                  _arranged(Y, b, y) if na else None)
        return _product(X, Y).reshape(tuple([xs[d] for d in ra]) + tuple([ys[d] for d in rb]))

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        X, Y = ctx.saved_tensors
        na, nb = ctx.needs_input_grad[:2]
        ra, da, db, rb = ctx.dims
        xs, ys = ctx.shapes
        pa, pb = inverse_permutation(ra + da), inverse_permutation(db + rb)
        a_shape, b_shape = [xs[d] for d in ra + da], [ys[d] for d in db + rb]
        ga = gb = None
        if not _state.enabled:  # nothing records: the composite's two products, in numpy
            complex_ = g._array.dtype.kind == "c"
            g2 = g._array.reshape(math.prod([xs[d] for d in ra]), math.prod([ys[d] for d in rb]))
            if na:
                y = Y._array.conj() if complex_ else Y._array
                ga = make_tensor(_product(*operands(g2, _T(y))).reshape(a_shape).transpose(pa))
            if nb:
                x = X._array.conj() if complex_ else X._array
                gb = make_tensor(_product(*operands(_T(x), g2)).reshape(b_shape).transpose(pb))
            return ga, gb, None, None, None, None
        # recorded: each operand's forward values, standing for that input in the graph
        n, m = len(ra), len(rb)
        g_left, g_right = tuple(range(n)), tuple(range(n, n + m))
        if na:
            bt = conj(ctx.input_like(1, Y._array.reshape(b_shape).transpose(pb)))
            ga = TensorDot.apply(g, bt, g_left, g_right, rb, db).permute(*pa)
        if nb:
            at = conj(ctx.input_like(0, X._array.reshape(a_shape).transpose(pa)))
            gb = TensorDot.apply(at, g, da, ra, g_left, g_right).permute(*pb)
        return ga, gb, None, None, None, None


def _arranged(arr: np.ndarray, t: Any, x: np.ndarray) -> Any:
    """``arr``, an arrangement of ``x`` (the array of Tensor ``t`` or its cast), as a Tensor
    to save: sharing ``t``'s version where it shows ``t``'s memory."""
    out = make_tensor(arr)
    if arr.size and x is t._array and np.may_share_memory(arr, x):
        out._version_counter = t._version_counter
    return out
