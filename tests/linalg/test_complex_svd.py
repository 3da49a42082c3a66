"""The complex SVD and Hermitian eigh as Tensors (linalg/_complex_svd.py): gradients in
torch's convention against torch and complex central differences, the phase a loss may not
depend on, and what the tie policies do at repeated values."""

from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd import gradcheck, gradgradcheck
from minigrad.linalg import LinAlgError

SHAPES = [(4, 4), (5, 3), (3, 5), (2, 4, 3)]


def cmatrix(shape, seed: int = 0, dtype=np.complex128) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def svd_losses(lib, C):
    """Losses invariant under the phases of the singular vectors: |U|^4 weighted, the
    polar factor, the matrix itself, the projector on the top two, S alone."""
    def w(U):
        return lib.arange(1.0, U.shape[-2] + 1.0, dtype=U.real.dtype).unsqueeze(-1)

    def run(A):
        U, S, Vh = lib.linalg.svd(A, full_matrices=False)
        Cr = C[..., : U.shape[-2], : Vh.shape[-1]]
        Sc = S.to(U.dtype).unsqueeze(-2)
        return {
            "|U|^4": ((U.abs() ** 4) * w(U)).sum(),
            "polar": ((U @ Vh) * Cr).real.sum(),
            "U S Vh": (((U * Sc) @ Vh) * Cr).imag.sum(),
            "projector": ((U[..., :2] @ U[..., :2].mH)
                          * C[..., : U.shape[-2], : U.shape[-2]]).real.sum(),
            "S^3": (S ** 3).sum(),
        }
    return run


NAMES = ["|U|^4", "polar", "U S Vh", "projector", "S^3"]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", NAMES)
def test_svd_gradients_match_torch(shape, name):
    torch = pytest.importorskip("torch")
    A0, C0 = cmatrix(shape, 1), cmatrix(shape[:-2] + (5, 5), 2)
    A = mg.tensor(A0, requires_grad=True)
    (g,) = mg.autograd.grad(svd_losses(mg, mg.tensor(C0))(A)[name], A)
    At = torch.tensor(A0, requires_grad=True)
    (gt,) = torch.autograd.grad(svd_losses(torch, torch.tensor(C0))(At)[name], At)
    np.testing.assert_allclose(g.numpy(), gt.numpy(), rtol=0,
                               atol=1e-11 * np.abs(gt.numpy()).max())


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
@pytest.mark.parametrize("name", NAMES)
def test_svd_gradcheck_and_gradgradcheck(shape, name):
    C = mg.tensor(cmatrix((5, 5), 3))

    def loss(a):
        return svd_losses(mg, C)(a)[name]

    A = mg.tensor(cmatrix(shape, 4), requires_grad=True)
    assert gradcheck(loss, (A,))
    assert gradgradcheck(loss, (A,))


def test_complex64_gradients_to_float32_accuracy():
    torch = pytest.importorskip("torch")
    A0, C0 = cmatrix((6, 4), 5, np.complex64), cmatrix((6, 6), 6, np.complex64)
    A = mg.tensor(A0, requires_grad=True)
    (g,) = mg.autograd.grad(svd_losses(mg, mg.tensor(C0))(A)["polar"], A)
    assert g.dtype == mg.complex64
    At = torch.tensor(A0.astype(np.complex128), requires_grad=True)
    (gt,) = torch.autograd.grad(svd_losses(torch, torch.tensor(C0.astype(np.complex128)))(At)
                                ["polar"], At)
    np.testing.assert_allclose(g.numpy(), gt.numpy(), rtol=0,
                               atol=1e-4 * np.abs(gt.numpy()).max())


@pytest.mark.parametrize("read", ["U", "Vh"])
def test_a_loss_that_depends_on_the_phase_raises(read):
    """Re U[0, 0] changes with u_0 -> u_0 e^{i phi} (v_0 too), which leaves A alone: no
    gradient. The test is the real tie tests' rounding scale, not torch's 1e-2."""
    A = mg.tensor(cmatrix((4, 3), 7), requires_grad=True)
    U, S, Vh = mg.linalg.svd(A, full_matrices=False)
    loss = U[0, 0].real if read == "U" else Vh[1, 2].imag
    with pytest.raises(LinAlgError, match="phase"):
        loss.backward()


def test_svdvals_and_the_nuclear_norm():
    A0 = cmatrix((3, 5), 8)
    A = mg.tensor(A0, requires_grad=True)
    S = mg.linalg.svdvals(A)
    np.testing.assert_allclose(S.detach().numpy(), np.linalg.svd(A0, compute_uv=False),
                               rtol=1e-13)
    S.sum().backward()
    u, _, vh = np.linalg.svd(A0, full_matrices=False)
    np.testing.assert_allclose(A.grad.numpy(), u @ vh, atol=1e-13)  # d||A||_* = U V^H


