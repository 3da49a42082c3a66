"""The SVD from several Python threads at once (Dask's threaded scheduler, user threads):
the kernels release the GIL and share no state, so concurrent calls are both parallel and
correct."""

import threading

import numpy as np
from numba.core.registry import CPUDispatcher

import minigrad as mg
from minigrad.linalg import _jacobi
from minigrad.linalg._svd_forward import Path, Plan, svd_forward


def test_every_kernel_releases_the_gil():
    kernels = {name: f for name, f in vars(_jacobi).items() if isinstance(f, CPUDispatcher)}
    assert {"sweeps", "finish", "complete", "svd_lanes"} <= set(kernels)
    held = [name for name, f in kernels.items() if not f.targetoptions.get("nogil")]
    assert not held, f"kernels that hold the GIL: {held}"


def test_two_threads_calling_svd_concurrently_get_their_own_answers():
    rng = np.random.default_rng(0)
    jobs = [rng.standard_normal((2000, 3, 3)), rng.standard_normal((300, 8, 6)),
            rng.standard_normal((70, 60)), rng.standard_normal((2000, 3, 3)).astype(np.float32)]
    want = [np.linalg.svd(a.astype(np.float64), compute_uv=False) for a in jobs]
    errors, results = [], {}
    start = threading.Barrier(2)

    def worker(t: int) -> None:
        try:
            start.wait()
            for rep in range(3):
                for i, a in enumerate(jobs[t::2]):
                    U, S, Vh = mg.linalg.svd(mg.tensor(a), full_matrices=False)
                    # A forced threaded sweep too: the block pairs of two callers interleave.
                    s2 = svd_forward(a[0] if a.ndim == 3 else a, _plan=Plan(Path.LONE, 2))[1]
                    results[t, rep, i] = U.numpy(), S.numpy(), Vh.numpy(), s2
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=600)
    assert not errors, errors
    assert len(results) == 3 * len(jobs)
    for (t, _, i), (u, s, vh, s2) in results.items():
        a, ref = jobs[t::2][i], want[t::2][i]
        tol = 50 * np.finfo(a.dtype).eps * ref[..., :1]
        assert np.all(np.abs(s - ref) <= tol)
        rec = (u.astype(np.float64) * s[..., None, :]) @ vh.astype(np.float64)
        assert np.all(np.abs(rec - a) <= tol[..., None])
        one = ref[0] if a.ndim == 3 else ref
        assert np.all(np.abs(s2 - one) <= 50 * np.finfo(a.dtype).eps * one[0])


def _blas_threads() -> list[int]:
    import threadpoolctl

    return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]


def test_set_num_threads_pins_numpys_blas_too():
    """As torch.set_num_threads pins torch's own pool: mg.set_num_threads(1) leaves numpy's
    matmuls and solves one thread too, whichever thread calls it."""
    import pytest

    from minigrad.linalg import _threads

    pytest.importorskip("threadpoolctl")
    start = _blas_threads()
    if not start:
        pytest.skip("numpy's BLAS is not one that threadpoolctl controls")
    ours = mg.get_num_threads()
    try:
        mg.set_num_threads(1)
        assert _blas_threads() == [1] * len(start) and mg.get_num_threads() == 1
        if max(start) >= 2:
            other = threading.Thread(target=mg.set_num_threads, args=(2,))
            other.start()
            other.join()
            assert _blas_threads() == [2] * len(start)
    finally:
        mg.set_num_threads(ours)
        _threads.as_blas_owner(lambda c: c.limit(limits=max(start), user_api="blas"))


def test_set_num_threads_without_threadpoolctl_says_blas_is_not_pinned(monkeypatch):
    import sys

    import pytest

    from minigrad.linalg import _threads

    ours = mg.get_num_threads()
    monkeypatch.setattr(_threads, "_controller", None)
    monkeypatch.setitem(sys.modules, "threadpoolctl", None)  # as if it were not installed
    try:
        with pytest.warns(RuntimeWarning, match="threadpoolctl is not installed"):
            mg.set_num_threads(1)
        assert mg.get_num_threads() == 1
    finally:
        with pytest.warns(RuntimeWarning):
            mg.set_num_threads(ours)


def test_a_batch_on_one_thread_is_one_kernel_call(monkeypatch):
    # one thread: the whole batch in one call (no chunks, no thread hand-out), the same
    # numbers as chunks spread over two threads
    from minigrad.linalg import _svd_batch
    handed: list = []
    real = _svd_batch._threads.run
    monkeypatch.setattr(_svd_batch._threads, "run",
                        lambda fn, tasks, threads: (handed.append(len(tasks)),
                                                    real(fn, tasks, threads))[1])
    a = np.random.default_rng(6).standard_normal((256, 3, 3)).astype(np.float32)
    one = svd_forward(a, True, _plan=Plan(Path.BATCHED, 1))
    assert handed == []
    two = svd_forward(a, True, _plan=Plan(Path.BATCHED, 2))
    assert handed and handed[0] > 1
    for p, q in zip(one, two):
        np.testing.assert_array_equal(p, q)
