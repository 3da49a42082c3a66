"""minigrad's compiled code where it is deployed: a warmed install that is read-only (a
container image, a system install), caches that are damaged, an edit that only a module the
kernels import sees, a killed warm-up, NUMBA_DISABLE_JIT, no memory for another thread.
Subprocesses load what an earlier one cached; each case is a few seconds."""

import importlib.machinery
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

from minigrad import _aot, _aot_build
from minigrad import _kernel_registry as registry
from minigrad._kernel_registry import FAMILIES
from minigrad.linalg import _svd_forward as F
from minigrad.linalg import _svd_gram, _threads
from tests.deploy.test_svd_worker_processes import _lock, _unlock

JACOBI = FAMILIES["jacobi"]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Every kernel family once, as a user's first calls would run it.
WORKLOAD = textwrap.dedent("""
    import numpy as np
    import minigrad as mg
    rng = np.random.default_rng(0)
    for dt in (mg.float64, mg.float32):
        for shape in [(64, 3, 3), (4, 8, 8), (60, 50)]:
            mg.linalg.svd(mg.tensor(rng.standard_normal(shape), dtype=dt))
            mg.linalg.svdvals(mg.tensor(rng.standard_normal(shape), dtype=dt))
        a = mg.tensor(rng.standard_normal((16, 3, 3)), dtype=dt)
        (a @ a).numpy()
    s = mg.tensor(rng.standard_normal((3, 30, 30)))
    s = s + s.mT
    mg.linalg.eigh(s), mg.linalg.eigvalsh(s)
    x = mg.tensor(np.linspace(0.5, 3.0, 6))
    for f in (mg.special.erf, mg.special.erfc, mg.special.erfinv, mg.special.erfcx, mg.lgamma,
              mg.digamma, mg.special.i0e, mg.special.i1, mg.special.i1e, mg.special.ndtri):
        f(x / 4 if f is mg.special.erfinv or f is mg.special.ndtri else x)
    mg.polygamma(2, x)
""")

REPORT = textwrap.dedent("""
    import sys
    from minigrad import _kernel_registry
    numba = sys.modules.get("numba")
    misses = 0
    if numba is not None:
        from numba.core.dispatcher import Dispatcher
        for name, mod in list(sys.modules.items()):
            if name.startswith("minigrad"):
                kernels = list(vars(mod).values()) + list(vars(mod).get("jitted", {}).values())
                misses += sum(sum(d.stats.cache_misses.values()) for d in kernels
                              if isinstance(d, Dispatcher))
    print("misses", misses)
    print("compiled modules", sorted(k for k, v in _kernel_registry._chosen.items()
                                     if type(v).__name__ == "Kernels"))
""")


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "PYTHONPATH", "NUMBA_DISABLE_JIT",
                        "MINIGRAD_NO_AOT")}
    env.update(PYTHONDONTWRITEBYTECODE="1", **extra)
    return env


def _python(code: str, cwd: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600, cwd=cwd, env=_env(**env))


def _tree(path: str) -> list:
    return sorted((os.path.relpath(os.path.join(d, f), path),
                   os.stat(os.path.join(d, f)).st_size, os.stat(os.path.join(d, f)).st_mtime_ns)
                  for d, _, fs in os.walk(path) for f in fs)


# Where a directory cannot be made read-only (root on a filesystem without the immutable
# flag): os.access answers as on a read-only mount; that nothing is written is checked.
SIMULATED = textwrap.dedent("""
    import os
    _access = os.access
    def _read_only_below(path, mode, *args, **kw):
        if mode & os.W_OK and os.path.abspath(path).startswith({base!r}):
            return False
        return _access(path, mode, *args, **kw)
    os.access = _read_only_below
""")


def _read_only(path: str) -> bool:
    """Make path read-only for real (chmod; the immutable flag as root), or say it cannot."""
    try:
        _lock(path)
    except pytest.skip.Exception:
        return False
    return True


