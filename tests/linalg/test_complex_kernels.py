"""ndarray-level tests of the complex SVD and Hermitian eigh forwards
(minigrad/linalg/_complex_forward.py): the real Jacobi kernels compiled for complex128.

The tolerances are the real kernels' (test_svd_kernels.py, test_eigh.py): c * max(m, n) *
eps of the precision (float32 for complex64), relative to the largest singular value (to
max |A| for eigh).
"""

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minigrad.linalg._complex_forward import complex_svd_forward, hermitian_eigh_forward
from minigrad.linalg._svd_forward import svd_forward
from minigrad.linalg.errors import LinAlgError

C_SVD = 5  # test_svd_kernels.py's C
C_EIGH = 8  # test_eigh.py's C
REAL = {np.complex64: np.float32, np.complex128: np.float64}
DTYPES = [np.complex64, np.complex128]


def eps(dtype) -> float:
    return float(np.finfo(dtype).eps)  # a complex dtype's is its real precision's


def crandn(rng, shape, dtype=np.complex128) -> np.ndarray:
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def unitary(rng, n: int) -> np.ndarray:
    q, r = np.linalg.qr(crandn(rng, (n, n)))
    return q * (np.diagonal(r) / np.abs(np.diagonal(r)))


def with_values(rng, m: int, n: int, s) -> np.ndarray:
    """m x n with singular values s (len min(m, n)) and random singular vectors."""
    k = len(s)
    return (unitary(rng, m)[:, :k] * np.asarray(s)) @ unitary(rng, n)[:k]


def ct(x: np.ndarray) -> np.ndarray:
    return np.conj(np.swapaxes(x, -1, -2))


def assert_gauge(u: np.ndarray, tol: float) -> None:
    """Each column's first entry of largest modulus is real (to rounding) and positive."""
    big = np.take_along_axis(u, np.argmax(np.abs(u), axis=-2)[..., None, :], axis=-2)
    assert np.all(big.real > 0) and np.all(np.abs(big.imag) <= tol * big.real)


def check_svd(a: np.ndarray, full: bool, c: float = C_SVD, **kw):
    """Shapes, dtypes, order, reconstruction, unitarity, S against numpy and the gauge."""
    u, s, vh = complex_svd_forward(a, full, **kw)
    *batch, m, n = a.shape
    k = min(m, n)
    batch = tuple(batch)
    assert u.shape == batch + ((m, m) if full else (m, k))
    assert vh.shape == batch + ((n, n) if full else (k, n))
    assert s.shape == batch + (k,)
    assert u.dtype == vh.dtype == a.dtype and s.dtype == REAL[a.dtype.type]
    assert np.all(s >= 0) and np.all(np.diff(s.astype(np.float64), axis=-1) <= 0)
    a64, u64, s64, vh64 = (x.astype(np.complex128) for x in (a, u, s, vh))
    s64 = s64.real
    tol = c * max(m, n) * eps(a.dtype)
    scale = np.maximum(s64[..., :1], np.finfo(np.float64).tiny)[..., None]
    rec = (u64[..., :k] * s64[..., None, :]) @ vh64[..., :k, :]
    assert np.all(np.abs(rec - a64) <= tol * scale)
    assert np.all(np.abs(ct(u64) @ u64 - np.eye(u.shape[-1])) <= tol)
    assert np.all(np.abs(vh64 @ ct(vh64) - np.eye(vh.shape[-2])) <= tol)
    ref = np.linalg.svd(a64, compute_uv=False)
    assert np.all(np.abs(s64 - ref) <= tol * scale[..., 0])
    assert_gauge(u64, tol)
    return u, s, vh


shapes = st.tuples(st.lists(st.integers(1, 3), min_size=0, max_size=2),
                   st.integers(1, 9), st.integers(1, 9))


@settings(max_examples=40, deadline=None)
@given(shape=shapes, dtype=st.sampled_from(DTYPES), full=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_random_matches_numpy(shape, dtype, full, seed):
    batch, m, n = shape
    check_svd(crandn(np.random.default_rng(seed), tuple(batch) + (m, n), dtype), full)


@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (3, 3), (8, 8), (16, 16), (33, 33),
                                   (64, 64), (70, 50), (50, 70), (3, 20, 12), (12, 20),
                                   (1, 9), (9, 1)])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("full", [True, False])
