"""Ground state of a quantum Ising chain by gradient descent on a complex MPS, SVDs in the loop.

The chain of L spins 1/2 with open ends, H = -sum_i Z_i Z_(i+1) - g sum_i (cos(phi) X_i +
sin(phi) Y_i), has its transverse field tilted into the X-Y plane, so H is complex and so are
its ground state's amplitudes. A matrix product state of bond dimension ``chi`` (complex site
tensors A_i[left, spin, right]) is trained by Adam on the Rayleigh quotient
E = <psi|H|psi> / <psi|psi>. Every step first brings the MPS to left-canonical form, one
complex SVD a site, so the gradient flows back through L - 1 complex SVDs (and the norm
<psi|psi> is then just that of the last tensor). <psi|H|psi> is contracted site by site with
the Hamiltonian's matrix product operator. Printed beside the exact ground-state energy from
numpy.linalg.eigvalsh of the 2^L x 2^L Hamiltonian.

    python examples/mps_ground_state.py [--fast] [--plot-dir DIR] [--sites 10] [--chi 6]
"""

from __future__ import annotations

import math
import time

import numpy as np
from _common import parser, save_loss_curve

import minigrad as mg

X = np.array([[0, 1], [1, 0]], dtype=complex)
Y = np.array([[0, -1j], [1j, 0]])
Z = np.array([[1, 0], [0, -1]], dtype=complex)
ONE = np.eye(2, dtype=complex)


def field(g: float, phi: float) -> np.ndarray:
    return g * (math.cos(phi) * X + math.sin(phi) * Y)


def dense_hamiltonian(L: int, g: float, phi: float) -> np.ndarray:
    """H as a 2^L x 2^L matrix, built term by term from Kronecker products (spin 0 first)."""
    def site_op(op: np.ndarray, i: int) -> np.ndarray:
        out = np.ones((1, 1), dtype=complex)
        for j in range(L):
            out = np.kron(out, op if j == i else ONE)
        return out
    H = -sum(site_op(field(g, phi), i) for i in range(L))
    H = H - sum(site_op(Z, i) @ site_op(Z, i + 1) for i in range(L - 1))
    return H


def exact_energy(L: int, g: float, phi: float) -> float:
    """The lowest eigenvalue of the dense H (exact diagonalisation)."""
    return float(np.linalg.eigvalsh(dense_hamiltonian(L, g, phi))[0])


def mpo(L: int, g: float, phi: float) -> list[mg.Tensor]:
    """H as W_1 ... W_L, W[a, b, s, t] with a 3-dim bond: state 2 is "nothing placed yet",
    1 "a Z just placed, its partner due", 0 "every term done"."""
    W = np.zeros((3, 3, 2, 2), dtype=complex)
    W[0, 0] = W[2, 2] = ONE
    W[1, 0] = Z
    W[2, 1] = -Z
    W[2, 0] = -field(g, phi)
    ends = [W[2:3]] + [W] * (L - 2) + [W[:, 0:1]]  # start in state 2, end in state 0
    return [mg.tensor(w) for w in ends]


def random_mps(L: int, chi: int, seed: int) -> list[mg.Tensor]:
    """Complex site tensors, bonds min(chi, 2^i, 2^(L-i)): no bond larger than its rank."""
    gen = mg.Generator().manual_seed(seed)
    bonds = [min(chi, 2 ** i, 2 ** (L - i)) for i in range(L + 1)]
    return [mg.randn(bonds[i], 2, bonds[i + 1], dtype=mg.complex128, generator=gen)
            .requires_grad_() for i in range(L)]


