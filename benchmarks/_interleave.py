"""Timing shared by the ratio benchmarks: contenders run interleaved, one thread each, and
the median over repeats is reported, because the machine is shared and noisy.

Times are this thread's CPU time (time.thread_time): a descheduled process is not charged
for the wait. Import this before numpy or torch: the BLAS pools are sized at their import
(threadpoolctl, where installed, limits them afterwards too). A BLAS pool of two threads on
this shared machine made the caller spin for a descheduled helper: 100x slower matmuls.
BENCH_THREADS=default in the environment leaves every library its default thread count
(the rows a user gets without setting any); times are then wall-clock (time.perf_counter),
which counts the helper threads' work, and the machine's load with it.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ONE_THREAD = os.environ.get("BENCH_THREADS", "1") != "default"
ENVIRON = dict(os.environ)  # as given (a child process for another setting starts from it)
if ONE_THREAD:
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

import minigrad as mg  # noqa: E402

try:  # numpy imported already (by the caller) has sized its pool: limit it now as well
    from threadpoolctl import threadpool_limits
except ImportError:
    threadpool_limits = None

try:
    import torch
except ImportError:
    torch = None

if ONE_THREAD:
    if threadpool_limits is not None:
        threadpool_limits(1)
    if torch is not None:
        torch.set_num_threads(1)
    mg.set_num_threads(1)


def per_call_us(step: Callable[[], object], n: int) -> float:
    clock = time.thread_time if ONE_THREAD else time.perf_counter
    t0 = clock()
    for _ in range(n):
        step()
    return (clock() - t0) / n * 1e6


def interleaved(steps: dict[str, Callable[[], object]], repeats: int,
                budget_us: float = 20_000) -> tuple[dict[str, float], float]:
    """Median microseconds per call of each step, the steps run in turn ``repeats`` times,
    each turn about ``budget_us`` long; also the largest spread (max / min over the repeats)
    of any contender, as a measure of the noise."""
    calls = {}
    for name, step in steps.items():  # warm up, and size each turn from one timed call
        step()
        calls[name] = max(1, int(budget_us / max(per_call_us(step, 1), 1.0)))
    times: dict[str, list[float]] = {k: [] for k in steps}
    for _ in range(repeats):
        for name, step in steps.items():
            times[name].append(per_call_us(step, calls[name]))
    spread = max(max(v) / min(v) for v in times.values())
    return {k: statistics.median(v) for k, v in times.items()}, spread


def threads_label() -> str:
    """The thread setting this process times, for a table's header."""
    if ONE_THREAD:
        return "one thread each"
    torch_threads = "" if torch is None else f", torch {torch.get_num_threads()}"
    return f"default threads (minigrad {mg.get_num_threads()}{torch_threads})"


def each_setting(threads: list[str], script: str) -> bool:
    """Run ``script`` again, once per thread setting in ``threads`` ("1", "default"), each in
    its own process with BENCH_THREADS set (the pools are sized at import), unless this
    process is the one setting asked for. Whether it ran them (the caller then stops)."""
    if threads == ["1" if ONE_THREAD else "default"]:
        return False
    argv, skip = [], False
    for a in sys.argv[1:]:  # all but --threads and its values
        skip = a == "--threads" or (skip and not a.startswith("--"))
        argv += [] if skip else [a]
    for t in threads:
        subprocess.run([sys.executable, script, *argv, "--threads", t], check=True,
                       env={**ENVIRON, "BENCH_THREADS": t})
    return True
