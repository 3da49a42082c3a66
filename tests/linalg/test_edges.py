"""mg.linalg at its edges, against torch: empty inputs (forward and backward) of every
function, the errors torch raises, non-finite input and float16."""

from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad.linalg import LinAlgError

INF = float("inf")

# (name, f(lib, A, B), [(A's shape, B's shape or None), ...]); f is written once for both
# libraries (lib is minigrad or torch). The shapes are the empty ones torch accepts: an empty
# batch, 0 x 0 matrices, and m x 0 / 0 x n where the function takes non-square input.
SQ = [((0, 3, 3), None), ((0, 0), None), ((2, 0, 0), None)]
RECT = SQ + [((3, 0), None), ((0, 3), None), ((2, 0, 3), None)]
SOLVE = [((0, 3, 3), (0, 3, 2)), ((0, 0), (0, 2)), ((2, 0, 0), (2, 0, 1)), ((0, 0), (0,)),
         ((0, 3, 3), (0, 3))]
LSTSQ = [((0, 3, 3), (0, 3, 2)), ((0, 0), (0, 2)), ((3, 0), (3, 2)), ((0, 3), (0, 2)),
         ((2, 0, 0), (2, 0, 1)), ((0, 3), (0,))]
EMPTY = [
    ("svd", lambda L, A, B: L.linalg.svd(A), RECT),
    ("svd/reduced", lambda L, A, B: L.linalg.svd(A, full_matrices=False), RECT),
    ("svdvals", lambda L, A, B: L.linalg.svdvals(A), RECT),
    ("eigh", lambda L, A, B: L.linalg.eigh(A), SQ),
    ("eigvalsh", lambda L, A, B: L.linalg.eigvalsh(A), SQ),
    ("det", lambda L, A, B: L.linalg.det(A), SQ),
    ("slogdet", lambda L, A, B: L.linalg.slogdet(A), SQ),
    ("mg.logdet", lambda L, A, B: L.logdet(A), SQ),
    ("inv", lambda L, A, B: L.linalg.inv(A), SQ),
    ("cholesky", lambda L, A, B: L.linalg.cholesky(A), SQ),
    ("cholesky/upper", lambda L, A, B: L.linalg.cholesky(A, upper=True), SQ),
    ("qr", lambda L, A, B: L.linalg.qr(A), RECT),
    ("qr/complete", lambda L, A, B: L.linalg.qr(A, mode="complete"), RECT),
    ("qr/r", lambda L, A, B: L.linalg.qr(A, mode="r")[1], RECT),
    ("pinv", lambda L, A, B: L.linalg.pinv(A), RECT),
    ("pinv/hermitian", lambda L, A, B: L.linalg.pinv(A, hermitian=True), SQ),
    ("mg.pinverse", lambda L, A, B: L.pinverse(A), RECT),
    ("matrix_rank", lambda L, A, B: L.linalg.matrix_rank(A), RECT),
    ("matrix_rank/hermitian", lambda L, A, B: L.linalg.matrix_rank(A, hermitian=True), SQ),
    ("cond", lambda L, A, B: L.linalg.cond(A), SQ),
    ("cond/-2", lambda L, A, B: L.linalg.cond(A, -2), SQ),
    ("cond/1", lambda L, A, B: L.linalg.cond(A, 1), SQ),
    ("cond/fro", lambda L, A, B: L.linalg.cond(A, "fro"), SQ),
    ("cond/nuc", lambda L, A, B: L.linalg.cond(A, "nuc"), SQ),
    ("matrix_exp", lambda L, A, B: L.linalg.matrix_exp(A), SQ),
    ("matrix_power/0", lambda L, A, B: L.linalg.matrix_power(A, 0), SQ),
    ("matrix_power/3", lambda L, A, B: L.linalg.matrix_power(A, 3), SQ),
    ("matrix_power/-2", lambda L, A, B: L.linalg.matrix_power(A, -2), SQ),
    ("matrix_norm/fro", lambda L, A, B: L.linalg.matrix_norm(A), RECT),
    ("matrix_norm/nuc", lambda L, A, B: L.linalg.matrix_norm(A, "nuc"), RECT),
    ("nuclear_norm", lambda L, A, B: (L.linalg if L is mg else L).nuclear_norm(A), RECT),
    ("matrix_norm/2", lambda L, A, B: L.linalg.matrix_norm(A, 2), RECT),
    ("matrix_norm/-2", lambda L, A, B: L.linalg.matrix_norm(A, -2), RECT),
    ("matrix_norm/1", lambda L, A, B: L.linalg.matrix_norm(A, 1), RECT),
    ("matrix_norm/-1", lambda L, A, B: L.linalg.matrix_norm(A, -1), RECT),
    ("matrix_norm/inf", lambda L, A, B: L.linalg.matrix_norm(A, INF), RECT),
    ("matrix_norm/-inf", lambda L, A, B: L.linalg.matrix_norm(A, -INF), RECT),
    ("norm", lambda L, A, B: L.linalg.norm(A), RECT + [((0,), None)]),
    ("norm/2", lambda L, A, B: L.linalg.norm(A, 2), [((0, 0), None), ((3, 0), None)]),
    ("norm/dim", lambda L, A, B: L.linalg.norm(A, 1, -1), RECT),
    ("vector_norm", lambda L, A, B: L.linalg.vector_norm(A), RECT + [((0,), None)]),
    ("vector_norm/3", lambda L, A, B: L.linalg.vector_norm(A, 3, -1), RECT),
    ("vector_norm/inf", lambda L, A, B: L.linalg.vector_norm(A, INF, -1), RECT),
    ("vector_norm/-inf", lambda L, A, B: L.linalg.vector_norm(A, -INF, -2), RECT),
    ("solve", lambda L, A, B: L.linalg.solve(A, B), SOLVE),
    ("solve/right", lambda L, A, B: L.linalg.solve(A, B.mT, left=False), SOLVE[:3]),
    ("solve_triangular", lambda L, A, B: L.linalg.solve_triangular(A, B, upper=True),
     SOLVE[:3]),
    ("solve_triangular/lower-right",
     lambda L, A, B: L.linalg.solve_triangular(A, B.mT, upper=False, left=False), SOLVE[:3]),
    ("lstsq", lambda L, A, B: L.linalg.lstsq(A, B).solution, LSTSQ),
    ("lstsq/gelsd", lambda L, A, B: L.linalg.lstsq(A, B, driver="gelsd"), LSTSQ),
    ("multi_dot", lambda L, A, B: L.linalg.multi_dot([A, B, A.mT]),
     [((0, 3), (3, 3)), ((3, 0), (0, 0)), ((0, 0), (0, 2)), ((2, 0), (0, 4))]),
    ("multi_dot/vectors", lambda L, A, B: L.linalg.multi_dot([A, B, A]),
     [((0,), (0, 0)), ((3,), (3, 0))]),
    ("cross", lambda L, A, B: L.linalg.cross(A, B), [((0, 3), (0, 3)), ((2, 0, 3), (2, 0, 3))]),
    ("cross/broadcast", lambda L, A, B: L.linalg.cross(A, B), [((0, 3), (1, 3))]),
    ("vecdot", lambda L, A, B: L.linalg.vecdot(A, B), [((0, 3), (0, 3)), ((2, 0), (2, 0))]),
    ("matmul", lambda L, A, B: L.linalg.matmul(A, B), [((0, 3), (3, 2)), ((2, 0), (0, 3))]),
    ("diagonal", lambda L, A, B: L.linalg.diagonal(A), RECT),
    ("inv_ex", lambda L, A, B: L.linalg.inv_ex(A), SQ),
    ("solve_ex", lambda L, A, B: L.linalg.solve_ex(A, B), SOLVE),
    ("cholesky_ex", lambda L, A, B: L.linalg.cholesky_ex(A), SQ),
    ("lu_factor", lambda L, A, B: L.linalg.lu_factor(A), SQ),
    ("lu_factor_ex", lambda L, A, B: L.linalg.lu_factor_ex(A), SQ),
    ("lu", lambda L, A, B: L.linalg.lu(A), SQ),
    ("lu_solve", lambda L, A, B: L.linalg.lu_solve(*L.linalg.lu_factor(A), B), SOLVE[:3]),
    ("householder_product", lambda L, A, B: L.linalg.householder_product(A, B),
     [((0, 3, 2), (0, 2)), ((3, 0), (0,)), ((2, 3, 2), (2, 0))]),
    ("mg.svd", lambda L, A, B: L.svd(A), RECT),
    ("mg.svd/no-uv", lambda L, A, B: L.svd(A, compute_uv=False)[1], RECT),
    ("mg.cholesky", lambda L, A, B: L.cholesky(A), SQ),
    ("mg.qr", lambda L, A, B: L.qr(A), RECT),
]
EMPTY_CASES = [pytest.param(f, a, b, id=f"{name}-{a}-{b}") for name, f, shapes in EMPTY
               for a, b in shapes]


