"""Building the ahead-of-time modules that minigrad/_aot.py loads: numba.pycc compiles every
signature numba's JIT compiled in this process, with each kernel's own flags, for the CPU
the JIT targets. Only the warm-up imports this (it imports numba).

An optional accelerator: numba.pycc is deprecated, and this patches two numba internals
(pycc's compile_extra and the AOT codegen's CPU features). Where numba.pycc or a C compiler
is missing (unavailable()) or a build raises, the warm-up says so in one line and numba's
cached JIT serves every kernel, with the same results.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import os
import shutil
import sysconfig
import tempfile
import types
import warnings
from collections.abc import Sequence

from minigrad import _aot
from minigrad._aot import _ALIGNED, _C, _F, _WRITEABLE


def unavailable() -> str | None:
    """Why no module can be built here (numba.pycc or a C compiler missing), or None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numba.pycc is "pending deprecation"
            import numba.pycc  # noqa: F401
    except Exception as e:  # ImportError, or a numba whose pycc no longer imports
        first = str(e).splitlines()[0] if str(e) else ""
        return f"numba.pycc does not import: {type(e).__name__}: {first}"
    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()
    if not cc or shutil.which(cc[0]) is None:
        return f"no C compiler ({cc[0] if cc else 'CC'} not found)"
    return None


def _numba_kind(t) -> object:
    """_aot._kinds' key for the values numba types as t, in JSON (_aot._from_json reads
    it back)."""
    from numba.core import types as nt
    from numba.np.numpy_support import as_dtype

    if isinstance(t, nt.Array):
        bits = {"C": _C, "F": _F, "A": 0}[t.layout]
        bits |= (_ALIGNED if t.aligned else 0) | (_WRITEABLE if t.mutable else 0)
        return ["array", as_dtype(t.dtype).str, t.ndim, bits]
    if isinstance(t, nt.BaseNamedTuple):
        # Declared by BaseNamedTuple's subclasses only (numba's types are untyped).
        cls, fields = t.instance_class, t.types  # type: ignore[attr-defined]
        return ["tuple", cls.__module__, cls.__qualname__] + [_numba_kind(v) for v in fields]
    if isinstance(t, nt.Boolean):
        return "bool"
    if t == nt.int64:
        return "int"
    if t == nt.float64:
        return "float"
    return str(t)  # nothing a call produces: such a signature is never looked up


def build(stem: str, sources: Sequence[str], module: object, names: Sequence[str]) -> str:
    """Compile every signature the JIT has compiled for module's kernels `names` (numba
    dispatchers, module's attributes) into the module _aot.load() looks for, in a staging
    directory of the cache directory; returns that directory, for publish() once the
    module is checked, or discard(). Raises if numba.pycc, setuptools or a C compiler is
    missing."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba.pycc is "pending deprecation"
        from numba.core import codegen, compiler
        from numba.core.registry import cpu_target
        from numba.pycc import CC
        from numba.pycc import compiler as pycc_compiler
    where, name, _ = _aot._paths(stem, sources)
    cc = CC(name)
    cc.target_cpu = "host"
    options = {}  # the copy of each kernel's Python function -> its njit options
    exports = []
    for kernel in names:
        dispatcher = getattr(module, kernel)
        for sig in dispatcher.signatures:
            # A fresh function object per signature: pycc typing the same one twice in a
            # module failed to unify a local's types.
            f = dispatcher.py_func
            copy = types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__,
                                      f.__closure__)
            options[copy] = dispatcher.targetoptions
            kinds = [_numba_kind(t) for t in sig]
            # Named by the signature: a manifest can only pair with a module of its build.
            tag = hashlib.sha256(json.dumps(kinds).encode()).hexdigest()[:12]
            entry = f"{kernel}_{tag}"
            cc.export(entry, dispatcher.overloads[sig].signature)(copy)
            exports.append((entry, kernel, kinds))
    plain = pycc_compiler.compile_extra
    model_features = codegen.AOTCPUCodegen._customize_tm_features

    def with_kernel_flags(typingctx, targetctx, func, args, return_type, flags, **kw):
        # pycc compiles every export with one default set of flags; each kernel needs its
        # own (fastmath, error_model, nogil), or the module computes other roundings than
        # the JIT does, or holds the GIL.
        own = compiler.Flags()
        cpu_target.options.parse_as_flags(own, options[func])
        own.no_compile, own.nrt = flags.no_compile, flags.nrt
        return plain(typingctx, targetctx, func, args, return_type, own, **kw)

    def host_features(self) -> str:
        # pycc's "host" takes the CPU model's features; the JIT takes what this CPU has
        # (a VM may hide some of its model's, e.g. AVX-512): the same as the JIT.
        return self._get_host_cpu_features()

    os.makedirs(where, exist_ok=True)
    sweep(where)
    # In the cache directory: publish's renames stay on one disk.
    staging = tempfile.mkdtemp(prefix=f".build-{os.getpid()}-", dir=where)
    try:
        cc.output_dir = staging
        # The two patches of numba internals (see above), undone whatever happens.
        pycc_compiler.compile_extra = with_kernel_flags  # type: ignore[assignment]
        codegen.AOTCPUCodegen._customize_tm_features = host_features  # type: ignore[method-assign]
        try:
            cc.compile()
        finally:
            pycc_compiler.compile_extra = plain
            codegen.AOTCPUCodegen._customize_tm_features = model_features  # type: ignore[method-assign]
        suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
        module = os.path.join(staging, name + suffix)
        os.replace(os.path.join(staging, cc.output_file), module)
        with open(module, "rb") as f:
            data = f.read()
        with open(os.path.join(staging, name + ".json"), "w") as f:
            # What _aot.load checks before it loads the module: a damaged one can crash.
            json.dump({"size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                       "exports": exports}, f)
    except BaseException:
        discard(staging)
        raise
    return staging


def publish(stem: str, sources: Sequence[str], staging: str) -> None:
    """Move a checked module from its staging directory to where _aot.load() finds it."""
    where, name, manifest = _aot._paths(stem, sources)
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    # The module first, then its manifest: a concurrent load sees both or no manifest.
    os.replace(os.path.join(staging, name + suffix), os.path.join(where, name + suffix))
    os.replace(os.path.join(staging, name + ".json"), manifest)
    discard(staging)
    package_own = os.path.join(os.path.dirname(os.path.abspath(_aot.__file__)), "__pycache__")
    if not where.startswith(package_own):
        return  # a shared cache directory: other installs' modules may be in use there
    for old in os.listdir(where):  # this install's modules of earlier sources: stale
        if old.startswith(f"_{stem}_") and not old.startswith(name):
            try:
                os.remove(os.path.join(where, old))
            except OSError:  # gone already
                pass


def sweep(where: str) -> None:
    """Remove the staging directories of builds whose process is gone (a SIGKILL skips
    every clean-up): named .build-<pid>-..., removed when no process has that id."""
    for entry in os.listdir(where):
        pid = entry.split("-")[1] if entry.startswith(".build-") else ""
        if pid.isdigit() and not _running(int(pid)):
            discard(os.path.join(where, entry))


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process
        return True
    return True


def discard(staging: str) -> None:
    """Remove a staging directory and what it holds (a module that failed its check)."""
    shutil.rmtree(staging, ignore_errors=True)
