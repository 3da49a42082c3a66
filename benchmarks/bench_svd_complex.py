"""The complex SVD and Hermitian eigh forwards (minigrad/linalg/_complex_forward.py) against
numpy's and torch's, one thread each, medians of interleaved repeats.

    python benchmarks/bench_svd_complex.py [--quick]

Ratios are minigrad's time over each contender's (below 1 means minigrad is faster). No
targets: the complex kernels are the real general kernels compiled for complex128 (no lanes
for tiny matrices; one large matrix's SVD starts from its Gram's eigenvectors and its eigh
from LAPACK's, as the real ones), and this table says where they stand.
"""

from __future__ import annotations

import argparse

# isort: off
from _interleave import interleaved, torch  # first: BLAS threads are set at numpy's import
import numpy as np
from minigrad.linalg._complex_forward import complex_svd_forward, hermitian_eigh_forward
# isort: on

CASES = [("100000 x 3x3", (100_000, 3, 3)), ("10000 x 8x8", (10_000, 8, 8)),
         ("256x256", (256, 256))]


def _steps(op: str, a: np.ndarray) -> dict:
    if op == "svd":
        steps = {"minigrad": lambda: complex_svd_forward(a, False),
                 "numpy": lambda: np.linalg.svd(a, full_matrices=False)}
        if torch is not None:
            t = torch.from_numpy(a)
            steps["torch"] = lambda: torch.linalg.svd(t, full_matrices=False)
    else:
        steps = {"minigrad": lambda: hermitian_eigh_forward(a),
                 "numpy": lambda: np.linalg.eigh(a)}
        if torch is not None:
            t = torch.from_numpy(a)
            steps["torch"] = lambda: torch.linalg.eigh(t)
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 repeats instead of 7")
    repeats = 3 if parser.parse_args().quick else 7
    print(f"numpy {np.__version__}, torch {torch.__version__ if torch else '-'}; one thread "
          f"each; median of {repeats} interleaved repeats")
    print(f"{'op':5} {'case':14} {'dtype':10} {'minigrad ms':>11} {'numpy ms':>9} "
          f"{'torch ms':>9} {'mg/np':>6} {'mg/torch':>8}")
    rng = np.random.default_rng(0)
    for op in ("svd", "eigh"):
        for label, shape in CASES:
            for dtype in (np.complex64, np.complex128):
                a = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
                if op == "eigh":
                    a = a + np.conj(np.swapaxes(a, -1, -2))
                med, _ = interleaved(_steps(op, a), repeats, budget_us=200_000)
                mg_ms, np_ms = med["minigrad"] / 1e3, med["numpy"] / 1e3
                t_ms = med.get("torch", float("nan")) / 1e3
                print(f"{op:5} {label:14} {np.dtype(dtype).name:10} {mg_ms:11.2f} "
                      f"{np_ms:9.2f} {t_ms:9.2f} {mg_ms / np_ms:6.2f} {mg_ms / t_ms:8.2f}",
                      flush=True)


if __name__ == "__main__":
    main()
