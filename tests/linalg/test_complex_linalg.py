"""mg.linalg on complex tensors (issue 27): values and first and second derivatives against
torch in complex128, values and gradients in complex64, complex gradcheck and gradgradcheck
(real and imaginary parts perturbed), and torch's errors. A real loss of a complex output is
Re sum(w * out) with a complex w; the second order differentiates Re sum(c * grad) again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pytest

import minigrad as mg


class Case(NamedTuple):
    name: str
    fn: Callable[..., Any]  # fn(lib, *inputs): a tensor or a tuple of them
    shapes: tuple[tuple[int, ...], ...]


def _hpd(lib: Any, X: Any) -> Any:
    """X X^H + I: Hermitian positive definite, a function of any complex X."""
    return X @ X.mH + lib.eye(X.shape[-1])


CASES = [
    Case("det", lambda L, A: L.linalg.det(A), ((2, 3, 3),)),
    Case("det_5x5", lambda L, A: L.linalg.det(A), ((5, 5),)),
    Case("slogdet", lambda L, A: tuple(L.linalg.slogdet(A)), ((2, 4, 4),)),
    Case("slogdet_sign", lambda L, A: L.linalg.slogdet(A)[0], ((2, 3, 3),)),
    Case("logdet", lambda L, A: L.logdet(A), ((2, 3, 3),)),
    Case("inv", lambda L, A: L.linalg.inv(A), ((2, 3, 3),)),
    Case("inv_2x2", lambda L, A: L.linalg.inv(A), ((2, 2),)),
    Case("solve", lambda L, A, B: L.linalg.solve(A, B), ((2, 3, 3), (2, 3, 2))),
    Case("solve_vector", lambda L, A, b: L.linalg.solve(A, b), ((2, 3, 3), (2, 3))),
    Case("solve_right", lambda L, A, B: L.linalg.solve(A, B, left=False), ((3, 3), (2, 3))),
    Case("solve_triangular", lambda L, A, B: L.linalg.solve_triangular(A, B, upper=True),
         ((2, 3, 3), (2, 3, 2))),
    Case("solve_triangular_right_unit",
         lambda L, A, B: L.linalg.solve_triangular(A, B, upper=False, left=False,
                                                   unitriangular=True), ((3, 3), (2, 3))),
    Case("cholesky", lambda L, X: L.linalg.cholesky(_hpd(L, X)), ((2, 3, 3),)),
    Case("cholesky_upper", lambda L, X: L.linalg.cholesky(_hpd(L, X), upper=True), ((3, 3),)),
    Case("qr_square", lambda L, A: tuple(L.linalg.qr(A)), ((2, 3, 3),)),
    Case("qr_tall", lambda L, A: tuple(L.linalg.qr(A)), ((4, 3),)),
    Case("qr_wide", lambda L, A: tuple(L.linalg.qr(A)), ((2, 4),)),
    Case("lstsq_tall", lambda L, A, B: L.linalg.lstsq(A, B).solution, ((4, 2), (4, 2))),
    Case("lstsq_residuals", lambda L, A, B: tuple(L.linalg.lstsq(A, B, driver="gelsd")[:2]),
         ((5, 2), (5, 3))),
    Case("lstsq_wide", lambda L, A, B: L.linalg.lstsq(A, B).solution, ((2, 3), (2, 1))),
    Case("matrix_exp", lambda L, A: L.linalg.matrix_exp(2 * A), ((2, 3, 3),)),
    Case("matrix_power_negative", lambda L, A: L.linalg.matrix_power(A, -2), ((3, 3),)),
    Case("matrix_norm_fro", lambda L, A: L.linalg.matrix_norm(A), ((2, 3, 4),)),
    Case("matrix_norm_1", lambda L, A: L.linalg.matrix_norm(A, 1), ((2, 3, 4),)),
    Case("matrix_norm_inf", lambda L, A: L.linalg.matrix_norm(A, float("inf")), ((3, 4),)),
    Case("vecdot", lambda L, x, y: L.linalg.vecdot(x, y), ((2, 3), (3,))),
]
IDS = [c.name for c in CASES]


def _inputs(case: Case, dtype: Any = np.complex128) -> list[np.ndarray]:
    rng = np.random.default_rng(sum(map(ord, case.name)))
    return [(rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype(dtype)
            for s in case.shapes]


def _outs(out: Any) -> tuple:
    return out if isinstance(out, tuple) else (out,)


def _loss(lib: Any, outs: tuple) -> Any:
    """Re sum(w * out) over the outputs, w complex for a complex output (real otherwise)."""
    rng = np.random.default_rng(7)
    total = 0
    for o in outs:
        w = rng.standard_normal(tuple(o.shape))
        if o.is_complex():
            w = w + 1j * rng.standard_normal(tuple(o.shape))
        s = (o * lib.tensor(w.astype(_np(o).dtype))).sum()
        total = total + (s.real if o.is_complex() else s)
    return total


def _np(t: Any) -> np.ndarray:
    return t.detach().resolve_conj().numpy()


def _run(lib: Any, case: Case, arrays: list[np.ndarray], order: int) -> list[np.ndarray]:
    xs = [lib.tensor(a, requires_grad=True) for a in arrays]
    outs = _outs(case.fn(lib, *xs))
    grads = lib.autograd.grad(_loss(lib, outs), xs, create_graph=order > 1)
    if order == 2:
        rng = np.random.default_rng(11)
        c = [rng.standard_normal(a.shape) + 1j * rng.standard_normal(a.shape) for a in arrays]
        again = sum((g * lib.tensor(ci)).real.sum() for g, ci in zip(grads, c))
        grads = lib.autograd.grad(again, xs)
    return [_np(o) for o in outs] + [_np(g) for g in grads]


def _close(ours: list[np.ndarray], theirs: list[np.ndarray], rtol: float) -> None:
    """Each array within rtol of the largest entry of torch's."""
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert a.dtype == b.dtype and a.shape == b.shape, (i, a.dtype, b.dtype)
        scale = max(float(np.abs(b).max(initial=0.0)), 1.0)
        assert float(np.abs(a - b).max(initial=0.0)) <= rtol * scale, i


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_complex128_matches_torch(case: Case, order: int) -> None:
    torch = pytest.importorskip("torch")
    arrays = _inputs(case)
    _close(_run(mg, case, arrays, order), _run(torch, case, arrays, order), 1e-9)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_complex64_matches_torch(case: Case) -> None:
    torch = pytest.importorskip("torch")
    arrays = _inputs(case, np.complex64)
    _close(_run(mg, case, arrays, 1), _run(torch, case, arrays, 1), 1e-3)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_complex_gradcheck_and_gradgradcheck(case: Case) -> None:
    xs = [mg.tensor(a, requires_grad=True) for a in _inputs(case)]

    def fn(*args: Any) -> Any:
        return case.fn(mg, *args)

    assert mg.autograd.gradcheck(fn, xs)
    assert mg.autograd.gradgradcheck(fn, xs)


