"""Compile minigrad's numba kernels (every family of minigrad/_kernel_registry.py: SVD, eigh,
small-batch matmul, special functions) ahead of time: ``python -m minigrad.warmup``.

numba compiles each kernel on its first call and caches it on disk; on a fresh install
that first call takes seconds per kind of SVD. This runs every family's warm-up once, so
that numba's cache holds every kernel, and shows progress on stderr. With a warm cache it
only loads them (well under a second each). Last, it compiles the families marked ``aot``
into extension modules (minigrad/_aot.py), in second processes, each checked to give the
results of numba's cached code (what a later process's JIT runs) bit for bit, so that a
later process's first SVD, eigh, small matmul or SVD backward imports no numba at all.
That step is optional: where the modules cannot be built (no C compiler, no numba.pycc, a
build that fails) or MINIGRAD_NO_AOT=1, one line says so and numba's cached JIT serves
every kernel.
"""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np

from minigrad import _aot
from minigrad._kernel_registry import FAMILIES, Family, compiled, jit, use

_BUILD = sum(len(f.runs) for f in FAMILIES.values()) + 1  # the ahead-of-time build's step
TOTAL = _BUILD + sum(len(f.jit_only) for f in FAMILIES.values())  # then the jit_only runs
_FIRST = next(f.name for f in FAMILIES.values() if f.aot)  # its build starts first


def _step(n: int, label: str) -> float:
    print(f"minigrad.warmup [{n}/{TOTAL}] {label} ...", end="", file=sys.stderr, flush=True)
    return time.perf_counter()


def _done(t: float, what: str = "") -> None:
    took = f"{time.perf_counter() - t:.1f} s"
    print(f" {what} ({took})" if what else f" {took}", file=sys.stderr, flush=True)


def warm(family: Family, first: int | None = None, jit_only: bool = False) -> list:
    """The family's warm-up runs (its jit_only ones if asked), their results in order; a
    progress line each, numbered from first + 1, unless first is None."""
    out = []
    for i, (label, run) in enumerate(family.jit_only if jit_only else family.runs):
        t = _step(first + i + 1, label) if first is not None else 0.0
        out += run()
        if first is not None:
            _done(t)
    return out


def _same(x: list, y: list) -> bool:
    return all((p is None and q is None) or (p.dtype == q.dtype and np.array_equal(p, q))
               for a, b in zip(x, y) for p, q in zip(a, b))


def build_aot(jit_results: dict) -> str:
    """Compile each family in jit_results ahead of time (unless built already) and publish
    its module only once it gives the JIT's results (jit_results[name]) bit for bit on the
    family's warm-up. Returns what happened, per family."""
    from minigrad import _aot_build  # numba.pycc: only here

    said = []
    for family in FAMILIES.values():
        if not family.aot or family.name not in jit_results:
            continue
        stem, sources, names = family.name, family.sources, family.entry_points
        module = jit(stem)
        built = compiled(stem)
        if built is not None and set(names) <= built.names():
            said.append(f"{stem} built already")
            continue
        try:
            staging = _aot_build.build(stem, sources, module, names)
        except Exception as e:  # no compiler, no numba.pycc, ...: the JIT still serves
            first = str(e).splitlines()[0] if str(e) else ""
            said.append(f"{stem} skipped ({type(e).__name__}: {first}); numba's JIT serves")
            continue
        candidate = compiled(stem, where=staging)
        same = False
        if candidate is not None:
            use(stem, candidate)
            try:
                same = _same(warm(family), jit_results[stem])
            finally:
                use(stem, module)
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


def _why_no_build() -> str | None:
    """Why this warm-up builds no module (switched off, or impossible here), or None."""
    if not _aot.enabled():
        return "MINIGRAD_NO_AOT is set"
    if _aot._directory() is None:  # (a child would compile every kernel again to learn it)
        return "no writable cache directory (set NUMBA_CACHE_DIR to one)"
    from minigrad import _aot_build

    return _aot_build.unavailable()


