"""One small matrix per call (issue 29): a call that records nothing skips the node, the plan
and the batch machinery (svd, svdvals, eigh, inv, solve, det), with the recorded path's
numbers, its errors, and its gradients when an input requires grad."""

import importlib

import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd import gradcheck
from minigrad.linalg import LinAlgError, _svd_batch, _svd_forward, _threads

# (mg.linalg.svd and its kin are the functions: their modules by name)
det_module, eigh_module, solve_module, svd_module = (
    importlib.import_module(f"minigrad.linalg.{m}") for m in ("det", "eigh", "solve", "svd"))

L = mg.linalg


def rand(*shape, seed=0, grad=False):
    return mg.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=grad)


def _boom(*args, **kwargs):
    raise AssertionError("the unrecorded path ran the recorded one")


@pytest.mark.parametrize("op", ["svd", "svdvals", "eigh", "inv", "solve"])
def test_unrecorded_call_makes_no_node_and_matches_the_recorded_one(op, monkeypatch):
    A = rand(3, 3, seed=1)
    b = rand(3, seed=2)
    run = {"svd": lambda a: L.svd(a, full_matrices=False),
           "svdvals": L.svdvals,
           "eigh": lambda a: L.eigh(a @ a.mT),
           "inv": L.inv,
           "solve": lambda a: L.solve(a, b)}[op]
    recorded = run(mg.tensor(A.numpy(), requires_grad=True))
    for cls in (svd_module._SVD, eigh_module._Eigh, solve_module._Inv, solve_module._Solve):
        monkeypatch.setattr(cls, "apply", _boom)
    with mg.no_grad():  # grad mode off records nothing either
        quiet = run(mg.tensor(A.numpy(), requires_grad=True))
    plain = run(A)
    for got in (quiet, plain):
        for r, g in zip(*(x if isinstance(x, tuple) else (x,) for x in (recorded, got))):
            assert g.grad_fn is None and not g.requires_grad
            np.testing.assert_array_equal(g.numpy(), r.detach().numpy())


@pytest.mark.parametrize("shape", [(3, 3), (2, 3), (4, 3), (3, 4), (2, 2), (8, 4)])
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lone_tiny_svd_is_the_batch_paths(shape, full, dtype, monkeypatch):
    a = np.random.default_rng(3).standard_normal(shape).astype(dtype)
    want = _first_calls(a, full, monkeypatch)
    if _svd_batch._lanes(*shape, full, True):  # later calls go straight to the kernel
        monkeypatch.setattr(_threads, "run", _boom)
    _same_as(a, full, want)


def _first_calls(a: np.ndarray, full: bool, monkeypatch) -> tuple:
    """The batch path's SVD and values of a[None], then a's own first calls (which take the
    batch path too), in a fresh process where the kernels' compile notice has been printed
    (once it was, the lone path was never taken)."""
    monkeypatch.setattr(_svd_forward, "_ran", set())
    monkeypatch.setattr(_svd_forward, "_noticed", {"float32", "float64"})
    want = _svd_forward.svd_forward(a[None], full)  # the batch path (also loads the kernel)
    vals = _svd_forward.svd_forward(a[None], full, False)
    _svd_forward.svd_forward(a, full)  # the lone call's first run: the batch path
    _svd_forward.svd_forward(a, full, False)
    return want, vals


def _same_as(a: np.ndarray, full: bool, want: tuple) -> None:
    """a's lone SVD and values are bit for bit the batch path's (_first_calls')."""
    got = _svd_forward.svd_forward(a, full)
    for g, w in zip(got, want[0]):
        assert g.dtype == w.dtype == a.dtype
        np.testing.assert_array_equal(g, w[0])
    _, s, _ = _svd_forward.svd_forward(a, full, False)
    np.testing.assert_array_equal(s, want[1][1][0])


