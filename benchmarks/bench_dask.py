"""minigrad.dask against one in-memory call (medians of interleaved repeats).

1. throughput: 3x3 matrices per second of the SVD forward (U, S, Vh) and of the polar
   energy's loss and gradient, on a LocalCluster of 1 and of 2 single-threaded workers,
   against one in-memory call in this process (numba on all cores). The data are made and
   kept on the workers; the outputs are reduced there. Goal: 2 workers >= 1.8x one
   worker on 2 cores for 10^7 3x3.
2. memory: peak RSS of a fresh process computing the loss and gradient in chunks (the
   threaded scheduler, the blocks made as they are needed) against one in-memory call.
   Goal: the chunked peak does not grow with n (it is set by the chunk size).
3. start: the first SVD on a fresh worker (importing minigrad and numba, loading the
   kernels from numba's cache), against a warm worker, and with an empty cache (--cold).
4. threads: the threaded scheduler with 2 threads against 1, one SVD thread each
   (the speed-up needs kernels that release the GIL).

Run: python benchmarks/bench_dask.py [--n 10000000] [--n-grad 2000000] [--chunk 250000]
     [--repeats 3] [--only throughput,memory,start,threads] [--cold]
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time

import dask.array as da
import distributed
import numpy as np

import minigrad as mg
import minigrad.dask as mgd


def polar_energy(F: mg.Tensor) -> mg.Tensor:
    U, _, Vh = mg.linalg.svd(F)
    return ((F - U @ Vh) ** 2).sum()


def deformations(n: int, chunk: int) -> da.Array:
    noise = da.random.default_rng(0).standard_normal((n, 3, 3), chunks=(chunk, 3, 3))
    return np.eye(3) + 0.3 * noise


def svd_work(F: da.Array) -> list[da.Array]:
    U, S, Vh = mgd.svd(F)
    return [U.sum(), S.sum(), Vh.sum()]


def grad_work(F: da.Array) -> list[da.Array]:
    L, G = mgd.loss_and_grad(polar_energy, F)
    return [L, (G ** 2).sum()]


def in_memory_svd(f: np.ndarray) -> None:
    mg.linalg.svd(mg.from_numpy(f))


def in_memory_grad(f: np.ndarray) -> None:
    x = mg.from_numpy(f).requires_grad_()
    polar_energy(x).backward()


def cluster(workers: int, **kw) -> distributed.LocalCluster:
    return distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                    dashboard_address=":0", silence_logs=logging.ERROR, **kw)


def first_svd() -> None:
    mg.linalg.svd(mg.from_numpy(np.eye(3)[None]))


def cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


def idle_cpu(client: distributed.Client, seconds: float = 3.0) -> dict[str, float]:
    """CPU seconds per second each idle worker spends anyway (heartbeats, its profiler)."""
    before = client.run(cpu_seconds)
    time.sleep(seconds)
    after = client.run(cpu_seconds)
    return {w: (after[w] - before[w]) / seconds for w in before}


def timed(run, client: distributed.Client | None, idle: dict | None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the busiest process) of run(): this process for an
    in-memory call; for a cluster, the busiest worker less what it would have spent idle over
    the same wall time. The second is about the wall time with a free core per worker: on a
    shared machine the kernel splits the cores between sessions, so more workers need not
    get more CPU, and a starved worker's idle overhead grows with the wall time."""
    before = client.run(cpu_seconds) if client else {"": cpu_seconds()}
    t0 = time.perf_counter()
    run()
    wall = time.perf_counter() - t0
    after = client.run(cpu_seconds) if client else {"": cpu_seconds()}
    idle = idle or {w: 0.0 for w in before}
    return wall, max(after[w] - before[w] - idle[w] * wall for w in before)


def throughput(sizes: dict, chunk: int, n_memory: int, repeats: int) -> None:
    f = deformations(n_memory, chunk).compute(scheduler="threads")
    in_memory_svd(f[:100])
    in_memory_grad(f[:100])
    clusters = {w: cluster(w) for w in (1, 2)}
    try:
        clients = {w: distributed.Client(c, set_as_default=False) for w, c in clusters.items()}
        data = {}
        for w, client in clients.items():
            client.run(first_svd)
            data[w] = client.persist(deformations(max(sizes.values()), chunk))
            with client.as_current():
                distributed.wait(data[w])
            client.compute(grad_work(data[w][:chunk]), sync=True)  # warm every code path
        idle = {w: idle_cpu(client) for w, client in clients.items()}
        times = {(what, where): [] for what in ("svd", "grad") for where in ("mem", 1, 2)}
        for _ in range(repeats):
            for what, mem, work in (("svd", in_memory_svd, svd_work),
                                    ("grad", in_memory_grad, grad_work)):
                wall, cpu = timed(functools.partial(mem, f), None, None)
                times[what, "mem"].append((wall / n_memory, cpu / n_memory))
                n = sizes[what]
                for w, client in clients.items():
                    run = functools.partial(client.compute, work(data[w][:n]), sync=True)
                    wall, cpu = timed(run, client, idle[w])
                    times[what, w].append((wall / n, cpu / n))
        for client in clients.values():
            client.close()
    finally:
        for c in clusters.values():
            c.close()
    print(f"1. throughput, 3x3 matrices/s (median of {repeats}; workers: svd {sizes['svd']:,}, "
          f"grad {sizes['grad']:,} in chunks of {chunk:,}, in memory {n_memory:,}); in "
          f"brackets: per CPU-second of the busiest process (for workers: less their idle "
          f"overhead), about the rate with a free core for each")
    print(f"   {'':<24}{'in memory':>20}{'1 worker':>20}{'2 workers':>20}{'2w / 1w':>14}")
    for what, label in (("svd", "svd forward (U, S, Vh)"), ("grad", "polar loss + gradient")):
        rate = {k: [1 / statistics.median(t[i] for t in times[what, k]) for i in (0, 1)]
                for k in ("mem", 1, 2)}
        cells = "".join(f"{r[0]:>10,.0f} ({r[1]:>7,.0f})" for r in rate.values())
        print(f"   {label:<24}{cells}{rate[2][0] / rate[1][0]:>6.2f} "
              f"({rate[2][1] / rate[1][1]:.2f})")
    print("   goal: 2w / 1w >= 1.8")


