"""The truncated SVD: ``linalg.svd(..., top_k=k)``, ``mg.svd_lowrank`` and ``mg.pca_lowrank``.

Their backward is that of A -> the k largest triplets, from A and the kept triplets alone
(a Sylvester system on the complement), checked against float64 central differences and
against the full SVD's gradient where both apply (a loss on the top k, a gap at k).
"""

from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
import minigrad.linalg._svd_trunc as trunc
import minigrad.linalg.lowrank as lowrank
from minigrad.autograd import gradcheck, gradgradcheck
from minigrad.linalg import LinAlgError


def orth(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.linalg.qr(rng.standard_normal((n, n)))[0]


def with_values(seed: int, m: int, n: int, s: list | np.ndarray) -> np.ndarray:
    """An m x n matrix with the given singular values (the rest 0) and random vectors."""
    rng = np.random.default_rng(seed)
    k = len(s)
    return (orth(rng, m)[:, :k] * np.asarray(s, float)) @ orth(rng, n)[:, :k].T


def t64(a: np.ndarray) -> mg.Tensor:
    return mg.tensor(np.array(a, dtype=np.float64), requires_grad=True)


def top(A: mg.Tensor, k: int) -> tuple:
    return mg.linalg.svd(A, full_matrices=False, top_k=k)


def leading(A: mg.Tensor, k: int) -> tuple:
    """The same triplets sliced from the full SVD."""
    U, S, Vh = mg.linalg.svd(A, full_matrices=False)
    return U[..., :k], S[..., :k], Vh[..., :k, :]


def grad_of(loss, factor, a: np.ndarray, k: int) -> np.ndarray:
    A = t64(a)
    loss(*factor(A, k)).backward()
    return A.grad.numpy()


def spectral_loss(seed: int, m: int, n: int):
    """A loss of the kept triplets that is a function of A (blind to their signs), reading
    U, S and V in every way: S beside U and V, the projectors, log S."""
    rng = np.random.default_rng(seed)
    C1, C2, C3 = (mg.tensor(rng.standard_normal(s)) for s in ((m, m), (n, n), (m, n)))

    def loss(U: mg.Tensor, S: mg.Tensor, Vh: mg.Tensor) -> mg.Tensor:
        Su = S.unsqueeze(-2)
        return (((U * Su ** 2) @ U.mT) * C1).sum() + (((Vh.mT * Su.log()) @ Vh) * C2).sum() \
            + (((U * Su) @ Vh) * C3).sum() + ((U @ U.mT) * C1).sum()
    return loss


# ---- linalg.svd(..., top_k=k) --------------------------------------------------------------
@pytest.mark.parametrize("shape", [(7, 5), (5, 7), (2, 6, 4)])
def test_top_k_values_are_the_leading_triplets(shape: tuple) -> None:
    A = mg.tensor(np.random.default_rng(0).standard_normal(shape))
    U, S, Vh = top(A, 2)
    assert (U.shape, S.shape, Vh.shape) == (shape[:-1] + (2,), shape[:-2] + (2,),
                                            shape[:-2] + (2, shape[-1]))
    for ours, full in zip((U, S, Vh), leading(A, 2), strict=True):
        np.testing.assert_array_equal(ours.numpy(), full.numpy())
    kmin = min(shape[-2:])
    for ours, full in zip(top(A, kmin), mg.linalg.svd(A, full_matrices=False), strict=True):
        np.testing.assert_array_equal(ours.numpy(), full.numpy())
    assert top(A, 0).S.shape == shape[:-2] + (0,)


def test_top_k_argument_errors() -> None:
    A = mg.tensor(np.ones((4, 3)))
    with pytest.raises(ValueError, match="full_matrices=False"):
        mg.linalg.svd(A, top_k=2)
    for bad in (-1, 4):
        with pytest.raises(ValueError, match="top_k"):
            top(A, bad)
    with pytest.raises(TypeError, match="top_k"):
        top(A, 1.5)


@pytest.mark.parametrize("shape,k", [((7, 5), 2), ((4, 6), 3), ((2, 5, 4), 1)])
def test_top_k_gradients_match_finite_differences(shape: tuple, k: int) -> None:
    A = t64(np.random.default_rng(1).standard_normal(shape))
    loss = spectral_loss(2, *shape[-2:])
    assert gradcheck(lambda a: loss(*top(a, k)), (A,))
    assert gradgradcheck(lambda a: loss(*top(a, k)), (A,))


def test_top_k_gradient_is_the_full_svds() -> None:
    a = np.random.default_rng(3).standard_normal((8, 6))
    loss = spectral_loss(4, 8, 6)
    np.testing.assert_allclose(grad_of(loss, top, a, 3), grad_of(loss, leading, a, 3),
                               rtol=1e-10, atol=1e-12)


def test_ties_and_noise_among_the_discarded_values_never_enter() -> None:
    # Exactly tied, nearly tied (1e-12) and zero discarded values: the truncated backward
    # sees none of them (its node never asks for the tie machinery's look downstream, the
    # full SVD's does) and is exact, first and second order.
    a = with_values(5, 9, 7, [5.0, 4.0, 3.0, 1.0, 1.0, 1.0 + 1e-12, 0.0])
    loss = spectral_loss(6, 9, 7)
    assert not top(t64(a), 3).S.grad_fn.wants_downstream
    assert mg.linalg.svd(t64(a), full_matrices=False).S.grad_fn.wants_downstream
    assert gradcheck(lambda x: loss(*top(x, 3)), (t64(a),))
    assert gradgradcheck(lambda x: loss(*top(x, 3)), (t64(a),))
    np.testing.assert_allclose(grad_of(loss, top, a, 3), grad_of(loss, leading, a, 3),
                               rtol=1e-9, atol=1e-11)


def results_of(monkeypatch: pytest.MonkeyPatch, module, name: str) -> list:
    """Filled with the result of each call of module.name (which still runs)."""
    results: list = []
    fn = getattr(module, name)

    def spy(*args, **kwargs):
        results.append(fn(*args, **kwargs))
        return results[-1]
    monkeypatch.setattr(module, name, spy)
    return results


def test_the_iterative_complement_solve_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    # A wide gap at the cut and few kept triplets: conjugate gradients cost less than the
    # dense solve, and must give its numbers (the full SVD's gradient).
    ran = results_of(monkeypatch, trunc, "_cg")
    a = decaying(22, 60, 50, 0.5)
    loss = spectral_loss(23, 60, 50)
    np.testing.assert_allclose(grad_of(loss, top, a, 2), grad_of(loss, leading, a, 2),
                               rtol=1e-9, atol=1e-11)
    assert ran and all(r is not None for r in ran)


def test_a_tie_inside_the_kept_block_takes_the_exact_limit() -> None:
    # U diag(S) Vh of the top 3 at s_1 = s_2: the full SVD's tie machinery, reused.
    a = with_values(7, 7, 5, [3.0, 3.0, 1.0, 0.5, 0.2])
    C = mg.tensor(np.random.default_rng(8).standard_normal((7, 5)))

    def reconstruction(x: mg.Tensor) -> mg.Tensor:
        U, S, Vh = top(x, 3)
        return (((U * S.unsqueeze(-2)) @ Vh) * C).sum()
    assert gradcheck(reconstruction, (t64(a),))
    assert gradgradcheck(reconstruction, (t64(a),))
    # A loss that drops the tied pair (reads u_1, s_1 only) is smooth there, to second
    # order: the tie machinery's local limits for dropped triplets, on the kept block.
    def first(x: mg.Tensor) -> mg.Tensor:
        U, S, _ = top(x, 3)
        return (((U[:, :1] * S[0]) @ U[:, :1].mT) * C[:, :1]).sum()
    assert gradgradcheck(first, (t64(with_values(7, 7, 5, [3.0, 1.5, 1.5, 0.5, 0.2])),))
    A = t64(a)
    U, S, Vh = top(A, 3)
    with pytest.raises(LinAlgError):  # u_1 alone is an arbitrary vector of the tied pair
        (U[:, 0] * C[:, 0]).sum().pow(2).backward()


def test_a_cut_inside_a_tie_raises() -> None:
    a = with_values(9, 6, 5, [3.0, 2.0, 2.0, 1.0, 0.5])
    for loss in (lambda U, S, Vh: (U @ U.mT).sum(), lambda U, S, Vh: S.sum()):
        A = t64(a)
        with pytest.raises(LinAlgError, match="cuts through a repeated value"):
            loss(*top(A, 2)).backward()
    # A loss that reads only the triplet above the tie is a smooth function of A.
    assert gradcheck(lambda x: (top(x, 2).U[:, :1] @ top(x, 2).U[:, :1].mT).sum(), (t64(a),))


def test_more_kept_than_the_rank_is_a_cut_at_zero() -> None:
    A = t64(with_values(10, 6, 5, [3.0, 2.0]))
    U, S, Vh = top(A, 3)
    with pytest.raises(LinAlgError, match="repeated value"):
        ((U * S.unsqueeze(-2)) @ Vh).sum().backward()


def test_top_k_float32_and_float16() -> None:
    a = np.random.default_rng(11).standard_normal((6, 5))
    loss = spectral_loss(12, 6, 5)
    grads = {}
    for dt in (mg.float64, mg.float32, mg.float16):
        A = mg.tensor(a, dtype=dt, requires_grad=True)
        U, S, Vh = top(A, 2)
        assert U.dtype == S.dtype == Vh.dtype == dt
        loss(U.double(), S.double(), Vh.double()).backward()
        grads[dt] = A.grad.double().numpy()
    np.testing.assert_allclose(grads[mg.float32], grads[mg.float64], rtol=1e-3, atol=1e-3)


# ---- svd_lowrank / pca_lowrank -------------------------------------------------------------
def decaying(seed: int, m: int, n: int, rate: float) -> np.ndarray:
    return with_values(seed, m, n, np.r_[[10.0, 8.0, 6.0], 2.0 * rate ** np.arange(
        min(m, n) - 3)])


def projector(X: mg.Tensor) -> np.ndarray:
    x = X.detach().numpy()
    return x @ np.swapaxes(x, -1, -2)


@pytest.mark.parametrize("rate,sketch", [(0.5, True), (0.99, False)])
def test_lowrank_values_are_the_exact_top_q(monkeypatch: pytest.MonkeyPatch, rate: float,
                                            sketch: bool) -> None:
    # Fast decay past q: the refined sketch gives the exact top q (the dense SVD is never
    # called); slow decay: the refinement would not converge and the dense SVD is used.
    # Either way the values are the same for every seed and niter, unlike torch's.
    a = decaying(13, 40, 30, rate)
    ex_u, ex_s, ex_vh = np.linalg.svd(a)
    called = results_of(monkeypatch, lowrank, "top_forward")
    for seed, niter in ((0, 0), (1, 2)):
        mg.manual_seed(seed)
        U, S, V = mg.svd_lowrank(mg.tensor(a), q=3, niter=niter)
        assert (U.shape, S.shape, V.shape) == ((40, 3), (3,), (30, 3))
        np.testing.assert_allclose(S.numpy(), ex_s[:3], rtol=1e-12)
        np.testing.assert_allclose(projector(U), ex_u[:, :3] @ ex_u[:, :3].T, atol=1e-12)
        np.testing.assert_allclose(projector(V), ex_vh[:3].T @ ex_vh[:3], atol=1e-12)
        np.testing.assert_allclose(U.numpy() * S.numpy() @ V.numpy().T,
                                   (ex_u[:, :3] * ex_s[:3]) @ ex_vh[:3], atol=1e-12)
    assert bool(called) != sketch


def test_lowrank_gradient_is_the_truncated_svds_for_every_sketch() -> None:
    a = decaying(14, 16, 12, 0.3)
    W = mg.tensor(np.random.default_rng(15).standard_normal((16, 12)))

    def loss(U: mg.Tensor, S: mg.Tensor, V: mg.Tensor) -> mg.Tensor:
        return (((U * S) @ V.mT) * W).sum() + (U @ U.mT).sum() + S.prod()
    grads = []
    for seed in (0, 1):
        mg.manual_seed(seed)
        A = t64(a)
        loss(*mg.svd_lowrank(A, q=1, niter=0)).backward()
        grads.append(A.grad.numpy())
    A = t64(a)
    U, S, Vh = top(A, 1)
    loss(U, S, Vh.mT).backward()
    for g in grads:
        np.testing.assert_allclose(g, A.grad.numpy(), rtol=1e-10, atol=1e-11)
    assert gradcheck(lambda x: loss(*mg.svd_lowrank(x, q=1)), (t64(a),))


def test_lowrank_shapes_batches_and_mean() -> None:
    rng = np.random.default_rng(16)
    a = np.stack([decaying(17, 12, 30, 0.3), decaying(18, 12, 30, 0.4)])
    mean = rng.standard_normal((1, 30))
    U, S, V = mg.svd_lowrank(mg.tensor(a + mean), q=1, M=mg.tensor(mean))
    assert (U.shape, S.shape, V.shape) == ((2, 12, 1), (2, 1), (2, 30, 1))
    np.testing.assert_allclose(S.numpy(), np.linalg.svd(a)[1][:, :1], rtol=1e-12)
    M = mg.tensor(mean, requires_grad=True)
    mg.svd_lowrank(mg.tensor(a + mean), q=1, M=M)[1].sum().backward()
    A = t64(a)
    top(A, 1).S.sum().backward()
    np.testing.assert_allclose(M.grad.numpy(), -A.grad.numpy().sum((0, 1))[None],
                               atol=1e-12)
    assert mg.svd_lowrank(mg.tensor(a), q=20)[1].shape == (2, 12)  # q > min(m, n): all
    assert mg.svd_lowrank(mg.tensor(a), q=0)[0].shape == (2, 12, 0)
    with pytest.raises(RuntimeError):
        mg.svd_lowrank(mg.tensor(a), q=-1)


def test_pca_lowrank_centres_and_checks_q() -> None:
    data = decaying(19, 30, 14, 0.2) + 5.0
    U, S, V = mg.pca_lowrank(mg.tensor(data), q=2)
    centred = data - data.mean(0)
    _, s, vh = np.linalg.svd(centred)
    np.testing.assert_allclose(S.numpy(), s[:2], rtol=1e-12)
    np.testing.assert_allclose(projector(V), vh[:2].T @ vh[:2], atol=1e-12)
    un = mg.pca_lowrank(mg.tensor(centred), q=2, center=False)
    np.testing.assert_allclose(un[1].numpy(), s[:2], rtol=1e-12)
    assert gradcheck(lambda x: mg.pca_lowrank(x, q=2)[1].sum(), (t64(data),))
    for bad in ({"q": -1}, {"q": 15}, {"niter": -1}):
        with pytest.raises(ValueError):
            mg.pca_lowrank(mg.tensor(data), **bad)


def test_lowrank_matches_torch_where_torchs_sketch_is_exact() -> None:
    # A matrix of rank q: torch's sketch spans its range exactly, so its values are the
    # SVD's. (Its gradient is that of the sketch, not of A -> top q triplets, pytorch
    # #69531; the gradients above are checked against finite differences instead.)
    torch = pytest.importorskip("torch")
    a = np.stack([with_values(20, 30, 20, [5.0, 3.0, 1.0]), with_values(21, 30, 20,
                                                                        [4.0, 2.0, 1.5])])
    mg_out = mg.svd_lowrank(mg.tensor(a), q=3)
    t_out = torch.svd_lowrank(torch.tensor(a), q=3)
    np.testing.assert_allclose(mg_out[1].numpy(), t_out[1].numpy(), rtol=1e-10)
    for i in (0, 2):
        np.testing.assert_allclose(projector(mg_out[i]), projector(
            mg.tensor(t_out[i].numpy())), atol=1e-10)
    mg_pca, t_pca = mg.pca_lowrank(mg.tensor(a), q=3), torch.pca_lowrank(torch.tensor(a), q=3)
    assert [tuple(x.shape) for x in mg_pca] == [tuple(x.shape) for x in t_pca]