def test_sizes_wide_tall_batched(shape, dtype, full):
    check_svd(crandn(np.random.default_rng(7), shape, dtype), full)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_large_batch_of_3x3(dtype):
    """100000 matrices at once (the batch kernel's chunks and threads), values and vectors."""
    a = crandn(np.random.default_rng(1), (100_000, 3, 3), dtype)
    check_svd(a, False)


def test_values_only_are_the_values_with_vectors():
    a = crandn(np.random.default_rng(2), (4, 7, 5))
    u, s, vh = complex_svd_forward(a, compute_uv=False)
    assert u is None and vh is None
    np.testing.assert_array_equal(s, complex_svd_forward(a)[1])


@pytest.mark.parametrize("dtype", DTYPES)
def test_one_rotation_orthogonalises_two_columns(dtype):
    """Two columns with a complex inner product of any phase are made orthogonal by one
    rotation, so two sweeps (one rotating, one confirming) converge: a rotation that got
    the phase wrong leaves them far from orthogonal, and max_sweeps=2 then fails."""
    for phase in np.exp(1j * np.linspace(0.3, 6.0, 7)):
        a = np.array([[1.0, 0.6 * phase], [0.2j, 1.0 + 0.5j], [0.5, -0.3]], dtype)
        check_svd(a, True, max_sweeps=2)
        check_svd(a.T.copy(), False, max_sweeps=2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(60, 60), (90, 50), (50, 90)])
def test_one_large_graded_matrix_keeps_relative_accuracy(dtype, shape):
    """A lone large matrix (the Gram start, where its gates allow) with graded columns (or
    rows): every singular value, the tiny ones included, agrees with the batch path's (the
    sweeps on A itself, as a batch of one) to relative accuracy ~ n eps cond(B)."""
    rng = np.random.default_rng(16)
    k = min(shape)
    grading = np.logspace(0, -12, k)
    b = crandn(rng, shape)
    a = (b[:, :k] * grading if shape[0] >= shape[1] else b[:k] * grading[:, None])
    a = np.concatenate([a, b[:, k:]], axis=1) if shape[1] > k else a
    a = np.concatenate([a, b[k:]], axis=0) if shape[0] > k else a
    a = a.astype(dtype)
    s_one = check_svd(a, False)[1].astype(np.float64)
    s_batch = complex_svd_forward(a[None])[1][0].astype(np.float64)
    unit = b[:, :k] / np.linalg.norm(b[:, :k], axis=0) if shape[0] >= shape[1] else \
        b[:k] / np.linalg.norm(b[:k], axis=1)[:, None]  # B of A = B D (or D B)
    bound = C_SVD * max(shape) * eps(dtype) * np.linalg.cond(unit)
    assert np.max(np.abs(s_one - s_batch) / s_batch) <= bound


def mp_singular_values(a: np.ndarray) -> np.ndarray:
    """a's singular values to 50 digits (mpmath), descending."""
    with mpmath.workdps(50):
        m = mpmath.matrix([[mpmath.mpc(complex(x)) for x in row] for row in a.tolist()])
        s = mpmath.svd_c(m, compute_uv=False)
        return np.sort(np.array([float(x) for x in s]))[::-1]


@pytest.mark.parametrize("dtype", DTYPES)
def test_graded_relative_accuracy(dtype):
    """A = B diag(logspace(0, -14, n)): every singular value, the tiny ones included, to
    relative accuracy ~ n eps cond(B with unit columns), as for the real kernels."""
    n = 12
    rng = np.random.default_rng(12)
    b = crandn(rng, (n, n))
    a = (b * np.logspace(0, -14, n)).astype(dtype)
    ref = mp_singular_values(a)
    s = complex_svd_forward(a)[1].astype(np.float64)
    cond = np.linalg.cond(b / np.linalg.norm(b, axis=0))
    assert np.max(np.abs(s - ref) / ref) <= C_SVD * n * eps(dtype) * cond


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("spectrum", ["clustered", "ties", "unitary", "rank-deficient"])
def test_clustered_tied_and_deficient_spectra(dtype, spectrum):
    rng = np.random.default_rng(5)
    k = 6
    s = {"clustered": 1.0 + 1e-9 * np.arange(k)[::-1], "ties": [3, 3, 3, 1, 1, 0.5],
         "unitary": np.ones(k), "rank-deficient": [2, 1, 1, 0, 0, 0]}[spectrum]
    for m, n in ((k, k), (k + 3, k), (k, k + 2)):
        a = with_values(rng, m, n, s).astype(dtype)
        u, got, vh = check_svd(a, True)
        tol = C_SVD * max(m, n) * eps(dtype) * max(s)
        np.testing.assert_allclose(got, s, rtol=0, atol=tol)


