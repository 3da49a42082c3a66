"""Peak memory of the values-only SVD of one large matrix: minigrad's svdvals against numpy's
``svd(a, compute_uv=False)`` (and torch's svdvals where installed).

    python benchmarks/bench_svd_memory.py [--quick]

Each case runs in a fresh process, one thread: the input is made, every library is imported
and warmed up on a small matrix, then the growth of the peak resident set
(``ru_maxrss``) over the resident set just before the call is what the call took beyond its
input. The ratio is that growth over numpy's.
"""

import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CASES = [((3000, 3000), "float32"), ((3000, 3000), "float64"), ((6000, 1500), "float32"),
         ((6000, 1500), "float64")]
QUICK = [((1500, 1500), "float32"), ((3000, 750), "float64")]

# One case in a fresh process: prints the growth in MB.
_CHILD = """
import os, resource, sys
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"
import numpy as np
lib, dtype, m, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
a = np.random.default_rng(0).standard_normal((m, n), dtype=dtype)
small = np.random.default_rng(1).standard_normal((300, 200), dtype=dtype)
if lib == "minigrad":
    import minigrad as mg
    mg.set_num_threads(1)
    mg.linalg.svdvals(mg.from_numpy(small))
    t = mg.from_numpy(a)
    call = lambda: mg.linalg.svdvals(t)
elif lib == "numpy":
    np.linalg.svd(small, compute_uv=False)
    call = lambda: np.linalg.svd(a, compute_uv=False)
else:
    import torch
    torch.set_num_threads(1)
    torch.linalg.svdvals(torch.from_numpy(small))
    t = torch.from_numpy(a)
    call = lambda: torch.linalg.svdvals(t)
with open("/proc/self/statm") as f:
    before = int(f.read().split()[1]) * resource.getpagesize()
call()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(max(0, peak - before) / 2**20)
"""


def growth(lib: str, shape: tuple[int, int], dtype: str) -> float:
    out = subprocess.run([sys.executable, "-c", _CHILD, lib, dtype, *map(str, shape)],
                         capture_output=True, text=True, cwd=ROOT, check=True)
    return float(out.stdout.split()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller matrices")
    args = ap.parse_args()
    try:
        import torch  # noqa: F401
        libs = ("minigrad", "numpy", "torch")
    except ImportError:
        libs = ("minigrad", "numpy")
    print(f"{'case':<22}{'input MB':>9}" + "".join(f"{lib + ' MB':>13}" for lib in libs)
          + f"{'ratio':>8}")
    for shape, dtype in QUICK if args.quick else CASES:
        mb = {lib: growth(lib, shape, dtype) for lib in libs}
        size = shape[0] * shape[1] * (4 if dtype == "float32" else 8) / 2**20
        ratio = mb["minigrad"] / max(mb["numpy"], 1.0)
        print(f"{shape[0]}x{shape[1]} {dtype:<12}{size:>9.0f}"
              + "".join(f"{mb[lib]:>13.0f}" for lib in libs) + f"{ratio:>8.2f}")


if __name__ == "__main__":
    main()
