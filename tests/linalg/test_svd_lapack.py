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
    assert np.max(np.abs(s - ref) / ref) <= bound


def _gesdds(a: np.ndarray, s: np.ndarray) -> bool:
    """Whether s is gesdd's values of a, bit for bit (the sweeps' differ in the last bits)."""
    return bool(np.array_equal(s, np.linalg.svd(a, compute_uv=False)))


@pytest.mark.parametrize(("side", "spread", "taken"), [("columns", 5.0, True),
                                                       ("columns", 20.0, False),
                                                       ("rows", 5.0, True),
                                                       ("rows", 20.0, False)])
def test_the_gates_factor(side, spread, taken):
    """Norms spread 5x pass the gates, 20x do not (the factor _GRADED = 10), cond(A) 40."""
    rng = np.random.default_rng(8)
    q1, _ = np.linalg.qr(rng.standard_normal((60, 60)))
    q2, _ = np.linalg.qr(rng.standard_normal((40, 40)))
    a = (q1[:, :40] * np.linspace(1.0, 40.0, 40)) @ q2.T  # s_j 1..40, column norms flat
    w = np.linspace(1.0, spread, 40 if side == "columns" else 60)
    a = a * w if side == "columns" else a * w[:, None]
    d = np.linalg.norm(a, axis=0 if side == "columns" else 1)
    assert np.isclose(d.max() / d.min(), spread, rtol=0.5)  # (the rows' own spread ~1.3x)
    s = np.linalg.svd(a, compute_uv=False)
    assert s[0] > 10 * s[-1]
    assert _gesdds(a, svd_forward(a, False, False)[1]) == taken


def test_plain_tall_skinny_input_takes_gesdd_whatever_its_rows():
    """500 x 5 Gaussian rows spread past the rows' gate (38% of draws, found in review), but
    cond(A) <= 10 bounds cond(R^-1 A) as well."""
    rng = np.random.default_rng(10)
    for _ in range(20):
        a = rng.standard_normal((500, 5))
        r = np.linalg.norm(a, axis=1)
        if r.max() > 10 * r.min():
            break
    else:
        pytest.fail("no draw with its rows spread past 10x")
    assert _gesdds(a, svd_forward(a, False, False)[1])


def test_rows_whose_squares_underflow_are_not_taken_for_zero_rows():
    """Entries ~1e-155 (their squares subnormal) and five rows 1e8 smaller (squares 0):
    graded rows, which the gate sees at the matrix's own scale; the sweeps' values, relative
    to ~eps cond(R^-1 A) (gesdd's were 7e-9..2e-8 off: found in review)."""
    rng = np.random.default_rng(1)
    b = rng.standard_normal((35, 19)) @ rng.standard_normal((19, 20))  # rank 19
    a = np.vstack([1e-8 * rng.standard_normal((5, 20)), b]) * 1e-155
    a = a[rng.permutation(40)]
    ref = mp_singular_values(a)
    s = svd_forward(a, False, False)[1]
    assert not _gesdds(a, s)
    assert np.max(np.abs(s - ref) / ref) <= C * 40 * np.finfo(np.float64).eps * 1e3


def test_a_singular_matrixs_null_values_are_gesdds_rounding(gesdd_calls):
    """A column twice another: its null value is gesdd's rounding (~eps s_1, as numpy's and
    torch's), cond ~1e16 without a gradient; with one, the sweeps' exact zero and cond's inf
    (refusing gesdd's result for the sweeps cost such input 1.13-1.47x: found in review)."""
    a = np.random.default_rng(0).standard_normal((30, 30))
    a[:, 5] = 2.0 * a[:, 7]
    s = svd_forward(a, False, False)[1]
    assert gesdd_calls == [(30, 30)]
    assert 0.0 <= s[-1] <= C * 30 * np.finfo(np.float64).eps * s[0]
    assert mg.linalg.cond(mg.tensor(a)).numpy() > 1e14
    with_grad = mg.linalg.cond(mg.tensor(a, requires_grad=True)).detach().numpy()
    assert with_grad == np.inf


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
                                  "zero column"])
def test_other_calls_keep_the_sweeps(gesdd_calls, case):
    """A tol or max_sweeps of the caller's, float32, a batch, a lanes-sized matrix, a zero
    column: the Jacobi paths' values."""
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
    else:
        a[:, 3] = 0.0
    s = svd_forward(a, False, False, **kw)[1]
    assert not gesdd_calls
    ref = np.linalg.svd(a.astype(np.float64), compute_uv=False)
    np.testing.assert_allclose(s, ref, rtol=0, atol=C * 60 * np.finfo(s.dtype).eps * ref.max())


@pytest.mark.parametrize("k", [-530, 530, -1070])
def test_far_scales_take_gesdd_and_keep_their_values(gesdd_calls, k):
    """Entries whose squares leave float64's range (or subnormal ones): the gates read them
    scaled by a power of two, and gesdd scales them itself: the values of 2^k a are 2^k
    times those of a as stored."""
    b = np.ldexp(np.random.default_rng(11).standard_normal((60, 40)), k)
    ref = np.linalg.svd(np.ldexp(b, -k), compute_uv=False)
    s = svd_forward(b, False, False)[1]
    assert gesdd_calls[-1] == (60, 40)
    # (subnormal values themselves hold few digits: to a few of the least subnormal)
    np.testing.assert_allclose(s, np.ldexp(ref, k), rtol=1e-13, atol=4 * 2.0**-1074)


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
