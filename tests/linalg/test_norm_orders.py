"""Tensor.norm / mg.norm and mg.linalg.norm over every order and dim torch accepts: the same
value, shape and gradient as torch, and the same error type where torch refuses."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd import gradcheck

INF = float("inf")
ORDS = ["fro", "nuc", INF, -INF, 0, 1, 2, 3, 0.5, -1, -2, None]
DIMS = [None, 0, -1, (0, 1), (-2, -1), (1, 2), (0, 1, 2), ()]


def _run(fn, x, *args):
    """(value, gradient of the sum) of fn(x, *args), or the error's type name."""
    try:
        out = fn(x, *args)
        out.sum().backward()
    except (RuntimeError, IndexError, TypeError, ValueError) as e:
        return type(e).__name__
    g = x.grad
    return out.detach().numpy(), (np.zeros(x.shape) if g is None else g.detach().numpy())


def _same(ours, theirs) -> None:
    if isinstance(theirs, str) or isinstance(ours, str):
        assert ours == theirs
        return
    assert ours[0].shape == theirs[0].shape and ours[0].dtype == theirs[0].dtype
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-9, atol=1e-12)


def _data(shape: tuple, zero: bool) -> np.ndarray:
    a = np.random.default_rng(len(shape)).standard_normal(shape)
    if zero:
        a.flat[0] = 0.0  # the count of 0-norm and the convention at an exact zero
    return a


@pytest.mark.parametrize("shape", [(4,), (3, 4), (2, 3, 4)])
@pytest.mark.parametrize("ord", ORDS, ids=str)
def test_linalg_norm_every_ord_and_dim_as_torch(shape: tuple, ord) -> None:
    torch = pytest.importorskip("torch")
    # 0 < p < 1 has no derivative at a zero entry, which minigrad refuses (test below)
    cusp = isinstance(ord, float) and 0 < ord < 1
    a = _data(shape, zero=not cusp)
    for dim, keepdim in itertools.product(DIMS[:-1], (False, True)):
        args = (ord, dim, keepdim)
        ours = _run(mg.linalg.norm, mg.tensor(a, requires_grad=True), *args)
        theirs = _run(torch.linalg.norm, torch.tensor(a, requires_grad=True), *args)
        _same(ours, theirs)


@pytest.mark.parametrize("shape", [(4,), (2, 3, 4)])
@pytest.mark.parametrize("p", ORDS, ids=str)
def test_tensor_norm_every_p_and_dim_as_torch(shape: tuple, p) -> None:
    torch = pytest.importorskip("torch")
    # no exact zero: there 0 < p < 1 has an infinite slope, which minigrad refuses (below)
    a = _data(shape, zero=False)
    for dim, keepdim in itertools.product(DIMS, (False, True)):
        args = (p, dim, keepdim)
        ours = _run(mg.Tensor.norm, mg.tensor(a, requires_grad=True), *args)
        theirs = _run(torch.Tensor.norm, torch.tensor(a, requires_grad=True), *args)
        _same(ours, theirs)
        fn = _run(mg.norm, mg.tensor(a, requires_grad=True), *args)
        _same(fn, theirs)


def test_tensor_norm_values_at_zero_entries_and_dtype() -> None:
    torch = pytest.importorskip("torch")
    a = _data((2, 3, 4), zero=True)
    for p in ORDS:
        for dim in (None, 1, (1, 2)):
            try:
                ref = torch.tensor(a).norm(p, dim).numpy()
            except RuntimeError:
                continue
            np.testing.assert_allclose(mg.tensor(a).norm(p, dim).numpy(), ref, rtol=1e-12)
    assert mg.ones(3).norm(dtype=mg.float64).dtype == np.float64
    assert mg.ones(3).norm(0).dtype == np.float32  # the input's float dtype, as torch


