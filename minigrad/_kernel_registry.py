"""The numba kernel families, each registered once: its kernel modules, the entry points its
callers use, and its warm-up (small inputs for each signature the callers use); and
``kernels(name)``, the one way every caller gets a family's entry points.

`python -m minigrad.warmup` runs every family's warm-up through numba's JIT (filling numba's
cache) and compiles each family marked ``aot`` ahead of time (minigrad/_aot.py). Adding a
kernel-backed op: write its kernel module, add one Family to FAMILIES, call
``kernels(name).entry_point(...)``.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from minigrad import _aot

_HERE = os.path.dirname(os.path.abspath(__file__))
DTYPES = (np.float64, np.float32)
# The kernels' float dtypes (native byte order: a big-endian array's bytes would be read as
# they lie), for callers' membership tests.
KERNEL_FLOATS = frozenset(np.dtype(d) for d in DTYPES)

# One warm-up step: a progress label, and a run that returns its results (tuples of arrays,
# compared bit for bit between the JIT and a compiled module).
Run = tuple[str, Callable[[], list]]


@dataclass(frozen=True)
class Family:
    name: str  # also the stem of its compiled module
    modules: tuple[str, ...]  # the numba kernel modules, imported on first use only
    entry_points: tuple[str, ...]  # what callers call: attributes of the modules
    runs: tuple[Run, ...]  # the warm-up: every entry point at every signature in use
    aot: bool = True  # compiled ahead of time too (else numba's cache only)
    # False: each entry point has one signature whose inputs take any strides (or that its
    # callers lay out as it says: C-contiguous), and its callers pass its dtypes, so a
    # compiled call checks no argument types (a few us).
    checked: bool = True
    # Warm-up runs for numba's cache only, made after the ahead-of-time build so that their
    # signatures stay out of the compiled module (which passes them to the JIT).
    jit_only: tuple[Run, ...] = ()

    @property
    def sources(self) -> tuple[str, ...]:
        """The kernel modules' files (their keys follow what these import: _aot.sources)."""
        return tuple(os.path.join(os.path.dirname(_HERE), *m.split(".")) + ".py"
                     for m in self.modules)

    def warm(self) -> list:
        """Every run's results (jit_only's last), in order."""
        return [r for _, run in self.runs + self.jit_only for r in run()]


class _Joined:
    """The entry points of a family of several modules: each looked up in them in turn."""

    def __init__(self, modules: list):
        self._modules = modules

    def __getattr__(self, name: str) -> Any:
        for module in self._modules:
            found = getattr(module, name, None)
            if found is not None:
                setattr(self, name, found)  # later lookups skip __getattr__
                return found
        raise AttributeError(name)


_jits: dict[str, Any] = {}  # family -> its JIT entry points, once their import completed


def jit(name: str) -> Any:
    """Family `name`'s numba kernels: its module (or its modules joined), imported now."""
    found = _jits.get(name)
    if found is None:
        modules = [importlib.import_module(m) for m in FAMILIES[name].modules]
        found = _jits[name] = modules[0] if len(modules) == 1 else _Joined(modules)
    return found


def jit_if_loaded(name: str) -> Any:
    """jit(name) if it has been imported already, else None (importing nothing)."""
    return _jits.get(name)


def compiled(name: str, where: str | None = None) -> _aot.Kernels | None:
    """Family `name`'s compiled module when it is present, intact and built for these
    sources and this machine (looked for in the cache roots, or in `where`), else None."""
    f = FAMILIES[name]
    if not f.aot:
        return None
    return _aot.load(name, f.sources, lambda: jit(name), where, f.checked)


_chosen: dict[str, Any] = {}  # family -> its entry points in use, chosen once
_choosing = threading.Lock()


def pass_kernel(kind: str, dtype: np.dtype) -> Any:
    """The "small" family's one-pass kernel ``kind`` (relu, sigmoid, sigmoid_grad, leaky,
    cumsum, rowop, addrows: ops/_layout_kernels.py) for float32 or float64 ``dtype``."""
    return getattr(kernels("small"), f"{kind}_{dtype.name}")


