"""The Jacobi sweeps of one medium matrix: how many, the time per column pair, and their share
of the whole SVD, against numpy and torch.

    python benchmarks/bench_sweeps.py [--quick]

The ported programs of issue 29 do many SVDs of medium matrices (robust PCA: 60x40; the
iPEPS corners: 80x80, graded). For each case: the path svd_forward takes, the sweeps that
the kernel needs on A's own columns (V accumulated, as the batch path runs them; the LONE
and QR paths first precondition, so they sweep other rows), the sweeps' time and that time
per column pair visited (sweeps x n(n-1)/2, rotated or not), then the whole svd_forward,
numpy's and torch's times. One thread each (_interleave.py); medians of interleaved repeats.
"""

from __future__ import annotations

import argparse

# isort: off
from _interleave import interleaved, torch  # first: BLAS threads are set at numpy's import
import numpy as np
# isort: on

from minigrad.linalg._svd_batch import _kernels
from minigrad.linalg._svd_checks import _tolerances
from minigrad.linalg._svd_forward import plan, svd_forward


def _cases() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    q = np.linalg.qr(rng.standard_normal((80, 80)))[0]
    corner = (q * np.logspace(0, -18, 80)) @ q.T  # symmetric and graded, as CTMRG's corners
    low = rng.standard_normal((60, 5)) @ rng.standard_normal((5, 40))  # robust PCA's M
    sparse = np.where(rng.random((60, 40)) < 0.05, 10 * rng.standard_normal((60, 40)), 0)
    return {"60x40 rpca": low + sparse,
            "48x48 random": rng.standard_normal((48, 48)),
            "80x80 corner": corner + corner.T,
            "80x80 graded": rng.standard_normal((80, 80)) * np.logspace(0, -15, 80)}


def _rows(a: np.ndarray) -> np.ndarray:
    """A's columns as rows, scaled by a power of two as the driver does (batch of one)."""
    x = a.T if a.shape[0] >= a.shape[1] else a
    return np.ldexp(x, -np.frexp(np.abs(x).max())[1])[None].copy()


def _sweep(rows: np.ndarray, m: int, max_sweeps: int) -> bool:
    """The kernel on a copy of rows with V accumulated; whether it converged."""
    n = rows.shape[1]
    x, vt, status = rows.copy(), np.eye(n)[None].copy(), np.zeros(1, np.int8)
    _kernels().sweeps(x, vt, np.empty(n), np.empty(n), np.empty(n),
                      _tolerances(None, max_sweeps, m, np.float64), status)
    return status[0] == 0


def _row(name: str, a: np.ndarray, repeats: int) -> None:
    m, k = max(a.shape), min(a.shape)
    rows = _rows(a)
    sweeps = next(s for s in range(1, 100) if _sweep(rows, m, s))
    steps = {"sweeps": lambda: _sweep(rows, m, sweeps),
             "svd": lambda: svd_forward(a, False),
             "numpy": lambda: np.linalg.svd(a, full_matrices=False)}
    if torch is not None:
        ta = torch.from_numpy(a)
        steps["torch"] = lambda: torch.linalg.svd(ta, full_matrices=False)
    t, _ = interleaved(steps, repeats)
    per_pair = t["sweeps"] * 1e3 / (sweeps * k * (k - 1) / 2)
    tt = t.get("torch", float("nan"))
    print(f"{name:<14}{plan(1, *a.shape).path.value:<9}{sweeps:>7}{t['sweeps']:>11.1f}"
          f"{per_pair:>9.1f}{t['svd']:>9.1f}{t['numpy']:>10.1f}{tt:>10.1f}"
          f"{t['svd'] / t['numpy']:>7.2f}{t['svd'] / tt:>9.2f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    repeats = 3 if ap.parse_args().quick else 9
    print(f"median of {repeats} interleaved repeats, one thread each; pair = one column pair "
          "visited by a sweep")
    print(f"{'case':<14}{'path':<9}{'sweeps':>7}{'sweeps us':>11}{'ns/pair':>9}{'svd us':>9}"
          f"{'numpy us':>10}{'torch us':>10}{'mg/np':>7}{'mg/torch':>9}")
    for name, a in _cases().items():
        _row(name, a, repeats)


if __name__ == "__main__":
    main()
