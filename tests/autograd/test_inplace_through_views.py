"""In-place ops through views while recording (issue 26, section 3), side by side with torch.

Each case writes through a view of a non-leaf (torch's CopySlices: the write is recorded on
the view's base); its outputs, the leaves' gradients and any retained gradients must equal
torch's, and gradcheck (float64, finite differences) must pass, so a torch quirk cannot hide
a wrong number. The errors torch raises are compared the same way. Skips without torch.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pytest

import minigrad as mg

torch = pytest.importorskip("torch")

X = np.array([1.5, -2.0, 3.0, 0.5])
M = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [3.0, -2.5, 1.25]])
W = np.array([0.75, -1.25])

CASES: dict[str, Callable] = {}


def case(fn: Callable) -> Callable:
    CASES[fn.__name__] = fn
    return fn


# Each case takes the library and the leaves x (4,), m (3, 3), w (2,) and returns the tensors
# the loss is built from, and (optionally) tensors whose retained .grad is compared.
@case
def clone_slice_mul_(L, x, m, w):
    y = x.clone()
    y[:2].mul_(2)
    return [y]


@case
def setitem_number_on_view(L, x, m, w):
    y = x * 1
    v = y[1:]
    v[0] = 10.0
    return [y, v]


@case
def setitem_tensor_on_view(L, x, m, w):
    y = x * 1
    v = y[1:]
    v[1:] = w * 3
    return [y]


@case
def add_tensor_on_view(L, x, m, w):
    y = x * 1
    y[:2].add_(w)
    return [y]


@case
def sub_alpha_on_view(L, x, m, w):
    y = x * 1
    y[2:].sub_(w, alpha=-2)
    return [y]


@case
def zero_on_view(L, x, m, w):
    y = x * 1
    y[1:3].zero_()
    return [y]


@case
def fill_on_column(L, x, m, w):
    m2 = m * 1
    m2[:, 1].fill_(7.0)
    return [m2]


@case
def copy_into_strided_view(L, x, m, w):
    y = x * 1
    y[::2].copy_(w * w)
    return [y]


@case
def copy_broadcast_source(L, x, m, w):
    y = x * 1
    y[1:3].copy_(w[:1])
    return [y]


@case
def imul_by_tensor_on_view(L, x, m, w):  # the old value is needed for w's gradient
    y = x * 1
    v = y[1:3]
    v *= w
    return [y, v]


@case
def iadd_on_view_of_view(L, x, m, w):
    y = x * 1
    v = y[1:][:2]
    v += 1
    return [y, v]


@case
def mul_on_view_of_view_2d(L, x, m, w):
    m2 = m * 1
    m2[1:][:, :2].mul_(w)
    return [m2]


@case
def views_taken_before_the_write_follow_it(L, x, m, w):
    y = x * 1
    d, e = y[...], y[2:]
    y[:2].mul_(3)
    return [d, e]


@case
def overlapping_views(L, x, m, w):
    y = x * 1
    a, b = y[:3], y[1:]
    a.mul_(2)
    return [a, b, y]


@case
def copy_from_another_region(L, x, m, w):
    y = x * 1
    y[:2].copy_(y[2:])
    return [y]


@case
def setitem_from_a_view_repeated(L, x, m, w):
    y = x * 1
    dangling = y[...]
    for _ in range(3):  # the later writes change nothing, but are recorded
        y[:2] = y[-2:]
    return [y, dangling]


@case
def setitem_from_downstream_of_a_view(L, x, m, w):
    y = x * 1
    v = y[1:]
    v[:2] = v[-2:] * 2
    return [y]


@case
def setitem_broadcast_seen_by_a_view(L, x, m, w):
    t = m * 1
    u = t[None]
    t[:2] = m[:1]
    return [u * t]


@case
def row_of_transpose(L, x, m, w):
    m2 = m * 1
    m2.T[0].mul_(2)
    return [m2]


@case
def block_of_transpose(L, x, m, w):
    m2 = m * 1
    m2.T[1:, :2].add_(w)
    return [m2]


@case
def row_of_reshape(L, x, m, w):
    y = x * 1
    y.view(2, 2)[1].mul_(w)
    return [y]


@case
def slice_of_unsqueeze(L, x, m, w):
    y = x * 1
    y.unsqueeze(0)[0, 1:3].sub_(w)
    return [y]


@case
def select_and_narrow(L, x, m, w):
    m2 = m * 1
    m2.select(1, 2).mul_(3)
    m2.narrow(0, 1, 2).add_(1)
    return [m2]


@case
def zero_dim_view(L, x, m, w):
    y = x * 1
    y[1].mul_(5)
    return [y]


@case
def diagonal_mul_by_tensor(L, x, m, w):
    m2 = m * 1
    m2.diagonal().mul_(x[:3])
    return [m2]


@case
def offset_diagonal_copy(L, x, m, w):
    m2 = m * 1
    m2.diagonal(1).copy_(w)
    return [m2]


@case
def einsum_diagonal_zero(L, x, m, w):
    m2 = m * 1
    L.einsum("ii->i", m2).zero_()
    return [m2]


@case
def einsum_diagonal_of_transposes(L, x, m, w):
    m2 = m * 1
    d = L.einsum("ii->i", m2.T.T)
    d.copy_(x[:3])
    return [d * m2[0]]


@case
def base_then_view_then_base(L, x, m, w):
    y = x * 1
    v = y[1:3]
    y.mul_(2)
    v.add_(w)
    y.exp_()
    return [y, v]


@case
def ipow_on_view(L, x, m, w):
    y = x * 1
    v = y[:3]
    v **= 2
    return [y]


@case
def pow_tensor_exponent_on_view(L, x, m, w):
    y = x.abs() + 1
    y[1:3].pow_(w)
    return [y]


@case
def div_on_strided_view(L, x, m, w):
    y = x * 1 + 3
    y[::3].div_(w)
    return [y]


@case
def unary_in_place_ops_on_views(L, x, m, w):
    y = x * 1
    y[2:].masked_fill_(y[2:] > 0.9, 0.0)
    y[1:].clamp_(-1, 1)
    y[:2].exp_()  # last: torch's exp_ saves its result, which a later write would change
    return [y]


@case
def constant_base_gets_a_graph(L, x, m, w):
    z = L.zeros(4, dtype=L.float64)
    z[1:3].add_(w * 2)
    return [z]


@case
def multiple_view_functions(L, x, m, w):
    xx = m * 1
    col = xx[:, 2]
    y2 = col[:-1]
    y2 *= L.tensor([2.0, 3.0], dtype=L.float64)
    return [m, xx, y2]


@case
def retained_root_then_setitem(L, x, m, w):  # the issue's case: y.grad of the new y
    y = x * 1
    y.retain_grad()
    y[0] = 10.0
    return [y * y], [y]


@case
def retained_base_then_view_write(L, x, m, w):
    y = x * 1
    y.retain_grad()
    y[:2].mul_(2)
    return [y * y], [y]


@case
def retained_view_then_base_write(L, x, m, w):
    y = x * 1
    v = y[:2]
    v.retain_grad()
    y.mul_(3)
    return [v * v], [v]


@case
def retained_view_then_its_own_write(L, x, m, w):
    y = x * 1
    v = y[:2]
    v.retain_grad()
    v.mul_(3)
    return [y * y, v], [v]


def _loss(L, outs):
    total = 0
    for k, o in enumerate(outs):
        c = np.linspace(0.5, 1.7 + k, o.numel()).reshape(tuple(o.shape))
        total = total + (o * L.tensor(c, dtype=L.float64)).sum()
    return total


def _run(lib, fn: Callable) -> tuple[list, list, list]:
    leaves = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in (X, M, W)]
    got = fn(lib, *leaves)
    outs, retained = got if isinstance(got[0], list) else (got, [])
    _loss(lib, outs).backward()

    def arr(t):
        return None if t is None else np.array(t.detach().numpy())
    return ([arr(o) for o in outs], [arr(t.grad) for t in leaves],
            [arr(t.grad) for t in retained])


@pytest.mark.parametrize("name", list(CASES))
def test_in_place_through_views_matches_torch(name: str) -> None:
    ours, theirs = _run(mg, CASES[name]), _run(torch, CASES[name])
    for part, a, b in zip(("outputs", "leaf grads", "retained grads"), ours, theirs):
        assert len(a) == len(b)
        for i, (u, v) in enumerate(zip(a, b)):
            assert (u is None) == (v is None), f"{part}[{i}]: {u} vs {v}"
            if u is not None:
                np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-12,
                                           err_msg=f"{part}[{i}]")


@pytest.mark.parametrize("name", list(CASES))
def test_in_place_through_views_gradcheck(name: str) -> None:
    leaves = [mg.tensor(a, dtype=mg.float64, requires_grad=True) for a in (X, M, W)]
    assert mg.autograd.gradcheck(lambda *ls: _loss(mg, _outs(mg, CASES[name], ls)), leaves)


SECOND_ORDER = ["imul_by_tensor_on_view", "copy_from_another_region", "diagonal_mul_by_tensor",
                "base_then_view_then_base", "pow_tensor_exponent_on_view",
                "multiple_view_functions", "setitem_broadcast_seen_by_a_view"]


def _outs(lib, fn: Callable, leaves: list) -> list:
    got = fn(lib, *leaves)
    return got[0] if isinstance(got[0], list) else got


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_second_derivatives_through_the_rewritten_base(name: str) -> None:
    leaves = [mg.tensor(a, dtype=mg.float64, requires_grad=True) for a in (X, M, W)]
    assert mg.autograd.gradgradcheck(lambda *ls: tuple(_outs(mg, CASES[name], ls)), leaves)


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_second_derivatives_match_torch(name: str) -> None:
    results = []
    for lib in (mg, torch):
        leaves = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in (X, M, W)]
        loss = _loss(lib, [o * o * o for o in _outs(lib, CASES[name], leaves)])
        grads = lib.autograd.grad(loss, leaves, create_graph=True, allow_unused=True)
        total = sum((g * g).sum() for g in grads if g is not None)
        second = lib.autograd.grad(total, leaves, allow_unused=True)
        results.append([None if g is None else g.detach().numpy() for g in second])
    for ours, theirs in zip(*results):
        assert (ours is None) == (theirs is None)
        if ours is not None:
            np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def test_the_issue_example() -> None:
    x = mg.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = x.clone()
    y[:2].mul_(2)
    y.sum().backward()
    assert y.tolist() == [2.0, 4.0, 3.0, 4.0]
    assert x.grad.tolist() == [2.0, 2.0, 1.0, 1.0]
    x = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    y.retain_grad()
    y[0] = 10
    (y * y).sum().backward()
    assert y.grad.tolist() == [20.0, 4.0, 6.0]  # 2 y of the y after the write


def test_the_base_takes_the_write_and_the_view_is_redone_from_it() -> None:
    x = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    v = y[1:]
    before = v.grad_fn
    v.mul_(2)
    assert y.grad_fn.name() == "WriteViewBackward"
    assert v.grad_fn is not before and v.grad_fn.name() == "GetItemBackward"
    assert v._base is y and y._version == v._version == 1


def test_views_kept_among_many_dropped_are_still_redone() -> None:
    # a root's record of its views drops the dead ones as it grows: those kept alive past
    # that must still be redone from the write, with gradients through it
    w = mg.tensor([2.0, 3.0], requires_grad=True)
    y = mg.zeros(2)
    kept = []
    for i in range(300):
        v = y.t() if i % 2 else y.reshape(2, 1)  # most made and dropped
        if i % 50 == 1:
            kept.append(v)
    assert len(y._views) < 2 * len(kept) + 64
    y.add_(w)
    assert all(v.grad_fn is not None and v.grad_fn.name() == "PermuteBackward" for v in kept)
    sum(v * (i + 1) for i, v in enumerate(kept)).sum().backward()
    assert w.grad.tolist() == [21.0, 21.0]  # 1 + 2 + ... + 6


# ---- torch's refusals ---------------------------------------------------------------------
def _view_of_leaf(L, x):
    x[:2].mul_(2)


def _setitem_on_view_of_leaf(L, x):
    v = x[1:]
    v[0] = 1.0


def _saved_base_changed_through_view(L, x):
    y = x * 1
    z = y * y
    y[1:].add_(1)
    z.sum().backward()


def _saved_view_changed_through_base(L, x):
    y = x * 1
    v = y[:2]
    z = (v * v).sum()
    y.mul_(2)
    z.backward()


def _saved_base_changed_through_view_of_view(L, x):
    y = x * 1
    z = y.sin()  # saves y
    y[1:][:1].zero_()
    z.sum().backward()


def _view_times_itself(L, x):  # mul_ saved its operand, the view the write then changes
    y = x * 1
    v = y[:2]
    v.mul_(v)
    y.sum().backward()


def _view_made_under_no_grad(L, x):
    y = x * 1
    with L.no_grad():
        v = y[:2]
    v.mul_(2)


def _expanded_view(L, x):
    y = (x * 1)[:1].expand(3)
    y.mul_(2)


def _result_larger_than_the_view(L, x):
    (x * 1)[1:3].add_(L.ones(2, 2, dtype=L.float64))


def _leaf(L, x):
    x.mul_(2)


REFUSALS = [
    (_view_of_leaf, "a view of a leaf Variable that requires grad is being used in an in-place "
     "operation."),
    (_setitem_on_view_of_leaf, "a view of a leaf Variable that requires grad"),
    (_saved_base_changed_through_view, "one of the variables needed for gradient computation "
     "has been modified by an inplace operation"),
    (_saved_view_changed_through_base, "modified by an inplace operation"),
    (_saved_base_changed_through_view_of_view, "modified by an inplace operation"),
    (_view_times_itself, "modified by an inplace operation"),
    (_view_made_under_no_grad, "A view was created in no_grad mode and is being modified "
     "inplace with grad mode enabled"),
    (_expanded_view, "more than one element of the written-to tensor refers to a single "
     "memory location"),
    (_result_larger_than_the_view, "output with shape [2] doesn't match the broadcast shape "
     "[2, 2]"),
    (_leaf, "a leaf Variable that requires grad is being used in an in-place operation"),
]


@pytest.mark.parametrize("fn, message", REFUSALS, ids=[f.__name__ for f, _ in REFUSALS])
def test_refusals_match_torch(fn: Callable, message: str) -> None:
    for lib in (torch, mg):
        x = lib.tensor(X, dtype=lib.float64, requires_grad=True)
        with pytest.raises(RuntimeError, match=re.escape(message)):
            fn(lib, x)


def test_a_refused_write_leaves_the_graph_as_it_was() -> None:
    x = mg.tensor(X, requires_grad=True)
    y = x * 2
    v = y[:1].expand(3)
    with pytest.raises(RuntimeError, match="single memory location"):
        v.mul_(x[:3])
    assert y.tolist() == (2 * X).tolist() and y._version == 0
    y.sum().backward()
    assert x.grad.tolist() == [2.0] * 4


# ---- views the issue named --------------------------------------------------------------
def test_ipow_writes_in_place() -> None:
    t = mg.tensor([1.0, 2.0, 3.0])
    v = t[:2]
    t **= 2
    assert v.tolist() == [1.0, 4.0]
    t2 = t
    t **= mg.tensor([1.0, 0.5, 2.0])
    assert t is t2 and t.tolist() == [1.0, 2.0, 81.0]


@pytest.mark.parametrize("make", [lambda L, a: a.diagonal(), lambda L, a: a.diagonal(-1),
                                  lambda L, a: a.diagonal(0, 1, 2),
                                  lambda L, a: L.einsum("ii->i", a[0]),
                                  lambda L, a: L.einsum("...ii->...i", a),
                                  lambda L, a: L.einsum("iij->ij", a),
                                  lambda L, a: L.einsum("ijk->ijk", a)])
def test_diagonals_and_einsum_views_write_through_like_torch(make: Callable) -> None:
    results = []
    for L in (mg, torch):
        a = L.tensor(np.arange(27.0).reshape(3, 3, 3))
        d = make(L, a)
        assert d._base is a
        d.mul_(-1)
        results.append(a.numpy().copy())
    np.testing.assert_array_equal(*results)


def test_diag_of_a_matrix_stays_a_copy_as_in_torch() -> None:
    a = mg.eye(2)
    d = a.diag()
    assert d._base is None
    d.add_(1)
    assert a.tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_basic_indexing_of_an_empty_tensor_is_a_view() -> None:
    x = mg.zeros(0, 3)
    for v in (x[...], x[:, 1:], x.reshape(3, 0), x.T):
        assert v._base is x and v._version_counter is x._version_counter


def test_version_is_an_int_shared_with_views() -> None:
    x = mg.zeros(3)
    v = x[1:]
    assert type(x._version) is int and x._version == 0
    v.add_(1)
    assert x._version == v._version == 1
    with pytest.raises(AttributeError):
        x._version = 5  # read-only, as torch's
