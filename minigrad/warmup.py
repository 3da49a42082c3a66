"""Compile minigrad's numba kernels (SVD, eigh, small-batch matmul, special functions)
ahead of time: ``python -m minigrad.warmup``.

numba compiles each kernel on its first call and caches it on disk; on a fresh install
that first call takes seconds per kind of SVD. This runs every kind once, float64 and
float32, so that numba's cache holds them all, and shows progress on stderr. With a warm
cache it only loads them (well under a second each). Last, it compiles the same kernels
into extension modules (minigrad/_aot.py), each checked to give the JIT's results bit for
bit, so that a later process's first SVD, eigh, small matmul or SVD backward imports no
numba at all; where they cannot be built (no C compiler, no numba.pycc), the JIT serves.
"""

from __future__ import annotations

import subprocess
import sys
import time
from types import SimpleNamespace

import numpy as np

import minigrad as mg
from minigrad import _aot
from minigrad.linalg import _eigh_forward, _svd_backward, _svd_forward
from minigrad.linalg._eigh_forward import eigh_forward
from minigrad.linalg._svd_forward import Path, Plan, svd_forward
from minigrad.ops import _matmul_kernels

# Each row reaches different kernels: the lanes of 3x3 and of other tiny matrices, the
# general batch kernel, the lone-matrix sweeps (and values only), and the threaded sweep of
# large matrices.
KINDS = [
    ("batch of 3x3", (64, 3, 3), None),
    ("batch of 4x3", (64, 4, 3), None),
    ("batch of 8x8, full U", (4, 8, 5), None),
    ("one matrix", (60, 50), Plan(Path.LONE, 1)),
    ("one large matrix, threaded sweeps", (60, 50), Plan(Path.LONE, 2)),
]
DTYPES = (np.float64, np.float32)
TOTAL = len(KINDS) * len(DTYPES) + 4


def _step(n: int, label: str) -> float:
    print(f"minigrad.warmup [{n}/{TOTAL}] {label} ...", end="", file=sys.stderr, flush=True)
    return time.perf_counter()


def _done(t: float, what: str = "") -> None:
    took = f"{time.perf_counter() - t:.1f} s"
    print(f" {what} ({took})" if what else f" {took}", file=sys.stderr, flush=True)


def _svds(show: bool = False) -> list:
    """Every kind of SVD once per dtype (a progress line each when show); the results."""
    rng, out, n = np.random.default_rng(0), [], 0
    for dtype in DTYPES:
        for label, shape, plan in KINDS:
            n += 1
            t = _step(n, f"{label}, {np.dtype(dtype).name}") if show else 0.0
            a = rng.standard_normal(shape).astype(dtype)
            out += [svd_forward(a, True, _plan=plan),
                    svd_forward(a, False, compute_uv=False, _plan=plan)]
            if show:
                _done(t)
    return out


def _eighs() -> list:
    """eigh through each of its kernel's paths (lanes, one matrix, A V sweeps): one kernel,
    float64 for every dtype."""
    rng = np.random.default_rng(1)
    return [eigh_forward(rng.standard_normal(shape), compute_v=v)
            for shape in ((32, 3, 3), (3, 30, 30), (60, 60)) for v in (True, False)]


def _small() -> list:
    """The small-batch matmul and the fused SVD backward, once per dtype."""
    rng, out = np.random.default_rng(2), []
    for dtype in DTYPES:
        a = rng.standard_normal((16, 3, 3)).astype(dtype)
        u, s, vh = svd_forward(a, True)
        out += [((mg.tensor(a) @ mg.tensor(a)).numpy(),),
                (_svd_backward.svd_vjp_square(u, s, vh, a, None, a),)]
    return out


def _specials() -> list:
    """Every kernel of the special functions (erf and its kin, lgamma, polygamma, Bessel's
    I), on the float64 arrays their callers pass: cached by numba only."""
    from minigrad.ops import _bessel_kernels, _erf_kernels, _gamma_kernels

    x = np.linspace(-3.0, 3.0, 7)
    e = _erf_kernels
    return [e.erf(x), e.erfc(x), e.erfinv(x / 4), e.erfcx(x), e.erfcx_slope(x),
            e.exp_square(x, -0.5), _gamma_kernels.lgamma(x), _gamma_kernels.polygamma(1, x),
            _bessel_kernels.bessel_i(0, x, True), _bessel_kernels.bessel_i(1, x, False)]


# (stem, sources, the JIT's kernels and their names, how to choose a set of kernels, a run
# of every kernel): what build_aot compiles and checks.
def _groups() -> list:
    return [
        ("jacobi", _svd_forward.AOT_SOURCES,
         lambda: (_svd_forward._jit(), _svd_forward.ENTRY_POINTS),
         lambda k: _aot.use("jacobi", k), _svds),
        ("eigh", _eigh_forward.AOT_SOURCES,
         lambda: (_eigh_forward._jit(), _eigh_forward.ENTRY_POINTS),
         lambda k: _aot.use("eigh", k), _eighs),
        ("small", _aot.SMALL_SOURCES,
         lambda: (SimpleNamespace(**_matmul_kernels.jitted), tuple(_matmul_kernels.jitted)),
         lambda k: _aot.use("small", k), _small),
    ]


