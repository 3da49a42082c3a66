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

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

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
    first = {}
    for name, step in steps.items():  # warm up, and size each turn from one timed call
        step()
        first[name] = per_call_us(step, 1)
    return _turns(first, {k: partial(per_call_us, s) for k, s in steps.items()}, repeats,
                  budget_us)


def _turns(first_us: dict[str, float], turn: dict[str, Callable[[int], float]], repeats: int,
           budget_us: float) -> tuple[dict[str, float], float]:
    """The interleaving itself: each contender's ``turn(calls)`` (microseconds per call) in
    turn, ``repeats`` times, its calls sized from ``first_us`` to fill ``budget_us``."""
    calls = {k: max(1, int(budget_us / max(us, 1.0))) for k, us in first_us.items()}
    times: dict[str, list[float]] = {k: [] for k in turn}
    for _ in range(repeats):
        for name, run in turn.items():
            times[name].append(run(calls[name]))
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


class Side:
    """One library's steps in a process of its own (``script --side LIB``, which calls
    serve_side), told over a pipe to build a step or to time a turn of it. In one process
    the two libraries shared malloc's state: minigrad's import sets glibc's thresholds
    (minigrad/_malloc.py), and torch's frees had moved glibc's adaptive ones for minigrad
    (Deep Closest Point's minigrad step took 37 ms beside torch, 44-46 ms alone). Apart,
    each library's steps run in a process whose allocations are its own (both processes
    import both libraries, through this module; the torch side with MINIGRAD_MALLOC=system,
    so that malloc is the system's there, as in a torch user's process). The cores are
    still shared: each library's turn follows the other's, as before."""

    def __init__(self, script: str, lib: str, *args: str):
        env = {**ENVIRON, "BENCH_THREADS": "1" if ONE_THREAD else "default"}
        if lib == "torch":
            env["MINIGRAD_MALLOC"] = "system"
        self.proc = subprocess.Popen([sys.executable, script, *args, "--side", lib], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def _ask(self, *words: object) -> float:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(" ".join(map(str, words)) + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        if not reply:
            raise RuntimeError(f"the side process ended at {words}")
        return float(reply)

    def setup(self, key: str, out: str = "-") -> float:
        """Build step ``key`` and run it (its outputs to ``out``, an .npz, unless "-" or it
        returns none) and again: microseconds of a third call."""
        return self._ask("setup", key, out)

    def turn(self, key: str, calls: int) -> float:
        """Microseconds per call of ``calls`` calls of step ``key``."""
        return self._ask("turn", key, calls)

    def close(self) -> None:
        """End the process (it ends when its input does; killed if it has not in 60 s)."""
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:  # a side that died mid-request: its pipe is broken
                pass
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def serve_side(lib_name: str, make_step: Callable[[Any, str], Callable[[], object]],
               arrays: Callable[[object], list] | None = None) -> None:
    """The --side process: steps made by ``make_step(lib, key)``, set up and timed as the
    parent asks (a line per request: command, key, then the rest; a number per reply, on
    the process's stdout as it was; what anything else prints goes to stderr); ``arrays``
    turns a step's result into the arrays an .npz holds. One step is kept at a time."""
    import numpy as np

    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # stray prints (a library's, a C runtime's) to stderr, not the replies
    sys.stdout = sys.stderr
    lib = mg if lib_name == "minigrad" else torch
    steps: dict[str, Callable[[], object]] = {}
    for line in sys.stdin:
        cmd, key, arg = line.rstrip("\n").split(" ", 2)  # arg: a path may hold spaces
        if cmd == "setup":
            steps.clear()  # the last key's arrays freed, as one process's rows were
            step = steps[key] = make_step(lib, key)
            out = step()
            if arg != "-" and out is not None and arrays is not None:
                np.savez(arg, *arrays(out))
            step()
            print(per_call_us(step, 1), file=replies, flush=True)
        else:
            print(per_call_us(steps[key], int(arg)), file=replies, flush=True)


def interleaved_sides(sides: dict[str, Side], key: str, repeats: int,
                      budget_us: float = 20_000, outs: dict[str, str] | None = None
                      ) -> tuple[dict[str, float], float]:
    """interleaved's medians and spread, each contender a Side (built on ``key``, its
    outputs to ``outs``' file for it)."""
    first = {name: side.setup(key, (outs or {}).get(name, "-")) for name, side in sides.items()}
    return _turns(first, {k: partial(side.turn, key) for k, side in sides.items()}, repeats,
                  budget_us)


@contextmanager
def sides(script: str, *args: str) -> Iterator[dict[str, Side]]:
    """A Side per library, minigrad's and torch's, of ``script`` (given ``args``), each
    closed on leaving the block."""
    made = {lib: Side(script, lib, *args) for lib in ("minigrad", "torch")}
    try:
        yield made
    finally:
        for side in made.values():
            side.close()


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """--threads (the settings to run) and the hidden --side (a side process's library)."""
    ap.add_argument("--threads", nargs="+", choices=("1", "default"), default=["1"])
    ap.add_argument("--side", choices=("minigrad", "torch"), help=argparse.SUPPRESS)


def delegated(args: argparse.Namespace, script: str,
              make_step: Callable[[Any, str], Callable[[], object]],
              arrays: Callable[[object], list] | None = None) -> bool:
    """Whether this process's part is done: it is a side (it has served ``make_step``'s
    steps) or the parent of one process per --threads setting (each_setting)."""
    if args.side:
        serve_side(args.side, make_step, arrays)
        return True
    return each_setting(args.threads, script)
