"""minigrad.dask: the SVD and a loss's gradient over Dask arrays equal the in-memory calls, on
every scheduler, with errors that name the chunk and the matrix."""

from __future__ import annotations

import logging
import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

import minigrad as mg  # noqa: E402
import minigrad.dask as mgd  # noqa: E402

SCHEDULERS = ["threads", "processes", "distributed"]


def stack(shape: tuple, dtype=np.float64, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def deformations(n: int, dtype=np.float64, seed: int = 0) -> np.ndarray:
    """3x3 deformation gradients near the identity (distinct singular values)."""
    return (np.eye(3) + 0.3 * np.random.default_rng(seed).standard_normal((n, 3, 3))
            ).astype(dtype)


def polar_energy(X: mg.Tensor) -> mg.Tensor:
    """sum_b |X_b - U_b Vh_b|^2 = sum_b sum_i (s_i - 1)^2; its gradient is 2 (X - U Vh)."""
    U, _, Vh = mg.linalg.svd(X)
    return ((X - U @ Vh) ** 2).sum()


def rotation_misfit(X: mg.Tensor, R: mg.Tensor, w: float) -> mg.Tensor:
    """w * sum_b |polar(X_b) - R_b|^2: a per-matrix target R beside a constant w."""
    U, _, Vh = mg.linalg.svd(X, full_matrices=False)
    return w * ((U @ Vh - R) ** 2).sum()


def eps(dtype) -> float:
    return float(np.finfo(dtype).eps)


@pytest.fixture(scope="module")
def pool():
    """The processes scheduler's workers, started once for the module (spawned, as Dask's
    own default)."""
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as ex:
        yield ex


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0", silence_logs=logging.ERROR) as c:
        with distributed.Client(c) as cl:
            yield cl


def compute(scheduler: str, request, *arrays):
    if scheduler == "processes":
        return dask.compute(*arrays, scheduler="processes", pool=request.getfixturevalue("pool"))
    if scheduler == "distributed":
        return request.getfixturevalue("client").compute(list(arrays), sync=True)
    return dask.compute(*arrays, scheduler=scheduler)


# -- results against the in-memory call ----------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, chunks", [
    ((1000, 3, 3), (300, 3, 3)),  # uneven: 300, 300, 300, 100
    ((5, 7, 4, 3), ((2, 3), (1, 4, 2), 4, 3)),  # two batch dims, uneven in both; tall
    ((6, 2, 5), (4, 2, 5)),  # wide
])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd_matches_the_in_memory_call(dtype, shape, chunks, full_matrices) -> None:
    a = stack(shape, dtype)
    A = da.from_array(a, chunks=chunks)
    U, S, Vh = mgd.svd(A, full_matrices=full_matrices)
    ref = mg.linalg.svd(mg.from_numpy(a), full_matrices=full_matrices)
    u, s, vh = dask.compute(U, S, Vh)
    for got, lazy, want in [(u, U, ref.U), (s, S, ref.S), (vh, Vh, ref.Vh)]:
        assert lazy.shape == want.shape == got.shape
        assert lazy.dtype == got.dtype == dtype
        assert lazy.chunks[:A.ndim - 2] == A.chunks[:-2]  # blocked like A's batch
        np.testing.assert_allclose(got, want.numpy(), rtol=0, atol=8 * eps(dtype) * 4)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_svdvals_matches_the_in_memory_call(dtype) -> None:
    a = stack((4, 50, 6, 5), dtype)
    S = mgd.svdvals(da.from_array(a, chunks=(3, 17, 6, 5)))
    want = mg.linalg.svdvals(mg.from_numpy(a)).numpy()
    assert S.shape == want.shape and S.dtype == dtype
    np.testing.assert_allclose(S.compute(), want, rtol=0, atol=8 * eps(dtype) * 4)


def test_matrices_split_across_chunks_are_rechunked_whole() -> None:
    a = stack((40, 6, 4))
    U, S, Vh = mgd.svd(da.from_array(a, chunks=(15, 2, 3)), full_matrices=False)
    u, s, vh = dask.compute(U, S, Vh)
    np.testing.assert_allclose((u * s[..., None, :]) @ vh, a, atol=1e-13)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), atol=1e-13)


def test_a_single_matrix_and_an_empty_batch() -> None:
    a = stack((7, 5))
    U, S, Vh = mgd.svd(da.from_array(a, chunks=(3, 2)))
    assert (U.shape, S.shape, Vh.shape) == ((7, 7), (5,), (5, 5))
    np.testing.assert_allclose(S.compute(), np.linalg.svd(a, compute_uv=False), atol=1e-13)
    U, S, Vh = mgd.svd(da.zeros((0, 3, 2), chunks=(5, 3, 2)))
    assert [x.compute().shape for x in (U, S, Vh)] == [(0, 3, 3), (0, 2), (0, 2, 2)]


