"""ndarray-level tests of the Jacobi SVD forward (minigrad/linalg/_jacobi.py, _svd_forward.py,
_svd_batch.py).

No Tensor here: these exercise the kernels and the driver directly. Tolerances are
c * max(m, n) * eps(dtype) with a small constant c, relative to the largest singular value.
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minigrad.linalg import _svd_batch, _svd_gram, _svd_single
from minigrad.linalg import _svd_forward as fwd
from minigrad.linalg._jacobi_contract import OK
from minigrad.linalg._svd_forward import Path, Plan
from minigrad.linalg._svd_forward import svd_forward as _svd_forward
from minigrad.linalg.errors import LinAlgError

C = 5  # the "small multiple" in every tolerance


def eps(dtype) -> float:
    return float(np.finfo(dtype).eps)


# LONE and QR start from A^T A's eigenvectors where _gram_start allows (random input
# mostly): the "-plain" plans keep the sweeps from A itself on that input too. GRAM: the
# batch kernel on A V0 where small_start allows, else what the plan takes without it.
PLANS = {"batched": None, "lone": Plan(Path.LONE, 1), "lone-threads": Plan(Path.LONE, 2),
         "qr": Plan(Path.QR, 1), "lone-plain": Plan(Path.LONE, 1, False),
         "qr-plain": Plan(Path.QR, 1, False), "gram": Plan(Path.GRAM, 1)}


@pytest.fixture(params=list(PLANS))
def path(request):
    """Run a test through each dispatch path, forced here on small inputs: the batch kernel,
    the lone-matrix kernel (serial, and with threads inside the sweep), and LAPACK QR +
    Jacobi on R, with and without the eigenvector start, and the batch kernel on A V0.
    (Batched inputs always take the batch kernel.)"""
    return PLANS[request.param]


def svd_forward(a, *args, _plan=None, **kwargs):
    """The driver, on the forced plan when a is a single matrix."""
    single = np.ndim(a) == 2
    return _svd_forward(a, *args, _plan=_plan if single else None, **kwargs)


def check_svd(a: np.ndarray, full: bool, c: float = C, plan: Plan | None = None) -> None:
    """Shapes, dtype, order, reconstruction, orthonormality and S against numpy."""
    u, s, vh = svd_forward(a, full_matrices=full, _plan=plan)
    *batch, m, n = a.shape
    k = min(m, n)
    batch = tuple(batch)
    assert u.shape == batch + ((m, m) if full else (m, k))
    assert vh.shape == batch + ((n, n) if full else (k, n))
    assert s.shape == batch + (k,)
    assert u.dtype == s.dtype == vh.dtype == a.dtype
    assert np.all(s >= 0)
    assert np.all(np.diff(s.astype(np.float64), axis=-1) <= 0)

    a64, u64, s64, vh64 = (x.astype(np.float64) for x in (a, u, s, vh))
    tol = c * max(m, n) * eps(a.dtype)
    scale = np.maximum(np.abs(s64[..., :1]), np.finfo(np.float64).tiny)[..., None]
    rec = (u64[..., :k] * s64[..., None, :]) @ vh64[..., :k, :]
    assert np.all(np.abs(rec - a64) <= tol * scale)
    assert np.all(np.abs(np.swapaxes(u64, -1, -2) @ u64 - np.eye(u.shape[-1])) <= tol)
    assert np.all(np.abs(vh64 @ np.swapaxes(vh64, -1, -2) - np.eye(vh.shape[-2])) <= tol)
    ref = np.linalg.svd(a64, compute_uv=False)
    assert np.all(np.abs(s64 - ref) <= tol * scale[..., 0])


shapes = st.tuples(
    st.lists(st.integers(1, 3), min_size=0, max_size=2),  # batch
    st.integers(1, 9),
    st.integers(1, 9),
)


@settings(max_examples=60, deadline=None)
@given(shape=shapes, dtype=st.sampled_from([np.float16, np.float32, np.float64]),
       full=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_random_matches_numpy(shape, dtype, full, seed):
    batch, m, n = shape
    a = np.random.default_rng(seed).standard_normal(tuple(batch) + (m, n)).astype(dtype)
    check_svd(a, full)


@pytest.mark.parametrize("shape", [(70, 50), (50, 70), (64, 64), (3, 20, 12), (12, 20)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("full", [True, False])
def test_larger_both_paths(path, shape, dtype, full):
    a = np.random.default_rng(7).standard_normal(shape).astype(dtype)
    check_svd(a, full, plan=path)


@pytest.mark.parametrize("shape", [(300, 60), (60, 300), (70, 60), (60, 70)])
def test_large_single_matrix_default_dispatch(shape):
    a = np.random.default_rng(3).standard_normal(shape)
    check_svd(a, False)
    check_svd(a, True)


def low_rank(rng, m, n, r):
    return rng.standard_normal((m, r)) @ rng.standard_normal((r, n))


@pytest.mark.parametrize("m, n, r", [(6, 4, 2), (4, 6, 1), (5, 5, 3), (8, 3, 1), (3, 8, 2)])
@pytest.mark.parametrize("full", [True, False])
def test_rank_deficient(path, m, n, r, full):
    a = low_rank(np.random.default_rng(m * n + r), m, n, r)
    check_svd(a, full, plan=path)
    s = svd_forward(a, full, _plan=path)[1]
    assert np.all(s[r:] <= C * max(m, n) * eps(np.float64) * s[0])


@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 6), (2, 5, 5)])
def test_identical_columns_converge(path, shape):
    """Rank one with identical columns: a rotation cancels a column to rounding noise that
    stays exactly parallel to the other; it must be dropped, not shrunk by eps per sweep."""
    a = np.ones(shape)
    check_svd(a, True, plan=path)
    s = svd_forward(a, max_sweeps=6, _plan=path)[1]
    assert np.all(s[..., 1:] <= C * max(shape[-2:]) * eps(np.float64) * s[..., :1])


@pytest.mark.parametrize("shape", [(52, 52), (80, 55), (55, 70)])
@pytest.mark.parametrize("full", [True, False])
def test_medium_single_matrices_take_the_gram_path(shape, full):
    """One real matrix with k < 52 goes to the batch kernel, with 52 <= k <= 256 to the
    batch kernel on A V0 (GRAM), which refuses graded and rank-deficient input to the batch
    kernel below k = 56 and the pivoted QR from there; from k = 257 the lone path. Either
    way a valid SVD."""
    assert fwd.plan(1, 51, 60).path is Path.BATCHED
    assert fwd.plan(1, *shape).path is Path.GRAM
    assert fwd.plan(1, 256, 256).path is Path.GRAM
    assert fwd.plan(1, 257, 257).path is Path.LONE
    assert fwd.plan(1, 600, 100).path is Path.GRAM
    assert fwd.plan(1, 601, 100).path is Path.QR  # rows > 6 k: the QR path's k x k sweeps
    assert fwd.plan(2, *shape).path is Path.BATCHED
    assert fwd._refused(1, *shape).path is Path.BATCHED
    assert fwd._refused(1, 80, 80) == Plan(Path.QR, 1, False)
    rng = np.random.default_rng(9)
    m, n = shape
    check_svd(rng.standard_normal(shape), full)
    check_svd(rng.standard_normal(shape) * np.logspace(0, -14, n), full)
    check_svd(low_rank(rng, m, n, 5), full)


@pytest.mark.parametrize("shape", [(120, 100), (100, 120), (300, 100)])
@pytest.mark.parametrize("full", [True, False])
def test_large_graded_and_rank_deficient_default_dispatch(shape, full):
    """The lone-matrix paths recover one side with BLAS instead of accumulating it; that
    side must stay orthonormal and reconstruct A also when s spans 14 decades or is 0."""
    rng = np.random.default_rng(8)
    m, n = shape
    graded = rng.standard_normal(shape) * np.logspace(0, -14, n)
    check_svd(graded, full)
    check_svd(low_rank(rng, m, n, 7), full)


def test_repeated_singular_values(path):
    rng = np.random.default_rng(11)
    q1, _ = np.linalg.qr(rng.standard_normal((7, 7)))
    q2, _ = np.linalg.qr(rng.standard_normal((5, 5)))
    d = np.array([3.0, 2.0, 2.0, 2.0, 1.0])
    a = q1[:, :5] * d @ q2.T
    check_svd(a, True, plan=path)
    np.testing.assert_allclose(svd_forward(a, _plan=path)[1], d, rtol=C * 7 * eps(np.float64))


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3), (2, 5, 5)])
def test_zero_matrix(path, shape):
    a = np.zeros(shape)
    u, s, vh = svd_forward(a, _plan=path)
    assert np.all(s == 0)
    check_svd(a, True, plan=path)
    check_svd(a, False, plan=path)


@pytest.mark.parametrize("n", [1, 3, 8])
def test_identity_gives_identity(path, n):
    u, s, vh = svd_forward(np.eye(n), _plan=path)
    np.testing.assert_array_equal(s, np.ones(n))
    np.testing.assert_allclose(u @ vh, np.eye(n), atol=C * n * eps(np.float64))


def test_diagonal_is_signed_permutation(path):
    d = np.array([0.5, -3.0, 2.0, 0.0, -1.0])
    u, s, vh = svd_forward(np.diag(d), _plan=path)
    np.testing.assert_array_equal(s, [3.0, 2.0, 1.0, 0.5, 0.0])
    # U and Vh are exactly signed permutations, and U's entries are +1 (the sign rule).
    assert set(np.abs(u).ravel()) <= {0.0, 1.0} and set(np.abs(vh).ravel()) <= {0.0, 1.0}
    assert np.all(u.max(axis=0) == 1.0)
    np.testing.assert_array_equal(u * s @ vh, np.diag(d))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_one_by_one(dtype):
    u, s, vh = svd_forward(np.array([[-2.5]], dtype=dtype))
    assert u.tolist() == [[1.0]] and s.tolist() == [2.5] and vh.tolist() == [[-1.0]]
    assert u.dtype == s.dtype == vh.dtype == dtype


def mp_singular_values(a: np.ndarray, dps: int = 50) -> np.ndarray:
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(dps):
        s = mpmath.svd_r(mpmath.matrix(a.astype(np.float64).tolist()), compute_uv=False)
        return np.sort(np.array([float(x) for x in s]))[::-1]


@pytest.mark.parametrize("n", [6, 10])
def test_hilbert(path, n):
    a = 1.0 / (np.arange(n)[:, None] + np.arange(n)[None, :] + 1.0)
    check_svd(a, True, plan=path)
    ref = mp_singular_values(a)
    s = svd_forward(a, _plan=path)[1]
    # Hilbert is hopelessly ill-conditioned for the smallest values, so absolute accuracy.
    assert np.all(np.abs(s - ref) <= C * n * eps(np.float64) * ref[0])


def dgejsv_singular_values(a: np.ndarray) -> np.ndarray | None:
    lapack = pytest.importorskip("scipy.linalg.lapack")
    if not hasattr(lapack, "dgejsv"):
        return None
    # joba=4 ('A'), jobu=jobv=3 ('N'): values only; sva is scaled by work[0] / work[1].
    sva, _, _, work, _, info = lapack.dgejsv(a, joba=4, jobu=3, jobv=3)
    assert info == 0
    return np.sort(sva * work[0] / work[1])[::-1]


@pytest.mark.parametrize("n", [8, 16, 24])
@pytest.mark.parametrize("seed", [0, 1])
def test_graded_relative_accuracy(path, n, seed):
    """A = B diag(logspace(0, -14, n)): one-sided Jacobi returns every singular value to
    relative accuracy ~ n * eps * cond(B with unit columns), the small ones included, and
    at least as well as LAPACK's Jacobi (dgejsv) up to a factor C."""
    rng = np.random.default_rng(100 * n + seed)
    b = rng.standard_normal((n, n))
    a = b * np.logspace(0, -14, n)
    ref = mp_singular_values(a)
    s = svd_forward(a, _plan=path)[1]
    rel = np.max(np.abs(s - ref) / ref)
    cond = np.linalg.cond(b / np.linalg.norm(b, axis=0))
    assert rel <= C * n * eps(np.float64) * cond
    jsv = dgejsv_singular_values(a)
    if jsv is None:  # older scipy: compare with the bidiagonal LAPACK driver instead
        jsv = np.linalg.svd(a, compute_uv=False)
    assert rel <= C * max(np.max(np.abs(jsv - ref) / ref), eps(np.float64))


