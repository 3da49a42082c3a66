"""The SVD forward on hard but ordinary input (issue 10): wherever numpy.linalg.svd returns
a finite answer, so does minigrad, to the precision of the dtype, or it raises a clear error.

Rank-deficient and clustered spectra, extreme magnitudes, bad options, byte orders and
memory layouts, against numpy; ndarray-level, through every dispatch path.
"""

import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad.linalg._svd_forward import Path, Plan
from minigrad.linalg._svd_forward import svd_forward as _svd_forward
from minigrad.linalg.errors import LinAlgError

C = 5  # the "small multiple" in every tolerance

# LONE and QR start from A^T A's eigenvectors where _gram_start allows (random input
# mostly): the "-plain" plans keep the sweeps from A itself on that input too.
PLANS = {"batched": None, "lone": Plan(Path.LONE, 1), "lone-threads": Plan(Path.LONE, 2),
         "qr": Plan(Path.QR, 1), "lone-plain": Plan(Path.LONE, 1, False),
         "qr-plain": Plan(Path.QR, 1, False)}


@pytest.fixture(params=list(PLANS))
def plan(request):
    return PLANS[request.param]


def svd(a, full=True, plan=None, **kwargs):
    return _svd_forward(a, full, _plan=plan if np.ndim(a) == 2 else None, **kwargs)


def check(a: np.ndarray, full: bool = True, plan: Plan | None = None, **kwargs) -> tuple:
    """svd(a) is finite, reconstructs a, has orthonormal factors and S within
    C * rows * eps * s_1 of numpy's (see check_against)."""
    u, s, vh = svd(a, full, plan, **kwargs)
    check_against(a, u, s, vh)
    return u, s, vh


def check_against(a, u, s, vh):
    """Tolerances relative to s_1, where the dtype's precision is, plus a few subnormal
    spacings: a matrix scaled into the subnormals has lost bits before the SVD starts."""
    *_, m, n = a.shape
    k = min(m, n)
    finfo = np.finfo(a.dtype)
    a64 = a.astype(np.float64)
    ref = np.linalg.svd(a64, compute_uv=False)
    top = ref[..., :1]
    tol = C * max(m, n) * float(finfo.eps)
    floor = 4 * float(finfo.smallest_subnormal) * max(m, n)
    for x in (u, s, vh):
        assert np.isfinite(x).all() and x.dtype == a.dtype
    s64 = s.astype(np.float64)
    assert np.all(np.abs(s64 - ref) <= tol * top + floor)
    assert np.all(np.diff(s64, axis=-1) <= 0) and np.all(s64 >= 0)
    u64, vh64 = u.astype(np.float64), vh.astype(np.float64)
    rec = (u64[..., :k] * s64[..., None, :]) @ vh64[..., :k, :]
    assert np.all(np.abs(rec - a64) <= (tol * top + floor)[..., None])
    assert np.all(np.abs(np.swapaxes(u64, -1, -2) @ u64 - np.eye(u.shape[-1])) <= tol)
    assert np.all(np.abs(vh64 @ np.swapaxes(vh64, -1, -2) - np.eye(vh.shape[-2])) <= tol)


def mp_singular_values(a: np.ndarray) -> np.ndarray:
    """Singular values of a (exactly as stored), descending, in enough digits to resolve
    its smallest entries next to its largest (mpmath's precision is absolute, relative to
    the largest entry)."""
    mpmath = pytest.importorskip("mpmath")
    mags = np.abs(a[a != 0].astype(np.float64))
    dps = 40 + int(np.log10(mags.max() / mags.min())) if mags.size else 40
    with mpmath.workdps(dps):
        rows = [[mpmath.mpf(float(x)) for x in row] for row in a.astype(np.float64)]
        s = mpmath.svd_r(mpmath.matrix(rows), compute_uv=False)
        return np.sort(np.array([float(x) for x in s]))[::-1]


# ---- rank deficiency and clusters ---------------------------------------------------------

def rank_k(rng, m, n, r, dtype):
    return (rng.standard_normal((m, r)) @ rng.standard_normal((r, n))).astype(dtype)