@pytest.mark.parametrize("shape", [(60, 40), (40, 60), (9, 5), (12, 12)])
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lone_small_svd_goes_straight_to_the_general_kernels(shape, full, dtype, monkeypatch,
                                                             jacobi_only):
    """Past the lanes' sizes and below the Gram start's, one matrix's later calls skip the
    plan and the batch driver (robust PCA's 60 x 40 SVD per iteration), with its numbers
    (float64 values alone: where the columns are graded, else gesdd's, _svd_lapack.py)."""
    a = np.random.default_rng(5).standard_normal(shape).astype(dtype)
    a[:, 1] = a[:, 0]  # rank deficient: U's column to complete (the kernel's complete)
    want = _first_calls(a, full, monkeypatch)
    monkeypatch.setattr(_svd_forward, "_svd_batched", _boom)
    _same_as(a, full, want)
    bad = a.copy()
    bad[2, 3] = np.inf
    with pytest.raises(LinAlgError, match=r"not finite \(contains NaN or Inf\)$"):
        _svd_forward.svd_forward(bad, full)
    with pytest.raises(LinAlgError, match="did not converge in 1 sweeps; raise"):
        _svd_forward.svd_forward(a, full, max_sweeps=1)
    if dtype == np.float32:  # (s in float64, too large for float32)
        with pytest.raises(LinAlgError, match="cannot be represented in float32"):
            _svd_forward.svd_forward(np.full(shape, 3e38, dtype), full, False)


@pytest.mark.parametrize("a", [np.zeros((3, 3)), np.ones((3, 3)), np.ones((4, 3)),
                               np.diag([2.0, 2.0, 0.0])])
def test_lone_tiny_svd_of_rank_deficient_matrices(a):
    """The lanes hand such matrices back (a zero singular value): the general kernel's."""
    for _ in range(2):  # the second call takes the lone path
        u, s, vh = _svd_forward.svd_forward(a, False)
        np.testing.assert_allclose((u * s) @ vh, a, atol=1e-14)
        np.testing.assert_allclose(u.T @ u, np.eye(u.shape[1]), atol=1e-14)
        np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), atol=1e-14)


