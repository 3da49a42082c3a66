"""The numba kernel families (minigrad/_kernel_registry.py): every kernel module registered
once, every caller loading through `kernels(name)`, every entry point warmed."""

import os
import re

import pytest

from minigrad import _kernel_registry as registry
from minigrad._kernel_registry import FAMILIES

PACKAGE = os.path.dirname(os.path.abspath(registry.__file__))


def _modules() -> dict:
    """Every module of the package: dotted name -> its text."""
    out = {}
    for d, _, files in os.walk(PACKAGE):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(d, f)
                rel = os.path.relpath(path, os.path.dirname(PACKAGE))[:-3]
                with open(path, encoding="utf-8") as fh:
                    out[rel.replace(os.sep, ".").removesuffix(".__init__")] = fh.read()
    return out


def test_every_module_with_numba_kernels_is_in_exactly_one_family():
    kernel_modules = {name for name, text in _modules().items()
                      if re.search(r"^\s*@njit\b|=\s*njit\(", text, re.MULTILINE)
                      and name != "minigrad._numba_cache"}
    registered = [m for f in FAMILIES.values() for m in f.modules]
    assert len(registered) == len(set(registered)), registered
    assert kernel_modules <= set(registered), kernel_modules - set(registered)
    for f in FAMILIES.values():
        assert f.name and f.entry_points and f.runs, f.name
        assert all(os.path.isfile(p) for p in f.sources), f.sources


def test_kernel_modules_are_imported_by_the_registry_only():
    """One way to load a kernel: no caller imports a family's module itself (the kernel
    modules may import each other's helpers; the warm-up switches a compile notice off)."""
    exempt = set(m for f in FAMILIES.values() for m in f.modules)
    exempt |= {"minigrad._kernel_registry", "minigrad.warmup"}
    shorts = {m.rsplit(".", 1)[1] for f in FAMILIES.values() for m in f.modules}
    importing = re.compile(r"^\s*(?:from\s+[\w.]+\s+import\s+(?:\(\s*)?|import\s+[\w.]*?)"
                           r"(?:[\w.]*\.)?(" + "|".join(sorted(shorts)) + r")\b", re.MULTILINE)
    offenders = {name: m.group(1) for name, text in _modules().items() if name not in exempt
                 for m in [importing.search(text)] if m}
    assert offenders == {}


def test_every_entry_point_is_reachable_and_warmed():
    """kernels(name) serves every entry point of every family, and the family's warm-up
    compiles each of its numba entry points (what the ahead-of-time build compiles)."""
    from numba.core.dispatcher import Dispatcher

    for name, family in FAMILIES.items():
        saved = registry._chosen.get(name)
        jit = registry.jit(name)
        registry.use(name, jit)
        try:
            assert family.warm()
        finally:
            registry.use(name, saved)
        for entry in family.entry_points:
            assert callable(getattr(registry.kernels(name), entry)), (name, entry)
            kernel = getattr(jit, entry)
            if isinstance(kernel, Dispatcher):
                assert kernel.signatures, (name, entry)
    with pytest.raises(AttributeError):
        registry.jit("small").no_such_kernel  # noqa: B018


def test_exact_takes_the_compiled_modules_function_for_those_types(monkeypatch):
    """kernel_registry.exact: a compiled module's function for exactly the arguments'
    types when the module has one, else numba's compiled overload; looked up once per key,
    and anew when the family's choice changes."""
    import numpy as np

    from minigrad import _aot

    monkeypatch.setattr(registry, "_exact", {})
    args = (np.zeros((1, 3, 3)), 0)

    def built(*a):
        pass

    module = _aot.Kernels({"k": {_aot._kinds(args): built}}, lambda: None)
    monkeypatch.setitem(registry._chosen, "jacobi", module)
    assert registry.exact("jacobi", "k", "key", args) is built
    module._table.clear()  # found once per key: not looked up again
    assert registry.exact("jacobi", "k", "key", args) is built
    other = _aot.Kernels({"k": {_aot._kinds(args): print}}, lambda: None)
    monkeypatch.setitem(registry._chosen, "jacobi", other)
    assert registry.exact("jacobi", "k", "key", args) is print
