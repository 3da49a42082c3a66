"""The SVD kernels compiled ahead of time (minigrad/_aot.py): the JIT's results bit for bit,
no numba import in a warm process's first SVD, and the JIT for any argument types the
module was not built for (a wrong guess there would read memory as the wrong type)."""

import os
import subprocess
import sys
import textwrap
import threading
from contextlib import contextmanager

import numpy as np
import pytest

from minigrad import _aot, _aot_build
from minigrad import _kernel_registry as registry
from minigrad._kernel_registry import FAMILIES
from minigrad.linalg import _svd_forward as F
from minigrad.linalg._jacobi_contract import Tol
from minigrad.linalg._svd_forward import Path, Plan, svd_forward
from minigrad.linalg.errors import LinAlgError

JACOBI = FAMILIES["jacobi"]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def compiled():
    """The module `make test`'s warm-up built; built here if it is missing."""
    kernels = registry.compiled("jacobi")
    if kernels is None:
        if _aot_build.unavailable():
            pytest.skip(f"the compiled module cannot be built here: {_aot_build.unavailable()}")
        if not _aot.enabled():
            pytest.skip("MINIGRAD_NO_AOT is set: the warm-up builds no module")
        from minigrad import warmup

        saved = dict(registry._chosen)
        try:
            warmup.main([])
        finally:
            registry._chosen.clear()
            registry._chosen.update(saved)
        kernels = registry.compiled("jacobi")
    assert isinstance(kernels, _aot.Kernels)
    return kernels


@contextmanager
def using(kernels):
    saved = registry._chosen.get("jacobi")
    registry.use("jacobi", kernels)
    try:
        yield
    finally:
        registry.use("jacobi", saved if saved is not None else registry.jit("jacobi"))


def _cases():
    rng = np.random.default_rng(5)
    r = rng.standard_normal
    tied = np.linalg.qr(r((8, 3, 3)))[0] * np.array([2.0, 2.0, 0.5])  # s = (2, 2, 0.5)
    rank1 = r((8, 3, 1)) @ r((8, 1, 3))  # zero singular values: U completed
    nan = r((40, 3, 3))
    nan[17, 1, 2] = np.nan
    readonly = r((40, 3, 3))
    readonly.flags.writeable = False  # a type the module was not built for: the JIT's
    cases = []
    for dt in (np.float64, np.float32, np.float16):
        for a in (r((100, 3, 3)), tied, rank1, r((70, 4, 3)), r((70, 3, 4)), r((9, 2, 2)),
                  r((12, 8, 8)), r((12, 8, 5)), r((12, 5, 8)), r((3, 20, 11))):
            for kw in ({}, {"full_matrices": False}, {"compute_uv": False}):
                cases.append((a.astype(dt), kw, None))
        for plan in (Plan(Path.LONE, 1), Plan(Path.LONE, 2), Plan(Path.QR, 1)):
            for a in (r((60, 50)), r((50, 60)), r((90, 50))):
                cases.append((a.astype(dt), {}, plan))
                cases.append((a.astype(dt), {"compute_uv": False}, plan))
    cases += [(r((64, 3, 3)).astype(np.float32), {"tol": 1e-7}, None),  # lanes hand over
              (nan, {}, None), (nan[17], {}, Plan(Path.LONE, 1)), (readonly, {}, None),
              (r((30, 3, 3)), {"max_sweeps": 1}, None)]
    return cases


def _outcome(a, kw, plan):
    try:
        return svd_forward(a, _plan=plan, **kw)
    except LinAlgError as e:
        return str(e)


def test_compiled_kernels_give_the_jits_results_bit_for_bit(compiled):
    """Every path of the driver (lanes of 3x3 and other tiny matrices, the general batch
    kernels with completion of U, the lone and QR paths, the threaded sweeps, errors) gives
    the same bits from the compiled module as from numba's JIT."""
    cases = _cases()
    with using(registry.jit("jacobi")):
        want = [_outcome(*c) for c in cases]
    with using(compiled):
        got = [_outcome(*c) for c in cases]
    assert sum(isinstance(w, str) for w in want) == 3  # the NaN cases and max_sweeps=1
    for (a, kw, plan), w, g in zip(cases, want, got):
        if isinstance(w, str):
            assert g == w
            continue
        for x, y in zip(w, g):
            assert (x is None and y is None) or (x.dtype == y.dtype and np.array_equal(x, y)), \
                (a.shape, a.dtype, kw, plan)


