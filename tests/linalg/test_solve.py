"""inv, solve, solve_triangular, cholesky, cholesky_solve / cholesky_inverse and the *_ex
forms: values and gradients against torch and finite differences (first and second order),
broadcasting, empty input, torch's errors and info."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd import gradcheck, gradgradcheck
from minigrad.linalg import LinAlgError

L = mg.linalg


def rand(*shape, seed=0, grad=True):
    return mg.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=grad)


def spd(t):
    n = t.shape[-1]
    return t @ t.mT + mg.eye(n, dtype=mg.float64)


@pytest.mark.parametrize("fn, args", [
    (L.inv, [(3, 3)]),
    (L.inv, [(2, 4, 4)]),
    (L.solve, [(3, 3), (3, 2)]),
    (L.solve, [(2, 3, 3), (3,)]),           # one vector for every matrix
    (L.solve, [(2, 3, 3), (2, 3)]),         # a batch of vectors
    (L.solve, [(3, 3), (2, 3, 2)]),         # the matrix broadcast over B's batch
    (lambda a, b: L.solve(a, b, left=False), [(3, 3), (2, 3)]),
    (lambda a, b: L.solve_triangular(a, b, upper=True), [(2, 3, 3), (3, 2)]),
    (lambda a, b: L.solve_triangular(a, b, upper=False, unitriangular=True), [(3, 3), (3, 2)]),
    (lambda a, b: L.solve_triangular(a, b, upper=False, left=False), [(3, 3), (2, 3)]),
    (lambda a: L.cholesky(spd(a)), [(2, 3, 3)]),
    (lambda a: L.cholesky(spd(a), upper=True), [(3, 3)]),
    (lambda a, b: mg.cholesky_solve(b, a.tril()), [(2, 3, 3), (3, 2)]),
    (lambda a: mg.cholesky_inverse(a.triu(), upper=True), [(3, 3)]),
], ids=["inv", "inv-batch", "solve", "solve-vec", "solve-vecs", "solve-bcast", "solve-right",
        "tri-upper", "tri-unit", "tri-right", "chol", "chol-upper", "chol-solve", "chol-inv"])
def test_gradcheck_and_gradgradcheck(fn, args):
    xs = [rand(*s, seed=i + 1) for i, s in enumerate(args)]
    n = xs[0].shape[-1]  # well away from singular: finite differences stay accurate
    xs[0] = (xs[0] + mg.eye(n, dtype=mg.float64) * 3).detach().requires_grad_()
    assert gradcheck(fn, xs)
    assert gradgradcheck(fn, xs, fast_mode=True)


def test_values_and_gradients_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal((4, 3))
    cases = [
        (lambda m, x, y: m.linalg.inv(x), "inv"),
        (lambda m, x, y: m.linalg.solve(x, y), "solve"),
        (lambda m, x, y: m.linalg.solve(x, y.mT, left=False), "solve-right"),
        (lambda m, x, y: m.linalg.solve_triangular(x, y, upper=True), "tri"),
        (lambda m, x, y: m.linalg.cholesky(x @ x.mT), "chol"),
        (lambda m, x, y: m.linalg.cholesky(x @ x.mT, upper=True), "chol-upper"),
        # from a factor, as used: torch's gradient for a factor's unread triangle is that of
        # a full L (its forward reads one triangle); minigrad's reads the triangle it uses
        (lambda m, x, y: m.cholesky_solve(y, m.linalg.cholesky(x @ x.mT)), "chol-solve"),
        (lambda m, x, y: m.cholesky_solve(y, m.linalg.cholesky(x @ x.mT, upper=True), True),
         "chol-solve-upper"),
        (lambda m, x, y: m.cholesky_inverse(m.linalg.cholesky(x @ x.mT)), "chol-inv"),
        (lambda m, x, y: m.cholesky_inverse(m.linalg.cholesky(x @ x.mT, upper=True), True),
         "chol-inv-upper"),
        (lambda m, x, y: m.linalg.inv_ex(x).inverse, "inv_ex"),
        (lambda m, x, y: m.linalg.solve_ex(x, y).result, "solve_ex"),
        (lambda m, x, y: m.linalg.cholesky_ex(x @ x.mT, upper=True).L, "cholesky_ex"),
    ]
    for f, name in cases:
        A, B = mg.tensor(a, requires_grad=True), mg.tensor(b, requires_grad=True)
        At, Bt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        out, ref = f(mg, A, B), f(torch, At, Bt)
        np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-10,
                                   atol=1e-12, err_msg=name)
        w = rng.standard_normal(tuple(ref.shape))
        (out * mg.tensor(w)).sum().backward()
        (ref * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(A.grad.numpy(), At.grad.numpy(), rtol=1e-9, atol=1e-11,
                                   err_msg=name)
        if Bt.grad is not None:
            np.testing.assert_allclose(B.grad.numpy(), Bt.grad.numpy(), rtol=1e-9, atol=1e-11)


def test_solve_shapes_follow_torch():
    A = mg.eye(3).expand(4, 3, 3)
    assert L.solve(A, mg.ones(3)).shape == (4, 3)
    assert L.solve(A, mg.ones(4, 3)).shape == (4, 3)
    assert L.solve(A, mg.ones(3, 2)).shape == (4, 3, 2)
    assert L.solve(mg.eye(2), mg.ones(3, 2), left=False).shape == (3, 2)
    with pytest.raises(RuntimeError, match=r"Incompatible shapes of A and B for the equation "
                                           r"AX = B \(3x3 and 4x3\)"):
        L.solve(A, mg.ones(2, 4, 3))
    with pytest.raises(RuntimeError, match=r"XA = B \(3x3 and 3x2\)"):
        L.solve(mg.eye(3), mg.ones(3, 2), left=False)


def singular_batch():
    return mg.tensor(np.stack([np.eye(2), [[1.0, 2.0], [2.0, 4.0]]]))


def test_singular_input_gets_torchs_errors():
    with pytest.raises(LinAlgError, match=r"linalg.inv: \(Batch element 1\): The diagonal "
                                          "element 2 is zero, the inversion could not be "
                                          "completed because the input matrix is singular"):
        L.inv(singular_batch())
    with pytest.raises(LinAlgError, match=r"^linalg.inv: The diagonal element 1 is zero"):
        L.inv(mg.zeros(3, 3))
    with pytest.raises(LinAlgError, match=r"torch.linalg.solve: \(Batch element 1\): The "
                                          "solver failed because the input matrix is singular"):
        L.solve(singular_batch(), mg.ones(2))
    with pytest.raises(LinAlgError, match=r"linalg.solve_triangular: \(Batch element 1\): The "
                                          "diagonal element 2 is zero"):
        L.solve_triangular(mg.tensor(np.stack([np.eye(2), [[1.0, 2.0], [3.0, 0.0]]])),
                           mg.ones(2, 1), upper=True)
    with pytest.raises(LinAlgError, match=r"linalg.cholesky: \(Batch element 1\): The "
                                          "factorization could not be completed because the "
                                          r"input is not positive-definite \(the leading minor "
                                          "of order 2 is not positive-definite\\)"):
        L.cholesky(mg.tensor(np.stack([np.eye(2), [[1.0, 2.0], [2.0, 1.0]]])))
    with pytest.raises(LinAlgError, match="leading minor of order 1"):
        L.cholesky(-mg.eye(3))


def test_singular_error_names_the_flat_batch_index_of_a_nested_batch():
    a = np.broadcast_to(np.eye(2), (2, 2, 2, 2)).copy()
    a[1, 0] = 0.0
    with pytest.raises(LinAlgError, match=r"\(Batch element 2\)"):
        L.inv(mg.tensor(a))


def test_cholesky_reads_one_triangle_like_torch():
    a = np.array([[4.0, 100.0], [1.0, 3.0]])
    np.testing.assert_allclose(L.cholesky(mg.tensor(a)).numpy(), [[2, 0], [0.5, 1.6583124]],
                               atol=1e-7)
    with pytest.raises(LinAlgError):
        L.cholesky(mg.tensor(a), upper=True)


def test_empty_inputs():
    assert L.inv(mg.zeros(0, 0)).shape == (0, 0)
    assert L.inv(mg.zeros(3, 0, 0)).shape == (3, 0, 0)
    assert L.solve(mg.zeros(0, 0), mg.zeros(0, 2)).shape == (0, 2)
    assert L.cholesky(mg.zeros(2, 0, 0)).shape == (2, 0, 0)


@pytest.mark.parametrize("fn", [L.inv, L.cholesky])
def test_shape_and_dtype_errors_follow_torch(fn):
    with pytest.raises(RuntimeError, match="must be batches of square matrices, but they are "
                                           "2 by 3 matrices"):
        fn(mg.ones(2, 3))
    with pytest.raises(RuntimeError, match="must have at least 2 dimensions"):
        fn(mg.ones(2))
    with pytest.raises(RuntimeError, match="Expected a floating point tensor as input. Got "
                                           "Long"):
        fn(mg.tensor([[1, 0], [0, 1]]))


def test_inverse_alias():
    a = rand(3, 3, seed=5, grad=False) + mg.eye(3, dtype=mg.float64) * 3
    np.testing.assert_allclose(mg.inverse(a).numpy(), np.linalg.inv(a.numpy()))


def test_ex_forms_report_info_and_nan_as_torch_with_finite_gradients():
    """kornia's safe_inverse_with_mask pattern: inv_ex / solve_ex / cholesky_ex report the
    failed matrices in info (torch's numbers) instead of raising; their results are NaN, the
    others exact, and a loss that masks the failed ones has a finite gradient."""
    torch = pytest.importorskip("torch")
    a = np.stack([np.eye(3) * 2, np.diag([1.0, 1.0, 0.0]), np.diag([1.0, -1.0, 1.0])])
    b = np.ones((3, 3, 2))
    calls = [lambda m, x: m.linalg.inv_ex(x), lambda m, x: m.linalg.solve_ex(x, m.tensor(b)),
             lambda m, x: m.linalg.solve_ex(x, m.tensor(b[:, :, 0])),
             lambda m, x: m.linalg.cholesky_ex(x), lambda m, x: m.linalg.cholesky_ex(x, upper=True)]
    for call in calls:
        A = mg.tensor(a, requires_grad=True)
        out, info = call(mg, A)
        ref, ref_info = call(torch, torch.tensor(a))
        assert info.dtype == mg.int32 and info.tolist() == ref_info.tolist()
        good = (ref_info == 0).numpy()
        np.testing.assert_allclose(out.detach().numpy()[good], ref.numpy()[good])
        assert np.isnan(out.detach().numpy()[~good]).all()
        mask = (info == 0).reshape(info.shape + (1,) * (out.ndim - 1))
        mg.where(mask, out, 0.0).sum().backward()
        assert np.isfinite(A.grad.numpy()).all()
    assert L.inv_ex(mg.eye(2)).info.shape == ()


def test_ex_forms_check_errors_raise_as_torch():
    with pytest.raises(LinAlgError, match=r"linalg.inv_ex: \(Batch element 1\): The diagonal "
                                          "element 2 is zero"):
        L.inv_ex(singular_batch(), check_errors=True)
    with pytest.raises(LinAlgError, match=r"torch.linalg.solve_ex: \(Batch element 1\): The "
                                          "solver failed"):
        L.solve_ex(singular_batch(), mg.ones(2), check_errors=True)
    with pytest.raises(LinAlgError, match=r"linalg.cholesky_ex: The factorization could not "
                                          "be completed .* order 1 is not"):
        L.cholesky_ex(-mg.eye(3), check_errors=True)
