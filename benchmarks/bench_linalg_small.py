"""Small matrices, minigrad against torch (and numpy) in one run, one thread each.

    python benchmarks/bench_linalg_small.py [--quick] [--part batched single]
        [--batch 256 4096 100000] [--threads 1 default]

(1) det, slogdet, inv, solve of batches of 2x2 / 3x3 / 4x4 matrices, forward and forward +
    backward (of the sum of the outputs), float32 and float64: target (issue 29) minigrad
    <= torch. (2) One 3x3 (and one 60x40) matrix per call: svd, svdvals, eigh, det, inv,
    solve; target minigrad <= 1.5x numpy. Medians of interleaved repeats
    (benchmarks/_interleave.py); spread is the largest max/min of a row's repeats. Each
    --threads setting runs in its own process: "default" leaves every library its own
    thread count and times wall-clock.
"""

from __future__ import annotations

import argparse

# isort: off
from _interleave import each_setting, interleaved, mg, threads_label, torch  # first:
import numpy as np  # BLAS threads are set at numpy's import
# isort: on

OPS = ("det", "slogdet", "inv", "solve")


def _batch_step(lib, op: str, a: np.ndarray, b: np.ndarray, grad: bool):
    x, y = lib.tensor(a, requires_grad=grad), lib.tensor(b)
    f = {"det": lambda: lib.linalg.det(x), "slogdet": lambda: lib.linalg.slogdet(x)[1],
         "inv": lambda: lib.linalg.inv(x), "solve": lambda: lib.linalg.solve(x, y)}[op]
    if not grad:
        return f

    def step():
        x.grad = None
        f().sum().backward()
    return step


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


def batches(repeats: int, sizes: list[int]) -> None:
    print(f"(1) batches, {threads_label()}: us per call; ratio = minigrad / torch "
          "(target <= 1)")
    print(f"{'op':<14}{'n':>2}{'batch':>7}{'dtype':>8}{'mg':>10}{'torch':>10}{'ratio':>7}"
          f"{'spread':>7}")
    rng = np.random.default_rng(0)
    for n in (2, 3, 4):
        for size in sizes:
            for dtype in ("float32", "float64"):
                a = rng.standard_normal((size, n, n)).astype(dtype)
                b = rng.standard_normal((size, n, 1)).astype(dtype)
                for op in OPS:
                    for grad in (False, True):
                        steps = {lib.__name__: _batch_step(lib, op, a, b, grad)
                                 for lib in (mg, torch)}
                        res, spread = interleaved(steps, repeats, 10_000)
                        ratio = res["minigrad"] / res["torch"]
                        name = op + ("+backward" if grad else "")
                        print(f"{name:<14}{n:>2}{size:>7}{dtype:>8}{res['minigrad']:>10.1f}"
                              f"{res['torch']:>10.1f}{ratio:>7.2f}{spread:>7.2f}"
                              f"{'  MISS' if ratio > 1 else ''}", flush=True)


def singles(repeats: int) -> None:
    print("\n(2) one matrix per call, float64: us; ratio = minigrad / numpy (target <= 1.5)")
    print(f"{'op':<9}{'shape':>9}{'mg':>8}{'numpy':>8}{'torch':>8}{'mg/np':>7}{'spread':>8}")
    rng = np.random.default_rng(1)
    for shape in ((3, 3), (60, 40)):
        a = rng.standard_normal(shape)
        rows = _single_rows(a, a.T @ a, rng.standard_normal(shape[0]))
        for steps in rows.values():  # a first pass, not measured: a process's first few
            interleaved(dict(enumerate(steps)), 1, 5_000)  # thousand calls run slower
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
    ap.add_argument("--part", nargs="+", choices=("batched", "single"),
                    default=["batched", "single"])
    ap.add_argument("--batch", nargs="+", type=int, default=[256, 4096, 100_000])
    ap.add_argument("--threads", nargs="+", choices=("1", "default"), default=["1"])
    args = ap.parse_args()
    if torch is None:
        raise SystemExit("torch is not installed: no ratio to report")
    if each_setting(args.threads, __file__):
        return
    repeats = 3 if args.quick else 7
    if "batched" in args.part:
        batches(repeats, args.batch)
    if "single" in args.part:
        singles(repeats)


if __name__ == "__main__":
    main()
