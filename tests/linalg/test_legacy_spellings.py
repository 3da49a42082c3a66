"""torch's older linalg spellings and Tensor's linalg methods: mg.svd (U, S, V), cholesky(upper),
qr(some), triangular_solve, matrix_exp, .mH / .H / .adjoint(), .inverse() / .det() /
.slogdet() / .pinverse()."""

from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd import gradcheck, gradgradcheck

rng = np.random.default_rng(13)


def _a(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape)


def _close(ours: mg.Tensor, theirs: object, tol: float = 1e-10) -> None:
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), atol=tol, rtol=tol)


def _aligned(V: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """V with each column's sign flipped to agree with ref's (singular vectors' gauge)."""
    s = np.sign(np.sum(V * ref, axis=-2, keepdims=True))
    return V * s


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3), (2, 5, 2)])
@pytest.mark.parametrize("some", [True, False])
def test_svd_returns_v_and_matches_torch(shape: tuple, some: bool) -> None:
    torch = pytest.importorskip("torch")
    a = _a(*shape)
    U, S, V = mg.svd(mg.tensor(a), some=some)
    tU, tS, tV = torch.svd(torch.tensor(a), some=some)
    assert (U.shape, S.shape, V.shape) == (tuple(tU.shape), tuple(tS.shape), tuple(tV.shape))
    assert U.dtype == S.dtype == V.dtype == np.float64
    _close(S, tS)
    k = S.shape[-1]
    np.testing.assert_allclose(_aligned(V.numpy()[..., :k], tV.numpy()[..., :k]),
                               tV.numpy()[..., :k], atol=1e-10)
    # V, not Vh: A = U diag(S) V^T
    rec = U.numpy()[..., :k] * S.numpy()[..., None, :] @ np.swapaxes(V.numpy()[..., :k], -1, -2)
    np.testing.assert_allclose(rec, a, atol=1e-12)
    Vh = mg.linalg.svd(mg.tensor(a), full_matrices=not some).Vh
    np.testing.assert_array_equal(V.numpy(), np.swapaxes(Vh.numpy(), -1, -2))
    assert mg.tensor(a).svd(some).V.shape == V.shape


def test_svd_compute_uv_false_is_zero_filled_as_torch() -> None:
    torch = pytest.importorskip("torch")
    a = _a(2, 4, 3)
    U, S, V = mg.svd(mg.tensor(a), compute_uv=False)
    tU, tS, tV = torch.svd(torch.tensor(a), compute_uv=False)
    assert U.shape == tuple(tU.shape) == (2, 4, 4) and V.shape == tuple(tV.shape) == (2, 3, 3)
    assert not U.numpy().any() and not V.numpy().any()
    _close(S, tS)
    x = mg.tensor(a, requires_grad=True)
    mg.svd(x, compute_uv=False).S.sum().backward()
    tx = torch.tensor(a, requires_grad=True)
    torch.svd(tx, compute_uv=False).S.sum().backward()
    _close(x.grad, tx.grad)


def test_svd_gradients_match_torch_and_finite_differences() -> None:
    torch = pytest.importorskip("torch")
    a, w = _a(4, 3), _a(4, 4)

    def loss(lib: object, A: object) -> object:
        U, S, V = lib.svd(A)
        # gauge invariant: the projector U U^T, S and V S V^T
        return ((U @ U.mT) * lib.tensor(w)).sum() + S.sum() + (V * S) @ V.mT

    x = mg.tensor(a, requires_grad=True)
    loss(mg, x).sum().backward()
    tx = torch.tensor(a, requires_grad=True)
    loss(torch, tx).sum().backward()
    _close(x.grad, tx.grad, 1e-8)
    assert gradcheck(lambda A: loss(mg, A).sum(), [mg.tensor(a, requires_grad=True)])


def test_svd_refuses_bad_input() -> None:
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        mg.svd(mg.ones(3))
    with pytest.raises(RuntimeError, match="floating point"):
        mg.svd(mg.ones(2, 2, dtype=mg.int64))
    with pytest.raises(TypeError, match="must be a Tensor"):
        mg.svd([[1.0]])


def test_cholesky_and_qr_legacy_arguments() -> None:
    torch = pytest.importorskip("torch")
    b = _a(3, 3)
    spd = b @ b.T + 3 * np.eye(3)
    for upper in (False, True):
        _close(mg.cholesky(mg.tensor(spd), upper), torch.cholesky(torch.tensor(spd), upper))
        _close(mg.tensor(spd).cholesky(upper=upper), torch.tensor(spd).cholesky(upper=upper))
    a = _a(4, 2)
    for some in (True, False):
        Q, R = mg.qr(mg.tensor(a), some)
        tQ, tR = torch.qr(torch.tensor(a), some)
        assert (Q.shape, R.shape) == (tuple(tQ.shape), tuple(tR.shape))
        np.testing.assert_allclose(Q.numpy() @ R.numpy(), a, atol=1e-12)
        np.testing.assert_allclose(np.abs(R.numpy()), np.abs(tR.numpy()), atol=1e-12)
        assert mg.tensor(a).qr(some).Q.shape == Q.shape


