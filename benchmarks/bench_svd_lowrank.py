"""The truncated SVD's cost, as ratios measured in one run (medians of interleaved repeats,
one thread each: run with OMP_NUM_THREADS=1 for numpy's BLAS).

1. The backward of ``linalg.svd(A, full_matrices=False, top_k=k)`` over the full SVD's
   backward for the same loss on the top k (the complement solve against the closed form
   with every triplet): target <= 2.
2. ``mg.svd_lowrank`` forward + backward over ``torch.svd_lowrank``'s (when torch is
   installed), and over minigrad's dense ``linalg.svd`` + backward, on a matrix whose
   spectrum decays past q (svd_lowrank's use). minigrad's refines the sketch to the exact
   top q and differentiates that; torch's stops after niter = 2 and differentiates its
   sketch, so the comparison is of cost, not of the same numbers.

Run: python benchmarks/bench_svd_lowrank.py [--repeats N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import minigrad as mg  # noqa: E402

try:
    import torch
except ImportError:  # the torch column is optional
    torch = None


def _matrix(m: int, n: int, decay: float | None, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if decay is None:
        return rng.standard_normal((m, n))
    k = min(m, n)
    u = np.linalg.qr(rng.standard_normal((m, k)))[0]
    v = np.linalg.qr(rng.standard_normal((n, k)))[0]
    return (u * decay ** np.arange(k)) @ v.T


def _loss(lib, U, S, Vh, W):
    """<W, U diag(S) Vh> + 1^T U U^T 1 (the projector's sum, without forming it)."""
    return (((U * S.unsqueeze(-2)) @ Vh) * W).sum() + (U.sum(-2) ** 2).sum()


def top_k_backward(m: int, n: int, k: int, repeats: int) -> tuple[float, float]:
    a = _matrix(m, n, None, m + n + k)
    W = mg.tensor(np.random.default_rng(1).standard_normal((m, n)))
    times: dict[str, list[float]] = {"top": [], "full": []}
    for _ in range(repeats):
        for name in times:
            A = mg.tensor(a, requires_grad=True)
            if name == "top":
                U, S, Vh = mg.linalg.svd(A, full_matrices=False, top_k=k)
            else:
                U, S, Vh = mg.linalg.svd(A, full_matrices=False)
                U, S, Vh = U[:, :k], S[:k], Vh[:k]
            loss = _loss(mg, U, S, Vh, W)
            t = time.perf_counter()
            loss.backward()
            times[name].append(time.perf_counter() - t)
    top, full = (statistics.median(times[n_]) for n_ in ("top", "full"))
    return top, top / full


def lowrank(m: int, n: int, q: int, repeats: int) -> dict[str, float]:
    a = _matrix(m, n, 0.7, 3)
    w = np.random.default_rng(2).standard_normal((m, n))

    def ours() -> None:
        A = mg.tensor(a, requires_grad=True)
        U, S, V = mg.svd_lowrank(A, q=q)
        _loss(mg, U, S, V.mT, mg.tensor(w)).backward()

    def dense() -> None:
        A = mg.tensor(a, requires_grad=True)
        U, S, Vh = mg.linalg.svd(A, full_matrices=False)
        _loss(mg, U[:, :q], S[:q], Vh[:q], mg.tensor(w)).backward()

    def theirs() -> None:
        A = torch.tensor(a, requires_grad=True)
        U, S, V = torch.svd_lowrank(A, q=q)
        _loss(torch, U, S, V.mT, torch.tensor(w)).backward()

    fns = {"minigrad": ours, "dense": dense}
    if torch is not None:
        fns["torch"] = theirs
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(ts) for name, ts in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    mg.set_num_threads(1)
    if torch is not None:
        torch.set_num_threads(1)
    print("top_k backward / full SVD backward (target <= 2)")
    for m, n, k in ((200, 150, 10), (400, 300, 10), (400, 300, 40), (1000, 600, 10)):
        t, ratio = top_k_backward(m, n, k, args.repeats)
        print(f"  {m}x{n}, k={k}: {t * 1e3:7.1f} ms, ratio {ratio:.2f}")
    print("svd_lowrank forward + backward (s_j = 0.7^j)")
    for m, n, q in ((2000, 1000, 10), (4000, 500, 6)):
        t = lowrank(m, n, q, args.repeats)
        row = f"  {m}x{n}, q={q}: minigrad {t['minigrad'] * 1e3:7.1f} ms, " \
              f"/ dense svd {t['minigrad'] / t['dense']:.2f}"
        if "torch" in t:
            row += f", / torch.svd_lowrank {t['minigrad'] / t['torch']:.2f}"
        print(row)


if __name__ == "__main__":
    main()
