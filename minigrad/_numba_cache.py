"""numba's on-disk cache for minigrad's kernels, made fit for installs that are read-only,
shared or damaged. Every kernel file decorates with this module's ``njit``.

numba's own cache writes beside the source or in one user directory: a read-only install
never reads what its warm-up cached there; its stamp covers the kernel's own file only (an
edit to the contract module it imports went unseen); and a damaged cache file raised on
every call. Here:

- the cache is looked for in each of _aot.cache_roots() in turn (NUMBA_CACHE_DIR/minigrad,
  the package's __pycache__, the user's cache directory), under numba/, and a compile is
  saved to the first writable one (nowhere, with a notice, when none is);
- the stamp is _aot.content_key: the kernel's file and every minigrad module it imports;
- each index and data file carries the sha256 of its content: a truncated or altered
  file is never unpickled (nor its machine code run); it is compiled anew, with a warning.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import warnings

import numba
from numba.core import caching
from numba.core.dispatcher import Dispatcher

from minigrad import _aot

_DIGEST = 32  # sha256


class _Damaged(Exception):
    pass


def _checked(data: bytes, path: str) -> bytes:
    if len(data) < _DIGEST or hashlib.sha256(data[_DIGEST:]).digest() != data[:_DIGEST]:
        raise _Damaged(f"{path}: its content is not what was written")
    return data[_DIGEST:]


class _File(caching.IndexDataCacheFile):
    """numba's index and data files, each prefixed by the sha256 of the rest."""

    def _dump(self, obj: object) -> bytes:
        data = super()._dump(obj)
        return hashlib.sha256(data).digest() + data

    def _load_index(self) -> dict:
        try:
            with open(self._index_path, "rb") as f:
                version = pickle.load(f)
                data = f.read()
        except FileNotFoundError:
            return {}
        if version != self._version:
            return {}
        stamp, overloads = pickle.loads(_checked(data, self._index_path))
        return overloads if stamp == self._source_stamp else {}

    def _load_data(self, name: str) -> object:
        path = self._data_path(name)
        with open(path, "rb") as f:
            data = f.read()
        return pickle.loads(_checked(data, path))


def _directories(py_file: str) -> list[str]:
    """Where py_file's kernels are cached under each root: the package's own root keeps
    the package's layout (a copied or mounted install finds its cache); a shared root
    adds a hash of the install's path, so two installs do not overwrite each other."""
    pkg = os.path.dirname(os.path.abspath(_aot.__file__))
    source_dir = os.path.dirname(os.path.abspath(py_file))
    rel = os.path.relpath(source_dir, pkg)
    if rel.startswith(os.pardir):  # a kernel outside the package (tests write some)
        rel = "other-" + hashlib.sha1(source_dir.encode()).hexdigest()[:12]
    here = hashlib.sha1(pkg.encode()).hexdigest()[:12]
    return [os.path.join(root, "numba", rel) if root == _aot.PACKAGE_ROOT
            else os.path.join(root, "numba", f"{here}-{rel}") for root in _aot.cache_roots()]


class _Locator(caching._CacheLocator):
    def __init__(self, py_func, py_file: str):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self.directories = _directories(py_file)

    def ensure_cache_path(self) -> None:
        pass  # each directory is made when something is saved to it

    def get_cache_path(self) -> str:
        return self.directories[0]

    def get_source_stamp(self) -> str:
        return _aot.content_key((self._py_file,))

    def get_disambiguator(self) -> str:
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file: str) -> _Locator:
        return cls(py_func, py_file)


class _Impl(caching.CompileResultCacheImpl):
    _locator_classes = [_Locator]


_said: set = set()  # the notices given, once each per process


def _once(key: str, message: str, warn: bool = True) -> None:
    if key in _said:
        return
    _said.add(key)
    if warn:
        warnings.warn(message, RuntimeWarning, stacklevel=4)
    else:
        print(message, file=sys.stderr)


class KernelCache(caching.FunctionCache):
    """numba's function cache, read from every cache root, written to the first writable
    one, and verified (see the module's docstring)."""

    _impl_class = _Impl

    def __init__(self, py_func):
        super().__init__(py_func)
        stamp, base = self._impl.locator.get_source_stamp(), self._impl.filename_base
        self._files = [_File(d, base, stamp) for d in self._impl.locator.directories]

    def load_overload(self, sig, target_context):
        target_context.refresh()
        key = self._index_key(sig, target_context.codegen())
        for f in self._files:
            try:
                data = f.load(key)
                if data is not None:
                    return self._impl.rebuild(target_context, data)
            except Exception as e:  # truncated, altered, empty: compiled anew, and said
                _once(f._index_path, f"minigrad: numba's cache in {f._cache_path} is damaged "
                      f"({type(e).__name__}: {e}); compiling anew")
        return None

    def save_overload(self, sig, data) -> None:
        if not self._impl.check_cachable(data):
            return
        target = next((f for f in self._files if _aot.writable(f._cache_path)), None)
        if target is None:
            _once("nowhere", "minigrad: no writable numba cache directory (the package is "
                  "read-only and so is the user cache); kernels the warm-up did not cache "
                  "compile anew in every process. Set NUMBA_CACHE_DIR to a writable "
                  "directory to keep them.", warn=False)
            return
        key = self._index_key(sig, data.codegen)
        reduced = self._impl.reduce(data)
        try:
            os.makedirs(target._cache_path, exist_ok=True)
            try:
                target.save(key, reduced)
            except (_Damaged, pickle.UnpicklingError, EOFError, ValueError):
                target.flush()  # a damaged index: started anew
                target.save(key, reduced)
        except OSError:  # unwritable after all (a race, a full disk): not cached
            pass


def njit(*args, **options):
    """numba.njit, with ``cache=True`` meaning KernelCache instead of numba's cache; a
    signature, if given, is compiled at once (as numba's)."""
    cache = options.pop("cache", False)
    sigs = None if not args or callable(args[0]) else args[0]

    def decorate(py_func):
        kernel = numba.njit(**options)(py_func)
        if not isinstance(kernel, Dispatcher):  # NUMBA_DISABLE_JIT: the Python function
            return kernel
        if cache:
            kernel._cache = KernelCache(py_func)
        if sigs is not None:
            for sig in sigs if isinstance(sigs, list) else [sigs]:
                kernel.compile(sig)
            kernel.disable_compile()
        return kernel

    return decorate(args[0]) if args and callable(args[0]) else decorate
