"""SVD backward timings, as ratios measured in one run (median of interleaved repeats).

1. backward / forward time of the same SVD (square n x n, cotangents for U, S and Vh):
   target <= 1.5 for n >= 32.
2. forward + backward of the batched polar loss (C * (U @ Vh)).sum() over 4096 3x3
   matrices (the Procrustes / Kabsch case): minigrad at least 4x faster than torch
   (issue 14). Also printed: minigrad's own time in ms and its CPU time, which the load
   on a shared machine disturbs less than the ratio.

Run: python benchmarks/bench_svd_grad.py [--repeats N]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import minigrad as mg

try:
    import torch
except ImportError:  # the torch column is optional
    torch = None


def _time(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def backward_over_forward(n: int, repeats: int) -> tuple[float, float, float]:
    """Forward: svd(A). Backward: the SVD node alone, d<G, (U, S, Vh)>/dA for random
    cotangents G of all three outputs (autograd.grad with grad_outputs)."""
    rng = np.random.default_rng(n)
    A0 = rng.standard_normal((n, n))
    cot = [mg.tensor(rng.standard_normal(shape)) for shape in ((n, n), (n,), (n, n))]
    mg.linalg.svd(mg.tensor(A0))  # compile / warm the kernels outside the timing
    fwd, bwd = [], []
    for _ in range(repeats):
        A = mg.tensor(A0, requires_grad=True)
        t0 = time.perf_counter()
        outs = mg.linalg.svd(A)
        t1 = time.perf_counter()
        mg.autograd.grad(outs, A, cot)
        t2 = time.perf_counter()
        fwd.append(t1 - t0)
        bwd.append(t2 - t1)
    f, b = statistics.median(fwd), statistics.median(bwd)
    return f, b, b / f


_TARGET = 4.0  # minigrad at least this many times faster than torch on the polar loss


def procrustes(repeats: int) -> tuple[float, float, float | None]:
    rng = np.random.default_rng(0)
    A0 = rng.standard_normal((4096, 3, 3))
    C0 = rng.standard_normal((4096, 3, 3))
    C = mg.tensor(C0)

    def mine() -> None:
        A = mg.tensor(A0, requires_grad=True)
        U, _, Vh = mg.linalg.svd(A)
        (C * (U @ Vh)).sum().backward()

    def theirs() -> None:
        A = torch.tensor(A0, requires_grad=True)
        U, _, Vh = torch.linalg.svd(A)
        (torch.tensor(C0) * (U @ Vh)).sum().backward()

    mine()
    if torch is not None:
        theirs()
    ts_m, cpu_m, ts_t = [], [], []
    for _ in range(repeats):
        c = time.process_time()
        ts_m.append(_time(mine))
        cpu_m.append(time.process_time() - c)  # all threads: the SVD runs on workers
        if torch is not None:
            ts_t.append(_time(theirs))
    return (statistics.median(ts_m), statistics.median(cpu_m),
            statistics.median(ts_t) if ts_t else None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=9)
    args = ap.parse_args()

    print("backward / forward of one n x n SVD node (random cotangents for U, S and Vh)")
    print(f"{'n':>5} {'forward ms':>11} {'backward ms':>12} {'ratio':>7}  target <= 1.5")
    for n in (32, 64, 128, 256):
        # Small sizes take well under a millisecond: many more repeats to tame the noise.
        f, b, r = backward_over_forward(n, args.repeats * (30 if n <= 64 else 1))
        verdict = "PASS" if r <= 1.5 else "MISS"
        print(f"{n:>5} {f * 1e3:>11.3f} {b * 1e3:>12.3f} {r:>7.2f}  {verdict}")

    m, cpu, t = procrustes(args.repeats * 3)
    print("\nforward+backward of (C * (U @ Vh)).sum() over 4096 3x3 (float64)")
    print(f"minigrad {m * 1e3:.2f} ms (CPU {cpu * 1e3:.2f} ms)", end="")
    if t is None:
        print("  (torch not installed: no ratio)")
    else:
        speedup = t / m
        print(f", torch {t * 1e3:.2f} ms, minigrad is {speedup:.1f}x faster  "
              f"target >= {_TARGET:g}x  {'PASS' if speedup >= _TARGET else 'MISS'}")


if __name__ == "__main__":
    main()