def kernels(name: str) -> Any:
    """Family `name`'s entry points: its compiled module's (no numba import) when
    compiled(name) finds one and MINIGRAD_NO_AOT is unset, else numba's JIT kernels
    (compiled on first call, cached on disk). Chosen on first use, once per process."""
    chosen = _chosen.get(name)
    if chosen is None:
        with _choosing:
            chosen = _chosen.get(name)
            if chosen is None:
                chosen = _chosen[name] = (compiled(name) if _aot.enabled() else None) \
                    or jit(name)
    return chosen


_exact: dict[tuple, tuple[Any, Callable]] = {}  # (family, entry, key) -> (chosen, function)


def exact(name: str, entry: str, key: Hashable, args: tuple) -> Callable:
    """Family `name`'s entry point `entry` compiled for exactly the types of `args` (the
    compiled module's function, else numba's compiled overload's own entry point), called
    with no per-call look at the arguments' types: that look costs 1-3 us on a kernel of
    seven arguments, most of a lone 3x3's call. For callers that pass the same types on
    every call made with the same `key` (which must say every type that can vary: dtypes,
    layout flags, e.g. an input's dtype and its flags.num, a superset of the layout bits
    numba types it by); found once per key, and again when kernels(name) changes."""
    chosen = kernels(name)
    found = _exact.get((name, entry, key))
    if found is not None and found[0] is chosen:
        return found[1]
    if isinstance(chosen, _aot.Kernels):
        f = chosen.compiled_for(entry, args)
        if f is not None:
            _exact[(name, entry, key)] = (chosen, f)
            return f
    dispatcher = getattr(jit(name), entry)
    if not hasattr(dispatcher, "overloads"):  # NUMBA_DISABLE_JIT: a plain function
        return dispatcher
    compiled = dispatcher.overloads.get(tuple(dispatcher.typeof_pyval(a) for a in args))
    if compiled is None:  # not compiled (or loaded) yet: numba's dispatch, this time
        return dispatcher
    _exact[(name, entry, key)] = (chosen, compiled.entry_point)
    return compiled.entry_point


def use(name: str, chosen: Any) -> None:
    """Make `chosen` family `name`'s entry points from now on (None: chosen anew on next
    use). The warm-up and tests pick."""
    if chosen is None:
        _chosen.pop(name, None)
    else:
        _chosen[name] = chosen


# The warm-up runs. Each imports its driver when run: the drivers import this module.

def _svd(label: str, shape: tuple, path: str | None, threads: int, dtype: type) -> Run:
    def run() -> list:
        from minigrad.linalg._svd_forward import Path, Plan, svd_forward

        plan = None if path is None else Plan(Path(path), threads)
        a: np.ndarray = np.random.default_rng(0).standard_normal(shape).astype(dtype)
        return [svd_forward(a, True, _plan=plan),
                svd_forward(a, False, compute_uv=False, _plan=plan)]

    return f"{label}, {np.dtype(dtype).name}", run


def _symmetric_finish() -> list:
    """The lone path's finishing kernels for an exactly symmetric matrix (a tensor
    network's corner), called directly: the SVD reaches them only through SciPy's pivoted
    QR, which a machine without SciPy lacks (the module would then never count as built)."""
    from minigrad.linalg import _svd_single

    out = []
    for dtype in DTYPES:
        a = np.random.default_rng(5).standard_normal((40, 40)).astype(dtype)
        a = a + a.T
        lam, v = np.linalg.eigh(a.astype(np.float64))
        order = np.argsort(-np.abs(lam))
        s, vh = np.abs(lam[order]).astype(dtype), np.ascontiguousarray(v[:, order].T, dtype)
        u = _svd_single._left_of_symmetric(a, vh, s)
        assert u is not None  # (distinct values: U = V D passes its test)
        _svd_single._fix_signs(u, vh, 40)
        out.append((u, vh, np.asarray(_svd_single._symmetric(a))))
    return out


def _complex_svds() -> list:
    """The complex SVD: the general kernels' complex128 specialisations (complex64 input
    runs in complex128 too), a full U to complete and values only."""
    from minigrad.linalg._complex_forward import complex_svd_forward

    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 8, 5)) + 1j * rng.standard_normal((4, 8, 5))
    return [complex_svd_forward(a, True), complex_svd_forward(a, False, compute_uv=False)]


