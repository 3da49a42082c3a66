"""Energy and specific heat of the 2-D Ising model by autodiff through the SVDs of CTMRG.

The corner transfer matrix renormalisation group describes the infinite lattice around one
site by a corner C[x, y] and an edge T[x, s, y] (x, y of dimension at most ``chi``, s the
lattice bond), the same on all four sides (the Ising tensor is symmetric under the square's
rotations and reflections). Each iteration grows the corner by two edges and a site into M,
a symmetric (chi 2) x (chi 2) matrix, takes its SVD and keeps the left singular vectors of
the ``chi`` largest singular values (none below 1e-12 of the largest) as the projector P;
then C <- P^T M P and T <- P^T (T joined to a site) P. After ``iters`` iterations
ln Z / N = ln(Z1 Z3 / Z2^2), from the environments of one site, of one bond and of none.
E and C come from differentiating that whole computation once and twice in beta, as with
examples/ising_trg.py; printed beside Onsager's exact values.

    python examples/ctmrg.py [--fast] [--chi 24] [--iters 60] [--ties exact|zero|lorentzian]
"""

from __future__ import annotations

import time

import numpy as np
from _common import TIES, parser, tie_context
from ising_trg import T_CRITICAL, onsager, site_tensor, thermodynamics

import minigrad as mg


def enlarged_corner(C: mg.Tensor, T: mg.Tensor, a: mg.Tensor) -> mg.Tensor:
    """M[(p, j), (q, i)] = C[x, y] T[x, t, p] T[y, s, q] a[t, s, i, j]: the corner, the edges
    below (x -> p) and right of it (y -> q), and the site they both touch."""
    M = mg.einsum("xy,xtp,ysq,tsij->pjqi", C, T, T, a)
    k = M.shape[0] * M.shape[1]
    M = M.reshape(k, k)
    return (M + M.mT) / 2  # symmetric up to rounding: make it exactly so


def projector(M: mg.Tensor, chi: int, rel_cut: float) -> mg.Tensor:
    """The left singular vectors of M's ``chi`` largest singular values above rel_cut s_0."""
    U, S, _ = mg.linalg.svd(M, full_matrices=False)
    s = S.detach().numpy()
    keep = int(min(chi, np.count_nonzero(s > rel_cut * s[0])))
    return U[:, :keep]


def ctmrg_step(C: mg.Tensor, T: mg.Tensor, a: mg.Tensor, chi: int,
               rel_cut: float) -> tuple[mg.Tensor, mg.Tensor]:
    """One iteration: the corner and the edge of a lattice grown by one site on each side."""
    M = enlarged_corner(C, T, a)
    P = projector(M, chi, rel_cut)
    C = P.mT @ M @ P
    d, k = a.shape[0], T.shape[0]
    E = mg.einsum("xty,tuvw->xuvyw", T, a).reshape(k * d, d, k * d)  # [(x, u), r, (y, d)]
    T = mg.einsum("ma,msn,nb->asb", P, E, P)
    return C / C.norm(), T / T.norm()  # ln Z / N below is blind to these scales


def ln_z(beta: mg.Tensor, chi: int = 24, iters: int = 60, rel_cut: float = 1e-12) -> mg.Tensor:
    """ln Z / N of the infinite lattice, from open boundaries grown ``iters`` times."""
    a = site_tensor(beta)  # a[l, u, r, d]
    T, C = a.sum(0), a.sum((0, 1))  # free boundary spins: T[u, r, d], C[r, d]
    for _ in range(iters):
        C, T = ctmrg_step(C, T, a, chi, rel_cut)
    row = mg.einsum("xa,asb,by->xsy", C, T, C)  # a corner, an edge, a corner: one side
    z1 = mg.einsum("xsy,xlp,lsrd,yrq,pdq->", row, T, a, T, row)  # around a site
    z2 = (row * row).sum()  # two sides face to face: around a bond
    C2 = C @ C
    z3 = (C2 * C2.mT).sum()  # tr C^4: four corners
    return z1.log() + z3.log() - 2 * z2.log()


def energy_and_heat(temperature: float, chi: int = 24, iters: int = 60) -> tuple[float, ...]:
    """(ln Z / N, E / N, C / N) at ``temperature``, by first and second derivatives in beta."""
    return thermodynamics(lambda beta: ln_z(beta, chi, iters), temperature)


def main(fast: bool = False, chi: int | None = None, iters: int | None = None,
         ties: str = "exact") -> dict:
    temps = [1.8, 2.6] if fast else [1.8, 2.0, 2.5, 3.0]
    chi = chi or (8 if fast else 24)
    iters = iters or (40 if fast else 60)
    rows, t0 = [], time.perf_counter()
    print(f"CTMRG, chi {chi}, {iters} iterations, tie policy {ties!r}; E and C by autodiff")
    print("   T      E (CTMRG)    E (exact)    C (CTMRG)    C (exact)")
    with tie_context(ties):
        for T in temps:
            _, e, c = energy_and_heat(T, chi, iters)
            e0, c0 = onsager(T)
            rows.append((T, e, e0, c, c0))
            print(f"  {T:.3f}  {e:11.8f}  {e0:11.8f}  {c:11.8f}  {c0:11.8f}")
    err_e = max(abs(r[1] - r[2]) for r in rows)
    err_c = max(abs(r[3] - r[4]) for r in rows)
    print(f"ctmrg: max |E - E_exact| {err_e:.2e}, max |C - C_exact| {err_c:.2e} "
          f"(T_c = {T_CRITICAL:.4f}), in {time.perf_counter() - t0:.1f} s")
    return {"rows": rows, "err_e": err_e, "err_c": err_c}


if __name__ == "__main__":
    ap = parser(__doc__, training=False)
    ap.add_argument("--chi", type=int, help="kept dimension (default 24; 8 with --fast)")
    ap.add_argument("--iters", type=int, help="iterations (default 60; 40 with --fast)")
    ap.add_argument("--ties", choices=TIES, default="exact", help="the SVD tie policy")
    main(**vars(ap.parse_args()))