def _kind(err: BaseException) -> type:
    """The builtin exception class an error is (LinAlgError is a RuntimeError in both)."""
    return next(c for c in type(err).__mro__ if c.__module__ == "builtins")


def _run(lib, f, a_shape, b_shape):
    """f's float outputs and the gradients of their sum (None: no path to that input), or
    the error forward raised."""
    args = [lib.zeros(s, dtype=lib.float64, requires_grad=True) if s is not None else None
            for s in (a_shape, b_shape)]
    try:
        out = f(lib, *args)
    except Exception as e:  # noqa: BLE001 - compared with the other library's
        return e, None, None
    outs = out if isinstance(out, tuple) else (out,)
    floats = [o for o in outs if o.dtype == lib.float64]
    inputs = [t for t in args if t is not None]
    if not floats:  # matrix_rank
        return None, outs, [lib.zeros(t.shape) for t in inputs]
    try:
        grads = lib.autograd.grad(sum(o.sum() for o in floats), inputs, allow_unused=True)
    except RuntimeError as e:
        grads = e
    return None, outs, grads


@pytest.mark.filterwarnings("ignore:.*is deprecated:UserWarning")
@pytest.mark.parametrize("f, a_shape, b_shape", EMPTY_CASES)
def test_empty_input_forward_and_backward(f, a_shape, b_shape):
    """Every function on empty input: what torch returns (shapes, dtypes, values) or the
    kind of error it raises; the backward gives zeros of each input's shape (torch too, or
    no gradient at all where its output does not require grad)."""
    err, outs, grads = _run(mg, f, a_shape, b_shape)
    shapes = [s for s in (a_shape, b_shape) if s is not None]
    if err is None:
        assert not isinstance(grads, Exception), grads
        for g, shape in zip(grads, shapes):
            assert g is not None and g.shape == shape and not g.numpy().any()
    torch = pytest.importorskip("torch")
    t_err, t_outs, t_grads = _run(torch, f, a_shape, b_shape)
    if t_err is not None or err is not None:
        assert err is not None and t_err is not None, (err, t_err)
        assert _kind(err) is _kind(t_err), (err, t_err)
        return
    assert len(outs) == len(t_outs)
    for o, t in zip(outs, t_outs):
        assert o.shape == tuple(t.shape) and o.dtype == str(t.dtype).split(".")[-1]
        np.testing.assert_array_equal(o.detach().numpy(), t.detach().numpy())
    if not isinstance(t_grads, Exception):  # torch refuses qr's complete and "r" modes
        for tg, shape in zip(t_grads, shapes):
            assert tg is None or (tuple(tg.shape) == shape and not tg.numpy().any())