def deficient(kind: str, rng, m: int, n: int, dtype) -> np.ndarray:
    a = rng.standard_normal((m, n)).astype(dtype)
    if kind == "rank-1":
        return rank_k(rng, m, n, 1, dtype)
    if kind == "rank-half":
        return rank_k(rng, m, n, max(1, min(m, n) // 2), dtype)
    if kind == "ones":
        return np.ones((m, n), dtype)
    if kind == "zero-row":
        a[m // 2] = 0
    elif kind == "duplicate-row":
        a[m - 1] = a[0]
    elif kind == "duplicate-column":
        a[:, n - 1] = a[:, 0]
    elif kind == "zero-columns":
        a[:, ::2] = 0
    return a


KINDS = ["rank-1", "rank-half", "ones", "zero-row", "duplicate-row", "duplicate-column",
         "zero-columns"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(16, 16), (8, 8), (24, 9), (9, 24)])
def test_rank_deficient_family(plan, kind, dtype, shape):
    """Columns that end as rounding noise count as converged: no LinAlgError, and the
    zero singular values come out at the rounding level."""
    rng = np.random.default_rng(abs(hash((kind, shape))) % 2**32)
    a = deficient(kind, rng, *shape, dtype)
    check(a, True, plan)
    check(a, False, plan)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4), (8, 4), (6, 6)])
def test_rank_deficient_family_batched(kind, dtype, shape):
    """The same in batches (the lanes for k <= 4), mixed with full-rank matrices."""
    rng = np.random.default_rng(abs(hash((kind, shape, "b"))) % 2**32)
    a = np.stack([deficient(kind, rng, *shape, dtype) if i % 3 else
                  rng.standard_normal(shape).astype(dtype) for i in range(70)])
    check(a, True)
    check(a, False)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ones_100x60_through_the_public_svd(dtype):
    """mg.linalg.svd(mg.ones(100, 60)) (float32: rank 1, through LAPACK QR + Jacobi on R)
    failed to converge."""
    U, S, Vh = mg.linalg.svd(mg.ones(100, 60, dtype=dtype))
    s = S.numpy().astype(np.float64)
    assert abs(s[0] - math.sqrt(6000)) <= 100 * np.finfo(dtype).eps * s[0]
    assert np.all(s[1:] <= 100 * np.finfo(dtype).eps * s[0])
    check(np.ones((100, 60), dtype))


