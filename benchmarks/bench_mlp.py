"""One SGD training step of an MLP 64-128-10 (ReLU) on a 256-sample float32 batch:
forward, cross_entropy, backward, step. minigrad against torch (when importable), same run.

    python benchmarks/bench_mlp.py [--repeats 7] [--steps 200] [--threads N]

Target: minigrad's step time <= 1.0x torch's (issue 14). Both libraries run with N threads (BLAS
pools and torch's intra-op pool), 1 by default: matrices this small gain nothing from
threads, and on a shared 2-core machine threaded timings swing tenfold with other load.
``--threads 0`` keeps each library's own default (every core). The repeats are interleaved
so that load from other processes hits both alike; medians are reported. Times are this
thread's CPU time (time.thread_time): a descheduled process is not charged for the wait.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

# BLAS thread pools are sized when numpy / torch load, so --threads must act before the imports.
_THREADS = sys.argv[sys.argv.index("--threads") + 1] if "--threads" in sys.argv[:-1] else "1"
if _THREADS != "0":
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = _THREADS

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

import numpy as np  # noqa: E402

import minigrad as mg  # noqa: E402
import minigrad.nn as nn  # noqa: E402
import minigrad.nn.functional as F  # noqa: E402
import minigrad.optim as optim  # noqa: E402

TARGET = 1.0
N, D_IN, HIDDEN, D_OUT = 256, 64, 128, 10


def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, D_IN)).astype(np.float32)
    y = rng.integers(0, D_OUT, N).astype(np.int64)
    return x, y


def minigrad_step(x: np.ndarray, y: np.ndarray):
    mg.manual_seed(0)
    model = nn.Sequential(nn.Linear(D_IN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, D_OUT))
    opt = optim.SGD(model.parameters(), lr=0.01)
    xt, yt = mg.tensor(x), mg.tensor(y)

    def step() -> None:
        opt.zero_grad()
        loss = F.cross_entropy(model(xt), yt)
        loss.backward()
        opt.step()

    return step


def torch_step(x: np.ndarray, y: np.ndarray):
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(D_IN, HIDDEN), torch.nn.ReLU(),
                                torch.nn.Linear(HIDDEN, D_OUT))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)

    def step() -> None:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(xt), yt)
        loss.backward()
        opt.step()

    return step


def time_per_step(step, steps: int) -> float:
    t0 = time.thread_time()
    for _ in range(steps):
        step()
    return (time.thread_time() - t0) / steps


def main(argv: list[str] | None = None) -> float | None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--threads", type=int, default=1,
                    help="BLAS / torch threads for both libraries (0: each library's default)")
    args = ap.parse_args(argv)

    x, y = data()
    steps = {"minigrad": minigrad_step(x, y)}
    try:
        import torch

        if args.threads:
            torch.set_num_threads(args.threads)
        steps["torch"] = torch_step(x, y)
    except ImportError:
        print("torch is not installed: timing minigrad alone")
    for step in steps.values():  # warm up (caches, lazy imports, BLAS thread pools)
        time_per_step(step, 20)
    times: dict[str, list[float]] = {k: [] for k in steps}
    for _ in range(args.repeats):  # interleaved, so drifts in machine load hit both alike
        for name, step in steps.items():
            times[name].append(time_per_step(step, args.steps))

    med = {k: statistics.median(v) for k, v in times.items()}
    threads = args.threads or f"default ({os.cpu_count()} cores)"
    print(f"MLP {D_IN}-{HIDDEN}-{D_OUT} SGD step, batch {N} float32, threads {threads}, "
          f"median of {args.repeats} x {args.steps} steps")
    print(f"{'library':<10}{'step (us)':>12}")
    for k, v in med.items():
        print(f"{k:<10}{v * 1e6:>12.1f}")
    if "torch" not in med:
        return None
    ratio = med["minigrad"] / med["torch"]
    verdict = "PASS" if ratio <= TARGET else "MISS"
    print(f"minigrad / torch = {ratio:.2f}x (target <= {TARGET}x): {verdict}")
    return ratio


if __name__ == "__main__":
    main()