def test_the_empty_table_covers_every_linalg_function():
    functions = {n for n in mg.linalg.__all__ if callable(getattr(mg.linalg, n))
                 and not isinstance(getattr(mg.linalg, n), type)} - {"tie_policy"}
    assert functions <= {name.split("/")[0] for name, _, _ in EMPTY}


def test_matrix_power_0_is_the_identity_with_a_zero_gradient():
    """torch: I for any A (a NaN in A too), still a function of A whose gradient is 0."""
    a = np.array([[np.nan, 2.0], [3.0, 4.0]])
    A = mg.tensor(a, requires_grad=True)
    P = mg.linalg.matrix_power(A, 0)
    np.testing.assert_array_equal(P.detach().numpy(), np.eye(2))
    (P * mg.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    np.testing.assert_array_equal(A.grad.numpy(), np.zeros((2, 2)))
    torch = pytest.importorskip("torch")
    tA = torch.tensor(a, requires_grad=True)
    tP = torch.linalg.matrix_power(tA, 0)
    (tP * torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64)).sum().backward()
    np.testing.assert_array_equal(P.detach().numpy(), tP.detach().numpy())
    np.testing.assert_array_equal(A.grad.numpy(), tA.grad.numpy())


_INTS = [[1, 2], [3, 4]]
# (id, f(lib), the kind of error torch raises): torch's error kinds where minigrad differed.
ERRORS = [
    ("svd/int", lambda L: L.linalg.svd(L.tensor(_INTS)), RuntimeError),
    ("svdvals/int", lambda L: L.linalg.svdvals(L.tensor(_INTS)), RuntimeError),
    ("svd/1-d", lambda L: L.linalg.svd(L.ones(3)), RuntimeError),
    ("svdvals/1-d", lambda L: L.linalg.svdvals(L.ones(3)), RuntimeError),
    *[(f"matrix_norm/int/{o}", lambda L, o=o: L.linalg.matrix_norm(L.tensor(_INTS), o),
       RuntimeError) for o in ("fro", "nuc", 2, -2, 1, -1, INF, -INF)],
    *[(f"norm/int/{o}", lambda L, o=o: L.linalg.norm(L.tensor(_INTS), o), RuntimeError)
      for o in ("nuc", 2, -2, 1, -INF)],
    ("multi_dot/mixed dtypes", lambda L: L.linalg.multi_dot([L.tensor(_INTS), L.eye(2)]),
     RuntimeError),
    ("norm/repeated dims", lambda L: L.linalg.norm(L.ones(2, 3, 4), None, (-3, 0)),
     RuntimeError),
    ("vector_norm/repeated dims", lambda L: L.linalg.vector_norm(L.ones(2, 3), 2, (0, -2)),
     RuntimeError),
    ("sum/repeated dims", lambda L: L.ones(2, 3).sum((1, -1)), RuntimeError),
    ("matrix_rank/tol and rtol", lambda L: L.linalg.matrix_rank(L.eye(2), tol=0.1, rtol=0.1),
     TypeError),
    ("matrix_rank/tol and atol", lambda L: L.linalg.matrix_rank(L.eye(2), 0.1, atol=0.1),
     TypeError),
    ("outer/2-d self", lambda L: L.outer(L.ones(2, 2), L.ones(2)), RuntimeError),
    ("outer/2-d vec2", lambda L: L.ones(2).outer(L.ones(1, 2)), RuntimeError),
    ("ger/0-d", lambda L: L.ger(L.ones(()), L.ones(2)), RuntimeError),
    ("eigh/UPLO", lambda L: L.linalg.eigh(L.eye(2), UPLO="X"), RuntimeError),
]


