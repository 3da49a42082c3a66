"""``mg.svd_lowrank``, ``mg.pca_lowrank`` and ``linalg.svd(..., top_k=k)`` on complex input.

The singular vectors are defined up to u_j, v_j -> u_j e^{i phi}, v_j e^{i phi}, so values
are compared at the level of subspaces (S, U diag(S) V^H, the projectors U U^H and V V^H),
and gradients only for losses blind to the phases: against the dense complex SVD's
gradient of the same triplets, central differences (gradcheck, gradgradcheck) and torch
where its sketch is exact.
"""

from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
import minigrad.linalg._svd_trunc as trunc
import minigrad.linalg.lowrank as lowrank
from minigrad.autograd import gradcheck, gradgradcheck
from minigrad.linalg import LinAlgError
from tests.linalg.test_svd_truncated import results_of


def unitary(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.linalg.qr(rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n)))[0]


def with_values(seed: int, m: int, n: int, s) -> np.ndarray:
    """A complex m x n matrix with the given singular values (the rest 0)."""
    rng = np.random.default_rng(seed)
    k = len(s)
    return (unitary(rng, m)[:, :k] * np.asarray(s, float)) @ unitary(rng, n)[:, :k].conj().T


def decaying(seed: int, m: int, n: int, rate: float) -> np.ndarray:
    return with_values(seed, m, n, np.r_[[10.0, 8.0, 6.0], 2.0 * rate ** np.arange(
        min(m, n) - 3)])


def c128(a: np.ndarray) -> mg.Tensor:
    return mg.tensor(np.array(a, dtype=np.complex128), requires_grad=True)


def proj(x: np.ndarray) -> np.ndarray:
    return x @ np.swapaxes(x, -1, -2).conj()


def parts(U, S, V) -> tuple:
    """What the triplets determine: S, U diag(S) V^H and the two projectors."""
    u, s, v = (x.detach().numpy() if isinstance(x, mg.Tensor) else
               np.asarray(x.detach().resolve_conj()) if hasattr(x, "resolve_conj") else x
               for x in (U, S, V))
    return s, (u * s[..., None, :]) @ np.swapaxes(v, -1, -2).conj(), proj(u), proj(v)


def exact_parts(a: np.ndarray, k: int) -> tuple:
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return parts(u[..., :k], s[..., :k], np.swapaxes(vh[..., :k, :], -1, -2).conj())


def assert_parts(got: tuple, want: tuple, tol: float) -> None:
    scale = np.abs(want[0]).max()
    np.testing.assert_allclose(got[0], want[0], rtol=tol)
    np.testing.assert_allclose(got[1], want[1], atol=tol * scale)
    for g, w in zip(got[2:], want[2:]):
        np.testing.assert_allclose(g, w, atol=tol)


def phase_blind_loss(seed: int, m: int, n: int):
    """A real loss of (U, S, V) invariant under each triplet's phase: |U|^4, the projectors,
    U diag(log S) V^H against a weight, S^2."""
    rng = np.random.default_rng(seed)
    C1 = mg.tensor(rng.standard_normal((m, m)) + 1j * rng.standard_normal((m, m)))
    C2 = mg.tensor(rng.standard_normal((m, n)) + 1j * rng.standard_normal((m, n)))

    def loss(U: mg.Tensor, S: mg.Tensor, V: mg.Tensor) -> mg.Tensor:
        Sc = S.to(U.dtype).unsqueeze(-2)
        return ((U.abs() ** 4).sum() + ((U @ U.mH) * C1).real.sum()
                + (((U * Sc.log()) @ V.mH) * C2).imag.sum() + (S ** 2).sum()
                + (V @ V.mH).abs().sum())
    return loss


def via_dense(A: mg.Tensor, q: int) -> tuple:
    """The same triplets sliced from the dense complex SVD: (U, S, V)."""
    U, S, Vh = mg.linalg.svd(A, full_matrices=False)
    return U[..., :q], S[..., :q], Vh[..., :q, :].mH


