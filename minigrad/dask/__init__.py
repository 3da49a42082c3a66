"""minigrad's SVD and gradients on Dask arrays: past one process's memory and cores.

A Dask array of matrices (*, m, n), chunked along its batch dims, is processed one block
per task on whatever scheduler runs it (threads, processes or a ``distributed`` cluster);
minigrad brings no scheduler of its own::

    import dask.array as da
    import minigrad as mg
    import minigrad.dask as mgd

    F = da.random.default_rng(0).standard_normal((10_000_000, 3, 3), chunks=(250_000, 3, 3))
    U, S, Vh = mgd.svd(F, full_matrices=False)        # Dask arrays, torch's shapes

    def energy(X):                                    # written with minigrad ops
        U, S, Vh = mg.linalg.svd(X)
        return ((X - U @ Vh) ** 2).sum()

    L, G = mgd.loss_and_grad(energy, F)               # the loss and dL/dF, block by block

Threads. Dask already runs one task per core, so by default each task's SVD runs on one
of minigrad's threads and its matmuls on one BLAS thread: workers x threads-per-worker x 1
stays within the cores. Where Dask runs fewer tasks at once than there are cores (one worker
with one thread on a big machine, say), pass ``threads=`` to any function here to let each
task use more. The SVD's limit is the calling thread's own (``mg.get_num_threads()`` inside
a task shows it); the BLAS limit (through threadpoolctl) holds for the whole process while
any of these tasks runs. ``mg.set_num_threads`` sets the process-wide count outside tasks.

Compiled kernels. numba caches the SVD kernels on disk beside the installed package (or in
NUMBA_CACHE_DIR), so worker processes on one machine load what any process compiled
before: run one SVD of the same dtype in the client before starting workers on a fresh
install, and no worker compiles.

Needs the optional extra: ``pip install 'minigrad[dask]'``.
"""

try:
    import dask.array  # noqa: F401
    import threadpoolctl  # noqa: F401
except ImportError as e:
    _missing = (e.name or "").partition(".")[0] or "one of them"
    raise ModuleNotFoundError(
        f"minigrad.dask needs dask[array] and threadpoolctl ({_missing} is missing): install "
        f"them with pip install 'minigrad[dask]' (distributed, for clusters, comes with "
        f"it)", name=_missing) from e

from ._grad import loss_and_grad
from ._svd import SVDResult, svd, svdvals

__all__ = ["svd", "svdvals", "SVDResult", "loss_and_grad"]
