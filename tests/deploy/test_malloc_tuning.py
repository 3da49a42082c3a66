"""minigrad/_malloc.py: on glibc, importing minigrad keeps freed temporaries for reuse, so
a loop holding several 8 MiB arrays at once stops faulting their pages in anew; glibc's
own settings, and MINIGRAD_MALLOC=system, are left alone. Counted in page faults (the
kernel's count, not a timing)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from minigrad import _malloc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Three 8 MiB arrays alive at once, freed together, 20 times: the page faults of the last
# 19 rounds (the first round's are the heap's first growth, in either setting).
_LOOP = """
import resource, numpy as np
{setup}
a = np.ones((32, 256, 256), np.float32)
keep = [a.copy() for _ in range(3)]
del keep
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(19):
    keep = [a.copy() for _ in range(3)]
    del keep
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""
PAGES = 3 * (8 << 20) // 4096  # one round's pages, were they all faulted in


def _faults(setup: str, **env: str) -> int:
    environ = {k: v for k, v in os.environ.items() if k not in _malloc._OWN + ("MINIGRAD_MALLOC",)}
    environ.update(env, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", _LOOP.format(setup=setup)], env=environ,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return int(out.stdout.split()[-1])


def _glibc() -> bool:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc")
    except (AttributeError, ValueError, OSError):
        return False


pytestmark = pytest.mark.skipif(not _glibc(), reason="glibc's malloc only")


def test_importing_minigrad_keeps_freed_temporaries():
    """19 rounds of three 8 MiB arrays: with minigrad imported they fault in a tenth of the
    pages that glibc's defaults (MINIGRAD_MALLOC=system) fault in, which return the arrays
    to the kernel at each round's end. Where the kernel backs them with huge pages, so that
    the defaults fault in less than one round's 4 KiB pages, there is nothing to compare."""
    system = _faults("import minigrad", MINIGRAD_MALLOC="system")
    if system < PAGES:
        pytest.skip(f"glibc's defaults fault in {system} pages: huge pages back the arrays")
    tuned = _faults("import minigrad\nassert minigrad._malloc.TUNED")
    assert tuned * 10 < system


def test_the_tuning_is_what_glibc_adapts_to_and_can_be_declined():
    assert _malloc.MMAP_THRESHOLD == 32 << 20 and _malloc.TRIM_THRESHOLD == 2 * (32 << 20)
    out = subprocess.run([sys.executable, "-c", "from minigrad import _malloc; "
                          "print(_malloc.applies())"], capture_output=True, text=True,
                         env={**os.environ, "MINIGRAD_MALLOC": "system", "PYTHONPATH": ROOT},
                         timeout=300)
    assert out.stdout.split()[-1] == "False", out.stderr
    out = subprocess.run([sys.executable, "-c", "from minigrad import _malloc; "
                          "print(_malloc.applies())"], capture_output=True, text=True,
                         env={**os.environ, "MALLOC_TRIM_THRESHOLD_": "1000000",
                              "PYTHONPATH": ROOT}, timeout=300)
    assert out.stdout.split()[-1] == "False", out.stderr