FIRST_SVD = textwrap.dedent("""
    import sys
    import numpy as np
    import minigrad as mg
    rng = np.random.default_rng(0)
    for shape in [(64, 3, 3), (16, 8, 8), (60, 50)]:
        for dt in ("float64", "float32"):
            a = rng.standard_normal(shape).astype(dt)
            U, S, Vh = mg.linalg.svd(mg.tensor(a), full_matrices=False)
            recon = (U.numpy() * S.numpy()[..., None, :]) @ Vh.numpy()  # numpy: no kernel
            assert np.allclose(recon, a, atol=1e-4)
    print("numba imported:", "numba" in sys.modules)
""")


def _runs_without_numba(script: str) -> None:
    """script, in a fresh process with the compiled modules allowed, imports no numba."""
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "MINIGRAD_NO_AOT": ""}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300, cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "numba imported: False", out.stdout + out.stderr
    assert "compiling" not in out.stderr


def test_a_warm_process_runs_its_first_svds_without_numba(compiled):
    """Importing numba and loading a cached kernel cost ~1 s; with the module built, the
    first SVDs of every kind never import it."""
    _runs_without_numba(FIRST_SVD)


FIRST_EIGH = textwrap.dedent("""
    import sys
    import numpy as np
    import minigrad as mg
    rng = np.random.default_rng(0)
    for shape in [(32, 3, 3), (3, 30, 30), (60, 60)]:  # lanes, one by one, LAPACK's start
        a = rng.standard_normal(shape)
        a = a + np.swapaxes(a, -1, -2)
        w, v = mg.linalg.eigh(mg.tensor(a))
        recon = (v.numpy() * w.numpy()[..., None, :]) @ np.swapaxes(v.numpy(), -1, -2)
        assert np.allclose(recon, a, atol=1e-10)
    print("numba imported:", "numba" in sys.modules)
""")


def test_a_warm_process_runs_its_first_eighs_without_numba(compiled):
    """eigh's module too is built by the warm-up, also on a fresh install: its check ran
    against the code numba had just compiled, which differed from the cached code (and
    from the module) in the last bit, so it was refused there and the first eigh of every
    later process imported numba (~1 s). (It tells the two warm-ups apart only where the
    cache was filled by a fresh compile on a CPU that shows that difference: CI's fresh
    clones on this project's AMD EPYC did.)"""
    if registry.compiled("eigh") is None:
        pytest.fail("the warm-up built the SVD's module but not eigh's")
    _runs_without_numba(FIRST_EIGH)


def _ndarrays():
    base = np.arange(48.0).reshape(4, 12)
    ro = base.copy()
    ro.flags.writeable = False
    raw = np.zeros(8 * 10 + 1, np.uint8)
    unaligned = np.frombuffer(raw.data, np.float64, 10, offset=1)
    return [base, base.astype(np.float32), base.astype(np.int64), base.astype(np.int8),
            base > 3, base.reshape(4, 3, 4), base.T, base[:, ::2], ro, np.empty((1, 0, 0)),
            np.empty(1), np.empty((0, 3)), base[0], np.asfortranarray(base), unaligned]


def test_argument_kinds_match_numbas_types():
    """Two arguments get the same kind only if numba types them alike (else a compiled
    signature could be called on memory of another type), and every kind the driver
    passes is found from the numba type the build records."""
    numba = pytest.importorskip("numba")
    values = _ndarrays() + [True, False, 3, 2.5, Tol(1e-8, 1e-8, 1e-300, 60), np.bool_(True),
                            np.int32(3), np.float32(1.0), (1.0, 2)]
    kinds = [_aot._kinds((v,))[0] for v in values]
    types = [numba.typeof(v) for v in values]
    for i in range(len(values)):
        for j in range(len(values)):
            if kinds[i] == kinds[j]:
                assert types[i] == types[j], (values[i], values[j])
    # Not the unaligned array: numba types it as aligned, _kinds conservatively not.
    driver = _ndarrays()[:-1] + [True, 3, 2.5, Tol(1e-8, 1e-8, 1e-300, 60)]
    for v in driver:
        recorded = _aot._from_json(_aot_build._numba_kind(numba.typeof(v)))
        assert recorded == _aot._kinds((v,))[0], v


