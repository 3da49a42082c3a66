"""The op table's rows with a numpy reference (tests/ops/table.py) drive value tests
(against numpy / scipy) and gradient tests (gradcheck in float64, plus gradgradcheck for ops
that are twice differentiable at the sampled points). Binary ops also get hypothesis tests
over broadcast shapes and dtypes."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest
import scipy.special as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
from tests.ops.table import NUMPY, NUMPY_IDS, SMOOTH, Op, make_arrays


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", NUMPY, ids=NUMPY_IDS)
def test_values_match_numpy(op: Op, dtype: type) -> None:
    arrays = [a.astype(dtype) for a in make_arrays(op)]
    out = op.fn(mg, *[mg.tensor(a) for a in arrays])
    expected = np.asarray(op.ref(*arrays))
    assert isinstance(out, mg.Tensor)
    assert out.dtype == dtype, f"{op.name} changed the dtype to {out.dtype}"
    assert out.shape == expected.shape
    eps = np.finfo(dtype).eps
    scale = max(1.0, max(float(np.abs(a).max()) for a in arrays))  # huge inputs lose digits
    np.testing.assert_allclose(out.numpy(), expected, rtol=64 * eps, atol=16 * eps * scale)
    assert np.all(np.isfinite(out.numpy()))


def _leaves(op: Op) -> list[mg.Tensor]:
    return [mg.tensor(a, requires_grad=True) for a in make_arrays(op)]


@pytest.mark.parametrize("op", NUMPY, ids=NUMPY_IDS)
def test_gradcheck(op: Op) -> None:
    assert mg.autograd.gradcheck(lambda *xs: op.fn(mg, *xs), _leaves(op))


@pytest.mark.parametrize("op", NUMPY, ids=NUMPY_IDS)
def test_gradcheck_fast_mode(op: Op) -> None:
    assert mg.autograd.gradcheck(lambda *xs: op.fn(mg, *xs), _leaves(op), fast_mode=True)


@pytest.mark.parametrize("op", SMOOTH, ids=[op.name for op in SMOOTH])
def test_gradgradcheck(op: Op) -> None:
    assert mg.autograd.gradgradcheck(lambda *xs: op.fn(mg, *xs), _leaves(op))


# ---- second order where backwards break: zeros, ties, 0-d inputs ----------------------------
# gradgradcheck runs over the whole table at these points too (prod's first-order-only zeros
# branch would have been caught here). An op is left out at a point only where it is not
# twice differentiable there, and says why.
_MAX_TIES = "the maximum (or minimum) is tied: max has no derivative there"
_KINK_ZERO = "a kink at 0"
ROUGH: dict[str, dict[str, str]] = {
    "abs": {"zeros": "|x| has " + _KINK_ZERO},
    "relu": {"zeros": "relu has " + _KINK_ZERO},
    "log": {"zeros": "log(0) = -inf"},
    "sqrt": {"zeros": "the slope of sqrt is infinite at 0"},
    "pow": {"zeros": "d/db a**b = a**b log a is undefined at a = 0 (and 0**b at b = 0)"},
    "pow_frac": {"zeros": "0 ** -1.5 = inf"},
    "div": {"zeros": "division by 0"},
    "rdiv_scalar": {"zeros": "division by 0"},
    "remainder": {"zeros": "a % b jumps where a is a multiple of b (and b = 0 divides by 0)"},
    "remainder_scalar": {"zeros": "a % b jumps where a is a multiple of b"},
    "floor": {"zeros": "floor jumps at the integer 0"},
    "ceil": {"zeros": "ceil jumps at the integer 0"},
    "maximum": {"zeros": "a and b tie where both are 0: max has a kink there"},
    "minimum": {"zeros": "a and b tie where both are 0: min has a kink there"},
    "clamp_tensor": {"zeros": "x meets its bound where both are 0: clamp has a kink there"},
    "where": {"zeros": "where(a > 0, a, b) jumps from b to a at a = 0"},
    "index_bool_data": {"zeros": "the mask a > 0 flips at 0 (the output's shape changes)"},
    "norm_p3": {"zeros": "|x|^3 is twice differentiable, but not the norm of a zero vector"},
    "norm_p_half": {"zeros": "the 0.5-norm's slope is infinite at a zero entry"},
    "norm_p_neg": {"zeros": "a zero entry makes the (-1.5)-norm 0 with a kink"},
    "norm_nuc": {"zeros": "zeros may make singular values tie or vanish: the nuclear norm is "
                          "not differentiable at a rank drop",
                 "ties": "tied entries may tie singular values"},
    "norm_inf": {"zeros": _MAX_TIES, "ties": _MAX_TIES},
}
for _name in ("max", "max_dim", "max_dim_keep", "amax_dims", "min", "min_dim", "min_dim_keep"):
    ROUGH[_name] = {"zeros": "several zeros can tie for the maximum: " + _MAX_TIES,
                    "ties": _MAX_TIES, "0-d zero": ""}


def _special(op: Op, point: str) -> list[np.ndarray]:
    """float64 inputs of ``op`` with every third entry 0 ("zeros"), with entries tied in
    pairs ("ties"), or 0-d ("0-d", "0-d zero")."""
    if point.startswith("0-d"):
        arrays = make_arrays(replace(op, shapes=tuple(() for _ in op.shapes)))
        arrays = [np.asarray(a, np.float64) for a in arrays]
        return [np.zeros(()) for _ in arrays] if point == "0-d zero" else arrays
    arrays = make_arrays(op)
    for a in arrays:
        flat = a.reshape(-1)  # a view: writes land in a
        if point == "zeros":
            flat[::3] = 0.0
        else:
            flat[1::2] = flat[0::2][:flat[1::2].size]
    return arrays


def _rough(op: Op, point: str) -> str:
    """Why ``op`` is not twice differentiable at ``point`` ("" when it is)."""
    why = ROUGH.get(op.name, {})
    return why.get(point, why.get("zeros", "")) if point == "0-d zero" else why.get(point, "")


SPECIAL = [pytest.param(op, point, id=f"{op.name}-{point}",
                        marks=[pytest.mark.skip(reason=_rough(op, point))]
                        if _rough(op, point) else [])
           for op in SMOOTH for point in ("zeros", "ties", "0-d", "0-d zero")
           if op.scalar or not point.startswith("0-d")]


@pytest.mark.parametrize("op,point", SPECIAL)
def test_gradgradcheck_at_zeros_ties_and_0d(op: Op, point: str) -> None:
    xs = [mg.tensor(a, requires_grad=True) for a in _special(op, point)]
    assert mg.autograd.gradgradcheck(lambda *ts: op.fn(mg, *ts), xs)


def test_the_special_points_table_names_only_ops_that_exist() -> None:
    assert set(ROUGH) <= set(NUMPY_IDS)


def test_gradient_of_every_input_is_float64_and_shaped_like_it() -> None:
    for op in NUMPY:
        xs = _leaves(op)
        out = op.fn(mg, *xs)
        out.sum().backward()
        for x in xs:
            assert x.grad is not None and x.grad.shape == x.shape and x.grad.dtype == np.float64


# ---- stability and special points ----------------------------------------------------------
def test_softmax_of_huge_inputs_is_finite_and_sums_to_one() -> None:
    x = mg.tensor([[1000.0, 1000.0, -1000.0], [-1000.0, 0.0, 1000.0]], requires_grad=True)
    s = x.softmax(1)
    np.testing.assert_allclose(s.detach().numpy(), [[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
    np.testing.assert_allclose(x.logsumexp(1).detach().numpy(),
                               [1000.0 + np.log(2.0), 1000.0], rtol=1e-6)
    (s[:, 0]).sum().backward()
    assert np.all(np.isfinite(x.grad.numpy()))


def test_logsumexp_of_all_minus_inf_is_minus_inf() -> None:
    x = mg.tensor([-np.inf, -np.inf])
    assert x.logsumexp(0).item() == -np.inf


def test_maximum_ties_split_the_gradient_and_max_ties_share_it() -> None:
    a = mg.tensor([1.0, 2.0], requires_grad=True)
    b = mg.tensor([1.0, 0.0], requires_grad=True)
    a.maximum(b).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [0.5, 1.0])
    np.testing.assert_array_equal(b.grad.numpy(), [0.5, 0.0])
    x = mg.tensor([3.0, 1.0, 3.0], requires_grad=True)
    x.max().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.5, 0.0, 0.5])


def test_relu_abs_clamp_gradients_at_kinks_follow_torch() -> None:
    x = mg.tensor([0.0, 1.0, -1.0], requires_grad=True)
    (x.relu() + x.abs()).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 2.0, -1.0])
    y = mg.tensor([0.0, 1.0, 2.0], requires_grad=True)
    y.clamp(0.0, 1.0).sum().backward()  # boundary values pass the gradient
    np.testing.assert_array_equal(y.grad.numpy(), [1.0, 1.0, 0.0])


def test_pow_at_zero_base_follows_torch() -> None:
    a = mg.tensor([0.0, 0.0, 2.0], requires_grad=True)
    b = mg.tensor([0.0, 1.0, 3.0], requires_grad=True)
    (a ** b).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [0.0, 1.0, 12.0])
    np.testing.assert_allclose(b.grad.numpy(), [0.0, 0.0, 8 * np.log(2.0)], rtol=1e-6)


def test_repeated_integer_indices_accumulate_in_backward() -> None:
    x = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x[[0, 0, 2, 0]].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 0.0, 1.0])


def test_prod_with_zeros_gradient_is_product_of_the_others() -> None:
    x = mg.tensor([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0]], requires_grad=True)
    x.prod(1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0.0, 6.0, 0.0], [0.0, 0.0, 0.0]])


# ---- comparisons: values, bool results, never a gradient ------------------------------------
COMPARISONS = [
    ("eq", lambda a, b: a == b, np.equal), ("ne", lambda a, b: a != b, np.not_equal),
    ("lt", lambda a, b: a < b, np.less), ("le", lambda a, b: a <= b, np.less_equal),
    ("gt", lambda a, b: a > b, np.greater), ("ge", lambda a, b: a >= b, np.greater_equal),
]


@pytest.mark.parametrize("name,fn,ref", COMPARISONS, ids=[c[0] for c in COMPARISONS])
def test_comparisons(name: str, fn: Callable, ref: Callable) -> None:
    a = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
    b = np.array([2.0, 2.0, 2.0])
    ta = mg.tensor(a, requires_grad=True)
    for other, other_np in ((mg.tensor(b), b), (2.0, 2.0), (2, 2)):
        out = fn(ta, other)
        assert out.dtype == np.bool_ and not out.requires_grad and out.grad_fn is None
        np.testing.assert_array_equal(out.numpy(), ref(a, other_np))
    out = fn(2.0, ta)  # reflected
    np.testing.assert_array_equal(out.numpy(), ref(2.0, a))


# ---- hypothesis: broadcast shapes and dtypes for the binary ops -----------------------------
DTYPES = [np.float16, np.float32, np.float64, np.int64, np.bool_]


def torch_result_dtype(a: object, b: object) -> np.dtype:
    """torch's promotion, stated independently of minigrad: category bool < int < float wins;
    within the winning category dimensioned tensors beat 0-dim tensors beat Python scalars,
    and a Python float alone gives the default float32."""
    def info(x: object) -> tuple[int, int, np.dtype]:
        if isinstance(x, mg.Tensor):
            dt, prio = x.dtype, (0 if x.ndim else 1)
        else:
            dt = np.dtype({bool: np.bool_, int: np.int64, float: np.float32}[type(x)])
            prio = 2
        return {"b": 0, "i": 1, "f": 2}[dt.kind], prio, dt

    ia, ib = info(a), info(b)
    top = max(ia[0], ib[0])
    cands = sorted([i for i in (ia, ib) if i[0] == top], key=lambda i: i[1])
    same = [i[2] for i in cands if i[1] == cands[0][1]]
    return np.dtype(np.result_type(*same))


def _values(draw: st.DrawFn, shape: tuple, dtype: type, nonzero: bool) -> np.ndarray:
    if dtype is np.bool_:
        arr = np.array(draw(st.lists(st.booleans(), min_size=int(np.prod(shape)),
                                     max_size=int(np.prod(shape)))), dtype=bool)
        return (arr | nonzero).reshape(shape)
    lo = 1 if nonzero else -5
    ints = draw(st.lists(st.integers(lo, 5), min_size=int(np.prod(shape)),
                         max_size=int(np.prod(shape))))
    arr = np.array(ints, dtype=np.int64).reshape(shape)
    return arr.astype(dtype) if dtype is not np.float16 else (arr / 4).astype(dtype)


BINARY = {"add": (lambda a, b: a + b, np.add), "sub": (lambda a, b: a - b, np.subtract),
          "mul": (lambda a, b: a * b, np.multiply), "div": (lambda a, b: a / b, np.divide),
          "maximum": (lambda a, b: mg.maximum(a, b) if isinstance(a, mg.Tensor)
                      else mg.maximum(b, a), np.maximum)}


def _is_bool(v: object) -> bool:
    return isinstance(v, bool) or (isinstance(v, mg.Tensor) and v.dtype == np.bool_)


@st.composite
def binary_case(draw: st.DrawFn) -> tuple:
    name = draw(st.sampled_from(sorted(BINARY)))
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3,
                                                    max_side=3))
    operands = []
    for k, shape in enumerate(shapes.input_shapes):
        kind = draw(st.sampled_from(["tensor", "tensor", "scalar"]))
        dtype = draw(st.sampled_from(DTYPES))
        arr = _values(draw, shape, dtype, nonzero=(name == "div" and k == 1))
        if kind == "scalar":
            py = {np.bool_: bool, np.int64: int}.get(dtype, float)
            operands.append(py(arr.reshape(-1)[0]) if arr.size else py(1))
        else:
            operands.append(mg.tensor(arr))
    if not any(isinstance(o, mg.Tensor) for o in operands):
        operands[0] = mg.tensor(np.asarray(operands[0], dtype=np.float64))
    return name, operands


@settings(max_examples=150, deadline=None)
@given(binary_case())
def test_binary_ops_broadcast_and_promote_like_torch(case: tuple) -> None:
    name, (a, b) = case
    fn, ref = BINARY[name]
    if name == "sub" and any(_is_bool(v) for v in (a, b)):
        with pytest.raises(TypeError, match="bool"):
            fn(a, b)  # torch refuses a bool operand in subtraction, even beside a float
        return
    out = fn(a, b)
    expected_dt = torch_result_dtype(a, b)
    if name == "div" and expected_dt.kind != "f":
        expected_dt = np.dtype(np.float32)  # true division of integers gives the default float
    assert out.dtype == expected_dt, (name, a, b)
    x = a.numpy() if isinstance(a, mg.Tensor) else a
    y = b.numpy() if isinstance(b, mg.Tensor) else b
    with np.errstate(all="ignore"):
        want = np.asarray(ref(np.asarray(x, np.float64), np.asarray(y, np.float64)))
    assert out.shape == np.broadcast_shapes(np.shape(x), np.shape(y))
    if expected_dt.kind == "f":
        tol = float(np.finfo(expected_dt).eps) * 4
        np.testing.assert_allclose(out.numpy().astype(np.float64), want, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(out.numpy(), want.astype(expected_dt))


@pytest.mark.parametrize("a,b,dtype", [
    (lambda: mg.ones(2, dtype=mg.float16), 2.5, np.float16),
    (lambda: mg.ones(2, dtype=mg.int64), lambda: mg.ones(2, dtype=mg.float32), np.float32),
    (lambda: mg.tensor([1, 2]), 1.5, np.float32),
    (lambda: mg.tensor([True, False]), lambda: mg.tensor([1, 2]), np.int64),
    (lambda: mg.tensor([True, False]), 3, np.int64),
    (lambda: mg.tensor(1.0, dtype=mg.float64), lambda: mg.ones(2), np.float32),
    (lambda: mg.tensor(1.0, dtype=mg.float64), lambda: mg.tensor([1, 2]), np.float64),
    (lambda: mg.tensor(1, dtype=mg.int64), lambda: mg.ones(2, dtype=mg.float16), np.float16),
    (lambda: mg.ones(2, dtype=mg.float16), lambda: mg.ones(2, dtype=mg.float32), np.float32),
    (lambda: mg.ones(2, dtype=mg.float64), 1, np.float64),
])
def test_promotion_table(a: object, b: object, dtype: type) -> None:
    x = a() if callable(a) else a
    y = b() if callable(b) else b
    assert (x + y).dtype == dtype and (y * x).dtype == dtype
    assert (mg.tensor([1, 2]) / mg.tensor([2, 2])).dtype == np.float32


def test_tensor_with_numpy_array_operand() -> None:
    t = mg.tensor([1.0, 2.0], requires_grad=True)
    out = t * np.array([3.0, 4.0])  # like torch: an ndarray is a dimensioned float64 tensor
    assert out.dtype == np.float64
    out.sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [3.0, 4.0])
    np.testing.assert_array_equal((np.array([1.0, 1.0], np.float32) + t).detach().numpy(),
                                  [2.0, 3.0])


def test_incompatible_shapes_raise_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="broadcast"):
        mg.ones(2, 3) + mg.ones(4)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        mg.ones(2, 3) @ mg.ones(4, 2)


def test_remainder_takes_the_divisor_sign_and_differentiates_both_sides() -> None:
    x = mg.tensor([5.0, -5.0, 5.5])
    assert (x % 3).tolist() == [2.0, 1.0, 2.5]
    assert (x % -3).tolist() == [-1.0, -2.0, -0.5]
    assert (mg.tensor([7, -7]) % 3).tolist() == [1, 2] and (mg.tensor([7]) % 3).dtype == np.int64
    # torch has no derivative for number % tensor; the rule is the same: -floor(a / b).
    b = mg.tensor(np.array([0.7, -1.3, 1.9]), requires_grad=True)
    assert mg.autograd.gradcheck(lambda t: 2.5 % t, (b,))
    (2.5 % b).sum().backward()
    np.testing.assert_array_equal(b.grad.numpy(), -np.floor(2.5 / b.detach().numpy()))


def test_floor_divide_has_no_derivative_and_says_so_at_backward_like_torch() -> None:
    x = mg.tensor(np.array([1.5, -2.7]), requires_grad=True)
    q = x // 1.0
    assert q.tolist() == [1.0, -3.0] and q.requires_grad
    with pytest.raises(RuntimeError, match="derivative for 'floor_divide' is not implemented"):
        (q * x).sum().backward()
    assert (7 // mg.tensor([2, -2])).tolist() == [3, -4]
    assert (mg.tensor([7]) // 2).dtype == np.int64
    assert not (x.detach() // 2).requires_grad


def test_rounding_ops_have_a_zero_gradient_and_keep_integer_tensors() -> None:
    x = mg.tensor([0.5, 1.5, -1.5, 2.7], requires_grad=True)
    assert x.round().tolist() == [0.0, 2.0, -2.0, 3.0]  # half to even, as torch
    assert mg.tensor([1.234]).round(decimals=2).tolist() == [pytest.approx(1.23)]
    (x.floor() + x.ceil() + x.trunc() + x.round()).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 0, 0])  # zeros, not None
    i = mg.tensor([1, -2])
    assert i.floor().dtype == np.int64 and i.ceil().tolist() == [1, -2]


def test_gather_and_index_select_check_their_index_like_torch() -> None:
    x = mg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    g = x.gather(1, mg.tensor([[2, 2], [0, 1]]))
    assert g.tolist() == [[2.0, 2.0], [3.0, 4.0]]
    s = x.index_select(0, mg.tensor([1, 1]))
    (g.sum() + s.sum()).backward()  # repeated indices accumulate
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0, 2], [3, 3, 2]])
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        x.gather(0, mg.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="no larger than self"):
        x.gather(0, mg.tensor([[0, 1, 1, 0]]))
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 1"):
        x.gather(1, mg.tensor([[3], [0]]))
    with pytest.raises(IndexError, match="index -1 is out of bounds"):
        x.index_select(0, mg.tensor([-1]))  # numpy would wrap; torch refuses
    with pytest.raises(RuntimeError, match="int64"):
        x.index_select(0, mg.tensor([0.0]))


def test_bmm_checks_its_shapes_like_torch() -> None:
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        mg.bmm(mg.ones(3, 4), mg.ones(3, 4, 5))
    with pytest.raises(RuntimeError, match=r"batch2 tensor to be: \[2, 4\] but got: \[3, 4\]"):
        mg.ones(2, 3, 4).bmm(mg.ones(3, 4, 5))  # no broadcasting of the batch


t23 = mg.ones(2, 3)


@pytest.mark.parametrize("call", [
    lambda: t23.sum(2), lambda: t23.mean(-3), lambda: t23.max(2), lambda: t23.argmax(2),
    lambda: mg.cat([t23, t23], 3), lambda: mg.stack([t23, t23], 4), lambda: t23.unsqueeze(5),
    lambda: t23.transpose(0, 5), lambda: t23.permute(0, 5), lambda: t23.squeeze(4),
    lambda: t23.flatten(0, 4), lambda: t23.cumsum(3), lambda: t23.softmax(2),
    lambda: t23.log_softmax(-3), lambda: mg.nn.functional.log_softmax(t23, 5),
    lambda: t23.split(1, 3), lambda: t23.unbind(2), lambda: t23.chunk(2, -3),
    lambda: t23.flip(2), lambda: t23.size(2), lambda: mg.tensor(1.0).sum(1),
    lambda: t23.diagonal(0, 0, 2), lambda: t23.index_select(2, mg.tensor([0])),
], ids=lambda f: "")
def test_dims_out_of_range_raise_index_error_like_torch(call: Callable) -> None:
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range "
                                         r"of \[-\d, \d\], but got -?\d\)"):
        call()


def test_an_empty_dim_tuple_reduces_over_all_dims_like_torch() -> None:
    x = mg.tensor(np.arange(6.0).reshape(3, 2))
    assert x.sum(()).item() == 15.0 and x.sum([]).item() == 15.0
    assert x.mean(()).item() == 2.5 and x.amax(()).item() == 5.0
    assert x.unsqueeze(-3).shape == (1, 3, 2) and x.transpose(-1, 0).shape == (2, 3)


# ---- issue 9: special values the op table does not reach ----------------------------------
def test_prod_second_derivative_at_zeros_is_right() -> None:
    x = mg.tensor([0.0, 2.0, 3.0], dtype=mg.float64, requires_grad=True)
    (g,) = mg.autograd.grad(x.prod() + (x * x).sum(), x, create_graph=True)
    (gg,) = mg.autograd.grad(g.sum(), x)
    # H_ij = prod of the entries other than i and j (0 on the diagonal), plus 2 I from x*x;
    # summed over j: [x2 + x1, x2 + x0, x1 + x0] + 2 = [7, 5, 4], as torch gives
    x0, x1, x2 = 0.0, 2.0, 3.0
    np.testing.assert_array_equal(gg.numpy(), [x2 + x1 + 2, x2 + x0 + 2, x1 + x0 + 2])
    y = mg.tensor([[0.0, 0.0, 5.0], [1.5, 0.0, -2.0]], dtype=mg.float64, requires_grad=True)
    assert mg.autograd.gradgradcheck(lambda t: t.prod(1), (y,))
    assert mg.autograd.gradgradcheck(lambda t: t.prod(0, keepdim=True), (y,))


def test_log1p_and_expm1_keep_the_digits_of_tiny_arguments() -> None:
    x = mg.tensor([1e-10, -1e-12, 3e-300, 0.5], dtype=mg.float64, requires_grad=True)
    np.testing.assert_array_equal(x.log1p().detach().numpy(), np.log1p(x.detach().numpy()))
    np.testing.assert_array_equal(mg.expm1(x).detach().numpy(), np.expm1(x.detach().numpy()))
    # log(x + 1) gave 1.0000000827e-10 here
    assert x.log1p()[0].item() == pytest.approx(1e-10 - 5e-21, rel=1e-15, abs=0)
    (x.log1p().sum() + x.expm1().sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), 1 / (1 + x.detach().numpy())
                               + np.exp(x.detach().numpy()), rtol=1e-15)
    assert mg.log1p(mg.tensor(-1.0)).item() == -np.inf  # silent, as in torch


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tanh_and_sigmoid_gradients_keep_their_digits_in_the_tails(dtype) -> None:
    x = mg.tensor(np.array([-60.0, -25.0, -12.0, 12.0, 25.0, 60.0]), dtype=dtype,
                  requires_grad=True)
    (x.tanh().sum() + x.sigmoid().sum()).backward()
    a = np.array([-60.0, -25.0, -12.0, 12.0, 25.0, 60.0])
    sech2 = 1 / np.cosh(a) ** 2
    dsig = np.exp(-np.abs(a)) / (1 + np.exp(-np.abs(a))) ** 2
    # 1 - tanh^2 and s (1 - s) are exactly 0 here once tanh / s round to +-1
    np.testing.assert_allclose(x.grad.numpy(), (sech2 + dsig).astype(dtype), rtol=1e-6)
    assert np.all(x.grad.numpy() > 0)


def test_logsumexp_keeps_terms_below_the_rounding_of_one() -> None:
    x = mg.tensor([0.0, -40.0], dtype=mg.float64, requires_grad=True)
    y = x.logsumexp(0)
    assert y.item() == pytest.approx(np.log1p(np.exp(-40.0)), rel=1e-15, abs=0)  # torch: 0.0
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), sp.softmax([0.0, -40.0]), rtol=1e-15)
    t = mg.tensor([[1e3, 1e3, -2.0], [-np.inf, -np.inf, -np.inf]])
    np.testing.assert_allclose(t.logsumexp(1).numpy(), [1e3 + np.log(2.0), -np.inf])
    assert mg.zeros(0, 2).logsumexp(0).tolist() == [-np.inf, -np.inf]


def test_repeat_copies_so_its_result_can_be_written_like_torch() -> None:
    d = mg.tensor([5.0, 6.0])
    with mg.no_grad():
        E = mg.eye(3)[None].repeat(2, 1, 1)  # pytorch3d's pattern
        E[:, -1, -1] = d
    np.testing.assert_array_equal(E.numpy()[:, 2, 2], [5.0, 6.0])
    assert mg.eye(3).numpy()[2, 2] == 1.0
    w = mg.eye(3, requires_grad=True)
    R = w[None].repeat(2, 1, 1)
    R[:, -1, -1] = d  # while recording: no in-place-on-view error
    R.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [[2, 2, 2], [2, 2, 2], [2, 2, 0]])
    with pytest.raises(RuntimeError, match="can not be smaller"):
        mg.ones(2, 3).repeat(2)


def test_no_op_hands_out_read_only_or_aliased_memory_where_torch_copies() -> None:
    x = mg.tensor([[1.0, 2.0], [3.0, 4.0]])
    outs = {"repeat": x.repeat(2, 1), "contiguous_T": x.T.contiguous(),
            "contiguous_expand": x[0].expand(3, 2).contiguous(), "flip": x.flip(0),
            "clone": x.clone(), "index": x[[0, 1]], "diag": x.diag(),
            "reshape_expand": x[0].expand(3, 2).reshape(6), "to_copy": x.to(mg.float32, copy=True),
            "tensor": mg.tensor(x)}
    for name, out in outs.items():
        assert out._array.flags.writeable, name
        assert not np.shares_memory(out._array, x._array), name
    assert x.contiguous() is x and x.T.is_contiguous() is False


def test_writing_into_an_expanded_tensor_raises_torchs_error() -> None:
    e = mg.ones(3).expand(2, 3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        e.add_(1)
    with pytest.raises(RuntimeError, match="more than one element"), mg.no_grad():
        e[0, 0] = 5.0
    ro = np.ones(3)
    ro.flags.writeable = False
    with pytest.raises(RuntimeError, match="read-only"):
        mg.from_numpy(ro).zero_()


def test_mean_over_an_empty_dim_is_nan_without_numpy_warnings(recwarn) -> None:
    x = mg.zeros(0, 3, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = x.mean(0)
        m.sum().backward()
        assert np.isnan(m.detach().numpy()).all() and x.grad.shape == (0, 3)
        assert (mg.tensor([1.0, -1.0]) / 0).tolist() == [np.inf, -np.inf]
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        assert np.isnan(mg.tensor([1.0]).var().item())  # torch warns here too


def test_tensor_norm_takes_every_p_torch_does() -> None:
    a = np.random.default_rng(4).standard_normal((3, 4))
    x = mg.tensor(a)
    assert x.norm(p="nuc").item() == pytest.approx(np.linalg.norm(a, "nuc"), rel=1e-12)
    assert x.norm("fro").item() == pytest.approx(np.linalg.norm(a), rel=1e-12)
    assert x.norm(0).item() == 12 and mg.tensor([0.0, 2.0, 0.0]).norm(0).item() == 1
    assert x.norm(-np.inf).item() == pytest.approx(np.abs(a).min())
    np.testing.assert_allclose(x.norm(3, dim=0).numpy(), np.linalg.norm(a, 3, axis=0))
    with pytest.raises(RuntimeError, match="dim must be a 2-tuple"):
        mg.ones(2, 3, 4).norm(p="nuc")
    with pytest.raises(RuntimeError, match="Order bad not supported"):
        x.norm(p="bad")


def test_norm_backward_is_not_changed_by_a_write_into_the_norm() -> None:
    # the 2-norm's backward reads the sums its forward kept, not the output it returned
    a = np.random.default_rng(5).standard_normal((3, 4))
    for keepdim in (False, True):
        x = mg.tensor(a, requires_grad=True)
        n = x.norm(dim=1, keepdim=keepdim)
        n.mul_(3)
        n.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(),
                                   3 * a / np.linalg.norm(a, axis=1, keepdims=True), rtol=1e-13)


def test_p_norm_gradients_at_zero_are_finite_or_refused() -> None:
    for p in (3, 1.5, -1.0):
        z = mg.zeros(3, dtype=mg.float64, requires_grad=True)
        z.norm(p).backward()  # (|x|^p)^(1/p) would give 0 * inf = nan here
        np.testing.assert_array_equal(z.grad.numpy(), [0.0, 0.0, 0.0])
    h = mg.tensor([0.0, 1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="no derivative at a zero entry"):
        h.norm(0.5).backward()  # the slope is infinite there


def test_dims_are_validated_not_wrapped() -> None:
    with pytest.raises(IndexError, match="Dimension out of range"):
        mg.ones(2, 3).all(2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        mg.ones(2, 3).any(-3)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        mg.ones(3).tril()
    with pytest.raises(RuntimeError, match="expected a matrix"):
        mg.ones(2, 2, 2).trace()


# Ops whose values or gradients are inf or nan at x = [0, 1, -1] (f(lib, x), torch's names).
_SILENT = {
    "1 / x": lambda L, x: 1.0 / x,
    "x / x": lambda L, x: x / x,
    "x / 0": lambda L, x: x / 0.0,
    "log": lambda L, x: x.log(),
    "log1p": lambda L, x: (x - 2).log1p(),
    "sqrt": lambda L, x: x.sqrt(),
    "rsqrt": lambda L, x: x.rsqrt(),
    "x ** -1": lambda L, x: x ** -1,
    "x ** 0.5": lambda L, x: x ** 0.5,
    "x ** 2.5": lambda L, x: x ** 2.5,
    "exp": lambda L, x: (x * 1000).exp(),
    "inf - inf": lambda L, x: 1.0 / x - 1.0 / x,
    "x * inf": lambda L, x: x * float("inf"),
    "div_": lambda L, x: (x * 1).div_(0.0),
    "atanh": lambda L, x: x.atanh(),
    "remainder": lambda L, x: x.remainder(0.0),
}


@pytest.mark.parametrize("name", list(_SILENT))
def test_inf_and_nan_come_silently_as_in_torch(name):
    """numpy's divide-by-zero / invalid / overflow RuntimeWarnings stay inside minigrad's
    ops (forward and backward), as torch is silent; the user's numpy is left as it was."""
    f = _SILENT[name]
    before = np.geterr()
    x = mg.tensor([0.0, 1.0, -1.0], dtype=mg.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = f(mg, x)
        y.backward(mg.ones_like(y))
    assert np.geterr() == before
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        np.divide(1.0, np.zeros(1))
    torch = pytest.importorskip("torch")
    tx = torch.tensor([0.0, 1.0, -1.0], dtype=torch.float64, requires_grad=True)
    ty = f(torch, tx)
    ty.backward(torch.ones_like(ty))
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


def test_the_quiet_numpy_state_without_numpys_internals(monkeypatch):
    """Where numpy's error-state context variable is not importable (numpy 1.x), the quiet
    section falls back to np.errstate: still silent inside, and restored after."""
    import importlib.util
    import sys

    from minigrad.autograd import quiet

    monkeypatch.setitem(sys.modules, "numpy._core._ufunc_config", None)
    spec = importlib.util.spec_from_file_location("quiet_fallback", quiet.__file__)
    fallback = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fallback)
    assert fallback.enter is not quiet.enter
    before = np.geterr()
    token = fallback.enter()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.divide(1.0, np.zeros(1))[0] == np.inf
    fallback.leave(token)
    assert np.geterr() == before
