"""Rearranging, scattering, stacking and the fused products against torch: values, dtypes
and shapes on the same inputs, gradients by float64 finite differences (first and second
order), and torch's errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3, 4))
M = RNG.standard_normal((3, 4))


def _same(ours, ref, tol: float = 1e-12) -> None:
    if isinstance(ref, (tuple, list)):
        assert len(ours) == len(ref)
        for o, r in zip(ours, ref):
            _same(o, r, tol)
        return
    assert ours.shape == tuple(ref.shape), (ours.shape, ref.shape)
    assert str(ours.dtype) == str(ref.dtype).removeprefix("torch."), (ours.dtype, ref.dtype)
    np.testing.assert_allclose(ours.detach().numpy(), ref.detach().numpy(), rtol=tol, atol=tol)


def _grads(fn, *xs: np.ndarray) -> None:
    ts = [mg.tensor(x, requires_grad=True) for x in xs]
    assert gradcheck(fn, ts) and gradgradcheck(fn, ts)


CALLS = [  # (id, fn(m, x) run on minigrad and torch alike, differentiable)
    ("repeat_interleave_int", lambda m, x: m.repeat_interleave(x, 2)),
    ("repeat_interleave_dim", lambda m, x: x.repeat_interleave(2, dim=1)),
    ("repeat_interleave_tensor", lambda m, x: x.repeat_interleave(m.tensor([1, 0, 3]), dim=1)),
    ("repeat_interleave_neg_dim", lambda m, x: x.repeat_interleave(m.tensor([2]), dim=-1)),
    ("roll_flat", lambda m, x: m.roll(x, 5)),
    ("roll_dims", lambda m, x: x.roll((1, -2), (0, 2))),
    ("rot90", lambda m, x: m.rot90(x)),
    ("rot90_k", lambda m, x: x.rot90(3, (1, 2))),
    ("rot90_neg", lambda m, x: x.rot90(-2, [2, 0])),
    ("tile", lambda m, x: m.tile(x, (2,))),
    ("tile_more", lambda m, x: x.tile(2, 1, 1, 2)),
    ("narrow", lambda m, x: m.narrow(x, 2, 1, 2)),
    ("narrow_neg", lambda m, x: x.narrow(-1, -3, 3)),
    ("movedim", lambda m, x: m.movedim(x, 0, -1)),
    ("movedim_many", lambda m, x: x.movedim((0, 1), (2, 0))),
    ("moveaxis", lambda m, x: m.moveaxis(x, -1, 0)),
    ("unfold", lambda m, x: x.unfold(2, 2, 1)),
    ("unfold_step", lambda m, x: x.unfold(1, 2, 2)),
    ("unfold_all", lambda m, x: x.unfold(0, 2, 3)),
    ("expand_as", lambda m, x: x[:, :1].expand_as(x)),
    ("view_as", lambda m, x: x.view_as(x.reshape(4, 6))),
    ("hstack", lambda m, x: m.hstack([x, x[:, :1]])),
    ("vstack", lambda m, x: m.vstack([x, x[:1]])),
    ("dstack", lambda m, x: m.dstack([x, x])),
    ("column_stack", lambda m, x: m.column_stack([x[0], x[0, :, 0]])),
    ("hstack_1d", lambda m, x: m.hstack([x[0, 0], x[1, 1]])),
    ("vstack_1d", lambda m, x: m.vstack([x[0, 0], x[1, 1]])),
    ("dstack_1d", lambda m, x: m.dstack([x[0, 0], x[1, 1]])),
    ("kron", lambda m, x: m.kron(x[0], x[1, :2])),
    ("kron_nd", lambda m, x: x.kron(x[0, :2, :1])),
    ("block_diag", lambda m, x: m.block_diag(x[0], x[1, :2, :1], x[0, 0], x[1, 0, 0])),
    ("cartesian_prod", lambda m, x: m.cartesian_prod(x[0, 0], x[1, 0, :2], x[0, 1, :3])),
    ("cdist", lambda m, x: m.cdist(x[0], x[1])),
    ("cdist_batched", lambda m, x: m.cdist(x, x[:, :2])),
    ("cdist_p1", lambda m, x: m.cdist(x[0], x[1], p=1)),
    ("pdist", lambda m, x: m.pdist(x[0])),
    ("pdist_p1", lambda m, x: m.pdist(x[1].mT, p=1)),
    ("cov", lambda m, x: m.cov(x[0])),
    ("cov_1d", lambda m, x: x[0, 0].cov(correction=0)),
    ("cov_weights", lambda m, x: x[0].cov(fweights=m.tensor([1, 2, 0, 3]),
                                         aweights=m.tensor([0.5, 1.0, 2.0, 1.5],
                                                           dtype=m.float64))),
    ("corrcoef", lambda m, x: m.corrcoef(x[0])),
    ("addmm", lambda m, x: m.addmm(x[0, :, :3], x[0], x[1].mT[:, :3])),
    ("addmm_scaled", lambda m, x: x[0, 0, :3].addmm(x[0], x[1].mT, beta=0.5, alpha=-2)),
    ("addmv", lambda m, x: m.addmv(x[0, :, 0], x[0], x[1, 0], alpha=3)),
    ("baddbmm", lambda m, x: m.baddbmm(x[:, :, :3], x, x.mT[:, :, :3], beta=2)),
    ("scatter", lambda m, x: x.scatter(1, m.tensor([[[0, 2, 1, 0]], [[1, 1, 2, 2]]]),
                                       x[:, :1] * 2)),
    ("scatter_value", lambda m, x: x.scatter(2, m.tensor([[[0], [3], [1]]] * 2), 7.5)),
    ("scatter_add", lambda m, x: m.scatter_add(x, 1, m.tensor([[[0, 0, 2, 2], [0, 0, 1, 1]]] * 2),
                                               x[:, :2] + 1)),
    ("index_add", lambda m, x: x.index_add(2, m.tensor([0, 3, 0]), x[:, :, :3], alpha=2)),
    ("index_copy", lambda m, x: m.index_copy(x, 1, m.tensor([2, 0]), x[:, 1:] * 3)),
]


@pytest.mark.parametrize("fn", [c[1] for c in CALLS], ids=[c[0] for c in CALLS])
def test_matches_torch_with_gradients(fn) -> None:
    _same(fn(mg, mg.tensor(X)), fn(torch, torch.tensor(X)))
    x32 = X.astype(np.float32)
    _same(fn(mg, mg.tensor(x32)), fn(torch, torch.tensor(x32)), 1e-5)
    ours = mg.tensor(X, requires_grad=True)
    ref = torch.tensor(X, requires_grad=True)
    out, rout = fn(mg, ours), fn(torch, ref)
    w = RNG.standard_normal(out.shape)
    (out * mg.tensor(w)).sum().backward()
    (rout * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), ref.grad.numpy(), rtol=1e-10, atol=1e-12)
    _grads(lambda a: fn(mg, a), X)


def test_scatter_family_gradients_reach_src() -> None:
    idx = mg.tensor([[0, 2, 1, 0], [1, 1, 2, 2]])
    src = RNG.standard_normal((2, 4))
    _grads(lambda a, s: a.scatter(0, idx[:1], s), M, src)
    _grads(lambda a, s: a.scatter_add(0, idx, s), M, src)
    _grads(lambda a, s: a.index_add(1, mg.tensor([3, 3]), s.mT[:3] * 1.0), M, src)
    _grads(lambda a, s: a.index_copy(0, mg.tensor([2, 0]), s), M, src)
    for name, args in [("scatter", (0, idx[:1])), ("scatter_add", (0, idx))]:
        t_args = (args[0], torch.tensor(args[1].numpy()))
        _same(getattr(mg.tensor(M), name)(*args, mg.tensor(src)),
              getattr(torch.tensor(M), name)(*t_args, torch.tensor(src)))


def test_in_place_scatters_write_into_the_tensor() -> None:
    for name, args in [("scatter_", (1, [[0], [2], [1]], 9.0)),
                       ("scatter_add_", (0, [[0, 1, 2, 0]], np.ones((1, 4)))),
                       ("index_add_", (1, [1, 1], np.ones((3, 2)))),
                       ("index_copy_", (0, [1], np.full((1, 4), 5.0)))]:
        conv = [a if isinstance(a, (int, float)) else np.asarray(a) for a in args]
        ours, ref = mg.tensor(M), torch.tensor(M)
        got = getattr(ours, name)(*[mg.tensor(a) if isinstance(a, np.ndarray) else a
                                    for a in conv])
        getattr(ref, name)(*[torch.tensor(a) if isinstance(a, np.ndarray) else a
                             for a in conv])
        assert got is ours
        _same(ours, ref)


def test_repeat_interleave_forms() -> None:
    counts = [2, 0, 1]
    _same(mg.repeat_interleave(mg.tensor(counts)), torch.repeat_interleave(torch.tensor(counts)))
    _same(mg.tensor(3.0).repeat_interleave(2), torch.tensor(3.0).repeat_interleave(2))
    _same(mg.tensor(M).repeat_interleave(2, 0, output_size=6),
          torch.tensor(M).repeat_interleave(2, 0, output_size=6))
    with pytest.raises(RuntimeError, match="same size"):
        mg.tensor(M).repeat_interleave(mg.tensor([1, 2]), 0)
    with pytest.raises(RuntimeError, match="negative"):
        mg.tensor(M).repeat_interleave(-1)


def test_atleast_and_meshgrid() -> None:
    for n in (1, 2, 3):
        f, g = getattr(mg, f"atleast_{n}d"), getattr(torch, f"atleast_{n}d")
        for x in (np.float64(2.0), np.arange(3.0), np.ones((2, 3)), np.ones((2, 3, 4))):
            _same(f(mg.tensor(x)), g(torch.tensor(x)))
        _same(f(mg.tensor(1.0), mg.tensor([1.0, 2.0])),
              g(torch.tensor(1.0), torch.tensor([1.0, 2.0])))
    a, b, c = np.arange(3.0), np.arange(2.0) + 5, np.arange(4.0)
    for indexing in ("ij", "xy"):
        _same(mg.meshgrid(mg.tensor(a), mg.tensor(b), mg.tensor(c), indexing=indexing),
              torch.meshgrid(torch.tensor(a), torch.tensor(b), torch.tensor(c),
                             indexing=indexing))
        _same(mg.meshgrid([mg.tensor(a), mg.tensor(b)], indexing=indexing),
              torch.meshgrid([torch.tensor(a), torch.tensor(b)], indexing=indexing))
    with pytest.warns(UserWarning, match="indexing"):
        mg.meshgrid(mg.tensor(a))
    with pytest.raises(RuntimeError, match="indexing"):
        mg.meshgrid(mg.tensor(a), indexing="ji")
    _grads(lambda u, v: mg.meshgrid(u, v, indexing="xy")[0] * mg.meshgrid(u, v,
                                                                           indexing="xy")[1],
           a, b)


def test_triangle_indices() -> None:
    for args in [(3, 3), (4, 2, 1), (2, 5, -1), (3, 4, -5), (0, 3)]:
        _same(mg.tril_indices(*args), torch.tril_indices(*args))
        _same(mg.triu_indices(*args), torch.triu_indices(*args))


def test_new_factories_and_random_fills() -> None:
    x, t = mg.tensor(M), torch.tensor(M)
    _same(x.new_zeros(2, 3), t.new_zeros(2, 3))
    _same(x.new_ones((2,)), t.new_ones((2,)))
    _same(x.new_full((2, 2), 7), t.new_full((2, 2), 7))
    _same(x.new_tensor([1, 2]), t.new_tensor([1, 2]))
    assert x.new_empty(3, 1).shape == (3, 1) and x.new_empty(3).dtype == np.float64
    mg.manual_seed(3)
    u = mg.zeros(1000).uniform_(-2, 5)
    assert u.min().item() >= -2 and u.max().item() < 5 and abs(u.mean().item() - 1.5) < 0.3
    v = mg.zeros(2000, dtype=mg.float64).normal_(3.0, 0.5)
    assert abs(v.mean().item() - 3.0) < 0.05 and abs(v.std().item() - 0.5) < 0.05
    assert v.dtype == np.float64
    mg.manual_seed(3)
    assert mg.zeros(1000).uniform_(**{"from": -2, "to": 5}).tolist() == u.tolist()
    p = mg.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        p.uniform_()
    with mg.no_grad():
        p.normal_()
    assert p.requires_grad and p.abs().sum().item() > 0
    assert mg.ones(2).fill_(3).tolist() == [3.0, 3.0] and mg.ones(2).zero_().tolist() == [0, 0]


def test_errors_follow_torch() -> None:
    x = mg.tensor(X)
    cases = [
        (RuntimeError, "maximum size", lambda: x.unfold(0, 3, 1)),
        (RuntimeError, "step", lambda: x.unfold(0, 1, 0)),
        (RuntimeError, "exceeds dimension size", lambda: x.narrow(2, 3, 2)),
        (RuntimeError, "rotation dims", lambda: x.rot90(1, (1, 1))),
        (RuntimeError, "total rotation dims", lambda: x.rot90(1, (0,))),
        (RuntimeError, "shifts and dims", lambda: x.roll((1, 2), 0)),
        (RuntimeError, "movedim", lambda: x.movedim((0, 1), 2)),
        (RuntimeError, "same number of dimensions", lambda: x.scatter(0, mg.tensor([0]), 1.0)),
        (RuntimeError, "out of bounds", lambda: x.scatter(1, mg.tensor([[[3]]]), 1.0)),
        (RuntimeError, "dtype", lambda: x.scatter(1, mg.tensor([[[0]]]),
                                                   mg.ones(1, 1, 1, dtype=mg.float32))),
        (IndexError, "out of range", lambda: x.index_add(0, mg.tensor([2]), x[:1])),
        (RuntimeError, "slice shape", lambda: x.index_copy(0, mg.tensor([1]), x)),
        (RuntimeError, "must be a matrix", lambda: mg.addmm(x[0], x, x)),
        (RuntimeError, "columns", lambda: mg.cdist(x[0], x[0].mT)),
        (RuntimeError, "2 or fewer", lambda: mg.block_diag(x)),
        (RuntimeError, "two or fewer", lambda: x.cov()),
    ]
    for err, match, call in cases:
        with pytest.raises(err, match=match):
            call()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="degrees of freedom"):
            mg.tensor([[1.0]]).cov()


MORE = [
    ("ravel", lambda m, x: m.ravel(x[:, 1:])),
    ("swapdims", lambda m, x: m.swapdims(x, 0, 2)),
    ("fliplr", lambda m, x: m.fliplr(x)),
    ("flipud", lambda m, x: x.flipud()),
    ("select", lambda m, x: m.select(x, 1, -1)),
    ("index_fill", lambda m, x: x.index_fill(2, m.tensor([0, 3]), -1.5)),
    ("sum_to_size", lambda m, x: x.sum_to_size(3, 1)),
    ("mv", lambda m, x: m.mv(x[0], x[1, 0])),
    ("inner", lambda m, x: m.inner(x, x[0])),
    ("vdot", lambda m, x: m.vdot(x[0, 0], x[1, 1])),
    ("outer", lambda m, x: x[0, 0].outer(x[1, 1])),
    ("ger", lambda m, x: m.ger(x[0, 0], x[1, 1, :2])),
    ("dist", lambda m, x: m.dist(x[0], x[1])),
    ("dist_p1", lambda m, x: x[0].dist(x[1], 1)),
]


@pytest.mark.parametrize("fn", [c[1] for c in MORE], ids=[c[0] for c in MORE])
def test_more_rearrangements_and_products(fn) -> None:
    test_matches_torch_with_gradients(fn)


@pytest.mark.parametrize("how", [3, 4, [1, 3], [0, 2, 2, 9]])
def test_tensor_split_and_numpy_splits(how) -> None:
    x, t = mg.tensor(X), torch.tensor(X)
    for dim in (1, 2):
        _same(mg.tensor_split(x, how, dim), torch.tensor_split(t, how, dim))
    for name, ok in [("hsplit", 3), ("vsplit", 2), ("dsplit", 2)]:
        _same(getattr(mg, name)(x, ok), getattr(torch, name)(t, ok))
        _same(getattr(x, name)([1]), getattr(t, name)([1]))
    with pytest.raises(RuntimeError, match="divisible"):
        mg.hsplit(x, 2)
    with pytest.raises(RuntimeError, match="at least 3"):
        mg.dsplit(x[0], 2)
    with pytest.raises(IndexError, match="out of range"):
        x.select(0, 2)
    with pytest.raises(RuntimeError, match="not expandable"):
        x.sum_to_size(2, 2)


SCATTER_SELF = np.array([[1.0, 0.0, 3.0, -2.0], [2.0, 5.0, 0.0, 4.0], [0.5, -1.0, 2.0, 6.0]])
SCATTER_SRC = np.array([[2.0, 0.0, 1.5, 3.0], [0.0, -4.0, 2.0, 1.0]])  # zeros, for prod
SCATTER_IDX = np.array([[0, 2, 0, 1], [0, 2, 0, 0]])  # repeats; row 1 is never written


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_matches_torch(reduce: str, include_self: bool) -> None:
    torch = pytest.importorskip("torch")
    for dim, a, s, i in [(0, SCATTER_SELF, SCATTER_SRC, SCATTER_IDX),
                         (1, SCATTER_SELF.T.copy(), SCATTER_SRC.T.copy(), SCATTER_IDX.T.copy())]:
        x, xt = mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        y, yt = mg.tensor(s, requires_grad=True), torch.tensor(s, requires_grad=True)
        ours = x.scatter_reduce(dim, mg.tensor(i), y, reduce, include_self=include_self)
        ref = xt.scatter_reduce(dim, torch.tensor(i), yt, reduce, include_self=include_self)
        np.testing.assert_allclose(ours.detach().numpy(), ref.detach().numpy(), rtol=1e-15)
        w = np.arange(1.0, a.size + 1).reshape(a.shape)
        (ours * mg.tensor(w)).sum().backward()
        (ref * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-15)
        np.testing.assert_allclose(y.grad.numpy(), yt.grad.numpy(), rtol=1e-15)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_gradients_by_finite_differences(reduce: str) -> None:
    # distinct nonzero values: prod's and amax's derivatives exist there (a tie is a kink)
    rng = np.random.default_rng(5)
    a = mg.tensor(rng.uniform(0.5, 2.0, (3, 4)), requires_grad=True)
    s = mg.tensor(rng.uniform(0.5, 2.0, (2, 4)), requires_grad=True)
    idx = mg.tensor(SCATTER_IDX)
    for inc in (True, False):
        f = lambda x, y, inc=inc: x.scatter_reduce(0, idx, y, reduce, include_self=inc)  # noqa: E731
        assert gradcheck(f, (a, s)) and gradgradcheck(f, (a, s))


def test_scatter_reduce_prod_is_exact_at_zeros() -> None:
    # places (0, 0) and (0, 2) with one zero, (1, 1) and (1, 2) with two: the
    # derivative is the product of the others. Finite differences agree to second order
    # (prod is a polynomial); the second derivative at two zeros is the third factor.
    a = mg.tensor([[0.0, 2.0, 5.0], [3.0, 0.0, 0.0]], dtype=mg.float64, requires_grad=True)
    s = mg.tensor([[4.0, 0.0, 0.0], [1.5, 7.0, 0.0]], dtype=mg.float64, requires_grad=True)
    idx = mg.tensor([[0, 1, 0], [0, 1, 1]])
    f = lambda x, y: x.scatter_reduce(0, idx, y, "prod")  # noqa: E731
    assert gradcheck(f, (a, s)) and gradgradcheck(f, (a, s))
    (ga,) = mg.autograd.grad(f(a, s).sum(), a, create_graph=True)
    assert ga.tolist() == [[6.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
    (h,) = mg.autograd.grad(ga[1, 1], s)  # d/ds of a[1,1]'s derivative s[0,1] s[1,1] ... = 7
    assert h.tolist() == [[0.0, 7.0, 0.0], [0.0, 0.0, 0.0]]
    # three zeros and a 5 in one place: out = a s0 s1 s2, whose first two orders are 0
    # there and whose third, d3/(da ds0 ds1), is s2 = 5
    a = mg.tensor([0.0], dtype=mg.float64, requires_grad=True)
    s = mg.tensor([0.0, 0.0, 5.0], dtype=mg.float64, requires_grad=True)
    out = a.scatter_reduce(0, mg.tensor([0, 0, 0]), s, "prod")
    (ga,) = mg.autograd.grad(out.sum(), a, create_graph=True)
    (gas,) = mg.autograd.grad(ga.sum(), s, create_graph=True)
    assert ga.tolist() == [0.0] and gas.tolist() == [0.0, 0.0, 0.0]
    (third,) = mg.autograd.grad(gas[0], s)
    assert third.tolist() == [0.0, 5.0, 0.0]


@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_prod_third_order_at_zeros(include_self: bool) -> None:
    # places with 0, 1, 2 and 3 zeros among up to 4 entries (runs of uneven length): the
    # gradient's own second derivatives, i.e. the third order of out, by finite differences
    a = mg.tensor([[0.0, 2.0, 0.0, 1.5], [3.0, 0.0, 0.0, 0.5]], dtype=mg.float64,
                  requires_grad=True)
    s = mg.tensor([[0.0, 0.0, 0.0, 2.5], [1.5, 0.0, 4.0, 3.0], [2.0, 0.0, 0.0, 0.7]],
                  dtype=mg.float64, requires_grad=True)
    idx = mg.tensor([[0, 1, 0, 0], [0, 1, 0, 1], [0, 0, 1, 0]])
    w = mg.tensor(np.random.default_rng(1).uniform(0.5, 1.5, (2, 4)))

    def grads(x, y):
        out = x.scatter_reduce(0, idx, y, "prod", include_self=include_self)
        return mg.autograd.grad((out * w).sum(), (x, y), create_graph=True)

    assert gradcheck(grads, (a, s)) and gradgradcheck(grads, (a, s))


def test_scatter_reduce_amax_without_self_ignores_self_in_ties() -> None:
    # out = max(src[0], src[1]) = src[0]: it does not depend on x, so src[0] gets the whole
    # gradient. torch 2.13 gives 0.5: it counts the excluded x (equal to it) in the tie.
    x = mg.tensor([0.0], dtype=mg.float64, requires_grad=True)
    src = mg.tensor([0.0, -1.0], dtype=mg.float64, requires_grad=True)
    x.scatter_reduce(0, mg.tensor([0, 0]), src, "amax", include_self=False).sum().backward()
    assert src.grad.tolist() == [1.0, 0.0] and x.grad.tolist() == [0.0]
    h = 1e-6  # one-sided differences (a tie is a kink; away from x, src[0] rules alone)
    f = lambda v: mg.tensor([0.0]).scatter_reduce(  # noqa: E731
        0, mg.tensor([0, 0]), mg.tensor(v), "amax", include_self=False).item()
    assert f([h, -1.0]) - f([0.0, -1.0]) == pytest.approx(h, rel=1e-9)
    assert f([0.0, -1.0]) - f([-h, -1.0]) == pytest.approx(h, rel=1e-9)


def test_scatter_reduce_integers_inplace_and_errors() -> None:
    torch = pytest.importorskip("torch")
    x, i, s = np.array([1, 2, 3, 4]), np.array([0, 0, 1, 1]), np.array([5, 6, 7, 9])
    for inc in (True, False):
        got = mg.tensor(x).scatter_reduce(0, mg.tensor(i), mg.tensor(s), "mean", include_self=inc)
        ref = torch.tensor(x).scatter_reduce(0, torch.tensor(i), torch.tensor(s), "mean",
                                             include_self=inc)
        assert got.tolist() == ref.tolist() and got.dtype == np.int64
    w = mg.tensor([1.0, 4.0], requires_grad=True)
    y = w * 1.0
    src = mg.tensor([5.0, 3.0], requires_grad=True)
    version = y._version
    y.scatter_reduce_(0, mg.tensor([1, 1]), src, "amin")
    assert y.tolist() == [1.0, 3.0] and y._version > version
    y.sum().backward()  # the 4 lost to src[1]: its gradient goes there
    assert w.grad.tolist() == [1.0, 0.0] and src.grad.tolist() == [0.0, 1.0]
    assert mg.scatter_reduce is mg.Tensor.scatter_reduce
    # a 0-d self, index and src are one entry each, in every scatter (torch's reading)
    for lib in (mg, torch):
        one = lib.tensor(2.0), lib.tensor(0), lib.tensor(3.0)
        got = [one[0].scatter_reduce(0, *one[1:], r, include_self=inc)
               for r in ("sum", "prod", "mean", "amax", "amin") for inc in (True, False)]
        got += [one[0].scatter_add(0, *one[1:]), one[0].scatter(-1, *one[1:])]
        assert all(t.shape == () for t in got)
        if lib is mg:
            ours = [t.item() for t in got]
    assert ours == [t.item() for t in got]
    with pytest.raises(RuntimeError, match="index 1 is out of bounds for dimension 0 with size 1"):
        mg.tensor(2.0).scatter_add(0, mg.tensor(1), mg.tensor(3.0))
    flags = mg.tensor([True, False]).scatter_reduce(0, mg.tensor([0, 0]),
                                                    mg.tensor([False, False]), "amax",
                                                    include_self=False)
    assert flags.tolist() == [False, False]
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod"):
        y.scatter_reduce(0, mg.tensor([0]), mg.tensor([1.0]), "max")
    with pytest.raises(TypeError, match="'src' .* must be Tensor, not float"):
        y.scatter_reduce(0, mg.tensor([0]), 2.0, "sum")
    with pytest.raises(RuntimeError, match="Expected self.dtype to be equal to src.dtype"):
        y.scatter_reduce(0, mg.tensor([0]), mg.tensor([1]), "sum")
