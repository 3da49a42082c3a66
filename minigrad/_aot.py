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

An accelerator only: without a module (numba.pycc gone, no C compiler, a failed build,
MINIGRAD_NO_AOT=1) every kernel runs from numba's cached JIT, with the same results.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import platform
import re
import sys
import warnings
from collections.abc import Callable, Sequence

import numpy as np

# numpy's flag bits numba types an array by: layout, aligned, writeable.
_C, _F, _ALIGNED, _WRITEABLE = 1, 2, 256, 1024
_SCALARS = {"bool": bool, "int": int, "float": float}
_HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.join(_HERE, "__pycache__")  # the cache root inside the install


def _kinds(args: tuple) -> tuple:
    """The arguments' types as numba would type them, cheaply (a few us for a kernel's
    arguments): arrays by dtype (byte order included), ndim, layout (C before F, as numba),
    aligned and writeable; scalars and tuples by their Python type. Anything else numba
    could take (numpy scalars, unaligned arrays) is simply not found: the JIT takes it."""
    return tuple([(x.dtype, x.ndim, _layout_bits(x.flags.num)) if type(x) is np.ndarray
                  else (type(x), *map(type, x)) if isinstance(x, tuple) else type(x)
                  for x in args])


def _layout_bits(num: int) -> int:
    num &= _C | _F | _ALIGNED | _WRITEABLE
    return num & ~_F if num & _C else num


def _from_json(kind) -> object:
    """_numba_kind's JSON back to what _kinds gives."""
    if isinstance(kind, str):
        return _SCALARS.get(kind, kind)
    if kind[0] == "array":
        return (np.dtype(kind[1]), kind[2], kind[3])
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


def _numba_version() -> bytes:
    """numba's and llvmlite's version files, found without importing them: the code they
    generate is in the module."""
    out = b""
    for package in ("numba", "llvmlite"):
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.origin:
            try:
                with open(os.path.join(os.path.dirname(spec.origin), "_version.py"), "rb") as f:
                    out += f.read()
            except OSError:
                out += spec.origin.encode()
    return out


def sources(paths: Sequence[str]) -> tuple[str, ...]:
    """paths and every minigrad module they import, transitively (sorted, once each):
    everything a kernel reads at compile time, such as the contract's constants."""
    todo, seen = [os.path.abspath(p) for p in paths], set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for module, name in _IMPORT.findall(text):
            found = _module_file(path, module, name)
            if found and os.path.basename(found) not in _NOT_READ:
                todo.append(found)
    return tuple(sorted(seen))


# The kernels' decorator: it decides where they are cached, not what they compute (an edit
# to it need not recompile every kernel).
_NOT_READ = {"_numba_cache.py"}
_IMPORT = re.compile(r"^\s*from\s+(minigrad[\w.]*|\.[\w.]*)\s+import\s+\(?\s*(\w+)", re.MULTILINE)


def _module_file(importer: str, module: str, name: str) -> str | None:
    """The file of `from module import name` in importer (the submodule `name` first)."""
    if module.startswith("."):
        dots = len(module) - len(module.lstrip("."))
        base = os.path.dirname(importer)
        for _ in range(dots - 1):
            base = os.path.dirname(base)
        parts = [p for p in module.lstrip(".").split(".") if p]
    else:
        base, parts = os.path.dirname(_HERE), module.split(".")
    where = os.path.join(base, *parts)
    for candidate in (os.path.join(where, name + ".py"), where + ".py",
                      os.path.join(where, "__init__.py")):
        if os.path.isfile(candidate):
            return candidate
    return None


@functools.cache
def content_key(paths: tuple[str, ...]) -> str:
    """A hash of what the kernels in paths read (sources()) and of the numba and llvmlite
    that compile them: numba's own cache stamp covers the kernel's file only."""
    h = hashlib.sha256()
    for path in sources(paths):
        with open(path, "rb") as f:
            h.update(f.read())
    h.update(_numba_version())
    return h.hexdigest()[:16]


def _key(sources: Sequence[str]) -> str:
    """What a module is built for: the kernels' sources and what they import (and this
    file's and the builder's, which write the manifest), numba, the CPU (as numba's JIT
    targets it), numpy and Python."""
    h = hashlib.sha256()
    h.update(content_key((__file__, os.path.join(_HERE, "_aot_build.py"), *sources)).encode())
    cpu = os.environ.get("NUMBA_CPU_NAME", ""), os.environ.get("NUMBA_CPU_FEATURES", "")
    h.update(f"{sys.version}|{np.__version__}|{_cpu()}|{cpu}".encode())
    return h.hexdigest()[:16]


def enabled() -> bool:
    """Whether compiled modules are used at all: MINIGRAD_NO_AOT=1 turns them off (numba's
    cached JIT serves every kernel, and the warm-up builds none)."""
    return os.environ.get("MINIGRAD_NO_AOT", "") in ("", "0")


