"""Forward + backward of F.conv1d and F.conv2d (float32), minigrad against torch in one run.

    python benchmarks/bench_conv.py [--repeats 7] [--calls 10]

Cases: a PointNet layer (Conv1d 64 -> 128, kernel 1, 1024 points, batch 8), a 1-d conv of
kernel 5 with padding, and a small-image 3x3 Conv2d (32 -> 64 channels, 32x32, batch 8).
One thread each (BLAS pools, torch's intra-op pool, minigrad's kernels): on a shared 2-core
machine threaded timings swing with other load. Repeats are interleaved and medians of this
thread's CPU time are reported; the column that matters is minigrad / torch.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # sized when numpy / torch load: before the imports

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

import numpy as np  # noqa: E402

import minigrad as mg  # noqa: E402
import minigrad.nn.functional as F  # noqa: E402

# name, dims, input shape, weight shape, keyword arguments
CASES = [
    ("pointnet conv1d k=1", 1, (8, 64, 1024), (128, 64, 1), {}),
    ("conv1d k=5 pad=2", 1, (8, 32, 256), (64, 32, 5), {"padding": 2}),
    ("conv2d 3x3 pad=1", 2, (8, 32, 32, 32), (64, 32, 3, 3), {"padding": 1}),
]


def step(lib, conv, x_arr: np.ndarray, w_arr: np.ndarray, kwargs: dict):
    x = lib.tensor(x_arr, requires_grad=True)
    w = lib.tensor(w_arr, requires_grad=True)

    def run() -> None:
        y = conv(x, w, **kwargs)
        y.sum().backward()
        x.grad = w.grad = None

    return run


def seconds_per_call(run, calls: int) -> float:
    t0 = time.thread_time()
    for _ in range(calls):
        run()
    return (time.thread_time() - t0) / calls


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--calls", type=int, default=10)
    args = ap.parse_args(argv)
    mg.set_num_threads(1)
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        torch = None
        print("torch is not installed: timing minigrad alone")
    rng = np.random.default_rng(0)
    print(f"conv forward + backward, float32, one thread, median of {args.repeats} x "
          f"{args.calls} calls")
    print(f"{'case':<22}{'minigrad (ms)':>15}{'torch (ms)':>12}{'ratio':>8}")
    for name, n, xs, ws, kwargs in CASES:
        x = rng.standard_normal(xs).astype(np.float32)
        w = rng.standard_normal(ws).astype(np.float32)
        runs = {"minigrad": step(mg, getattr(F, f"conv{n}d"), x, w, kwargs)}
        if torch is not None:
            runs["torch"] = step(torch, getattr(torch.nn.functional, f"conv{n}d"), x, w, kwargs)
        for run in runs.values():  # warm up
            seconds_per_call(run, 3)
        times: dict[str, list[float]] = {k: [] for k in runs}
        for _ in range(args.repeats):  # interleaved: load from other processes hits both
            for k, run in runs.items():
                times[k].append(seconds_per_call(run, args.calls))
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        theirs = med.get("torch", float("nan"))
        print(f"{name:<22}{med['minigrad']:>15.2f}{theirs:>12.2f}"
              f"{med['minigrad'] / theirs:>8.2f}")


if __name__ == "__main__":
    main()