@pytest.mark.parametrize("shape", [(40, 30), (30, 40), (2, 36, 28)])
@pytest.mark.parametrize("rate,sketch", [(0.5, True), (0.99, False)])
def test_values_are_the_exact_top_q(monkeypatch: pytest.MonkeyPatch, shape: tuple,
                                    rate: float, sketch: bool) -> None:
    # Fast decay past q: the refined complex sketch gives the top q (the dense SVD is never
    # called); slow decay: the dense complex SVD does. The same for every seed and niter.
    a = decaying(1, *shape[-2:], rate)
    a = np.stack([a, decaying(2, *shape[-2:], rate)]) if len(shape) == 3 else a
    called = results_of(monkeypatch, lowrank, "top_forward")
    for seed, niter in ((0, 0), (1, 2)):
        mg.manual_seed(seed)
        U, S, V = mg.svd_lowrank(mg.tensor(a), q=3, niter=niter)
        assert (U.dtype, S.dtype, V.dtype) == (mg.complex128, mg.float64, mg.complex128)
        assert (U.shape, S.shape, V.shape) == (shape[:-1] + (3,), shape[:-2] + (3,),
                                               shape[:-2] + (shape[-1], 3))
        assert_parts(parts(U, S, V), exact_parts(a, 3), 1e-12)
        # the gauge of the complex SVD: u_j's first entry of largest modulus real, > 0
        u = U.numpy()
        top = np.take_along_axis(u, np.argmax(np.abs(u), axis=-2)[..., None, :], axis=-2)
        assert np.all(top.real > 0) and np.all(np.abs(top.imag) <= 1e-14 * top.real)
    assert bool(called) != sketch


def test_values_match_torch_where_torchs_sketch_is_exact() -> None:
    # Rank q: torch's sketch spans the range exactly, so its triplets are the SVD's. M and
    # pca_lowrank's centring (a complex column mean) as torch's.
    torch = pytest.importorskip("torch")
    a = np.stack([with_values(3, 30, 20, [5.0, 3.0, 1.0]), with_values(4, 30, 20,
                                                                       [4.0, 2.0, 1.5])])
    mean = np.random.default_rng(5).standard_normal((1, 20)) * (1 - 2j)
    ours = mg.svd_lowrank(mg.tensor(a + mean), q=3, M=mg.tensor(mean))
    theirs = torch.svd_lowrank(torch.tensor(a + mean), q=3, M=torch.tensor(mean))
    assert [x.numpy().dtype for x in ours] == [x.resolve_conj().numpy().dtype for x in theirs]
    assert_parts(parts(*ours), parts(*theirs), 1e-10)
    c = a - a.mean(-2, keepdims=True)  # rank 3 before centring: use a centred one
    for center in (True, False):
        ours = mg.pca_lowrank(mg.tensor(c + 2j), q=3, center=center)
        theirs = torch.pca_lowrank(torch.tensor(c + 2j), q=3, center=center)
        assert [tuple(x.shape) for x in ours] == [tuple(x.shape) for x in theirs]
        if center:  # centring removes the 2j: rank 3 again, exact for torch's sketch
            assert_parts(parts(*ours), parts(*theirs), 1e-10)
        else:
            assert_parts(parts(*ours), exact_parts(c + 2j, 3), 1e-12)


@pytest.mark.parametrize("shape,q", [((16, 12), 2), ((12, 16), 3)])
def test_gradient_is_the_truncated_svds_for_every_sketch(shape: tuple, q: int) -> None:
    a = decaying(6, *shape, 0.3)
    loss = phase_blind_loss(7, *shape)
    B = c128(a)
    loss(*via_dense(B, q)).backward()
    for seed in (0, 1):
        mg.manual_seed(seed)
        A = c128(a)
        loss(*mg.svd_lowrank(A, q=q, niter=seed)).backward()
        np.testing.assert_allclose(A.grad.numpy(), B.grad.numpy(), rtol=0,
                                   atol=1e-10 * np.abs(B.grad.numpy()).max())