def test_det_of_a_singular_complex_matrix_has_the_adjugate_gradient() -> None:
    rng = np.random.default_rng(3)
    for rank in (4, 3):  # the adjugate, then its derivative, at rank n - 1 and n - 2
        a = (rng.standard_normal((5, rank)) + 1j * rng.standard_normal((5, rank))) @ \
            (rng.standard_normal((rank, 5)) + 1j * rng.standard_normal((rank, 5)))
        A = mg.tensor(a, requires_grad=True)
        assert mg.autograd.gradcheck(mg.linalg.det, [A])
        assert mg.autograd.gradgradcheck(mg.linalg.det, [A])


def test_lstsq_of_complex_input_has_torchs_real_outputs() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    a, b = (rng.standard_normal((2, 5, 3)) + 1j * rng.standard_normal((2, 5, 3))
            for _ in range(2))
    for driver in ("gelsy", "gelsd"):
        ours = mg.linalg.lstsq(mg.tensor(a), mg.tensor(b), driver=driver)
        theirs = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
        for o, t in zip(ours, theirs, strict=True):
            assert o.dtype == str(t.dtype).removeprefix("torch.") and o.shape == tuple(t.shape)
            np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-10, atol=1e-12)


def test_vector_norm_of_complex_input_with_a_dtype() -> None:
    torch = pytest.importorskip("torch")
    x0 = np.array([[1 + 1j, 2, 3j], [0.5, -1j, 2 - 2j]], np.complex64)
    for lib in (mg, torch):
        x = lib.tensor(x0)
        with pytest.raises(RuntimeError, match="dtype should be complex for complex inputs"):
            lib.linalg.vector_norm(x, dtype=lib.float64)
        with pytest.raises(RuntimeError, match="dtype should be real for real inputs"):
            lib.linalg.vector_norm(x.real, dtype=lib.complex128)
    ours, theirs = (lib.linalg.vector_norm(lib.tensor(x0), 3, 1, dtype=lib.complex128)
                    for lib in (mg, torch))
    assert ours.dtype == mg.float64 and theirs.dtype == torch.float64
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    norm = mg.linalg.norm(mg.tensor(x0), dtype=mg.complex128)
    np.testing.assert_allclose(norm.item(), np.linalg.norm(x0.astype(np.complex128)), rtol=1e-12)


