"""svd_forward's LAPACK route (_svd_lapack.py): the values alone of one float64 matrix
whose columns are not graded come from gesdd; graded ones, and every other call, keep the
Jacobi sweeps."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.linalg import _svd_lapack
from minigrad.linalg._svd_forward import svd_forward
from minigrad.linalg.errors import LinAlgError

from .test_svd_kernels import C, mp_singular_values


@pytest.fixture
def gesdd_calls(monkeypatch):
    """The shapes numpy's SVD was called on, while the test runs."""
    calls = []
    inner = np.linalg.svd

    def spy(a, *args, **kwargs):
        calls.append(a.shape)
        return inner(a, *args, **kwargs)

    monkeypatch.setattr(np.linalg, "svd", spy)
    return calls


@pytest.mark.parametrize("shape", [(60, 40), (40, 60), (5, 5), (100, 100)])
def test_the_values_of_a_matrix_that_is_not_graded_come_from_gesdd(gesdd_calls, shape):
    """svdvals of robust PCA's 60 x 40 (and the like): gesdd's values, bit for bit; an SVD
    with vectors keeps the sweeps (gesdd was no faster on robust PCA's iterates)."""
    a = np.random.default_rng(1).standard_normal(shape)
    _, s, _ = svd_forward(a, False, False)
    assert gesdd_calls == [shape]
    np.testing.assert_array_equal(s, np.linalg.svd(a, compute_uv=False))
    gesdd_calls.clear()
    np.testing.assert_array_equal(mg.linalg.svdvals(mg.tensor(a)).numpy(), s)
    assert gesdd_calls == [shape]
    gesdd_calls.clear()
    _, s2, _ = svd_forward(a, False)
    assert not gesdd_calls
    np.testing.assert_allclose(s2, s, rtol=0, atol=C * 100 * np.finfo(np.float64).eps * s[0])


def test_graded_columns_keep_the_sweeps_and_their_relative_accuracy(gesdd_calls):
    """Columns graded over 14 decades (in no order): the sweeps' values keep their relative
    accuracy (eps cond(A D^-1)); gesdd's lose it (~1e-3 on the smallest), which is why
    the route refuses them."""
    rng = np.random.default_rng(33)
    a = rng.standard_normal((64, 64)) * rng.permutation(np.logspace(0, -14, 64))
    ref = mp_singular_values(a)
    bound = C * 64 * np.finfo(np.float64).eps * np.linalg.cond(a / np.linalg.norm(a, axis=0))
    s = svd_forward(a, False, False)[1]
    assert not gesdd_calls
    assert np.max(np.abs(s - ref) / ref) <= bound
    lapack = np.linalg.svd(a, compute_uv=False)
    assert np.max(np.abs(lapack - ref) / ref) > 100 * bound


def test_the_gate_bounds_gesdds_error_by_jacobis(gesdd_calls):
    """Column and row norms within a factor 10 (a matrix that is not graded, its spectrum
    falling to 1e-12): gesdd's values, within eps s_1 of the truth, which is within 10x
    Jacobi's bound eps cond(A D^-1) s_j for every s_j."""
    rng = np.random.default_rng(7)
    q1, _ = np.linalg.qr(rng.standard_normal((48, 48)))
    q2, _ = np.linalg.qr(rng.standard_normal((48, 48)))
    a = (q1 * np.logspace(0, -12, 48)) @ q2.T
    s = svd_forward(a, False, False)[1]
    assert gesdd_calls == [(48, 48)]
    ref = mp_singular_values(a)
    assert np.all(np.abs(s - ref) <= C * 48 * np.finfo(np.float64).eps * ref[0])


def _flat_columns(a_of_rng, seed):
    """The first a_of_rng(rng) whose tall orientation has column norms within 10x."""
    rng = np.random.default_rng(seed)
    while True:
        a = a_of_rng(rng)
        x = a if a.shape[0] >= a.shape[1] else a.T
        d = np.linalg.norm(x, axis=0)
        if d.max() <= 10 * d.min():
            return a


@pytest.mark.parametrize("shape", [(30, 30), (60, 40), (40, 41)])
def test_row_graded_values_keep_jacobis_relative_accuracy(gesdd_calls, shape):
    """Rows of the tall orientation graded over 14 decades (weighted rows; for a wide
    matrix its columns), its column norms flat: Jacobi's right rotations never mix rows,
    so its values are relatively accurate to ~eps cond(D_r^-1 A); gesdd's only to eps s_1
    (2e-8 to 7e-3 here: found in review). The rows' gate refuses them."""
    m, n = shape

    def graded(rng):
        g = rng.standard_normal(shape)
        if m >= n:
            return rng.permutation(10.0 ** -np.linspace(0, 14, m))[:, None] * g
        return g * rng.permutation(10.0 ** -np.linspace(0, 14, n))

    a = _flat_columns(graded, 5)
    x = a if m >= n else a.T
    rows = np.linalg.norm(x, axis=1)[:, None]
    bound = C * max(m, n) * np.finfo(np.float64).eps * np.linalg.cond(x / rows)
    ref = mp_singular_values(a)
    s = svd_forward(a, False, False)[1]
    assert not gesdd_calls
    assert np.max(np.abs(s - ref) / ref) <= bound