def test_graded_float32_relative_accuracy(path):
    n = 10
    b = np.random.default_rng(5).standard_normal((n, n))
    a = (b * np.logspace(0, -14, n)).astype(np.float32)
    ref = mp_singular_values(a)
    s = svd_forward(a, _plan=path)[1].astype(np.float64)
    cond = np.linalg.cond(b / np.linalg.norm(b, axis=0))
    assert np.max(np.abs(s - ref) / ref) <= C * n * eps(np.float32) * cond


def test_values_only_on_every_path(path):
    """compute_uv=False (svdvals without grad) on each path, the lone-matrix one included:
    the same values as with vectors, and numpy's."""
    a = np.random.default_rng(12).standard_normal((60, 50))
    a[:, 7] = a[:, 3]  # and a rank deficiency
    u, s, vh = svd_forward(a, compute_uv=False, _plan=path)
    assert u is None and vh is None
    np.testing.assert_allclose(s, svd_forward(a, _plan=path)[1], rtol=0, atol=1e-13 * s[0])
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=0,
                               atol=C * 60 * eps(np.float64) * s[0])


def test_compute_uv_false_gives_same_values():
    a = np.random.default_rng(2).standard_normal((4, 9, 6))
    u, s, vh = svd_forward(a, compute_uv=False)
    assert u is None and vh is None
    np.testing.assert_array_equal(s, svd_forward(a)[1])


def test_deterministic_and_sign_convention(path):
    rng = np.random.default_rng(9)
    one = rng.standard_normal((5, 7))
    a = np.stack([one, rng.standard_normal((5, 7)), one])
    u1, s1, vh1 = svd_forward(a, _plan=path)
    u2, s2, vh2 = svd_forward(a.copy(), _plan=path)
    for x, y in ((u1, u2), (s1, s2), (vh1, vh2)):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(u1[0], u1[2])
    # First largest-|.| entry of each column of U is positive.
    cols = np.argmax(np.abs(u1), axis=-2)
    assert np.all(np.take_along_axis(u1, cols[..., None, :], axis=-2) > 0)
    # Complement rows of the full Vh follow the same rule on their own.
    rest = vh1[:, 5:, :]
    rows = np.argmax(np.abs(rest), axis=-1)
    assert np.all(np.take_along_axis(rest, rows[..., None], axis=-1) > 0)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0), (2, 0, 3), (0, 4, 3), (2, 3, 0, 0)])
def test_empty_shapes_match_torch(shape):
    *batch, m, n = shape
    batch = tuple(batch)
    k = min(m, n)
    u, s, vh = svd_forward(np.zeros(shape, dtype=np.float32))
    assert u.shape == batch + (m, m) and s.shape == batch + (k,) and vh.shape == batch + (n, n)
    assert u.dtype == s.dtype == vh.dtype == np.float32
    if u.size:
        np.testing.assert_array_equal(u, np.broadcast_to(np.eye(m), u.shape))
    if vh.size:
        np.testing.assert_array_equal(vh, np.broadcast_to(np.eye(n), vh.shape))
    u, s, vh = svd_forward(np.zeros(shape), full_matrices=False)
    assert u.shape == batch + (m, k) and vh.shape == batch + (k, n)
    assert svd_forward(np.zeros(shape), compute_uv=False)[1].shape == batch + (k,)


def test_empty_shapes_against_torch():
    torch = pytest.importorskip("torch")
    for shape in [(0, 3), (3, 0), (2, 0, 3)]:
        for full in (True, False):
            got = svd_forward(np.zeros(shape), full_matrices=full)
            want = torch.linalg.svd(torch.zeros(shape, dtype=torch.float64), full_matrices=full)
            for g, w in zip(got, want, strict=True):
                np.testing.assert_array_equal(g, w.numpy())