@pytest.mark.parametrize("f, kind", [pytest.param(f, k, id=i) for i, f, k in ERRORS])
def test_errors_of_torchs_kind(f, kind):
    with pytest.raises(kind):
        f(mg)
    torch = pytest.importorskip("torch")
    with pytest.raises(kind):
        f(torch)


def test_multi_dot_of_integers_as_torch():
    a, b, c = np.arange(6).reshape(2, 3), np.arange(12).reshape(3, 4), np.arange(4)
    out = mg.linalg.multi_dot([mg.tensor(a), mg.tensor(b), mg.tensor(c)])
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out.numpy(), a @ b @ c)
    torch = pytest.importorskip("torch")
    t = torch.linalg.multi_dot([torch.tensor(a), torch.tensor(b), torch.tensor(c)])
    np.testing.assert_array_equal(out.numpy(), t.numpy())


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_uplo_in_either_case(uplo):
    a = np.array([[2.0, 9.0], [1.0, 3.0]])  # the triangles differ: UPLO decides
    A = mg.tensor(a)
    w = mg.linalg.eigvalsh(A, UPLO=uplo.lower())
    np.testing.assert_array_equal(w.numpy(), mg.linalg.eigvalsh(A, UPLO=uplo).numpy())
    np.testing.assert_array_equal(mg.linalg.eigh(A, UPLO=uplo.lower()).eigenvalues.numpy(),
                                  w.numpy())
    torch = pytest.importorskip("torch")
    t = torch.linalg.eigvalsh(torch.tensor(a), UPLO=uplo.lower())
    np.testing.assert_allclose(w.numpy(), t.numpy(), rtol=1e-12)


