"""Reductions over every axis, minigrad against torch in one run, one thread each (or each
library's default threads: ``--threads default``, wall-clock, as issue 29 asks for both).

    python benchmarks/bench_reduce.py [--quick] [--threads 1 default]

``sum``, ``mean``, ``var``, ``std``, ``norm`` and ``amax`` (forward), on (256, 100, 3),
(64, 3, 1000) and (1000, 1000), float32 and float64, over each single dim and over all of
them; then ``x - x.mean(dim, keepdim=True)`` forward + backward, whose backward sums the
gradient back over the broadcast dim in the engine. Target (issue 29): minigrad / torch
<= 1.5 on every row. Each library in a process of its own (benchmarks/_interleave.Side: in
one they share malloc's state), their turns interleaved; medians of the repeats; the spread
column is the largest max/min over one row's repeats, the noise.
"""

from __future__ import annotations

import argparse
import zlib

# isort: off
from _interleave import add_arguments, delegated, interleaved_sides, sides  # first:
from _interleave import threads_label, torch
import numpy as np  # BLAS threads are set at numpy's import
# isort: on

TARGET = 1.5
SHAPES = ((256, 100, 3), (64, 3, 1000), (1000, 1000))
OPS = ("sum", "mean", "var", "std", "norm", "amax")


def _reduce_step(name: str, x, dim):
    if name == "norm":
        return lambda: x.norm(dim=dim)
    if dim is None:
        return getattr(x, name)
    return lambda: getattr(x, name)(dim)


def _centre_step(lib, x, g, dim):
    def step():
        x.grad = None
        (x - x.mean(dim, keepdim=True)).backward(g)
    return step


def _step_of(lib, key: str):
    """A side's step ``key``: "op,dtype,shape index,dim" (dim "None": all of them); the data
    from a seed of the dtype and shape, so that both sides reduce the same numbers."""
    op, dtype, index, dim_text = key.split(",")
    shape = SHAPES[int(index)]
    a = np.random.default_rng(zlib.crc32(f"{dtype}{shape}".encode())).standard_normal(
        shape).astype(dtype)
    dim = None if dim_text == "None" else int(dim_text)
    if op == "centre":
        return _centre_step(lib, lib.tensor(a, requires_grad=True), lib.tensor(a), dim)
    return _reduce_step(op, lib.tensor(a), dim)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    ap.add_argument("--ops", default=",".join(OPS + ("centre",)))
    add_arguments(ap)
    args = ap.parse_args()
    if delegated(args, __file__, _step_of):
        return
    if torch is None:
        raise SystemExit("torch is not installed: no ratio to report")
    repeats = 3 if args.quick else 7
    print(f"median of {repeats} interleaved repeats, {threads_label()}, each library in its "
          f"own process; ratio = minigrad / torch, target <= {TARGET}")
    print(f"{'op':<7}{'dtype':<9}{'shape':<16}{'dim':<6}{'mg us':>9}{'torch us':>10}"
          f"{'ratio':>7}{'spread':>8}")
    worst, misses = 0.0, 0
    with sides(__file__) as contenders:
        for op in args.ops.split(","):
            for dtype in ("float32", "float64"):
                for index, shape in enumerate(SHAPES):
                    dims = list(range(len(shape))) + ([None] if op != "centre" else [])
                    for dim in dims:
                        res, spread = interleaved_sides(contenders,
                                                        f"{op},{dtype},{index},{dim}", repeats)
                        ratio = res["minigrad"] / res["torch"]
                        worst, misses = max(worst, ratio), misses + (ratio > TARGET)
                        print(f"{op:<7}{dtype:<9}{str(shape):<16}{str(dim):<6}"
                              f"{res['minigrad']:>9.1f}{res['torch']:>10.1f}{ratio:>7.2f}"
                              f"{spread:>8.2f}{'  MISS' if ratio > TARGET else ''}",
                              flush=True)
    print(f"worst ratio {worst:.2f}; {misses} row(s) over {TARGET}")


if __name__ == "__main__":
    main()
