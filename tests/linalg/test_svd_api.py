"""mg.linalg.svd / svdvals at the Tensor level: torch's shapes, names, dtypes and errors."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.linalg import LinAlgError


@pytest.mark.parametrize("shape", [(5, 3), (3, 3), (3, 5), (2, 4, 3), (0, 3), (3, 0)])
@pytest.mark.parametrize("full", [True, False])
def test_shapes_and_namedtuple(shape, full):
    A = mg.tensor(np.random.default_rng(0).standard_normal(shape))
    res = mg.linalg.svd(A, full_matrices=full)
    U, S, Vh = res
    assert (res.U is U) and (res.S is S) and (res.Vh is Vh)
    *batch, m, n = shape
    k = min(m, n)
    assert U.shape == tuple(batch) + ((m, m) if full else (m, k))
    assert Vh.shape == tuple(batch) + ((n, n) if full else (k, n))
    assert S.shape == tuple(batch) + (k,)
    recon = (U[..., :k] * S.unsqueeze(-2)) @ Vh[..., :k, :]
    np.testing.assert_allclose(recon.numpy(), A.numpy(), atol=1e-12)


def test_default_is_full_matrices_like_torch():
    U, S, Vh = mg.linalg.svd(mg.randn(4, 2))
    assert U.shape == (4, 4) and Vh.shape == (2, 2)


@pytest.mark.parametrize("dtype", [mg.float16, mg.float32, mg.float64])
def test_output_dtype_follows_input(dtype):
    A = mg.randn(4, 3).to(dtype)
    U, S, Vh = mg.linalg.svd(A)
    assert U.dtype == S.dtype == Vh.dtype == np.dtype(dtype)
    assert mg.linalg.svdvals(A).dtype == np.dtype(dtype)


def test_svdvals_matches_svd_and_numpy():
    A = mg.tensor(np.random.default_rng(1).standard_normal((3, 6, 4)))
    np.testing.assert_allclose(mg.linalg.svdvals(A).numpy(), mg.linalg.svd(A).S.numpy(),
                               rtol=1e-12)
    np.testing.assert_allclose(mg.linalg.svdvals(A).numpy(),
                               np.linalg.svd(A.numpy(), compute_uv=False), rtol=1e-12)


def test_bad_input_errors():
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):  # as torch
        mg.linalg.svd(mg.randn(3))
    with pytest.raises(RuntimeError, match="floating point"):
        mg.linalg.svd(mg.tensor([[1, 2], [3, 4]]))
    with pytest.raises(TypeError, match="must be a Tensor"):
        mg.linalg.svd(np.eye(3))
    bad = np.random.default_rng(2).standard_normal((2, 3, 3))
    bad[1, 0, 2] = np.nan
    with pytest.raises(LinAlgError, match=r"not finite.*\(1,\)"):
        mg.linalg.svd(mg.tensor(bad))
    with pytest.raises(LinAlgError, match="not finite"):
        mg.linalg.svdvals(mg.tensor([[1.0, np.inf], [0.0, 1.0]]))
    assert issubclass(LinAlgError, RuntimeError)  # like torch.linalg.LinAlgError


def test_non_convergence_is_an_error_not_a_result():
    A = mg.tensor(np.random.default_rng(3).standard_normal((8, 8)))
    with pytest.raises(LinAlgError, match="converge"):
        mg.linalg.svd(A, max_sweeps=1)


def test_matches_torch_values():
    torch = pytest.importorskip("torch")
    A0 = np.random.default_rng(4).standard_normal((3, 5, 4))
    S = mg.linalg.svdvals(mg.tensor(A0)).numpy()
    np.testing.assert_allclose(S, torch.linalg.svdvals(torch.tensor(A0)).numpy(), rtol=1e-12)


def test_driver_none_is_accepted_and_a_driver_refused_as_torch_on_the_cpu():
    """Ported code passes driver="gesvdj" on the GPU and None elsewhere."""
    A = mg.tensor([[3.0, 0.0], [0.0, -4.0]])
    assert mg.linalg.svd(A, driver=None).S.tolist() == [4.0, 3.0]
    assert mg.linalg.svdvals(A, driver=None).tolist() == [4.0, 3.0]
    for fn in (mg.linalg.svd, mg.linalg.svdvals):
        with pytest.raises(RuntimeError, match="`driver=` is only supported on CUDA"):
            fn(A, driver="gesvdj")
