"""The SVD's worker threads: the Jacobi kernels release the GIL, so plain Python threads
run them in parallel.

numba's own threading layer is not used: its OpenMP backend terminates a forked child
that launches a parallel kernel, its workqueue backend aborts when two threads launch
kernels at once, and its parallel kernels take minutes to compile. Here a fork simply
drops the pool (the child makes a new one), and concurrent callers share it. The thread
count is numba's, ``NUMBA_NUM_THREADS`` (default: the cores this process may use).
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def num_threads() -> int:
    """How many threads an SVD may use, the calling one included."""
    from numba import config

    return max(1, int(config.NUMBA_NUM_THREADS))


def run(fn: Callable, tasks: Sequence[tuple], threads: int) -> list:
    """[fn(*t) for t in tasks], on up to `threads` threads (the caller is one of them);
    tasks are handed out one at a time, so a descheduled thread delays no one."""
    threads = min(threads, len(tasks))
    if threads <= 1:
        return [fn(*t) for t in tasks]
    out = [None] * len(tasks)
    ticket = itertools.count()  # next() on a count is atomic under the GIL

    def worker() -> None:
        for i in iter(ticket.__next__, None):
            if i >= len(tasks):
                return
            out[i] = fn(*tasks[i])

    helpers = [_executor().submit(worker) for _ in range(threads - 1)]
    worker()
    for h in helpers:
        h.result()
    return out


def _executor() -> ThreadPoolExecutor:
    from concurrent.futures import ThreadPoolExecutor

    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max(1, num_threads() - 1),
                                       thread_name_prefix="minigrad-svd")
        return _pool


def _after_fork_in_child() -> None:
    # The parent's threads do not exist in the child, and the lock may have been held.
    global _pool, _lock
    _pool = None
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)