def cache_roots() -> list[str]:
    """Where compiled code is looked for, in this order: NUMBA_CACHE_DIR/minigrad when set,
    the package's own __pycache__ (what a warm-up of this install built, read-only or not),
    the user's cache directory. Each holds aot/ (the compiled modules) and numba/ (numba's
    cache of the JIT kernels); new code goes to the first that is writable."""
    roots = []
    if os.environ.get("NUMBA_CACHE_DIR"):
        roots.append(os.path.join(os.environ["NUMBA_CACHE_DIR"], "minigrad"))
    roots.append(PACKAGE_ROOT)
    user = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    roots.append(os.path.join(user, "minigrad"))
    return roots


def writable(path: str) -> bool:
    """Whether path can be written, or created in the nearest directory that exists.
    os.access, not permission bits: it also sees a read-only mount or an immutable
    directory, which stop root too."""
    while not os.path.isdir(path):
        parent = os.path.dirname(path)
        if parent == path or os.path.exists(path):
            return False
        path = parent
    return os.access(path, os.W_OK | os.X_OK)


def _directory() -> str | None:
    """Where new compiled modules go: the first writable root's aot/ (None: nowhere)."""
    return next((os.path.join(r, "aot") for r in cache_roots() if writable(r)), None)


def _paths(stem: str, sources: Sequence[str], where: str | None = None
           ) -> tuple[str, str, str]:
    """(directory, module name, manifest path) of the module for these sources in `where`
    (the builder's staging directory), else where new modules go."""
    name = f"_{stem}_{_key(sources)}"
    where = where or _directory()
    if where is None:
        raise OSError("no writable cache directory (set NUMBA_CACHE_DIR to one)")
    return where, name, os.path.join(where, name + ".json")


class Kernels:
    """Entry points by name: each call goes to the compiled module when it was built for
    the arguments' types, else to `fallback()`'s kernel of that name (the JIT).

    Unchecked (a family's ``checked=False``): an entry point compiled at a single signature
    is that compiled function, with no per-call check: the signature takes its inputs in
    'A' layout (any strides) or its callers pass them C-contiguous, as it says, and they pass
    its dtypes and allocate its outputs."""

    def __init__(self, table: dict, fallback: Callable[[], object], checked: bool = True):
        self._table = table  # name -> {argument kinds: compiled function}
        self._fallback = fallback
        self._checked = checked

    def __getattr__(self, name: str) -> Callable:
        if name.startswith("__"):
            raise AttributeError(name)
        by_kind = self._table.get(name)
        if by_kind is None:  # a kernel the module was built without: the JIT's
            return getattr(self._fallback(), name)
        if not self._checked and len(by_kind) == 1:
            only = next(iter(by_kind.values()))
            setattr(self, name, only)
            return only

        def call(*args):
            f = by_kind.get(_kinds(args))
            if f is None:
                f = getattr(self._fallback(), name)
            return f(*args)

        call.__name__ = name
        setattr(self, name, call)  # later lookups skip __getattr__
        return call

    def names(self) -> set:
        """The kernels the module holds."""
        return set(self._table)

    def compiled_for(self, name: str, args: tuple) -> Callable | None:
        """The module's kernel `name` built for exactly these arguments' types, or None."""
        by_kind = self._table.get(name)
        return None if by_kind is None else by_kind.get(_kinds(args))


def load(stem: str, sources: Sequence[str], fallback: Callable[[], object],
         where: str | None = None, checked: bool = True) -> Kernels | None:
    """The compiled module built for these sources on this machine (looked for in each
    cache root in turn, or in `where`), or None."""
    places = [where] if where else [os.path.join(r, "aot") for r in cache_roots()]
    for place in places:
        found = _load_from(stem, sources, fallback, place, checked)
        if found is not None:
            return found
    return None


def _load_from(stem: str, sources: Sequence[str], fallback: Callable[[], object],
               where: str, checked: bool) -> Kernels | None:
    where, name, manifest = _paths(stem, sources, where)
    try:
        with open(manifest) as f:
            built = json.load(f)
        exports, size, digest = built["exports"], built["size"], built["sha256"]
    except (OSError, ValueError, TypeError, LookupError):
        return None  # none, or a damaged manifest (or one of another format): as if none
    path = os.path.join(where, name + importlib.machinery.EXTENSION_SUFFIXES[0])
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
        # Loading it could crash the process (a truncated library: SIGBUS; altered code:
        # SIGSEGV or SIGILL), so it is never loaded.
        warnings.warn(f"minigrad: the compiled module {path} is damaged (its size or hash is "
                      "not its manifest's); numba's JIT serves instead (`python -m "
                      "minigrad.warmup` rebuilds it)", RuntimeWarning, stacklevel=2)
        return None
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
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
        return None  # a manifest the module does not match: as if there were none
    return Kernels(table, fallback, checked)