def test_lone_tiny_errors_are_the_batch_paths():
    _svd_forward.svd_forward(np.eye(3), False)
    bad = np.eye(3)
    bad[1, 2] = np.nan
    for fn in (lambda: L.svd(mg.tensor(bad)), lambda: L.svdvals(mg.tensor(bad))):
        with pytest.raises(LinAlgError, match=r"not finite \(contains NaN or Inf\)$"):
            fn()
    with pytest.raises(LinAlgError, match="cannot be represented in float32"):
        L.svdvals(mg.tensor(np.full((3, 3), 3e38, np.float32)))
    with pytest.raises(LinAlgError, match="not finite"):
        L.eigh(mg.tensor(bad.T))
    with pytest.raises(TypeError, match="max_sweeps must be an integer"):
        L.svd(mg.tensor(np.eye(3)), max_sweeps=2.0)
    with pytest.raises(RuntimeError, match="Expected a floating point tensor"):
        L.svd(mg.tensor(np.eye(3, dtype=np.int64)))
    with pytest.raises(RuntimeError, match="must be batches of square matrices"):
        L.inv(mg.tensor(np.ones((2, 3))))
    with pytest.raises(LinAlgError, match="The diagonal element 2 is zero"):
        L.inv(mg.tensor(np.ones((3, 3))))
    with pytest.raises(LinAlgError, match="the input matrix is singular"):
        L.solve(mg.tensor(np.ones((3, 3))), mg.tensor(np.ones(3)))
    with pytest.raises(RuntimeError, match=r"Incompatible shapes .* \(3x3 and 2x1\)"):
        L.solve(mg.tensor(np.eye(3)), mg.tensor(np.ones(2)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_one_matrix_det_is_numpys(dtype):
    # (5x5: 2x2 to 4x4 take the closed forms, tests/linalg/test_small_closed_forms.py)
    a = np.random.default_rng(4).standard_normal((5, 5)).astype(dtype)
    d = L.det(mg.tensor(a))
    assert d.shape == () and d.dtype == dtype
    np.testing.assert_array_equal(d.numpy(), np.linalg.det(a))
    assert L.det(mg.tensor(np.zeros((0, 0)))).item() == 1.0
    np.testing.assert_array_equal(det_module._lapack_det(a), np.linalg.det(a))


@pytest.mark.parametrize("vector", [True, False])
def test_one_matrix_solve_shapes_and_dtypes(vector):
    a = np.random.default_rng(5).standard_normal((3, 3))
    b = np.random.default_rng(6).standard_normal(3 if vector else (3, 2)).astype(np.float32)
    x = L.solve(mg.tensor(a), mg.tensor(b))
    assert x.shape == b.shape and x.dtype == np.float64
    np.testing.assert_allclose(a @ x.numpy(), b, atol=1e-6)


@pytest.mark.parametrize("fn", [
    lambda a: L.svd(a, full_matrices=False)[0].sum() + L.svd(a)[1].sum(),
    lambda a: L.svdvals(a),
    lambda a: L.eigh(a + a.mT)[1].abs().sum() + L.eigh(a + a.mT)[0].sum(),
    L.inv, L.det,
    lambda a: L.solve(a, mg.tensor(np.arange(3.0))),
], ids=["svd", "svdvals", "eigh", "inv", "det", "solve"])
def test_one_matrix_gradients(fn):
    A = mg.tensor(np.array([[2.0, 0.3, -0.5], [0.1, 1.0, 0.4], [0.7, -0.2, 3.0]]),
                  requires_grad=True)
    assert gradcheck(fn, [A])


class _Spy:
    """A family's entry points, each look-up counted (the per-call type look is there)."""

    def __init__(self, inner):
        self.inner, self.looked = inner, []

    def __getattr__(self, name):
        self.looked.append(name)
        return getattr(self.inner, name)


@pytest.mark.parametrize("op", ["svd", "svdvals", "eigh"])
def test_lone_tiny_calls_go_straight_to_the_compiled_kernel(op, monkeypatch):
    """After the first call, a lone 3x3 calls its kernel's compiled function for those
    argument types directly (kernel_registry.exact): no look-up through the family, no look
    at the types; a new choice of kernels for the family is followed."""
    from minigrad import _kernel_registry as registry

    family = "eigh" if op == "eigh" else "jacobi"
    a = np.random.default_rng(7).standard_normal((3, 3))
    run = {"svd": lambda x: L.svd(x, full_matrices=False), "svdvals": L.svdvals,
           "eigh": lambda x: L.eigh(x @ x.mT)}[op]
    want = run(mg.tensor(a))
    spy = _Spy(registry.kernels(family))
    monkeypatch.setitem(registry._chosen, family, spy)
    for _ in range(3):
        got = run(mg.tensor(a))
    for g, w in zip(*(x if isinstance(x, tuple) else (x,) for x in (got, want))):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    assert spy.looked == []
    entry = next(f for (n, _, _), (_, f) in registry._exact.items() if n == family)
    assert not hasattr(entry, "overloads")  # numba's compiled function, not its dispatcher


@pytest.mark.parametrize("shape", [(60, 40), (20, 30), (2, 12, 10)])
def test_general_kernel_calls_go_straight_to_the_compiled_kernels(shape, monkeypatch):
    """The general batch kernel's sweeps and finish (a lone 60x40 of robust PCA, a wide one,
    a small batch): after a kind's first call, called as compiled for those argument types
    (kernel_registry.exact), with no per-call look at them through the family."""
    from minigrad import _kernel_registry as registry

    a = np.random.default_rng(8).standard_normal(shape)
    want = L.svd(mg.tensor(a), full_matrices=False)
    spy = _Spy(registry.kernels("jacobi"))
    monkeypatch.setitem(registry._chosen, "jacobi", spy)
    for _ in range(2):
        got = L.svd(mg.tensor(a), full_matrices=False)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    assert not {"sweeps", "finish"} & set(spy.looked)
