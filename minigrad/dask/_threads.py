"""How many threads one minigrad task inside Dask may use, for the SVD kernels and for BLAS.

Dask already runs one task per core: its threaded and processes schedulers default to as
many workers as cores, and a LocalCluster to workers x threads = cores. A task that also
spread its SVD over minigrad's threads (and its matmuls over BLAS's) would put cores x cores
threads on the machine. So each task gets ``threads`` of each, 1 by default.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from ..linalg import _threads as _svd_threads

_lock = threading.Lock()
_running = 0  # tasks of this process inside limited(), which share one BLAS limit
_blas = None  # threadpoolctl's handle on that limit while _running > 0


@contextmanager
def limited(threads: int) -> Iterator[None]:
    """The SVD kernels and BLAS use at most ``threads`` threads inside the block (the SVD's
    limit is the calling thread's own; BLAS's is process-wide, set by the first task in and
    restored by the last one out)."""
    _size_numba_pool(threads)
    _enter_blas(threads)
    try:
        with _svd_threads.limit(threads):
            yield
    finally:
        _leave_blas()


def _size_numba_pool(threads: int) -> None:
    """In a fresh worker process, set NUMBA_NUM_THREADS before numba loads, so that the
    process's default thread count (what the SVD uses outside ``limited``) fits too."""
    if "numba" not in sys.modules and multiprocessing.parent_process() is not None:
        os.environ["NUMBA_NUM_THREADS"] = str(threads)


def _enter_blas(threads: int) -> None:
    global _running, _blas
    with _lock:
        if _running == 0:
            _blas = _svd_threads.as_blas_owner(lambda c: c.limit(limits=threads,
                                                                 user_api="blas"))
        _running += 1


def _leave_blas() -> None:
    global _running, _blas
    with _lock:
        _running -= 1
        if _running == 0:  # no task of ours is between the one that set it and this one
            _svd_threads.as_blas_owner(lambda c: _blas.restore_original_limits())
            _blas = None