def test_identity_and_phased_diagonals():
    """Diagonal matrices come out exact: S = |d| descending, U and Vh the (phased) identity."""
    d = np.array([2j, -3.0, 0.5 * np.exp(0.7j), 1.0])
    u, s, vh = check_svd(np.diag(d), True)
    np.testing.assert_array_equal(s, [3.0, 2.0, 1.0, 0.5])
    u, s, vh = check_svd(np.eye(5, dtype=np.complex64), True)
    np.testing.assert_array_equal(u, np.eye(5))


def test_errors_and_empty_inputs():
    a = crandn(np.random.default_rng(3), (2, 3, 4, 4))
    a[1, 2, 0, 3] = np.nan + 0j
    with pytest.raises(LinAlgError, match=r"not finite.*\(1, 2\)"):
        complex_svd_forward(a)
    a[1, 2, 0, 3] = complex(1.0, np.inf)
    with pytest.raises(LinAlgError, match="not finite"):
        complex_svd_forward(a)
    with pytest.raises(LinAlgError, match="did not converge in 1 sweeps"):
        complex_svd_forward(crandn(np.random.default_rng(4), (9, 9)), max_sweeps=1)
    big = crandn(np.random.default_rng(4), (60, 50))
    big[3, 4] = complex(np.nan, 0.0)  # one large matrix: the Gram start refuses it first
    with pytest.raises(LinAlgError, match="not finite"):
        complex_svd_forward(big)
    with pytest.raises(TypeError, match="complex"):
        complex_svd_forward(np.eye(3))
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        complex_svd_forward(np.ones(3, np.complex128))
    # the real driver (what the Tensor layer calls today) still refuses complex input
    with pytest.raises(TypeError, match="real floating-point"):
        svd_forward(np.eye(3, dtype=np.complex128))
    u, s, vh = complex_svd_forward(np.zeros((2, 0, 3), np.complex64))
    assert (u.shape, s.shape, vh.shape) == ((2, 0, 0), (2, 0), (2, 3, 3))
    assert u.dtype == vh.dtype == np.complex64 and s.dtype == np.float32
    np.testing.assert_array_equal(vh, np.broadcast_to(np.eye(3), (2, 3, 3)))


# ---- the Hermitian eigh -------------------------------------------------------------------

def hermitian(rng, shape, dtype=np.complex128) -> np.ndarray:
    a = crandn(rng, shape)
    return ((a + ct(a)) / 2).astype(dtype)


def check_eigh(a: np.ndarray, w: np.ndarray, v: np.ndarray, c: float = C_EIGH) -> None:
    """Ascending real w, unitary v, A v = v diag(w), w against numpy, to c n eps max|A|."""
    n = a.shape[-1]
    assert w.dtype == REAL[a.dtype.type] and v.dtype == a.dtype
    a64, v64, w64 = a.astype(np.complex128), v.astype(np.complex128), w.astype(np.float64)
    scale = np.abs(a64).max(axis=(-2, -1), keepdims=True) + np.finfo(np.float64).tiny
    tol = c * n * eps(a.dtype)
    assert np.all(np.diff(w64, axis=-1) >= 0)
    assert np.all(np.abs(ct(v64) @ v64 - np.eye(n)) <= tol)
    assert np.all(np.abs(a64 @ v64 - v64 * w64[..., None, :]) <= tol * scale)
    assert np.all(np.abs(w64 - np.linalg.eigvalsh(a64)) <= tol * scale[..., 0])
    assert_gauge(v64, tol)


@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (3, 3), (5, 8, 8), (33, 33), (40, 6, 6),
                                   (50, 50), (64, 64)])  # from 48 on: the A V sweeps
@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh_sizes_and_batches(shape, dtype):
    a = hermitian(np.random.default_rng(8), shape, dtype)
    w, v = hermitian_eigh_forward(a)
    check_eigh(a, w, v)
    w2, v2 = hermitian_eigh_forward(a, compute_v=False)
    assert v2 is None
    np.testing.assert_array_equal(w2, w)