@pytest.mark.parametrize(("side", "spread", "taken"), [("columns", 5.0, True),
                                                       ("columns", 20.0, False),
                                                       ("rows", 5.0, True),
                                                       ("rows", 20.0, False)])
def test_the_gates_factor(gesdd_calls, side, spread, taken):
    """Norms spread 5x pass the gates, 20x do not (the factor _GRADED = 10)."""
    rng = np.random.default_rng(8)
    q1, _ = np.linalg.qr(rng.standard_normal((60, 60)))
    q2, _ = np.linalg.qr(rng.standard_normal((40, 40)))
    a = q1[:, :40] @ q2.T  # orthonormal columns: every column norm 1, rows near-flat
    w = np.linspace(1.0, spread, 40 if side == "columns" else 60)
    a = a * w if side == "columns" else a * w[:, None]
    d = np.linalg.norm(a, axis=0 if side == "columns" else 1)
    assert np.isclose(d.max() / d.min(), spread, rtol=0.5)  # (the rows' own spread ~1.3x)
    svd_forward(a, False, False)
    assert gesdd_calls == ([(60, 40)] if taken else [])


def test_an_exactly_singular_matrix_keeps_its_zeros(gesdd_calls):
    """A column twice another: gesdd's least value lies at rounding (~1e-16 s_1), so the
    sweeps' exact zero stands, and cond is inf with or without a gradient (found in
    review: 7.6e16 without one)."""
    a = np.random.default_rng(0).standard_normal((30, 30))
    a[:, 5] = 2.0 * a[:, 7]
    s = svd_forward(a, False, False)[1]
    assert gesdd_calls == [(30, 30)]
    assert s[-1] == 0.0
    with_grad = mg.linalg.cond(mg.tensor(a, requires_grad=True)).detach().numpy()
    assert with_grad == np.inf
    assert mg.linalg.cond(mg.tensor(a)).numpy() == np.inf


def test_where_gesdds_workspace_might_not_fit_the_sweeps_path_refuses(monkeypatch,
                                                                      gesdd_calls):
    """Memory short: not gesdd (whose failure under an address-space limit killed the
    process, found in review) but the sweeps' path, whose own check raises the project's
    MemoryError up front."""
    from minigrad.linalg import _memory

    monkeypatch.setattr(_memory, "available", lambda: 100e3)
    monkeypatch.setattr(_memory, "_last", (-1.0, 0.0, None))
    a = np.random.default_rng(9).standard_normal((300, 200))
    with pytest.raises(MemoryError, match="needs about"):
        svd_forward(a, False, False)
    assert not gesdd_calls


@pytest.mark.parametrize("case", ["tol", "max_sweeps", "float32", "batch", "4 x 4",
                                  "zero column", "huge"])
def test_other_calls_keep_the_sweeps(gesdd_calls, case):
    """A tol or max_sweeps of the caller's, float32, a batch, a lanes-sized matrix, a zero
    column, squares past float64's range: the Jacobi paths' values."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal((60, 40))
    kw: dict = {}
    if case == "tol":
        kw = {"tol": 1e-14}
    elif case == "max_sweeps":
        kw = {"max_sweeps": 30}
    elif case == "float32":
        a = a.astype(np.float32)
    elif case == "batch":
        a = np.stack([a, a])
    elif case == "4 x 4":
        a = a[:4, :4]
    elif case == "zero column":
        a[:, 3] = 0.0
    else:
        a = a * 1e160
    s = svd_forward(a, False, False, **kw)[1]
    assert not gesdd_calls
    ref = np.linalg.svd(a.astype(np.float64), compute_uv=False)
    np.testing.assert_allclose(s, ref, rtol=0, atol=C * 60 * np.finfo(s.dtype).eps * ref.max())


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_non_finite_input_raises_as_before(gesdd_calls, bad):
    a = np.random.default_rng(3).standard_normal((60, 40))
    a[2, 5] = bad
    with pytest.raises(LinAlgError, match="NaN or Inf"):
        svd_forward(a, False, False)
    assert not gesdd_calls


def test_gesdd_that_does_not_converge_leaves_it_to_the_sweeps(monkeypatch):
    def fails(*args, **kwargs):
        raise np.linalg.LinAlgError("SVD did not converge")

    a = np.random.default_rng(4).standard_normal((60, 40))
    ref = np.linalg.svd(a, compute_uv=False)
    monkeypatch.setattr(np.linalg, "svd", fails)
    assert _svd_lapack.lapack_values(a) is None
    s = svd_forward(a, False, False)[1]
    np.testing.assert_allclose(s, ref, rtol=0, atol=C * 60 * np.finfo(np.float64).eps * s[0])
