"""The polar-factor energy of a few million 3x3 deformation gradients, and its gradient, on
a Dask cluster on this machine.

Each F_b is the deformation gradient of one element of a mesh, near the identity. Its
polar factor R_b = U_b Vh_b is the nearest rotation, and E = sum_b |F_b - R_b|^2 measures
how far the mesh is from moving rigidly. ``minigrad.dask.loss_and_grad`` computes E and
dE/dF block by block on a ``distributed.LocalCluster`` (one single-threaded worker per
core), with Dask's progress bar, and checks dE/dF_b against its closed form 2 (F_b - R_b)
(R_b from LAPACK). The throughput is printed beside that of one in-memory call in this
process, and the cluster is shut down at the end.

    python examples/dask_svd.py [--fast] [--n N] [--chunk C] [--workers W]
"""

from __future__ import annotations

import argparse
import logging
import os
import time

import _common  # noqa: F401  (puts the checkout on sys.path)
import numpy as np

import minigrad as mg

try:
    import dask.array as da
    import distributed

    import minigrad.dask as mgd
except ImportError as e:
    raise SystemExit(f"this example needs pip install 'minigrad[dask]' ({e})") from e


def polar_energy(F: mg.Tensor) -> mg.Tensor:
    """sum_b |F_b - U_b Vh_b|^2, written with minigrad ops so it has a gradient."""
    U, _, Vh = mg.linalg.svd(F)
    return ((F - U @ Vh) ** 2).sum()


def closed_form_gap(f: np.ndarray, g: np.ndarray) -> np.ndarray:
    """max |g - 2 (f - U Vh)| over one block, with U, Vh from LAPACK."""
    u, _, vh = np.linalg.svd(f)
    return np.abs(g - 2 * (f - u @ vh)).max(keepdims=True)


def deformations(n: int, chunk: int, seed: int = 0) -> da.Array:
    """n deformation gradients I + 0.3 N(0, 1), made block by block where they are used."""
    noise = da.random.default_rng(seed).standard_normal((n, 3, 3), chunks=(chunk, 3, 3))
    return np.eye(3) + 0.3 * noise


def first_svd() -> None:
    """What a fresh worker's first task pays before any work: importing minigrad and numba
    and loading the compiled kernels from numba's cache."""
    mg.linalg.svd(mg.from_numpy(np.eye(3)[None]))


def in_memory(f: np.ndarray) -> tuple[float, float]:
    """(E, seconds) for one forward + backward over the whole stack in this process."""
    t0 = time.perf_counter()
    x = mg.from_numpy(f).requires_grad_()
    E = polar_energy(x)
    E.backward()
    return E.item(), time.perf_counter() - t0


def main(fast: bool = False, n: int | None = None, chunk: int | None = None,
         workers: int | None = None) -> dict:
    n = n or (40_000 if fast else 2_000_000)
    chunk = chunk or (10_000 if fast else 250_000)
    workers = workers or len(os.sched_getaffinity(0))
    F = deformations(n, chunk)

    # One process first: it also leaves the compiled kernels in numba's cache for the workers.
    f = F.compute(scheduler="threads")
    in_memory(f[:1000])
    E_one, t_one = in_memory(f)
    del f

    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  dashboard_address=":0", silence_logs=logging.ERROR) as cluster, \
            distributed.Client(cluster) as client:
        t0 = time.perf_counter()
        client.run(first_svd)  # on every worker at once
        t_start = time.perf_counter() - t0
        F = client.persist(F)  # made on the workers, where they stay
        distributed.wait(F)
        t0 = time.perf_counter()
        L, G = client.persist(list(mgd.loss_and_grad(polar_energy, F)))
        distributed.progress(L, G)  # Dask's progress bar
        distributed.wait([L, G])
        t_dask = time.perf_counter() - t0
        E_dask = float(L.compute())
        gap = float(da.map_blocks(closed_form_gap, F, G, chunks=(1, 1, 1)).max().compute())
    # The cluster and its worker processes are gone here.

    print()
    print(f"dask_svd: E = {E_dask:.6e} over {n:,} 3x3 in {F.numblocks[0]} chunks (one process: "
          f"{E_one:.6e}), max |dE/dF - 2 (F - R)| = {gap:.1e}; {workers} workers "
          f"{n / t_dask:,.0f} matrices/s, one in-memory call {n / t_one:,.0f} matrices/s; "
          f"fresh workers ran their first SVD in {t_start:.2f} s")
    return {"E_dask": E_dask, "E_one": E_one, "gap": gap, "rate_dask": n / t_dask,
            "rate_one": n / t_one, "workers": workers, "start": t_start}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("--fast", action="store_true", help="a short run (what the tests use)")
    ap.add_argument("--n", type=int, help="how many matrices (default 2,000,000)")
    ap.add_argument("--chunk", type=int, help="matrices per block (default 250,000)")
    ap.add_argument("--workers", type=int, help="worker processes (default: the cores)")
    args = ap.parse_args()
    main(args.fast, args.n, args.chunk, args.workers)