def _unitary(n: int, seed: int) -> np.ndarray:
    q, _ = np.linalg.qr(cmatrix((n, n), seed))
    return q


def test_at_a_tie_a_loss_of_s_alone_is_exact_and_a_kink_takes_the_subgradient():
    """A = 2 Q (every singular value tied): the nuclear norm's gradient is U V^H = Q, and
    the spectral norm's (a kink there) the minimum-norm subgradient Q / n."""
    Q = _unitary(3, 9)
    A = mg.tensor(2 * Q, requires_grad=True)
    mg.linalg.svdvals(A).sum().backward()
    np.testing.assert_allclose(A.grad.numpy(), Q, atol=1e-12)
    A = mg.tensor(2 * Q, requires_grad=True)
    mg.linalg.svdvals(A)[0].backward()
    np.testing.assert_allclose(A.grad.numpy(), Q / 3, atol=1e-12)


def test_at_a_tie_the_policies():
    """At A = 2 Q every pair is tied, and a loss reading the vectors has 0/0 terms. The
    product U S Vh is read through a bond and takes its backward: its gradient is conj(C)
    exactly. The polar factor is not of a bond: a look downstream finds its limits (0, its
    + terms vanish identically), and "zero" takes them as 0 without looking: central
    differences agree with both."""
    Q = _unitary(3, 10)
    C = mg.tensor(cmatrix((3, 3), 11))

    def polar(a, ties=None):
        U, S, Vh = mg.linalg.svd(a, full_matrices=False, ties=ties)
        return ((U @ Vh) * C).real.sum()

    def product(a):
        U, S, Vh = mg.linalg.svd(a, full_matrices=False)
        return (((U * S.to(U.dtype).unsqueeze(-2)) @ Vh) * C).real.sum()

    A = mg.tensor(2 * Q, requires_grad=True)
    product(A).backward()
    np.testing.assert_allclose(A.grad.numpy(), C.numpy().conj(), rtol=0, atol=1e-12)
    h = 1e-6
    D = cmatrix((3, 3), 12)
    fd = (polar(mg.tensor(2 * Q + h * D)).item() - polar(mg.tensor(2 * Q - h * D)).item()) / (2 * h)
    for ties in (None, "zero"):
        A = mg.tensor(2 * Q, requires_grad=True)
        polar(A, ties).backward()
        assert float(np.real(np.vdot(A.grad.numpy(), D))) == pytest.approx(fd, rel=1e-6)


def eigh_losses(lib, C):
    def run(H):
        L, V = lib.linalg.eigh(H)
        w = lib.arange(1.0, V.shape[-1] + 1.0, dtype=L.dtype)
        return {"|V|^4": ((V.abs() ** 4) * w).sum(),
                "V L V^H": (((V * L.to(V.dtype).unsqueeze(-2)) @ V.mH) * C).real.sum(),
                "L^3": (L ** 3).sum()}
    return run


def hermitian(n: int, seed: int, batch=()) -> np.ndarray:
    a = cmatrix(batch + (n, n), seed)
    return a + np.swapaxes(a, -1, -2).conj()


@pytest.mark.parametrize("name", ["|V|^4", "V L V^H", "L^3"])
@pytest.mark.parametrize("batch", [(), (3,)])
def test_eigh_gradients_match_torch(name, batch):
    torch = pytest.importorskip("torch")
    H0, C0 = hermitian(4, 13, batch), cmatrix((4, 4), 14)
    H = mg.tensor(H0, requires_grad=True)
    (g,) = mg.autograd.grad(eigh_losses(mg, mg.tensor(C0))(H)[name], H)
    Ht = torch.tensor(H0, requires_grad=True)
    (gt,) = torch.autograd.grad(eigh_losses(torch, torch.tensor(C0))(Ht)[name], Ht)
    np.testing.assert_allclose(g.numpy(), gt.numpy(), rtol=0,
                               atol=1e-11 * np.abs(gt.numpy()).max())


@pytest.mark.parametrize("name", ["|V|^4", "V L V^H", "L^3"])
def test_eigh_gradcheck_on_hermitian_inputs(name):
    C = mg.tensor(cmatrix((4, 4), 15))

    def loss(x):  # a Hermitian matrix built from any x: the map eigh sees
        return eigh_losses(mg, C)(x + x.mH)[name]

    X = mg.tensor(cmatrix((4, 4), 16), requires_grad=True)
    assert gradcheck(loss, (X,))
    assert gradgradcheck(loss, (X,))


