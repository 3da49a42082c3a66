"""The op table's complex rows (``complex`` column, tests/ops/table.py) on complex inputs:
values and gradients against torch in complex128 (first and second order), the dtype and
values in complex64, and complex gradcheck and gradgradcheck (real and imaginary parts
perturbed). A real loss of a complex output is Re <w, out> with a complex w."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import minigrad as mg
from tests.ops.table import COMPLEX, Op, make_arrays

IDS = [op.name for op in COMPLEX]


def complex_arrays(op: Op) -> list[np.ndarray]:
    """complex128 inputs: real and imaginary parts each drawn from the row's domain."""
    return [re + 1j * im for re, im in zip(make_arrays(op, 0), make_arrays(op, 1))]


def _loss(lib: Any, out: Any) -> Any:
    rng = np.random.default_rng(5)
    w = rng.standard_normal(tuple(out.shape))
    if out.is_complex():
        w = w + 1j * rng.standard_normal(tuple(out.shape))
    s = (out * lib.tensor(w)).sum()
    return s.real if out.is_complex() else s


def _run(lib: Any, op: Op, arrays: list[np.ndarray], order: int) -> tuple:
    xs = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = op.fn(lib, *xs)
    grads = lib.autograd.grad(_loss(lib, out), xs, create_graph=order > 1)
    if order == 2:  # a real scalar of the first derivatives, differentiated again
        total = sum((g * g.conj()).real.sum() for g in grads)
        if not total.requires_grad:  # first derivatives constant (a linear op): zero
            grads = [None] * len(xs)
        else:
            grads = lib.autograd.grad(total, xs, allow_unused=True)
    values = out.detach()
    values = values.resolve_conj() if lib is not mg else values
    return (str(out.dtype).removeprefix("torch."), values.numpy(),
            [None if g is None else g.detach().resolve_conj().numpy()
             if lib is not mg else g.numpy() for g in grads])


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("op", COMPLEX, ids=IDS)
def test_complex128_matches_torch(op: Op, order: int) -> None:
    torch = pytest.importorskip("torch")
    arrays = complex_arrays(op)
    (d_ours, v_ours, g_ours), (d_theirs, v_theirs, g_theirs) = (
        _run(lib, op, arrays, order) for lib in (mg, torch))
    assert d_ours == d_theirs
    np.testing.assert_allclose(v_ours, v_theirs, rtol=1e-10, atol=1e-12)
    for i, (a, b) in enumerate(zip(g_ours, g_theirs, strict=True)):
        a = np.zeros(arrays[i].shape) if a is None else a
        b = np.zeros(arrays[i].shape) if b is None else b
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11, err_msg=f"grad {i}")


@pytest.mark.parametrize("op", COMPLEX, ids=IDS)
def test_complex64_keeps_its_dtype(op: Op) -> None:
    torch = pytest.importorskip("torch")
    arrays = [a.astype(np.complex64) for a in complex_arrays(op)]
    ours = op.fn(mg, *[mg.tensor(a) for a in arrays])
    theirs = op.fn(torch, *[torch.tensor(a) for a in arrays]).resolve_conj()
    assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", COMPLEX, ids=IDS)
def test_complex_gradcheck(op: Op) -> None:
    leaves = [mg.tensor(a, requires_grad=True) for a in complex_arrays(op)]
    assert mg.autograd.gradcheck(lambda *xs: op.fn(mg, *xs), leaves)


@pytest.mark.parametrize("op", [op for op in COMPLEX if op.smooth],
                         ids=[op.name for op in COMPLEX if op.smooth])
def test_complex_gradgradcheck(op: Op) -> None:
    leaves = [mg.tensor(a, requires_grad=True) for a in complex_arrays(op)]
    assert mg.autograd.gradgradcheck(lambda *xs: op.fn(mg, *xs), leaves, fast_mode=True)


def test_logcumsumexp_takes_torchs_branch_of_the_logarithm() -> None:
    # Imaginary parts spread over more than pi: the doubling scan's logaddexp steps can land
    # 2 pi k off torch's one-at-a-time running sum (the same exp, another log); the values
    # must be torch's, the gradient is the same either way.
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(27)
    a = rng.uniform(-3, 3, (50, 12)) + 1j * rng.uniform(-3, 3, (50, 12))
    ours, theirs = mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    out, out_t = ours.logcumsumexp(1), theirs.logcumsumexp(1)
    np.testing.assert_allclose(out.detach().numpy(), out_t.detach().numpy(), rtol=1e-12,
                               atol=1e-12)
    w = rng.standard_normal(a.shape) + 1j * rng.standard_normal(a.shape)
    (out * mg.tensor(w)).real.sum().backward()
    (out_t * torch.tensor(w)).real.sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.resolve_conj().numpy(), rtol=1e-10,
                               atol=1e-12)
