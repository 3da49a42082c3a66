"""Side-by-side symmetric eigensolver timings: mg.linalg.eigh (Jacobi) against
numpy.linalg.eigh and torch.linalg.eigh (if installed), on the SVD benchmark's shapes.

    python benchmarks/bench_eigh.py [--quick]
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/bench_eigh.py

(the second form compares the three on one thread each: LAPACK's batched eigh spends much
of its time in OpenBLAS's thread start-up on small matrices, worse on a loaded machine).

Every row times the contenders interleaved in one loop and reports medians, because the
machine is shared and noisy; ratios are minigrad's time over each contender's (below 1 means
minigrad is faster). Targets: the batches of 3x3 and 8x8 faster than both; 32x32 and 256x256
are reported.
"""

import argparse
import os
import platform
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import minigrad as mg  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

# (label, shape, target: minigrad / fastest other, or None to report only)
CASES = [
    ("100000 x 3x3", (100_000, 3, 3), 1.0),
    ("20000 x 8x8", (20_000, 8, 8), 1.0),
    ("2000 x 32x32", (2_000, 32, 32), None),
    ("256x256", (256, 256), None),
]

FRESH = """
import time
t0 = time.perf_counter()
import minigrad as mg
t1 = time.perf_counter()
mg.linalg.eigh(mg.randn(8, 8))
t2 = time.perf_counter()
print(f"{t1 - t0:.3f} {t2 - t1:.3f}")
"""


def time_row(a: np.ndarray, repeats: int) -> dict:
    A = mg.from_numpy(a)
    fns = {
        "numpy": lambda: np.linalg.eigh(a),
        "minigrad": lambda: mg.linalg.eigh(A),
    }
    if torch is not None:
        ta = torch.from_numpy(a)
        fns["torch"] = lambda: torch.linalg.eigh(ta)
    for f in fns.values():  # warm-up: numba compile/cache load, LAPACK workspaces
        f()
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, f in fns.items():
            time.sleep(0.02)  # let the previous contender's spinning BLAS/OpenMP threads sleep
            t = time.perf_counter()
            f()
            times[name].append(time.perf_counter() - t)
    return {name: float(np.median(ts)) for name, ts in times.items()}


def fresh_process() -> tuple[float, float, float]:
    """Wall time of a fresh interpreter running import + first eigh (warm numba cache: the
    second of two runs), its import time and its first-eigh time."""
    for _ in range(2):
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True,
                             cwd=ROOT, check=True)
        wall = time.perf_counter() - t
    t_import, t_eigh = map(float, out.stdout.strip().splitlines()[-1].split())
    return wall, t_import, t_eigh


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 repeats instead of 7")
    args = parser.parse_args()
    repeats = 3 if args.quick else 7

    import numba

    print(f"python {platform.python_version()}, numpy {np.__version__}, numba "
          f"{numba.__version__} ({numba.get_num_threads()} threads), torch "
          f"{torch.__version__ + f' ({torch.get_num_threads()} threads)' if torch else 'none'}"
          f"; cpu count {os.cpu_count()}")
    print(f"median of {repeats} interleaved repeats; mg/np and mg/torch = minigrad time over "
          "theirs\n")
    head = (f"{'case':<15}{'dtype':<9}{'numpy ms':>10}{'torch ms':>10}{'minigrad ms':>13}"
            f"{'mg/np':>8}{'mg/torch':>10}  {'target':<18}result")
    print(head)
    print("-" * len(head))
    rng = np.random.default_rng(0)
    misses = 0
    for label, shape, target in CASES:
        for dtype in (np.float64, np.float32):
            a = rng.standard_normal(shape)
            a = ((a + np.swapaxes(a, -1, -2)) / 2).astype(dtype)
            t = time_row(a, repeats)
            r_np = t["minigrad"] / t["numpy"]
            r_t = t["minigrad"] / t["torch"] if "torch" in t else None
            best = min(r for r in (r_np, r_t) if r is not None)
            if target is None:
                want, verdict = "report", "-"
            else:
                want = "faster than both"
                ok = best < target
                misses += not ok
                verdict = "PASS" if ok else f"MISS ({1 / best:.2f}x of the fastest)"
            torch_ms = f"{1e3 * t['torch']:>10.2f}" if "torch" in t else f"{'-':>10}"
            rt = f"{r_t:>10.2f}" if r_t is not None else f"{'-':>10}"
            print(f"{label:<15}{np.dtype(dtype).name:<9}{1e3 * t['numpy']:>10.2f}{torch_ms}"
                  f"{1e3 * t['minigrad']:>13.2f}{r_np:>8.2f}{rt}  {want:<18}{verdict}",
                  flush=True)
    wall, t_import, t_eigh = fresh_process()
    ok = wall < 1.0
    misses += not ok
    print(f"\nfresh process, warm cache: {wall:.3f} s wall for interpreter start + import + "
          f"first eigh (import {t_import:.3f} s, first eigh {t_eigh:.3f} s); target < 1 s: "
          f"{'PASS' if ok else 'MISS'}")
    print(f"{misses} target(s) missed")


if __name__ == "__main__":
    main()
