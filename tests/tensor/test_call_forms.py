"""Call forms torch accepts that minigrad once refused or misread: arguments by torch's keyword
names (``x.permute(dims=...)``, ``mg.zeros(size=...)``, ``x.pow(exponent=2)``), older
positional spellings (``x.std(False)``, ``mg.randint(high, size)``, ``mg.where(cond)``) and
arguments that were missing (``rounding_mode``, ``equal_nan``, ``reduce``, ``force``).

Each row is one call, run on minigrad and checked against numpy's answer; beside torch (when
installed) the same call must give the same values, dtype and shape."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd import gradcheck

A = np.arange(6.0).reshape(2, 3)  # float64 in both libraries
S = np.array([7, -7, 8, -9])
NAN = np.array([1.0, np.nan])


def _t(lib: Any, a: np.ndarray) -> Any:
    return lib.tensor(a)


# (id, the call on a library, numpy's answer). Random draws compare their shape and dtype
# only: the answer is then an array of that shape and dtype.
FORMS: list[tuple[str, Callable, Any]] = [
    # sizes and dims by torch's keyword
    ("reshape(shape=)", lambda m: _t(m, A).reshape(shape=(3, 2)), A.reshape(3, 2)),
    ("mg.reshape(shape=)", lambda m: m.reshape(_t(m, A), shape=(-1,)), A.reshape(-1)),
    ("view(size=)", lambda m: _t(m, A).view(size=(3, 2)), A.reshape(3, 2)),
    ("permute(dims=)", lambda m: _t(m, A).permute(dims=(1, 0)), A.T),
    ("mg.permute(dims=)", lambda m: m.permute(_t(m, A), dims=[1, 0]), A.T),
    ("expand(size=)", lambda m: _t(m, A[:1]).expand(size=(2, 3)), np.repeat(A[:1], 2, 0)),
    ("broadcast_to(size=)", lambda m: _t(m, A[:1]).broadcast_to(size=(2, 3)),
     np.repeat(A[:1], 2, 0)),
    ("mg.broadcast_to(input=, size=)", lambda m: m.broadcast_to(input=_t(m, A[0]), size=(2, 3)),
     np.stack([A[0], A[0]])),
    ("repeat(repeats=)", lambda m: _t(m, A).repeat(repeats=(2, 1)), np.tile(A, (2, 1))),
    ("tile(dims=)", lambda m: _t(m, A).tile(dims=(2,)), np.tile(A, 2)),
    ("flip(dims=)", lambda m: _t(m, A).flip(dims=(0,)), A[::-1]),
    ("mg.flip(dims=)", lambda m: m.flip(_t(m, A), dims=[0, 1]), A[::-1, ::-1]),
    ("sum_to_size(size=)", lambda m: _t(m, A).sum_to_size(size=(1, 3)), A.sum(0, keepdims=True)),
    ("new_zeros(size=)", lambda m: _t(m, A).new_zeros(size=(2,)), np.zeros(2)),
    ("new_ones(size=)", lambda m: _t(m, A).new_ones(size=[1, 2]), np.ones((1, 2))),
    ("zeros(size=)", lambda m: m.zeros(size=(2, 3)), np.zeros((2, 3), np.float32)),
    ("ones(size=)", lambda m: m.ones(size=[2]), np.ones(2, np.float32)),
    ("empty(size=)", lambda m: m.empty(size=(1, 2)).zero_(), np.zeros((1, 2), np.float32)),
    ("rand(size=)", lambda m: m.rand(size=(2, 3)), np.empty((2, 3), np.float32)),
    ("randn(size=)", lambda m: m.randn(size=(4,), dtype=m.float64), np.empty(4)),
    ("zeros_like(input=)", lambda m: m.zeros_like(input=_t(m, A)), np.zeros((2, 3))),
    ("full_like(input=)", lambda m: m.full_like(input=_t(m, A), fill_value=2),
     np.full((2, 3), 2.0)),
    # creation's torch spellings
    ("arange(end=)", lambda m: m.arange(end=4), np.arange(4)),
    ("arange(1, end=)", lambda m: m.arange(1, end=4), np.arange(1, 4)),
    ("randint(high, size)", lambda m: m.randint(5, (3,)), np.empty(3, np.int64)),
    ("randint(high=, size=)", lambda m: m.randint(high=5, size=(2, 2)), np.empty((2, 2), np.int64)),
    ("randint(low, high, size=)", lambda m: m.randint(3, 4, size=(2,)), np.full(2, 3)),
    # operands by torch's names
    ("pow(exponent=)", lambda m: _t(m, A).pow(exponent=2), A ** 2),
    ("mg.pow(input=, exponent=)", lambda m: m.pow(input=_t(m, A), exponent=3), A ** 3),
    ("mg.pow(number, tensor)", lambda m: m.pow(2, _t(m, A)), 2 ** A),
    ("eq(other=)", lambda m: _t(m, A).eq(other=_t(m, A.T.copy().reshape(2, 3))),
     A == A.T.reshape(2, 3)),
    ("lt(other=)", lambda m: _t(m, A).lt(other=2.0), A < 2),
    ("ge(other=)", lambda m: _t(m, A).ge(other=2.0), A >= 2),
    ("mul(other=)", lambda m: _t(m, A).mul(other=3), A * 3),
    ("div(other=)", lambda m: _t(m, A).div(other=4), A / 4),
    ("floor_divide(other=)", lambda m: _t(m, A).floor_divide(other=4), A // 4),
    ("remainder(other=)", lambda m: _t(m, A).remainder(other=4), A % 4),
    ("mm(mat2=)", lambda m: _t(m, A).mm(mat2=_t(m, A.T.copy())), A @ A.T),
    ("mg.mm(input, mat2=)", lambda m: m.mm(_t(m, A), mat2=_t(m, A.T.copy())), A @ A.T),
    ("mg.matmul(input=, other=)", lambda m: m.matmul(input=_t(m, A), other=_t(m, A.T.copy())),
     A @ A.T),
    ("mg.add(input=, other=, alpha=)", lambda m: m.add(input=_t(m, A), other=1.0, alpha=2),
     A + 2),
    ("mg.mul(input=, other=)", lambda m: m.mul(input=_t(m, A), other=2), A * 2),
    # rounding_mode
    ("div(rounding_mode=floor)", lambda m: _t(m, S).div(2, rounding_mode="floor"), S // 2),
    ("div(rounding_mode=trunc)", lambda m: _t(m, S).div(2, rounding_mode="trunc"),
     np.trunc(S / 2).astype(np.int64)),
    ("mg.div(rounding_mode=)", lambda m: m.div(_t(m, A), -4, rounding_mode="trunc"),
     np.trunc(A / -4)),
    ("mg.div(number, tensor, rounding_mode=)",
     lambda m: m.div(7, _t(m, S), rounding_mode="floor"), 7 // S),
    ("int tensor by float tensor, floored", lambda m: m.div(_t(m, S), _t(m, A[0, 1:3].repeat(2)),
                                                              rounding_mode="floor"),
     np.floor(S / A[0, 1:3].repeat(2))),
    ("div_(rounding_mode=)", lambda m: _t(m, S).div_(2, rounding_mode="trunc"),
     np.trunc(S / 2).astype(np.int64)),
    # older positional spellings
    ("std(False)", lambda m: _t(m, A).std(False), np.std(A)),
    ("std(True)", lambda m: _t(m, A).std(True), np.std(A, ddof=1)),
    ("var(False)", lambda m: _t(m, A).var(False), np.var(A)),
    ("mg.var(input, False)", lambda m: m.var(_t(m, A), False), np.var(A)),
    ("std(dim, False, True)", lambda m: _t(m, A).std(1, False, True),
     np.std(A, 1, keepdims=True)),
    ("mg.where(condition)", lambda m: m.where(_t(m, A) > 1.5), np.nonzero(A > 1.5)),
    ("argmax(keepdim=True)", lambda m: _t(m, A).argmax(keepdim=True), np.array([[5]])),
    ("argmin(dim=None, keepdim=True)", lambda m: _t(m, A).argmin(dim=None, keepdim=True),
     np.array([[0]])),
    # missing arguments
    ("allclose(equal_nan=True)", lambda m: m.allclose(_t(m, NAN), _t(m, NAN), equal_nan=True),
     True),
    ("allclose(nan)", lambda m: _t(m, NAN).allclose(_t(m, NAN)), False),
    ("scatter(reduce=add)", lambda m: _t(m, A).scatter(1, m.tensor([[0, 0], [2, 1]]),
                                                       _t(m, A[:, :2] + 10), reduce="add"),
     A + [[21, 0, 0], [0, 14, 13]]),
    ("scatter(number, reduce=multiply)",
     lambda m: _t(m, A).scatter(0, m.tensor([[1, 0, 1]]), 2.0, reduce="multiply"),
     A * [[1, 2, 1], [2, 1, 2]]),
    ("scatter_(reduce=add)", lambda m: _t(m, A).scatter_(1, m.tensor([[0], [0]]), 1.0,
                                                         reduce="add"),
     A + [[1, 0, 0], [1, 0, 0]]),
    ("numpy(force=True)", lambda m: m.tensor(A, requires_grad=True).numpy(force=True), A),
    # tensor_split's indices count from the end when negative, as slices'
    ("tensor_split([1, -1])", lambda m: m.arange(5).tensor_split([1, -1]),
     np.split(np.arange(5), [1, 4])),
    ("tensor_split([-1, 1])", lambda m: m.arange(5).tensor_split([-1, 1]),
     [np.arange(4), np.arange(0), np.arange(1, 5)]),
    ("tensor_split([-9])", lambda m: m.arange(5).tensor_split((-9,)),
     [np.arange(0), np.arange(5)]),
    ("hsplit([-1])", lambda m: _t(m, A).hsplit([-1]), np.hsplit(A, [2])),
    ("vsplit((-1,))", lambda m: _t(m, A).vsplit((-1,)), np.vsplit(A, [1])),
]
RANDOM = {"rand(size=)", "randn(size=)", "randint(high, size)", "randint(high=, size=)"}
IDS = [f[0] for f in FORMS]


def _check(ours: Any, want: Any, values: bool = True) -> None:
    if isinstance(want, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(want)
        for o, w in zip(ours, want):
            _check(o, w, values)
        return
    if isinstance(want, bool):
        assert ours is want
        return
    got = ours if isinstance(ours, np.ndarray) else ours.detach().numpy()
    want = np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, want.dtype)
    if values:
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("name, call, want", FORMS, ids=IDS)
def test_torchs_call_forms_give_numpys_answer(name, call, want) -> None:
    _check(call(mg), want, values=name not in RANDOM)


def test_a_size_given_twice_is_a_type_error() -> None:
    x = mg.ones(2, 3)
    for call in (lambda: x.reshape(6, shape=(6,)), lambda: x.permute(1, 0, dims=(1, 0)),
                 lambda: mg.zeros(2, size=(2,)), lambda: x.view(6, size=6),
                 lambda: x.flip(0, dims=0)):
        with pytest.raises(TypeError, match="multiple values"):
            call()


def test_randint_draws_in_its_range_and_rounding_modes_refuse_others() -> None:
    draws = mg.randint(5, (1000,)).numpy()
    assert draws.min() == 0 and draws.max() == 4
    assert set(mg.randint(3, 5, size=(200,)).tolist()) == {3, 4}
    with pytest.raises(ValueError, match="rounding_mode"):
        mg.tensor(A).div(2, rounding_mode="round")
    with pytest.raises(RuntimeError, match="add or multiply"):
        mg.tensor(A).scatter(0, mg.tensor([[0]]), 1.0, reduce="sum")
    with pytest.raises(RuntimeError, match="requires grad"):
        mg.tensor(A, requires_grad=True).numpy()


def test_the_new_forms_differentiate() -> None:
    x = mg.tensor(A + 1.0, requires_grad=True)
    src = mg.tensor(A[:, :2] + 0.5, requires_grad=True)
    index = mg.tensor([[0, 0], [2, 1]])
    assert gradcheck(lambda t, s: t.scatter(1, index, s, reduce="add"), (x, src))
    assert gradcheck(lambda t, s: t.scatter(1, index, s, reduce="multiply"), (x, src))
    assert gradcheck(lambda t: t.scatter(0, mg.tensor([[1, 0, 1]]), 2.0, reduce="multiply"),
                     (x,))
    assert gradcheck(lambda t: t.std(False), (x,))
    assert gradcheck(lambda t: t.pow(exponent=3).permute(dims=(1, 0)).flip(dims=(0,)), (x,))
    assert gradcheck(lambda t: t.reshape(shape=(3, 2)).expand(size=(2, 3, 2)), (x,))
    assert gradcheck(lambda t: t.tensor_split([1, -1], dim=1)[1], (x,))
    y = mg.tensor(A + 0.3, requires_grad=True)
    y.div(2, rounding_mode="floor").sum().backward()  # piecewise constant: a zero gradient
    assert y.grad.tolist() == np.zeros((2, 3)).tolist()


@pytest.mark.parametrize("name, call, want", FORMS, ids=IDS)
def test_torchs_call_forms_match_torch(name, call, want) -> None:
    torch = pytest.importorskip("torch")

    def as_numpy(r: Any) -> Any:
        if isinstance(r, (tuple, list)):
            return [as_numpy(x) for x in r]
        return r if isinstance(r, (bool, np.ndarray)) else r.detach().numpy()

    _check(call(mg), as_numpy(call(torch)), values=name not in RANDOM)


def test_numpy_force_shares_memory_as_torchs_detach_numpy() -> None:
    t = mg.ones(2, requires_grad=True)
    t.numpy(force=True)[0] = 5.0
    assert t.tolist() == [5.0, 1.0]
    with pytest.raises(RuntimeError, match="requires grad"):
        t.numpy()


def test_randint_reads_a_0d_tensor_bound_and_a_size() -> None:
    assert mg.randint(3, mg.tensor(5), (4,)).shape == (4,)
    assert mg.randint(5, (2, 3)).shape == (2, 3) and mg.randint(2, 5).shape == ()
    v = mg.randint(3, mg.tensor(5), (200,)).numpy()
    assert v.min() >= 3 and v.max() <= 4


@pytest.mark.parametrize("a, b, message", [
    ((2, 3), (4, 5), "tensor a (3) must match the size of tensor b (5) at non-singleton "
                     "dimension 1"),
    ((3,), (2, 3, 4), "tensor a (3) must match the size of tensor b (4) at non-singleton "
                      "dimension 2"),
    ((5, 2, 3), (4, 1, 3), "tensor a (5) must match the size of tensor b (4) at "
                           "non-singleton dimension 0"),
])
def test_shapes_that_do_not_broadcast_get_torchs_error(a, b, message) -> None:
    """Every op's (Function.apply's), cross's included: the rightmost clashing dim."""
    for call in (lambda x, y: x + y, lambda x, y: x * y):
        with pytest.raises(RuntimeError, match=re.escape(message)):
            call(mg.ones(*a), mg.ones(*b))
    try:
        import torch
    except ImportError:
        return
    with pytest.raises(RuntimeError, match=re.escape(message)):
        torch.ones(*a) + torch.ones(*b)