def test_cond_of_the_zero_matrix_is_nan_in_the_singular_value_norms():
    """0 / 0 for 2, -2 and "nuc" (inf in the others, as for any singular matrix), batched
    beside regular and singular matrices; a loss that uses the nan has no gradient."""
    a = np.stack([np.zeros((2, 2)), np.diag([2.0, 0.0]), np.diag([2.0, 0.5])])
    ords = [None, 2, -2, "nuc", "fro", 1, -1, INF, -INF]
    got = {p: mg.linalg.cond(mg.tensor(a), p).numpy() for p in ords}
    for p in (None, 2, -2, "nuc"):
        assert np.isnan(got[p][0])
    for p in ("fro", 1, -1, INF, -INF):
        assert got[p][0] == INF
    A = mg.tensor(a, requires_grad=True)
    with pytest.raises(LinAlgError, match="zero"):
        mg.linalg.cond(A, -2).sum().backward()
    A.grad = None
    mg.linalg.cond(A, -2)[2].backward()  # the regular matrix alone: a gradient
    assert np.isfinite(A.grad.numpy()).all() and A.grad.numpy()[:2].sum() == 0
    torch = pytest.importorskip("torch")
    for p in ords:
        np.testing.assert_allclose(got[p], torch.linalg.cond(torch.tensor(a), p).numpy(),
                                   rtol=1e-12)


_NAN = float("nan")
# Symmetric positive definite but for one non-finite entry in the triangle read (lower):
# LAPACK's potrf (torch) stops at the first leading minor that is not positive, NaN there.
_NOT_PD = [([[_NAN, 0.0], [0.0, 1.0]], 1), ([[4.0, _NAN], [_NAN, 3.0]], 2),
           ([[4.0, 1.0], [1.0, _NAN]], 2), ([[4.0, 0.0], [INF, 3.0]], 2)]


@pytest.mark.parametrize("a, order", _NOT_PD)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_of_a_nan_raises_as_torch(a, order, upper):
    a = np.array(a)
    a = a.T if upper else a  # the same entries, in the triangle upper=True reads
    batch = np.stack([np.eye(2), a])
    with pytest.raises(LinAlgError, match=rf"\(Batch element 1\).*leading minor of order "
                                          rf"{order} is not"):
        mg.linalg.cholesky(mg.tensor(batch), upper=upper)
    torch = pytest.importorskip("torch")
    with pytest.raises(torch.linalg.LinAlgError, match=f"order {order} is not"):
        torch.linalg.cholesky(torch.tensor(batch), upper=upper)


