"""A short tour of minigrad's SVD-powered training examples (what `make demo` runs).

Each example runs in its fast mode; run the scripts themselves for the full versions:
complement.py, spectral_norm_regression.py, low_rank_completion.py, procrustes.py,
ising_trg.py, mps_ground_state.py.
"""

from __future__ import annotations

import time

import _common  # noqa: F401  (puts the checkout on sys.path)
import complement
import ising_trg
import low_rank_completion
import mps_ground_state
import procrustes
import spectral_norm_regression

TOUR = [
    ("1. the orthogonal complement from the full U, and a gradient through it", complement),
    ("2. a Lipschitz-bounded MLP with exact spectral normalisation", spectral_norm_regression),
    ("3. matrix completion with a nuclear-norm penalty", low_rank_completion),
    ("4. learning 64 rotations through the batched 3x3 SVD", procrustes),
    ("5. the 2-D Ising model's energy and specific heat through TRG's SVDs", ising_trg),
    ("6. a quantum spin chain's ground state on a complex MPS, through complex SVDs",
     mps_ground_state),
]


def main() -> None:
    t0 = time.perf_counter()
    for title, example in TOUR:
        print(f"\n=== {title} ({example.__name__}.py) ===")
        example.main(fast=True)
    print(f"\ndemo finished in {time.perf_counter() - t0:.1f} s; run the scripts in examples/ "
          "for the full versions")


if __name__ == "__main__":
    main()
