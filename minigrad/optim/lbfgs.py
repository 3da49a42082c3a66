"""L-BFGS (Nocedal, 1980): a quasi-Newton method that keeps the last ``history_size``
(step, gradient change) pairs, with torch's optional strong-Wolfe line search."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..autograd.function import make_tensor
from ..autograd.grad_mode import enable_grad, no_grad
from ..tensor import Tensor
from ._line_search import strong_wolfe
from .optimizer import Optimizer, pairs


class LBFGS(Optimizer):
    """torch.optim.LBFGS: ``step(closure)`` runs up to ``max_iter`` iterations, each moving
    along d = -H g (H the two-loop recursion's inverse-Hessian estimate) by a fixed ``lr``
    (the first, lr * min(1, 1 / |g|_1)) or, with ``line_search_fn="strong_wolfe"``, by a
    step that satisfies the strong Wolfe conditions. The closure re-evaluates the loss and
    its gradients (zero_grad, forward, backward) and returns the loss. One parameter group.

    Stops early when max |g| <= tolerance_grad, when the directional derivative, the step or
    the change in loss is below tolerance_change, or after ``max_eval`` closure calls
    (default max_iter * 5 / 4).

    >>> x = nn.Parameter(mg.tensor([1.5, -0.5], dtype=mg.float64))
    >>> opt = mg.optim.LBFGS([x], line_search_fn="strong_wolfe")
    >>> def closure():
    ...     opt.zero_grad()
    ...     loss = ((x - mg.tensor([3.0, 1.0], dtype=mg.float64)) ** 2).sum()
    ...     loss.backward()
    ...     return loss
    >>> _ = opt.step(closure); [round(v, 6) for v in x.tolist()]
    [3.0, 1.0]
    """

    def __init__(self, params: Iterable[Tensor] | Iterable[dict], lr: float = 1,
                 max_iter: int = 20, max_eval: int | None = None, tolerance_grad: float = 1e-7,
                 tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"only 'strong_wolfe' is supported as line_search_fn, got "
                             f"{line_search_fn!r}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size, line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    # ---- the parameters as one flat real vector (complex ones as real pairs, as torch) ------
    def _flat_grad(self) -> np.ndarray:
        return np.concatenate([np.zeros(_flat(p._array).size, p._array.real.dtype)
                               if p.grad is None else _flat(p.grad._array)
                               for p in self._params])

    def _add(self, t: float, d: np.ndarray) -> None:
        """p <- p + t d, d split over the parameters."""
        offset = 0
        for p in self._params:
            n = _flat(p._array).size
            step = (t * d[offset:offset + n]).astype(p._array.real.dtype)
            p.add_(make_tensor(step.view(p.dtype).reshape(p.shape)))
            offset += n

    def _values(self) -> list[np.ndarray]:
        return [p._array.copy() for p in self._params]

    def _restore(self, values: list[np.ndarray]) -> None:
        for p, v in zip(self._params, values, strict=True):
            p.copy_(make_tensor(v))

    def _evaluate_at(self, closure: Callable, x: list[np.ndarray], t: float,
                     d: np.ndarray) -> tuple[float, np.ndarray]:
        """(loss, flat gradient) at x + t d; the parameters are then set back to x."""
        with no_grad():
            self._add(t, d)
        loss = float(self._closure(closure))
        g = self._flat_grad()
        with no_grad():
            self._restore(x)
        return loss, g

    def step(self, closure: Callable[[], Any] | None = None) -> Any:  # type: ignore[override]
        """Run the iterations; returns the loss of the first closure call (as torch)."""
        if closure is None:
            raise RuntimeError("LBFGS.step needs a closure that re-evaluates the model and "
                               "returns the loss: opt.step(closure)")
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        history = group["history_size"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = self._closure(closure)
        loss = float(orig_loss)
        evals = 1
        state["func_evals"] += 1
        g = self._flat_grad()
        if np.abs(g).max(initial=0.0) <= tol_grad:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag, prev_g = state.get("H_diag"), state.get("prev_flat_grad")
        prev_loss = state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d, old_dirs, old_stps, ro, H_diag = -g, [], [], [], 1.0
            else:
                y, s = g - prev_g, d * t
                ys = float(y @ s)
                if ys > 1e-10:  # keep the pair only where the curvature is positive
                    if len(old_dirs) == history:
                        del old_dirs[0], old_stps[0], ro[0]
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / float(y @ y)
                d = _two_loop(-g, old_dirs, old_stps, ro, H_diag)
            prev_g = g.copy()
            prev_loss = loss
            t = min(1.0, 1.0 / float(np.abs(g).sum())) * lr if state["n_iter"] == 1 else lr
            gtd = float(g @ d)
            if gtd > -tol_change:  # not a descent direction (any more)
                break

            ls_evals = 0
            if group["line_search_fn"] == "strong_wolfe":
                x0 = self._values()
                loss, g, t, ls_evals = strong_wolfe(
                    lambda x, step, direction: self._evaluate_at(closure, x, step, direction),
                    x0, t, d, loss, g, gtd)
                with no_grad():
                    self._add(t, d)
                converged = np.abs(g).max() <= tol_grad
            else:
                with no_grad():
                    self._add(t, d)
                converged = False
                if n_iter != max_iter:  # the last iteration's loss is the next call's
                    loss = float(self._closure(closure))
                    g = self._flat_grad()
                    converged = np.abs(g).max() <= tol_grad
                    ls_evals = 1
            evals += ls_evals
            state["func_evals"] += ls_evals

            if n_iter == max_iter or evals >= max_eval or converged:
                break
            if np.abs(d * t).max() <= tol_change or abs(loss - prev_loss) < tol_change:
                break

        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=H_diag,
                     prev_flat_grad=prev_g, prev_loss=prev_loss)
        return orig_loss

    def _closure(self, closure: Callable[[], Any] | None) -> Any:
        with enable_grad():
            return closure()


def _flat(a: np.ndarray) -> np.ndarray:
    """``a`` as a flat real vector: a complex one's real and imaginary parts in turn."""
    return (pairs(a) if a.dtype.kind == "c" else a).reshape(-1)


def _two_loop(q: np.ndarray, dirs: list, stps: list, ro: list, H_diag: float) -> np.ndarray:
    """H q for the L-BFGS inverse-Hessian estimate H (Nocedal and Wright, algorithm 7.4)."""
    al = [0.0] * len(dirs)
    for i in range(len(dirs) - 1, -1, -1):
        al[i] = float(stps[i] @ q) * ro[i]
        q = q - al[i] * dirs[i]
    r = q * H_diag
    for i in range(len(dirs)):
        be = float(dirs[i] @ r) * ro[i]
        r = r + (al[i] - be) * stps[i]
    return r
