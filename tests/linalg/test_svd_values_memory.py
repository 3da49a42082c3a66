"""The values-only SVD of one large matrix keeps few copies of its input (issue 30): no
scaled copy of A, no float64 copy of float32 input, no syevd workspace for the Gram's eigh.
tracemalloc counts numpy's (and scipy's) arrays; the peak is in units of A's own size.

The in-place Gram path is taken from n^2 >= _IN_PLACE entries and reads A _ROWS rows at a
time: both are lowered here so that a small matrix runs the large one's code."""

import tracemalloc

import numpy as np
import pytest

from minigrad.linalg import _svd_gram
from minigrad.linalg._svd_forward import Path, Plan, svd_forward

pytest.importorskip("scipy.linalg")  # the Gram's eigh in place
threadpoolctl = pytest.importorskip("threadpoolctl")


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(_svd_gram, "_IN_PLACE", 1)
    monkeypatch.setattr(_svd_gram, "_ROWS", 16)
    with threadpoolctl.threadpool_limits(1):  # scipy's BLAS too: a shared machine is slow
        yield


def peak_over_input(a: np.ndarray, plan: Plan) -> float:
    want = np.linalg.svd(a.astype(np.float64), compute_uv=False)
    svd_forward(a, False, False, _plan=plan)  # kernels loaded, scipy imported
    tracemalloc.start()
    try:
        u, s, vh = svd_forward(a, False, False, _plan=plan)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert u is None and vh is None
    np.testing.assert_allclose(s, want, rtol=0, atol=20 * max(a.shape) * np.finfo(a.dtype).eps
                               * want[0])
    return peak / a.nbytes


@pytest.mark.parametrize("dtype, most", [(np.float32, 4.6), (np.float64, 2.6)])
def test_the_gram_start_takes_the_gram_and_its_eigenvectors_only(small_blocks, dtype, most):
    """The float64 Gram and syevr's eigenvectors, 2 n^2 doubles: 4 A for float32, 2 A for
    float64 (before: a scaled copy, a float64 copy and syevd's 2 n^2 workspace, about 7 A
    and 4 A)."""
    a = np.random.default_rng(0).standard_normal((384, 384)).astype(dtype)
    assert peak_over_input(a, Plan(Path.LONE, 1)) <= most


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_start_from_the_gram_summed_in_place_is_orthogonal(small_blocks, dtype):
    """The Gram summed a block at a time, one triangle of it, and its eigh in place: a V0's
    columns orthogonal to below sqrt(eps), their norms the singular values."""
    a = np.random.default_rng(3).standard_normal((200, 120)).astype(dtype)
    v0, b = _svd_gram._gram_start(np.ldexp(a, 3), 3)  # 2^-3 (2^3 a): a itself
    norms = np.linalg.norm(b, axis=0)
    cos = (b.T @ b) / np.outer(norms, norms) - np.eye(120)
    assert np.max(np.abs(cos)) <= np.sqrt(np.finfo(dtype).eps)
    want = np.linalg.svd(a.astype(np.float64), compute_uv=False)
    np.testing.assert_allclose(norms, want, rtol=20 * 200 * np.finfo(dtype).eps)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_plain_sweeps_rotate_the_only_copy(dtype):
    """Without the start, the sweeps' rows are the one scaled copy of A (before: two)."""
    a = np.random.default_rng(1).standard_normal((200, 150)).astype(dtype)
    assert peak_over_input(a, Plan(Path.LONE, 1, False)) <= 1.5


@pytest.mark.parametrize("shape", [(1024, 128), (128, 1024)])
def test_a_tall_matrix_keeps_one_copy_beside_small_ones(small_blocks, shape):
    """Tall (or wide): A V0 and n x n matrices only (before: a scaled copy besides)."""
    a = np.random.default_rng(2).standard_normal(shape)
    assert peak_over_input(a, Plan(Path.QR, 1)) <= 1.8