@pytest.mark.parametrize("n", [2, 7, 50])
def test_eigh_reads_only_the_uplo_triangle(n):
    """The other triangle and the diagonal's imaginary part are never read (as LAPACK)."""
    a = hermitian(np.random.default_rng(9), (n, n))
    noise = crandn(np.random.default_rng(10), (n, n))
    lower = np.tril(a, -1) + np.triu(noise, 1) + np.diag(np.diagonal(a).real + 5j)
    upper = np.triu(a, 1) + np.tril(noise, -1) + np.diag(np.diagonal(a).real - 3j)
    w, v = hermitian_eigh_forward(a)
    for b, lo in ((lower, True), (upper, False)):
        wb, vb = hermitian_eigh_forward(b, lower=lo)
        np.testing.assert_array_equal(wb, w)
        np.testing.assert_array_equal(vb, v)
    check_eigh(a, w, v)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [6, 52])
def test_eigh_repeated_and_clustered_eigenvalues(dtype, n):
    rng = np.random.default_rng(11)
    q = unitary(rng, n)
    lam = np.repeat([-2.0, 1.0, 1.0 + 1e-9, 3.0], n // 4 + 1)[:n]
    a = ((q * lam) @ ct(q)).astype(dtype)
    w, v = hermitian_eigh_forward(a)
    check_eigh(a, w, v)
    np.testing.assert_allclose(w, np.sort(lam), rtol=0, atol=C_EIGH * n * eps(dtype) * 3)


def test_eigh_one_rotation_zeroes_a_complex_pair():
    """A 2x2 Hermitian matrix is diagonalised by one rotation whatever the phase of a_12:
    two sweeps suffice, which a wrong phase would not."""
    for phase in np.exp(1j * np.linspace(0.3, 6.0, 7)):
        a = np.array([[1.0, 0.8 * phase], [0.8 * np.conj(phase), -0.5]])
        w, v = hermitian_eigh_forward(a, max_sweeps=2)
        check_eigh(a, w, v)
    a = hermitian(np.random.default_rng(12), (5, 5))
    w, v = hermitian_eigh_forward(a, max_sweeps=1 + 8)
    check_eigh(a, w, v)


def check_non_finite_is_named(n: int, seed: int) -> np.ndarray:
    """NaN or Inf in batch element 1's lower triangle is named; in its upper triangle (not
    read) it changes nothing. Returns the finite batch."""
    a = hermitian(np.random.default_rng(seed), (3, n, n))
    a[1, n - 1, 1] = np.inf
    with pytest.raises(LinAlgError, match=r"batch element \(1,\).*not finite"):
        hermitian_eigh_forward(a)
    a[1, n - 1, 1] = 0
    w, v = hermitian_eigh_forward(a)
    a[1, 1, n - 1] = np.nan
    np.testing.assert_array_equal(hermitian_eigh_forward(a)[0], w)
    a[1, 1, n - 1] = 0
    check_eigh(a, w, v)
    return a


def test_eigh_errors_and_empty():
    check_non_finite_is_named(4, 13)
    with pytest.raises(LinAlgError, match="did not converge in 1 sweeps"):
        hermitian_eigh_forward(hermitian(np.random.default_rng(14), (8, 8)), max_sweeps=1)
    with pytest.raises(TypeError, match="complex"):
        hermitian_eigh_forward(np.eye(3))
    with pytest.raises(ValueError, match="square"):
        hermitian_eigh_forward(np.ones((2, 3), np.complex64))
    w, v = hermitian_eigh_forward(np.zeros((2, 0, 0), np.complex64))
    assert w.shape == (2, 0) and w.dtype == np.float32 and v.dtype == np.complex64


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(256, 256), (3, 96, 96)])
def test_eigh_of_large_matrices_starts_from_lapacks_vectors(dtype, shape):
    """From n = 48 the sweeps start from LAPACK's eigenvectors, as the real ones do: two
    sweeps suffice (from V = I a 256 x 256 took 11), to the same tolerances."""
    a = hermitian(np.random.default_rng(16), shape, dtype)
    w, v = hermitian_eigh_forward(a, max_sweeps=2)
    check_eigh(a, w, v)
    w2, v2 = hermitian_eigh_forward(a, compute_v=False, max_sweeps=2)
    assert v2 is None
    np.testing.assert_array_equal(w2, w)


