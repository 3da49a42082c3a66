"""Where the iPEPS step's time goes, minigrad against torch (issue 29: profile first).

    python benchmarks/bench_ipeps_pieces.py [--quick]

bench_programs.py's ``ipeps`` step (energy and gradient, D = 2, chi = 20; minigrad under
``tie_policy("zero")``, torch with the Lorentzian SVD) split into its SVD forward calls,
the rest of the forward, the SVD nodes' backward and the rest of the backward, with the
garbage collector's share of the whole. Thread time of one thread each, medians over
interleaved repeats (bench_programs.py gives the ratio itself).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

# isort: off
from _interleave import mg, torch  # first: BLAS threads are set at numpy's import
import numpy as np
from bench_programs import _heisenberg, ipeps_energy
from bench_tensor_networks import torch_lorentzian
# isort: on

PIECES = ("SVD forward", "rest of forward", "SVD backward", "rest of backward", "whole step",
          "of which GC")


@contextmanager
def timed(owner: object, name: str, key: str, acc: dict) -> Iterator[None]:
    """``owner.name`` (a function, or a class's staticmethod) adding its thread time to
    ``acc[key]`` while the block runs."""
    f = getattr(owner, name)

    def run(*args, **kwargs):
        t0 = time.thread_time()
        try:
            return f(*args, **kwargs)
        finally:
            acc[key] += time.thread_time() - t0

    setattr(owner, name, staticmethod(run) if isinstance(owner, type) else run)
    try:
        yield
    finally:
        setattr(owner, name, staticmethod(f) if isinstance(owner, type) else f)


@contextmanager
def collections_timed(acc: dict) -> Iterator[None]:
    """The time the garbage collector runs while the block does, into acc["of which GC"]."""
    start = [0.0]

    def note(phase: str, info: dict) -> None:
        if phase == "start":
            start[0] = time.thread_time()
        else:
            acc["of which GC"] += time.thread_time() - start[0]

    gc.callbacks.append(note)
    try:
        yield
    finally:
        gc.callbacks.remove(note)


def setup(name: str) -> Callable[[], dict]:
    """One library's step, which returns its pieces' thread times (seconds)."""
    rng = np.random.default_rng(4)  # bench_programs._ipeps_step's start
    B = rng.random((2, 2, 2, 2, 2))
    if name == "minigrad":
        lib = svd_lib = mg
        svd_fn = importlib.import_module("minigrad.linalg.svd")._SVD
    else:
        lib, svd_lib = torch_lorentzian()
        svd_fn = svd_lib.linalg.svd_function
    A = lib.tensor(B / np.linalg.norm(B), requires_grad=True)
    H = lib.tensor(_heisenberg())

    def step() -> dict:
        acc: dict = defaultdict(float)
        A.grad = None
        with timed(svd_lib.linalg, "svd", "SVD forward", acc), \
                timed(svd_fn, "backward", "SVD backward", acc), collections_timed(acc):
            t0 = time.thread_time()
            if name == "minigrad":
                with mg.linalg.tie_policy("zero"):
                    energy = ipeps_energy(svd_lib, A, H)
            else:
                energy = ipeps_energy(svd_lib, A, H)
            t1 = time.thread_time()
            energy.backward()
            t2 = time.thread_time()
        acc["rest of forward"] = t1 - t0 - acc["SVD forward"]
        acc["rest of backward"] = t2 - t1 - acc["SVD backward"]
        acc["whole step"] = t2 - t0
        return acc
    return step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    repeats = 5 if ap.parse_args().quick else 30
    if torch is None:
        raise SystemExit("torch is not installed: nothing to compare with")
    steps = {name: setup(name) for name in ("minigrad", "torch")}
    for step in steps.values():  # warm up (and compile)
        for _ in range(3):
            step()
    seen: dict = {name: defaultdict(list) for name in steps}
    for _ in range(repeats):
        for name, step in steps.items():
            for key, t in step().items():
                seen[name][key].append(t)
    print(f"ipeps step (bench_programs.py), median ms of {repeats} interleaved repeats, one "
          "thread each; the pieces' medians need not add up to the whole's")
    print(f"{'piece':<18}{'minigrad':>9}{'torch':>9}{'ratio':>7}")
    for key in PIECES:
        m, t = (statistics.median(seen[n][key] or [0.0]) * 1e3 for n in steps)
        ratio = f"{m / t:.2f}" if t else "-"
        print(f"{key:<18}{m:>9.2f}{t:>9.2f}{ratio:>7}")


if __name__ == "__main__":
    main()