def test_cholesky_gradient_is_the_hermitian_part_of_torchs() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 4)) + 1j * rng.standard_normal((4, 4))
    h = x @ x.conj().T + np.eye(4)
    w = rng.standard_normal((4, 4)) + 1j * rng.standard_normal((4, 4))
    grads = []
    for lib in (mg, torch):
        H = lib.tensor(h, requires_grad=True)
        (lib.linalg.cholesky(H) * lib.tensor(w)).real.sum().backward()
        grads.append(_np(H.grad))
    ours, theirs = grads
    # torch's adds an anti-Hermitian part (from the imaginary diagonal of L^H gL) that no
    # Hermitian perturbation sees; minigrad's is the Hermitian, minimum-norm one
    np.testing.assert_allclose(ours, ours.conj().T, atol=1e-14)
    np.testing.assert_allclose(ours, (theirs + theirs.conj().T) / 2, rtol=1e-10, atol=1e-12)


def test_complete_qr_of_a_tall_complex_matrix() -> None:
    rng = np.random.default_rng(5)
    A = mg.tensor(rng.standard_normal((4, 2)) + 1j * rng.standard_normal((4, 2)),
                  requires_grad=True)

    def projector(X: mg.Tensor) -> tuple:
        Q, R = mg.linalg.qr(X, mode="complete")
        return Q[:, 2:] @ Q[:, 2:].mH, R  # blind to the U(2) gauge of the complement

    assert mg.autograd.gradcheck(projector, [A])
    assert mg.autograd.gradgradcheck(projector, [A])
    Q, _ = mg.linalg.qr(A, mode="complete")
    with pytest.raises(mg.linalg.LinAlgError, match="arbitrary basis"):
        Q[:, 2:].real.sum().backward()


@pytest.mark.parametrize("shape", [(4, 3), (3, 5)])
def test_qr_mode_r_of_complex_input_differentiates(shape: tuple[int, int]) -> None:
    """torch has no gradient for mode="r"; minigrad's is checked by finite differences."""
    rng = np.random.default_rng(8)
    A = mg.tensor(rng.standard_normal(shape) + 1j * rng.standard_normal(shape),
                  requires_grad=True)

    def r_only(X: mg.Tensor) -> mg.Tensor:
        return mg.linalg.qr(X, mode="r").R

    assert mg.autograd.gradcheck(r_only, [A])
    assert mg.autograd.gradgradcheck(r_only, [A])


