"""The ahead-of-time build (minigrad/_aot_build.py, on numba's deprecated numba.pycc) is an
optional accelerator: without numba.pycc, with a build that raises, or with
MINIGRAD_NO_AOT=1, the warm-up says so in one line and every kernel family runs from numba's
cached JIT with the same results."""

import os
import pickle
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from minigrad import _aot_build, warmup
from minigrad import _kernel_registry as registry
from minigrad._kernel_registry import FAMILIES

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(registry.__file__)))  # wherever this file
NOTICE = "numba's cached JIT serves every kernel"

# Every family's warm-up through kernels() (no compiled module there), against the JIT's
# results of this process: the same to rounding (a kernel numba compiles afresh and the same
# kernel loaded from its cache can differ in the last bits: eigh's by 4e-16 on this
# machine's runs, which made bit-equality fail whenever one side compiled), exact for
# integers; and which kernels each family chose.
FAMILY_RUNS = textwrap.dedent("""
    import pickle, sys
    import numpy as np
    from minigrad import _kernel_registry as registry

    def same(x, y):
        if x is None or y is None:
            return x is None and y is None
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if x.dtype.kind not in "fc":
            return np.array_equal(x, y)
        scale = np.nanmax(np.abs(y), initial=0.0)
        return np.allclose(x, y, rtol=0, atol=64 * np.finfo(x.dtype).eps * scale,
                           equal_nan=True)

    with open(sys.argv[1], "rb") as f:
        want = pickle.load(f)
    for name, family in registry.FAMILIES.items():
        got = family.warm()
        assert len(got) == len(want[name]), name
        for a, b in zip(got, want[name]):
            for x, y in zip(a, b):
                assert same(x, y), name
    print("chosen", sorted({type(k).__name__ for k in registry._chosen.values()}))
""")


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in (
        "NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "PYTHONPATH", "NUMBA_DISABLE_JIT",
        "MINIGRAD_NO_AOT")}
    env.update(PYTHONDONTWRITEBYTECODE="1", **extra)
    return env


def _run(args: list, cwd: str, **env) -> subprocess.CompletedProcess:
    out = subprocess.run([sys.executable, *args], capture_output=True, text=True,
                         timeout=600, cwd=cwd, env=_env(**env))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Traceback" not in out.stderr, out.stderr
    return out


def _aot_files(path: str) -> list:
    return [f for d, _, fs in os.walk(path) if os.path.basename(d) == "aot" for f in fs]


@pytest.fixture(scope="module")
def jit_install(tmp_path_factory):
    """A copy of this install with numba's cache warm (every family run through the JIT
    here first) but no compiled module; the JIT's results of every family, pickled."""
    want = {}
    for name, family in FAMILIES.items():
        saved = registry._chosen.get(name)
        registry.use(name, registry.jit(name))
        try:
            want[name] = family.warm()
        finally:
            registry.use(name, saved)
    base = tmp_path_factory.mktemp("jit-install")
    shutil.copytree(os.path.join(ROOT, "minigrad"), base / "site" / "minigrad",
                    ignore=shutil.ignore_patterns("aot"))
    with open(base / "want.pkl", "wb") as f:
        pickle.dump(want, f)
    env = {"PYTHONPATH": str(base / "site"), "NUMBA_CACHE_DIR": str(base / "cache"),
           "XDG_CACHE_HOME": str(base / "user")}
    return base, env


def test_without_numba_pycc_the_warm_up_says_so_once_and_the_jit_serves(jit_install):
    """numba.pycc made unimportable in every process (as in a numba that dropped it):
    the warm-up finishes, one line says why nothing was built, no module is written, and
    every family gives the JIT's results."""
    base, env = jit_install
    hide = base / "no-pycc"
    hide.mkdir(exist_ok=True)
    (hide / "sitecustomize.py").write_text(
        "import sys\nsys.modules['numba.pycc'] = None  # `import numba.pycc` fails\n")
    env = {**env, "PYTHONPATH": f"{hide}{os.pathsep}{env['PYTHONPATH']}"}
    out = _run(["-m", "minigrad.warmup"], str(base), **env)
    assert out.stderr.count(NOTICE) == 1, out.stderr
    assert "numba.pycc does not import" in out.stderr, out.stderr
    assert _aot_files(str(base)) == []
    used = _run(["-c", FAMILY_RUNS, str(base / "want.pkl")], str(base), **env)
    assert used.stdout.split("chosen")[-1].strip() == "['_Joined', 'module']", used.stdout


def test_minigrad_no_aot_switches_the_compiled_modules_off(jit_install):
    """MINIGRAD_NO_AOT=1: the warm-up builds nothing and says so once; a process on an
    install whose modules are built uses none of them."""
    base, env = jit_install
    out = _run(["-m", "minigrad.warmup"], str(base), MINIGRAD_NO_AOT="1", **env)
    assert out.stderr.count(NOTICE) == 1 and "MINIGRAD_NO_AOT" in out.stderr, out.stderr
    assert _aot_files(str(base)) == []
    if registry.compiled("jacobi") is None:
        pytest.skip("no compiled module in this install to switch off")
    used = _run(["-c", FAMILY_RUNS, str(base / "want.pkl")], ROOT, PYTHONPATH=ROOT,
                MINIGRAD_NO_AOT="1")
    assert "Kernels" not in used.stdout, used.stdout


def test_a_build_that_raises_leaves_the_jit_serving(tmp_path, monkeypatch):
    """A build that fails (a C compiler error, a numba whose internals moved): the warm-up
    says so and goes on, nothing is published, and the family runs from the JIT."""
    def broken(*args, **kwargs):
        raise RuntimeError("the C compiler failed\nmore detail")

    monkeypatch.setattr(_aot_build, "build", broken)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))  # no module found: a build runs
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user"))
    monkeypatch.setattr("minigrad._aot.PACKAGE_ROOT", str(tmp_path / "package"))
    saved = registry._chosen.get("eigh")
    registry.use("eigh", registry.jit("eigh"))
    try:
        want = FAMILIES["eigh"].warm()
        said = warmup.build_aot({"eigh": want})
        registry.use("eigh", None)  # chosen anew: no module to find
        assert registry.kernels("eigh") is registry.jit("eigh")
        got = FAMILIES["eigh"].warm()
    finally:
        registry.use("eigh", saved)
    assert said == "eigh skipped (RuntimeError: the C compiler failed); numba's JIT serves"
    assert _aot_files(str(tmp_path)) == []
    for (w1, v1), (w2, v2) in zip(want, got):
        assert np.array_equal(w1, w2) and (v1 is None or np.array_equal(v1, v2))


def _said_of(code: str, names: list) -> str:
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    return warmup._child_said(child, names)


def test_a_build_process_is_reported_by_its_result_line_or_its_status() -> None:
    """A child build's report is its stdout's line (a warning on stderr is not taken for
    it); a failed one is said once for its families, with its exit status or signal and
    its last message: the JIT serves them."""
    ok = "import sys; sys.stderr.write('a warning\\n'); print('small built, eigh built')"
    assert _said_of(ok, ["small", "eigh"]) == "small built, eigh built"
    failed = "import sys; print('half'); sys.stderr.write('boom\\n'); sys.exit(3)"
    assert _said_of(failed, ["small", "eigh"]) == (
        "small, eigh skipped (the build process exited with status 3: boom); numba's JIT "
        "serves")
    assert "status 0: no message" in _said_of("pass", ["eigh"])  # no result line at all
    if hasattr(os, "kill") and sys.platform != "win32":
        killed = _said_of("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", ["jacobi"])
        assert killed.startswith("jacobi skipped (the build process was killed by signal 9")