@pytest.mark.parametrize("shape", [(7, 5), (5, 7)])
def test_gradcheck_and_gradgradcheck(shape: tuple) -> None:
    # Discarded values tied and zero: the truncated backward never reads them.
    a = with_values(8, *shape, [5.0, 4.0, 3.0, 1.0, 1.0])
    loss = phase_blind_loss(9, *shape)

    def f(x: mg.Tensor) -> mg.Tensor:
        return loss(*mg.svd_lowrank(x, q=2))

    def g(x: mg.Tensor) -> mg.Tensor:
        U, S, Vh = mg.linalg.svd(x, full_matrices=False, top_k=3)
        return loss(U, S, Vh.mH)
    for fn in (f, g):
        assert gradcheck(fn, (c128(a),))
        assert gradgradcheck(fn, (c128(a),))
    assert gradcheck(lambda x: mg.pca_lowrank(x, q=2)[1].sum(), (c128(a),))


def test_the_iterative_complement_solve_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    # A clear gap at the cut and few kept triplets: conjugate gradients (Hermitian, complex
    # inner products) run instead of the dense solve, and give the dense SVD's gradient.
    ran = results_of(monkeypatch, trunc, "_cg")
    a = decaying(10, 60, 50, 0.5)
    loss = phase_blind_loss(11, 60, 50)
    A, B = c128(a), c128(a)
    loss(*mg.svd_lowrank(A, q=2)).backward()
    loss(*via_dense(B, 2)).backward()
    np.testing.assert_allclose(A.grad.numpy(), B.grad.numpy(), rtol=0,
                               atol=1e-9 * np.abs(B.grad.numpy()).max())
    assert ran and all(r is not None for r in ran)


@pytest.mark.parametrize("read", ["U", "V"])
def test_a_loss_that_depends_on_the_phase_raises(read: str) -> None:
    A = c128(decaying(12, 9, 7, 0.3))
    U, S, V = mg.svd_lowrank(A, q=2)
    with pytest.raises(LinAlgError, match="phase"):
        (U[0, 0].real if read == "U" else V[1, 1].imag).backward()


def test_a_cut_inside_a_tie_raises() -> None:
    A = c128(with_values(13, 6, 5, [3.0, 2.0, 2.0, 1.0, 0.5]))
    with pytest.raises(LinAlgError, match="cuts through a repeated value"):
        mg.svd_lowrank(A, q=2)[1].sum().backward()


def test_complex64() -> None:
    a = decaying(14, 12, 9, 0.3)
    loss = phase_blind_loss(15, 12, 9)
    A = mg.tensor(a.astype(np.complex64), requires_grad=True)
    U, S, V = mg.svd_lowrank(A, q=2)
    assert (U.dtype, S.dtype, V.dtype) == (mg.complex64, mg.float32, mg.complex64)
    assert_parts(parts(U, S, V), exact_parts(a, 2), 1e-5)
    loss(U, S, V).backward()
    B = c128(a)
    loss(*via_dense(B, 2)).backward()
    np.testing.assert_allclose(A.grad.numpy(), B.grad.numpy(), rtol=0,
                               atol=1e-4 * np.abs(B.grad.numpy()).max())


def test_legacy_svd_of_complex_input_is_torchs() -> None:
    torch = pytest.importorskip("torch")
    a = with_values(16, 5, 4, [3.0, 2.0, 1.0, 0.5])
    for some in (True, False):
        ours, theirs = mg.svd(mg.tensor(a), some=some), torch.svd(torch.tensor(a), some=some)
        assert [tuple(x.shape) for x in ours] == [tuple(x.shape) for x in theirs]
        k = 4
        assert_parts(parts(ours[0][:, :k], ours[1], ours[2][:, :k]),
                     parts(theirs[0][:, :k], theirs[1], theirs[2][:, :k]), 1e-12)
