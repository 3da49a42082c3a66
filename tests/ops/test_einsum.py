"""mg.einsum and mg.tensordot: values against numpy.einsum over hypothesis-drawn subscripts,
torch's parsing rules and errors, gradients of first and second order, the contraction path."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad.autograd import gradcheck, gradgradcheck
from minigrad.einsum import _next_pair

LETTERS = "abcdA"


@st.composite
def einsum_cases(draw):
    """An equation with 1-3 operands (repeated subscripts, an ellipsis with size-1 broadcast
    dims, implicit or explicit output) and matching float64 operands."""
    sizes = {lab: draw(st.integers(1, 3)) for lab in LETTERS}
    ell = draw(st.lists(st.integers(1, 3), max_size=2))
    terms, shapes, any_ell = [], [], False
    for _ in range(draw(st.integers(1, 3))):
        labs = draw(st.lists(st.sampled_from(LETTERS), max_size=3))
        shape = [sizes[lab] for lab in labs]
        term = "".join(labs)
        if ell and draw(st.booleans()):
            any_ell = True
            at = draw(st.integers(0, len(labs)))
            mine = ell[len(ell) - draw(st.integers(0, len(ell))):]
            mine = [1 if draw(st.booleans()) else d for d in mine]  # broadcasts
            term = "".join(labs[:at]) + "..." + "".join(labs[at:])
            shape = shape[:at] + mine + shape[at:]
        terms.append(term)
        shapes.append(tuple(shape))
    eq = ",".join(terms)
    if draw(st.booleans()):
        seen = sorted({ch for t in terms for ch in t if ch != "."})
        out = draw(st.permutations(seen))[:draw(st.integers(0, len(seen)))]
        out = "".join(out)
        if any_ell:  # numpy cannot sum over an ellipsis (torch can: tested below)
            at = draw(st.integers(0, len(out)))
            out = out[:at] + "..." + out[at:]
        eq += "->" + out
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    return eq, [rng.standard_normal(s) for s in shapes]


@settings(max_examples=150, deadline=None)
@given(einsum_cases())
def test_matches_numpy_einsum(case):
    eq, arrays = case
    out = mg.einsum(eq, *[mg.tensor(a) for a in arrays])
    ref = np.einsum(eq, *arrays)
    assert out.shape == ref.shape
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(einsum_cases())
def test_gradients_of_drawn_equations(case):
    eq, arrays = case
    ts = [mg.tensor(a, requires_grad=True) for a in arrays]
    assert gradcheck(lambda *xs: mg.einsum(eq, *xs), ts, fast_mode=True)


@pytest.mark.parametrize("eq, shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ii->i", [(3, 3)]),
    ("bij,bjk,bkl->bil", [(2, 2, 3), (2, 3, 2), (2, 2, 2)]),
    ("...ij,...j->...i", [(2, 3, 3), (3,)]),
    ("i,i,i->", [(4,), (4,), (4,)]),
])
def test_second_order(eq, shapes):
    rng = np.random.default_rng(0)
    ts = [mg.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes]
    assert gradgradcheck(lambda *xs: mg.einsum(eq, *xs), ts)


def test_matches_torch_values_and_gradients():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s) for s in [(2, 3, 4), (4, 5), (5, 3, 2)]]
    eq = "abc,cd,dbe->ae"
    ts = [mg.tensor(a, requires_grad=True) for a in arrays]
    tt = [torch.tensor(a, requires_grad=True) for a in arrays]
    w = rng.standard_normal((2, 2))
    (mg.einsum(eq, *ts) * mg.tensor(w)).sum().backward()
    (torch.einsum(eq, *tt) * torch.tensor(w)).sum().backward()
    for a, b in zip(ts, tt):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-13)


def test_torch_forms_list_and_sublist_and_spaces():
    a, b = mg.ones(2, 3), mg.ones(3, 4)
    assert mg.einsum("ij,jk->ik", [a, b]).shape == (2, 4)
    assert mg.einsum(a, [0, 1], b, [1, 2], [0, 2]).shape == (2, 4)
    assert mg.einsum(a, [0, 1], b, [1, 2]).shape == (2, 4)
    assert mg.einsum(a, [Ellipsis, 1], b, [1, 2], [Ellipsis, 2]).shape == (2, 4)
    assert mg.einsum(" i j , j k -> i k ", a, b).shape == (2, 4)


def test_size_one_subscripts_broadcast_as_in_torch():
    out = mg.einsum("ij,jk->ik", mg.ones(2, 1), mg.ones(3, 4))
    np.testing.assert_array_equal(out.numpy(), np.full((2, 4), 3.0))


def test_implicit_output_is_ascii_order_after_the_ellipsis():
    assert mg.einsum("bA", mg.ones(2, 3)).shape == (3, 2)
    assert mg.einsum("i...->...", mg.ones(2, 3)).shape == (3,)
    assert mg.einsum("...ij->ij", mg.ones(2, 3, 4)).shape == (3, 4)  # summed, as in torch


@pytest.mark.parametrize("args, match", [
    (("ij,jk", mg.ones(2, 3), mg.ones(2, 3)), "subscript j has size 2 for operand 1 which does "
                                             "not broadcast with previously seen size 3"),
    (("ij->k", mg.ones(2, 3)), "output subscript k does not appear"),
    (("ij,jk->ik", mg.ones(2, 3)), "fewer operands"),
    (("ij", mg.ones(2, 3), mg.ones(2)), "more operands"),
    (("ii->i", mg.ones(2, 3)), "subscript i is repeated for operand 0 but the sizes don't "
                              "match, 3 != 2"),
    (("ij->ii", mg.ones(2, 2)), "output subscript i appears more than once"),
    (("ij", mg.ones(2, 3, 4)), r"number of subscripts in the equation \(2\) does not match"),
    (("i..j", mg.ones(2, 3)), "not part of any ellipsis"),
    (("i1", mg.ones(2, 3)), "subscripts must be in"),
    (("...i...", mg.ones(2, 3)), "ellipsis was already found"),
])
def test_errors_follow_torch(args, match):
    with pytest.raises(RuntimeError, match=match):
        mg.einsum(*args)


def test_path_contracts_the_cheap_pair_first():
    # (2x100) (100x100) (100x2): contracting the vectors-ish ends first costs ~100x less.
    ts = [(mg.ones(2, 100), list("ab")), (mg.ones(100, 100), list("bc")),
          (mg.ones(100, 2), list("cd"))]
    sizes = {"a": 2, "b": 100, "c": 100, "d": 2}
    assert _next_pair(ts, list("ad"), sizes) in ((0, 1), (1, 2))
    # (100x2) (2x100) (100x100): left to right costs 1e6 multiply-adds, right first 4e4.
    ts = [(mg.ones(100, 2), list("ab")), (mg.ones(2, 100), list("bc")),
          (mg.ones(100, 100), list("cd"))]
    assert _next_pair(ts, list("ad"), {"a": 100, "b": 2, "c": 100, "d": 100}) == (1, 2)


def test_many_operands_use_the_greedy_path():
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal((2, 2)) for _ in range(8)]
    eq = "ab,bc,cd,de,ef,fg,gh,hi->ai"
    np.testing.assert_allclose(mg.einsum(eq, *[mg.tensor(a) for a in arrays]).numpy(),
                               np.einsum(eq, *arrays), rtol=1e-12)


def test_empty_dims():
    assert mg.einsum("ij,jk->ik", mg.ones(0, 3), mg.ones(3, 4)).shape == (0, 4)
    np.testing.assert_array_equal(mg.einsum("ij,jk->ik", mg.ones(2, 0), mg.ones(0, 4)).numpy(),
                                  np.zeros((2, 4)))
    assert mg.einsum("i->", mg.ones(0)).item() == 0.0


def test_mixed_dtypes_promote():
    out = mg.einsum("i,i->", mg.ones(3), mg.ones(3, dtype=mg.float64))
    assert out.dtype == np.float64


@pytest.mark.parametrize("dims, shapes", [
    (2, [(2, 3, 4), (3, 4, 5)]),
    (1, [(2, 3), (3, 4)]),
    (0, [(2,), (3,)]),
    (([1, 0], [0, 1]), [(3, 2, 4), (2, 3, 5)]),
    (([2], [0]), [(2, 3, 4), (4, 5)]),
])
def test_tensordot_matches_numpy_and_gradchecks(dims, shapes):
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s) for s in shapes]
    ts = [mg.tensor(a, requires_grad=True) for a in arrays]
    np.testing.assert_allclose(mg.tensordot(*ts, dims=dims).detach().numpy(),
                               np.tensordot(*arrays, axes=dims), rtol=1e-12)
    assert gradgradcheck(lambda a, b: mg.tensordot(a, b, dims=dims), ts)


def test_tensordot_errors_follow_torch():
    with pytest.raises(RuntimeError, match="contracted dimensions need to match"):
        mg.tensordot(mg.ones(2, 3), mg.ones(2, 3), dims=1)
    with pytest.raises(RuntimeError, match="tensordot expects dims >= 0"):
        mg.tensordot(mg.ones(2, 3), mg.ones(3, 3), dims=-1)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        mg.tensordot(mg.ones(2, 2, 3), mg.ones(2, 2, 3), dims=([0, 0], [1, 1]))


def test_tensordot_is_one_node_whose_edges_reach_the_operands():
    a = mg.ones(2, 3, 4, requires_grad=True)
    b = mg.ones(4, 3, requires_grad=True) * 2  # a non-leaf: its edge is b's node
    out = mg.tensordot(a, b, ([1, 2], [1, 0]))
    assert out.grad_fn.name() == "TensorDotBackward"
    ea, eb = (edge[0] for edge in out.grad_fn._next_edges[:2])
    assert ea.name() == "AccumulateGrad" and eb is b.grad_fn


def test_tensordot_catches_an_in_place_change_where_it_saved_a_view():
    b = mg.tensor(np.ones((3, 2)), requires_grad=True)
    a = mg.tensor(np.ones((2, 3)), requires_grad=True) * 1
    out = mg.tensordot(a, b, 1)  # a as it is: the product's saved operand is a itself
    a.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()
    rng = np.random.default_rng(0)
    x = mg.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    c = x * 1
    out = mg.tensordot(c, b, ([1], [0]))  # c's dim 1 contracted: the arranged c is a copy
    c.mul_(2)
    out.sum().backward()  # which kept c's values (as torch's composite does): no error
    np.testing.assert_allclose(x.grad.numpy(), np.broadcast_to(b.detach().numpy().sum(1)[:, None],
                                                               (2, 3, 4)))


def test_tensordot_complex_gradients_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    x, y = (rng.standard_normal(s) + 1j * rng.standard_normal(s) for s in ((2, 3, 4), (4, 3, 5)))
    w = rng.standard_normal((2, 5)) + 1j * rng.standard_normal((2, 5))
    grads = []
    for lib in (mg, torch):
        a, b = lib.tensor(x, requires_grad=True), lib.tensor(y, requires_grad=True)
        (lib.tensordot(a, b, ([1, 2], [1, 0])) * lib.tensor(w)).sum().abs().backward()
        grads.append((a.grad.numpy(), b.grad.numpy()))
    for m, t in zip(*grads):
        np.testing.assert_allclose(m, t, rtol=1e-12)
