"""The ops a ported training step is made of, minigrad against torch in one run: forward,
and forward + backward, on (64, 128, 64) float32 (activations, softmax family, reductions,
layout), (256, 100, 3) clouds and (512, 512) logits; issue 29's survey of where a porter
feels numpy's slow loops.

    python benchmarks/bench_ops.py [--quick] [--ops relu,gelu,...] [--threads 1 default]

Rows over ``FLAG`` (minigrad / torch, forward + backward) are marked: the places to look
next, not a target each (issue 29's targets are the programs and the reductions). Each
library in a process of its own (benchmarks/_interleave.Side: in one they share malloc's
state); medians of interleaved repeats, one thread each unless asked.
"""

from __future__ import annotations

import argparse

# isort: off
from _interleave import add_arguments, delegated, interleaved_sides, sides  # first:
from _interleave import threads_label, torch
import numpy as np  # BLAS threads are set at numpy's import
# isort: on

FLAG = 2.0
_RNG = np.random.default_rng(0)
ACTS = _RNG.standard_normal((64, 128, 64)).astype(np.float32)
CLOUDS = _RNG.standard_normal((256, 100, 3)).astype(np.float32)
LOGITS = _RNG.standard_normal((512, 512)).astype(np.float32)
ROWS = _RNG.integers(0, 512, 2000)
TARGETS = _RNG.integers(0, 512, 512)

# name: (input, f(lib, x)); lib is minigrad or torch, x a Tensor of that library
OPS = {
    "relu": (ACTS, lambda L, x: L.relu(x)),
    "sigmoid": (ACTS, lambda L, x: x.sigmoid()),
    "tanh": (ACTS, lambda L, x: x.tanh()),
    "gelu": (ACTS, lambda L, x: L.nn.functional.gelu(x)),
    "leaky_relu": (ACTS, lambda L, x: L.nn.functional.leaky_relu(x, 0.1)),
    "where": (ACTS, lambda L, x: L.where(x > 0, x, x * 0.1)),
    "abs_clamp": (ACTS, lambda L, x: x.abs().clamp(min=0.1)),
    "softmax": (ACTS, lambda L, x: x.softmax(-1)),
    "log_softmax": (ACTS, lambda L, x: x.log_softmax(-1)),
    "logsumexp": (ACTS, lambda L, x: x.logsumexp(-1)),
    "layer_norm": (ACTS, lambda L, x: L.nn.functional.layer_norm(x, (64,))),
    "cumsum": (ACTS, lambda L, x: x.cumsum(1)),
    "max_dim": (ACTS, lambda L, x: x.max(1)[0]),
    "std": (ACTS, lambda L, x: x.std(1)),
    "permute": (ACTS, lambda L, x: x.permute(0, 2, 1).reshape(64, -1)),
    "cat": (ACTS, lambda L, x: L.cat([x, x], 1)),
    "centre": (CLOUDS, lambda L, x: x - x.mean(1, keepdim=True)),
    "index_rows": (LOGITS, lambda L, x: x[L.tensor(ROWS)]),
    "cross_entropy": (LOGITS, lambda L, x: L.nn.functional.cross_entropy(
        x, L.tensor(TARGETS))),
}


def _steps(lib, make, a: np.ndarray):
    x = lib.tensor(a, requires_grad=True)
    y = make(lib, x)
    g = lib.tensor(np.random.default_rng(1).standard_normal(tuple(y.shape)).astype(a.dtype))

    def forward():
        return make(lib, x)

    def both():
        x.grad = None
        make(lib, x).backward(g)
    return forward, both


def _step_of(lib, key: str):
    """A side's step ``key``: "op,f" (the forward) or "op,b" (forward and backward)."""
    name, part = key.split(",")
    a, make = OPS[name]
    forward, both = _steps(lib, make, a)
    return forward if part == "f" else both


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    ap.add_argument("--ops", default=",".join(OPS))
    add_arguments(ap)
    args = ap.parse_args()
    if delegated(args, __file__, _step_of):
        return
    if torch is None:
        raise SystemExit("torch is not installed: no ratio to report")
    repeats = 3 if args.quick else 7
    print(f"median of {repeats} interleaved repeats, {threads_label()}, each library in its "
          f"own process; ratio = minigrad / torch, flagged over {FLAG} (forward + backward)")
    print(f"{'op':<15}{'fwd mg us':>11}{'torch':>9}{'ratio':>7}{'f+b mg us':>12}{'torch':>9}"
          f"{'ratio':>7}{'spread':>8}")
    flagged = []
    with sides(__file__) as contenders:
        for name in args.ops.split(","):
            f, spread_f = interleaved_sides(contenders, f"{name},f", repeats)
            b, spread_b = interleaved_sides(contenders, f"{name},b", repeats)
            ratio = b["minigrad"] / b["torch"]
            if ratio > FLAG:
                flagged.append(name)
            print(f"{name:<15}{f['minigrad']:>11.1f}{f['torch']:>9.1f}"
                  f"{f['minigrad'] / f['torch']:>7.2f}{b['minigrad']:>12.1f}{b['torch']:>9.1f}"
                  f"{ratio:>7.2f}{max(spread_f, spread_b):>8.2f}"
                  f"{'  FLAG' if ratio > FLAG else ''}", flush=True)
    print(f"{len(flagged)} op(s) over {FLAG}: {', '.join(flagged) or 'none'}")


if __name__ == "__main__":
    main()