@pytest.mark.parametrize("scale", [0.1, 1.0, 8.0])
def test_matrix_exp_matches_torch_with_gradient(scale: float) -> None:
    torch = pytest.importorskip("torch")
    a, w = scale * _a(2, 3, 3), _a(2, 3, 3)
    x, tx = mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    out, tout = mg.linalg.matrix_exp(x), torch.linalg.matrix_exp(tx)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-11,
                               atol=1e-11 * np.abs(tout.detach().numpy()).max())
    (out * mg.tensor(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-9,
                               atol=1e-10 * np.abs(tx.grad.numpy()).max())
    assert mg.matrix_exp is mg.linalg.matrix_exp
    _close(mg.tensor(a).matrix_exp(), torch.tensor(a).matrix_exp(), 1e-9 * np.exp(3 * scale))


def test_matrix_exp_second_order_and_errors() -> None:
    assert gradgradcheck(lambda A: mg.linalg.matrix_exp(A).sum(),
                         [mg.tensor(_a(3, 3), requires_grad=True)])
    with pytest.raises(RuntimeError, match="square matrices, but they are 2 by 3"):
        mg.linalg.matrix_exp(mg.ones(2, 3))
    with pytest.raises(RuntimeError, match="inf or NaN"):
        mg.linalg.matrix_exp(mg.tensor([[float("nan"), 0.0], [0.0, 1.0]]))


def test_conjugate_transposes_as_torch() -> None:
    torch = pytest.importorskip("torch")
    a = _a(2, 3, 4)
    x, tx = mg.tensor(a), torch.tensor(a)
    _close(x.mH, tx.mH)
    _close(x.mT, tx.mT)
    _close(x.adjoint(), tx.adjoint())
    _close(x[0].H, tx[0].H)
    for bad in (lambda t: t[0, 0].mH, lambda t: t[0, 0].mT, lambda t: t.H,
                lambda t: t[0, 0].adjoint()):
        with pytest.raises(RuntimeError) as ours:
            bad(x)
        with pytest.raises(RuntimeError) as theirs:
            bad(tx)
        assert str(ours.value).split(".")[1] == str(theirs.value).split(".")[1]
    g = mg.tensor(a, requires_grad=True)
    (g.mH * mg.tensor(_a(2, 4, 3))).sum().backward()
    assert g.grad.shape == (2, 3, 4)


@pytest.mark.parametrize("name", ["inverse", "det", "logdet", "slogdet", "pinverse",
                                  "matrix_power"])
def test_linalg_methods_match_torch_value_and_gradient(name: str) -> None:
    torch = pytest.importorskip("torch")
    b = _a(2, 3, 3)
    a = b @ np.swapaxes(b, -1, -2) + np.eye(3)  # positive det so logdet is finite
    args = (3,) if name == "matrix_power" else ()
    x, tx = mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    out, tout = getattr(x, name)(*args), getattr(tx, name)(*args)
    if name == "slogdet":
        _close(out.sign, tout.sign)
        out, tout = out.logabsdet, tout.logabsdet
    _close(out, tout, 1e-9)
    assert out.dtype == np.float64 and out.shape == tuple(tout.shape)
    out.sum().backward()
    tout.sum().backward()
    _close(x.grad, tx.grad, 1e-8)
    fn = getattr(mg, name) if hasattr(mg, name) else getattr(mg.linalg, name)
    same = fn(mg.tensor(a), *args)
    _close(same.logabsdet if name == "slogdet" else same, tout, 1e-9)


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
@pytest.mark.parametrize("unit", [True, False])
def test_triangular_solve_matches_torch(upper: bool, transpose: bool, unit: bool) -> None:
    """torch.triangular_solve(b, A, upper=True, transpose, unitriangular): b first."""
    torch = pytest.importorskip("torch")
    a, b = _a(2, 3, 3) + 3 * np.eye(3), _a(2, 3, 2)
    out = []
    for lib in (mg, torch):
        A, B = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        X, C = lib.triangular_solve(B, A, upper, transpose, unit)
        (X * lib.tensor(np.cos(np.arange(12.0)).reshape(2, 3, 2))).sum().backward()
        out.append((X, C, A.grad, B.grad))
    for ours, theirs in zip(*out):
        _close(ours, theirs)
    assert gradcheck(lambda A, B: mg.triangular_solve(B, A, upper, transpose, unit)[0],
                     [mg.tensor(a[0], requires_grad=True), mg.tensor(b[0], requires_grad=True)])
    # one A for a batch of b: the copy of A takes the solution's batch shape, as torch's
    for ours, theirs in zip(mg.triangular_solve(mg.tensor(b), mg.tensor(a[0]), upper, transpose,
                                                unit),
                            torch.triangular_solve(torch.tensor(b), torch.tensor(a[0]), upper,
                                                   transpose, unit)):
        _close(ours, theirs)
