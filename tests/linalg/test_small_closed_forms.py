"""det, inv and solve of 2x2 to 4x4 batches by closed forms (linalg/_small.py) against
LAPACK (the plain route), torch, finite differences and exact arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad.linalg import _small

SIZES = (2, 3, 4)


def _conditioned(rng, batch, n, cond, dtype=np.float64):
    u, _ = np.linalg.qr(rng.standard_normal((*batch, n, n)))
    v, _ = np.linalg.qr(rng.standard_normal((*batch, n, n)))
    return ((u * np.geomspace(1, 1 / cond, n)) @ v).astype(dtype)


def _lapack_forbidden(monkeypatch):
    for name in ("det", "inv", "solve"):
        monkeypatch.setattr(np.linalg, name, lambda *a, **k: pytest.fail("a LAPACK call"))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_well_conditioned_batches_take_no_lapack_call_and_match_it(n, dtype,
                                                                   monkeypatch) -> None:
    rng = np.random.default_rng(n)
    a = _conditioned(rng, (5, 7), n, 10.0, dtype)
    b = rng.standard_normal((7, n, 2)).astype(dtype)  # batch dims broadcast
    ref = (np.linalg.det(a), np.linalg.inv(a), np.linalg.solve(a, b))
    with monkeypatch.context() as m:
        _lapack_forbidden(m)
        got = (mg.linalg.det(mg.tensor(a)), mg.linalg.inv(mg.tensor(a)),
               mg.linalg.solve(mg.tensor(a), mg.tensor(b)))
    tol = 1e-6 if dtype == np.float32 else 1e-13
    for g, r in zip(got, ref):
        assert g.dtype == dtype and g.shape == r.shape
        np.testing.assert_allclose(g.numpy(), r, rtol=tol, atol=tol)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ill_conditioned_matrices_keep_lapacks_accuracy(n, dtype) -> None:
    mpmath = pytest.importorskip("mpmath")
    rng = np.random.default_rng(10 + n)
    for cond in (1e3, 1e6):
        a = _conditioned(rng, (20,), n, cond, dtype)
        exact = [mpmath.matrix(m.astype(float).tolist()) for m in a]
        d_ref = np.array([float(mpmath.det(m)) for m in exact])
        i_ref = np.array([np.array(mpmath.inverse(m).tolist(), float) for m in exact])
        eps = np.finfo(dtype).eps
        # LAPACK's error is ~eps cond in float64; float32 is computed in float64
        bound = 50 * eps * (cond if dtype == np.float64 else 1)
        d = _small.det(a).astype(float)
        assert np.max(np.abs(d - d_ref) / np.abs(d_ref)) < bound
        i = _small.inv(a).astype(float)
        err = np.linalg.norm(i - i_ref, axis=(1, 2)) / np.linalg.norm(i_ref, axis=(1, 2))
        assert np.max(err) < bound


@pytest.mark.parametrize("n", SIZES)
def test_singular_matrices_raise_as_before_and_nan_propagates(n) -> None:
    a = np.tile(np.eye(n), (3, 1, 1))
    a[1, -1] = a[1, 0]  # the middle one singular
    with pytest.raises(mg.linalg.LinAlgError, match=r"\(Batch element 1\)"):
        mg.linalg.inv(mg.tensor(a))
    with pytest.raises(mg.linalg.LinAlgError, match=r"\(Batch element 1\)"):
        mg.linalg.solve(mg.tensor(a), mg.tensor(np.ones((3, n))))
    assert mg.linalg.det(mg.tensor(a)).tolist() == [1.0, 0.0, 1.0]
    a[1] = np.nan
    a[1, 0, 0] = 1.0
    d = mg.linalg.det(mg.tensor(a)).numpy()
    assert np.isnan(d[1]) and d[0] == d[2] == 1.0


@pytest.mark.parametrize("n", SIZES)
def test_cofactors_are_the_adjugate_transposed_to_every_order(n) -> None:
    rng = np.random.default_rng(20 + n)
    a = rng.standard_normal((4, n, n))
    c = _small.cofactor(a)
    np.testing.assert_allclose(c, np.swapaxes(np.linalg.inv(a), -1, -2)
                               * np.linalg.det(a)[:, None, None], rtol=1e-10, atol=1e-12)
    A = mg.tensor(a[:2], requires_grad=True)
    assert mg.autograd.gradcheck(mg.linalg.det, (A,))
    assert mg.autograd.gradgradcheck(mg.linalg.det, (A,))
    assert mg.autograd.gradcheck(mg.linalg.inv, (A,))
    assert mg.autograd.gradcheck(lambda x: mg.linalg.solve(x, mg.tensor(a[2:, :, :1])), (A,))


@pytest.mark.parametrize("n", SIZES)
def test_det_gradient_at_a_singular_matrix_is_the_adjugate_to_second_order(n) -> None:
    sympy = pytest.importorskip("sympy")
    rng = np.random.default_rng(30 + n)
    a = rng.integers(-3, 4, (n, n)).astype(float)
    a[-1] = a[0] + a[1] if n > 2 else 2 * a[0]  # rank n - 1
    A = mg.tensor(a, requires_grad=True)
    (g,) = mg.autograd.grad(mg.linalg.det(A), A, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), np.array(sympy.Matrix(a).adjugate().T, float),
                               atol=1e-12)
    assert mg.autograd.gradgradcheck(mg.linalg.det, (mg.tensor(a, requires_grad=True),))


def test_values_and_gradients_match_torch() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(40)
    for n in SIZES:
        a = rng.standard_normal((6, n, n))
        b = rng.standard_normal((6, n, 2))
        for fn in ("det", "inv", "solve"):
            x, t = mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
            args_mg = (x, mg.tensor(b)) if fn == "solve" else (x,)
            args_t = (t, torch.tensor(b)) if fn == "solve" else (t,)
            y, u = getattr(mg.linalg, fn)(*args_mg), getattr(torch.linalg, fn)(*args_t)
            g = rng.standard_normal(tuple(u.shape))
            y.backward(mg.tensor(g))
            u.backward(torch.tensor(g))
            np.testing.assert_allclose(y.detach().numpy(), u.detach().numpy(), rtol=1e-10,
                                       atol=1e-12)
            np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-11)