def test_eigh_phase_and_eigvalsh():
    H0 = hermitian(3, 17)
    H = mg.tensor(H0, requires_grad=True)
    L, V = mg.linalg.eigh(H)
    with pytest.raises(LinAlgError, match="phase"):
        V[0, 1].imag.backward()
    np.testing.assert_allclose(mg.linalg.eigvalsh(mg.tensor(H0)).numpy(),
                               np.linalg.eigvalsh(H0), rtol=1e-13)


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (4, 4)])
def test_a_read_zero_singular_value_takes_its_limit(shape):
    """|W U S Vh|^2 at a rank-3 A: the terms with 1 / s_4 are 0/0 with nonzero limits (they
    were taken as 0, silently wrong by O(1), then refused): a look downstream takes them, as
    for real input, and the gradient is the closed form 2 W^H W A, its derivatives the
    Hessian. "zero" still gives 0 there as asked, finite."""
    m, n = shape
    A0 = cmatrix((m, 3), 22) @ cmatrix((3, n), 23)
    W = mg.tensor(cmatrix((m, m), 24))

    def loss(a, ties=None):
        U, S, Vh = mg.linalg.svd(a, full_matrices=False, ties=ties)
        return ((W @ ((U * S.to(U.dtype).unsqueeze(-2)) @ Vh)).abs() ** 2).sum()

    A = mg.tensor(A0, requires_grad=True)
    loss(A).backward()
    w = W.numpy()
    ref = 2 * w.conj().T @ w @ A0
    np.testing.assert_allclose(A.grad.numpy(), ref, rtol=0, atol=1e-12 * np.abs(ref).max())
    assert gradgradcheck(loss, (A,), eps=1e-4, fast_mode=True)  # (splits s_4 = 0 by ~1e-4)
    A = mg.tensor(A0, requires_grad=True)
    loss(A, "zero").backward()
    assert np.isfinite(A.grad.numpy()).all()


def test_lorentzian_broadens_the_complement_terms_as_for_real_input():
    """A real matrix with s_4 = 1e-9 as complex: the Lorentzian policy gives the real
    input's gradient (it broadened the poles but took R / s_4 plain: 1e6x larger), to the
    conditioning at s_4 (eps / 1e-9 of two different roundings: ~1e-6 measured)."""
    rng = np.random.default_rng(25)
    q1, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    q2, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    A0 = q1[:, :4] @ np.diag([3.0, 2.0, 1.0, 1e-9]) @ q2.T
    W = rng.standard_normal((6, 6))
    policy = mg.linalg.TiePolicy("lorentzian", eps=1e-12)

    def grad(a0):
        A = mg.tensor(a0, requires_grad=True)
        U, S, Vh = mg.linalg.svd(A, full_matrices=False, ties=policy)
        ((mg.tensor(W).to(U.dtype) @ (U @ U.mH)).real.sum() ** 2).backward()
        return A.grad.numpy()

    real = grad(A0)
    np.testing.assert_allclose(grad(A0.astype(np.complex128)).real, real, rtol=0,
                               atol=1e-4 * np.abs(real).max())


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 5, 3)])
def test_a_full_factors_complement_read_through_its_projector(shape):
    """full_matrices=True: a loss reading the extra columns of U (rows of Vh) through the
    projector onto them (a function of A) folds their cotangent into the first k, as for
    real input: gradcheck and gradgradcheck. (torch drops it.) A loss reading one of those
    columns on its own depends on their arbitrary basis and raises."""
    C = mg.tensor(cmatrix(shape[:-2] + (max(shape[-2:]),) * 2, seed=3))
    k = min(shape[-2:])

    def loss(A):
        U, S, Vh = mg.linalg.svd(A, full_matrices=True)
        Up, Vp = U[..., :, k:], Vh[..., k:, :].mH
        Pu, Pv = Up @ Up.mH, Vp @ Vp.mH
        m, n = Pu.shape[-1], Pv.shape[-1]
        return ((Pu * C[..., :m, :m]).real.sum() + (Pv * C[..., :n, :n]).imag.sum()
                + (S ** 2).sum())

    A = mg.tensor(cmatrix(shape, seed=1), requires_grad=True)
    assert gradcheck(loss, (A,))
    assert gradgradcheck(loss, (A,))

    U, S, Vh = mg.linalg.svd(A, full_matrices=True)
    extra = U[..., :, k:] if shape[-2] > shape[-1] else Vh[..., k:, :]
    with pytest.raises(LinAlgError, match="arbitrary basis of the complement"):
        (extra[..., 0].abs() ** 2 * mg.arange(1.0, extra.shape[-2] + 1.0)).sum().backward()