def _same(x: list, y: list) -> bool:
    return all((p is None and q is None) or (p.dtype == q.dtype and np.array_equal(p, q))
               for a, b in zip(x, y) for p, q in zip(a, b))


def build_aot(jit_results: dict) -> str:
    """Compile each group of kernels in jit_results ahead of time (unless built already)
    and publish the module only once it gives the JIT's results (jit_results[stem]) bit for
    bit on these runs. Returns what happened, per group."""
    from minigrad import _aot_build  # numba.pycc: only here

    said = []
    for stem, sources, jit, choose, run in _groups():
        if stem not in jit_results:
            continue
        module, names = jit()
        fallback = lambda m=module: m  # noqa: E731 (bound now, not at the loop's end)
        built = _aot.load(stem, sources, fallback)
        if built is not None and set(names) <= built.names():
            said.append(f"{stem} built already")
            continue
        try:
            staging = _aot_build.build(stem, sources, module, names)
        except Exception as e:  # no compiler, no numba.pycc, ...: the JIT still serves
            first = str(e).splitlines()[0] if str(e) else ""
            said.append(f"{stem} skipped ({type(e).__name__}: {first}); numba's JIT serves")
            continue
        candidate = _aot.load(stem, sources, fallback, where=staging)
        same = False
        if candidate is not None:
            choose(candidate)
            try:
                same = _same(run(), jit_results[stem])
            finally:
                choose(None if stem == "small" else module)
        if same:
            _aot_build.publish(stem, sources, staging)
            said.append(f"{stem} built")
        else:
            _aot_build.discard(staging)
            said.append(f"{stem} skipped: " + ("its results differ from the JIT's" if
                        candidate is not None else "the module built does not load"))
    return ", ".join(said)


def _build(results: dict) -> str:
    """build_aot, and anything unexpected said instead of raised: the JIT still serves."""
    try:
        return build_aot(results)
    except Exception as e:  # no compiler, no numba.pycc, ...: the JIT still serves
        first = str(e).splitlines()[0] if str(e) else ""
        return f"skipped ({type(e).__name__}: {first}); numba's JIT serves"


def _svd_build_child() -> subprocess.Popen | None:
    """`python -m minigrad.warmup --aot-svd`: the SVD's module built in a second process,
    on the other core, while this one compiles the rest (a third of the warm-up's time)."""
    try:
        return subprocess.Popen([sys.executable, "-m", "minigrad.warmup", "--aot-svd"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError:
        return None


def main(argv: list[str] | None = None) -> int:
    """Run every kind of SVD, eigh and small kernel once per dtype through numba's JIT,
    then compile them ahead of time, printing how long each took."""
    t0 = time.perf_counter()
    from numba import config

    if config.DISABLE_JIT:
        print("minigrad.warmup: numba's JIT is disabled (NUMBA_DISABLE_JIT): the kernels run "
              "as Python, so there is nothing to compile or cache", file=sys.stderr)
        return 0
    _svd_forward._noticed.update(("float32", "float64"))  # the progress lines say it already
    _matmul_kernels.notice_compiles = False
    # The JIT kernels, even where compiled modules exist: their signatures are what the
    # modules are built from.
    for stem, _, jit, choose, _ in _groups():
        choose(None if stem == "small" else jit()[0])
    if argv == ["--aot-svd"]:  # the child: the SVD kernels load from the cache just filled
        print(_build({"jacobi": _svds()}), flush=True)
        return 0
    results = {"jacobi": _svds(show=True)}
    child = _svd_build_child()
    svd_said = _build(dict(results)) if child is None else ""
    t = _step(TOTAL - 3, "batched small matmul and SVD backward")
    results["small"] = _small()
    _done(t)
    t = _step(TOTAL - 2, "eigh")
    results["eigh"] = _eighs()
    _done(t)
    t = _step(TOTAL - 1, "special functions")
    _specials()
    _done(t)
    t = _step(TOTAL, "the same kernels compiled ahead of time")
    done = _build({"small": results["small"], "eigh": results["eigh"]})
    if child is not None:
        out = child.communicate()[0].strip().splitlines() or ["no output"]
        svd_said = out[-1] if child.returncode == 0 else \
            f"jacobi skipped (its build process failed: {out[-1]}); numba's JIT serves"
    _done(t, f"{svd_said}, {done}")
    from minigrad import _numba_cache

    kept = "compiled, but not cached (nowhere writable: set NUMBA_CACHE_DIR)" \
        if "nowhere" in _numba_cache._said else "compiled and cached"
    print(f"minigrad.warmup: the SVD, eigh, matmul and special-function kernels are {kept} "
          f"({time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
