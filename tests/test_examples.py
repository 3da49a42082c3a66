"""Every example runs in its fast mode and reaches its figure of merit, so none can rot."""

from __future__ import annotations

import importlib
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import minigrad as mg

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load(name: str):
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    return importlib.import_module(name)


def test_complement_residual_and_gradients_through_full_and_reduced_u(capsys) -> None:
    out = load("complement").main(fast=True)
    np.testing.assert_allclose(out["residual_full"], [1 / 6, -1 / 3, 1 / 6], atol=1e-12)
    np.testing.assert_allclose(out["residual_reduced"], [1 / 6, -1 / 3, 1 / 6], atol=1e-12)
    expected = [[4 / 9, -13 / 36], [-8 / 9, 13 / 18], [4 / 9, -13 / 36]]
    np.testing.assert_allclose(out["grad_full"], expected, atol=1e-12)
    np.testing.assert_allclose(out["grad_reduced"], out["grad_full"], atol=1e-12)
    assert np.abs(out["grad_full"]).max() > 0.3  # not PyTorch's zeros
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("complement:")


def test_spectral_norm_regression_keeps_the_lipschitz_bound(capsys) -> None:
    out = load("spectral_norm_regression").main(fast=True)
    assert out["held"]
    assert out["max_sigma"] == pytest.approx(1.0, abs=1e-5)
    assert out["max_grad_norm"] <= out["lipschitz"] * (1 + 1e-5)
    assert out["plain_grad_norm"] > out["lipschitz"]  # the bound is doing something
    assert out["test_mse"] < 0.6 * out["losses"][0]  # and it still learns
    assert "held at every check" in capsys.readouterr().out.strip().splitlines()[-1]


def test_low_rank_completion_recovers_rank_and_unseen_entries(capsys) -> None:
    out = load("low_rank_completion").main(fast=True)
    assert out["rank"] == 3
    assert out["error"] < 0.1
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("low_rank_completion:")


def test_procrustes_matches_the_closed_form_solution(capsys) -> None:
    out = load("procrustes").main(fast=True)
    assert out["max_angle_to_kabsch"] < 0.1  # degrees
    assert out["rms"] < 0.1  # the noise floor is 0.087
    np.testing.assert_allclose(out["dets"], 1.0, atol=1e-9)  # rotations, not reflections
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("procrustes:")


def test_dask_svd_energy_and_gradient_on_a_local_cluster(capsys) -> None:
    pytest.importorskip("distributed")
    out = load("dask_svd").main(fast=True, workers=2)
    assert out["E_dask"] == pytest.approx(out["E_one"], rel=1e-12)
    assert out["gap"] < 1e-12  # dE/dF = 2 (F - R), R from LAPACK
    assert out["rate_dask"] > 0 and out["rate_one"] > 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("dask_svd:")


def test_loss_curve_is_skipped_or_saved(tmp_path) -> None:
    common = load("_common")
    path = common.save_loss_curve([3.0, 2.0, 1.0], str(tmp_path), "curve")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert path is None
    else:
        assert path is not None and Path(path).exists()
    assert common.save_loss_curve([1.0], None, "curve") is None


def test_ising_trg_energy_and_specific_heat_track_onsager(capsys) -> None:
    out = load("ising_trg").main(fast=True)
    for T, e, e0, c, c0 in out["rows"]:
        assert abs(e - e0) < 2e-2  # bond dimension 6 on 2^8 sites: TRG's own error
        if abs(T - 2.269) > 0.5:  # away from the critical point C converges too
            assert abs(c - c0) < 5e-3
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("ising_trg:")