def left_canonical(As: list[mg.Tensor]) -> list[mg.Tensor]:
    """The same state with every tensor but the last an isometry (sum_as A* A = 1), by SVDs
    swept left to right: A_i = U S Vh keeps U and hands S Vh on to A_(i+1). Then
    <psi|psi> is |A_L|^2. The phases of U's columns are arbitrary, but Vh carries the
    opposite ones on, so the state, and E, never see them (the backward checks that)."""
    out, carry = [], None
    for A in As:
        if carry is not None:
            A = mg.einsum("ab,bsc->asc", carry, A)
        if len(out) == len(As) - 1:
            return out + [A]
        Dl, d, Dr = A.shape
        U, S, Vh = mg.linalg.svd(A.reshape(Dl * d, Dr), full_matrices=False)
        out.append(U.reshape(Dl, d, -1))
        carry = S.unsqueeze(-1) * Vh
    return out


def expectation(As: list[mg.Tensor], Ws: list[mg.Tensor]) -> mg.Tensor:
    """<psi|H|psi>, contracting bra, MPO and ket one site at a time (cost L chi^3, not 2^L)."""
    env = mg.ones(1, 1, 1, dtype=mg.complex128)  # [bra bond, MPO bond, ket bond]
    for A, W in zip(As, Ws):
        env = mg.einsum("awb,btd->awtd", env, A)
        env = mg.einsum("awtd,wvst->avsd", env, W)
        env = mg.einsum("avsd,asc->cvd", env, A.conj())
    return env.reshape(()).real


def energy(As: list[mg.Tensor], Ws: list[mg.Tensor]) -> mg.Tensor:
    """E = <psi|H|psi> / <psi|psi> through the left-canonical form."""
    Cs = left_canonical(As)
    return expectation(Cs, Ws) / (Cs[-1].abs() ** 2).sum()


def energy_direct(As: list[mg.Tensor], Ws: list[mg.Tensor]) -> mg.Tensor:
    """The same E with no SVD: the norm contracted like H, with identities for the MPO."""
    ones = [mg.tensor(np.eye(2, dtype=complex).reshape(1, 1, 2, 2)) for _ in As]
    return expectation(As, Ws) / expectation(As, ones)


def main(fast: bool = False, plot_dir: str | None = None, sites: int | None = None,
         chi: int | None = None, g: float = 1.0, phi: float = 0.7, seed: int = 0) -> dict:
    L = sites or (8 if fast else 10)
    chi = chi or (4 if fast else 6)
    steps = 300 if fast else 1500
    Ws, e0 = mpo(L, g, phi), exact_energy(L, g, phi)
    As = random_mps(L, chi, seed)
    opt = mg.optim.Adam(As, lr=0.05)
    print(f"MPS ground state: L = {L} sites, chi = {chi}, g = {g}, phi = {phi}, {steps} Adam "
          f"steps through {L - 1} complex SVDs each; exact E0 = {e0:.10f}")
    losses, t0 = [], time.perf_counter()
    for step in range(steps):
        opt.zero_grad()
        E = energy(As, Ws)
        E.backward()
        opt.step()
        losses.append(E.item() - e0)
        if step % (steps // 10) == 0 or step == steps - 1:
            print(f"  step {step:5d}  E = {E.item():.10f}  (E - E0) / |E0| = "
                  f"{(E.item() - e0) / abs(e0):.2e}")
    with mg.no_grad():
        e = energy(As, Ws).item()
    rel = (e - e0) / abs(e0)
    png = save_loss_curve([max(x, 1e-16) for x in losses], plot_dir, "mps_ground_state",
                          "E - E0")
    print(f"mps_ground_state: E = {e:.10f}, exact {e0:.10f}, relative error {rel:.2e}, in "
          f"{time.perf_counter() - t0:.1f} s" + (f"; plot {png}" if png else ""))
    return {"E": e, "E0": e0, "rel": rel, "L": L, "chi": chi}


if __name__ == "__main__":
    ap = parser(__doc__)
    ap.add_argument("--sites", type=int, help="chain length L (default 10; 8 with --fast)")
    ap.add_argument("--chi", type=int, help="bond dimension (default 6; 4 with --fast)")
    ap.add_argument("--g", type=float, default=1.0, help="field strength (1: critical)")
    ap.add_argument("--phi", type=float, default=0.7, help="field angle from X towards Y")
    main(**vars(ap.parse_args()))
