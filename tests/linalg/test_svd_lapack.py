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
    """Column norms within a factor 10 (a non-graded matrix with a spectrum falling to
    1e-12): gesdd's error eps s_1 is then within 10x Jacobi's bound eps cond(A D^-1) s_j,
    for every s_j."""
    rng = np.random.default_rng(7)
    q1, _ = np.linalg.qr(rng.standard_normal((48, 48)))
    q2, _ = np.linalg.qr(rng.standard_normal((48, 48)))
    a = (q1 * np.logspace(0, -12, 48)) @ q2.T
    d = np.linalg.norm(a, axis=0)
    assert d.max() <= 10 * d.min()
    s = svd_forward(a, False, False)[1]
    assert gesdd_calls == [(48, 48)]
    ref = mp_singular_values(a)
    eps = np.finfo(np.float64).eps
    assert np.all(np.abs(s - ref) <= C * 48 * eps * ref[0])
    jacobi = C * 48 * eps * np.linalg.cond(a / d) * ref
    assert np.all(C * 48 * eps * ref[0] <= 10 * jacobi)


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