def test_a_warmed_read_only_install_compiles_nothing_and_writes_nothing():
    """A warmed install copied elsewhere and made read-only (the immutable flag as root, or
    else os.access answering so), with a read-only HOME: every kernel family loads what
    the warm-up compiled (its compiled modules and numba's cache beside the package),
    compiles nothing and writes nothing.
    Before, eigh and the special functions raised "no locator available" there."""
    exec(WORKLOAD, {})  # this install: warm (the suite's warm-up did it, else this does)
    built = [s for s in ("jacobi", "small") if registry.compiled(s) is not None]
    base = tempfile.mkdtemp(prefix="minigrad-ro-")
    site, home = os.path.join(base, "site"), os.path.join(base, "home")
    try:
        shutil.copytree(os.path.join(ROOT, "minigrad"), os.path.join(site, "minigrad"))
        os.makedirs(home)
        real = _read_only(site) and _read_only(home)
        before = _tree(base)
        prelude = "" if real else SIMULATED.format(base=base)
        out = _python(prelude + WORKLOAD + REPORT, base, PYTHONPATH=site, HOME=home)
        assert out.returncode == 0, out.stderr
        assert "misses 0" in out.stdout, out.stdout + out.stderr
        assert "compiling" not in out.stderr and "no writable" not in out.stderr, out.stderr
        for stem in built:  # the compiled modules the warm-up built are the ones used
            assert f"'{stem}'" in out.stdout.splitlines()[-1], out.stdout
        assert _tree(base) == before
    finally:
        _unlock(base)
        shutil.rmtree(base, ignore_errors=True)


# Kernels in a package of their own: one per way of damaging a cache file, and one whose
# constant comes from another module (as _jacobi's do from _jacobi_contract).
NAMES = ("truncated", "flipped", "emptied", "bad_index", "code")
KERNELS = "from minigrad._numba_cache import njit\nfrom .contract import CODE\n" + "".join(
    f"\n\n@njit(cache=True)\ndef {name}(x):\n    return x + {i + 1.0 if i < 4 else 'CODE'}\n"
    for i, name in enumerate(NAMES))

CALL = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    from kernels import k
    kernels = [k.truncated, k.flipped, k.emptied, k.bad_index, k.code]
    print([f(1.0) for f in kernels])
    print("misses", [sum(f.stats.cache_misses.values()) for f in kernels])
""")


def _call(where: str, cache: str) -> subprocess.CompletedProcess:
    out = subprocess.run([sys.executable, "-c", CALL, where], capture_output=True, text=True,
                         timeout=300, cwd=where,
                         env=_env(PYTHONPATH=ROOT, NUMBA_CACHE_DIR=cache))
    assert out.returncode == 0, out.stderr
    return out


def _cache_file(cache: str, kernel: str, ext: str) -> str:
    found = [os.path.join(d, f) for d, _, fs in os.walk(cache) for f in fs
             if f.startswith(f"k.{kernel}-") and f.endswith(ext)]
    assert len(found) == 1, found
    return found[0]


def _kernels_package(tmp_path) -> str:
    """The package `kernels` (KERNELS in k.py, CODE = 5.0 in contract.py) in tmp_path;
    returns the cache directory its calls use."""
    pkg = tmp_path / "kernels"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "contract.py").write_text("CODE = 5.0\n")
    (pkg / "k.py").write_text(KERNELS)
    return str(tmp_path / "cache")


def _flip(path: str, at: int) -> None:
    """Invert 64 bytes of the file from offset `at` (negative: from its end)."""
    with open(path, "r+b") as f:
        f.seek(at, os.SEEK_END if at < 0 else os.SEEK_SET)
        where = f.tell()
        data = f.read(64)
        f.seek(where)
        f.write(bytes(b ^ 0xFF for b in data))


def test_damaged_numba_cache_files_are_compiled_anew_and_said(tmp_path):
    """A truncated, altered or emptied cache file, or a truncated index: the kernel is
    compiled anew (its result right), a warning names the damaged cache, and the next
    process loads the cache that compile rewrote. Before, a truncated file raised
    UnpicklingError in every process."""
    cache = _kernels_package(tmp_path)
    first = _call(str(tmp_path), cache)
    assert "[2.0, 3.0, 4.0, 5.0, 6.0]" in first.stdout
    with open(_cache_file(cache, "truncated", ".nbc"), "r+b") as f:
        f.truncate(100)
    _flip(_cache_file(cache, "flipped", ".nbc"), -200)
    open(_cache_file(cache, "emptied", ".nbc"), "wb").close()
    with open(_cache_file(cache, "bad_index", ".nbi"), "r+b") as f:
        f.truncate(40)
    damaged = _call(str(tmp_path), cache)
    assert "[2.0, 3.0, 4.0, 5.0, 6.0]" in damaged.stdout
    assert "misses [1, 1, 1, 1, 0]" in damaged.stdout, damaged.stdout
    assert damaged.stderr.count("is damaged") == 4, damaged.stderr
    again = _call(str(tmp_path), cache)
    assert "misses [0, 0, 0, 0, 0]" in again.stdout
    assert "damaged" not in again.stderr


def test_an_edit_to_a_module_the_kernels_import_recompiles_them(tmp_path):
    """numba's stamp covers the kernel's own file: a constant changed in the module it
    imports was compiled in stale (before, _jacobi_contract's NOT_FINITE changed gave
    garbage singular values)."""
    cache = _kernels_package(tmp_path)
    assert "6.0]" in _call(str(tmp_path), cache).stdout
    (tmp_path / "kernels" / "contract.py").write_text("CODE = 7.0\n")
    assert "8.0]" in _call(str(tmp_path), cache).stdout


def test_the_caches_are_keyed_on_the_modules_the_kernels_import():
    """The real kernels: the keys of their caches and modules cover what they import."""
    here = os.path.join(ROOT, "minigrad")
    contract = os.path.join(here, "linalg", "_jacobi_contract.py")
    for kernels in ("_jacobi.py", "_eigh_jacobi.py"):
        assert contract in _aot.sources([os.path.join(here, "linalg", kernels)])
    vjp = os.path.join(here, "linalg", "_svd_vjp_kernel.py")
    assert os.path.join(here, "ops", "_matmul_kernels.py") in _aot.sources([vjp])


@pytest.fixture(scope="module")
def module_files():
    """The compiled SVD module of this install (the warm-up built it), or skip."""
    if registry.compiled("jacobi") is None:
        pytest.skip("no compiled module here (no C compiler, or no warm-up)")
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    for root in _aot.cache_roots():
        where, name, manifest = _aot._paths("jacobi", JACOBI.sources, os.path.join(root, "aot"))
        if os.path.exists(manifest):
            return manifest, os.path.join(where, name + suffix)
    pytest.skip("the compiled module is not in a cache root")


@pytest.mark.parametrize("damage", ["truncated", "flipped", "empty"])
def test_a_damaged_compiled_module_is_not_loaded(module_files, damage, tmp_path):
    """A module truncated (SIGBUS when loaded), altered (SIGSEGV, SIGILL) or emptied: its
    size and hash are not its manifest's, so it is not loaded; the JIT serves, and a
    warning says so."""
    manifest, module = module_files
    shutil.copy(manifest, tmp_path)
    copy = tmp_path / os.path.basename(module)
    shutil.copy(module, copy)
    if damage == "flipped":
        _flip(str(copy), os.path.getsize(copy) // 2)
    else:
        with open(copy, "r+b") as f:
            f.truncate(4096 if damage == "truncated" else 0)
    with pytest.warns(RuntimeWarning, match="is damaged"):
        assert registry.compiled("jacobi", where=str(tmp_path)) is None


def test_a_killed_warm_ups_staging_directory_is_removed(tmp_path):
    """A SIGKILLed build leaves its .build-<pid>-* directory; the next build removes those
    whose process is gone, and leaves a running one's."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead, alive = tmp_path / f".build-{done.stdout.strip()}-x", tmp_path / f".build-{os.getpid()}-y"
    for d in (dead, alive):
        d.mkdir()
        (d / "part.so").write_bytes(b"\0" * 10)
    _aot_build.sweep(str(tmp_path))
    assert not dead.exists() and alive.exists()


