"""The op table of record: one row per op and variant, read by every test that checks ops
elementwise against a reference. Adding an op is adding its row here, with the columns
that say which tests take it (see ``Op``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.special as sp


@dataclass(frozen=True)
class Op:
    """One row: ``fn(m, *xs)`` runs with m = minigrad or m = torch. A test takes the rows
    whose column it reads: a numpy ``ref`` (test_op_table.py against numpy, gradcheck and
    gradgradcheck; compat/test_op_table_vs_torch.py against torch), ``parity``
    (test_math_parity.py: torch is the reference, in float32 and float64) and ``compat``
    (compat/test_torch_compat.py calls the public function and method ``name`` on that input
    kind, as its list of record asks) and ``complex`` (test_complex_table.py: on complex
    inputs, against torch's values and gradients, complex gradcheck and gradgradcheck; a
    complex row without ``ref`` or ``parity`` runs on complex inputs only)."""

    name: str
    fn: Callable
    ref: Callable | None  # numpy reference on ndarrays
    shapes: tuple
    # uniform (lo, hi) for every input, one (lo, hi) per input, or rng, shape -> ndarray
    domain: tuple | Callable = (-2.0, 2.0)
    smooth: bool = True  # twice differentiable at the sampled inputs: gradgradcheck runs
    scalar: bool = False  # fn also takes 0-d inputs (gradgradcheck runs there too)
    parity: bool = False
    compat: str = ""  # "x" (standard normal 3x4) or "p" (positive 3x4)
    complex: bool = False


def positive(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    return rng.uniform(0.5, 2.0, shape)


def away_from_zero(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    return rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)


def with_a_zero(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    a = rng.uniform(-2.0, 2.0, shape)
    a.flat[1] = 0.0
    return a


def two_zeros(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    a = rng.uniform(-2.0, 2.0, shape)
    a.flat[[0, 5]] = 0.0  # d2/da0 da5 of the product is the product of the rest, not 0
    return a


def huge(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    return rng.uniform(990.0, 1010.0, shape) * rng.choice([-1.0, 1.0], shape)


def np_var(a: np.ndarray, axis=None, keepdims=False, ddof=1) -> np.ndarray:
    return np.var(a, axis=axis, keepdims=keepdims, ddof=ddof)


def np_diag_embed(a: np.ndarray, offset: int = 0) -> np.ndarray:
    n = a.shape[-1] + abs(offset)
    out = np.zeros(a.shape[:-1] + (n, n), a.dtype)
    for idx in np.ndindex(a.shape[:-1]):
        out[idx] = np.diag(a[idx], offset)
    return out


def np_matmul_1d_batch(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.matmul(a, b)


def parity(name: str, fn: Callable, *domains: tuple, smooth: bool = True,
           complex: bool = False) -> Op:
    """A row with torch as its only reference: one (lo, hi) per input, the first input 2x3
    and the others 3-vectors that broadcast against it."""
    shapes = ((2, 3),) + ((3,),) * (len(domains) - 1)
    return Op(name, fn, None, shapes, domains, smooth, parity=True, complex=complex)


def parity_unary(name: str, lo: float = -2.0, hi: float = 2.0, smooth: bool = True,
                 complex: bool = False) -> Op:
    """``m.<name>(x)`` on one input drawn from (lo, hi), against torch."""
    return parity(name, lambda m, x: getattr(m, name)(x), (lo, hi), smooth=smooth,
                  complex=complex)


A, B, C = (3, 4), (2, 3, 4), (4,)

OPS = [
    # ---- arithmetic, tensor and scalar on both sides, with broadcasting ----
    Op("add", lambda m, a, b: a + b, np.add, ((3, 4), (4,)), scalar=True, complex=True),
    Op("add_bcast", lambda m, a, b: a + b, np.add, ((2, 1, 4), (3, 1)), scalar=True, complex=True),
    Op("add_scalar", lambda m, a: a + 2.5, lambda a: a + 2.5, (A,), scalar=True, complex=True),
    Op("radd_scalar", lambda m, a: 2 + a, lambda a: 2 + a, (A,), scalar=True, complex=True),
    Op("sub", lambda m, a, b: a - b, np.subtract, ((3, 4), (3, 1)), scalar=True, complex=True),
    Op("rsub_scalar", lambda m, a: 3.0 - a, lambda a: 3.0 - a, (A,), scalar=True, complex=True),
    Op("sub_scalar", lambda m, a: a - 1, lambda a: a - 1, (A,), scalar=True, complex=True),
    Op("mul", lambda m, a, b: a * b, np.multiply, ((2, 3, 4), (3, 4)), scalar=True, complex=True),
    Op("mul_self", lambda m, a: a * a, lambda a: a * a, (A,), scalar=True, complex=True),
    Op("mul_scalar", lambda m, a: a * -1.5, lambda a: a * -1.5, (A,), scalar=True, complex=True),
    Op("rmul_scalar", lambda m, a: 3 * a, lambda a: 3 * a, (A,), scalar=True, complex=True),
    Op("div", lambda m, a, b: a / b, np.divide, ((3, 4), (4,)),
       lambda r, s: away_from_zero(r, s), scalar=True, complex=True),
    Op("div_scalar", lambda m, a: a / 4, lambda a: a / 4, (A,), scalar=True, complex=True),
    Op("rdiv_scalar", lambda m, a: 2.0 / a, lambda a: 2.0 / a, (A,), away_from_zero, scalar=True,
       complex=True),
    Op("pow", lambda m, a, b: a ** b, np.power, ((3, 4), (3, 4)), positive, scalar=True,
       complex=True),
    Op("pow_int", lambda m, a: a ** 3, lambda a: a ** 3, (A,), scalar=True, complex=True),
    Op("pow_frac", lambda m, a: a ** -1.5, lambda a: a ** -1.5, (A,), positive, scalar=True,
       complex=True),
    Op("rpow", lambda m, a: 2.0 ** a, lambda a: 2.0 ** a, (A,), scalar=True, complex=True),
    Op("neg", lambda m, a: -a, np.negative, (A,), scalar=True, compat="x", complex=True),
    # remainder takes the divisor's sign (Python's %); d/da = 1, d/db = -floor(a / b)
    Op("remainder", lambda m, a, b: a % b, np.remainder, ((3, 4), (4,)),
       lambda r, s: away_from_zero(r, s), scalar=True),
    Op("remainder_scalar", lambda m, a: a % -0.7, lambda a: np.remainder(a, -0.7), (A,),
       scalar=True),
    # ---- elementwise ----
    Op("abs", lambda m, a: a.abs(), np.abs, (A,), away_from_zero, scalar=True, compat="x",
       complex=True),
    Op("exp", lambda m, a: a.exp(), np.exp, (A,), scalar=True, compat="x", complex=True),
    Op("log", lambda m, a: a.log(), np.log, (A,), positive, scalar=True, compat="p", complex=True),
    Op("sqrt", lambda m, a: a.sqrt(), np.sqrt, (A,), positive, scalar=True, compat="p",
       complex=True),
    Op("sin", lambda m, a: a.sin(), np.sin, (A,), scalar=True, compat="x", complex=True),
    Op("cos", lambda m, a: m.cos(a), np.cos, (A,), scalar=True, compat="x", complex=True),
    Op("tanh", lambda m, a: a.tanh(), np.tanh, (A,), scalar=True, compat="x", complex=True),
    Op("sigmoid", lambda m, a: a.sigmoid(), sp.expit, (A,), scalar=True, compat="x", complex=True),
    Op("sigmoid_huge", lambda m, a: a.sigmoid(), sp.expit, (A,), huge, scalar=True),
    Op("log1p", lambda m, a: a.log1p(), np.log1p, (A,), positive, scalar=True, compat="p",
       complex=True),
    Op("expm1", lambda m, a: m.expm1(a), np.expm1, (A,), scalar=True, compat="x", complex=True),
    Op("tanh_tails", lambda m, a: (a * 8).tanh(), lambda a: np.tanh(a * 8), (A,)),
    Op("relu", lambda m, a: a.relu(), lambda a: np.maximum(a, 0), (A,), away_from_zero,
       scalar=True, compat="x"),
    # piecewise constant: a zero gradient, as in torch
    Op("floor", lambda m, a: a.floor(), np.floor, (A,), scalar=True, compat="x"),
    Op("ceil", lambda m, a: m.ceil(a), np.ceil, (A,), scalar=True, compat="x"),
    Op("round", lambda m, a: (a * 3).round(), lambda a: np.round(a * 3), (A,), scalar=True,
       compat="x"),
    Op("trunc", lambda m, a: a.trunc(), np.trunc, (A,), scalar=True, compat="x"),
    Op("maximum", lambda m, a, b: m.maximum(a, b), np.maximum, ((3, 4), (4,)), scalar=True),
    Op("minimum", lambda m, a, b: a.minimum(b), np.minimum, ((2, 1, 4), (3, 4)), scalar=True),
    Op("clamp", lambda m, a: a.clamp(-0.5, 0.7), lambda a: np.clip(a, -0.5, 0.7), (A,),
       scalar=True),
    Op("clamp_min", lambda m, a: a.clamp(min=0.1), lambda a: np.maximum(a, 0.1), (A,), scalar=True),
    Op("clamp_max", lambda m, a: m.clamp(a, max=-0.2), lambda a: np.minimum(a, -0.2), (A,),
       scalar=True),
    Op("clamp_tensor", lambda m, a, lo: a.clamp(min=lo), np.maximum, ((3, 4), (4,)), scalar=True),
    Op("where", lambda m, a, b: m.where(a > 0, a, b), lambda a, b: np.where(a > 0, a, b),
       ((3, 4), (4,)), scalar=True),
    Op("where_scalar", lambda m, a: m.where(a < 0.5, 0.0, a),
       lambda a: np.where(a < 0.5, 0.0, a), (A,), scalar=True),
    # ---- reductions ----
    Op("sum", lambda m, a: a.sum(), np.sum, (B,), scalar=True, complex=True),
    Op("sum_dim", lambda m, a: a.sum(1), lambda a: a.sum(1), (B,), complex=True),
    Op("sum_dims_keep", lambda m, a: a.sum(dim=(0, 2), keepdim=True),
       lambda a: a.sum(axis=(0, 2), keepdims=True), (B,), complex=True),
    Op("sum_neg_keep", lambda m, a: a.sum(-1, keepdim=True),
       lambda a: a.sum(-1, keepdims=True), (B,), complex=True),
    Op("mean", lambda m, a: a.mean(), np.mean, (B,), scalar=True, complex=True),
    Op("mean_dim", lambda m, a: a.mean(-1), lambda a: a.mean(-1), (B,), complex=True),
    Op("mean_keep", lambda m, a: a.mean((0, 1), keepdim=True),
       lambda a: a.mean((0, 1), keepdims=True), (B,), complex=True),
    Op("max", lambda m, a: a.max(), np.max, (B,), scalar=True),
    Op("max_dim", lambda m, a: a.max(1)[0], lambda a: a.max(1), (B,)),
    Op("max_dim_keep", lambda m, a: a.max(dim=-1, keepdim=True).values,
       lambda a: a.max(-1, keepdims=True), (B,)),
    Op("amax_dims", lambda m, a: a.amax(dim=(0, 2)), lambda a: a.max((0, 2)), (B,)),
    Op("min", lambda m, a: a.min(), np.min, (B,), scalar=True),
    Op("min_dim", lambda m, a: a.min(0)[0], lambda a: a.min(0), (B,)),
    Op("min_dim_keep", lambda m, a: a.min(2, keepdim=True)[0],
       lambda a: a.min(2, keepdims=True), (B,)),
    Op("prod", lambda m, a: a.prod(), np.prod, (A,), away_from_zero, scalar=True, complex=True),
    Op("prod_dim", lambda m, a: a.prod(1), lambda a: a.prod(1), (B,), away_from_zero, complex=True),
    Op("prod_keep", lambda m, a: a.prod(0, keepdim=True), lambda a: a.prod(0, keepdims=True),
       (A,), away_from_zero, complex=True),
    Op("prod_zero", lambda m, a: a.prod(1), lambda a: a.prod(1), (A,), with_a_zero, complex=True),
    Op("prod_zeros_all", lambda m, a: a.prod(), np.prod, (A,), two_zeros, complex=True),
    Op("var", lambda m, a: a.var(), np_var, (B,), complex=True),
    Op("var_dim", lambda m, a: a.var(1), lambda a: np_var(a, 1), (B,), complex=True),
    Op("var_keep", lambda m, a: a.var(dim=(0, 2), keepdim=True),
       lambda a: np_var(a, (0, 2), True), (B,), complex=True),
    Op("var_biased", lambda m, a: a.var(1, correction=0), lambda a: np_var(a, 1, ddof=0),
       (B,), complex=True),
    Op("norm_p3", lambda m, a: a.norm(3, dim=1), lambda a: np.linalg.norm(a, 3, axis=1), (B,),
       complex=True),
    Op("norm_p_half", lambda m, a: a.norm(0.5, dim=-1, keepdim=True),
       lambda a: np.linalg.norm(a, 0.5, axis=-1, keepdims=True), (B,), away_from_zero,
       complex=True),
    Op("norm_p_neg", lambda m, a: a.norm(-1.5), lambda a: np.sum(np.abs(a) ** -1.5) ** (-1 / 1.5),
       (A,), away_from_zero),
    Op("norm_inf", lambda m, a: a.norm(float("inf"), dim=0),
       lambda a: np.abs(a).max(0), (A,)),
    Op("norm_nuc", lambda m, a: a.norm(p="nuc", dim=(0, 2)),
       lambda a: np.linalg.norm(np.moveaxis(a, 1, 0), "nuc", axis=(1, 2)), (B,)),
    # ---- matmul ----
    Op("matmul", lambda m, a, b: a @ b, np.matmul, ((3, 4), (4, 5)), complex=True),
    Op("matmul_batch_bcast", lambda m, a, b: a @ b, np.matmul, ((2, 1, 3, 4), (5, 4, 2)),
       complex=True),
    Op("matmul_1d_2d", lambda m, a, b: m.matmul(a, b), np.matmul, ((4,), (4, 3)), complex=True),
    Op("matmul_2d_1d", lambda m, a, b: a @ b, np.matmul, ((3, 4), (4,)), complex=True),
    Op("matmul_1d_1d", lambda m, a, b: a @ b, np.matmul, ((4,), (4,)), complex=True),
    Op("matmul_1d_batch", lambda m, a, b: a @ b, np.matmul, ((4,), (2, 4, 3)), complex=True),
    Op("matmul_batch_1d", lambda m, a, b: a.matmul(b), np.matmul, ((2, 3, 4), (4,)), complex=True),
    Op("bmm", lambda m, a, b: m.bmm(a, b), np.matmul, ((2, 3, 4), (2, 4, 5)), complex=True),
    # ---- shape ----
    Op("reshape", lambda m, a: a.reshape(4, 3), lambda a: a.reshape(4, 3), (A,), complex=True),
    Op("reshape_infer", lambda m, a: a.reshape((-1,)), lambda a: a.reshape(-1), (B,), complex=True),
    Op("view", lambda m, a: a.view(2, -1, 2), lambda a: a.reshape(2, -1, 2), (B,), complex=True),
    Op("transpose", lambda m, a: a.transpose(0, 2), lambda a: a.swapaxes(0, 2), (B,), complex=True),
    Op("T", lambda m, a: a.T, lambda a: a.T, (A,), complex=True),
    Op("mT", lambda m, a: a.mT, lambda a: a.swapaxes(-1, -2), (B,), complex=True),
    Op("permute", lambda m, a: a.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1), (B,),
       complex=True),
    Op("unsqueeze", lambda m, a: a.unsqueeze(1), lambda a: a[:, None], (A,), complex=True),
    Op("unsqueeze_neg", lambda m, a: a.unsqueeze(-1), lambda a: a[..., None], (A,), scalar=True,
       complex=True),
    Op("squeeze", lambda m, a: a.squeeze(), np.squeeze, ((3, 1, 4, 1),), scalar=True, complex=True),
    Op("squeeze_dim", lambda m, a: a.squeeze(1), lambda a: a.squeeze(1), ((3, 1, 4, 1),),
       complex=True),
    Op("expand", lambda m, a: a.expand(2, 3, 4), lambda a: np.broadcast_to(a, (2, 3, 4)),
       ((3, 1),), scalar=True, complex=True),
    Op("expand_keep", lambda m, a: a.expand(-1, 4), lambda a: np.broadcast_to(a, (3, 4)),
       ((3, 1),), complex=True),
    Op("flatten", lambda m, a: a.flatten(), lambda a: a.reshape(-1), (B,), scalar=True,
       complex=True),
    Op("flatten_from", lambda m, a: a.flatten(1), lambda a: a.reshape(2, -1), (B,), complex=True),
    Op("flip", lambda m, a: m.flip(a, (0, -1)), lambda a: np.flip(a, (0, 2)), (B,), complex=True),
    Op("repeat", lambda m, a: a.repeat(2, 1, 3), lambda a: np.tile(a, (2, 1, 3)), (A,),
       complex=True),
    Op("repeat_0d", lambda m, a: a.repeat(3), lambda a: np.tile(a, 3), ((),), complex=True),
    # ---- indexing ----
    Op("index_int", lambda m, a: a[1], lambda a: a[1], (B,), complex=True),
    Op("index_slice", lambda m, a: a[:, 1:3], lambda a: a[:, 1:3], (B,), complex=True),
    Op("index_step", lambda m, a: a[::2, -1], lambda a: a[::2, -1], (A,), complex=True),
    Op("index_none_ellipsis", lambda m, a: a[..., None, 1], lambda a: a[..., None, 1], (B,),
       complex=True),
    Op("index_none_first", lambda m, a: a[None, ..., 0], lambda a: a[None, ..., 0], (B,),
       complex=True),
    Op("index_array_repeat", lambda m, a: a[[0, 0, 2, 0]], lambda a: a[[0, 0, 2, 0]], (A,),
       complex=True),
    Op("index_arrays", lambda m, a: a[[0, 2, 2], [1, 1, 3]],
       lambda a: a[[0, 2, 2], [1, 1, 3]], (A,), complex=True),
    Op("index_mixed", lambda m, a: a[1, [0, 0, 2]], lambda a: a[1, [0, 0, 2]], (B,), complex=True),
    Op("index_bool", lambda m, a: a[[True, False, True]], lambda a: a[[True, False, True]],
       (A,), complex=True),
    Op("index_bool_data", lambda m, a: a[a > 0], lambda a: a[a > 0], (A,)),
    Op("gather", lambda m, a: a.gather(1, m.tensor([[3, 3], [0, 1], [2, 2]])),
       lambda a: np.take_along_axis(a, np.array([[3, 3], [0, 1], [2, 2]]), 1), (A,), complex=True),
    Op("gather_dim0", lambda m, a: m.gather(a, 0, m.tensor([[0, 2, 2], [1, 1, 0]])),
       lambda a: np.take_along_axis(a[:, :3], np.array([[0, 2, 2], [1, 1, 0]]), 0), (A,),
       complex=True),
    Op("index_select", lambda m, a: a.index_select(-1, m.tensor([3, 0, 3])),
       lambda a: a[..., [3, 0, 3]], (B,), complex=True),
    # ---- joining ----
    Op("cat", lambda m, a, b: m.cat([a, b], 1), lambda a, b: np.concatenate([a, b], 1),
       ((3, 4), (3, 2)), complex=True),
    Op("cat3", lambda m, a, b, c: m.cat([a, b, c]), lambda *xs: np.concatenate(xs),
       ((1, 4), (3, 4), (2, 4)), complex=True),
    Op("stack", lambda m, a, b: m.stack([a, b]), lambda a, b: np.stack([a, b]), (A, A),
       complex=True),
    Op("stack_last", lambda m, a, b: m.stack([a, b], dim=-1),
       lambda a, b: np.stack([a, b], -1), (A, A), complex=True),
    # ---- diagonals and triangles ----
    Op("diag_vec", lambda m, a: m.diag(a), np.diag, (C,), complex=True),
    Op("diag_vec_off", lambda m, a: m.diag(a, -1), lambda a: np.diag(a, -1), (C,), complex=True),
    Op("diag_mat", lambda m, a: m.diag(a, 1), lambda a: np.diag(a, 1), (A,), complex=True),
    Op("diagonal", lambda m, a: a.diagonal(), np.diagonal, (A,), complex=True),
    Op("diagonal_dims", lambda m, a: a.diagonal(offset=1, dim1=1, dim2=2),
       lambda a: np.diagonal(a, 1, 1, 2), (B,), complex=True),
    Op("diag_embed", lambda m, a: a.diag_embed(), np_diag_embed, (A,), complex=True),
    Op("diag_embed_off", lambda m, a: m.diag_embed(a, offset=1),
       lambda a: np_diag_embed(a, 1), (A,), complex=True),
    Op("tril", lambda m, a: a.tril(), np.tril, (B,), complex=True),
    Op("tril_neg", lambda m, a: m.tril(a, -1), lambda a: np.tril(a, -1), (A,), complex=True),
    Op("triu", lambda m, a: a.triu(1), lambda a: np.triu(a, 1), (B,), complex=True),
    # ---- softmax family (stable: huge inputs must not overflow) ----
    Op("softmax", lambda m, a: a.softmax(1), lambda a: sp.softmax(a, 1), (B,)),
    Op("softmax_huge", lambda m, a: m.softmax(a, -1), lambda a: sp.softmax(a, -1), (A,), huge),
    Op("log_softmax", lambda m, a: a.log_softmax(0), lambda a: sp.log_softmax(a, 0), (B,)),
    Op("log_softmax_huge", lambda m, a: a.log_softmax(1), lambda a: sp.log_softmax(a, 1),
       (A,), huge),
    Op("logsumexp", lambda m, a: a.logsumexp(1), lambda a: sp.logsumexp(a, 1), (B,)),
    Op("logsumexp_keep", lambda m, a: m.logsumexp(a, (0, 2), keepdim=True),
       lambda a: sp.logsumexp(a, (0, 2), keepdims=True), (B,)),
    Op("logsumexp_huge", lambda m, a: a.logsumexp(-1), lambda a: sp.logsumexp(a, -1), (A,),
       huge),
    # ---- a few composites ----
    Op("mlp", lambda m, x, w, b: ((x @ w + b).tanh() * x[:, :2]).sum(-1).sigmoid(),
       lambda x, w, b: sp.expit((np.tanh(x @ w + b) * x[:, :2]).sum(-1)),
       ((3, 4), (4, 2), (2,)), complex=True),
    # ---- elementwise math with torch as the only reference (test_math_parity.py) ----
    parity_unary("tan", -1.2, 1.2, complex=True), parity_unary("sinh", complex=True),
    parity_unary("cosh", complex=True), parity_unary("asin", -0.9, 0.9, complex=True),
    parity_unary("acos", -0.9, 0.9, complex=True), parity_unary("atan", -3, 3, complex=True),
    parity_unary("asinh", -3, 3, complex=True), parity_unary("acosh", 1.2, 3, complex=True),
    parity_unary("atanh", -0.9, 0.9, complex=True), parity_unary("erf"), parity_unary("erfc"),
    parity_unary("erfinv", -0.95, 0.95), parity_unary("log2", 0.2, 3, complex=True),
    parity_unary("log10", 0.2, 3, complex=True), parity_unary("exp2", complex=True),
    parity_unary("sinc", -2.5, 2.5, complex=True),
    parity_unary("deg2rad"), parity_unary("rad2deg"), parity_unary("logit", 0.05, 0.95),
    parity_unary("frac", 0.1, 0.9), parity_unary("sgn", 0.2, 2, False),
    parity_unary("arcsin", -0.9, 0.9), parity_unary("arctanh", -0.9, 0.9),
    parity_unary("lgamma", 0.2, 5), parity_unary("digamma", 0.2, 5), parity_unary("i0", -4, 4),
    parity("lgamma_negative", lambda m, x: m.lgamma(x), (-2.9, -2.1)),
    parity("polygamma", lambda m, x: m.polygamma(2, x), (0.3, 4)),
    parity("mvlgamma", lambda m, x: m.mvlgamma(x, 3), (1.2, 4)),
    parity("logit_eps", lambda m, x: m.logit(x, eps=0.1), (0.15, 0.85)),
    parity("atan2", lambda m, y, x: m.atan2(y, x), (-2, 2), (0.3, 2)),
    parity("arctan2", lambda m, y, x: m.arctan2(y, x), (-2, 2), (-2, -0.3)),
    parity("hypot", lambda m, a, b: m.hypot(a, b), (-2, 2), (0.3, 2)),
    parity("logaddexp", lambda m, a, b: m.logaddexp(a, b), (-3, 3), (-3, 3), complex=True),
    parity("xlogy", lambda m, a, b: m.xlogy(a, b), (-2, 2), (0.2, 3)),
    parity("fmod", lambda m, a, b: m.fmod(a, b), (-3, 3), (0.7, 1.3), smooth=False),
    parity("copysign", lambda m, a, b: m.copysign(a, b), (0.2, 2), (-1, 1), smooth=False),
    parity("addcmul", lambda m, a, b, c: m.addcmul(a, b, c, value=0.5),
           (-2, 2), (-2, 2), (-2, 2), complex=True),
    parity("addcdiv", lambda m, a, b, c: m.addcdiv(a, b, c, value=-2),
           (-2, 2), (-2, 2), (0.5, 2), complex=True),
    parity("lerp", lambda m, a, b, w: m.lerp(a, b, w), (-2, 2), (-2, 2), (0, 1)),
    parity("float_power", lambda m, a, b: m.float_power(a, b), (0.5, 2), (-1.5, 1.5)),
    parity("true_divide", lambda m, a, b: m.true_divide(a, b), (-2, 2), (0.5, 2), complex=True),
    parity("clip", lambda m, a: m.clip(a, -0.5, 0.5), (-2, 2), smooth=False),
    parity("nan_to_num", lambda m, a: m.nan_to_num(a, nan=1.0), (-2, 2)),
    # ---- complex numbers only (issue 27): torch is the reference ----
    Op("real", lambda m, a: a.real * a.imag, None, (A,), complex=True),
    Op("real_fn", lambda m, a: m.real(a) - m.imag(a), None, (A,), complex=True),
    Op("conj", lambda m, a: a.conj() * a, None, (A,), complex=True),
    Op("conj_physical", lambda m, a: m.conj_physical(a), None, (A,), complex=True),
    Op("angle", lambda m, a: a.angle(), None, (A,), away_from_zero, complex=True),
    Op("sgn_complex", lambda m, a: a.sgn(), None, (A,), away_from_zero, complex=True),
    Op("square", lambda m, a: a.square(), None, (A,), complex=True),
    Op("reciprocal", lambda m, a: a.reciprocal(), None, (A,), away_from_zero, complex=True),
    Op("rsqrt", lambda m, a: a.rsqrt(), None, (A,), positive, complex=True),
    Op("pow_complex", lambda m, a: a ** (0.5 - 1.5j), None, (A,), positive, complex=True),
    Op("rpow_complex", lambda m, a: (1 + 1j) ** a, None, (A,), complex=True),
    Op("std", lambda m, a: a.std(1), None, (B,), complex=True),
    Op("norm", lambda m, a: a.norm(), None, (B,), away_from_zero, complex=True),
    Op("vector_norm", lambda m, a: m.linalg.vector_norm(a, 2, dim=-1), None, (B,),
       away_from_zero, complex=True),
    Op("dot", lambda m, a, b: m.dot(a, b), None, (C, C), complex=True),
    Op("vdot", lambda m, a, b: m.vdot(a, b), None, (C, C), complex=True),
    Op("outer", lambda m, a, b: m.outer(a, b), None, (C, (3,)), complex=True),
    Op("mH", lambda m, a: a.mH, None, (B,), complex=True),
    Op("adjoint", lambda m, a: m.adjoint(a) @ a, None, (A,), complex=True),
    Op("einsum", lambda m, a, b: m.einsum("bij,jk->bik", a, b), None, (B, (4, 2)),
       complex=True),
    Op("view_as_real", lambda m, a: m.view_as_real(a), None, (A,), complex=True),
    Op("view_as_complex", lambda m, a: m.view_as_complex(m.view_as_real(a) * 2), None, (A,),
       complex=True),
    Op("cumsum", lambda m, a: a.cumsum(1), None, (A,), complex=True),
    Op("cumprod", lambda m, a: m.cumprod(a, 0), None, (A,), complex=True),
    Op("trace", lambda m, a: a.trace(), None, (A,), complex=True),
    Op("kron", lambda m, a, b: m.kron(a, b), None, ((2, 2), (2, 3)), complex=True),
    Op("where_complex", lambda m, a, b: m.where(a.real > 0, a, b), None, (A, C),
       complex=True),
    Op("masked_fill", lambda m, a: a.masked_fill(a.imag > 0, 2 - 1j), None, (A,),
       complex=True),
    Op("lerp_complex", lambda m, a, b: m.lerp(a, b, 0.3), None, (A, A), complex=True),
    Op("addmm", lambda m, a, b, c: m.addmm(a, b, c), None, ((3, 2), A, (4, 2)),
       complex=True),
    Op("tensordot", lambda m, a, b: m.tensordot(a, b, 1), None, (A, (4, 2)), complex=True),
    Op("inner", lambda m, a, b: m.inner(a, b), None, (A, (2, 4)), complex=True),
    Op("roll", lambda m, a: a.roll(1, 1), None, (A,), complex=True),
    Op("diff", lambda m, a: a.diff(dim=1), None, (A,), complex=True),
    Op("cat_real", lambda m, a: m.cat([a, a.real * 2], 0), None, (A,), complex=True),
    Op("logsumexp_complex", lambda m, a: a.logsumexp(1), None, (A,), complex=True),
    Op("logcumsumexp", lambda m, a: a.logcumsumexp(1), None, ((3, 6),), (-3, 3), complex=True),
    Op("float_power_complex", lambda m, a: m.float_power(a, 2.5), None, (A,), positive,
       complex=True),
    Op("cov", lambda m, a: a.cov(), None, (A,), complex=True),
    Op("corrcoef", lambda m, a: a.corrcoef(), None, (A,), complex=True),
    Op("scatter_add", lambda m, a: m.zeros(3, 4, dtype=a.dtype).scatter_add(
        1, m.tensor([[3, 3], [0, 1], [2, 2]]), a[:, :2]), None, (A,), complex=True),
]
assert len({op.name for op in OPS}) == len(OPS)
# The rows each test takes.
NUMPY = [op for op in OPS if op.ref is not None]
NUMPY_IDS = [op.name for op in NUMPY]
SMOOTH = [op for op in NUMPY if op.smooth]
PARITY = [op for op in OPS if op.parity]
COMPLEX = [op for op in OPS if op.complex]


def make_arrays(op: Op, seed: int = 0) -> list[np.ndarray]:
    """float64 inputs for ``op``, drawn from its domain (same seed, same arrays)."""
    rng = np.random.default_rng([seed, sum(map(ord, op.name))])
    if callable(op.domain):
        return [op.domain(rng, s) for s in op.shapes]
    if op.parity:  # one (lo, hi) per input
        return [rng.uniform(lo, hi, s) for (lo, hi), s in zip(op.domain, op.shapes)]
    return [rng.uniform(*op.domain, s) for s in op.shapes]