MEMORY = """
import sys
import dask, numpy as np
sys.path.insert(0, {here!r})
from bench_dask import deformations, grad_work, in_memory_grad
how, n, chunk = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def peak_mib():  # VmHWM: exec resets it, unlike ru_maxrss, which keeps the parent's peak
    with open("/proc/self/status") as status:
        return next(int(x.split()[1]) for x in status if x.startswith("VmHWM")) / 1024
in_memory_grad(np.eye(3)[None] + 0.1)  # load the kernels before the baseline
base = peak_mib()
if how == "mem":
    f = deformations(n, chunk).compute(scheduler="threads")
    in_memory_grad(f)
else:
    dask.compute(*grad_work(deformations(n, chunk)), scheduler="threads")
print(base, peak_mib())
"""


def memory(sizes: list[int], in_memory_sizes: list[int], chunk: int) -> None:
    print(f"2. peak RSS of a fresh process, MiB (loss + gradient; chunks of {chunk:,}, "
          f"{chunk * 72 / 2**20:.0f} MiB of float64 3x3 each)")
    here = os.path.dirname(os.path.abspath(__file__))
    for how, ns in (("mem", in_memory_sizes), ("chunked", sizes)):
        for n in ns:
            out = subprocess.run([sys.executable, "-c", MEMORY.format(here=here), how,
                                  str(n), str(chunk)], capture_output=True, text=True,
                                 check=True)
            base, peak = map(float, out.stdout.split())
            label = "in memory" if how == "mem" else "chunked, 2 threads"
            print(f"   {label:<20} n = {n:>12,}: peak {peak:8.0f} (after start-up {base:5.0f}, "
                  f"the input alone {n * 72 / 2**20:6.0f})")


def start(cold: bool) -> None:
    cases = [("numba cache as it is", {})]
    if cold:
        cases.append(("empty numba cache", {"NUMBA_CACHE_DIR": tempfile.mkdtemp()}))
    print("3. the first SVD on a fresh worker, s (wall time seen by the client)")
    for label, env in cases:
        with cluster(1, env=env) as c, distributed.Client(c) as client:
            t0 = time.perf_counter()
            client.run(first_svd)
            t1 = time.perf_counter()
            client.run(first_svd)
            t2 = time.perf_counter()
        print(f"   {label:<22} first {t1 - t0:6.2f}, then {t2 - t1:6.3f}")


THREADS = """
import statistics, sys, time
import dask, dask.array as da
sys.path.insert(0, {here!r})
from bench_dask import deformations, svd_work
n, chunk, repeats = map(int, sys.argv[1:])
F = da.from_array(deformations(n, chunk).compute(scheduler="threads"), chunks=(chunk, 3, 3))
work = svd_work(F)
dask.compute(*work, scheduler="threads", num_workers=1)
ts = {{1: [], 2: []}}
for _ in range(repeats):
    for k in ts:
        t0 = time.perf_counter()
        dask.compute(*work, scheduler="threads", num_workers=k)
        ts[k].append(time.perf_counter() - t0)
print(statistics.median(ts[1]), statistics.median(ts[2]))
"""


def threads(n: int, chunk: int, repeats: int) -> None:
    """In a process whose numba pool has one thread, so that no SVD spreads over threads of
    its own whichever way the kernels are run."""
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run([sys.executable, "-c", THREADS.format(here=here), str(n), str(chunk),
                          str(repeats)], capture_output=True, text=True, check=True,
                         env={**os.environ, "NUMBA_NUM_THREADS": "1"})
    t1, t2 = map(float, out.stdout.split())
    print(f"4. threaded scheduler, svd of {n:,} 3x3, numba on one thread: 1 thread "
          f"{t1:.2f} s, 2 threads {t2:.2f} s, speed-up {t1 / t2:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000_000, help="matrices of the svd runs")
    ap.add_argument("--n-grad", type=int, default=2_000_000,
                    help="matrices of the loss-and-gradient runs (~4x slower per matrix)")
    ap.add_argument("--n-memory", type=int, default=2_000_000,
                    help="matrices of the in-memory call (its peak is ~20x its input)")
    ap.add_argument("--chunk", type=int, default=250_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", default="throughput,memory,start,threads")
    ap.add_argument("--cold", action="store_true", help="also start a worker on an empty cache")
    args = ap.parse_args()
    only = args.only.split(",")
    logging.getLogger("distributed").setLevel(logging.ERROR)
    with os.popen("uptime") as p:
        print(f"cores {len(os.sched_getaffinity(0))}, {p.read().strip()}")
    if "throughput" in only:
        throughput({"svd": args.n, "grad": args.n_grad}, args.chunk,
                   min(args.n_grad, args.n_memory), args.repeats)
    if "memory" in only:
        memory(sorted({args.n_grad // 4, args.n_grad}),
               sorted({args.n_memory // 4, args.n_memory}), args.chunk)
    if "start" in only:
        start(args.cold)
    if "threads" in only:
        threads(min(args.n, args.n_memory), args.chunk, args.repeats)


if __name__ == "__main__":
    main()
