"""Kernels compiled ahead of time into an extension module, so that a process can run them
without importing numba.

numba's cache makes a kernel's second process fast, but not its first call: loading any
cached kernel first imports numba and builds its typing and target registries (~1 s, and
numba imports scipy.linalg then, when it is installed). `python -m minigrad.warmup` runs
every kernel through numba's JIT, then compiles, with numba's ahead-of-time compiler
(numba.pycc), each signature the JIT compiled into one extension module per kernel file,
with the same flags (fastmath, error model, nogil), for this machine's CPU. Processes that
find that module call it and never import numba; any argument types it was not built for
go to the JIT kernel. The module is keyed by the kernel sources, the CPU, numpy and Python:
an edit, an upgrade or another machine's cache directory makes it stale, and it is skipped.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import platform
import shutil
import sys
import tempfile
import threading
import types
import warnings
from collections.abc import Callable, Sequence

import numpy as np

# numpy's flag bits numba types an array by: layout, aligned, writeable.
_C, _F, _ALIGNED, _WRITEABLE = 1, 2, 256, 1024
_SCALARS = {"bool": bool, "int": int, "float": float}


def _kinds(args: tuple) -> tuple:
    """The arguments' types as numba would type them, cheaply (a few us for a kernel's
    arguments): arrays by dtype, ndim, layout (C before F, as numba), aligned and
    writeable; scalars and tuples by their Python type."""
    return tuple([(x.dtype.char, x.ndim, _layout_bits(x.flags.num)) if type(x) is np.ndarray
                  else (type(x), *map(type, x)) if isinstance(x, tuple) else type(x)
                  for x in args])


def _layout_bits(num: int) -> int:
    num &= _C | _F | _ALIGNED | _WRITEABLE
    return num & ~_F if num & _C else num


def _numba_kind(t) -> object:
    """The build side of _kinds, for the numba type t, in JSON (load() maps it back)."""
    from numba.core import types as nt
    from numba.np.numpy_support import as_dtype

    if isinstance(t, nt.Array):
        bits = {"C": _C, "F": _F, "A": 0}[t.layout]
        bits |= (_ALIGNED if t.aligned else 0) | (_WRITEABLE if t.mutable else 0)
        return ["array", as_dtype(t.dtype).char, t.ndim, bits]
    if isinstance(t, nt.BaseNamedTuple):
        cls = t.instance_class
        return ["tuple", cls.__module__, cls.__qualname__] + [_numba_kind(v) for v in t.types]
    if isinstance(t, nt.Boolean):
        return "bool"
    if t == nt.int64:
        return "int"
    if t == nt.float64:
        return "float"
    return str(t)  # nothing a call produces: such a signature is never looked up


def _from_json(kind) -> object:
    """_numba_kind's JSON back to what _kinds gives."""
    if isinstance(kind, str):
        return _SCALARS.get(kind, kind)
    if kind[0] == "array":
        return tuple(kind[1:])
    cls = getattr(importlib.import_module(kind[1]), kind[2])
    return (cls, *(_from_json(k) for k in kind[3:]))


def _cpu() -> str:
    """What identifies this CPU's instruction set without importing llvmlite."""
    try:
        with open("/proc/cpuinfo") as f:
            lines = [ln for ln in f if ln.startswith(("model name", "flags", "Features"))]
        return "".join(sorted(set(lines)))
    except OSError:
        return platform.machine() + platform.processor()


def _key(sources: Sequence[str]) -> str:
    h = hashlib.sha256()
    for path in (__file__, *sources):  # this file too: it writes the manifest
        with open(path, "rb") as f:
            h.update(f.read())
    h.update(f"{sys.version}|{np.__version__}|{_cpu()}".encode())
    return h.hexdigest()[:16]


