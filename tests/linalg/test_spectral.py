"""pinv, lstsq, matrix_rank, cond: torch's values, tolerances and shapes; gradients against
finite differences and torch, full rank and rank deficient (perturbed along the rank)."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd import gradcheck, gradgradcheck
from minigrad.linalg import LinAlgError

L = mg.linalg


def rand(*shape, seed=0, grad=True):
    return mg.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=grad)


def weights(shape, seed=9):
    return mg.tensor(np.random.default_rng(seed).standard_normal(shape))


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (2, 3, 5)])
def test_pinv_full_rank_gradients(shape):
    A = rand(*shape, seed=1)
    assert gradcheck(L.pinv, (A,))
    assert gradgradcheck(L.pinv, (A,), fast_mode=True)


def test_pinv_hermitian_gradients_are_symmetric():
    """minigrad gives hermitian routines the gradient on symmetric matrices (as torch's eigh
    and cholesky do); torch's pinv(hermitian=True) returns the unsymmetrised general-matrix
    gradient instead. Their symmetric parts agree, and so does any gradient upstream of an A
    built symmetric."""
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(2).standard_normal((3, 3))
    a = a + a.T
    w = np.random.default_rng(3).standard_normal((3, 3))
    A, At = mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    (L.pinv(A, hermitian=True) * mg.tensor(w)).sum().backward()
    (torch.linalg.pinv(At, hermitian=True) * torch.tensor(w)).sum().backward()
    g = At.grad.numpy()
    np.testing.assert_allclose(A.grad.numpy(), (g + g.T) / 2, rtol=1e-9)
    x = rand(3, 3, seed=4)
    assert gradgradcheck(lambda t: L.pinv(t + t.mT, hermitian=True), (x,), fast_mode=True)


@pytest.mark.parametrize("hermitian", [False, True])
def test_pinv_rank_deficient_gradients(hermitian):
    """A = x x^T of rank 3 in 5x5; perturbing x keeps the rank, so differences converge. The
    two dropped (tied, zero) values take the SVD's / eigh's exact limits at second order."""
    x = rand(5, 3, seed=5)
    f = lambda t: (L.pinv(t @ t.mT, hermitian=hermitian) * weights((5, 5))).sum()  # noqa: E731
    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,), fast_mode=True)


def test_pinv_rank_deficient_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(5).standard_normal((5, 3))
    w = np.random.default_rng(6).standard_normal((5, 5))
    for herm in (False, True):
        X, Xt = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        (L.pinv(X @ X.mT, hermitian=herm) * mg.tensor(w)).sum().backward()
        (torch.linalg.pinv(Xt @ Xt.mT, hermitian=herm) * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(X.grad.numpy(), Xt.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_pinv_values_tolerances_and_batches_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 5, 3))
    a = x @ np.swapaxes(x, -1, -2)  # rank 3
    b = rng.standard_normal((2, 4, 6))
    for kw in [{}, {"rtol": 0.1}, {"atol": 1.0}, {"atol": 0.5, "rtol": 0.2}]:
        for arr, herm in [(a, False), (a, True), (b, False)]:
            out = L.pinv(mg.tensor(arr), hermitian=herm, **kw).numpy()
            ref = torch.linalg.pinv(torch.tensor(arr), hermitian=herm, **kw).numpy()
            np.testing.assert_allclose(out, ref, atol=1e-10, err_msg=str(kw))
    assert L.pinv(mg.zeros(0, 3)).shape == (3, 0)
    np.testing.assert_allclose(mg.pinverse(mg.tensor(b)).numpy(), np.linalg.pinv(b), atol=1e-12)


def test_matrix_rank_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 6, 2))
    a = x @ np.swapaxes(x, -1, -2)
    for kw in [{}, {"hermitian": True}, {"atol": 1.0}, {"rtol": 0.5}, {"tol": 1.0}]:
        out = L.matrix_rank(mg.tensor(a), **kw)
        ref = torch.linalg.matrix_rank(torch.tensor(a), **kw)
        assert out.dtype == np.int64
        np.testing.assert_array_equal(out.numpy(), ref.numpy())
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        L.matrix_rank(mg.ones(3))


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, -1, float("inf"), float("-inf")])
def test_cond_values_and_gradients(p):
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(8).standard_normal((2, 3, 3))
    np.testing.assert_allclose(L.cond(mg.tensor(a), p).numpy(),
                               torch.linalg.cond(torch.tensor(a), p).numpy(), rtol=1e-10)
    A = mg.tensor(a, requires_grad=True)
    assert gradcheck(lambda t: L.cond(t, p), (A,))


def test_cond_singular_is_inf_and_has_no_gradient():
    torch = pytest.importorskip("torch")
    s = [[1.0, 2.0], [2.0, 4.0]]
    for p in ("fro", 1, float("inf")):
        assert L.cond(mg.tensor(s), p).item() == torch.linalg.cond(torch.tensor(s), p).item()
    A = mg.tensor([[1.0, 0.0], [0.0, 0.0]], requires_grad=True)
    c = L.cond(A)
    assert c.item() == np.inf
    with pytest.raises(LinAlgError, match="singular, so its condition number is infinite"):
        c.backward()
    B = mg.tensor(np.stack([np.diag([2.0, 1.0]), np.diag([1.0, 0.0])]), requires_grad=True)
    L.cond(B)[0].backward()  # the singular matrix is not used: no error, zero gradient there
    np.testing.assert_array_equal(B.grad.numpy()[1], np.zeros((2, 2)))
    assert L.cond(mg.ones(2, 3)).item() > 1e15  # any shape for p = 2, as torch
    with pytest.raises(RuntimeError, match=r"linalg.cond\(ord=fro\): A must be batches of "
                                           "square matrices"):
        L.cond(mg.ones(2, 3), "fro")


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("shape_a, shape_b", [((5, 3), (5, 2)), ((3, 5), (3, 2)),
                                              ((2, 4, 3), (2, 4, 2)), ((4, 3), (4,)),
                                              ((2, 4, 3), (2, 4))])
def test_lstsq_matches_torch(driver, shape_a, shape_b):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(10)
    a, b = rng.standard_normal(shape_a), rng.standard_normal(shape_b)
    out = L.lstsq(mg.tensor(a), mg.tensor(b), driver=driver)
    ref = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
    for name, x, y in zip(out._fields, out, ref):
        assert tuple(x.shape) == tuple(y.shape), name
        np.testing.assert_allclose(x.numpy(), y.numpy(), atol=1e-10, err_msg=name)


def test_lstsq_rank_deficient_is_the_minimum_norm_solution():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((6, 2))
    a = x @ rng.standard_normal((2, 4))  # rank 2
    b = rng.standard_normal((6, 3))
    out = L.lstsq(mg.tensor(a), mg.tensor(b), driver="gelsd")
    np.testing.assert_allclose(out.solution.numpy(), np.linalg.pinv(a) @ b, atol=1e-10)
    assert out.rank.item() == 2 and out.residuals.shape == (0,)


def test_lstsq_gradients():
    A, B = rand(5, 3, seed=12), rand(5, 2, seed=13)
    sol = lambda a, b: L.lstsq(a, b, driver="gelsd").solution  # noqa: E731
    assert gradcheck(sol, (A, B))
    assert gradgradcheck(sol, (A, B), fast_mode=True)
    res = lambda a, b: L.lstsq(a, b, driver="gelsd").residuals  # noqa: E731
    assert gradcheck(res, (A, B))
    W = rand(3, 5, seed=14)  # wide: the minimum-norm solution
    assert gradcheck(lambda a, b: L.lstsq(a, b[:3]).solution, (W, B))
    x, y = rand(5, 2, seed=15), rand(2, 3, seed=16)  # rank 2 of 3, kept by the perturbation
    assert gradcheck(lambda p, q, b: L.lstsq(p @ q, b).solution, (x, y, B))


def test_lstsq_errors_follow_torch():
    with pytest.raises(RuntimeError, match="input.size\\(-2\\) should match other.size\\(-2\\)"):
        L.lstsq(mg.ones(3, 2), mg.ones(2, 1))
    with pytest.raises(RuntimeError, match="parameter `driver` should be one of"):
        L.lstsq(mg.ones(3, 2), mg.ones(3, 1), driver="xx")
    with pytest.raises(RuntimeError, match="input.dim\\(\\) must be greater or equal"):
        L.lstsq(mg.ones(2, 4, 3), mg.ones(4))


def test_lstsq_broadcasts_and_reports_rank_per_matrix_of_a():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(17)
    a, b = rng.standard_normal((1, 4, 3)), rng.standard_normal((2, 4, 2))
    out = L.lstsq(mg.tensor(a), mg.tensor(b), driver="gelsd")
    ref = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver="gelsd")
    for x, y in zip(out, ref):
        assert tuple(x.shape) == tuple(y.shape)
        np.testing.assert_allclose(x.numpy(), y.numpy(), atol=1e-10)


@pytest.mark.parametrize("fn", [
    lambda m, a: m.linalg.pinv(a),
    lambda m, a: m.linalg.matrix_rank(a),
    lambda m, a: m.linalg.cond(a),
    lambda m, a: m.linalg.cond(a, "fro"),
    lambda m, a: m.linalg.lstsq(a, a[..., :2], driver="gelsd"),
    lambda m, a: m.linalg.lstsq(a.mT, a.mT[..., :1], driver="gels"),
], ids=["pinv", "rank", "cond", "cond-fro", "lstsq", "lstsq-gels"])
@pytest.mark.parametrize("shape", [(0, 3, 3), (2, 0, 0), (3, 0)])
def test_empty_inputs_match_torch(fn, shape):
    torch = pytest.importorskip("torch")
    a = np.zeros(shape)
    try:
        ref = fn(torch, torch.tensor(a))
    except RuntimeError:
        with pytest.raises(RuntimeError):
            fn(mg, mg.tensor(a))
        return
    out = fn(mg, mg.tensor(a))
    out, ref = (out, ref) if isinstance(out, tuple) else ((out,), (ref,))
    for x, y in zip(out, ref):
        assert tuple(x.shape) == tuple(y.shape)
        np.testing.assert_allclose(x.numpy(), y.numpy())


@pytest.mark.parametrize("p", [2, "fro", 1])
def test_cond_gradgradcheck(p):
    A = rand(2, 3, 3, seed=18)
    assert gradgradcheck(lambda t: L.cond(t, p), (A,), fast_mode=True)
