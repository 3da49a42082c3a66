"""det, slogdet, logdet: values against numpy and torch; gradients of first and second order
against finite differences, at singular matrices too (rank n-1, n-2, the zero matrix), where
torch's det * inv^T rule fails."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd import gradcheck, gradgradcheck
from minigrad.linalg import LinAlgError

L = mg.linalg


def low_rank(n, r, batch=(), seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(batch + (n, r)) @ rng.standard_normal(batch + (r, n))
    return mg.tensor(a, requires_grad=True)


def adjugate_t(a):
    """The cofactor matrix adj(a)^T, by minors (the reference for d det / dA)."""
    n = a.shape[-1]
    c = np.empty_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, -2), j, -1)
            c[..., i, j] = (-1) ** (i + j) * np.linalg.det(minor)
    return c


@pytest.mark.parametrize("n, r", [(3, 3), (3, 2), (3, 1), (4, 3), (4, 2), (5, 3), (2, 0),
                                  (3, 0), (1, 1), (1, 0)])
def test_gradients_at_every_rank(n, r):
    A = low_rank(n, r, (2,), seed=n * 10 + r)
    assert gradcheck(L.det, (A,))
    assert gradgradcheck(L.det, (A,))


@pytest.mark.parametrize("n, r", [(3, 2), (4, 3), (4, 2)])
def test_gradient_is_the_adjugate_where_torch_is_wrong(n, r):
    A = low_rank(n, r, seed=r)
    L.det(A).backward()
    np.testing.assert_allclose(A.grad.numpy(), adjugate_t(A.detach().numpy()), atol=1e-10)


def test_torch_returns_zeros_at_rank_n_minus_1_and_minigrad_does_not():
    torch = pytest.importorskip("torch")
    a = np.arange(1.0, 10.0).reshape(3, 3)  # rank 2; adj is [[-3, 6, -3], [6, -12, 6], ...]
    At = torch.tensor(a, requires_grad=True)
    torch.linalg.det(At).backward()
    A = mg.tensor(a, requires_grad=True)
    L.det(A).backward()
    np.testing.assert_allclose(A.grad.numpy(), adjugate_t(a), atol=1e-12)
    assert np.abs(At.grad.numpy() - adjugate_t(a)).max() > 1  # torch is off here


def test_values_and_regular_gradients_match_torch():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(1).standard_normal((3, 4, 4))
    A, At = mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    d, dt = L.det(A), torch.linalg.det(At)
    s, st = L.slogdet(A), torch.linalg.slogdet(At)
    np.testing.assert_allclose(d.detach().numpy(), dt.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(s.sign.numpy(), st.sign.detach().numpy())
    np.testing.assert_allclose(s.logabsdet.detach().numpy(), st.logabsdet.detach().numpy())
    (d.sum() + s.logabsdet.sum()).backward()
    (dt.sum() + st.logabsdet.sum()).backward()
    np.testing.assert_allclose(A.grad.numpy(), At.grad.numpy(), rtol=1e-10)


def test_mixed_batch_of_regular_and_singular_matrices():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((4, 3, 3))
    a[1] = np.outer(a[1, 0], a[1, 1])  # rank 1
    a[3, 2] = a[3, 0] + a[3, 1]  # rank 2
    A = mg.tensor(a.reshape(2, 2, 3, 3), requires_grad=True)
    np.testing.assert_allclose(L.det(A).detach().numpy(), np.linalg.det(a).reshape(2, 2),
                               atol=1e-12)
    assert gradgradcheck(L.det, (A,))


def test_slogdet_and_logdet_gradients():
    a = np.random.default_rng(3).standard_normal((2, 3, 3))
    A = mg.tensor(a, requires_grad=True)
    assert gradgradcheck(lambda t: L.slogdet(t).logabsdet, (A,))
    B = mg.tensor(a @ np.swapaxes(a, -1, -2) + np.eye(3), requires_grad=True)
    assert gradgradcheck(mg.logdet, (B,))


def test_slogdet_at_a_singular_matrix():
    Z = mg.zeros(3, 3, dtype=mg.float64, requires_grad=True)
    sign, logabs = L.slogdet(Z)
    assert sign.item() == 0 and logabs.item() == -np.inf
    assert not sign.requires_grad  # piecewise constant: no gradient
    with pytest.raises(LinAlgError, match="singular, so logabsdet = -inf"):
        logabs.backward()


def test_logdet_follows_torch_for_negative_and_singular():
    assert np.isnan(mg.logdet(mg.tensor([[-1.0, 0.0], [0.0, 1.0]])).item())
    assert mg.logdet(mg.tensor([[1.0, 2.0], [2.0, 4.0]])).item() == -np.inf


def test_empty_and_errors():
    assert L.det(mg.zeros(0, 0)).item() == 1.0
    assert L.det(mg.zeros(2, 0, 0, requires_grad=True)).shape == (2,)
    with pytest.raises(RuntimeError, match="linalg.det: A must be batches of square matrices, "
                                           "but they are 2 by 3 matrices"):
        L.det(mg.ones(2, 3))
    assert mg.det is L.det and mg.slogdet is L.slogdet
