"""A loss written with minigrad ops and its gradient over a Dask array, block by block."""

from __future__ import annotations

import functools
from collections.abc import Callable

import dask.array as da
import numpy as np

from .. import autograd
from ..autograd.grad_mode import enable_grad
from ..creation import from_numpy, zeros
from ..tensor import Tensor
from ._blocks import PER_BLOCK, batch_blocks
from ._svd import _check


def loss_and_grad(loss_fn: Callable[..., Tensor], A: da.Array, *args: object,
                  threads: int = 1) -> tuple[da.Array, da.Array]:
    """(L, dL/dA) for L = sum over the batch blocks A_b of loss_fn(A_b, *args_b), as Dask
    arrays: a scalar and an array blocked like A. Each block runs minigrad's forward and
    backward on its own, so only a few blocks are in memory at a time.

    ``loss_fn`` gets the block as a Tensor (*b, m, n) that requires grad and returns a scalar
    Tensor. When it is a sum over the batch (as energies are), L and dL/dA are exactly
    loss_fn(A) and its gradient in one process; for a mean, divide by the whole batch's
    size inside loss_fn. A Dask array in ``args`` whose leading dims are A's batch dims is
    cut into the same blocks and passed as a Tensor (no gradient flows into it); any other
    argument is passed whole to every block. ``threads``: see minigrad.dask. While the graph
    is built, loss_fn is also called once on an empty batch, to learn the loss's dtype and
    check that it is a scalar (as Dask infers its own outputs).

    >>> F = da.from_array(np.eye(3) + np.arange(36.0).reshape(4, 3, 3) / 100, chunks=(2, 3, 3))
    >>> def energy(X):  # the distance to the nearest rotation, sum_i (s_i - 1)^2
    ...     U, S, Vh = mg.linalg.svd(X)
    ...     return ((X - U @ Vh) ** 2).sum()
    >>> L, G = loss_and_grad(energy, F)
    >>> L.shape, G.chunks
    ((), ((2, 2), (3,), (3,)))
    """
    if not callable(loss_fn):
        raise TypeError(f"minigrad.dask.loss_and_grad(): loss_fn must be callable, not "
                        f"{type(loss_fn).__name__}")
    _check(A, "loss_and_grad", threads)
    nb = A.ndim - 2
    blocked = [isinstance(a, da.Array) for a in args]
    for i, a in enumerate(args):
        if blocked[i] and a.shape[:nb] != A.shape[:nb]:
            raise ValueError(
                f"minigrad.dask.loss_and_grad(): argument {i + 1} after A has shape "
                f"{a.shape}, but a Dask array passed beside A must start with A's batch "
                f"shape {A.shape[:nb]}; pass it as a NumPy array to hand it whole to every "
                f"block")
    dtype = _loss_dtype(loss_fn, A, args, blocked)
    fn = functools.partial(_block, loss_fn=loss_fn, nb=nb, dtype=dtype,
                           whole=tuple(None if b else a for a, b in zip(args, blocked)))
    extras = [a for a, b in zip(args, blocked) if b]
    losses, grad = batch_blocks(fn, "minigrad.dask.loss_and_grad", A, extras,
                                [(PER_BLOCK, dtype), (A.shape[-2:], A.dtype)], threads)
    return losses.sum(dtype=dtype), grad


def _block(a: np.ndarray, *blocks: np.ndarray, loss_fn: Callable, nb: int, dtype: np.dtype,
           whole: tuple) -> tuple[np.ndarray, np.ndarray]:
    x = from_numpy(np.asarray(a)).requires_grad_()
    parts = iter(blocks)
    args = [from_numpy(np.asarray(next(parts))) if w is None else w for w in whole]
    with enable_grad():
        loss = _scalar(loss_fn(x, *args))
    if loss.requires_grad:
        (g,) = autograd.grad(loss, x, allow_unused=True)
    else:
        g = None  # a loss that does not depend on A
    g = np.zeros_like(a) if g is None else g.numpy().astype(a.dtype, copy=False)
    return np.asarray(loss.detach().numpy(), dtype).reshape((1,) * nb), g


def _scalar(loss: object) -> Tensor:
    if not isinstance(loss, Tensor):
        raise TypeError(f"minigrad.dask.loss_and_grad(): loss_fn must return a Tensor, got "
                        f"{type(loss).__name__}")
    if loss.ndim != 0:
        raise RuntimeError(
            f"minigrad.dask.loss_and_grad(): loss_fn must return a scalar (the block's loss; "
            f"L is the sum over the blocks), got shape {tuple(loss.shape)}; sum it inside "
            f"loss_fn")
    return loss


def _loss_dtype(loss_fn: Callable, A: da.Array, args: tuple, blocked: list) -> np.dtype:
    """The loss's dtype, from loss_fn on an empty batch (no SVD work is done for it), as
    Dask infers its own outputs; A's dtype when there is no batch or loss_fn refuses one."""
    nb = A.ndim - 2
    if nb == 0:
        return A.dtype
    empty = (0,) * nb
    x = zeros(*empty, *A.shape[-2:], dtype=A.dtype, requires_grad=True)
    probe = [from_numpy(np.empty(empty + a.shape[nb:], a.dtype)) if b else a
             for a, b in zip(args, blocked)]
    try:
        with enable_grad():
            loss = loss_fn(x, *probe)
    except Exception:
        return A.dtype
    return _scalar(loss).dtype
