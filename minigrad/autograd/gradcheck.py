"""Check analytic gradients against float64 central differences (torch's defaults)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import function
from .api import grad


class GradcheckError(RuntimeError):
    """Raised by gradcheck when analytic and numeric gradients disagree."""


def _outputs(fn: Callable, args: Sequence) -> list:
    out = fn(*args)
    out = out if isinstance(out, (tuple, list)) else (out,)
    return [o for o in out if function.is_tensor(o) and o.data.dtype.kind == "f"]


def _numeric(fn: Callable, args: list, i: int, direction: np.ndarray, eps: float) -> list:
    """d outputs / d args[i] along ``direction``, by central differences on fresh copies."""
    def at(sign: float) -> list:
        # Grad mode stays on: for gradgradcheck, fn itself takes a gradient.
        moved = list(args)
        moved[i] = function.tensor_class(args[i].data + sign * eps * direction,
                          requires_grad=args[i].requires_grad)
        return [o.data.astype(np.float64) for o in _outputs(fn, moved)]

    return [(p - m) / (2 * eps) for p, m in zip(at(1.0), at(-1.0))]


def _vjp(outs: list, wrt: list, k: int, u: np.ndarray) -> list[np.ndarray]:
    if not outs[k].requires_grad:
        return [np.zeros(t.shape) for t in wrt]
    gs = grad([outs[k]], wrt, [function.tensor_class(u.astype(outs[k].dtype))], retain_graph=True,
              allow_unused=True)
    return [np.zeros(t.shape) if g is None else g.data.astype(np.float64)
            for g, t in zip(gs, wrt)]


def gradcheck(fn: Callable, inputs: Any, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True, fast_mode: bool = False,
              seed: int = 0) -> bool:
    """Compare autograd's Jacobian of ``fn`` with central differences: |a - n| <= atol + rtol|n|.

    ``fast_mode`` compares random projections u^T J v instead of the full Jacobian (one
    backward and two forwards per input instead of one per element).

    >>> x = mg.randn(3, dtype=mg.float64, requires_grad=True)
    >>> mg.autograd.gradcheck(lambda t: (t * t).sum(), (x,))
    True
    """
    args = list(inputs) if isinstance(inputs, (tuple, list)) else [inputs]
    diff = [i for i, a in enumerate(args) if function.is_tensor(a) and a.requires_grad]
    for i in diff:
        if args[i].dtype != np.float64:
            warnings.warn(f"gradcheck: input {i} is {args[i].dtype}, not float64; "
                          "finite differences will be inaccurate", stacklevel=2)
    outs = _outputs(fn, args)
    rng = np.random.default_rng(seed)
    wrt = [args[i] for i in diff]
    try:
        for k, o in enumerate(outs):
            if fast_mode:
                u = rng.standard_normal(o.shape)
                analytic = _vjp(outs, wrt, k, u)
                for j, i in enumerate(diff):
                    v = rng.standard_normal(args[i].shape)
                    num = float(np.sum(_numeric(fn, args, i, v, eps)[k] * u))
                    ana = float(np.sum(analytic[j] * v))
                    _compare(ana, num, atol, rtol, f"output {k}, input {i}, random projection")
                continue
            jac = [np.zeros((o.data.size, args[i].data.size)) for i in diff]
            for r in range(o.data.size):
                u = np.zeros(o.data.size)
                u[r] = 1.0
                for j, g in enumerate(_vjp(outs, wrt, k, u.reshape(o.shape))):
                    jac[j][r] = g.ravel()
            for j, i in enumerate(diff):
                for c in range(args[i].data.size):
                    e = np.zeros(args[i].data.size)
                    e[c] = 1.0
                    col = _numeric(fn, args, i, e.reshape(args[i].shape), eps)[k].ravel()
                    for r in range(o.data.size):
                        where = (f"output {k} element {_at(o.shape, r)}, input {i} element "
                                 f"{_at(args[i].shape, c)}")
                        _compare(jac[j][r, c], col[r], atol, rtol, where)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def _at(shape: tuple, flat: int) -> tuple:
    return tuple(int(v) for v in np.unravel_index(flat, shape)) if shape else ()


def _compare(ana: float, num: float, atol: float, rtol: float, where: str) -> None:
    if not abs(ana - num) <= atol + rtol * abs(num):
        raise GradcheckError(
            f"Jacobian mismatch for {where}: analytic {float(ana)!r}, numerical {float(num)!r} "
            f"(atol={atol}, rtol={rtol})"
        )


def gradgradcheck(fn: Callable, inputs: Any, grad_outputs: Sequence | None = None,
                  eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  raise_exception: bool = True, fast_mode: bool = False, seed: int = 0) -> bool:
    """gradcheck of the map (inputs, v) -> v^T J(inputs): second derivatives by create_graph."""
    args = list(inputs) if isinstance(inputs, (tuple, list)) else [inputs]
    diff = [i for i, a in enumerate(args) if function.is_tensor(a) and a.requires_grad]
    outs = _outputs(fn, args)
    if grad_outputs is None:
        rng = np.random.default_rng(seed + 1)
        grad_outputs = [function.tensor_class(rng.standard_normal(o.shape).astype(o.dtype),
                                              requires_grad=True) for o in outs]
    n = len(args)

    def first_order(*all_args: Any) -> tuple:
        xs, vs = list(all_args[:n]), list(all_args[n:])
        o = _outputs(fn, xs)
        pairs = [(t, v) for t, v in zip(o, vs) if t.requires_grad]
        if not pairs:
            return ()
        gs = grad([t for t, _ in pairs], [xs[i] for i in diff], [v for _, v in pairs],
                  create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_order, args + list(grad_outputs), eps, atol, rtol, raise_exception,
                     fast_mode, seed)