@pytest.mark.parametrize("spectrum", ["ties", "graded", "rank-deficient", "diagonal-graded"])
def test_eigh_of_large_matrices_hard_spectra(spectrum):
    """Tied and clustered values, values spread over 24 decades, a rank-3 matrix, a
    diagonally graded D B D (smallest first: LAPACK's worst order): the start keeps the
    sweeps' accuracy (absolute, c n eps max|A|, as LAPACK's)."""
    n = 120
    rng = np.random.default_rng(17)
    q = unitary(rng, n)
    if spectrum == "diagonal-graded":
        d = np.logspace(-12, 0, n)
        a = (q * np.linspace(1.0, 3.0, n)) @ ct(q) * d * d[:, None]
    else:
        lam = {"ties": np.repeat([-1.0, 2.0, 2.0 + 1e-12, 5.0], n // 4),
               "graded": np.logspace(0, -24, n) * np.where(np.arange(n) % 2, -1.0, 1.0),
               "rank-deficient": np.r_[3.0, -2.0, 1.0, np.zeros(n - 3)]}[spectrum]
        a = (q * lam) @ ct(q)
        np.testing.assert_allclose(hermitian_eigh_forward(a)[0], np.sort(lam), rtol=0,
                                   atol=C_EIGH * n * eps(np.float64) * np.abs(a).max())
    w, v = hermitian_eigh_forward(a, max_sweeps=3)
    check_eigh(a, w, v)


def test_eigh_of_large_matrices_non_finite_and_refused_starts(monkeypatch):
    """Non-finite input in a batch is named as on the small path (LAPACK never sees it);
    where memory is short or LAPACK fails, the plain sweeps answer; a start that is off
    is finished by the sweeps."""
    from minigrad.linalg import _eigh_forward, _memory

    a = check_non_finite_is_named(50, 18)

    def fail(x):
        raise np.linalg.LinAlgError("Eigenvalues did not converge")

    monkeypatch.setattr(_memory, "fits", lambda need: False)
    check_eigh(a, *hermitian_eigh_forward(a))
    with pytest.raises(LinAlgError, match="did not converge in 2 sweeps"):
        hermitian_eigh_forward(a, max_sweeps=2)  # the plain sweeps, from V = I
    monkeypatch.undo()
    monkeypatch.setattr(_eigh_forward.np.linalg, "eigh", fail)
    check_eigh(a, *hermitian_eigh_forward(a))
    monkeypatch.undo()
    eigh = np.linalg.eigh
    turn = unitary(np.random.default_rng(20), 50) * 1e-3 + np.eye(50)  # orthogonal to 1e-6
    monkeypatch.setattr(_eigh_forward.np.linalg, "eigh", lambda x: (
        eigh(x)[0], np.linalg.qr(eigh(x)[1] @ turn)[0]))  # a start the sweeps must finish
    check_eigh(a, *hermitian_eigh_forward(a))
    with pytest.raises(LinAlgError, match="did not converge in 1 sweeps"):
        hermitian_eigh_forward(a, max_sweeps=1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh_graded_definite_keeps_relative_accuracy_below_the_start(dtype):
    """Below n = 48 the explicit sweeps keep Jacobi's relative accuracy (Demmel-Veselic),
    which a start from LAPACK's vectors would lose: A = D B D, D over 20 decades, smallest
    first (where LAPACK's eigenvalues of A are off by a factor of 1e21)."""
    rng = np.random.default_rng(19)
    g = crandn(rng, (5, 5))
    d = 10.0 ** np.arange(-20, 1, 5)
    b = g @ ct(g) + 5 * np.eye(5)
    a = (b * d * d[:, None]).astype(dtype)
    mpmath.mp.dps = 60
    m = mpmath.matrix([[mpmath.mpc(complex(x)) for x in row] for row in a.tolist()])
    ref = np.sort([float(x) for x in mpmath.eighe(m)[0]])
    w = hermitian_eigh_forward(a)[0].astype(np.float64)
    unit = b / np.sqrt(np.outer(np.diagonal(b).real, np.diagonal(b).real))
    assert np.max(np.abs(w - ref) / ref) <= C_EIGH * 5 * eps(dtype) * np.linalg.cond(unit)


@pytest.mark.parametrize("scale", [1e-310, 1e-200, 1e200, 1e300])
def test_extreme_magnitudes_are_scaled_exactly(scale):
    """Subnormal and huge input: the values scale exactly (powers of two inside)."""
    a = crandn(np.random.default_rng(15), (2, 4, 3))
    s = complex_svd_forward(a)[1]
    w = hermitian_eigh_forward(a[..., :3, :] + ct(a[..., :3, :]))[0]
    rtol = 1e-13 if scale > 1e-300 else 1e-2  # subnormal input has few digits to start with
    np.testing.assert_allclose(complex_svd_forward(a * scale)[1], s * scale, rtol=rtol, atol=0)
    np.testing.assert_allclose(hermitian_eigh_forward((a[..., :3, :] + ct(a[..., :3, :]))
                                                      * scale)[0], w * scale, rtol=rtol,
                               atol=0)