def _directory() -> str:
    """Beside numba's cache: NUMBA_CACHE_DIR if set, else the package's __pycache__ if it
    is writable, else the user's cache directory."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return os.path.join(os.environ["NUMBA_CACHE_DIR"], "minigrad-aot")
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__", "aot")
    parent = os.path.dirname(here)
    if os.access(parent if os.path.isdir(parent) else os.path.dirname(parent), os.W_OK):
        return here
    user = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(user, "minigrad", "aot")


def _paths(stem: str, sources: Sequence[str]) -> tuple[str, str, str]:
    """(directory, module name, manifest path) of the module for these sources."""
    name = f"_{stem}_{_key(sources)}"
    where = _directory()
    return where, name, os.path.join(where, name + ".json")


_chosen: dict = {}  # stem -> the kernels in use (compiled module or JIT), chosen once
_choosing = threading.Lock()


def kernels(stem: str, sources: Sequence[str], jit: Callable[[], object]):
    """The compiled module for these sources when it is built for this machine, else
    jit() (the numba module): decided on first use, once per process."""
    if stem not in _chosen:
        with _choosing:
            if stem not in _chosen:
                _chosen[stem] = load(stem, sources, jit) or jit()
    return _chosen[stem]


_HERE = os.path.dirname(os.path.abspath(__file__))
# The kernels compiled at one signature per dtype (see `single`), and their sources.
SMALL_SOURCES = (os.path.join(_HERE, "ops", "_matmul_kernels.py"),
                 os.path.join(_HERE, "linalg", "_svd_vjp_kernel.py"))


def single(name: str, jit: Callable[[], Callable]) -> Callable:
    """The compiled kernel `name` of the small-matrix module (see Kernels.only) when it
    is built, else jit() (numba's)."""
    small = kernels("small", SMALL_SOURCES, lambda: None)
    compiled = None if small is None else small.only(name)
    return jit() if compiled is None else compiled


def use(stem: str, chosen) -> None:
    """Make `chosen` the kernels of stem from now on (the warm-up and tests pick)."""
    _chosen[stem] = chosen


class Kernels:
    """Entry points by name: each call goes to the compiled module when it was built for
    the arguments' types, else to `fallback()`'s kernel of that name (the JIT)."""

    def __init__(self, table: dict, fallback: Callable[[], object]):
        self._table = table  # name -> {argument kinds: compiled function}
        self._fallback = fallback

    def __getattr__(self, name: str):
        by_kind = self._table.get(name)
        if by_kind is None:
            raise AttributeError(name)

        def call(*args):
            f = by_kind.get(_kinds(args))
            if f is None:
                f = getattr(self._fallback(), name)
            return f(*args)

        call.__name__ = name
        setattr(self, name, call)  # later lookups skip __getattr__
        return call

    def only(self, name: str):
        """The one compiled function of a kernel compiled at a single signature, or None.
        No per-call check: that signature takes its inputs in 'A' layout (any strides),
        and its callers pass its dtypes and allocate its C-contiguous outputs."""
        by_kind = self._table.get(name, {})
        return next(iter(by_kind.values())) if len(by_kind) == 1 else None


def load(stem: str, sources: Sequence[str], fallback: Callable[[], object]) -> Kernels | None:
    """The compiled module built for these sources on this machine, or None."""
    where, name, manifest = _paths(stem, sources)
    try:
        with open(manifest) as f:
            exports = json.load(f)
    except (OSError, ValueError):
        return None
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    spec = importlib.util.spec_from_file_location(name, os.path.join(where, name + suffix))
    if spec is None:
        return None
    try:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except (ImportError, OSError):
        return None
    table: dict = {}
    try:
        for entry, kernel, kinds in exports:
            key = tuple(_from_json(k) for k in kinds)
            table.setdefault(kernel, {})[key] = getattr(module, entry)
    except (ValueError, TypeError, LookupError, ImportError, AttributeError):
        return None  # a damaged manifest: as if there were none
    return Kernels(table, fallback)


def build(stem: str, sources: Sequence[str], module, names: Sequence[str]) -> str:
    """Compile every signature the JIT has compiled for module's kernels `names` (numba
    dispatchers, module's attributes) into the extension module load() looks for; returns
    its path. Raises if numba.pycc, setuptools or a C compiler is missing."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba.pycc is "pending deprecation"
        from numba.core import compiler
        from numba.core.registry import cpu_target
        from numba.pycc import CC
        from numba.pycc import compiler as pycc_compiler
    where, name, manifest = _paths(stem, sources)
    cc = CC(name)
    cc.target_cpu = "host"  # as the JIT: this machine's instruction set
    options = {}  # the copy of each kernel's Python function -> its njit options
    exports = []
    for kernel in names:
        dispatcher = getattr(module, kernel)
        for i, sig in enumerate(dispatcher.signatures):
            # A fresh function object per signature: pycc typing the same one twice in a
            # module failed to unify a local's types.
            f = dispatcher.py_func
            copy = types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__,
                                      f.__closure__)
            options[copy] = dispatcher.targetoptions
            entry = f"{kernel}_{i}"
            cres = dispatcher.overloads[sig]
            cc.export(entry, cres.signature)(copy)
            exports.append((entry, kernel, [_numba_kind(t) for t in sig]))
    plain = pycc_compiler.compile_extra

    def with_kernel_flags(typingctx, targetctx, func, args, return_type, flags, **kw):
        # pycc compiles every export with one default set of flags; each kernel needs its
        # own (fastmath, error_model, nogil), or the module computes other roundings than
        # the JIT does.
        own = compiler.Flags()
        cpu_target.options.parse_as_flags(own, options[func])
        own.no_compile, own.nrt = flags.no_compile, flags.nrt
        return plain(typingctx, targetctx, func, args, return_type, own, **kw)

    os.makedirs(where, exist_ok=True)
    build_dir = tempfile.mkdtemp(prefix=".build-", dir=where)  # os.replace stays on one disk
    try:
        cc.output_dir = build_dir
        pycc_compiler.compile_extra = with_kernel_flags
        try:
            cc.compile()
        finally:
            pycc_compiler.compile_extra = plain
        built = os.path.join(build_dir, cc.output_file)
        target = os.path.join(where, name + importlib.machinery.EXTENSION_SUFFIXES[0])
        os.replace(built, target)  # atomic: a concurrent load sees all of it or nothing
        with open(os.path.join(build_dir, "manifest"), "w") as f:
            json.dump(exports, f)
        os.replace(os.path.join(build_dir, "manifest"), manifest)
    finally:
        shutil.rmtree(build_dir, ignore_errors=True)
    for old in os.listdir(where):  # the modules of earlier sources: stale for good
        if old.startswith(f"_{stem}_") and not old.startswith(name):
            try:
                os.remove(os.path.join(where, old))
            except OSError:  # another process's, in use or gone: harmless
                pass
    return target