def test_bad_ndim():
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        svd_forward(np.ones(3))


@pytest.mark.parametrize("dtype", [np.int64, np.bool_, np.complex128])
def test_bad_dtype(dtype):
    with pytest.raises(TypeError, match=r"floating-point.*astype"):
        svd_forward(np.ones((2, 2), dtype=dtype))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_not_finite_names_batch_element(bad):
    a = np.ones((2, 3, 4, 4))
    a[1, 2, 0, 3] = bad
    with pytest.raises(LinAlgError, match=r"not finite.*\(1, 2\)"):
        svd_forward(a)


def test_not_finite_single_matrix_both_paths(path):
    a = np.ones((60, 50))
    a[4, 4] = np.nan
    with pytest.raises(LinAlgError, match="not finite"):
        svd_forward(a, _plan=path)


@pytest.mark.parametrize("shape", [(8, 8), (3, 8, 8), (40, 3, 3)])
def test_not_converged_raises(path, shape):
    """One sweep is too few from A itself. (A rank deficiency keeps the Gram start off,
    from which a single sweep is enough: test_gram_start_saves_sweeps.)"""
    a = np.random.default_rng(4).standard_normal(shape)
    a[..., :, -1] = a[..., :, 0] + a[..., :, 1]
    with pytest.raises(LinAlgError, match="did not converge"):
        svd_forward(a, max_sweeps=1, _plan=path)
    check_svd(a, True, plan=path)  # and the default cap is enough


def test_not_converged_raises_from_a_gram_start():
    """The GRAM path's own raise: from a Gram start of cond 1e5 (V0's cosines ~eps cond^2,
    not yet small enough for one sweep to end on) one sweep is too few, two are enough."""
    rng = np.random.default_rng(8)
    q1, q2 = (np.linalg.qr(rng.standard_normal((8, 8)))[0] for _ in range(2))
    a = (q1 * np.geomspace(1, 1e-5, 8)) @ q2.T
    plan = Plan(Path.GRAM, 1)
    with pytest.raises(LinAlgError, match="did not converge"):
        svd_forward(a, max_sweeps=1, _plan=plan)
    svd_forward(a, max_sweeps=2, _plan=plan)
    check_svd(a, True, plan=plan)


def test_linalgerror_is_runtimeerror():
    assert issubclass(LinAlgError, RuntimeError)
    assert LinAlgError.__doc__


def test_kernels_without_jit():
    """The same kernels run as plain Python under NUMBA_DISABLE_JIT=1 (small inputs only)."""
    code = textwrap.dedent("""
        import numpy as np
        import minigrad.linalg._svd_forward as fwd
        rng = np.random.default_rng(0)
        for shape, full in [((2, 4, 3), True), ((3, 5), False), ((1, 1), True),
                            ((40, 3, 3), True)]:
            a = rng.standard_normal(shape)
            a[..., 0] *= 1e-9
            u, s, vh = fwd.svd_forward(a, full)
            k = min(shape[-2:])
            assert np.allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, atol=1e-13)
            assert np.allclose(np.linalg.svd(a, compute_uv=False), s, atol=1e-13)
        # The QR path, the lone-matrix path, and its threaded sweep.
        for plan in (fwd.Plan(fwd.Path.QR, 1), fwd.Plan(fwd.Path.LONE, 1),
                     fwd.Plan(fwd.Path.LONE, 2)):
            a = np.ones((9, 8))
            u, s, vh = fwd.svd_forward(a, _plan=plan)
            assert np.allclose(u.T @ u, np.eye(9), atol=1e-13)
            assert np.allclose(s, [72**0.5] + [0] * 7, atol=1e-13)
            assert np.allclose((u[:, :8] * s) @ vh, a, atol=1e-13)
        # The GRAM path (the batch kernel on A V0), tall and wide.
        for shape in ((10, 7), (7, 10)):
            a = rng.standard_normal(shape)
            u, s, vh = fwd.svd_forward(a, False, _plan=fwd.Plan(fwd.Path.GRAM, 1))
            assert np.allclose((u * s) @ vh, a, atol=1e-13)
            assert np.allclose(np.linalg.svd(a, compute_uv=False), s, atol=1e-13)
        import numba
        assert numba.config.DISABLE_JIT
        print("ok")
    """)
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, cwd=root,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_scaled_sweeps_keep_rows_and_rotations_consistent():
    """The serial sweeps keep the rotations' cosines in per-row scales, multiplied back in
    below _FOLD and at every sweep's start: with _FOLD so high that every rotation folds,
    and as shipped, on real, row-graded (down to the tiny rows' path), and complex rows,
    the sweeps end with X = Vt X0, Vt unitary, X's rows orthogonal, and their norms the
    singular values to relative accuracy (plain Python under NUMBA_DISABLE_JIT, where the
    module's _FOLD can be changed)."""
    code = textwrap.dedent("""
        import json
        import numpy as np
        import minigrad.linalg._jacobi as J
        from minigrad.linalg._svd_checks import _tolerances
        rng = np.random.default_rng(0)
        graded = 2.0 ** -np.linspace(0, 600, 9)[:, None]
        cases = [rng.standard_normal((9, 12)), rng.standard_normal((9, 12)) * graded,
                 rng.standard_normal((9, 12)) + 1j * rng.standard_normal((9, 12))]
        norms = []
        for fold in (J._FOLD, 0.99):
            J._FOLD = fold
            for x0 in cases:
                n, m = x0.shape
                x, vt = x0.copy()[None], np.eye(n, dtype=x0.dtype)[None]
                st = np.zeros(1, np.int8)
                tol = _tolerances(None, 40, m, np.float64)
                J.sweeps(x, vt, np.empty(n), np.empty(n), np.empty(n), tol, st)
                assert st[0] == 0
                x, vt = x[0], vt[0]
                big = np.abs(x0).max(axis=1, keepdims=True)
                assert np.abs(vt @ vt.conj().T - np.eye(n)).max() < 100 * 2.0**-52
                assert np.abs(x - vt @ x0).max() < 100 * 2.0**-52 * big.max()
                top = np.abs(x).max(axis=1, keepdims=True)
                unit = x / top
                nrm = np.linalg.norm(unit, axis=1)
                cos = np.abs(unit.conj() @ unit.T) / np.outer(nrm, nrm)
                assert (cos - np.eye(n)).max() < 100 * 2.0**-52
                norms.append(sorted((nrm * top[:, 0]).tolist(), reverse=True))
        print(json.dumps(norms))
    """)
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, cwd=root,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    norms = json.loads(out.stdout)
    rng = np.random.default_rng(0)
    real = [rng.standard_normal((9, 12)),
            rng.standard_normal((9, 12)) * 2.0 ** -np.linspace(0, 600, 9)[:, None]]
    refs = [mp_singular_values(x.T) for x in real]
    refs.append(np.linalg.svd(rng.standard_normal((9, 12)) + 1j * rng.standard_normal(
        (9, 12)), compute_uv=False))  # well conditioned: numpy is relatively accurate
    for got, ref in zip(norms, refs + refs):
        np.testing.assert_allclose(got, ref, rtol=C * 12 * eps(np.float64), atol=0)


def _largest_cosine(x: np.ndarray) -> float:
    """The largest |cos| between two rows of x, each dot product summed exactly (math.fsum of
    the float64 products: off by at most eps / 2 of |x_p| |x_q|, where numpy's own rounding
    is as large as the sweeps' tol)."""
    import math

    nrm = [math.sqrt(math.fsum(r * r)) for r in x]
    return max(abs(math.fsum(x[p] * x[q])) / (nrm[p] * nrm[q])
               for p in range(len(x)) for q in range(p + 1, len(x)))


