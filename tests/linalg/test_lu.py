"""linalg.lu_factor / lu_factor_ex / lu / lu_solve and torch's older lu, lu_solve, lu_unpack:
values, pivots and info against torch, gradients against torch and finite differences
(first and second order), torch's errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd import gradcheck, gradgradcheck
from minigrad.linalg import LinAlgError

RNG = np.random.default_rng(21)
A0 = RNG.standard_normal((2, 4, 4))
B0 = RNG.standard_normal((2, 4, 3))


def _calls(lib: Any) -> list:
    L = lib.linalg
    return [
        lambda A, B: L.lu_factor(A),
        lambda A, B: L.lu_factor_ex(A),
        lambda A, B: L.lu(A),
        lambda A, B: L.lu_solve(*L.lu_factor(A), B),
        lambda A, B: L.lu_solve(*L.lu_factor(A), B, adjoint=True),
        lambda A, B: L.lu_solve(*L.lu_factor(A), B.mT, left=False),
        lambda A, B: L.lu_solve(*L.lu_factor(A), B.mT, left=False, adjoint=True),
        lambda A, B: L.lu_solve(*L.lu_factor(A[0]), B),  # one factor for a batch of B
        lambda A, B: lib.lu_solve(B, *lib.lu(A)),
        lambda A, B: lib.lu_unpack(*lib.lu(A)),
    ]


@pytest.mark.filterwarnings("ignore:.*is deprecated:UserWarning")
@pytest.mark.parametrize("case", range(10))
def test_values_pivots_and_gradients_match_torch(case: int) -> None:
    """kornia's homography solver (lu_factor_ex + lu_solve) and implicit physics steps."""
    torch = pytest.importorskip("torch")
    out = []
    for lib in (mg, torch):
        A, B = lib.tensor(A0, requires_grad=True), lib.tensor(B0, requires_grad=True)
        res = _calls(lib)[case](A, B)
        res = res if isinstance(res, tuple) else (res,)
        floats = [r for r in res if r.dtype == lib.float64]
        w = np.random.default_rng(case)
        sum((r * lib.tensor(w.standard_normal(tuple(r.shape)))).sum() for r in floats).backward()
        out.append([r.detach().numpy() for r in res] +
                   [t.grad.numpy() for t in (A, B) if t.grad is not None])
    assert len(out[0]) == len(out[1])
    for ours, theirs in zip(*out):
        assert ours.dtype == theirs.dtype
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def test_second_order_through_factor_and_solve() -> None:
    def f(A: mg.Tensor, B: mg.Tensor) -> mg.Tensor:
        LU, piv = mg.linalg.lu_factor(A)
        return mg.linalg.lu_solve(LU, piv, B) + LU.sum()

    A = mg.tensor(A0[0] + 2 * np.eye(4), requires_grad=True)
    B = mg.tensor(B0[0], requires_grad=True)
    assert gradcheck(f, [A, B]) and gradgradcheck(f, [A, B])


def test_singular_input_info_and_errors_as_torch() -> None:
    torch = pytest.importorskip("torch")
    a = np.stack([np.eye(3), [[1.0, 2, 3], [2, 4, 6], [1, 0, 1]]])
    ours, theirs = mg.linalg.lu_factor_ex(mg.tensor(a)), torch.linalg.lu_factor_ex(torch.tensor(a))
    for x, y in zip(ours, theirs):
        np.testing.assert_allclose(x.numpy(), y.numpy(), atol=1e-15)
    assert ours.info.dtype == mg.int32 and ours.pivots.dtype == mg.int32
    with pytest.raises(LinAlgError, match=r"\(Batch element 1\): U\[3,3\] is zero and using "
                                          "it on lu_solve would result in a division by zero"):
        mg.linalg.lu_factor(mg.tensor(a))
    # the legacy torch.lu factors a singular matrix without a word (check_errors there
    # refuses only illegal arguments)
    for x, y in zip(mg.lu(mg.tensor(a)), torch.lu(torch.tensor(a))):
        np.testing.assert_allclose(x.numpy(), y.numpy(), atol=1e-15)
    assert mg.lu(mg.tensor(a), get_infos=True)[2].tolist() == [0, 3]
    with pytest.raises(RuntimeError, match="without pivoting is not implemented"):
        mg.linalg.lu_factor(mg.eye(2), pivot=False)
    with pytest.raises(RuntimeError, match="B must have at least 2 dimensions"):
        mg.linalg.lu_solve(*mg.linalg.lu_factor(mg.eye(2)), mg.ones(2))


def test_complex_pivots_are_lapacks() -> None:
    """getrf picks the pivot of largest |re| + |im| (izamax), not of largest |z|: the column
    [3, 2 + 2i] pivots on its second row (|z| would pick the first)."""
    torch = pytest.importorskip("torch")
    a = np.array([[3.0, 1.0], [2.0 + 2.0j, 1.0]])
    ours, theirs = mg.linalg.lu_factor(mg.tensor(a)), torch.linalg.lu_factor(torch.tensor(a))
    assert ours.pivots.tolist() == theirs.pivots.tolist() == [2, 2]
    np.testing.assert_allclose(ours.LU.numpy(), theirs.LU.numpy(), rtol=1e-14)
