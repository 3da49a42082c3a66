"""The torch-compatibility layer: every public name of mg, mg.linalg, mg.nn.functional and every
public Tensor attribute that torch also has is called here the same way in both libraries, on
the same float64 inputs, and must give the same values, dtypes and shapes, and the same
gradients where the output is differentiable.

A public name must be in a table (CASES, LINALG, FUNCTIONAL) or in NOT_COVERED with the reason;
``test_every_public_name_has_a_row`` fails for a new name until it gets one. An elementwise op
gets its row in the op table (tests/ops/table.py, with a ``compat`` column), which CASES starts
from. Inputs are named by kind (``In("x")``); the same kind gives the same numbers in both
libraries."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F
from tests.ops.table import OPS, PARITY

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RTOL, ATOL = 1e-10, 1e-12


# ---- inputs -------------------------------------------------------------------------------
def _kinds() -> dict[str, np.ndarray]:
    r = np.random.default_rng(2026)
    b = r.standard_normal((3, 3))
    return {
        "x": r.standard_normal((3, 4)), "y": r.standard_normal((3, 4)),
        "p": r.uniform(0.5, 2.0, (3, 4)), "u": r.uniform(-0.9, 0.9, (3, 4)),
        "v": r.standard_normal(4), "v2": r.standard_normal(4), "w": r.standard_normal((4, 5)),
        "m": b + 3 * np.eye(3), "m2": r.standard_normal((3, 3)), "s": b @ b.T + np.eye(3),
        "b3": r.standard_normal((2, 3, 3)) + 3 * np.eye(3), "b34": r.standard_normal((2, 3, 4)),
        "b45": r.standard_normal((2, 4, 5)), "c": r.standard_normal((4, 3)),
        "c2": r.standard_normal((4, 3)), "r1": r.standard_normal(3),
        "tall": r.standard_normal((5, 3)),
        "rhs": r.standard_normal((3, 2)), "prob": r.uniform(0.05, 0.95, (3, 4)),
        "i": r.integers(0, 5, (3, 4)), "idx": np.array([[0, 2, 1, 0], [1, 1, 0, 2], [2, 0, 0, 1]]),
        "cls": np.array([1, 0, 3]), "row": np.array([2, 0]),
        "tok": np.array([[1, 0, 3], [2, 2, 4]]),
        "mask": r.random((3, 4)) > 0.5, "col": r.standard_normal((3, 1)),
        "emb": r.standard_normal((5, 3)), "n3": r.standard_normal(3), "n4": r.uniform(0.5, 2.0, 4),
        "wl": r.standard_normal((2, 4)), "bl": r.standard_normal(2), "one": np.array([0.25]),
        "lower": np.tril(b) + 3 * np.eye(3), "logp": np.log(r.dirichlet(np.ones(4), 3)),
        "gt1": r.uniform(1.2, 3.0, (3, 4)),
        # complex128 (issue 27): their own generator, so the real kinds stay as they were
        **_complex_kinds(np.random.default_rng(27)),
    }


def _complex_kinds(r: np.random.Generator) -> dict[str, np.ndarray]:
    def z(*shape: int) -> np.ndarray:
        return r.standard_normal(shape) + 1j * r.standard_normal(shape)
    return {"z": z(3, 4), "z2": z(3, 4), "zv": z(4), "zv2": z(4), "zw": z(4, 5),
            "zb": z(2, 3, 4), "zpair": r.standard_normal((3, 4, 2))}


KINDS = _kinds()


@dataclass(frozen=True)
class In:
    """An input of the named kind; float kinds require grad unless grad=False."""
    kind: str
    grad: bool = True

    def make(self, lib: Any) -> Any:
        a = KINDS[self.kind]
        if lib is mg:
            t = mg.tensor(a)
        else:
            t = torch.tensor(a)
        if self.grad and a.dtype.kind in "fc":
            t.requires_grad_()
        return t


@dataclass
class C:
    """One call: positional and keyword arguments (In anywhere, also inside lists)."""
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    values: bool = True  # False: random or uninitialised output, compare shape and dtype only
    grad: bool = True
    post: Callable | None = None  # applied to both results (gauge-invariant parts of a factor)
    method_only: bool = False  # the Tensor spelling only (first argument is self)
    function_only: bool = False
    grad_rtol: float = 1e-9


def c(*args: Any, **kwargs: Any) -> C:
    return C(args, kwargs)


def _build(value: Any, lib: Any, made: list) -> Any:
    if isinstance(value, In):
        t = value.make(lib)
        made.append(t)
        return t
    if isinstance(value, (list, tuple)):
        return type(value)(_build(v, lib, made) for v in value)
    if isinstance(value, dict):
        return {k: _build(v, lib, made) for k, v in value.items()}
    if isinstance(value, str) and value.startswith("dtype:"):
        return getattr(lib, value[6:])
    return value


# ---- comparing results ---------------------------------------------------------------------
def _dtype_name(dt: Any) -> str:
    return str(dt).removeprefix("torch.") if isinstance(dt, torch.dtype) else np.dtype(dt).name


def _same(ours: Any, theirs: Any, values: bool, where: str = "") -> None:
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, mg.Tensor), f"{where}: got {type(ours).__name__}"
        assert ours.shape == tuple(theirs.shape), f"{where}: shape"
        assert _dtype_name(ours.dtype) == _dtype_name(theirs.dtype), f"{where}: dtype"
        if values:
            np.testing.assert_allclose(ours.detach().numpy(),
                                       theirs.detach().resolve_conj().numpy(),
                                       rtol=RTOL, atol=ATOL, err_msg=where)
    elif isinstance(theirs, (tuple, list, torch.Size)):
        assert isinstance(ours, (tuple, list)), f"{where}: got {type(ours).__name__}"
        assert len(ours) == len(theirs), f"{where}: length"
        for i, (o, t) in enumerate(zip(ours, theirs, strict=True)):
            _same(o, t, values, f"{where}[{i}]")
    elif isinstance(theirs, torch.dtype):
        assert _dtype_name(ours) == _dtype_name(theirs), where
    elif isinstance(theirs, torch.device):
        assert str(ours) == str(theirs) and repr(ours) == repr(theirs), where
    elif isinstance(theirs, float) and values:
        assert math.isclose(ours, theirs, rel_tol=RTOL, abs_tol=ATOL), where
    elif isinstance(theirs, np.ndarray):
        np.testing.assert_allclose(ours, theirs, rtol=RTOL, atol=ATOL, err_msg=where)
    elif values or theirs is None:
        assert ours == theirs, f"{where}: {ours!r} != {theirs!r}"


def _float_outputs(out: Any) -> list:
    """The float64 and complex128 tensors of a result, in order (each gets its own weight in
    the loss)."""
    if isinstance(out, (torch.Tensor, mg.Tensor)):
        return [out] if out.dtype in (torch.float64, np.float64, torch.complex128,
                                      np.complex128) else []
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _float_outputs(o)]
    return []


def _grads(out: Any, made: list, lib: Any) -> list:
    """d/d(input) of sum_k <w_k, out_k> for every input that requires grad; an output that
    is not in the graph (as minigrad's sign, torch's zero-gradient one) contributes zero."""
    rng = np.random.default_rng(7)
    loss = None
    for o in _float_outputs(out):
        w = rng.standard_normal(tuple(o.shape))
        if o.is_complex():  # a real loss: Re <w, o> with a complex w
            w = w + 1j * rng.standard_normal(tuple(o.shape))
        if o.requires_grad:
            term = (o * (mg.tensor(w) if lib is mg else torch.tensor(w))).sum()
            term = term.real if o.is_complex() else term
            loss = term if loss is None else loss + term
    if loss is not None:
        loss.backward()
    return [None if t.grad is None else t.grad.detach().resolve_conj().numpy() for t in made
            if t.requires_grad]


def _run(call: Callable[[Any, tuple, dict], Any], case: C, where: str) -> None:
    results = []
    for lib in (mg, torch):
        # Each library's random calls seeded (svd_lowrank's sketch): torch's gradient through
        # its sketch came back NaN for some unseeded draws, and a test must not depend on one.
        lib.manual_seed(0)
        made: list = []
        args, kwargs = _build(case.args, lib, made), _build(case.kwargs, lib, made)
        out = call(lib, args, kwargs)
        if case.post is not None:
            out = case.post(out)
        grads = _grads(out, made, lib) if case.grad and case.values else []
        results.append((out, grads, made))
    (ours, g_ours, _), (theirs, g_theirs, made) = results
    _same(ours, theirs, case.values, where)
    assert len(g_ours) == len(g_theirs), f"{where}: inputs that require grad"
    for i, (a, b) in enumerate(zip(g_ours, g_theirs, strict=True)):
        b = np.zeros(made[i].shape) if b is None else b
        a = np.zeros(made[i].shape) if a is None else a
        np.testing.assert_allclose(a, b, rtol=case.grad_rtol, atol=1e-11,
                                   err_msg=f"{where}: grad {i}")


# ---- the tables ----------------------------------------------------------------------------
X, Y, P, U, V, Z = In("x"), In("y"), In("p"), In("u"), In("v"), In("z")
M, S, B3 = In("m"), In("s"), In("b3")
XN, YN, MN = In("x", False), In("y", False), In("m", False)  # for in-place methods


def _svd_parts(r: Any) -> tuple:
    U_, S_, V_ = r
    k = S_.shape[-1]
    return S_, (U_[..., :k] * S_.unsqueeze(-2)) @ V_[..., :k].mT


def _linalg_svd_parts(r: Any) -> tuple:
    U_, S_, Vh = r
    k = S_.shape[-1]
    return S_, (U_[..., :k] * S_.unsqueeze(-2)) @ Vh[..., :k, :]


def _lowrank_parts(r: Any) -> tuple:
    U_, S_, V_ = r
    return S_, (U_ * S_.unsqueeze(-2)) @ V_.mT


def _qr_parts(r: Any) -> tuple:
    Q, R = r
    return Q @ R, R.abs()


def _eigh_parts(r: Any) -> tuple:
    L, Q = r
    return L, (Q * L.unsqueeze(-2)) @ Q.mT


def prop(name: str, *on: In, values: bool = True) -> C:
    """An attribute read: ``on[0].<name>``."""
    return C(on, {"__attr__": name}, values=values, method_only=True)


def meth(*args: Any, **kwargs: Any) -> C:
    return C(args, kwargs, method_only=True)


def func(*args: Any, **kwargs: Any) -> C:
    return C(args, kwargs, function_only=True)


def rnd(*args: Any, **kwargs: Any) -> C:
    return C(args, kwargs, values=False)


# The op table's rows with a compat column (tests/ops/table.py), then every other name.
CASES: dict[str, list[C]] = {op.name: [c(In(op.compat))] for op in OPS if op.compat}
CASES |= {
    # one input
    "sign": [c(X)], "square": [c(X)], "fix": [c(X)], "reciprocal": [c(X)], "rsqrt": [c(P)],
    "isnan": [c(X)], "isinf": [c(X)], "isfinite": [c(X)], "clone": [c(X)], "detach": [c(X)],
    "numel": [c(X)],
    # arithmetic
    "add": [c(X, Y), c(X, 2.5), c(X, Y, alpha=0.5)], "sub": [c(X, Y), c(X, Y, alpha=2)],
    "mul": [c(X, Y), c(X, In("col"))], "div": [c(X, P), c(X, 4.0)],
    "pow": [c(P, 2.5), c(P, Y), func(2.0, X)], "remainder": [c(X, 0.7)],
    "floor_divide": [C((X, 0.7), {}, grad=False)],  # both refuse its derivative
    "maximum": [c(X, Y)], "minimum": [c(X, Y)],
    "clamp": [c(X, -0.5, 0.5), c(X, min=0.1)], "clip": [c(X, -0.5, 0.5)],
    "lerp": [c(X, Y, 0.3)], "where": [func(In("mask"), X, Y), meth(X, In("mask"), Y)],
    "masked_fill": [c(X, In("mask"), 0.5)],
    "eq": [c(X, X)], "ne": [c(X, Y)], "lt": [c(X, Y)], "le": [c(X, 0.0)], "gt": [c(X, Y)],
    "ge": [c(X, 0.0)], "equal": [c(X, X), c(X, Y)], "allclose": [c(X, X), c(X, Y)],
    # reductions
    "sum": [c(X), c(X, 1), c(X, (0, 1), keepdim=True)], "mean": [c(X), c(X, 0, True)],
    "prod": [c(P), c(P, 1)], "amax": [c(X, 1)], "amin": [c(X, (0, 1))],
    "max": [c(X), c(X, 1), func(X, Y)], "min": [c(X), c(X, 0, True)],
    "argmax": [c(X), c(X, 1)], "argmin": [c(X, 0)],
    "var": [c(X), c(X, 1), c(X, 1, correction=0)], "std": [c(X), c(X, 0, keepdim=True)],
    "norm": [c(X), c(X, 1), c(X, "fro", (0, 1)), c(X, float("inf"), 1), c(M, "nuc")],
    "logsumexp": [c(X, 1)], "softmax": [c(X, 1)], "log_softmax": [c(X, 0)],
    "cumsum": [c(X, 1)], "all": [c(In("mask")), c(In("mask"), 1)], "any": [c(In("mask"), 0)],
    "trace": [c(M)],
    # shape
    "reshape": [c(X, (2, 6)), c(X, (-1,)), meth(X, 2, 6)], "view": [meth(X, 4, 3)],
    "flatten": [c(B3), c(B3, 1)], "transpose": [c(X, 0, 1)], "swapaxes": [c(X, 0, 1)],
    "permute": [c(In("b34"), (2, 0, 1)), meth(In("b34"), 2, 0, 1)],
    "unsqueeze": [c(X, 1)], "squeeze": [c(In("col")), c(In("col"), 1)], "t": [c(X)],
    "flip": [c(X, (0,)), c(X, [0, 1])], "chunk": [c(X, 2, 1)], "split": [c(X, [1, 3], 1)],
    "unbind": [c(X)], "unflatten": [meth(X, 1, (2, 2))], "repeat": [meth(X, 2, 1)],
    "expand": [meth(In("col"), 3, 5)], "expand_as": [meth(In("col"), X)],
    "reshape_as": [meth(X, In("c"))], "view_as": [meth(X, In("c"))],
    "broadcast_to": [c(In("col"), (3, 4))],
    "gather": [c(X, 1, In("idx"))], "index_select": [c(X, 1, In("row"))],
    "diagonal": [c(X), c(B3, 0, -2, -1)], "diag": [c(V), c(M)], "diag_embed": [c(X)],
    "tril": [c(X), c(X, 1)], "triu": [c(X, -1)],
    "cat": [func([X, Y]), func((X, Y), 1)], "concat": [func([X, Y], dim=1)],
    "concatenate": [func([X, Y], 0)], "stack": [func([X, Y]), func([X, Y], 2)],
    "broadcast_shapes": [func((3, 1), (1, 4))],
    "broadcast_tensors": [func(X, In("col")), func(V, In("col"), X)],
    # products and linalg
    "matmul": [c(X, In("w")), c(In("b34"), In("b45"))], "mm": [c(X, In("w"))],
    "bmm": [c(In("b34"), In("b45"))], "dot": [c(V, In("v2"))], "outer": [func(V, In("v2"))],
    "einsum": [func("ij,jk->ik", X, In("w")), func("bij->bji", In("b34"))],
    "tensordot": [func(X, In("w"), 1), func(In("b34"), In("b45"), ([0, 2], [0, 1]))],
    "cross": [func(In("c"), In("c2"), dim=1)],
    "det": [c(M), c(B3)], "logdet": [c(S)], "slogdet": [c(M)], "inverse": [c(M), c(B3)],
    "pinverse": [c(In("tall"))], "matrix_power": [c(M, 3), c(M, -2)], "matrix_exp": [c(M)],
    "cholesky": [c(S), c(S, True)], "qr": [C((In("tall"),), {}, post=_qr_parts)],
    # torch's backward gives the factor's unread triangle a gradient (that of a full L);
    # minigrad's reads the triangle its forward uses: compared through a cholesky in
    # tests/linalg/test_solve.py
    "cholesky_solve": [C((In("rhs"), In("lower")), {}, grad=False)],
    "cholesky_inverse": [C((In("lower"),), {}, grad=False),
                         C((In("lower"), True), {}, grad=False)],
    "triangular_solve": [c(In("rhs"), In("lower"), False), c(In("rhs"), M, True, True)],
    "lu": [c(M), C((B3, True, True), {}, post=lambda r: r[:2])],
    "svd": [C((In("tall"),), {}, post=_svd_parts),
            C((In("tall"), False), {}, post=_svd_parts),
            C((In("tall"),), {"compute_uv": False}, post=lambda r: (r[1], r[0], r[2]))],
    # q >= min(m, n) (torch's default q = 6 here): torch's sketch spans the whole range, so
    # its values and gradient are the SVD's. For q < min(m, n) torch's gradient is that of
    # its random sketch (pytorch #69531) and minigrad's that of the exact top q: compared
    # with torch's values and with finite differences in tests/test_svd_truncated.py.
    "svd_lowrank": [C((In("tall"),), {}, post=_lowrank_parts),
                    C((B3,), {"M": In("r1")}, post=_lowrank_parts)],
    "pca_lowrank": [C((In("tall"),), {}, post=_lowrank_parts),
                    C((In("b34"),), {"center": False}, post=_lowrank_parts)],
    "mH": [prop("mH", In("b34")), prop("mH", In("zb"))], "mT": [prop("mT", In("b34"))],
    "H": [prop("H", X), prop("H", Z)], "T": [prop("T", X)],
    "adjoint": [c(In("b34")), c(In("zb"))],
    # complex numbers (issue 27)
    "real": [func(Z), func(X), prop("real", Z)], "imag": [func(Z), prop("imag", Z)],
    "conj": [c(Z), c(X)], "conj_physical": [c(Z)],
    "resolve_conj": [c(Z)], "is_conj": [c(Z)], "angle": [c(Z), c(X)], "is_complex": [c(Z), c(X)],
    "complex": [func(X, Y)], "polar": [func(P, X)], "view_as_real": [func(Z)],
    "view_as_complex": [func(In("zpair"))], "vdot": [c(In("zv"), In("zv2"))],
    # creation (random ones: shape and dtype)
    "tensor": [func([[1.0, 2.0]]), func([1, 2]), func([True]), func(1.5, dtype="dtype:float64")],
    "as_tensor": [func([1.0, 2.0]), func([1, 2], dtype="dtype:float64")],
    "zeros": [func(2, 3), func((2,), dtype="dtype:int64")], "ones": [func(2, 3)],
    "full": [func((2, 3), 1.5), func((2,), 3), func((1,), True)], "eye": [func(3), func(2, 3)],
    "arange": [func(5), func(1, 4, 0.5), func(0.0, 1.0, 0.25)],
    "linspace": [func(0, 1, 5)], "logspace": [func(0, 2, 3), func(0, 1, 3, base=2.0)],
    "empty": [C((2, 3), {}, values=False, function_only=True)],
    "rand": [C((2, 3), {}, values=False, function_only=True)],
    "randn": [C((2, 3), {"dtype": "dtype:float64"}, values=False, function_only=True)],
    "randint": [C((0, 5, (3,)), {}, values=False, function_only=True)],
    "randperm": [C((5,), {}, values=False, function_only=True)],
    "zeros_like": [func(X)], "ones_like": [func(X)], "full_like": [func(X, 2.0)],
    "empty_like": [C((X,), {}, values=False, function_only=True)],
    "rand_like": [C((X,), {}, values=False, function_only=True)],
    "randn_like": [C((X,), {}, values=False, function_only=True)],
    "new_zeros": [meth(X, 2, 3)], "new_ones": [meth(X, (2,))], "new_full": [meth(X, (2,), 3.0)],
    "new_tensor": [meth(X, [1.0, 2.0]), meth(In("i"), [1, 2])],
    "new_empty": [C((X, 2), {}, values=False, method_only=True)],
    "is_tensor": [func(X), func(1.0)],
    # conversions and metadata
    "to": [meth(X, "dtype:float32"), meth(X, "cpu"), meth(X, "cpu", "dtype:float16")],
    "type": [meth(X, "dtype:int64")], "type_as": [meth(X, In("i"))],
    "float": [meth(X)], "double": [meth(In("i"))], "half": [meth(X)], "long": [meth(X)],
    "int": [meth(X)], "bool": [meth(X)], "cpu": [meth(X)], "contiguous": [meth(X)],
    "is_contiguous": [meth(X)], "is_floating_point": [c(X), c(In("i"))],
    "dim": [meth(X)], "size": [meth(X), meth(X, 1)], "item": [meth(In("one"))],
    "tolist": [meth(X)], "numpy": [meth(XN)],
    "shape": [prop("shape", X)], "ndim": [prop("ndim", X)], "dtype": [prop("dtype", X)],
    "device": [prop("device", X)], "is_cuda": [prop("is_cuda", X)],
    "is_cpu": [prop("is_cpu", X)],
    "is_leaf": [prop("is_leaf", X)], "requires_grad": [prop("requires_grad", X)],
    "grad": [prop("grad", X)], "grad_fn": [prop("grad_fn", XN)], "data": [prop("data", X)],
    "retains_grad": [prop("retains_grad", X)],
    # in-place (on inputs that do not require grad)
    "add_": [meth(XN, YN)], "sub_": [meth(XN, 2.0)], "mul_": [meth(XN, YN)],
    "div_": [meth(XN, 2.0)], "pow_": [meth(In("p", False), 2)], "neg_": [meth(XN)],
    "abs_": [meth(XN)], "exp_": [meth(XN)], "sqrt_": [meth(In("p", False))],
    "tanh_": [meth(XN)], "sigmoid_": [meth(XN)], "relu_": [meth(XN)],
    "clamp_": [meth(XN, -0.5, 0.5)], "masked_fill_": [meth(XN, In("mask"), 1.0)],
    "index_fill_": [meth(XN, 1, In("row"), -1.5)],
    # numpy-spelled aliases (their originals are in test_math_parity / test_shape_parity)
    "arccos": [c(U)], "arctan": [c(X)], "arcsinh": [c(X)], "arccosh": [c(In("gt1"))],
    "atleast_1d": [func(V)], "atleast_2d": [func(V)], "atleast_3d": [func(X)],
    "row_stack": [func([X, Y])],
    "fill_": [meth(XN, 0.5)], "zero_": [meth(XN)], "copy_": [meth(XN, YN)],
    "detach_": [meth(XN)], "requires_grad_": [meth(XN)],
}

LINALG: dict[str, list[C]] = {
    "svd": [C((In("tall"),), {"full_matrices": False}, post=_linalg_svd_parts),
            C((B3,), {}, post=_linalg_svd_parts)],
    "svdvals": [c(In("tall")), c(B3)], "det": [c(M), c(B3)], "slogdet": [c(M)],
    "eigh": [C((S,), {}, post=_eigh_parts)], "eigvalsh": [c(S)],
    "cross": [c(In("c"), In("c2"))], "matrix_power": [c(M, 2)],
    "multi_dot": [c([X, In("w")]), c([In("c"), M, In("m2")])],
    "qr": [C((In("tall"),), {}, post=_qr_parts),
           # torch has no gradient for a complete QR of a tall matrix; minigrad has
           C((In("tall"),), {"mode": "complete"}, post=_qr_parts, grad=False)],
    "cholesky": [c(S), c(S, upper=True)], "inv": [c(M), c(B3)], "solve": [c(M, In("rhs"))],
    "solve_triangular": [c(In("lower"), In("rhs"), upper=False)],
    # torch's backward of cond fails on an in-place write of its own (its inv); minigrad's
    # gradient is checked against finite differences in tests/test_spectral.py
    "cond": [C((M,), {}, grad=False), C((M, "fro"), {}, grad=False)],
    "lstsq": [C((In("tall"), In("tall")), {}, post=lambda r: r[0])],
    "matrix_rank": [c(In("tall")), c(In("m2"))], "pinv": [c(In("tall"))],
    "norm": [c(X), c(X, "nuc"), c(X, 2), c(X, -1), c(X, 3, 1), c(B3, "fro", (1, 2))],
    "vector_norm": [c(X), c(X, 0.5, 1), c(X, float("inf"))],
    "matrix_norm": [c(X), c(B3, 2), c(X, -2)], "matrix_exp": [c(M), c(B3)],
    "vecdot": [c(X, Y), c(X, In("col"), dim=0)],
    "matmul": [c(X, In("w")), c(In("b34"), In("b45"))], "diagonal": [c(B3), c(X, offset=1)],
    "inv_ex": [c(M), c(B3)], "solve_ex": [c(M, In("rhs")), c(B3, In("r1"))],
    "cholesky_ex": [c(S), c(S, upper=True)],
    "householder_product": [c(In("tall"), In("r1")), c(In("tall"), In("bl"))],
    "lu_factor": [c(M), c(B3)], "lu_factor_ex": [c(M), c(B3)], "lu": [c(M), c(B3)],
}

# torch's backward multiplies by a float32-rounded constant (1/6, 1/alpha) even in float64:
# off by ~3e-8 relative; minigrad's is exact (test_closed_form_where_torch_rounds below).
TORCH_ROUNDS = 1e-7

FUNCTIONAL: dict[str, list[C]] = {
    name: [c(X)] for name in ["relu", "relu6", "tanh", "sigmoid", "hardswish",
                              "silu", "mish", "selu", "logsigmoid", "softsign", "tanhshrink"]
}
FUNCTIONAL |= {
    "hardtanh": [c(X), c(X, -0.5, 0.5)], "gelu": [c(X), c(X, approximate="tanh")],
    "leaky_relu": [c(X), c(X, 0.2)], "elu": [c(X), c(X, 0.5)],
    "celu": [C((X, 0.7), {}, grad_rtol=TORCH_ROUNDS), c(X)],
    "hardsigmoid": [C((X,), {}, grad_rtol=TORCH_ROUNDS)],
    "softplus": [c(X), c(X, 2.0, 1.0)], "threshold": [c(X, 0.1, -1.0)], "glu": [c(X)],
    "prelu": [c(X, In("one"))], "softmax": [c(X, 1)], "softmin": [c(X, 0)],
    "log_softmax": [c(X, 1)], "linear": [c(X, In("wl"), In("bl")), c(X, In("wl"))],
    "dropout": [c(X, 0.5, False), C((X, 0.3), {}, values=False)],
    "layer_norm": [c(X, (4,)), c(X, (4,), In("n4"), V)], "rms_norm": [c(X, (4,), In("n4"))],
    "batch_norm": [c(X, None, None, In("n4"), V, True),
                   c(X, In("v", False), In("n4", False), training=False)],
    "normalize": [c(X), c(X, 1.0, 0)], "embedding": [c(In("tok"), In("emb"))],
    "one_hot": [c(In("cls")), c(In("cls"), 5)],
    "pad": [c(X, (1, 2)), c(X, (1, 1, 2, 0), value=0.5), c(In("b34"), (1, 2), "reflect")],
    "cosine_similarity": [c(X, Y)], "pairwise_distance": [c(X, Y)],
    "mse_loss": [c(X, Y), c(X, Y, reduction="sum")], "l1_loss": [c(X, Y, reduction="none")],
    "smooth_l1_loss": [c(X, Y, beta=0.5)], "huber_loss": [c(X, Y, delta=0.5)],
    "binary_cross_entropy": [c(In("prob"), In("prob", False))],
    "binary_cross_entropy_with_logits": [c(X, In("prob", False))],
    "kl_div": [c(In("logp"), In("prob", False), reduction="batchmean")],
    "nll_loss": [c(In("logp"), In("cls"))], "cross_entropy": [c(X, In("cls")),
                                                             c(X, In("cls"),
                                                               label_smoothing=0.1)],
}

# Public names torch also has that the tables above do not call, and why.
NOT_COVERED: dict[str, dict[str, str]] = {
    "mg": {
        "Tensor": "the class itself; its attributes are the 'Tensor' scope",
        "autograd": "a module (tests/autograd/)", "linalg": "a module: the linalg scope",
        "nn": "a module (tests/nn/); nn.functional is a scope here",
        "optim": "a module (tests/optim/)",
        "utils": "a module: utils.checkpoint (tests/autograd/test_setup_context_and_checkpoint.py)",
        "cuda": "a module reporting no GPU (tests/tensor/test_devices.py)",
        "accelerator": "a module reporting none (tests/tensor/test_devices.py)",
        "special": "a module (tests/ops/test_special_functions.py compares it with torch.special)",
        "device": "a class (tests/tensor/test_devices.py compares it with torch.device)",
        "save": "file formats differ by design (tests/test_serialization.py)",
        "load": "file formats differ by design (tests/test_serialization.py)",
        "from_numpy": "shares memory; checked in tests/tensor/test_basics.py",
        "Generator": "numpy's PCG64 stream, not torch's Mersenne Twister: draws differ",
        "manual_seed": "seeds a different generator than torch's: draws differ",
        "default_generator": "numpy's stream, not torch's",
        "get_num_threads": "thread settings of minigrad's kernels, not torch's",
        "set_num_threads": "thread settings of minigrad's kernels, not torch's",
        "no_grad": "context managers: tests/autograd/test_semantics.py",
        "enable_grad": "context managers: tests/autograd/test_semantics.py",
        "set_grad_enabled": "context managers: tests/autograd/test_semantics.py",
        "is_grad_enabled": "grad mode state: tests/autograd/test_semantics.py",
        "inference_mode": "a grad mode: tests/autograd/test_semantics.py",
        "is_inference_mode_enabled": "grad mode state: tests/autograd/test_semantics.py",
        "finfo": "dtype limits, not a tensor: tests/tensor/test_basics.py",
        "iinfo": "dtype limits, not a tensor: tests/tensor/test_basics.py",
        "lu_solve": "takes lu's output: tests/linalg/test_lu.py",
        "lu_unpack": "takes lu's output: tests/linalg/test_lu.py",
        "get_default_dtype": "global state: tests/tensor/test_basics.py",
        "set_default_dtype": "global state: tests/tensor/test_basics.py",
        **{d: "a dtype: test_dtype_names_are_torchs below" for d in (
            "float16", "float32", "float64", "int32", "int64", "bool", "half", "double",
            "long", "float", "complex64", "complex128", "cfloat", "cdouble")},
    },
    "linalg": {"LinAlgError": "an exception class (raised in tests/linalg/test_svd_api.py)",
               "lu_solve": "takes lu_factor's output: tests/linalg/test_lu.py"},
    "functional": {},
    "Tensor": {
        "backward": "autograd entry point: tests/autograd/test_semantics.py",
        "register_hook": "autograd hooks: tests/autograd/test_semantics.py",
        "retain_grad": "autograd: tests/autograd/test_semantics.py",
        "cuda": "refuses (no GPU): tests/tensor/test_devices.py",
    },
}


def _public() -> dict[str, list[str]]:
    tensor_names = [n for n in dir(mg.Tensor) if not n.startswith("_")]
    return {
        "mg": [n for n in mg.__all__ if hasattr(torch, n)],
        "linalg": [n for n in mg.linalg.__all__ if hasattr(torch.linalg, n)],
        "functional": [n for n in F.__all__ if hasattr(TF, n)],
        "Tensor": [n for n in tensor_names if hasattr(torch.Tensor, n)],
    }


def _table(scope: str) -> dict[str, list[C]]:
    if scope == "mg":
        return {n: [k for k in cs if not k.method_only] for n, cs in CASES.items()}
    if scope == "Tensor":
        return {n: [k for k in cs if not k.function_only] for n, cs in CASES.items()}
    return LINALG if scope == "linalg" else FUNCTIONAL


def _rows() -> list[tuple[str, str]]:
    return [(scope, n) for scope, names in _public().items() for n in names
            if _table(scope).get(n)]


def _caller(scope: str, name: str) -> Callable[[Any, tuple, dict], Any]:
    def call(lib: Any, args: tuple, kwargs: dict) -> Any:
        if scope == "Tensor":
            if "__attr__" in kwargs:
                return getattr(args[0], kwargs["__attr__"])
            return getattr(args[0], name)(*args[1:], **kwargs)
        space = {"mg": lib, "linalg": lib.linalg,
                 "functional": F if lib is mg else TF}[scope]
        return getattr(space, name)(*args, **kwargs)
    return call


@pytest.mark.parametrize("scope,name", _rows(), ids=[f"{s}.{n}" for s, n in _rows()])
def test_same_call_same_result_as_torch(scope: str, name: str) -> None:
    for i, case in enumerate(_table(scope)[name]):
        _run(_caller(scope, name), case, f"{scope}.{name} case {i}")


# Families with a torch-comparison file of their own (values, dtypes, shapes and gradients
# against torch), and the op table's parity rows: a name they test needs no row here.
PARITY_FILES = ("ops/test_math_parity.py", "tensor/test_sort_parity.py",
                "tensor/test_shape_parity.py", "nn/test_conv_pool_parity.py")


def _in_parity_files() -> set[str]:
    here = Path(__file__).parents[1]  # tests/
    text = "\n".join((here / f).read_text() for f in PARITY_FILES)
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)) | {op.name for op in PARITY}


def test_every_public_name_has_a_row() -> None:
    elsewhere = _in_parity_files()
    missing = {scope: [n for n in names if not _table(scope).get(n)
                       and n not in NOT_COVERED[scope] and n not in elsewhere]
               for scope, names in _public().items()}
    assert missing == {s: [] for s in missing}, (
        "public names torch also has, with no row in tests/compat/test_torch_compat.py: add a case "
        "to CASES / LINALG / FUNCTIONAL or a reason to NOT_COVERED")
    stale = {scope: [n for n in reasons if n not in _public()[scope]]
             for scope, reasons in NOT_COVERED.items()}
    assert stale == {s: [] for s in stale}, "NOT_COVERED names that are not public any more"


def test_dtype_names_are_torchs() -> None:
    for name in ("float16", "float32", "float64", "int32", "int64", "bool", "half", "double",
                 "long", "float", "complex64", "complex128", "cfloat", "cdouble"):
        assert _dtype_name(getattr(mg, name)) == _dtype_name(getattr(torch, name)), name


def test_closed_form_where_torch_rounds() -> None:
    x = np.array([-2.5, -1.3, -0.5, 0.4, 2.0])
    t = mg.tensor(x, requires_grad=True)
    F.hardsigmoid(t).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), np.where(abs(x) < 3, 1 / 6, 0.0), rtol=1e-15)
    t = mg.tensor(x, requires_grad=True)
    F.celu(t, 0.7).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), np.where(x > 0, 1.0, np.exp(x / 0.7)),
                               rtol=1e-15)