def _child_build(names: list[str]) -> subprocess.Popen | None:
    """`python -m minigrad.warmup --aot NAME...`: those families' modules built in a second
    process, which loads their kernels from the cache this one filled and checks each
    module against them. That cached code is what every later process runs; the code
    numba has just compiled in this process can differ from it in the last bit (eigh's
    lanes kernel on an AMD EPYC: 22-46 of 288 values one ulp apart), so a module checked
    here was refused on every fresh install. The first child (the SVD's, a third of the
    warm-up's time) runs on the other core while this process compiles the rest."""
    try:
        return subprocess.Popen([sys.executable, "-m", "minigrad.warmup", "--aot", *names],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError:
        return None


def _child_said(child: subprocess.Popen, names: list[str]) -> str:
    """What a _child_build process did, in the warm-up's words: its result line (stdout
    holds nothing else), or why there is none."""
    out, err = child.communicate()
    if child.returncode == 0 and out.strip():
        return out.strip().splitlines()[-1]
    how = f"was killed by signal {-child.returncode}" if child.returncode < 0 else \
        f"exited with status {child.returncode}"
    last = (err.strip().splitlines() or ["no message"])[-1]
    return f"{', '.join(names)} skipped (the build process {how}: {last}); numba's JIT serves"


def main(argv: list[str] | None = None) -> int:
    """Run every family's warm-up through numba's JIT, then compile them ahead of time,
    printing how long each took."""
    t0 = time.perf_counter()
    from numba import config

    if config.DISABLE_JIT:  # type: ignore[attr-defined]  # numba.config sets it at run time
        print("minigrad.warmup: numba's JIT is disabled (NUMBA_DISABLE_JIT): the kernels run "
              "as Python, so there is nothing to compile or cache", file=sys.stderr)
        return 0
    from minigrad.linalg import _svd_forward
    from minigrad.ops import _matmul_kernels

    _svd_forward._noticed.update(("float32", "float64", "complex64", "complex128"))  # said
    _matmul_kernels.notice_compiles = False
    # The JIT kernels, even where compiled modules exist: their signatures are what the
    # modules are built from.
    for name in FAMILIES:
        use(name, jit(name))
    if argv and argv[0] == "--aot":  # a child: the kernels load from the cache just filled
        names = argv[1:] or [f.name for f in FAMILIES.values() if f.aot]
        print(_build({name: warm(FAMILIES[name]) for name in names}), flush=True)
        return 0
    why_not = _why_no_build()
    # Each family's module is built in a child process (_child_build): the SVD's as soon
    # as its kernels are cached, the others' once all are.
    first, rest = [_FIRST], [f.name for f in FAMILIES.values() if f.aot and f.name != _FIRST]
    results, n, child = {}, 0, None
    for family in FAMILIES.values():
        results[family.name] = warm(family, first=n)
        n += len(family.runs)
        if family.name == _FIRST and why_not is None:
            child = _child_build(first)
    t = _step(_BUILD, "the same kernels compiled ahead of time")
    if why_not is not None:  # the one notice: everything works without the modules
        cached = "cached " if _aot._directory() is not None else ""  # (the same roots)
        _done(t, f"not built ({why_not}); numba's {cached}JIT serves every kernel")
    else:
        # All running, then waited; where no process could be started, built in this one
        # (checked against its own compile).
        builds = [(first, child)] + ([(rest, _child_build(rest))] if rest else [])
        said = [_build({k: results[k] for k in names}) if proc is None
                else _child_said(proc, names) for names, proc in builds]
        _done(t, ", ".join(s for s in said if s))
    n = _BUILD
    for family in FAMILIES.values():  # after the build: numba's cache only
        warm(family, first=n, jit_only=True)
        n += len(family.jit_only)
    from minigrad import _numba_cache

    kept = "compiled, but not cached (nowhere writable: set NUMBA_CACHE_DIR)" \
        if "nowhere" in _numba_cache._said else "compiled and cached"
    print(f"minigrad.warmup: the {', '.join(FAMILIES)} kernels are {kept} "
          f"({time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