@pytest.mark.parametrize("shape, seed", [((60, 40), 0), ((60, 40), 3), ((30, 20), 3)])
def test_sweeps_end_on_a_sweep_that_rotated(shape, seed):
    """The serial sweeps stop after a sweep whose rotations were all tiny (8 n c max(c, t)
    < tol, see _jacobi.sweeps), without a further sweep that would only confirm it: on
    these inputs the rows one sweep before the end are still far from orthogonal, and the
    last sweep leaves them within the bound in sweeps' docstring, 1.35 tol (plus the
    measurement's eps / 2; these end within 1.0). Their last sweeps meet the test with room
    (8 n c max(c, t) <= 1e-4 tol: no CPU's rounding decides it). (Where a last sweep rotates
    pairs of close norms, t is large and a confirming sweep still runs.)"""
    from minigrad.linalg._svd_checks import DEFAULT_MAX_SWEEPS, _tolerances

    a = np.random.default_rng(seed).standard_normal(shape)
    k = shape[1]
    x = np.ascontiguousarray(a.T) / 2.0 ** np.frexp(np.abs(a).max())[1]
    tol = _tolerances(None, DEFAULT_MAX_SWEEPS, shape[0], np.float64)

    def swept(sweeps: int) -> tuple[np.ndarray, int]:
        rows, status = x[None].copy(), np.zeros(1, np.int8)
        _svd_batch._kernels().sweeps(rows, np.eye(k)[None], np.empty(k), np.empty(k),
                                     np.empty(k), tol._replace(max_sweeps=sweeps), status)
        return rows[0], int(status[0])

    needed = next(n for n in range(2, 20) if swept(n)[1] == OK)
    assert _largest_cosine(swept(needed - 1)[0]) > 10 * tol.rotate  # the last one rotated
    assert _largest_cosine(swept(needed)[0]) <= 1.35 * tol.rotate + eps(np.float64) / 2


@pytest.mark.parametrize("shape", [(3, 3), (3, 4), (4, 2), (5, 3), (1, 4)])
@pytest.mark.parametrize("full", [True, False])
def test_small_lanes_mixed_batch(shape, full):
    """Batches of k <= 4 are swept in lanes of many matrices at once: rank-deficient, zero
    and graded matrices next to ordinary ones must each come out as if alone."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((100,) + shape)
    a[3] = 0.0
    a[5, :, 0] = a[5, :, -1]  # rank deficient
    a[8] *= np.logspace(0, -12, shape[1])  # graded columns
    check_svd(a, full)
    u, s, vh = svd_forward(a, full)
    for b in (0, 3, 5, 8, 99):
        ub, sb, vhb = svd_forward(a[b], full)
        assert np.allclose(s[b], sb, atol=1e-14) and np.allclose(u[b], ub, atol=1e-12)
        assert np.allclose(vh[b], vhb, atol=1e-12)
    a[70, 0, 0] = np.nan
    with pytest.raises(LinAlgError, match=r"not finite.*\(70,\)"):
        svd_forward(a)


@pytest.mark.parametrize("graded", [False, True], ids=["first-order QR", "Householder QR"])
def test_other_side_recovers_an_orthonormal_v_on_both_branches(graded):
    """_other_side takes a first-order Cholesky QR when W = x^T U S^-1 is nearly
    orthonormal, and a Householder QR otherwise; both must give x = U S V^T."""

    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, 64))
    if graded:
        x = x * np.logspace(0, -12, 64)
    u, s, vh = np.linalg.svd(x)
    v = _svd_single._other_side(x, u, s)
    np.testing.assert_allclose(v.T @ v, np.eye(64), atol=64 * 1e-15)
    np.testing.assert_allclose((u * s) @ v.T, x, atol=64 * 1e-15 * s[0])


def _hard_3x3(dtype) -> np.ndarray:
    """A batch of 3x3s that a lane may not finish or may finish wrongly, among ordinary
    ones: zero, rank 1 and 2, graded, repeated values, extreme scales, tiny columns."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal((70, 3, 3))
    a[1] = 0.0
    a[2] = np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 0.5])  # rank 1
    a[3, :, 2] = a[3, :, 0] - a[3, :, 1]  # rank 2
    a[4] *= np.logspace(0, -12, 3)  # graded columns
    a[5] = np.eye(3)  # a triple singular value
    a[6] = np.diag([2.0, 2.0, 1.0])[[2, 0, 1]]  # a double one, permuted
    big = np.finfo(dtype).max
    a[7] *= big / 4  # near overflow
    a[8] *= np.finfo(dtype).tiny * 8  # near underflow
    a[9, :, 1] *= 1e-160 if dtype == np.float64 else 1e-25  # a column whose square underflows
    a[10] = np.diag([1.0, 1e-150, 1e-300]) if dtype == np.float64 else np.diag([1, 1e-20, 1e-38])
    return a.astype(dtype)


def _hard_float32_3x3() -> np.ndarray:
    """2048 float32 3x3s, a quarter each ordinary, near rank-deficient, with a repeated
    singular value, and with graded columns, every one scaled by a random power of ten in
    [1e-30, 1e30]."""
    rng = np.random.default_rng(23)
    n = 2048
    a = rng.standard_normal((n, 3, 3))
    q = n // 4
    a[q:2 * q, :, 2] = a[q:2 * q, :, 0] - a[q:2 * q, :, 1] \
        + 1e-5 * rng.standard_normal((q, 3))
    left = np.linalg.qr(rng.standard_normal((q, 3, 3)))[0]
    right = np.linalg.qr(rng.standard_normal((q, 3, 3)))[0]
    a[2 * q:3 * q] = (left * np.array([2.0, 2.0, 0.5])) @ right  # s = (2, 2, 0.5)
    a[3 * q:] *= [1.0, 1e-3, 1e-6]  # graded columns
    a *= 10.0 ** rng.integers(-30, 31, n)[:, None, None]
    return a.astype(np.float32)


def test_3x3_float32_lanes_keep_float32_accuracy():
    """Float32 batches of 3x3 are swept in float32 arithmetic (svd_lanes3): on hard batches
    the lanes must keep almost every matrix and give it what sgesvd would (S to eps * s_1,
    and Jacobi's relative accuracy on top; reconstruction and orthonormality to eps),
    checked against float64."""
    from minigrad.linalg import _jacobi as jac
    from minigrad.linalg._svd_forward import _tolerances

    a = _hard_float32_3x3()
    n = a.shape[0]
    u, vh = np.empty((n, 3, 3), np.float32), np.empty((n, 3, 3), np.float32)
    s, status = np.empty((n, 3), np.float32), np.empty(n, np.int8)
    jac.svd_lanes3(a, True, _tolerances(None, 60, 3, np.float32), u, s, vh, status)
    kept = status == jac.OK
    assert kept.mean() > 0.95 and set(np.unique(status)) <= {jac.OK, jac.MORE}
    e = eps(np.float32)
    a64 = a[kept].astype(np.float64)
    scale = np.abs(a64).max(axis=(1, 2), keepdims=True)
    a64 /= scale
    u64, vh64 = u[kept].astype(np.float64), vh[kept].astype(np.float64)
    s64 = s[kept] / scale[:, 0]
    ref = np.linalg.svd(a64, compute_uv=False)
    np.testing.assert_array_less(np.abs(s64 - ref), 4 * e * ref[:, :1] + 0 * ref)
    norms = np.linalg.norm(a64, axis=1, keepdims=True)
    cond = np.linalg.cond(a64 / norms)[:, None]
    np.testing.assert_array_less(np.abs(s64 - ref), 10 * e * cond * ref)
    recon = (u64 * s64[:, None, :]) @ vh64
    tol = C * 3 * e  # this file's tolerance for 3x3s (S relative to s_1)
    np.testing.assert_array_less(np.abs(recon - a64).max(axis=(1, 2)), tol * ref[:, 0])
    eye = np.eye(3)
    assert np.abs(np.swapaxes(u64, 1, 2) @ u64 - eye).max() <= tol
    assert np.abs(vh64 @ np.swapaxes(vh64, 1, 2) - eye).max() <= tol