def test_the_warm_up_says_so_when_numbas_jit_is_disabled(tmp_path):
    out = subprocess.run([sys.executable, "-m", "minigrad.warmup"], capture_output=True,
                         text=True, timeout=300, cwd=str(tmp_path),
                         env=_env(PYTHONPATH=ROOT, NUMBA_DISABLE_JIT="1"))
    assert out.returncode == 0, out.stderr
    assert "compiled and cached" not in out.stderr
    assert "NUMBA_DISABLE_JIT" in out.stderr


def test_the_thread_count_does_not_import_numba(monkeypatch):
    """The first threaded SVD asked numba for NUMBA_NUM_THREADS (0.3 s of import) although
    the compiled modules exist to avoid importing it; the value is numba's."""
    numba = pytest.importorskip("numba")
    out = _python("import sys\nfrom minigrad.linalg import _threads\n"
                  "print(_threads.num_threads() >= 1, 'numba' in sys.modules)", ROOT,
                  PYTHONPATH=ROOT)
    assert out.stdout.split() == ["True", "False"], out.stdout + out.stderr
    monkeypatch.setitem(sys.modules, "numba", None)  # as if not imported
    assert _threads._default() == numba.config.NUMBA_NUM_THREADS
    monkeypatch.setenv("NUMBA_NUM_THREADS", "3")
    assert _threads._default() == 3