def test_norm_refusals_say_why() -> None:
    x = mg.tensor([0.0, 1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="no derivative at a zero entry"):
        x.norm(0.5).backward()
    with pytest.raises(RuntimeError, match="Order 3 not supported"):
        mg.linalg.norm(mg.ones(2, 2), 3, (0, 1))
    with pytest.raises(RuntimeError, match="must be 1D or 2D"):
        mg.linalg.norm(mg.ones(2, 2, 2), "fro")
    with pytest.raises(RuntimeError, match="dim must be a 2-tuple"):
        mg.ones(2, 3).norm("nuc", 0)
    with pytest.raises(RuntimeError, match="floating point"):
        mg.arange(3).norm()


# dtype=: each norm spelling (Tensor.norm, mg.norm, linalg.norm, vector_norm, matrix_norm)
# casts the input first, under linalg's rules: a float input, a cast that does not narrow it.
DTYPE_CALLS = [  # (id, call on (library, x, dtype), numpy's answer on float64 values)
    ("Tensor.norm", lambda m, x, dt: x.norm(dtype=dt), lambda a: np.linalg.norm(a)),
    ("Tensor.norm_p_dim", lambda m, x, dt: x.norm(1, 1, True, dtype=dt),
     lambda a: np.abs(a).sum(1, keepdims=True)),
    ("Tensor.norm_nuc", lambda m, x, dt: x.norm("nuc", dtype=dt),
     lambda a: np.linalg.norm(a, "nuc")),
    ("mg.norm_fro_dims", lambda m, x, dt: m.norm(x, "fro", (0, 1), dtype=dt),
     lambda a: np.linalg.norm(a)),
    ("linalg.norm", lambda m, x, dt: m.linalg.norm(x, dtype=dt), lambda a: np.linalg.norm(a)),
    ("linalg.norm_inf_dim", lambda m, x, dt: m.linalg.norm(x, INF, -1, dtype=dt),
     lambda a: np.abs(a).max(-1)),
    ("linalg.norm_matrix", lambda m, x, dt: m.linalg.norm(x, -2, dtype=dt),
     lambda a: np.linalg.norm(a, -2)),
    ("vector_norm", lambda m, x, dt: m.linalg.vector_norm(x, 3, 0, dtype=dt),
     lambda a: (np.abs(a) ** 3).sum(0) ** (1 / 3)),
    ("matrix_norm", lambda m, x, dt: m.linalg.matrix_norm(x, dtype=dt),
     lambda a: np.linalg.norm(a)),
    ("matrix_norm_ord_keepdim", lambda m, x, dt: m.linalg.matrix_norm(x, 1, (1, 0), True,
                                                                       dtype=dt),
     lambda a: np.abs(a).sum(1).max().reshape(1, 1)),
    ("matrix_norm_nuc", lambda m, x, dt: m.linalg.matrix_norm(x, "nuc", dtype=dt),
     lambda a: np.linalg.norm(a, "nuc")),
]
DTYPE_IDS = [c[0] for c in DTYPE_CALLS]
MATRIX = np.random.default_rng(7).standard_normal((3, 4)).astype(np.float32)


@pytest.mark.parametrize("name, call, ref", DTYPE_CALLS, ids=DTYPE_IDS)
def test_norm_dtype_casts_first_and_refuses_what_torch_refuses(name, call, ref) -> None:
    out = call(mg, mg.tensor(MATRIX), mg.float64)
    assert out.dtype == np.float64
    # float64 digits: the norm of the cast values, not a float32 norm widened after
    np.testing.assert_allclose(out.numpy(), ref(MATRIX.astype(np.float64)), rtol=1e-13)
    x = mg.tensor(MATRIX, requires_grad=True)
    call(mg, x, mg.float64).sum().backward()
    assert x.grad.dtype == np.float32
    wide = mg.tensor(MATRIX.astype(np.float64), requires_grad=True)
    assert gradcheck(lambda t: call(mg, t, mg.float64), (wide,))
    with pytest.raises(RuntimeError, match="without narrowing"):
        call(mg, wide, mg.float32)
    with pytest.raises(RuntimeError, match="floating point"):
        call(mg, mg.tensor(MATRIX).long(), mg.float64)
    with pytest.raises(RuntimeError, match="dtype should be real"):
        call(mg, mg.tensor(MATRIX), mg.complex128)


@pytest.mark.parametrize("name, call, ref", DTYPE_CALLS, ids=DTYPE_IDS)
def test_norm_dtype_matches_torch(name, call, ref) -> None:
    torch = pytest.importorskip("torch")
    out = call(mg, mg.tensor(MATRIX), mg.float64)
    theirs = call(torch, torch.tensor(MATRIX), torch.float64)
    assert out.shape == tuple(theirs.shape) and str(theirs.dtype) == "torch.float64"
    np.testing.assert_allclose(out.numpy(), theirs.numpy(), rtol=1e-12)
    for x, dt in [(MATRIX.astype(np.float64), "float32"), (MATRIX.astype(np.int64), "float64"),
                  (MATRIX, "complex128")]:
        with pytest.raises(RuntimeError):
            call(torch, torch.tensor(x), getattr(torch, dt))
        with pytest.raises(RuntimeError):
            call(mg, mg.tensor(x), getattr(mg, dt))