def test_3x3_float32_tol_below_eps_goes_to_the_general_kernel():
    """float32 sweeps cannot meet a tol below float32's eps: the lanes hand every matrix over
    (MORE) to the general kernel (float64 dot products), which meets 1e-7 (and, like every
    float32 kernel, not 1e-9)."""
    from minigrad.linalg import _jacobi as jac
    from minigrad.linalg._svd_forward import _tolerances

    a = np.random.default_rng(3).standard_normal((40, 3, 3)).astype(np.float32)
    tol = _tolerances(1e-7, 60, 3, np.float32)
    u, vh = np.empty((40, 3, 3), np.float32), np.empty((40, 3, 3), np.float32)
    s, status = np.empty((40, 3), np.float32), np.empty(40, np.int8)
    jac.svd_lanes3(a, True, tol, u, s, vh, status)
    assert (status == jac.MORE).all()
    u, s, vh = svd_forward(a, tol=1e-7)
    ref = np.linalg.svd(a.astype(np.float64), compute_uv=False)
    bound = np.broadcast_to(C * eps(np.float32) * ref[:, :1], ref.shape)  # as sgesvd's
    np.testing.assert_array_less(np.abs(s - ref), bound)
    recon = (u.astype(np.float64) * s[:, None, :]) @ vh
    np.testing.assert_allclose(recon, a, atol=C * 3 * eps(np.float32) * ref.max())


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("full", [True, False])
def test_3x3_kernel_matches_the_general_one(dtype, full):
    """Batches of 3x3 have a kernel of their own (svd_lanes3); every matrix of a hard batch
    must come out as the general kernel gives it: S to relative accuracy, U and V the same
    (signs included) where S has no ties, an orthonormal factorisation everywhere."""
    from minigrad.linalg._svd_batch import _svd_batched_general
    from minigrad.linalg._svd_forward import _tolerances

    a = _hard_3x3(dtype)
    u, s, vh = svd_forward(a, full)
    tol = _tolerances(None, 60, 3, dtype)
    # the general kernel as the driver runs it (float64 work for every dtype)
    (ug, sg, vhg), status = _svd_batched_general(a, True, True, tol)
    ug, sg, vhg = ug.astype(dtype), sg.astype(dtype), vhg.astype(dtype)
    assert not status.any()
    e = eps(dtype)
    # Jacobi's relative accuracy: eps times the condition of A with its columns normalised.
    a64 = a.astype(np.float64)
    a64 /= np.maximum(np.abs(a64).max(axis=(1, 2), keepdims=True), 1e-300)
    norms = np.linalg.norm(a64, axis=1, keepdims=True)
    cond = np.linalg.cond(a64 / np.where(norms > 0, norms, 1.0))
    cond = np.where(np.isfinite(cond), cond, 1.0)[:, None]
    np.testing.assert_array_less(np.abs(s - sg), 10 * e * cond * sg + np.finfo(dtype).tiny)
    distinct = np.all(np.diff(sg.astype(np.float64), axis=1) < -1e-3 * sg[:, :1], axis=1)
    assert distinct.sum() > 60
    np.testing.assert_allclose(u[distinct], ug[distinct], atol=200 * e)
    np.testing.assert_allclose(vh[distinct], vhg[distinct], atol=200 * e)
    finite = np.ones(a.shape[0], bool)
    finite[[7, 8]] = False  # reconstruction there is checked scaled, below
    check_svd(a[finite], full)
    for b in (7, 8):
        scale = float(np.abs(a[b]).max())
        check_svd((a[b:b + 1].astype(np.float64) / scale).astype(dtype), full)
        np.testing.assert_allclose(s[b] / scale, svd_forward(a[b:b + 1] / scale)[1][0],
                                   rtol=10 * e)
    _, s_only, _ = svd_forward(a, compute_uv=False)
    np.testing.assert_array_less(np.abs(s_only - s), 10 * e * cond * s + np.finfo(dtype).tiny)
    a[40, 1, 2] = np.inf
    with pytest.raises(LinAlgError, match=r"not finite.*\(40,\)"):
        svd_forward(a, full)


def orthogonal(rng, n: int) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.sign(np.diagonal(r))


def with_spectrum(rng, m: int, s: np.ndarray) -> np.ndarray:
    """m x len(s) with singular values s and random (not graded) singular vectors."""
    n = s.size
    return (orthogonal(rng, m)[:, :n] * s) @ orthogonal(rng, n)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gram_start_on_well_conditioned_input(dtype):
    """The start (V0, a V0): V0 orthonormal, and a V0's columns orthogonal to below
    sqrt(eps) in descending norm, those norms being the singular values."""
    a = np.random.default_rng(21).standard_normal((80, 60)).astype(dtype)
    v0, b = _svd_gram._gram_start(a)
    e = eps(dtype)
    assert v0.dtype == b.dtype == dtype
    np.testing.assert_allclose(v0.T @ v0, np.eye(60), rtol=0, atol=C * 60 * e)
    norms = np.linalg.norm(b, axis=0)
    assert np.all(np.diff(norms) <= 0)
    cos = (b.T @ b) / np.outer(norms, norms) - np.eye(60)
    assert np.max(np.abs(cos)) <= np.sqrt(e)
    np.testing.assert_allclose(norms, np.linalg.svd(a.astype(np.float64), compute_uv=False),
                               rtol=C * 80 * e)


@pytest.mark.parametrize("kind", ["graded", "ill-conditioned", "rank-deficient", "zero",
                                  "nan"])
def test_gram_start_refuses(kind):
    """Where the eigenvector start would cost accuracy, or has nothing to offer, the gate
    keeps the plain sweeps: graded columns (gate (b), though cond(a)^2 passes (a)), cond
    above eps^-3/8 (gate (a)), a rank deficiency, zero, NaN."""
    rng = np.random.default_rng(22)
    a = rng.standard_normal((80, 60))
    if kind == "graded":
        a = a * np.logspace(0, -2, 60)
        assert np.linalg.cond(a) ** 2 < _svd_gram._COND2
    elif kind == "ill-conditioned":
        a = with_spectrum(rng, 80, np.logspace(0, -7, 60))
    elif kind == "rank-deficient":
        a = low_rank(rng, 80, 60, 7)
    elif kind == "zero":
        a = np.zeros((80, 60))
    else:
        a[5, 5] = np.nan
    assert _svd_gram._gram_start(a) is None


@pytest.mark.parametrize("kind", ["rank-deficient", "zero", "tensor-network corner",
                                  "graded, 150 columns"])
def test_gram_start_refuses_a_singular_gram_before_its_eigh(monkeypatch, kind):
    """A Gram whose diagonal already shows cond^2 past the gate, or (up to 127 columns)
    whose Cholesky factor breaks down or shows it, is refused before the eigh, the start's
    dearest part, which gate (a) would refuse anyway. A well-conditioned one still takes
    its eigh and its start."""
    calls = []
    inner = _svd_gram.eigh_gram
    monkeypatch.setattr(_svd_gram, "eigh_gram", lambda *args: calls.append(1) or inner(*args))
    rng = np.random.default_rng(27)
    if kind == "rank-deficient":
        a = low_rank(rng, 80, 60, 7)
    elif kind == "zero":
        a = np.zeros((80, 60))
    elif kind == "graded, 150 columns":  # column norms 1 to 1e-8: cond^2 >= 1e16 > _COND2
        a = rng.standard_normal((200, 150)) * np.logspace(0, -8, 150)
    else:  # symmetric, its spectrum falling from 1 to rounding, as CTMRG's grown corner
        q = orthogonal(rng, 80)
        a = (q * np.logspace(0, -20, 80)) @ q.T
        a = a + a.T
    assert _svd_gram._gram_start(a) is None
    assert not calls
    if kind != "zero":
        check_svd(a, False, plan=Plan(Path.LONE, 1))
    assert _svd_gram._gram_start(rng.standard_normal((80, 60))) is not None
    assert calls


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gram_start_refuses_graded_columns_before_the_gram(monkeypatch, dtype):
    """Column norms spread past gate (a) are seen from A itself: no Gram is summed for
    column-graded A (at any scale within 2^+-400, where its squares are safe), while a
    matrix that differs only in that grading still takes its Gram and its start."""
    calls = []
    inner = _svd_gram._negated_gram
    monkeypatch.setattr(_svd_gram, "_negated_gram",
                        lambda *args: calls.append(1) or inner(*args))
    rng = np.random.default_rng(30)
    a = rng.standard_normal((90, 64))
    big = 2.0**300 if dtype == np.float64 else 2.0**60  # (float32: 1e-8 of 2^-60 is normal)
    for scale in (1.0 / big, 1.0, big):
        graded = (a * scale * np.logspace(0, -8, 64)).astype(dtype)
        e = int(np.frexp(np.abs(graded).max())[1])
        assert _svd_gram._gram_start(graded, e) is None
        assert not calls
    e = int(np.frexp(np.abs(a).max() * big)[1])
    assert _svd_gram._gram_start((a * big).astype(dtype), e) is not None
    assert calls


