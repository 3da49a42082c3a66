"""The strong-Wolfe line search behind LBFGS(line_search_fn="strong_wolfe"): bracketing,
then zooming with safeguarded cubic interpolation (Nocedal and Wright, algorithms 3.5, 3.6),
step for step as torch's so that the same problem takes the same steps."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np


def cubic_min(x1: float, f1: float, g1: float, x2: float, f2: float, g2: float,
              bounds: tuple[float, float] | None = None) -> float:
    """The minimiser of the cubic through (x1, f1, slope g1) and (x2, f2, slope g2), clipped
    to ``bounds`` (default: between x1 and x2); their midpoint when the cubic has none."""
    lo, hi = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 * d1 - g1 * g2
    if d2_square < 0:
        return (lo + hi) / 2.0
    d2 = math.sqrt(d2_square)
    if x1 <= x2:
        x = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        x = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(x, lo), hi)


def strong_wolfe(f_at: Callable[[Any, float, np.ndarray], tuple[float, np.ndarray]], x: Any,
                 t: float, d: np.ndarray, f: float, g: np.ndarray, gtd: float,
                 c1: float = 1e-4, c2: float = 0.9, tolerance_change: float = 1e-9,
                 max_ls: int = 25) -> tuple[float, np.ndarray, float, int]:
    """A step t along d with f(x + t d) <= f + c1 t gtd and |f'(x + t d)| <= c2 |gtd|;
    returns (loss, gradient, t, number of evaluations). ``f_at(x, t, d)`` evaluates."""
    d_norm = float(np.abs(d).max())
    f_new, g_new = f_at(x, t, d)
    evals = 1
    gtd_new = float(g_new @ d)
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done = False
    ls_iter = 0
    # bracket a step satisfying the conditions, or take one that does
    while ls_iter < max_ls:
        sufficient = f_new <= f + c1 * t * gtd and not (ls_iter > 1 and f_new >= f_prev)
        if sufficient and abs(gtd_new) <= -c2 * gtd:
            br, br_f, br_g, br_gtd = [t], [f_new], [g_new], [gtd_new]
            done = True
            break
        if not sufficient or gtd_new >= 0:
            br, br_f = [t_prev, t], [f_prev, f_new]
            br_g, br_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        t_prev, t = t, cubic_min(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                                 bounds=(t + 0.01 * (t - t_prev), t * 10))
        f_prev, g_prev, gtd_prev = f_new, g_new, gtd_new
        f_new, g_new = f_at(x, t, d)
        evals += 1
        gtd_new = float(g_new @ d)
        ls_iter += 1
    if ls_iter == max_ls:
        br, br_f, br_g, br_gtd = [0.0, t], [f, f_new], [g, g_new], [gtd, gtd_new]

    # zoom into the bracket
    insufficient = False
    low, high = (0, 1) if br_f[0] <= br_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(br[1] - br[0]) * d_norm < tolerance_change:
            break
        t = cubic_min(br[0], br_f[0], br_gtd[0], br[1], br_f[1], br_gtd[1])
        # keep away from the bracket's ends (a step there makes no progress)
        top, bottom = max(br), min(br)
        eps = 0.1 * (top - bottom)
        if min(top - t, t - bottom) < eps:
            if insufficient or t >= top or t <= bottom:
                t = top - eps if abs(t - top) < abs(t - bottom) else bottom + eps
                insufficient = False
            else:
                insufficient = True
        else:
            insufficient = False
        f_new, g_new = f_at(x, t, d)
        evals += 1
        gtd_new = float(g_new @ d)
        ls_iter += 1
        if f_new > f + c1 * t * gtd or f_new >= br_f[low]:
            br[high], br_f[high], br_g[high], br_gtd[high] = t, f_new, g_new, gtd_new
            low, high = (0, 1) if br_f[0] <= br_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (br[high] - br[low]) >= 0:
                br[high], br_f[high], br_g[high], br_gtd[high] = (br[low], br_f[low], br_g[low],
                                                                  br_gtd[low])
            br[low], br_f[low], br_g[low], br_gtd[low] = t, f_new, g_new, gtd_new
    return br_f[low], br_g[low], br[low], evals