# -- the loss and its gradient, block by block --------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("batch, chunks", [((2000,), (700,)), ((3, 40), ((1, 2), (25, 15)))])
def test_loss_and_grad_equal_the_single_process_ones(dtype, batch, chunks) -> None:
    f = deformations(int(np.prod(batch)), dtype).reshape(batch + (3, 3))
    F = da.from_array(f, chunks=chunks + (3, 3))
    L, G = mgd.loss_and_grad(polar_energy, F)
    assert L.shape == () and L.dtype == dtype
    assert G.shape == f.shape and G.dtype == dtype and G.chunks == F.chunks
    loss, grad = dask.compute(L, G)

    x = mg.tensor(f, requires_grad=True)
    want = polar_energy(x)
    want.backward()
    tol = 50 * eps(dtype)
    assert loss == pytest.approx(want.item(), rel=tol)
    np.testing.assert_allclose(grad, x.grad.numpy(), rtol=0, atol=tol)
    # and the closed form, from LAPACK in float64: d/dF sum (s_i - 1)^2 = 2 (F - U Vh)
    u, _, vh = np.linalg.svd(f.astype(np.float64))
    np.testing.assert_allclose(grad, 2 * (f - u @ vh), rtol=0, atol=tol * 10)


def test_blocked_and_whole_arguments_reach_the_loss() -> None:
    f = deformations(900)
    r = deformations(900, seed=1)  # any per-matrix target will do
    F = da.from_array(f, chunks=(400, 3, 3))
    R = da.from_array(r, chunks=(250, 3, 3))  # chunked unlike F: cut to F's blocks
    L, G = mgd.loss_and_grad(rotation_misfit, F, R, 0.5)
    loss, grad = dask.compute(L, G)
    x = mg.tensor(f, requires_grad=True)
    want = rotation_misfit(x, mg.tensor(r), 0.5)
    want.backward()
    assert loss == pytest.approx(want.item(), rel=1e-13)
    np.testing.assert_allclose(grad, x.grad.numpy(), rtol=0, atol=1e-13)


def test_a_loss_that_ignores_a_gives_a_zero_gradient() -> None:
    L, G = mgd.loss_and_grad(lambda X, c: c.sum(), da.ones((10, 2, 2), chunks=(4, 2, 2)),
                             da.arange(10.0, chunks=5))
    loss, grad = dask.compute(L, G)
    assert loss == 45.0 and not grad.any()


# -- every scheduler ----------------------------------------------------------------------

@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_every_scheduler_gives_the_in_memory_results(scheduler, request) -> None:
    f = deformations(3000)
    F = da.from_array(f, chunks=(1100, 3, 3))
    x = mg.tensor(f, requires_grad=True)  # in memory first: it also fills the numba cache
    want = polar_energy(x)
    want.backward()
    ref = mg.linalg.svd(mg.from_numpy(f))
    U, S, Vh = mgd.svd(F)
    L, G = mgd.loss_and_grad(polar_energy, F)
    u, s, vh, s2, loss, grad = compute(scheduler, request, U, S, Vh, mgd.svdvals(F), L, G)
    for got, want_ in [(u, ref.U), (s, ref.S), (vh, ref.Vh), (s2, ref.S)]:
        np.testing.assert_allclose(got, want_.numpy(), rtol=0, atol=1e-14)
    assert loss == pytest.approx(want.item(), rel=1e-13)
    np.testing.assert_allclose(grad, x.grad.numpy(), rtol=0, atol=1e-13)


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_a_nan_names_its_chunk_and_matrix(scheduler, request) -> None:
    a = stack((5, 300, 3, 3))
    a[3, 217, 1, 2] = np.nan  # in chunk (1, 1): batch rows 3-4, columns 200-299
    A = da.from_array(a, chunks=(3, 200, 3, 3))
    with pytest.raises(mg.linalg.LinAlgError, match=r"at batch index \(3, 217\)"):
        mg.linalg.svd(mg.from_numpy(a))
    want = (r"the input is not finite at batch index \(3, 217\): its entry \(1, 2\) is nan "
            r"\(in chunk \(1, 1\) of the Dask array, batch index \(0, 17\) within the chunk\)")
    with pytest.raises(mg.linalg.LinAlgError, match="minigrad.dask.svd: " + want):
        compute(scheduler, request, mgd.svd(A).S)
    with pytest.raises(mg.linalg.LinAlgError, match="minigrad.dask.loss_and_grad: " + want):
        compute(scheduler, request, *mgd.loss_and_grad(polar_energy, A))


def test_other_errors_keep_their_type_and_name_the_chunk() -> None:
    def boom(X):
        if X.shape[0] < 5:
            raise ValueError("bad block")
        return X.sum()

    with pytest.raises(ValueError, match="bad block") as err:
        mgd.loss_and_grad(boom, da.ones((12, 2, 2), chunks=(5, 2, 2)))[0].compute()
    if sys.version_info >= (3, 11):
        assert "in chunk (2,) of the Dask array, whose batch starts at index (10,)" in \
            err.value.__notes__[0]