def test_float32_zero_row_and_duplicated_row():
    """float32 16x16 with a zero row, and 8x8 with a duplicated row: the noise left of the
    deficiency sank into float32's subnormals, where no rotation can orthogonalise it."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 16)).astype(np.float32)
    a[3] = 0
    b = rng.standard_normal((8, 8)).astype(np.float32)
    b[2] = b[5]
    for plan in PLANS.values():
        check(a, True, plan)
        check(b, True, plan)


def graded_rank_deficient(n: int = 96, r: int = 12, decades: float = 140.0, seed: int = 3):
    """The failure mode of a 576 x 576 TRG matrix of numerical rank 62: a rank deficiency
    (noise columns that shrink by eps each sweep) among columns graded down to 1e-140
    (their squares are near float64's underflow)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, r)) @ rng.standard_normal((r, n))
    return a * np.logspace(0, -decades, n)


def test_graded_rank_deficient(plan):
    a = graded_rank_deficient()
    check(a, True, plan)
    check(a.T, False, plan)


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# shared/ sits beside the checkout (or beside the folder of worktrees).
DATA_576 = next((p for p in (os.path.join(ROOT, up, "shared", "data", "jacobi_noconv_576.npz")
                             for up in ("..", os.path.join("..", ".."))) if os.path.exists(p)),
                None)


@pytest.mark.skipif(DATA_576 is None, reason="shared/data/jacobi_noconv_576.npz is not here")
def test_the_576_trg_matrix():
    a = np.load(DATA_576)["A"]
    u, s, vh = check(a, False)
    assert s.shape == (576,)


def test_unit_column_beside_two_1e_minus_160_columns(plan):
    """One unit column and two 1e-160 columns (their squares underflow) failed at 1000
    sweeps; now it converges, U stays orthonormal and the tiny values are relatively right."""
    rng = np.random.default_rng(1)
    a = np.empty((3, 3))
    a[:, 0] = rng.standard_normal(3)
    a[:, 0] /= np.linalg.norm(a[:, 0])
    a[:, 1:] = rng.standard_normal((3, 2)) * 1e-160
    u, s, vh = check(a, True, plan, max_sweeps=20)
    np.testing.assert_allclose(s, mp_singular_values(a), rtol=1e-13)


# ---- extreme magnitudes -------------------------------------------------------------------

def test_all_subnormal_input(plan):
    a = np.array([[3e-320, 1e-320], [2e-320, 4e-321]])
    u, s, vh = check(a, True, plan)
    # Subnormal input is exact in binary; its singular values to float64 precision, which
    # then round to the few bits a subnormal holds.
    np.testing.assert_allclose(s, mp_singular_values(a), rtol=0, atol=2 * 5e-324)


@pytest.mark.parametrize("dtype, scale", [(np.float64, 1e-315), (np.float32, 1e-40),
                                          (np.float64, 1e-300), (np.float64, 1e300),
                                          (np.float32, 1e-30), (np.float32, 1e30)])
def test_scaled_matrix_keeps_its_singular_values(plan, dtype, scale):
    """A 64x64 matrix times a tiny or huge scale (1e-315 and float32's 1e-40 are subnormal;
    they gave S = 0 and NaN in Vh): S scales with it, and the factors stay orthonormal."""
    a = np.random.default_rng(2).standard_normal((64, 64))
    base = svd(a.astype(dtype), True, plan)[1].astype(np.float64)
    scaled = (a * scale).astype(dtype)
    u, s, vh = check(scaled, True, plan)
    finfo = np.finfo(dtype)
    err = np.abs(s.astype(np.float64) - base * scale)
    assert np.all(err <= C * 64 * finfo.eps * base[0] * scale + 64 * 4 * finfo.smallest_subnormal)


@pytest.mark.parametrize("a", [
    np.random.default_rng(6).standard_normal((6, 6)) * np.logspace(0, -201, 6),
    np.array([[1.0, 1e-160], [0.5, -3e-160]]),
    np.random.default_rng(7).standard_normal((5, 3)) * [1.0, 1e-150, 1e-290],
], ids=["6x6 graded to 1e-201", "2x2 with 1e-160", "5x3 to 1e-290"])
def test_widely_graded_columns(plan, a):
    """Columns spanning 1 .. 1e-201: U lost orthogonality (|U^T U - I| = 1.2); now U and
    V are orthonormal and every singular value has Jacobi's relative accuracy."""
    u, s, vh = check(a, True, plan)
    np.testing.assert_allclose(s, mp_singular_values(a), rtol=1e-13)


def test_float16_overflowing_singular_value_raises():
    """float16 [[6e4, 6e4], [6e4, 6e4]]: S = 1.2e5 does not fit float16 (max 65504). Raise,
    naming the value, as torch refuses an overflowing cast; never S = [inf, 0]."""
    a = np.full((2, 2), 6e4, dtype=np.float16)
    with pytest.raises(LinAlgError, match=r"120000.*float16.*65504"):
        _svd_forward(a)
    with pytest.raises(LinAlgError, match=r"120000.*float16"):
        _svd_forward(a, compute_uv=False)
    with pytest.raises(LinAlgError, match=r"120000.*float16"):
        mg.linalg.svd(mg.tensor(a))
    with pytest.raises(LinAlgError, match=r"120000.*float16"):
        mg.linalg.svdvals(mg.tensor(a, requires_grad=True))
    # In range, float16 works: 3e4 * 2 = 6e4.
    s = _svd_forward(np.full((2, 2), 3e4, dtype=np.float16))[1]
    assert s.dtype == np.float16 and float(s[0]) == 6e4 and float(s[1]) == 0


def test_float64_overflowing_singular_value_raises():
    a = np.full((4, 4), 1e308)
    assert not np.isfinite(np.linalg.svd(a, compute_uv=False)).all()  # numpy gives inf too
    with pytest.raises(LinAlgError, match="float64 without overflow"):
        _svd_forward(a)


# ---- options and inputs -------------------------------------------------------------------

@pytest.mark.parametrize("tol", [1.0, 2.0, 0.0, -1.0, float("nan"), float("inf")])
def test_tol_out_of_range(tol):
    with pytest.raises(ValueError, match=r"tol .* \(0, 1\)"):
        _svd_forward(np.eye(3), tol=tol)
    with pytest.raises(ValueError, match=r"tol .* \(0, 1\)"):
        mg.linalg.svd(mg.eye(3), tol=tol)


@pytest.mark.parametrize("tol", ["1e-8", True, [1e-8]])
def test_tol_of_wrong_type(tol):
    with pytest.raises(TypeError, match="tol must be a real number"):
        _svd_forward(np.eye(3), tol=tol)


@pytest.mark.parametrize("tol", [1e-3, 1e-10, 1e-15, np.float32(1e-6)])
def test_valid_tol(tol):
    a = np.random.default_rng(3).standard_normal((3, 6, 5))
    u, s, vh = _svd_forward(a, tol=tol)
    ref = np.linalg.svd(a, compute_uv=False)
    # A loose tol loosens orthogonality, but never zeroes real singular values.
    assert np.all(np.abs(s - ref) <= max(float(tol), 1e-15) * 100 * ref[..., :1])


@pytest.mark.parametrize("bad, err", [(0, ValueError), (-3, ValueError), (1.5, TypeError),
                                      (True, TypeError), ("10", TypeError)])
def test_bad_max_sweeps(bad, err):
    with pytest.raises(err, match="max_sweeps"):
        _svd_forward(np.eye(3), max_sweeps=bad)


def test_huge_max_sweeps_means_no_cap():
    a = np.random.default_rng(4).standard_normal((2, 5, 5))
    for sweeps in (2**63, 2**100, np.int64(2**62)):
        np.testing.assert_array_equal(_svd_forward(a, max_sweeps=sweeps)[1], _svd_forward(a)[1])
    assert mg.linalg.svd(mg.tensor(a[0]), max_sweeps=2**63).S.shape == (5,)


@pytest.mark.parametrize("dtype", [">f8", ">f4", ">f2", "<f8"])
def test_any_byte_order(dtype):
    a = np.random.default_rng(5).standard_normal((2, 4, 3))
    native = np.dtype(dtype).newbyteorder("=")
    got = _svd_forward(a.astype(dtype))
    want = _svd_forward(a.astype(native))
    for g, w in zip(got, want):
        assert g.dtype == native
        np.testing.assert_array_equal(g, w)


def test_refused_dtypes_still_refused():
    for dtype in (np.int32, np.complex64, np.longdouble if np.finfo(np.longdouble).bits > 64
                  else np.uint8):
        with pytest.raises(TypeError, match="floating-point"):
            _svd_forward(np.ones((2, 2), dtype))


# ---- fuzz against numpy -------------------------------------------------------------------

def _layout(a: np.ndarray, how: str) -> np.ndarray:
    """The same values as a, in another memory layout."""
    if how == "fortran":
        return np.asfortranarray(a)
    if how == "negative-strides":
        return np.ascontiguousarray(a[..., ::-1, ::-1])[..., ::-1, ::-1]
    if how == "non-contiguous":
        big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
        big[..., ::2] = a
        return big[..., ::2]
    if how == "read-only":
        b = a.copy()
        b.flags.writeable = False
        return b
    return a


@st.composite
def matrices(draw):
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    m, n = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    rank = draw(st.integers(0, min(m, n)))
    if rank == min(m, n):
        a = rng.standard_normal(batch + (m, n))
    else:
        a = rng.standard_normal(batch + (m, rank)) @ rng.standard_normal(batch + (rank, n))
    big = 300 if dtype == np.float64 else 36
    expo = draw(st.floats(-big, big) | st.just(-315.0 if dtype == np.float64 else -42.0))
    graded = draw(st.booleans())
    if graded:
        a = a * np.logspace(0, -draw(st.floats(0, big / 3)), n)
    a = (a * 10.0**expo).astype(dtype)
    return a


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=matrices(), full=st.booleans(),
       layout=st.sampled_from(["c", "fortran", "negative-strides", "non-contiguous",
                               "read-only", "broadcast"]),
       path=st.sampled_from(list(PLANS)))
def test_fuzz_against_numpy(a, full, layout, path):
    if not np.isfinite(np.linalg.svd(a.astype(np.float64), compute_uv=False)).all():
        return
    if layout == "broadcast":
        x = np.broadcast_to(a, (2,) + a.shape)
    else:
        x = _layout(a, layout)
    ref = a if layout != "broadcast" else np.broadcast_to(a, (2,) + a.shape)
    u, s, vh = svd(x, full, PLANS[path])
    np.testing.assert_array_equal(x, ref)  # the input is left alone
    check_against(ref, u, s, vh)
