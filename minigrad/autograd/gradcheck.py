"""Check analytic gradients against float64 central differences (torch's defaults and rules).

The slow check compares the two Jacobians entry by entry: |a - n| <= atol + rtol |n|. The
fast check compares one projection u^T J v per (output, input) pair, u and v random unit
vectors, with atol scaled by sum(u) sum(v): the bound the entry-wise check gives the
projection (torch's ``_adjusted_atol``), so both modes accept the same error per entry.

Complex inputs and outputs are checked as torch checks them: as pairs of real numbers. Each
complex input is perturbed in its real and its imaginary part, and each complex output is
read as its real and imaginary parts (``_as_real``); under torch's convention the gradient
of a real loss is dL/dRe z + i dL/dIm z, which is exactly the real pair's gradient.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import function
from .api import grad


class GradcheckError(RuntimeError):
    """Raised by gradcheck when analytic and numeric gradients disagree."""


def gradcheck(fn: Callable, inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True, fast_mode: bool = False,
              seed: int = 0) -> bool:
    """Compare autograd's Jacobian of ``fn`` with central differences: |a - n| <= atol + rtol|n|.

    ``fast_mode`` compares random projections u^T J v instead of the full Jacobian (one
    backward and two forwards per input instead of one per element). With
    ``raise_exception=False`` a mismatch returns False instead of raising GradcheckError.

    >>> x = mg.randn(3, dtype=mg.float64, requires_grad=True)
    >>> mg.autograd.gradcheck(lambda t: (t * t).sum(), (x,))
    True
    """
    args = list(inputs) if isinstance(inputs, (tuple, list)) else [inputs]
    diff = [i for i, a in enumerate(args) if function.is_tensor(a) and a.requires_grad]
    fn, args = _as_real(fn, args, diff)
    for i in diff:
        if args[i].dtype != np.float64:
            warnings.warn(f"gradcheck: input {i} is {args[i].dtype}, not float64; "
                          "finite differences will be inaccurate", stacklevel=2)
    check = _fast if fast_mode else _slow
    try:
        check(fn, args, diff, eps, atol, rtol, seed)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def gradgradcheck(fn: Callable, inputs: Any, grad_outputs: Sequence | None = None, *,
                  eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  raise_exception: bool = True, fast_mode: bool = False, seed: int = 0) -> bool:
    """gradcheck of the map (inputs, v) -> v^T J(inputs): second derivatives by create_graph.

    ``grad_outputs`` (the v) default to random tensors that require grad.

    >>> x = mg.randn(3, dtype=mg.float64, requires_grad=True)
    >>> mg.autograd.gradgradcheck(lambda t: (t ** 3).sum(), (x,))
    True
    """
    args = list(inputs) if isinstance(inputs, (tuple, list)) else [inputs]
    diff = [i for i, a in enumerate(args) if function.is_tensor(a) and a.requires_grad]
    if grad_outputs is None:
        rng = np.random.default_rng(seed + 1)
        grad_outputs = [function.tensor_class(_normal(rng, o.shape, o.dtype), requires_grad=True)
                        for o in _outputs(fn, args)]
    n = len(args)

    def first_order(*all_args: Any) -> tuple:
        xs, vs = list(all_args[:n]), list(all_args[n:])
        pairs = [(t, v) for t, v in zip(_outputs(fn, xs), vs) if t.requires_grad]
        if not pairs:
            return ()
        gs = grad([t for t, _ in pairs], [xs[i] for i in diff], [v for _, v in pairs],
                  create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_order, args + list(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, fast_mode=fast_mode, seed=seed)


def _slow(fn: Callable, args: list, diff: list[int], eps: float, atol: float, rtol: float,
          seed: int) -> None:
    """Both Jacobians in full: one backward per output element, two forwards per input one."""
    outs = _outputs(fn, args)
    wrt = [args[i] for i in diff]
    analytic = [_analytic_jacobian(outs, wrt, k) for k in range(len(outs))]  # [k][j]
    numeric = [_numeric_jacobian(fn, args, i, outs, eps) for i in diff]  # [j][k]
    for k, o in enumerate(outs):
        for j, i in enumerate(diff):
            a, n = analytic[k][j], numeric[j][k]
            bad = np.argwhere(~(np.abs(a - n) <= atol + rtol * np.abs(n)))
            if bad.size:
                r, c = bad[np.lexsort((bad[:, 0], bad[:, 1]))[0]]  # the first column first
                where = (f"output {k} element {_at(o.shape, r)}, input {i} element "
                         f"{_at(args[i].shape, c)}")
                _fail(a[r, c], n[r, c], atol, rtol, where)


def _fast(fn: Callable, args: list, diff: list[int], eps: float, atol: float, rtol: float,
          seed: int) -> None:
    """u_k^T J_kj v_j for every (output k, input j): one backward per output, two forwards
    per input."""
    outs = _outputs(fn, args)
    wrt = [args[i] for i in diff]
    rng = np.random.default_rng(seed)
    us = [_unit(rng, o.shape) for o in outs]
    vs = [_unit(rng, args[i].shape) for i in diff]
    u_jac = [_vjp(outs, wrt, k, u) for k, u in enumerate(us)]  # [k][j]: u_k^T J_kj
    jac_v = [_numeric(fn, args, i, v, eps) for i, v in zip(diff, vs)]  # [j][k]: J_kj v_j
    for k, u in enumerate(us):
        for j, (i, v) in enumerate(zip(diff, vs)):
            ana = float(np.sum(u_jac[k][j] * v))
            num = float(np.sum(jac_v[j][k] * u))
            scaled = atol * float(u.sum()) * float(v.sum())
            if not abs(ana - num) <= scaled + rtol * abs(num):
                _fail(ana, num, scaled, rtol, f"output {k}, input {i}, random projection "
                      "(run with fast_mode=False to find the element)")


def _outputs(fn: Callable, args: Sequence) -> list:
    out = fn(*args)
    out = out if isinstance(out, (tuple, list)) else (out,)
    return [o for o in out if function.is_tensor(o) and o._array.dtype.kind in "fc"]


def _normal(rng: np.random.Generator, shape: tuple, dtype: np.dtype) -> np.ndarray:
    """Standard normal values of ``dtype``; a complex one in both parts."""
    x = rng.standard_normal(shape)
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _as_real(fn: Callable, args: list, diff: list[int]) -> tuple[Callable, list]:
    """``fn`` and ``args`` as a map between real tensors: each complex input that requires
    grad becomes a real one with a last dim of 2 (its real and imaginary parts), each
    complex output its ``view_as_real`` (real ones pass as they are, and fn runs no more
    often than it would)."""
    cplx = [i for i in diff if args[i]._array.dtype.kind == "c"]

    def real_fn(*xs: Any) -> tuple:
        from ..ops.complex import ViewAsReal  # ops import autograd: loaded by now

        xs_ = list(xs)
        for i in cplx:
            xs_[i] = xs_[i][..., 0] + 1j * xs_[i][..., 1]  # recorded: gradients reach xs
        return tuple(ViewAsReal.apply(o) if o._array.dtype.kind == "c" else o
                     for o in _outputs(fn, xs_))

    real_args = list(args)
    for i in cplx:
        parts = np.stack([args[i]._array.real, args[i]._array.imag], -1)
        real_args[i] = function.tensor_class(parts, requires_grad=True)
    return real_fn, real_args


def _unit(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """A random direction with non-negative entries and norm 1 (torch's choice)."""
    u = rng.random(shape)
    return u / np.linalg.norm(u) if u.size else u


def _analytic_jacobian(outs: list, wrt: list, k: int) -> list[np.ndarray]:
    """d outs[k] / d wrt[j] for each j, shaped (outs[k].size, wrt[j].size), row by row."""
    o = outs[k]
    jac = [np.zeros((o._array.size, t._array.size)) for t in wrt]
    for r in range(o._array.size):
        e = np.zeros(o._array.size)
        e[r] = 1.0
        for j, g in enumerate(_vjp(outs, wrt, k, e.reshape(o.shape))):
            jac[j][r] = g.ravel()
    return jac


def _numeric_jacobian(fn: Callable, args: list, i: int, outs: list,
                      eps: float) -> list[np.ndarray]:
    """d outs[k] / d args[i] for each k, shaped (outs[k].size, args[i].size), column by
    column: every output from the same two forwards."""
    size = args[i]._array.size
    jac = [np.zeros((o._array.size, size)) for o in outs]
    for c in range(size):
        e = np.zeros(size)
        e[c] = 1.0
        for k, d in enumerate(_numeric(fn, args, i, e.reshape(args[i].shape), eps)):
            jac[k][:, c] = d.ravel()
    return jac


def _numeric(fn: Callable, args: list, i: int, direction: np.ndarray, eps: float) -> list:
    """d outputs / d args[i] along ``direction``, by central differences on fresh copies."""
    def at(sign: float) -> list:
        # Grad mode stays on: for gradgradcheck, fn itself takes a gradient.
        moved = list(args)
        moved[i] = function.tensor_class(args[i]._array + sign * eps * direction,
                                         requires_grad=args[i].requires_grad)
        return [o._array.astype(np.float64) for o in _outputs(fn, moved)]

    return [(p - m) / (2 * eps) for p, m in zip(at(1.0), at(-1.0))]


def _vjp(outs: list, wrt: list, k: int, u: np.ndarray) -> list[np.ndarray]:
    if not outs[k].requires_grad:
        return [np.zeros(t.shape) for t in wrt]
    gs = grad([outs[k]], wrt, [function.tensor_class(u.astype(outs[k].dtype))],
              retain_graph=True, allow_unused=True)
    return [np.zeros(t.shape) if g is None else g._array.astype(np.float64)
            for g, t in zip(gs, wrt)]


def _at(shape: tuple, flat: int) -> tuple:
    return tuple(int(v) for v in np.unravel_index(flat, shape)) if shape else ()


def _fail(ana: float, num: float, atol: float, rtol: float, where: str) -> None:
    raise GradcheckError(
        f"Jacobian mismatch for {where}: analytic {float(ana)!r}, numerical {float(num)!r} "
        f"(atol={atol}, rtol={rtol})"
    )