def test_non_convergence_names_the_chunk() -> None:
    a = stack((20, 8, 8))
    a[:10] = np.eye(8) * np.arange(1.0, 9.0)  # chunk 0 converges at once, chunk 1 cannot
    A = da.from_array(a, chunks=(10, 8, 8))
    with pytest.raises(mg.linalg.LinAlgError,
                       match=r"minigrad.dask.svdvals: in chunk \(1,\) of the Dask array, whose "
                             r"batch starts at index \(10,\): .*converge"):
        mgd.svdvals(A, max_sweeps=1).compute()


# -- threads inside the tasks -------------------------------------------------------------

def threads_seen(X: mg.Tensor) -> mg.Tensor:
    """A 'loss' that reports 100 * the SVD's threads + BLAS's threads in the task."""
    import threadpoolctl

    blas = max(i["num_threads"] for i in threadpoolctl.threadpool_info()
               if i["user_api"] == "blas")
    return X.sum() * 0 + 100 * mg.get_num_threads() + blas


@pytest.mark.parametrize("scheduler", ["threads", "distributed"])
def test_each_task_gets_one_svd_and_one_blas_thread_by_default(scheduler, request) -> None:
    A = da.ones((4, 2, 2), chunks=(1, 2, 2))  # 4 blocks: each adds its 101
    (loss,) = compute(scheduler, request, mgd.loss_and_grad(threads_seen, A)[0])
    assert loss == 4 * 101
    if scheduler == "threads" and mg.get_num_threads() >= 2:
        (loss,) = compute(scheduler, request, mgd.loss_and_grad(threads_seen, A, threads=2)[0])
        assert loss == 4 * 202  # threads= raises both
    before = threads_seen(mg.zeros(1)).item()  # and the caller's own limits are back
    compute(scheduler, request, mgd.loss_and_grad(threads_seen, A)[0])
    assert threads_seen(mg.zeros(1)).item() == before


def _kernel_cache_stats() -> tuple[int, int, int]:
    """(loaded from numba's cache, compiled) over minigrad's numba kernels in this process,
    and how many kernel families its compiled modules (the warm-up's) served instead."""
    from numba.core.registry import CPUDispatcher

    from minigrad import _aot, _kernel_registry

    modules = sum(isinstance(k, _aot.Kernels) for k in _kernel_registry._chosen.values())
    hits = misses = 0
    for name, module in list(sys.modules.items()):
        if name.startswith("minigrad") and module is not None:
            for f in vars(module).values():
                if isinstance(f, CPUDispatcher):
                    hits += sum(f.stats.cache_hits.values())
                    misses += sum(f.stats.cache_misses.values())
    return hits, misses, modules


def test_fresh_workers_load_the_kernels_and_compile_nothing(client) -> None:
    """The module's workers started fresh; whatever they ran, the client had run first (as
    here), so every kernel they needed came from numba's cache on disk, or from the
    compiled modules, where the warm-up built them (then a worker may load nothing from
    numba's cache: run alone, this test's SVDs are all the module's)."""
    f = deformations(500, np.float32)
    mg.linalg.svd(mg.tensor(f))
    F = da.from_array(f, chunks=(250, 3, 3))
    client.compute([mgd.svd(F).S, mgd.loss_and_grad(polar_energy, F)[1]], sync=True)
    stats = client.run(_kernel_cache_stats)
    assert len(stats) == 2
    for hits, misses, modules in stats.values():
        assert misses == 0 and (hits > 0 or modules > 0)


# -- bad input ----------------------------------------------------------------------------

def test_bad_input_says_what_to_do() -> None:
    A = da.ones((4, 3, 3), chunks=(2, 3, 3))
    with pytest.raises(TypeError, match="dask.array.from_array"):
        mgd.svd(np.ones((4, 3, 3)))
    with pytest.raises(TypeError, match="got int64; convert it"):
        mgd.svdvals(da.ones((4, 3, 3), dtype=np.int64))
    with pytest.raises(ValueError, match="at least 2 dimensions, got shape"):
        mgd.svd(da.ones(4))
    with pytest.raises(ValueError, match="threads must be a positive int"):
        mgd.svd(A, threads=0)
    with pytest.raises(RuntimeError, match=r"must return a scalar .* got shape \(0,\)"):
        mgd.loss_and_grad(lambda X: (X ** 2).sum((-2, -1)), A)
    with pytest.raises(TypeError, match="must return a Tensor, got float"):
        mgd.loss_and_grad(lambda X: 1.0, A)
    with pytest.raises(ValueError, match=r"argument 1 after A has shape \(3, 3\)"):
        mgd.loss_and_grad(rotation_misfit, A, da.ones((3, 3)), 1.0)
    with pytest.raises(TypeError, match="loss_fn must be callable"):
        mgd.loss_and_grad(A, A)
