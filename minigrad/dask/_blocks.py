"""One function call per batch block of a Dask array of matrices, with several outputs, and
errors that say which block and which matrix went wrong.

A is (*batch, m, n), chunked along the batch dims only (its matrices are rechunked whole).
The call for a block gets A's block and the same block of every extra array, and returns a
tuple of ndarrays; each becomes a Dask array, blocked like A's batch.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import dask.array as da
import numpy as np
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

from ..linalg.errors import LinAlgError
from ._threads import limited

PER_BLOCK = None  # an output's core shape meaning "one value per block"


@dataclass(frozen=True)
class Where:
    """A block's place: its index in the grid of blocks and its first batch index in A."""

    chunk: tuple[int, ...]
    start: tuple[int, ...]


def batch_blocks(fn: Callable, name: str, A: da.Array, extras: Sequence[da.Array],
                 outs: Sequence[tuple[tuple[int, ...] | None, np.dtype]], threads: int,
                 ) -> list[da.Array]:
    """[fn(a, *e) for each batch block], split into one Dask array per entry of ``outs``.

    An output with core shape c is (*batch, *c), blocked like A's batch; one with core shape
    PER_BLOCK holds a single value per block, so its shape is A's grid of blocks.
    """
    nb = A.ndim - 2
    A = A.rechunk({nb: -1, nb + 1: -1})
    extras = [e.rechunk(A.chunks[:nb] + tuple((s,) for s in e.shape[nb:])) for e in extras]
    batch_chunks = A.chunks[:nb]
    token = tokenize(fn, name, A, *extras, threads)
    grid = list(itertools.product(*(range(len(c)) for c in batch_chunks)))
    starts = [np.cumsum((0,) + c[:-1]) for c in batch_chunks]

    calls = f"{name}-blocks-{token}"
    layer = {}
    for idx in grid:
        where = Where(idx, tuple(int(s[i]) for s, i in zip(starts, idx)))
        layer[(calls, *idx)] = (_run, fn, name, where, threads, (A.name, *idx, 0, 0),
                                *((e.name, *idx, *(0,) * (e.ndim - nb)) for e in extras))
    graph = HighLevelGraph.from_collections(calls, layer, dependencies=[A, *extras])
    per_block = da.Array(graph, calls, batch_chunks, meta=np.empty((0,) * nb, object))

    arrays = []
    for i, (core, dtype) in enumerate(outs):
        out = f"{name}-{i}-{token}"
        if core is PER_BLOCK:
            chunks, tail = tuple((1,) * len(c) for c in batch_chunks), ()
        else:
            chunks, tail = batch_chunks + tuple((d,) for d in core), (0,) * len(core)
        layer = {(out, *idx, *tail): (operator.getitem, (calls, *idx), i) for idx in grid}
        graph = HighLevelGraph.from_collections(out, layer, dependencies=[per_block])
        arrays.append(da.Array(graph, out, chunks, meta=np.empty((0,) * len(chunks), dtype)))
    return arrays


def _run(fn: Callable, name: str, where: Where, threads: int, a: np.ndarray,
         *extras: np.ndarray) -> tuple:
    with limited(threads):
        try:
            return fn(a, *extras)
        except LinAlgError as e:
            raise LinAlgError(_locate(name, where, a, e)) from e
        except Exception as e:
            if hasattr(e, "add_note"):  # Python >= 3.11
                e.add_note(f"{name}: raised in chunk {where.chunk} of the Dask array, whose "
                           f"batch starts at index {where.start}")
            raise


def _locate(name: str, where: Where, a: np.ndarray, e: LinAlgError) -> str:
    """The error's message with the block and, for non-finite input, the matrix named by its
    batch index in the whole array (as the in-memory call would name it)."""
    finite = np.isfinite(a).all(axis=(-2, -1))
    if finite.all():
        return (f"{name}: in chunk {where.chunk} of the Dask array, whose batch starts at "
                f"index {where.start}: {e}")
    local = tuple(int(i) for i in np.unravel_index(np.argmin(finite), finite.shape))
    index = tuple(s + i for s, i in zip(where.start, local))
    entry = tuple(int(i) for i in np.unravel_index(np.argmin(np.isfinite(a[local])),
                                                   a.shape[-2:]))
    return (f"{name}: the input is not finite at batch index {index}: its entry {entry} is "
            f"{a[local][entry]} (in chunk {where.chunk} of the Dask array, batch index "
            f"{local} within the chunk)")
