"""The SVD where users run it: forked, spawned and forkserver workers, and a read-only
install (site-packages not writable, as in system or container installs). Each case runs
in a fresh interpreter, with a timeout: a hang is a failure, not a stuck suite."""

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FORKED = textwrap.dedent("""
    import multiprocessing as mp, os, sys
    import numpy as np
    from minigrad.linalg._svd_forward import Path, Plan, svd_forward

    def work(seed):
        a = np.random.default_rng(seed).standard_normal((3000, 3, 3))
        s = svd_forward(a, _plan=Plan(Path.BATCHED, 2))[1]
        b = np.random.default_rng(seed).standard_normal((60, 60))
        t = svd_forward(b, _plan=Plan(Path.LONE, 2))[1]
        return max(float(np.abs(np.linalg.svd(a, compute_uv=False) - s).max()),
                   float(np.abs(np.linalg.svd(b, compute_uv=False) - t).max()))

    if __name__ == "__main__":
        assert work(0) < 1e-12  # the parent has used its threads before the fork
        method = sys.argv[1]
        if method == "os.fork":
            pid = os.fork()
            if pid == 0:
                os._exit(0 if work(1) < 1e-12 else 3)
            assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
        else:
            with mp.get_context(method).Pool(2) as pool:
                assert max(pool.map(work, [1, 2, 3])) < 1e-12
        assert work(4) < 1e-12  # and the parent still works
        print("ok")
""")


@pytest.mark.parametrize("method", ["fork", "os.fork", "spawn", "forkserver"])
def test_svd_in_worker_processes(method, tmp_path):
    """After the parent ran the threaded kernels, an SVD in a forked child hung (numba's
    OpenMP layer kills a forked child that launches a parallel kernel)."""
    if method not in ("os.fork", "spawn") and sys.platform == "win32":
        pytest.skip("no fork on Windows")
    script = tmp_path / "forked.py"
    script.write_text(FORKED)
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, str(script), method], capture_output=True,
                         text=True, timeout=600, cwd=str(tmp_path), env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("ok")


FIRST_CALL = textwrap.dedent("""
    import numpy as np
    import minigrad as mg
    from minigrad.linalg._svd_forward import Path, Plan, svd_forward
    s = svd_forward(np.array([[3.0, 0.0], [0.0, -4.0]]), compute_uv=False,
                    _plan=Plan(Path.LONE, 1))[1]
    assert s.tolist() == [4.0, 3.0], s
    print("ok", mg.__file__)
""")


def _lock(path: str) -> None:
    """Make path unwritable: chmod for a user, the immutable flag for root (root ignores
    permission bits)."""
    if os.geteuid() != 0:
        subprocess.run(["chmod", "-R", "a-w", path], check=True)
        return
    if shutil.which("chattr") is None:
        pytest.skip("running as root without chattr: cannot make a directory read-only")
    if subprocess.run(["chattr", "-R", "+i", path], capture_output=True).returncode:
        pytest.skip("this filesystem does not support the immutable flag")


def _unlock(path: str) -> None:
    if os.geteuid() != 0:
        subprocess.run(["chmod", "-R", "u+w", path], check=False)
    else:
        subprocess.run(["chattr", "-R", "-i", path], check=False, capture_output=True)


def _cache_files(path: str) -> list:
    return [f for _, _, fs in os.walk(path) for f in fs if f.endswith((".nbi", ".nbc"))]


@pytest.fixture
def read_only_install():
    """A copy of the package in a directory nobody can write to, and a locked directory
    for a home that cannot be created."""
    base = tempfile.mkdtemp(prefix="minigrad-ro-")
    site, locked = os.path.join(base, "site"), os.path.join(base, "locked")
    shutil.copytree(os.path.join(ROOT, "minigrad"), os.path.join(site, "minigrad"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    os.makedirs(locked)
    try:
        _lock(site)
        _lock(locked)
        yield base, site, locked
    finally:
        _unlock(base)
        shutil.rmtree(base, ignore_errors=True)


def _run(site: str, cwd: str, **env) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items()
             if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "PYTHONPATH")}
    clean.update(PYTHONPATH=site, PYTHONDONTWRITEBYTECODE="1", **env)
    return subprocess.run([sys.executable, "-c", FIRST_CALL], capture_output=True, text=True,
                          timeout=900, cwd=cwd, env=clean)


def test_read_only_install_honours_numba_cache_dir(read_only_install):
    base, site, locked = read_only_install
    cache = os.path.join(base, "cache")
    out = _run(site, base, NUMBA_CACHE_DIR=cache, HOME=os.path.join(locked, "home"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok " + site)
    assert _cache_files(cache), "the kernels were not cached in NUMBA_CACHE_DIR"
    assert not _cache_files(site)
    assert "no writable numba cache" not in out.stderr


def test_read_only_install_caches_in_the_user_cache(read_only_install):
    base, site, _ = read_only_install
    home = os.path.join(base, "home")
    out = _run(site, base, HOME=home)
    assert out.returncode == 0, out.stderr
    assert _cache_files(os.path.join(home, ".cache")), "nothing cached in ~/.cache"
    assert "no writable numba cache" not in out.stderr


def test_read_only_install_without_any_cache_still_works(read_only_install):
    """Nowhere to cache (numba refuses cache=True then): compile without a cache, once
    saying so on stderr."""
    base, site, locked = read_only_install
    out = _run(site, base, HOME=os.path.join(locked, "home"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok")
    assert out.stderr.count("no writable numba cache directory") == 1, out.stderr
    assert "NUMBA_CACHE_DIR" in out.stderr


def test_compile_notice_watches_only_the_first_call_of_a_kind(monkeypatch):
    """Once a kind of SVD has run, its kernels are loaded: later calls start no watcher
    thread (one per call cost more than a small batch's whole SVD kernel)."""
    import numpy as np

    from minigrad.linalg import _svd_forward

    started = []

    class Counting(_svd_forward.threading.Thread):
        def start(self) -> None:
            if self.name == "minigrad-compile-notice":  # not the SVD's pool threads
                started.append(self.name)
            super().start()

    monkeypatch.setattr(_svd_forward.threading, "Thread", Counting)
    monkeypatch.setattr(_svd_forward, "_noticed", set())
    monkeypatch.setattr(_svd_forward, "_ran", set())
    a = np.random.default_rng(0).standard_normal((5, 3, 3))
    for _ in range(3):
        _svd_forward.svd_forward(a)
    assert started == ["minigrad-compile-notice"]
    _svd_forward.svd_forward(a[:, :2])  # another kind: watched once
    _svd_forward.svd_forward(a[:, :2])
    assert len(started) == 2


def test_compile_notice_reads_numba_only_once_its_import_completed(monkeypatch):
    """The notice's thread polls numba's compile counters. Until the calling thread's
    import of the numba kernels has completed it must not touch numba: a second thread
    importing numba.core while the first is mid-import failed the SVD with a circular
    ImportError (seen on a fresh cache)."""
    from minigrad import _kernel_registry as registry
    from minigrad.linalg import _svd_forward

    registry.jit("jacobi")  # the kernels' module is in sys.modules either way
    monkeypatch.setattr(registry, "_jits", {})
    imported = []
    real_import = __builtins__["__import__"] if isinstance(__builtins__, dict) \
        else __builtins__.__import__

    def watching(name, *args, **kwargs):
        imported.append(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr("builtins.__import__", watching)
    assert _svd_forward._cache_misses() == 0
    assert not [n for n in imported if n.startswith("numba")]
    registry.jit("jacobi")  # its import completed
    assert _svd_forward._cache_misses() >= 0
    assert "numba.core.dispatcher" in imported
