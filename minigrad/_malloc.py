"""glibc's malloc told to keep freed memory for reuse, so that a step's large temporaries do
not fault their pages in anew on every step.

glibc serves an allocation from 128 KiB up with fresh pages from the kernel (mmap), and
returns freed memory at the heap's top once more than twice the largest freed block lies
there. A training step holds several arrays of some megabytes at once (attention's scores
and their gradients: (32, 256, 256) float32 is 8 MiB) and frees them together; each step
then takes its pages from the kernel again, a page fault per 4 KiB (~1 us in a VM): three
8 MiB copies alive together cost 6.2 ms, against 1.4 ms when the memory is kept. Deep
Closest Point's step (benchmarks/bench_programs.py, minigrad alone in the process) went
from 44-46 ms to 36-39 ms.

The settings are glibc's own ceilings for its adaptive thresholds on 64-bit systems (what
it reaches after freeing a 32 MiB block): blocks below 32 MiB come from the heap, and up to
64 MiB of free memory stays at the top of each of malloc's arenas (one per thread that
allocates, up to a limit). A process may so hold 64 MiB per arena more than it uses, and
more where freed blocks lie below live ones, which ``top`` shows. Cost: two calls when
minigrad is imported, nothing per operation.

Left as the system has it: off glibc (musl's, macOS's and Windows's allocators), when the
process sets glibc's own (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, MALLOC_TOP_PAD_,
GLIBC_TUNABLES), and with MINIGRAD_MALLOC=system.
"""

from __future__ import annotations

import os

# mallopt's parameters (malloc.h) and the values set
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD, TRIM_THRESHOLD = 32 << 20, 64 << 20
_OWN = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "GLIBC_TUNABLES")


def applies() -> bool:
    """Whether this process's malloc is glibc's and nobody asked to leave it alone."""
    if os.environ.get("MINIGRAD_MALLOC", "") == "system" or any(v in os.environ for v in _OWN):
        return False
    try:
        return os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc")  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):  # not a glibc system
        return False


def tune() -> bool:
    """Set the two thresholds (once per process, at import): whether they were set."""
    if not applies():
        return False
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (ImportError, OSError, AttributeError):  # a Python built without ctypes, too
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    # the mmap threshold first: setting either one ends glibc's adapting of both
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) \
        and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))


TUNED = tune()  # at import: minigrad/__init__.py imports this module first