def _complex_eighs() -> list:
    """The Hermitian eigh's complex128 kernels, through its paths (explicit sweeps; A V
    sweeps from LAPACK's eigenvectors)."""
    from minigrad.linalg._complex_forward import hermitian_eigh_forward

    rng = np.random.default_rng(4)
    return [hermitian_eigh_forward(a, compute_v=v) for shape in ((3, 6, 6), (60, 60))
            for a in [rng.standard_normal(shape) + 1j * rng.standard_normal(shape)]
            for v in (True, False)]


def _eighs() -> list:
    """eigh through each of its kernel's paths (lanes, one matrix; from 48 on, the A V
    sweeps from LAPACK's eigenvectors): float64 for every dtype."""
    from minigrad.linalg._eigh_forward import eigh_forward

    rng = np.random.default_rng(1)
    return [eigh_forward(rng.standard_normal(shape), compute_v=v)
            for shape in ((32, 3, 3), (3, 30, 30), (60, 60)) for v in (True, False)]


def _small() -> list:
    """The small-batch matmul (point clouds through 3x3s, and their cross-covariances), the
    fused SVD backward, the closed forms of det, inv and solve (each size), the blocked sum
    and sum of squares, the row and middle-axis max, the broadcast repeat, the row
    scatter-add, relu, leaky_relu, sigmoid and its gradient, cumsum and the row operand,
    once per dtype."""
    import minigrad as mg
    from minigrad._broadcast import widen
    from minigrad.linalg import _small
    from minigrad.linalg._svd_backward import svd_vjp_square, zero_poles
    from minigrad.linalg._svd_forward import svd_forward
    from minigrad.ops.reduce_fast import fast_max, fast_sum, fast_sumsq
    from minigrad.ops.shape import add_rows

    rng, out = np.random.default_rng(2), []
    for dtype in DTYPES:
        a = rng.standard_normal((16, 3, 3)).astype(dtype)
        u, s, vh = svd_forward(a, True)
        assert u is not None and vh is not None  # compute_uv
        clouds = rng.standard_normal((16, 30, 3)).astype(dtype)
        out += [((mg.tensor(a) @ mg.tensor(a)).numpy(), (mg.tensor(clouds) @ mg.tensor(a)).numpy(),
                 (mg.tensor(clouds).mT @ mg.tensor(clouds)).numpy()),
                (svd_vjp_square(u, s, vh, a, None, a),),
                (zero_poles(a, a, s, s[:, 0] * 1e-3, s < s[:, 1:2]),)]
        for n in _small.SIZES:
            b = rng.standard_normal((4, n, n)).astype(dtype)
            out += [(_small.det(b), _small.inv(b), _small.solve(b, b), _small.cofactor(b))]
        long = rng.standard_normal(5000).astype(dtype)
        out += [(fast_sum(long, (0,), False), fast_sum(long.reshape(50, 100), (1,), False),
                 fast_sumsq(long.reshape(50, 100), (0, 1), True),
                 widen(long[:24].reshape(8, 1, 3), (8, 700, 3)),
                 fast_max(long.reshape(50, 100), (1,), False, True),
                 fast_max(long.reshape(5, 50, 20), (1,), False, False))]
        rows = np.zeros((7, 100), dtype)
        add_rows(rows, np.arange(50) % 7, long.reshape(50, 100))
        grid = mg.tensor(long.reshape(50, 100))
        out += [(rows, grid.relu().numpy(), grid.sigmoid().numpy(), grid.cumsum(0).numpy(),
                 grid.cumsum(1).numpy())]
        out += [((grid - grid.amax(1, keepdim=True)).numpy(),)]
        leaky = mg.tensor(long.reshape(50, 100), requires_grad=True)
        mg.nn.functional.leaky_relu(leaky).sum().backward()
        smooth = mg.tensor(long.reshape(50, 100), requires_grad=True)
        smooth.sigmoid().backward(grid)
        out += [(leaky.grad.numpy(), smooth.grad.numpy())]
    return out


_X = np.linspace(-3.0, 3.0, 7)  # the special functions' callers pass float64 vectors