def test_no_memory_for_another_thread_runs_the_work_on_the_callers(monkeypatch):
    """Short of memory (or of a thread quota) starting a helper raises "can't start new
    thread": the calling thread does the work instead."""
    class NoThreads:
        def submit(self, fn):
            raise RuntimeError("can't start new thread")

    monkeypatch.setattr(_threads, "_executor", lambda helpers: NoThreads())
    assert _threads.run(lambda i: i * i, [(i,) for i in range(10)], 4) == [i * i for i in
                                                                           range(10)]
    a = np.random.default_rng(0).standard_normal((80, 60))
    s = F.svd_forward(a, compute_uv=False, _plan=F.Plan(F.Path.LONE, 2))[1]
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-12)


def test_an_svd_that_cannot_fit_is_refused_up_front(monkeypatch):
    """One large matrix whose working copies do not fit: a MemoryError naming the size,
    before anything large is allocated (before: a segfault inside LAPACK's eigh of the
    Gram under a memory limit)."""
    import minigrad as mg
    from minigrad.linalg import _memory

    a = mg.tensor(np.random.default_rng(0).standard_normal((300, 200)), dtype=mg.float32)
    monkeypatch.setattr(_memory, "available", lambda: 100_000.0)
    with pytest.raises(MemoryError, match="one 300x200 float32 matrix needs about"):
        mg.linalg.svdvals(a)
    with pytest.raises(MemoryError, match="300x200"):
        mg.linalg.svd(a)


def test_without_memory_for_the_gram_start_the_plain_sweeps_run(monkeypatch):
    """The start from A^T A's eigenvectors takes ~3 n^2 doubles beside A: where they do not
    fit, the sweeps start from A itself (slower, within memory), with the same values."""
    from minigrad.linalg import _memory

    a = np.ldexp(np.random.default_rng(1).standard_normal((90, 70)), -3)
    assert _svd_gram._gram_start(a) is not None
    monkeypatch.setattr(_memory, "available", lambda: 3.0 * a.nbytes)
    assert _svd_gram._gram_start(a) is None
    s = F.svd_forward(a, compute_uv=False, _plan=F.Plan(F.Path.LONE, 1))[1]
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-12)


def test_the_in_place_eigh_of_the_gram_is_numpys():
    rng = np.random.default_rng(2)
    b = rng.standard_normal((80, 40))
    g = b.T @ b
    lam, v = _svd_gram.eigh_gram(g.copy(), in_place=True)
    want = np.linalg.eigvalsh(g)
    np.testing.assert_allclose(lam, want, rtol=1e-12)
    np.testing.assert_allclose(v.T @ g @ v, np.diag(want), atol=1e-12 * want[-1])
    np.testing.assert_allclose(v.T @ v, np.eye(40), atol=1e-13)


def test_an_address_space_limit_gives_a_memory_error_naming_the_size():
    """Under ulimit -v (RLIMIT_AS) with room for the input but not for the SVD's working
    copies: the refusal, and a process that goes on."""
    code = textwrap.dedent("""
        import resource
        import numpy as np
        import minigrad as mg
        a = mg.tensor(np.ones((3000, 3000), np.float32))  # 36 MB
        with open("/proc/self/statm") as f:
            size = int(f.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (size + 48 * 2**20, resource.RLIM_INFINITY))
        try:
            mg.linalg.svdvals(a)
        except MemoryError as e:
            print("MemoryError:", e)
        resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY,) * 2)
        print(mg.linalg.svdvals(mg.eye(3)).tolist())
    """)
    if not os.path.exists("/proc/self/statm"):
        pytest.skip("no /proc here")
    out = _python(code, ROOT, PYTHONPATH=ROOT)
    assert out.returncode == 0, out.stderr
    assert "MemoryError: the SVD of one 3000x3000 float32 matrix needs about" in out.stdout, \
        out.stdout + out.stderr
    assert out.stdout.strip().endswith("[1.0, 1.0, 1.0]")


def test_small_needs_within_a_second_read_the_memory_once(monkeypatch):
    """Reading what is left costs ~30 us (four /proc and /sys files), 9% of one 60x40 SVD:
    a need under an eighth of a reading less than a second old does not read again; a
    larger one does, and a replaced ``available`` is always asked."""
    from minigrad.linalg import _memory

    reads = []
    real = _memory.available

    def counting():
        reads.append(1)
        return real()

    monkeypatch.setattr(_memory, "available", counting)
    monkeypatch.setattr(_memory, "_last", (-1.0, 0.0, None))
    left = _memory.available()
    reads.clear()
    for _ in range(5):
        assert _memory.fits(1e4)
    assert len(reads) == 1
    if left is not None:  # a need near what is left is always read afresh
        _memory.fits(left / 2)
        _memory.fits(left / 2)
        assert len(reads) == 3
    monkeypatch.setattr(_memory, "available", lambda: 1000.0)
    assert not _memory.fits(1e4)