def _singular(n: int = 3) -> np.ndarray:
    a = np.zeros((2, n, n), np.complex128)
    a[0] = np.eye(n) * (1 + 1j)
    a[1, :, 1:] = 1j  # column 0 zero
    return a


def _indefinite() -> np.ndarray:
    a = np.stack([np.eye(3), np.diag([1.0, -1.0, 1.0])]).astype(np.complex128)
    a[:, 2, 0] = 0.1j
    return a


ERRORS = {
    "inv": lambda L: L.linalg.inv(L.tensor(_singular())),
    "solve": lambda L: L.linalg.solve(L.tensor(_singular()), L.tensor(_singular())),
    "matrix_power": lambda L: L.linalg.matrix_power(L.tensor(_singular()), -1),
    "cholesky": lambda L: L.linalg.cholesky(L.tensor(_indefinite())),
    "cholesky_upper": lambda L: L.linalg.cholesky(L.tensor(_indefinite()).mH, upper=True),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_on_singular_complex_input_are_torchs(name: str) -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as theirs:
        ERRORS[name](torch)
    with pytest.raises(mg.linalg.LinAlgError) as ours:
        ERRORS[name](mg)
    assert str(ours.value) == str(theirs.value)


def test_slogdet_backward_at_a_singular_complex_matrix_raises() -> None:
    A = mg.tensor(_singular(), requires_grad=True)
    sign, logabs = mg.linalg.slogdet(A)
    np.testing.assert_allclose(sign.detach().numpy(), [(1 + 1j) ** 3 / abs(1 + 1j) ** 3, 0],
                               atol=1e-15)
    with pytest.raises(mg.linalg.LinAlgError, match="singular"):
        logabs[0].add(logabs[1]).backward()


def test_logdet_of_a_singular_complex_matrix_is_torchs() -> None:
    torch = pytest.importorskip("torch")
    ours, theirs = (lib.logdet(lib.tensor(_singular())) for lib in (mg, torch))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-15)  # -inf + nan i


SPECTRAL = {
    "matrix_norm 2": lambda lib, A: lib.linalg.matrix_norm(A, 2),
    "matrix_norm -2": lambda lib, A: lib.linalg.matrix_norm(A, -2),
    "matrix_norm nuc": lambda lib, A: lib.linalg.matrix_norm(A, "nuc"),
    "cond": lambda lib, A: lib.linalg.cond(A),
    "cond -2": lambda lib, A: lib.linalg.cond(A, -2),
    "cond fro": lambda lib, A: lib.linalg.cond(A, "fro"),
    "cond 1": lambda lib, A: lib.linalg.cond(A, 1),
    "cond nuc": lambda lib, A: lib.linalg.cond(A, "nuc"),
}


