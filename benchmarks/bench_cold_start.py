"""Cold start: the first SVD on a fresh install (empty numba cache), and with a warm cache.

    python benchmarks/bench_cold_start.py

Every measurement is a fresh interpreter with a new, empty NUMBA_CACHE_DIR of its own (the
warm-cache rows reuse the one the warm-up just filled). Each row prints the wall time and
the CPU time of that process: numba compiles on one thread, so on a quiet machine the two
agree, and on a loaded one the CPU time is what a quiet machine's wall time would be.
Targets (issue 14): the first SVD of any one kind <= 10 s; every kernel the demo needs
<= 30 s in all; a warm-cache import + first svd, float64 and float32, <= 0.8 s. After
`python -m minigrad.warmup` the warm rows run the kernels it compiled ahead of time
(minigrad/_aot.py) and import no numba; the rows after them are what the same first SVD
costs with numba's cache alone (no compiled module: a process that never ran the warm-up
but ran an SVD before), and numba's own floor for that: import numba and one trivial cached
function.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = """
import resource, sys, time
t0 = time.perf_counter()
import numpy as np
import minigrad as mg
t1 = time.perf_counter()
rng = np.random.default_rng(0)
for shape, dtype, full in {cases}:
    a = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if "complex" in dtype
                                      else 0)
    mg.linalg.svd(mg.tensor(a.astype(dtype)), full_matrices=full)
t2 = time.perf_counter()
r = resource.getrusage(resource.RUSAGE_SELF)
print(t1 - t0, t2 - t1, r.ru_utime + r.ru_stime)
"""

# (label, [(shape, dtype, full_matrices)], target in s)
KINDS = [
    ("batch of 3x3, float64", [((64, 3, 3), "float64", True)], 10.0),
    ("batch of 3x3, float32", [((64, 3, 3), "float32", True)], 10.0),
    ("batch of 8x8, float64", [((64, 8, 8), "float64", True)], 10.0),
    ("one 100x100, float64", [((100, 100), "float64", False)], 10.0),
    ("one 100x100, float32", [((100, 100), "float32", False)], 10.0),
]
# What examples/demo.py runs: complement (3x2, full U), spectral norm (float32 32x32, 32x2,
# 1x32), matrix completion (40x30), procrustes (64 3x3 and one 3x3), the Ising TRG (reduced
# 16x16, 36x36 and 4x4) and the MPS ground state (reduced complex128 8x4, 4x4 and 2x2: the
# complex kernels).
DEMO = [((3, 2), "float64", True), ((32, 32), "float32", True), ((32, 2), "float32", True),
        ((1, 32), "float32", True), ((40, 30), "float64", True), ((64, 3, 3), "float64", True),
        ((3, 3), "float64", True), ((16, 16), "float64", False), ((36, 36), "float64", False),
        ((4, 4), "float64", False), ((8, 4), "complex128", False),
        ((4, 4), "complex128", False), ((2, 2), "complex128", False)]
WARM = [("warm cache: import + first svd, float64", [((64, 3, 3), "float64", True)]),
        ("warm cache: import + first svd, float32", [((64, 3, 3), "float32", True)])]


# numba's own floor for the warm rows: import numba and load one trivial cached function.
# Loading any cached kernel first builds numba's typing and target registries (and numba
# imports scipy.linalg then, when scipy is installed): minigrad cannot go below this.
FLOOR = """
import resource, sys, time
t0 = time.perf_counter()
import numpy as np
from numba import njit
sys.path.insert(0, {where!r})
import trivial_kernel
trivial_kernel.f(1.0)
r = resource.getrusage(resource.RUSAGE_SELF)
print(time.perf_counter() - t0, r.ru_utime + r.ru_stime)
"""


def floor(cache: str, where: str) -> tuple[float, float]:
    """(wall, cpu) of numpy + numba + one cached trivial njit call, in a fresh interpreter."""
    with open(os.path.join(where, "trivial_kernel.py"), "w") as f:
        f.write("from numba import njit\n\n\n@njit(cache=True)\ndef f(x):\n    return x + 1.0\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    code = FLOOR.format(where=where)
    for _ in range(2):  # the first fills the cache
        out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT,
                             capture_output=True, text=True, check=True)
    wall, cpu = map(float, out.stdout.split())
    return wall, cpu


# A copy of the package without its __pycache__ (set by main): minigrad also reads the
# caches its warm-up left in the package, which would make no cache fresh.
SITE = ""


def _env(cache: str) -> dict:
    """Only `cache` holds compiled code: the package copy has none, the user cache is in it."""
    return {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": SITE,
            "XDG_CACHE_HOME": os.path.join(cache, "user")}


def run(cases: list, cache: str) -> tuple[float, float, float, float]:
    """(wall, import, first svds, cpu) of a fresh interpreter running cases."""
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD.format(cases=repr(cases))],
                         env=_env(cache), cwd=SITE, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t
    t_import, t_svd, cpu = map(float, out.stdout.split())
    return wall, t_import, t_svd, cpu


def row(label: str, wall: float, cpu: float, target: float) -> bool:
    ok = min(wall, cpu) <= target
    print(f"{label:<44}{wall:>9.2f}{cpu:>9.2f}   <= {target:<6g}{'PASS' if ok else 'MISS'}",
          flush=True)
    return ok


def main() -> None:
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average "
          f"{os.getloadavg()[0]:.1f}; each row a fresh interpreter")
    print(f"{'':<44}{'wall s':>9}{'cpu s':>9}   target")
    misses = 0
    global SITE
    base = tempfile.mkdtemp(prefix="minigrad-cold-")
    try:
        SITE = os.path.join(base, "site")
        shutil.copytree(os.path.join(ROOT, "minigrad"), os.path.join(SITE, "minigrad"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        for label, cases, target in KINDS:
            cache = tempfile.mkdtemp(dir=base)
            wall, _, _, cpu = run(cases, cache)
            misses += not row(f"fresh cache: {label}", wall, cpu, target)
        wall, _, _, cpu = run(DEMO, tempfile.mkdtemp(dir=base))
        misses += not row("fresh cache: every kernel of the demo", wall, cpu, 30.0)
        cache = tempfile.mkdtemp(dir=base)
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "minigrad.warmup"], cwd=SITE, check=True,
                       env=_env(cache), capture_output=True)
        print(f"{'python -m minigrad.warmup (every kernel)':<44}{time.perf_counter() - t:>9.2f}")
        # The same numba cache without the compiled modules: the JIT loads every kernel.
        jit_only = os.path.join(base, "jit-only")
        shutil.copytree(cache, jit_only, ignore=shutil.ignore_patterns("aot"))
        for where, note, target in ((cache, "", 0.8), (jit_only, ", numba cache only", None)):
            for label, cases in WARM:
                run(cases, where)  # the OS file cache warm too, as on a second run
                wall, t_import, t_svd, cpu = run(cases, where)
                if target is None:
                    print(f"{label + note:<44}{t_import + t_svd:>9.2f}{cpu:>9.2f}   (reported)")
                else:
                    misses += not row(label, t_import + t_svd, cpu, target)
                print(f"{'':<4}(import {t_import:.3f} s, first svd {t_svd:.3f} s, "
                      f"interpreter start to exit {wall:.2f} s)")
        wall, cpu = floor(cache, tempfile.mkdtemp(dir=base))
        print(f"{'numba floor: import + a trivial cached njit':<44}{wall:>9.2f}{cpu:>9.2f}   "
              "(what the numba-cache-only rows cannot go below)")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"{misses} target(s) missed")


if __name__ == "__main__":
    main()
