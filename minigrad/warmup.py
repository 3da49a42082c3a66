"""Compile minigrad's numba kernels (SVD, eigh, small-batch matmul) ahead of time:
``python -m minigrad.warmup``.

numba compiles each kernel on its first call and caches it on disk; on a fresh install
that first call takes seconds per kind of SVD. This runs every kind once, float64 and
float32, so that numba's cache holds them all, and shows progress on stderr. With a warm
cache it only loads them (well under a second each).
"""

from __future__ import annotations

import sys
import time

import numpy as np

from minigrad.linalg import _svd_forward
from minigrad.linalg._eigh_forward import eigh_forward
from minigrad.linalg._svd_forward import Path, Plan, svd_forward
from minigrad.linalg._svd_vjp_kernel import svd_vjp_square
from minigrad.ops import _matmul_kernels
from minigrad.ops._matmul_kernels import bmm

# Each row reaches different kernels: the lanes of 3x3 and of other tiny matrices, the
# general batch kernel, the lone-matrix sweeps (and values only), and the threaded sweep of
# large matrices.
KINDS = [
    ("batch of 3x3", (64, 3, 3), None),
    ("batch of 4x3", (64, 4, 3), None),
    ("batch of 8x8, full U", (4, 8, 5), None),
    ("one matrix", (60, 50), Plan(Path.LONE, 1)),
    ("one large matrix, threaded sweeps", (60, 50), Plan(Path.LONE, 2)),
]


def main(argv: list[str] | None = None) -> int:
    """Run every kind of SVD once per dtype, printing how long each took."""
    t0 = time.perf_counter()
    _svd_forward._noticed.update(("float32", "float64"))  # the progress lines say it already
    _matmul_kernels.notice_compiles = False
    rng = np.random.default_rng(0)
    total = len(KINDS) * 2 + 2
    step = 0
    for dtype in (np.float64, np.float32):
        for label, shape, plan in KINDS:
            step += 1
            t = time.perf_counter()
            print(f"minigrad.warmup [{step}/{total}] {label}, {np.dtype(dtype).name} ...",
                  end="", file=sys.stderr, flush=True)
            a = rng.standard_normal(shape).astype(dtype)
            svd_forward(a, True, _plan=plan)
            svd_forward(a, False, compute_uv=False, _plan=plan)
            print(f" {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
    t = time.perf_counter()  # the small-batch matmul and SVD backward, one per dtype
    print(f"minigrad.warmup [{total - 1}/{total}] batched small matmul and SVD backward ...",
          end="", file=sys.stderr, flush=True)
    for dtype in (np.float64, np.float32):
        a = rng.standard_normal((16, 3, 3)).astype(dtype)
        u, s, vh = svd_forward(a, True)
        bmm(a, a)
        svd_vjp_square(u, s, vh, a, None, a)
    print(f" {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
    t = time.perf_counter()  # eigh: one kernel, float64 for every dtype, all its paths
    print(f"minigrad.warmup [{total}/{total}] eigh ...", end="", file=sys.stderr, flush=True)
    eigh_forward(rng.standard_normal((32, 3, 3)))
    print(f" {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
    print(f"minigrad.warmup: the SVD, eigh and matmul kernels are compiled and cached "
          f"({time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