def test_onsager_ends_and_matches_the_elliptic_integrals() -> None:
    """The exact solution at every temperature the full runs take (its AGM once looped
    forever at T = 2.4714..., a and b one ulp apart), against K(k) and E(k) by
    Gauss-Legendre quadrature of their integrals (smooth away from k = 1, T_c)."""
    trg = load("ising_trg")
    x, w = np.polynomial.legendre.leggauss(200)
    theta = np.pi / 4 * (x + 1)
    temps = np.concatenate([np.linspace(1.5, 3.2, 8), np.linspace(1.8, 3.2, 8),
                            np.linspace(1.0, 4.0, 601)])
    ks = 2 * np.sinh(2 / temps) / np.cosh(2 / temps) ** 2
    done: list = []  # in a thread, so that a loop that never ends fails here, not hangs
    worker = threading.Thread(target=lambda: done.extend(
        trg._agm_elliptic(float(k)) for k in ks), daemon=True)
    worker.start()
    worker.join(60)
    assert len(done) == len(ks), f"the AGM did not end at T = {temps[len(done)]!r}"
    for T, k, (K, E) in zip(temps, ks, done):
        if abs(T - trg.T_CRITICAL) < 0.1:
            continue  # (ends there too; the quadrature does not converge at k ~ 1)
        root = np.sqrt(1 - k * k * np.sin(theta) ** 2)
        assert K == pytest.approx(np.pi / 4 * (w / root).sum(), rel=1e-13)
        assert E == pytest.approx(np.pi / 4 * (w * root).sum(), rel=1e-13)


def test_ctmrg_energy_and_specific_heat_match_onsager(capsys) -> None:
    # The default tie policy, which looks downstream at the corner's ties (2-3 s here).
    out = load("ctmrg").main(fast=True)
    assert [r[0] for r in out["rows"]] == [1.8, 2.6]  # both sides of T_c = 2.269
    for _, e, e0, c, c0 in out["rows"]:
        # chi 8, 40 iterations: converged to ~1e-7 in E, ~1e-5 in C (slowest at T = 2.6)
        assert abs(e - e0) < 1e-5
        assert abs(c - c0) < 1e-4
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("ctmrg:")


def _ctmrg_keeping_us(monkeypatch) -> tuple:
    """examples/ctmrg.py with its projector's SVDs' U kept, in order, in the list returned."""
    ctmrg = load("ctmrg")
    Us: list = []

    def projector(M, chi, rel_cut):
        U, S, _ = mg.linalg.svd(M, full_matrices=False)
        Us.append(U)
        s = S.detach().numpy()
        return U[:, :int(min(chi, np.count_nonzero(s > rel_cut * s[0])))]

    monkeypatch.setattr(ctmrg, "projector", projector)
    return ctmrg, Us


def test_a_second_recorded_pass_through_ctmrg_differentiates_as_the_first(monkeypatch) -> None:
    """Each create_graph pass through an SVD whose dropped triplets sit at poles leaves
    its own record for a later pass (``_tie_sources.Earlier``): a Hessian-vector product
    through the last of several passes is that of a lone pass. (When a node kept the
    first pass's alone, the same product was 6e-9 off at chi 8 and raised at chi 12.)"""
    ctmrg, Us = _ctmrg_keeping_us(monkeypatch)
    T = np.random.default_rng(0).standard_normal((24, 24))

    def hvp(before: list[int]) -> np.ndarray:
        Us.clear()
        f = ctmrg.ln_z(mg.tensor(1 / 1.8, dtype=mg.float64, requires_grad=True), 12, 30)
        for k in before:  # other passes through the same graph, first
            mg.autograd.grad(f, [Us[k]], create_graph=True, retain_graph=True)
        (G,) = mg.autograd.grad(f, [Us[24]], create_graph=True, retain_graph=True)
        (h,) = mg.autograd.grad((G * mg.tensor(T)).sum(), [Us[24]])
        return h.numpy()

    alone = hvp([])
    np.testing.assert_allclose(hvp([16, 20]), alone, rtol=0, atol=1e-12 * np.abs(alone).max())


def test_one_walk_through_two_recorded_passes_is_the_sum_of_each(monkeypatch) -> None:
    """A walk through the results of two create_graph passes through the same SVDs takes
    their dropped triplets' limits from both passes' formulas together (``Passes``): the
    Hessian-vector product of <G1, TA> + <G2, TB> is the sum of the two products alone.
    (Taking the general look there raised 'ill-conditioned' at chi 8, 7e-8 off at 12.)"""
    ctmrg, Us = _ctmrg_keeping_us(monkeypatch)
    rng = np.random.default_rng(1)
    TA, TB = rng.standard_normal((16, 16)), rng.standard_normal((16, 16))

    def hvp(which: str) -> np.ndarray:
        Us.clear()
        f = ctmrg.ln_z(mg.tensor(1 / 1.8, dtype=mg.float64, requires_grad=True), 8, 30)
        q = 0.0
        for name, T in (("a", TA), ("b", TB)):
            if name in which:
                (G,) = mg.autograd.grad(f, [Us[24]], create_graph=True, retain_graph=True)
                q = q + (G * mg.tensor(T)).sum()
        (h,) = mg.autograd.grad(q, [Us[24]])
        return h.numpy()

    both = hvp("a") + hvp("b")
    np.testing.assert_allclose(hvp("ab"), both, rtol=0, atol=1e-8 * np.abs(both).max())


