"""Where robust PCA's time goes, minigrad against torch (issue 29: profile first).

    python benchmarks/bench_rpca_pieces.py [--quick]

bench_programs.py's ``rpca`` (100 ADMM iterations on 60x40, float64) split into its 100
SVD calls (on the very matrices the iteration passes them), the rest of the iteration
(the SVDs' results handed in, the ~20 small ops left), and, for minigrad, the Jacobi
sweeps alone (the kernel, without the driver's scaling, finish and Tensor layer). Thread
time of one thread each, medians of interleaved repeats, per iteration.
"""

from __future__ import annotations

import argparse

# isort: off
from _interleave import interleaved, mg, torch  # first: BLAS threads are set at numpy's import
import numpy as np
import bench_programs as programs
# isort: on


def _svd_inputs() -> tuple[np.ndarray, list[np.ndarray]]:
    """rpca's M and the matrix each of its iterations hands the SVD (minigrad's run)."""
    rng = np.random.default_rng(1)  # bench_programs._rpca_step's M
    low = rng.standard_normal((60, 5)) @ rng.standard_normal((5, 40))
    m = low + np.where(rng.random((60, 40)) < 0.05, 10 * rng.standard_normal((60, 40)), 0)
    seen: list[np.ndarray] = []
    svt = programs._svt

    def recording(lib, X, tau):
        seen.append(X.numpy().copy())
        return svt(lib, X, tau)

    programs._svt = recording
    try:
        programs.rpca(mg, mg.tensor(m))
    finally:
        programs._svt = svt
    return m, seen


def _rest(lib, m: np.ndarray, results: list) -> None:
    """rpca with each SVD's result handed in: the iteration's other ops alone."""
    it = iter(results)
    svt = programs._svt

    def given(lib_, X, tau):
        U, s, Vh = next(it)
        return U @ lib_.diag(programs._shrink(lib_, s, tau)) @ Vh

    programs._svt = given
    try:
        programs.rpca(lib, lib.tensor(m))
    finally:
        programs._svt = svt


def _sweeps(inputs: list[np.ndarray]):
    """The sweeps kernel alone on each input, scaled and laid out as the driver does."""
    from minigrad._kernel_registry import kernels
    from minigrad.linalg._svd_checks import _tolerances

    jac = kernels("jacobi")
    tol = _tolerances(None, 60, 60, np.float64)
    rows = [np.ascontiguousarray(a.T / 2.0 ** np.frexp(np.abs(a).max())[1]) for a in inputs]

    def run() -> None:
        for x in rows:
            X, k = x[None].copy(), x.shape[0]
            jac.sweeps(X, np.eye(k)[None], np.empty(k), np.empty(k), np.empty(k), tol,
                       np.zeros(1, np.int8))
    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    repeats = 3 if ap.parse_args().quick else 9
    if torch is None:
        raise SystemExit("torch is not installed: no ratio to report")
    m, inputs = _svd_inputs()
    steps = {}
    for name, lib in (("minigrad", mg), ("torch", torch)):
        xs = [lib.tensor(a) for a in inputs]
        results = [lib.linalg.svd(x, full_matrices=False) for x in xs]
        steps[f"{name} program"] = programs._rpca_step(lib)
        steps[f"{name} SVD calls"] = (
            lambda lib=lib, xs=xs: [lib.linalg.svd(x, full_matrices=False) for x in xs])
        steps[f"{name} rest"] = lambda lib=lib, results=results: _rest(lib, m, results)
    steps["minigrad sweeps alone"] = _sweeps(inputs)
    res, spread = interleaved(steps, repeats, budget_us=100_000)
    n = len(inputs)
    print(f"per iteration (us), median of {repeats} interleaved repeats, one thread each; "
          f"spread {spread:.2f}")
    print(f"{'piece':<22}{'minigrad':>9}{'torch':>9}")
    for piece in ("program", "SVD calls", "rest"):
        a, b = res[f"minigrad {piece}"] / n, res[f"torch {piece}"] / n
        print(f"{piece:<22}{a:>9.1f}{b:>9.1f}  ratio {a / b:.2f}")
    print(f"{'of which sweeps':<22}{res['minigrad sweeps alone'] / n:>9.1f}")


if __name__ == "__main__":
    main()