def test_cholesky_ignores_the_triangle_it_does_not_read():
    a = np.array([[4.0, _NAN], [2.0, 3.0]])
    L = mg.linalg.cholesky(mg.tensor(a))
    np.testing.assert_allclose(L.numpy(), np.linalg.cholesky(np.tril(a) + np.tril(a, -1).T))
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(L.numpy(), torch.linalg.cholesky(torch.tensor(a)).numpy())


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("where", ["A", "B"])
@pytest.mark.parametrize("value", [_NAN, INF])
def test_lstsq_refuses_non_finite_input(driver, where, value):
    """As svd and eigh do (torch's drivers stop with an error too), not numpy's "SVD did not
    converge" for A nor a silent NaN solution for B."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 4, 2))
    (a if where == "A" else b)[1, 2, 1] = value
    with pytest.raises(LinAlgError, match=rf"\(Batch element 1\).*{where} is not finite"):
        mg.linalg.lstsq(mg.tensor(a), mg.tensor(b), driver=driver)
    torch = pytest.importorskip("torch")
    if value != value:  # NaN (torch lets some infinities through, as svd and eigh do not)
        with pytest.raises(RuntimeError):
            torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)


_SPD = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.25], [0.5, 0.25, 2.0]])  # exact in float16
_B = np.array([[1.0, 0.5], [2.0, -1.0], [3.0, 0.25]])
# f(A, B): every linalg function that uses LAPACK or the kernels (which have no float16).
HALF = {
    "det": lambda A, B: mg.linalg.det(A),
    "slogdet": lambda A, B: mg.linalg.slogdet(A),
    "logdet": lambda A, B: mg.logdet(A),
    "inv": lambda A, B: mg.linalg.inv(A),
    "solve": lambda A, B: mg.linalg.solve(A, B),
    "solve_triangular": lambda A, B: mg.linalg.solve_triangular(A, B, upper=True),
    "lstsq": lambda A, B: mg.linalg.lstsq(A, B, driver="gelsd"),
    "qr": lambda A, B: mg.linalg.qr(A),
    "cholesky": lambda A, B: mg.linalg.cholesky(A),
    "pinv": lambda A, B: mg.linalg.pinv(A),
    "pinv/hermitian": lambda A, B: mg.linalg.pinv(A, hermitian=True),
    "matrix_rank": lambda A, B: mg.linalg.matrix_rank(A),
    "cond": lambda A, B: mg.linalg.cond(A),
    "cond/1": lambda A, B: mg.linalg.cond(A, 1),
    "matrix_power/-2": lambda A, B: mg.linalg.matrix_power(A, -2),
    "svd": lambda A, B: mg.linalg.svd(A),
    "svdvals": lambda A, B: mg.linalg.svdvals(A),
    "eigh": lambda A, B: mg.linalg.eigh(A),
    "eigvalsh": lambda A, B: mg.linalg.eigvalsh(A),
    "matrix_exp": lambda A, B: mg.linalg.matrix_exp(A),
    "matrix_norm/2": lambda A, B: mg.linalg.matrix_norm(A, 2),
}


def _outputs(out):
    return list(out) if isinstance(out, tuple) else [out]


@pytest.mark.parametrize("name", list(HALF))
def test_float16_is_computed_in_float32_and_returned_as_float16(name):
    """One policy for all: float16 in, float16 out (float outputs), differentiable, with the
    float64 answer's values to float16's precision."""
    f = HALF[name]
    A = mg.tensor(_SPD.astype(np.float16), requires_grad=True)
    B = mg.tensor(_B.astype(np.float16), requires_grad=True)
    outs = _outputs(f(A, B))
    A64 = mg.tensor(_SPD, requires_grad=True)
    B64 = mg.tensor(_B, requires_grad=True)
    refs = _outputs(f(A64, B64))
    eps = float(np.finfo(np.float16).eps)
    floats = []
    for o, r in zip(outs, refs):
        if r.dtype == np.float64:
            assert o.dtype is mg.float16
            floats.append((o, r))
        else:
            assert o.dtype == r.dtype
        x, y = o.detach().numpy().astype(np.float64), r.detach().numpy()
        np.testing.assert_allclose(x, y, rtol=0, atol=4 * eps * np.abs(y).max(initial=1))
    if name in ("matrix_rank", "svd", "eigh"):  # no float output / sign-dependent vectors
        return
    weights = [np.linspace(0.5, 1.5, r.numel()).reshape(r.shape) for _, r in floats]
    loss = sum((o * mg.tensor(w.astype(np.float16))).sum() for (o, _), w in zip(floats, weights))
    loss64 = sum((r * mg.tensor(w)).sum() for (_, r), w in zip(floats, weights))
    grads = mg.autograd.grad(loss, [A, B], allow_unused=True)
    grads64 = mg.autograd.grad(loss64, [A64, B64], allow_unused=True)
    for g, g64 in zip(grads, grads64):
        assert (g is None) == (g64 is None)
        if g is not None:
            assert g.dtype is mg.float16
            y = g64.numpy()
            np.testing.assert_allclose(g.numpy().astype(np.float64), y, rtol=0,
                                       atol=16 * eps * np.abs(y).max(initial=1))


def test_float16_results_beyond_its_range_raise():
    A = mg.tensor(np.diag([300.0, 300.0, 300.0]).astype(np.float16))
    with pytest.raises(LinAlgError, match="cannot be represented in float16"):
        mg.linalg.det(A)  # 2.7e7
    assert mg.linalg.slogdet(A).logabsdet.dtype is mg.float16  # log fits


def test_float16_beside_float32_promotes_to_float32():
    A = mg.tensor(_SPD.astype(np.float16))
    X = mg.linalg.solve(A, mg.tensor(_B.astype(np.float32)))
    assert X.dtype is mg.float32
    np.testing.assert_allclose(X.numpy(), np.linalg.solve(_SPD, _B), rtol=1e-5)


def test_check_fits_past_the_small_case():
    """check_fits beyond 16 values (a batch's or a wide matrix's, read by their largest):
    a value past the dtype's range or a NaN anywhere raises; values within it do not."""
    from minigrad.linalg._svd_checks import check_fits

    ok = np.linspace(3e38, 1.0, 40)
    check_fits(ok, np.dtype(np.float32))
    check_fits(ok.reshape(2, 20), np.dtype(np.float32))
    for bad in (np.concatenate([[4e38], ok[1:]]), np.concatenate([ok[:7], [np.nan], ok[8:]])):
        for s in (bad, bad.reshape(2, 20)):
            with pytest.raises(LinAlgError, match="cannot be represented in float32"):
                check_fits(s, np.dtype(np.float32))