def test_ising_trg_takes_bond_steps_and_tie_policy(capsys) -> None:
    trg = load("ising_trg")
    exact = trg.main(fast=True, bond=4, steps=6)
    zero = trg.main(fast=True, bond=4, steps=6, ties="zero")
    assert "bond dimension 4, 6 steps" in capsys.readouterr().out
    # C and E under both policies: the TRG loss is blind to how its ties split
    np.testing.assert_allclose(np.array(zero["rows"]), np.array(exact["rows"]), atol=1e-9)


def test_mps_ground_state_approaches_exact_diagonalisation(capsys) -> None:
    out = load("mps_ground_state").main(fast=True)
    assert (out["L"], out["chi"]) == (8, 4)
    # The Rayleigh quotient of any state lies above E0 (up to rounding): never below it.
    assert out["E"] >= out["E0"] - 1e-9 * abs(out["E0"])
    # 300 Adam steps reach 1.2e-4 to 1.9e-4 from seeds 0 to 4: a 5x margin over that.
    assert out["rel"] < 1e-3
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("mps_ground_state:")


def test_mps_energy_gradient_through_complex_svds() -> None:
    mps = load("mps_ground_state")
    Ws, As = mps.mpo(4, 1.0, 0.7), mps.random_mps(4, 2, seed=3)
    assert mg.autograd.gradcheck(lambda *a: mps.energy(list(a), Ws), tuple(As))
    # The canonical form leaves the state alone, so E and dE/dA are those of the plain
    # contraction with no SVD at all: the SVDs' backward must cancel out exactly.
    with_svd = mg.autograd.grad(mps.energy(As, Ws), As)
    without = mg.autograd.grad(mps.energy_direct(As, Ws), As)
    for a, b in zip(with_svd, without):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-12)
    # The MPO is the dense H that exact diagonalisation uses: same <psi|H|psi> / <psi|psi>.
    psi = As[0]
    for A in As[1:]:
        psi = mg.einsum("asb,btc->astc", psi, A).reshape(1, -1, A.shape[-1])
    v = psi.detach().numpy().ravel()
    e_dense = (v.conj() @ mps.dense_hamiltonian(4, 1.0, 0.7) @ v).real / (v.conj() @ v).real
    assert mps.energy(As, Ws).item() == pytest.approx(e_dense, rel=1e-12)


def test_mps_from_a_product_state_through_degenerate_schmidt_values() -> None:
    """A product state (each site tensor x_a phi_s y_b, dense) has one Schmidt value per cut
    and the rest 0, tied: every SVD of the canonical form meets read zero and repeated
    singular values, whose complex limits the default policy used to refuse. The gradient
    equals the plain contraction's, and Adam's steps from there lower the energy."""
    mps = load("mps_ground_state")
    L, chi = 6, 4
    Ws = mps.mpo(L, 1.0, 0.7)
    bonds = [min(chi, 2 ** i, 2 ** (L - i)) for i in range(L + 1)]
    rng = np.random.default_rng(4)

    def c(*shape):
        return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)

    xs = [c(b) for b in bonds]
    As = [mg.tensor(np.einsum("a,s,b->asb", xs[i], c(2), xs[i + 1]), requires_grad=True)
          for i in range(L)]
    with_svd = mg.autograd.grad(mps.energy(As, Ws), As)
    without = mg.autograd.grad(mps.energy_direct(As, Ws), As)
    for a, b in zip(with_svd, without):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=0,
                                   atol=1e-10 * np.abs(b.numpy()).max())
    opt = mg.optim.Adam(As, lr=0.05)
    energies = []
    for _ in range(5):
        opt.zero_grad()
        E = mps.energy(As, Ws)
        E.backward()
        opt.step()
        energies.append(E.item())
    assert energies[-1] < energies[0]