def test_arguments_the_module_was_not_built_for_go_to_the_jit():
    calls = []

    class Jit:
        @staticmethod
        def norm(x):
            calls.append("jit")
            return float(np.abs(x).sum())

    def built(x):
        calls.append("compiled")
        return float(np.abs(x).sum())

    x = np.ones(4)
    kernels = _aot.Kernels({"norm": {_aot._kinds((x,)): built}}, lambda: Jit)
    ro = x.copy()
    ro.flags.writeable = False
    for arg in (x, x.astype(np.float32), ro, np.ones(8)[::2], np.ones((2, 2)), x):
        assert kernels.norm(arg) == float(np.abs(arg).sum())
    assert calls == ["compiled", "jit", "jit", "jit", "jit", "compiled"]
    Jit.other = staticmethod(lambda: "the JIT's")  # a kernel the module was built without
    assert kernels.other() == "the JIT's"
    with pytest.raises(AttributeError):
        kernels.missing  # noqa: B018


def test_a_module_built_for_other_sources_or_a_damaged_manifest_is_not_used(
        compiled, tmp_path, monkeypatch):
    edited = tmp_path / "_jacobi.py"
    edited.write_text(open(JACOBI.sources[0]).read() + "\n# an edit\n")
    assert _aot.load("jacobi", (str(edited),), lambda: registry.jit("jacobi")) is None
    # A cache directory with nothing there, then with a manifest that is not one: neither
    # is used; the next place looked in (the package's own) still is.
    cache = str(tmp_path / "cache" / "minigrad" / "aot")
    assert registry.compiled("jacobi", where=cache) is None
    where, name, manifest = _aot._paths("jacobi", JACOBI.sources, cache)
    os.makedirs(where)
    with open(manifest, "w") as f:
        f.write('[["sweeps_0", "sweeps", [["array", "d"]]]]')  # no module beside it
    assert registry.compiled("jacobi", where=cache) is None
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    assert _aot.cache_roots()[0] == os.path.dirname(cache)
    assert registry.compiled("jacobi") is not None


def test_compiled_kernels_release_the_gil(compiled):
    """While a compiled kernel runs on one thread, Python code runs on another: the
    threaded batches and the threaded sweeps depend on it."""
    x = np.random.default_rng(0).standard_normal((1, 400, 400))
    args = (x, np.empty((1, 0, 0)), np.empty(400), np.empty(400), np.empty(400),
            F._tolerances(None, 60, 400, np.float64), np.zeros(1, np.int8))
    assert _aot._kinds(args) in compiled._table["sweeps"]
    inside = threading.Event()

    def run() -> None:
        inside.set()
        compiled.sweeps(*args)

    t = threading.Thread(target=run)
    t.start()
    inside.wait()
    steps = 0
    while t.is_alive():
        steps += 1
    t.join()
    assert args[-1][0] == 0  # converged
    assert steps > 1000, f"only {steps} steps of Python ran during the kernel"


def test_a_module_whose_results_differ_from_the_jits_is_not_published(tmp_path, monkeypatch):
    """The warm-up checks each module against the JIT before anything can load it: here
    the JIT's results it compares with are made to differ, and nothing is published."""
    if _aot_build.unavailable():
        pytest.skip(f"the compiled module cannot be built here: {_aot_build.unavailable()}")
    from minigrad import warmup
    saved = registry._chosen.get("eigh")
    jit = registry.jit("eigh")
    registry.use("eigh", jit)  # the JIT runs: its signatures are what the build compiles
    try:
        want = warmup.warm(FAMILIES["eigh"])
        off = [(w + 1.0, None if v is None else v) for w, v in want]
        # Only here, not in the package's cache or the user's, so that it is built anew.
        monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user"))
        monkeypatch.setattr(_aot, "PACKAGE_ROOT", str(tmp_path / "package"))
        said = warmup.build_aot({"eigh": off})
    finally:
        registry.use("eigh", saved if saved is not None else jit)
    assert said == "eigh skipped: its results differ from the JIT's"
    assert registry.compiled("eigh") is None
    assert os.listdir(tmp_path / "minigrad" / "aot") == []  # the staging directory is gone too


def test_svd_vjp_square_refuses_arrays_its_compiled_kernel_would_misread():
    """The compiled small kernels check nothing (an unchecked family), so their callers must: a
    factor of the wrong ndim is a ValueError, not memory read as the wrong shape."""
    from minigrad.linalg._svd_backward import svd_vjp_square

    a = np.random.default_rng(0).standard_normal((16, 3, 3))
    u, s, vh = svd_forward(a)
    good = svd_vjp_square(u, s, vh, a, None, a)
    assert good.shape == (16, 3, 3)
    for bad in ((u[0], s, vh, a, None, a), (u, s[0], vh, a, None, a),
                (u, s, vh, a[0], None, a), (u, s, vh, None, s[..., None], None)):
        with pytest.raises(ValueError, match="expects"):
            svd_vjp_square(*bad)
