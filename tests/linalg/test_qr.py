"""linalg.qr in every mode: values against numpy/torch, gradients (first and second order)
against finite differences and torch, the complete Q's complement, rank deficiency; and
linalg.householder_product, QR's reflectors multiplied out."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd import gradcheck, gradgradcheck
from minigrad.linalg import LinAlgError

SHAPES = [(4, 3), (3, 3), (3, 5), (2, 4, 2), (2, 2, 3)]


def rand(shape, seed=0):
    return mg.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)


def weights(shape, seed):
    return mg.tensor(np.random.default_rng(seed).standard_normal(shape))


def loss(mode):
    def f(A):
        Q, R = mg.linalg.qr(A, mode)
        out = (R * weights(R.shape, 1)).sum()
        if mode == "reduced":
            out = out + (Q * weights(Q.shape, 2)).sum()
        if mode == "complete":
            k = min(A.shape[-2:])
            Q2 = Q[..., k:]  # the complement only through its projector
            out = out + (Q[..., :k] * weights(Q[..., :k].shape, 2)).sum()
            out = out + ((Q2 @ Q2.mT) * weights(Q2.shape[:-1] + Q2.shape[-2:-1], 3)).sum()
        return out
    return f


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_gradcheck_and_gradgradcheck(shape, mode):
    A = rand(shape, seed=sum(shape))
    assert gradcheck(loss(mode), (A,))
    assert gradgradcheck(loss(mode), (A,), fast_mode=True)


@pytest.mark.parametrize("shape", SHAPES)
def test_values_and_gradients_match_torch(shape):
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(4).standard_normal(shape)
    for mode in ("reduced", "complete"):
        Q, R = mg.linalg.qr(mg.tensor(a), mode)
        Qt, Rt = torch.linalg.qr(torch.tensor(a), mode)
        np.testing.assert_allclose(Q.numpy(), Qt.numpy(), atol=1e-13)
        np.testing.assert_allclose(R.numpy(), Rt.numpy(), atol=1e-13)
    A, At = mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    Q, R = mg.linalg.qr(A)
    Qt, Rt = torch.linalg.qr(At)
    wq, wr = (np.random.default_rng(5).standard_normal(tuple(t.shape)) for t in (Qt, Rt))
    ((Q * mg.tensor(wq)).sum() + (R * mg.tensor(wr)).sum()).backward()
    ((Qt * torch.tensor(wq)).sum() + (Rt * torch.tensor(wr)).sum()).backward()
    np.testing.assert_allclose(A.grad.numpy(), At.grad.numpy(), rtol=1e-9, atol=1e-11)


def test_shapes_of_every_mode():
    A = mg.ones(2, 5, 3)
    assert [t.shape for t in mg.linalg.qr(A)] == [(2, 5, 3), (2, 3, 3)]
    assert [t.shape for t in mg.linalg.qr(A, "complete")] == [(2, 5, 5), (2, 5, 3)]
    Q, R = mg.linalg.qr(A, "r")
    assert Q.shape == (0,) and R.shape == (2, 3, 3)
    assert [t.shape for t in mg.linalg.qr(mg.zeros(0, 3))] == [(0, 0), (0, 3)]


def test_a_loss_on_the_arbitrary_complement_basis_raises():
    A = rand((4, 2), seed=6)
    Q, _ = mg.linalg.qr(A, "complete")
    with pytest.raises(LinAlgError, match=r"arbitrary basis Q\[..., 2:\] of the complement"):
        Q[..., 2:].sum().backward()


def test_rank_deficient_input_has_no_q_derivative():
    a = np.random.default_rng(7).standard_normal((4, 3))
    a[:, 2] = a[:, 0] + a[:, 1]
    A = mg.tensor(a, requires_grad=True)
    with pytest.raises(LinAlgError, match=r"R\[2, 2\] = 0: the input is rank deficient"):
        mg.linalg.qr(A).Q.sum().backward()


def test_errors_follow_torch():
    with pytest.raises(RuntimeError, match="qr received unrecognized mode 'x' but expected one "
                                           "of 'reduced' \\(default\\), 'r', or 'complete'"):
        mg.linalg.qr(mg.ones(2, 2), mode="x")
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        mg.linalg.qr(mg.ones(3))


@pytest.mark.parametrize("shape, k", [((4, 3), 3), ((4, 3), 2), ((2, 3, 3), 3)])
def test_householder_product_matches_torch_and_differentiates(shape, k):
    """Householder-flow and orthogonal-layer code calls torch.linalg.householder_product with
    k <= n reflectors."""
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(5).standard_normal(shape)
    tau = np.random.default_rng(6).uniform(0.5, 1.5, shape[:-2] + (k,))
    w = np.random.default_rng(7).standard_normal(shape)
    out = []
    for lib in (mg, torch):
        A, t = lib.tensor(a, requires_grad=True), lib.tensor(tau, requires_grad=True)
        Q = lib.linalg.householder_product(A, t)
        (Q * lib.tensor(w)).sum().backward()
        out.append([Q.detach().numpy(), A.grad.numpy(), t.grad.numpy()])
    for ours, theirs in zip(*out):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    assert gradgradcheck(mg.linalg.householder_product,
                         [mg.tensor(a, requires_grad=True), mg.tensor(tau, requires_grad=True)])


def test_householder_product_errors_follow_torch():
    with pytest.raises(RuntimeError, match=r"input.shape\[-2\] must be greater than or equal"):
        mg.linalg.householder_product(mg.ones(2, 3), mg.ones(2))
    with pytest.raises(RuntimeError, match=r"input.shape\[-1\] must be greater than or equal "
                                           r"to tau.shape\[-1\]"):
        mg.linalg.householder_product(mg.ones(3, 2), mg.ones(3))
