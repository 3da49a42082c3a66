"""det, slogdet, inv and solve of 2x2 to 4x4 batches by closed forms (linalg/_small.py and
its kernel) against LAPACK (the plain route), torch, finite differences and exact
arithmetic."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import minigrad as mg
from minigrad.linalg import _small, _threads

det_module = importlib.import_module("minigrad.linalg.det")  # (mg.linalg.det: the function)

SIZES = (2, 3, 4)


def _conditioned(rng, batch, n, cond, dtype=np.float64):
    u, _ = np.linalg.qr(rng.standard_normal((*batch, n, n)))
    v, _ = np.linalg.qr(rng.standard_normal((*batch, n, n)))
    return ((u * np.geomspace(1, 1 / cond, n)) @ v).astype(dtype)


def _lapack_forbidden(monkeypatch):
    for name in ("det", "slogdet", "inv", "solve"):
        monkeypatch.setattr(np.linalg, name, lambda *a, **k: pytest.fail("a LAPACK call"))
    monkeypatch.setattr(det_module, "_gufunc_det", None)


def _all_four(a, b, grad=False):
    A = mg.tensor(a, requires_grad=grad)
    return (mg.linalg.det(A), mg.linalg.slogdet(A).sign, mg.linalg.slogdet(A).logabsdet,
            mg.linalg.inv(A), mg.linalg.solve(A, mg.tensor(b)))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("batch", [(), (1,), (5, 7)], ids=["one", "one-batched", "35"])
@pytest.mark.parametrize("grad", [False, True], ids=["", "recorded"])
def test_well_conditioned_batches_take_no_lapack_call_and_match_it(n, dtype, batch, grad,
                                                                   monkeypatch) -> None:
    rng = np.random.default_rng(n)
    a = _conditioned(rng, batch, n, 10.0, dtype)
    b = rng.standard_normal((*batch[1:], n, 2)).astype(dtype)  # batch dims broadcast
    ref = (np.linalg.det(a), *np.linalg.slogdet(a), np.linalg.inv(a), np.linalg.solve(a, b))
    with monkeypatch.context() as m:
        _lapack_forbidden(m)
        got = _all_four(a, b, grad)
    tol = 1e-6 if dtype == np.float32 else 1e-13
    for g, r in zip(got, ref):
        assert g.dtype == dtype and g.shape == r.shape
        np.testing.assert_allclose(g.detach().numpy(), r, rtol=tol, atol=tol)


def test_kernel_modes_are_the_drivers() -> None:
    from minigrad.linalg import _small_kernels as k

    assert (_small.DET, _small.INV, _small.SOLVE, _small.COFACTOR) == (
        k.DET, k.INV, k.SOLVE, k.COFACTOR)


def _kappa(a):
    """|A|_F |A^-1|_F, exactly enough (mpmath's inverse)."""
    return np.linalg.norm(a, axis=(-2, -1)) * np.linalg.norm(
        np.linalg.inv(a.astype(np.float64)), axis=(-2, -1))


def _hard_batch(rng, n, dtype):
    """Well and ill conditioned matrices together, rows of unequal scales among them, and
    ones whose two smallest singular values are small together (the expansion's
    cancellation 1 / h ~ kappa^2 there, where LAPACK's error is eps kappa)."""
    a = np.concatenate([_conditioned(rng, (6,), n, c) for c in (1.0, 1e2, 1e5, 1e8, 1e11)])
    a[::3] *= np.geomspace(1e-3, 1e3, n)[:, None]
    if n > 2:
        u, _ = np.linalg.qr(rng.standard_normal((6, n, n)))
        v, _ = np.linalg.qr(rng.standard_normal((6, n, n)))
        s = np.ones(n)
        s[-2:] = 1e-3
        a = np.concatenate([a, (u * s) @ v])
    return a.astype(dtype)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ill_conditioned_matrices_are_within_lapacks_bound(n, dtype) -> None:
    """|X - X_exact| <= c eps kappa |X_exact| matrix by matrix (c = 8 n, normwise), the form
    of LAPACK's bound, for what the closed forms keep and what they hand to LAPACK."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    rng = np.random.default_rng(10 + n)
    a = _hard_batch(rng, n, dtype)
    b = rng.standard_normal((len(a), n, 1)).astype(dtype)
    exact = [mpmath.matrix(m.astype(float).tolist()) for m in a]
    d_ref = np.array([float(mpmath.det(m)) for m in exact])
    i_ref = np.array([np.array((mpmath.inverse(m)).tolist(), float) for m in exact])
    x_ref = i_ref @ b.astype(float)  # (i_ref is exact to float64's rounding: enough here)
    bound = 8 * n * np.finfo(dtype).eps * _kappa(a.astype(float))
    d, inv = mg.linalg.det(mg.tensor(a)).numpy(), mg.linalg.inv(mg.tensor(a)).numpy()
    x = mg.linalg.solve(mg.tensor(a), mg.tensor(b)).numpy()
    logabs = mg.linalg.slogdet(mg.tensor(a)).logabsdet.numpy()

    def rel(got, want):
        return np.linalg.norm((got - want).reshape(len(a), -1), axis=1) / np.linalg.norm(
            want.reshape(len(a), -1), axis=1)

    assert np.all(rel(d.astype(float), d_ref) <= bound)
    assert np.all(np.abs(logabs - np.log(np.abs(d_ref))) <= bound)
    assert np.all(rel(inv.astype(float), i_ref) <= bound)
    assert np.all(rel(x.astype(float), x_ref) <= bound)
    rough = _small._run(a, _small.DET)[2]
    assert rough is not None and not rough[:6].any()  # kappa 1 kept, others LAPACK's
    assert n == 2 or rough[-6:].all()  # two small singular values: LAPACK's


@pytest.mark.parametrize("n", SIZES)
def test_near_singular_matrices_get_lapacks_results_and_errors(n) -> None:
    torch = pytest.importorskip("torch")
    a = np.tile(np.eye(n), (4, 1, 1))
    a[1, -1] = a[1, 0] + 1e-15  # near-singular: LAPACK's numbers, no error
    a[2, -1, -1] = 1e-300  # a tiny pivot (det underflows to 0 in the expansion)
    for i in (1, 2):
        np.testing.assert_array_equal(mg.linalg.inv(mg.tensor(a[i:i + 1])).numpy(),
                                      np.linalg.inv(a[i:i + 1]))
        assert mg.linalg.det(mg.tensor(a[i])).item() == np.linalg.det(a[i])
    np.testing.assert_array_equal(mg.linalg.inv(mg.tensor(a)).numpy(), np.linalg.inv(a))
    a[3, 0] = 0.0  # singular: torch's error kind and message
    for fn, args in (("inv", (a,)), ("solve", (a, np.ones((4, n, 1))))):
        with pytest.raises(torch.linalg.LinAlgError) as want:
            getattr(torch.linalg, fn)(*map(torch.tensor, args))
        with pytest.raises(mg.linalg.LinAlgError) as got:
            getattr(mg.linalg, fn)(*map(mg.tensor, args))
        assert str(got.value) == str(want.value)
    assert mg.linalg.det(mg.tensor(a)).numpy()[3] == 0.0
    s = mg.linalg.slogdet(mg.tensor(a))
    assert s.sign.numpy()[3] == 0.0 and s.logabsdet.numpy()[3] == -np.inf


def test_large_batches_split_over_threads_alike(monkeypatch) -> None:
    rng = np.random.default_rng(50)
    m = 2 * _small._PER_THREAD + 3
    a = rng.standard_normal((m, 3, 3))
    a[-2, 2] = a[-2, 0]  # singular, in the last part
    one = _small._run(a, _small.INV)
    with monkeypatch.context() as mp:
        mp.setattr(_threads, "num_threads", lambda: 2)
        calls = []
        real = _threads.run
        mp.setattr(_threads, "run", lambda *x: calls.append(1) or real(*x))
        two = _small._run(a, _small.INV)
        with pytest.raises(mg.linalg.LinAlgError, match=rf"\(Batch element {m - 2}\)"):
            mg.linalg.inv(mg.tensor(a))
    assert calls
    for x, y in zip(one, two):
        np.testing.assert_array_equal(x, y)


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
    for fn in (mg.linalg.inv, lambda x: mg.linalg.solve(x, mg.tensor(a[2:, :, :1])),
               lambda x: mg.linalg.slogdet(x).logabsdet):
        assert mg.autograd.gradcheck(fn, (A,))
        assert mg.autograd.gradgradcheck(fn, (A,))


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
        for fn in ("det", "slogdet", "inv", "solve"):
            x, t = mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
            args_mg = (x, mg.tensor(b)) if fn == "solve" else (x,)
            args_t = (t, torch.tensor(b)) if fn == "solve" else (t,)
            y, u = getattr(mg.linalg, fn)(*args_mg), getattr(torch.linalg, fn)(*args_t)
            if fn == "slogdet":
                y, u = y.logabsdet, u.logabsdet
            g = rng.standard_normal(tuple(u.shape))
            y.backward(mg.tensor(g))
            u.backward(torch.tensor(g))
            np.testing.assert_allclose(y.detach().numpy(), u.detach().numpy(), rtol=1e-10,
                                       atol=1e-12)
            np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-11)



def test_byte_swapped_input_is_read_as_its_values() -> None:
    rng = np.random.default_rng(60)
    a = _conditioned(rng, (5,), 3, 10.0)
    b = rng.standard_normal((5, 3, 1))
    swapped = a.astype(a.dtype.newbyteorder())
    for fn, args in (("det", (a,)), ("inv", (a,)), ("solve", (a, b))):
        want = getattr(mg.linalg, fn)(*map(mg.tensor, args)).numpy()
        got = getattr(mg.linalg, fn)(mg.tensor(swapped), *map(mg.tensor, args[1:])).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
