"""Small matrices, minigrad against torch (and numpy) in one run, one thread each.

    python benchmarks/bench_linalg_small.py [--quick]

(1) det, inv, solve of 256 2x2 / 3x3 / 4x4 matrices, and det forward + backward: target
    (issue 29) minigrad <= torch. (2) One 3x3 (and one 60x40) matrix per call: svd,
    svdvals, eigh, det, inv, solve; target minigrad <= 1.5x numpy. Medians of interleaved
    repeats (benchmarks/_interleave.py); spread is the largest max/min of a row's repeats.
"""

from __future__ import annotations

import argparse

# isort: off
from _interleave import interleaved, mg, torch  # first: BLAS threads are set at numpy's import
import numpy as np
# isort: on


def _det_grad(lib, x):
    def step():
        x.grad = None
        lib.linalg.det(x).sum().backward()
    return step


def _batch_step(lib, op: str, a: np.ndarray, b: np.ndarray):
    x, y = lib.tensor(a), lib.tensor(b)
    if op == "solve":
        return lambda: lib.linalg.solve(x, y)
    if op == "det+grad":
        return _det_grad(lib, lib.tensor(a, requires_grad=True))
    f = getattr(lib.linalg, op)
    return lambda: f(x)


def _single_rows(a: np.ndarray, sym: np.ndarray, rhs: np.ndarray) -> dict:
    """op: (numpy, minigrad, torch) steps on one matrix."""
    x, t, xs, ts = mg.tensor(a), torch.tensor(a), mg.tensor(sym), torch.tensor(sym)
    rows = {
        "svd": (lambda: np.linalg.svd(a, full_matrices=False),
                lambda: mg.linalg.svd(x, full_matrices=False),
                lambda: torch.linalg.svd(t, full_matrices=False)),
        "svdvals": (lambda: np.linalg.svd(a, compute_uv=False),
                    lambda: mg.linalg.svdvals(x), lambda: torch.linalg.svdvals(t)),
        "eigh": (lambda: np.linalg.eigh(sym), lambda: mg.linalg.eigh(xs),
                 lambda: torch.linalg.eigh(ts)),
    }
    if a.shape[0] == a.shape[1]:
        xb, tb = mg.tensor(rhs), torch.tensor(rhs)
        rows.update({
            "det": (lambda: np.linalg.det(a), lambda: mg.linalg.det(x),
                    lambda: torch.linalg.det(t)),
            "inv": (lambda: np.linalg.inv(a), lambda: mg.linalg.inv(x),
                    lambda: torch.linalg.inv(t)),
            "solve": (lambda: np.linalg.solve(a, rhs), lambda: mg.linalg.solve(x, xb),
                      lambda: torch.linalg.solve(t, tb)),
        })
    return rows


def batches(repeats: int) -> None:
    print("(1) 256 matrices per call: us; ratio = minigrad / torch (target <= 1)")
    print(f"{'op':<10}{'n':>3}{'dtype':>9}{'mg':>8}{'torch':>8}{'ratio':>7}{'spread':>8}")
    rng = np.random.default_rng(0)
    for n in (2, 3, 4):
        for dtype in ("float32", "float64"):
            a = rng.standard_normal((256, n, n)).astype(dtype)
            b = rng.standard_normal((256, n, 1)).astype(dtype)
            for op in ("det", "inv", "solve", "det+grad"):
                steps = {lib.__name__: _batch_step(lib, op, a, b) for lib in (mg, torch)}
                res, spread = interleaved(steps, repeats, 10_000)
                ratio = res["minigrad"] / res["torch"]
                print(f"{op:<10}{n:>3}{dtype:>9}{res['minigrad']:>8.1f}{res['torch']:>8.1f}"
                      f"{ratio:>7.2f}{spread:>8.2f}{'  MISS' if ratio > 1 else ''}", flush=True)


def singles(repeats: int) -> None:
    print("\n(2) one matrix per call, float64: us; ratio = minigrad / numpy (target <= 1.5)")
    print(f"{'op':<9}{'shape':>9}{'mg':>8}{'numpy':>8}{'torch':>8}{'mg/np':>7}{'spread':>8}")
    rng = np.random.default_rng(1)
    for shape in ((3, 3), (60, 40)):
        a = rng.standard_normal(shape)
        rows = _single_rows(a, a.T @ a, rng.standard_normal(shape[0]))
        for op, (np_f, mg_f, t_f) in rows.items():
            res, spread = interleaved({"numpy": np_f, "minigrad": mg_f, "torch": t_f}, repeats,
                                      5_000)
            ratio = res["minigrad"] / res["numpy"]
            print(f"{op:<9}{str(shape):>9}{res['minigrad']:>8.1f}{res['numpy']:>8.1f}"
                  f"{res['torch']:>8.1f}{ratio:>7.2f}{spread:>8.2f}"
                  f"{'  MISS' if ratio > 1.5 else ''}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    args = ap.parse_args()
    if torch is None:
        raise SystemExit("torch is not installed: no ratio to report")
    repeats = 3 if args.quick else 7
    batches(repeats)
    singles(repeats)


if __name__ == "__main__":
    main()