def _erfs() -> list:
    e = kernels("erf")
    return [(e.erf(_X),), (e.erf(_X.astype(np.float32)),), (e.erfc(_X),),
            (e.erfinv(_X / 4),), (e.erfcx(_X),), (e.erfcx_slope(_X),),
            (e.exp_square(_X, -0.5),), (e.gelu(_X.astype(np.float32)),),
            (e.gelu_slope(_X.astype(np.float32)),)]


def _gammas() -> list:
    g = kernels("gamma")
    return [(g.lgamma(_X),), (g.polygamma(0, _X),), (g.polygamma(1, _X),)]


def _bessels() -> list:
    b = kernels("bessel")
    return [(b.bessel_i(0, _X, True),), (b.bessel_i(1, _X, False),)]


# Each SVD run reaches different kernels: the lanes of 3x3 and of other tiny matrices, the
# general batch kernel, the lone-matrix sweeps (and values only), and the threaded sweep of
# large matrices (_symmetric_finish the finishing of a symmetric one).
_SVD_KINDS = [("batch of 3x3", (64, 3, 3), None, 1), ("batch of 4x3", (64, 4, 3), None, 1),
              ("batch of 8x8, full U", (4, 8, 5), None, 1), ("one matrix", (60, 50), "lone", 1),
              ("one large matrix, threaded sweeps", (60, 50), "lone", 2)]

FAMILIES: dict[str, Family] = {f.name: f for f in (
    # The complex kernels (complex128 specialisations of the general SVD kernels, the
    # Hermitian eigh) are jit_only: compiled ahead of time, the complex SVD's U and Vh
    # differed from the JIT's in the last bit, which kept the whole module from publishing.
    Family("jacobi", ("minigrad.linalg._jacobi",),
           ("svd_lanes3", "svd_lanes", "sweeps", "finish", "complete", "left_vectors",
            "renorm_sorted", "block_pairs", "fix_signs", "is_symmetric", "symmetric_left"),
           tuple(_svd(*kind, dtype) for dtype in DTYPES for kind in _SVD_KINDS)
           + (("a symmetric matrix's U from V, and the signs", _symmetric_finish),),
           jit_only=(("complex SVD, complex128", _complex_svds),)),
    Family("small", ("minigrad.ops._matmul_kernels", "minigrad.linalg._svd_vjp_kernel",
                     "minigrad.linalg._small_kernels", "minigrad.ops._layout_kernels"),
           tuple(f"{k}_{np.dtype(d).name}" for k in ("bmm", "bmm3", "cross3", "svd_vjp",
                                                          "zero_poles", "closed", "sum", "sumsq",
                                                          "rows", "maxrows", "maxmid",
                                                          "addrows", "relu", "cumsum",
                                                          "sigmoid", "sigmoid_grad", "leaky",
                                                          "rowop")
                 for d in DTYPES) + ("repeat_4", "repeat_8"),
           (("batched small matmul and point clouds, SVD backward, det, inv and solve, "
             "sums, max, repeat, row ops, relu, leaky_relu, sigmoid and its gradient, cumsum",
             _small),),
           checked=False),
    # (eigh_range_hermitian, the jit_only run's, is left out of the entry points: they are
    # what the compiled module must hold to count as built.)
    Family("eigh", ("minigrad.linalg._eigh_jacobi",),
           ("eigh_range", "eigh_load_range", "eigh_polish_range"), (("eigh", _eighs),),
           jit_only=(("Hermitian eigh, complex128", _complex_eighs),)),
    # The special functions' entry points are Python wrappers (they flatten to float64
    # vectors, GELU's to float32 ones) around their kernels: numba's cache only.
    Family("erf", ("minigrad.ops._erf_kernels",),
           ("erf", "erfc", "erfinv", "erfcx", "erfcx_slope", "exp_square", "gelu",
            "gelu_slope"),
           (("erf and its kin", _erfs),), aot=False),
    Family("gamma", ("minigrad.ops._gamma_kernels",), ("lgamma", "polygamma"),
           (("lgamma and polygamma", _gammas),), aot=False),
    Family("bessel", ("minigrad.ops._bessel_kernels",), ("bessel_i",),
           (("Bessel's I", _bessels),), aot=False),
)}
