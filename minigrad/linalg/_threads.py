"""The SVD's worker threads: the Jacobi kernels release the GIL, so plain Python threads
run them in parallel.

numba's own threading layer is not used: its OpenMP backend terminates a forked child
that launches a parallel kernel, its workqueue backend aborts when two threads launch
kernels at once, and its parallel kernels take minutes to compile. Here a fork simply
drops the pool (the child makes a new one), and concurrent callers share it. The thread
count is ``set_num_threads``'s if called, else numba's ``NUMBA_NUM_THREADS`` (default: the
cores this process may use); ``limit`` lowers it for the calling thread only, so tasks that
already run one per core (Dask's) do not each spread over every core.

``set_num_threads`` also pins numpy's BLAS pool (matmul, solve, ...) through threadpoolctl,
as torch's pins its own intra-op pool; without threadpoolctl it says so and pins only ours.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_process_threads: int | None = None  # set_num_threads's value
_local = threading.local()  # .limit: the calling thread's cap, from limit()


def num_threads() -> int:
    """How many threads an SVD may use, the calling one included."""
    n = _process_threads if _process_threads is not None else _default()
    cap = getattr(_local, "limit", None)
    return n if cap is None else min(n, cap)


def _default() -> int:
    """numba's NUMBA_NUM_THREADS, read as numba reads it but without importing numba (0.3 s,
    which the compiled modules exist to avoid): the variable, else the usable cores."""
    numba = sys.modules.get("numba")
    if numba is not None and hasattr(numba, "config"):
        return max(1, int(numba.config.NUMBA_NUM_THREADS))
    try:
        return max(1, int(os.environ.get("NUMBA_NUM_THREADS", "")))
    except ValueError:
        pass
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no affinity on this platform
        return max(1, os.cpu_count() or 1)


def start(thread: threading.Thread) -> bool:
    """thread.start(), or False when the system has no memory (or quota) left for another
    thread: the callers' helpers and notices are optional, the work goes on without them."""
    try:
        thread.start()
    except RuntimeError:  # "can't start new thread"
        return False
    return True


def get_num_threads() -> int:
    """The threads minigrad's SVD and eigh kernels use in the calling thread, as torch's.

    >>> mg.get_num_threads() >= 1
    True
    """
    return num_threads()


def set_num_threads(n: int) -> None:
    """Let the SVD and eigh kernels and numpy's BLAS use n threads (the caller included),
    process-wide, as torch's. The default is NUMBA_NUM_THREADS, which is the number of cores.

    >>> n = mg.get_num_threads(); mg.set_num_threads(1); mg.get_num_threads()
    1
    >>> mg.set_num_threads(n)
    """
    global _process_threads
    _process_threads = _positive(n)
    try:
        as_blas_owner(lambda c: c.limit(limits=n, user_api="blas"))
    except ImportError:
        warnings.warn("mg.set_num_threads: threadpoolctl is not installed, so numpy's BLAS "
                      "keeps its own thread count (install threadpoolctl, or set "
                      "OMP_NUM_THREADS before Python starts)", RuntimeWarning, stacklevel=2)


_controller = None  # threadpoolctl's view of the BLAS libraries loaded (found once: ms)


def as_blas_owner(action: Callable[[Any], Any]) -> Any:
    """action(threadpoolctl controller) with this thread allowed to change OpenBLAS's
    process-wide limit: threadpoolctl lets only one thread change it, but the thread that
    sets a limit may not be the one that restores it (Dask's tasks), and set_num_threads
    may be called from any thread. Raises ImportError without threadpoolctl."""
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
    _release(_controller)
    try:
        return action(_controller)
    finally:
        _release(_controller)


def _release(controller: Any) -> None:
    for lib in controller.lib_controllers:
        clear = getattr(lib, "clear_controlling_thread", None)  # threadpoolctl >= 3.7
        if clear is not None:
            clear(force=True)


@contextmanager
def limit(n: int) -> Iterator[None]:
    """At most n threads for the SVDs the calling thread runs inside the block."""
    before = getattr(_local, "limit", None)
    _local.limit = _positive(n) if before is None else min(before, _positive(n))
    try:
        yield
    finally:
        _local.limit = before


def _positive(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"the number of threads must be a positive int, got {n!r}")
    return n


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

    pool = _executor(threads - 1)
    helpers = []
    for _ in range(threads - 1):
        try:
            helpers.append(pool.submit(worker))
        except RuntimeError:  # "can't start new thread": short of memory, the rest is ours
            break
    worker()
    for h in helpers:
        h.result()
    return out


def _executor(helpers: int) -> ThreadPoolExecutor:
    """The shared pool, grown when set_num_threads asks for more helpers than it has."""
    from concurrent.futures import ThreadPoolExecutor

    global _pool, _pool_size
    with _lock:
        if _pool is None or _pool_size < helpers:
            # The old pool is dropped, not shut down: another caller may be submitting to it.
            _pool_size = max(helpers, num_threads() - 1, 1)
            _pool = ThreadPoolExecutor(_pool_size, thread_name_prefix="minigrad-svd")
        return _pool


def _after_fork_in_child() -> None:
    # The parent's threads do not exist in the child, and the lock may have been held.
    global _pool, _pool_size, _lock
    _pool, _pool_size = None, 0
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)