@pytest.mark.parametrize("plan", [Plan(Path.LONE, 1), Plan(Path.LONE, 2), Plan(Path.QR, 1)],
                         ids=["lone", "lone-threads", "qr"])
@pytest.mark.parametrize("m", [24, 48])
def test_float32_starts_from_float64_eigenvectors(plan, m):
    """The start's Gram and eigh are float64 for float32 input too, so a V0's columns are
    orthogonal to float64's precision and rounded to float32 once: cond 1e3 in float32
    keeps every singular value to C * eps32 relatively (measured 0.4-1.7 eps32), where the
    sweeps from A itself lose up to cond * eps32 (36-48 eps32 measured)."""
    rng = np.random.default_rng(m + 1)
    a = with_spectrum(rng, m, np.logspace(0, -3, 24)).astype(np.float32)
    assert _svd_gram._gram_start(a) is not None
    ref = mp_singular_values(a)
    s = svd_forward(a, False, _plan=plan)[1]
    assert s.dtype == np.float32
    assert np.max(np.abs(s.astype(np.float64) - ref) / ref) <= C * eps(np.float32)


@pytest.mark.parametrize("m", [24, 48])
def test_gram_start_keeps_relative_accuracy(path, m):
    """cond 1e3 with unit-norm-like columns, which passes the gate: every singular value,
    the smallest included, to C * m * eps * cond relatively on every path (Jacobi's own
    bound, here cond(A D^-1) ~ cond(A))."""
    rng = np.random.default_rng(m)
    a = with_spectrum(rng, m, np.logspace(0, -3, 24))
    assert _svd_gram._gram_start(a) is not None
    ref = mp_singular_values(a)
    s = svd_forward(a, False, _plan=path)[1]
    rel = np.max(np.abs(s - ref) / ref)
    assert rel <= C * m * eps(np.float64) * np.linalg.cond(a)
    if path is not None:  # and within gate (b)'s factor 10 of the sweeps from A itself
        plain = svd_forward(a, False, _plan=path._replace(gram=False))[1]
        assert rel <= 10 * np.max(np.abs(plain - ref) / ref) + 2 * eps(np.float64)


@pytest.mark.parametrize("shape, plan", [((100, 100), Path.LONE), ((300, 80), Path.QR),
                                         ((80, 300), Path.QR)])
@pytest.mark.parametrize("threads", [1, 2])
def test_gram_start_saves_sweeps(shape, plan, threads):
    """The point of the start: from V0 one sweep converges, where from A itself 3 are not
    enough. (At 100 x 100 its rotations are so small, 8 n c max(c, t) ~1e-6 tol, that no
    sweep to confirm it runs: _jacobi.sweeps, and the threaded sweeps alike; the QR cases'
    first sweep rotates nothing.)"""
    a = np.random.default_rng(24).standard_normal(shape)
    check_svd(a, False, plan=Plan(plan, threads))
    u, s, vh = svd_forward(a, False, max_sweeps=1, _plan=Plan(plan, threads))
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=0,
                               atol=C * max(shape) * eps(np.float64) * s[0])
    with pytest.raises(LinAlgError, match="did not converge"):
        svd_forward(a, False, max_sweeps=3, _plan=Plan(plan, threads, False))