@pytest.mark.parametrize("name", list(SPECTRAL))
def test_singular_value_norms_and_cond_of_complex_input(name: str) -> None:
    """The orders made of singular values, and cond, now that the complex SVD exists:
    values against torch, gradients against torch where its backward runs (torch 2.13's
    cond in the entrywise norms fails its own backward on complex input: an in-place
    write), gradcheck and gradgradcheck everywhere."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(31)
    A0 = rng.standard_normal((2, 4, 4)) + 1j * rng.standard_normal((2, 4, 4))
    A = mg.tensor(A0, requires_grad=True)
    out = SPECTRAL[name](mg, A)
    (g,) = mg.autograd.grad(out.sum(), A)
    At = torch.tensor(A0, requires_grad=True)
    outt = SPECTRAL[name](torch, At)
    np.testing.assert_allclose(out.detach().numpy(), outt.detach().numpy(), rtol=1e-12)
    if name.startswith("matrix_norm") or name in ("cond", "cond -2"):
        (gt,) = torch.autograd.grad(outt.sum(), At)
        np.testing.assert_allclose(g.numpy(), gt.numpy(), rtol=0,
                                   atol=1e-11 * np.abs(gt.numpy()).max())
    X = mg.tensor(A0[0], requires_grad=True)
    assert mg.autograd.gradcheck(lambda a: SPECTRAL[name](mg, a), (X,))
    assert mg.autograd.gradgradcheck(lambda a: SPECTRAL[name](mg, a), (X,))


@pytest.mark.parametrize("shape,rank", [((5, 3), 3), ((3, 5), 3), ((4, 4), 4), ((5, 4), 2)])
def test_pinv_and_matrix_rank_of_complex_input(shape, rank) -> None:
    """Full rank through QR (tall and wide), and a cut rank through the complex SVD: the
    values and gradients of torch's pinv, torch's rank; gradcheck and gradgradcheck at full
    rank (at a cut rank differences step off the rank the gradient holds fixed)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(37)
    m, n = shape

    def cm(a, b):
        return rng.standard_normal((a, b)) + 1j * rng.standard_normal((a, b))

    A0 = cm(m, rank) @ cm(rank, n)
    W = cm(n, m)
    A = mg.tensor(A0, requires_grad=True)
    P = mg.linalg.pinv(A)
    (g,) = mg.autograd.grad((P * mg.tensor(W)).real.sum(), A)
    At = torch.tensor(A0, requires_grad=True)
    Pt = torch.linalg.pinv(At)
    (gt,) = torch.autograd.grad((Pt * torch.tensor(W)).real.sum(), At)
    np.testing.assert_allclose(P.detach().numpy(), Pt.detach().numpy(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(g.numpy(), gt.numpy(), rtol=0,
                               atol=1e-10 * np.abs(gt.numpy()).max())
    assert int(mg.linalg.matrix_rank(mg.tensor(A0))) == rank
    if rank < min(m, n):  # off the rank, differences leave the function's domain of rank
        return
    X = mg.tensor(A0, requires_grad=True)
    assert mg.autograd.gradcheck(lambda a: (mg.linalg.pinv(a) * mg.tensor(W)).real.sum(), (X,))
    assert mg.autograd.gradgradcheck(lambda a: (mg.linalg.pinv(a) * mg.tensor(W)).real.sum(),
                                     (X,))


def test_hermitian_pinv_and_rank_of_complex_input() -> None:
    """hermitian=True reads the lower triangle as a Hermitian matrix (a complex diagonal's
    real part): torch's values, and the Hermitian part of torch's gradient (minigrad's is the
    Hermitian one, as for eigh and cholesky; the rest is invisible to Hermitian
    perturbations), at full rank and at rank 2 of 4."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(41)
    for rank in (4, 2):
        B = rng.standard_normal((4, rank)) + 1j * rng.standard_normal((4, rank))
        H0 = B @ np.diag(rng.choice([-1.0, 1.0], rank) * rng.uniform(0.5, 2, rank)) @ B.conj().T
        W = rng.standard_normal((4, 4)) + 1j * rng.standard_normal((4, 4))
        A = mg.tensor(H0, requires_grad=True)
        P = mg.linalg.pinv(A, hermitian=True)
        (g,) = mg.autograd.grad((P * mg.tensor(W)).real.sum(), A)
        At = torch.tensor(H0, requires_grad=True)
        Pt = torch.linalg.pinv(At, hermitian=True)
        (gt,) = torch.autograd.grad((Pt * torch.tensor(W)).real.sum(), At)
        np.testing.assert_allclose(P.detach().numpy(), Pt.detach().numpy(), rtol=0,
                                   atol=1e-12 * np.abs(Pt.detach().numpy()).max())
        gh = (gt.numpy() + gt.numpy().conj().T) / 2
        np.testing.assert_allclose(g.numpy(), gh, rtol=0, atol=1e-10 * np.abs(gh).max())
        assert int(mg.linalg.matrix_rank(mg.tensor(H0), hermitian=True)) == rank