@pytest.mark.parametrize("shape", [(80, 60), (60, 80), (52, 52)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("full", [True, False])
def test_gram_path_sweeps_a_v0(shape, dtype, full):
    """The GRAM path (the default for these shapes) runs the batch kernel on A V0: a valid
    SVD within 3 sweeps, where the batch kernel on A itself does not converge in 3; and the
    same U, S and Vh (signs included) as the batch kernel on A, the spectrum being well
    separated here, wide matrices (decomposed through A^T) included."""
    a = np.random.default_rng(31).standard_normal(shape).astype(dtype)
    assert fwd.plan(1, *shape).path is Path.GRAM
    check_svd(a, full)
    u, s, vh = svd_forward(a, full, max_sweeps=3)
    with pytest.raises(LinAlgError, match="did not converge"):
        svd_forward(a, full, max_sweeps=3, _plan=Plan(Path.BATCHED, 1))
    u1, s1, vh1 = svd_forward(a, full, _plan=Plan(Path.BATCHED, 1))
    k = min(shape)
    # Vectors move by eps / gap: the gaps of a random spectrum are ~1e-2 of s_1 here.
    tol = 1e3 * C * max(shape) * eps(dtype)
    np.testing.assert_allclose(s, s1, rtol=0, atol=C * max(shape) * eps(dtype) * s1[0])
    np.testing.assert_allclose(u[:, :k], u1[:, :k], rtol=0, atol=tol)
    np.testing.assert_allclose(vh[:k], vh1[:k], rtol=0, atol=tol)


@pytest.mark.parametrize("m, kind", [(48, "clustered"), (120, "clustered"), (200, "graded"),
                                     (64, "graded"), (96, "tied")])
def test_gram_path_accuracy(m, kind):
    """Accuracy of the GRAM path where small_start accepts: clustered singular values
    (pairs 1e-9 apart), a spectrum graded to 1e-5 and exact ties, orthonormal U and V and
    reconstruction to C * m * eps, S to C * m * eps * s_1 (the tie tests' premise), and with
    m = 64 every value to C * m * eps * cond relatively (Jacobi's own bound)."""
    rng = np.random.default_rng(m)
    n = m // 2 if kind != "graded" else m * 3 // 4
    if kind == "clustered":
        s = np.repeat(np.linspace(1.0, 0.2, n // 2), 2) * (1 + 1e-9 * np.tile([0, 1], n // 2))
    elif kind == "tied":
        s = np.repeat([1.0, 0.5, 0.25, 0.125], n // 4)
    else:
        s = np.logspace(0, -5, n)
    a = with_spectrum(rng, m, s)
    assert _svd_gram.small_start(a, 0) is not None
    u, got, vh = svd_forward(a, False, _plan=Plan(Path.GRAM, 1))
    check_svd(a, False, plan=Plan(Path.GRAM, 1))
    check_svd(a, True, plan=Plan(Path.GRAM, 1))
    np.testing.assert_allclose(got, np.sort(s)[::-1], rtol=0, atol=C * m * eps(np.float64))
    if m == 64:
        ref = mp_singular_values(a)
        assert np.max(np.abs(got - ref) / ref) <= C * m * eps(np.float64) * np.linalg.cond(a)


def test_gram_path_refused_input_takes_the_plain_paths(monkeypatch):
    """Graded, rank-deficient and non-finite input: small_start refuses it (before the eigh
    where the Gram's diagonal or Cholesky factor shows it), and the plan's path without it
    runs: a valid SVD, the graded one's values relatively accurate."""
    calls = []
    inner = _svd_single._svd_qr
    monkeypatch.setattr(_svd_single, "_svd_qr", lambda *args, **kw: calls.append(1) or inner(
        *args, **kw))
    rng = np.random.default_rng(33)
    graded = rng.standard_normal((64, 64)) * np.logspace(0, -14, 64)
    assert _svd_gram.small_start(graded, 0) is None
    check_svd(graded, False)
    assert calls  # k = 64: the pivoted QR
    ref = mp_singular_values(graded)
    s = svd_forward(graded, False)[1]
    cond = np.linalg.cond(graded / np.linalg.norm(graded, axis=0))
    assert np.max(np.abs(s - ref) / ref) <= C * 64 * eps(np.float64) * cond
    calls.clear()
    assert fwd.plan(1, 54, 54).path is Path.GRAM
    check_svd(low_rank(rng, 54, 54, 4), True)
    assert not calls  # k = 54: the batch kernel
    calls.clear()
    starts = []
    monkeypatch.setattr(fwd, "small_start", lambda *args: starts.append(1))
    well = rng.standard_normal((70, 60))
    check_svd(well, False, plan=Plan(Path.GRAM, 1, False))  # no start: as refused input
    assert calls and not starts
    calls.clear()
    check_svd(rng.standard_normal((120, 80)), True)  # a full U of a tall A: Householder's Q
    assert calls and not starts
    bad = rng.standard_normal((60, 50))
    bad[3, 4] = np.inf
    with pytest.raises(LinAlgError, match="not finite"):
        svd_forward(bad)


@pytest.mark.parametrize("kind", ["graded", "tie", "opposite tie", "opposite close"])
@pytest.mark.parametrize("full", [True, False])
def test_symmetric_input_takes_u_from_v(monkeypatch, kind, full):
    """An exactly symmetric matrix on the pivoted QR route (its spectrum falling to 1e-18,
    as a tensor network's grown corner R + R^T, eigenvalues of both signs): U = V D, D the
    eigenvalues' signs, where every |A v_j - d_j s_j v_j| passes the bound (a tie of one
    sign too); where two values of opposite signs are tied or close, U is not V's, and U
    comes from the QR as for any matrix. Either way a valid SVD."""
    seen = []
    inner = _svd_single._left_of_symmetric
    monkeypatch.setattr(_svd_single, "_left_of_symmetric",
                        lambda *args: (lambda u: seen.append(u is not None) or u)(inner(*args)))
    rng = np.random.default_rng(41)
    n = 80
    lam = np.logspace(0, -18, n) * np.where(np.arange(n) % 3 == 1, -1.0, 1.0)
    if kind == "tie":
        lam[1] = lam[0]
    elif kind == "opposite tie":
        lam[1] = -lam[0]
    elif kind == "opposite close":
        lam[1] = -lam[0] * (1 - 1e-9)
    q = orthogonal(rng, n)
    a = (q * lam) @ q.T
    a = a + a.T
    assert fwd.plan(1, n, n).path is Path.GRAM and _svd_gram.small_start(a, 0) is None
    check_svd(a, full)
    assert seen == [kind in ("graded", "tie")]
    s = svd_forward(a, full)[1]
    np.testing.assert_allclose(s, np.sort(np.abs(2 * lam))[::-1], rtol=0,
                               atol=C * n * eps(np.float64) * s[0])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_finishing_kernels_match_their_numpy_references(dtype):
    """The lone matrix's finishing kernels (_jacobi.py's fix_signs, is_symmetric,
    symmetric_left) against the numpy they replace: the signs bit for bit (ties of
    magnitude, a zero column, complement columns and rows), symmetry exactly (a mismatch in
    each kind of tile, NaN), U from V the same +-v_j and the same refusals."""
    rng = np.random.default_rng(43)
    for m, r, k, r2, n in [(80, 80, 80, 80, 80), (60, 60, 40, 60, 40), (90, 50, 50, 70, 70),
                           (5, 5, 3, 4, 4)]:
        u = rng.standard_normal((m, r)).astype(dtype)
        vh = rng.standard_normal((r2, n)).astype(dtype)
        u[1, 2], u[3, 2] = -9.0, 9.0  # a tie of magnitude: the first decides
        u[:, -1] = 0.0
        vh[-1, 0], vh[-1, 1] = 9.0, -9.0
        got, ref = (u.copy(), vh.copy()), (u.copy(), vh.copy())
        _svd_single._fix_signs(*got, k)
        _svd_single.plain_fix_signs(*ref, k)
        for x, y in zip(got, ref):
            assert x.tobytes() == y.tobytes()
        assert got[0][1, 2] == 9.0 and got[1][-1, 0] == 9.0
    a = rng.standard_normal((70, 70)).astype(dtype)
    a = a + a.T
    assert _svd_single._symmetric(a)
    for i, j in [(40, 3), (3, 40), (69, 68), (5, 5), (66, 0)]:
        b = a.copy()
        b[i, j] = np.nan if i == j else b[i, j] + 1
        assert not _svd_single._symmetric(b) and not np.array_equal(b, b.T)
    n = 64
    for lam1 in [None, -1.0]:  # graded; a tie of opposite signs (refused: U is not V D)
        lam = np.logspace(0, -18, n) * np.where(np.arange(n) % 3 == 1, -1.0, 1.0)
        if lam1 is not None:
            lam[1] = lam1 * lam[0]
        q = orthogonal(rng, n)
        a = (q * lam) @ q.T
        a = (a + a.T).astype(dtype)
        w, v = np.linalg.eigh(a.astype(np.float64))
        order = np.argsort(-np.abs(w))
        s = np.abs(w[order]).astype(dtype)
        vh = v[:, order].T
        if lam1 is not None:  # as Jacobi may leave the tied pair: any basis of its plane
            vh[:2] = np.array([[1.0, 1.0], [1.0, -1.0]]) / np.sqrt(2.0) @ vh[:2]
        vh = np.ascontiguousarray(vh.astype(dtype))
        got = _svd_single._left_of_symmetric(a, vh, s)
        ref = _svd_single.plain_left_of_symmetric(a, vh, s)
        assert (got is None) == (ref is None) == (lam1 is not None)
        if ref is not None:
            # U = +-V column by column; the sign d_j is decided above rounding only where
            # |lambda_j| is: below, either sign passes the test, and the BLAS product's
            # rounding (A V against V^T A, whatever machine) picks it
            decided = s > 1e3 * n * eps(dtype) * s[0]
            assert got.flags.c_contiguous and decided[:5].all()
            assert np.array_equal(got[:, decided], ref[:, decided])
            assert np.array_equal(np.abs(got), np.abs(ref))
            vh[5, 3] = np.nan  # a NaN in V fails the test, as the reference's
            assert _svd_single._left_of_symmetric(a, vh, s) is None
            assert _svd_single.plain_left_of_symmetric(a, vh, s) is None


def test_a_refused_gram_start_takes_the_qr_preconditioning(monkeypatch):
    """One square matrix whose spectrum falls to rounding (a tensor network's truncated
    corner): the Gram start is refused, and Jacobi runs on R^T of the pivoted A P = Q R
    (on L of A P = Q L Q2^T without SciPy), within 8 sweeps where the sweeps on A itself
    need more; values only too, but for a matrix past _QR_VALUES_MAX, which keeps the
    sweeps on A (the QRs' copies)."""
    rng = np.random.default_rng(28)
    q = orthogonal(rng, 96)
    a = (q * np.logspace(0, -20, 96)) @ q.T
    a = a + a.T
    calls = []
    inner = _svd_single._svd_qr
    monkeypatch.setattr(_svd_single, "_svd_qr", lambda *args, **kw: calls.append(1) or inner(
        *args, **kw))
    check_svd(a, False, plan=Plan(Path.LONE, 1))
    u, s, vh = svd_forward(a, False, max_sweeps=8, _plan=Plan(Path.LONE, 1))
    assert calls
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=0,
                               atol=C * 96 * eps(np.float64) * s[0])
    with pytest.raises(LinAlgError, match="did not converge"):
        svd_forward(a, False, max_sweeps=8, _plan=Plan(Path.LONE, 1, False))
    calls.clear()
    _, values, _ = svd_forward(a, False, compute_uv=False, max_sweeps=8,
                               _plan=Plan(Path.LONE, 1))
    assert calls
    np.testing.assert_allclose(values, s, rtol=C * 96 * eps(np.float64))  # both relative
    calls.clear()
    monkeypatch.setattr(_svd_single, "_QR_VALUES_MAX", a.size - 1)
    svd_forward(a, False, compute_uv=False, _plan=Plan(Path.LONE, 1))
    assert not calls


def qr_route_input(kind: str) -> np.ndarray:
    """90 x 64 inputs of the QR route: column-graded, a truncated corner (spectrum to 1e-20)
    with rows of noise below, random."""
    rng = np.random.default_rng(29)
    if kind == "graded":
        return rng.standard_normal((90, 64)) * np.logspace(0, -12, 64)
    if kind == "corner":
        q = orthogonal(rng, 64)
        a = (q * np.logspace(0, -20, 64)) @ q.T
        return np.vstack([a + a.T, rng.standard_normal((26, 64)) * 1e-12])
    return rng.standard_normal((90, 64))


@pytest.mark.parametrize("kind", ["graded", "corner", "random"])
@pytest.mark.parametrize("full", [False, True])
def test_qr_route_accumulates_rotations_where_r_is_ill_conditioned(monkeypatch, kind, full):
    """Jacobi on R^T: where R's diagonal spans more than 1 / sqrt(eps n), R's left vectors
    are the accumulated rotations (_other_side would need a Householder QR there); on
    well-conditioned R, _other_side's product. Both give a valid SVD."""
    calls = []
    inner = _svd_single._other_side
    monkeypatch.setattr(_svd_single, "_other_side",
                        lambda *args: calls.append(1) or inner(*args))
    a = qr_route_input(kind)
    check_svd(a, full, plan=Plan(Path.QR, 1, False))
    assert bool(calls) == (kind == "random")


@pytest.mark.parametrize("shape", [(80, 80), (90, 64)])
@pytest.mark.parametrize("complete", [False, True])
def test_pivoted_qr_is_a_column_pivoted_qr(shape, complete):
    """_pivoted_qr (LAPACK's geqp3): A P = Q R with Q orthonormal, R upper triangular and
    |r_jj| non-increasing; Q m x m when complete."""
    pytest.importorskip("scipy")
    rng = np.random.default_rng(30)
    m, n = shape
    a = rng.standard_normal(shape) * np.logspace(0, -12, n)[rng.permutation(n)]
    q, r, perm = _svd_single._pivoted_qr(a, True, complete)
    assert q.shape == ((m, m) if complete else (m, n)) and r.shape == (n, n)
    assert sorted(perm) == list(range(n))
    tol = C * m * eps(np.float64)
    assert np.all(np.abs(q.T @ q - np.eye(q.shape[1])) <= tol)
    assert np.all(np.tril(r, -1) == 0)
    assert np.all(np.diff(np.abs(np.diagonal(r))) <= 0)
    assert np.all(np.abs(q[:, :n] @ r - a[:, perm]) <= tol * np.abs(a).max())
    assert _svd_single._pivoted_qr(a, False, False)[0] is None
    assert _svd_single._pivoted_qr(a.astype(np.complex128), True, False) is None


@pytest.mark.parametrize("kind", ["graded", "corner", "random"])
@pytest.mark.parametrize("full", [False, True])
def test_qr_route_takes_the_pivoted_qr_and_without_it_two_qrs(monkeypatch, kind, full):
    """The QR route (a refused Gram start) runs Jacobi on R of the pivoted QR where SciPy
    is there; without it (a runtime dependency numpy alone), on L of A P = Q L Q2^T. Both
    give a valid SVD, and the same values."""
    pytest.importorskip("scipy")
    a = qr_route_input(kind)
    calls = []
    inner = _svd_single._pivoted_qr
    monkeypatch.setattr(_svd_single, "_pivoted_qr", lambda *args: calls.append(1) or inner(
        *args))
    plan = Plan(Path.QR, 1, False)
    check_svd(a, full, plan=plan)
    assert calls
    values = svd_forward(a, full, False, _plan=plan)[1]
    monkeypatch.setattr(_svd_single, "_pivoted_qr", lambda *args: None)
    check_svd(a, full, plan=plan)
    # relatively where the sweeps keep relative accuracy (cond(A D^-1) small); the corner's
    # tail (cond 1e20 with unit-norm-like columns) only to the largest value's rounding
    tol = C * 90 * eps(np.float64)
    np.testing.assert_allclose(svd_forward(a, full, False, _plan=plan)[1], values,
                               rtol=0 if kind == "corner" else tol,
                               atol=tol * values[0] if kind == "corner" else 0)


@pytest.mark.parametrize("shape", [(200, 60), (60, 200)])
@pytest.mark.parametrize("full, compute_uv, taken", [(False, True, True), (True, False, True),
                                                     (False, False, True),
                                                     (True, True, False)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tall_gram_path(monkeypatch, shape, full, compute_uv, taken, dtype):
    """Tall (or wide) and well conditioned: Cholesky QR of a V0 instead of Householder QR,
    except when the full U is wanted, whose last m - k columns only Householder gives."""
    calls = []
    inner = _svd_single._svd_gram_tall
    monkeypatch.setattr(_svd_single, "_svd_gram_tall",
                        lambda *args: calls.append(inner(*args)) or calls[-1])
    a = np.random.default_rng(25).standard_normal(shape).astype(dtype)
    if compute_uv:
        check_svd(a, full, plan=Plan(Path.QR, 1))
    else:
        u, s, vh = svd_forward(a, full, compute_uv=False, _plan=Plan(Path.QR, 1))
        assert u is None and vh is None and s.dtype == dtype
        np.testing.assert_allclose(s, np.linalg.svd(a.astype(np.float64), compute_uv=False),
                                   rtol=0, atol=C * 200 * eps(dtype) * s[0])
    assert (bool(calls) and calls[-1] is not None) == taken  # run, and not refused


def test_tall_gram_path_refuses_columns_far_from_orthogonal():
    """Cholesky QR only where Gershgorin keeps cond(b D^-1) <= sqrt(3): random columns of a
    200 x 60 (cosines ~ 0.07 each, summing past 1/2) are refused, and A V0 taken."""
    a = np.random.default_rng(26).standard_normal((200, 60))
    tol = fwd._tolerances(None, fwd.DEFAULT_MAX_SWEEPS, 200, np.float64)
    assert _svd_single._svd_gram_tall(np.eye(60), a, True, tol, 1) is None
    v0, b = _svd_gram._gram_start(a)
    status, u, s, vh = _svd_single._svd_gram_tall(v0, b, True, tol, 1)
    assert status == OK
    np.testing.assert_allclose((u * s) @ vh, a, rtol=0, atol=C * 200 * eps(np.float64) * s[0])


@pytest.mark.parametrize("scale", [1.0, 0.0, 1e-310, 1e300, np.nan, np.inf])
@pytest.mark.parametrize("shape", [(7, 5), (5, 7)])
def test_scaled_rows_of_one_matrix_match_the_batch(scale, shape):
    """A lone matrix's rows scaled by Python scalars (its own lane) are the batch path's bit
    for bit, with the same exponent and status, for normal, zero, subnormal, huge and
    non-finite input, tall or wide."""
    trans = shape[0] < shape[1]
    a = np.random.default_rng(6).standard_normal(shape)
    if np.isfinite(scale):
        a = a * scale
    else:
        a[1, 2] = scale  # one NaN or Inf entry
    pair = np.stack([a, np.ones_like(a)])  # the same matrix inside a batch of two
    st1, st2 = np.full(1, 9, np.int8), np.full(2, 9, np.int8)
    rows = (min(shape), max(shape))
    X1, X2 = np.empty((1,) + rows), np.empty((2,) + rows)
    e1 = _svd_batch._scale_rows(a[None], trans, st1, X1)
    e2 = _svd_batch._scale_rows(pair, trans, st2, X2)
    np.testing.assert_array_equal(X1[0], X2[0])
    assert e1.dtype == e2.dtype and e1[0] == e2[0] and st1[0] == st2[0]
