"""Sorting, selection, scans and the nan-aware reductions against torch: values, indices,
dtypes and shapes on the same inputs (ties included), gradients by float64 finite
differences (first and second order) going to the index returned, and torch's errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")

TIES = np.array([[3.0, 1.0, 3.0, 2.0, 1.0], [0.0, -1.0, 4.0, 4.0, 4.0], [2.0, 2.0, 2.0, 2.0, 2.0]])
RNG = np.random.default_rng(0)
DISTINCT = RNG.permutation(24).reshape(2, 3, 4).astype(np.float64) / 7


def _both(x: np.ndarray, **kw) -> tuple:
    return mg.tensor(x, **kw), torch.tensor(x)


def _same(ours, ref) -> None:
    assert ours.shape == tuple(ref.shape), (ours.shape, ref.shape)
    assert str(ours.dtype) == str(ref.dtype).removeprefix("torch."), (ours.dtype, ref.dtype)
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-6, atol=1e-12)


def _check_grad(fn, x: np.ndarray) -> None:
    t = mg.tensor(x, dtype=mg.float64, requires_grad=True)
    assert gradcheck(fn, (t,)) and gradgradcheck(fn, (t,))


def _onehot_grad(x: mg.Tensor, values: mg.Tensor, indices: mg.Tensor, dim: int) -> np.ndarray:
    """d sum(values * w) / dx for the indices returned: w scattered there (repeats add)."""
    w = np.arange(1, values.numel() + 1, dtype=np.float64).reshape(values.shape)
    want = np.zeros(x.shape)
    idx, wk = indices.numpy(), w  # (indices never require grad)
    if idx.ndim < x.ndim:
        idx, wk = np.expand_dims(idx, dim), np.expand_dims(w, dim)
    np.put_along_axis(want, idx, 0, dim)
    grid = np.indices(idx.shape)
    full = tuple(idx if i == dim % x.ndim else grid[i] for i in range(x.ndim))
    np.add.at(want, full, wk)
    return want, w


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_sort_and_argsort_are_stable_as_torch(dim: int, descending: bool) -> None:
    x, t = _both(TIES)
    ours = mg.sort(x, dim, descending, stable=True)
    ref = torch.sort(t, dim=dim, descending=descending, stable=True)
    _same(ours.values, ref.values)
    _same(ours.indices, ref.indices)
    _same(x.argsort(dim, descending), torch.argsort(t, dim=dim, descending=descending,
                                                    stable=True))
    assert ours._fields == ("values", "indices")


def test_sort_puts_nan_last_and_first_descending() -> None:
    v = [1.0, math.nan, -2.0, math.nan, 0.0]
    for desc in (False, True):
        ours = mg.sort(mg.tensor(v), descending=desc, stable=True)
        ref = torch.sort(torch.tensor(v), descending=desc, stable=True)
        np.testing.assert_array_equal(ours.values.numpy(), ref.values.numpy())
        assert ours.indices.tolist() == ref.indices.tolist()


def test_sort_of_ints_bools_and_scalars() -> None:
    for arr in [np.array([3, -1, 2, -1]), np.array([True, False, True])]:
        x, t = _both(arr)
        for desc in (False, True):
            ours, ref = x.sort(descending=desc, stable=True), t.sort(descending=desc, stable=True)
            _same(ours.values, ref.values)
            _same(ours.indices, ref.indices)
    ours, ref = mg.tensor(2.0).sort(), torch.tensor(2.0).sort()
    _same(ours.values, ref.values)
    _same(ours.indices, ref.indices)


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_sort_msort_gradients(dim: int) -> None:
    _check_grad(lambda a: a.sort(dim, descending=True).values, DISTINCT)
    _check_grad(lambda a: mg.msort(a), DISTINCT)
    x, t = _both(DISTINCT)
    _same(x.msort(), torch.msort(t))


@pytest.mark.parametrize("largest", [True, False])
def test_topk_matches_torch(largest: bool) -> None:
    x, t = _both(DISTINCT)
    for dim in (0, 1, -1):
        for k in (0, 1, 2):
            ours = mg.topk(x, k, dim, largest)
            ref = torch.topk(t, k, dim=dim, largest=largest)
            _same(ours.values, ref.values)
            _same(ours.indices, ref.indices)
    _check_grad(lambda a: a.topk(2, 1, largest).values, DISTINCT)


@pytest.mark.parametrize("fn", [
    lambda a: a.topk(2, 1),
    lambda a: a.sort(1, descending=True),
    lambda a: a.kthvalue(2, 1),
    lambda a: a.median(1),
    lambda a: a.mode(1),
    lambda a: a.cummax(1),
    lambda a: a.cummin(1),
], ids=["topk", "sort", "kthvalue", "median", "mode", "cummax", "cummin"])
def test_gradient_goes_to_the_index_returned_at_ties(fn) -> None:
    x = mg.tensor(TIES, requires_grad=True)
    out = fn(x)
    want, w = _onehot_grad(x, out.values, out.indices, 1)
    (out.values * mg.tensor(w)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), want)
    # torch puts it at its own index; the values agree wherever the indices do
    ref_x = torch.tensor(TIES)
    ref = fn(ref_x)
    np.testing.assert_array_equal(out.values.detach().numpy(), ref.values.numpy())


def test_kthvalue_median_mode_match_torch() -> None:
    x, t = _both(DISTINCT)
    for dim, keep in [(0, False), (1, True), (-1, False)]:
        for k in (1, 2):
            ours, ref = x.kthvalue(k, dim, keep), t.kthvalue(k, dim, keep)
            _same(ours.values, ref.values)
            _same(ours.indices, ref.indices)
        ours, ref = x.median(dim, keep), t.median(dim, keep)
        _same(ours.values, ref.values)
        _same(ours.indices, ref.indices)
    _same(mg.median(x), torch.median(t))
    _same(mg.median(mg.tensor([1.0, 4.0, 2.0, 3.0])), torch.median(torch.tensor([1.0, 4, 2, 3])))
    m, tm = _both(np.array([[1.0, 2.0, 2.0, 1.0, 3.0], [5.0, 5.0, 0.0, 0.0, 0.0]]))
    for keep in (False, True):
        ours, ref = m.mode(1, keep), tm.mode(1, keep)
        _same(ours.values, ref.values)
        _same(ours.indices, ref.indices)
    _check_grad(lambda a: a.median(1).values + a.kthvalue(3, 2).values.sum(), DISTINCT)
    _check_grad(lambda a: a.median(), DISTINCT)


def test_median_propagates_nan_as_torch() -> None:
    v = np.array([[1.0, math.nan, 3.0, math.nan], [4.0, 1.0, 2.0, 3.0]])
    x, t = _both(v)
    ours, ref = x.median(1), t.median(1)
    np.testing.assert_array_equal(ours.values.numpy(), ref.values.numpy())
    assert ours.indices.tolist() == ref.indices.tolist()
    assert math.isnan(mg.median(x).item()) and math.isnan(torch.median(t).item())


def test_aminmax() -> None:
    x, t = _both(DISTINCT)
    for kw in [{}, {"dim": 1}, {"dim": -1, "keepdim": True}]:
        ours, ref = mg.aminmax(x, **kw), torch.aminmax(t, **kw)
        _same(ours.min, ref.min)
        _same(ours.max, ref.max)
    with pytest.raises(RuntimeError):
        mg.zeros(0).aminmax()


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_cummin_match_torch(name: str) -> None:
    v = np.array([[1.0, 3.0, 3.0, 2.0, 3.0, math.nan, 5.0, math.nan],
                  [2.0, 1.0, 1.0, 0.0, 0.0, 4.0, -1.0, -1.0]])
    x, t = _both(v)
    for dim in (0, 1):
        ours, ref = getattr(mg, name)(x, dim), getattr(torch, name)(t, dim)
        np.testing.assert_array_equal(ours.values.numpy(), ref.values.numpy())
        _same(ours.indices, ref.indices)
    ints, tints = _both(np.array([3, 1, 4, 1, 5]))
    _same(getattr(ints, name)(0).values, getattr(tints, name)(0).values)
    _check_grad(lambda a: getattr(a, name)(2).values, DISTINCT)


def test_cumprod_values_and_exact_gradient_at_zeros() -> None:
    x, t = _both(DISTINCT - 1)
    for dim in (0, 1, 2):
        _same(mg.cumprod(x, dim), torch.cumprod(t, dim))
    ints, tints = _both(np.array([[1, 2, 3], [0, 4, 5]]))
    _same(ints.cumprod(1), tints.cumprod(1))
    _same(ints.cumprod(1, dtype=mg.float64), tints.cumprod(1, dtype=torch.float64))
    for v in ([2.0, 0.0, 3.0, 0.5], [0.0, 0.0, 2.0, 1.5], [1.5, -2.0, 3.0, 0.0],
              [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]):
        _check_grad(lambda a: a.cumprod(0), np.array(v))
        ours = mg.tensor(v, dtype=mg.float64, requires_grad=True)
        ref = torch.tensor(v, dtype=torch.float64, requires_grad=True)
        ours.cumprod(0).sum().backward()
        ref.cumprod(0).sum().backward()
        np.testing.assert_allclose(ours.grad.numpy(), ref.grad.numpy(), rtol=1e-12)
    _check_grad(lambda a: a.cumprod(1), np.array([[1.0, 0.0, 2.0], [0.5, 3.0, 0.0]]))


def test_logcumsumexp() -> None:
    v = np.array([[0.0, -50.0, 1000.0, 1000.0, -math.inf], [-1e3, -1e3, 2.0, 3.0, 4.0]])
    x, t = _both(v)
    for dim in (0, 1):
        np.testing.assert_allclose(x.logcumsumexp(dim).numpy(), t.logcumsumexp(dim).numpy(),
                                   rtol=1e-13)
    _check_grad(lambda a: mg.logcumsumexp(a, 1), DISTINCT)


def test_diff() -> None:
    x, t = _both(DISTINCT)
    for kw in [{}, {"n": 2, "dim": 1}, {"dim": 0}, {"n": 0}]:
        _same(mg.diff(x, **kw), torch.diff(t, **kw))
    p, tp = _both(np.ones((2, 3, 1)))
    _same(x.diff(dim=-1, prepend=p, append=p), t.diff(dim=-1, prepend=tp, append=tp))
    b, tb = _both(np.array([True, False, False, True]))
    _same(b.diff(), tb.diff())
    _same(mg.tensor([1, 4, 9]).diff(), torch.tensor([1, 4, 9]).diff())
    _check_grad(lambda a: a.diff(2, 1), DISTINCT)


def test_nansum_nanmean() -> None:
    v = np.array([[1.0, math.nan, 3.0], [math.nan, math.nan, math.nan]])
    x, t = _both(v)
    for kw in [{}, {"dim": 1}, {"dim": 0, "keepdim": True}]:
        _same(mg.nansum(x, **kw), torch.nansum(t, **kw))
        np.testing.assert_array_equal(mg.nanmean(x, **kw).numpy(), torch.nanmean(t, **kw).numpy())
    _same(mg.tensor([1, 2]).nansum(), torch.tensor([1, 2]).nansum())
    xg = mg.tensor(v, requires_grad=True)
    xg.nanmean(1).sum().backward()
    tg = torch.tensor(v, requires_grad=True)
    tg.nanmean(1).sum().backward()
    # torch's gradient for the all-nan row is nan (0/0); that row's mean is nan whatever
    # the inputs, so ours is 0 there, and torch's elsewhere.
    np.testing.assert_array_equal(xg.grad.numpy()[0], tg.grad.numpy()[0])
    assert xg.grad.numpy()[1].tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(RuntimeError):
        mg.tensor([1, 2]).nanmean()


def test_std_var_mean() -> None:
    x, t = _both(DISTINCT)
    for kw in [{}, {"dim": 1}, {"dim": (0, 2), "keepdim": True, "correction": 0}]:
        for ours, ref in zip(mg.std_mean(x, **kw), torch.std_mean(t, **kw)):
            _same(ours, ref)
        for ours, ref in zip(mg.var_mean(x, **kw), torch.var_mean(t, **kw)):
            _same(ours, ref)


def test_counting_and_nonzero() -> None:
    v = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]])
    x, t = _both(v)
    for dim in (None, 0, 1, (0, 1)):
        _same(mg.count_nonzero(x, dim), torch.count_nonzero(t, dim))
    _same(mg.nonzero(x), torch.nonzero(t))
    _same(mg.argwhere(x), torch.argwhere(t))
    for ours, ref in zip(x.nonzero(as_tuple=True), t.nonzero(as_tuple=True)):
        _same(ours, ref)
    b = x > 0
    tb = t > 0
    for dim in (None, 0, 1):
        kw = {} if dim is None else {"dim": dim}
        _same(mg.any(b, **kw), torch.any(tb, **kw))
        _same(mg.all(b, **kw), torch.all(tb, **kw))


def test_masked_select_take_take_along_dim() -> None:
    x, t = _both(DISTINCT)
    m = np.array([True, False, True, True])
    _same(mg.masked_select(x, mg.tensor(m)), torch.masked_select(t, torch.tensor(m)))
    idx = np.array([[0, -1], [5, 23]])
    _same(mg.take(x, mg.tensor(idx)), torch.take(t, torch.tensor(idx)))
    ind = np.argsort(DISTINCT, axis=1)[:, :2]
    _same(mg.take_along_dim(x, mg.tensor(ind), 1), torch.take_along_dim(t, torch.tensor(ind), 1))
    _same(x.take_along_dim(mg.tensor(idx[1:])), t.take_along_dim(torch.tensor(idx[1:])))
    bcast = np.array([[[1], [0], [2]]])  # broadcasts over dim 0
    _same(x.take_along_dim(mg.tensor(bcast), 2), t.take_along_dim(torch.tensor(bcast), 2))
    mm = mg.tensor(m)
    _check_grad(lambda a: a.masked_select(mm), DISTINCT)
    _check_grad(lambda a: a.take(mg.tensor(np.array([0, 0, 7]))), DISTINCT)
    _check_grad(lambda a: a.take_along_dim(mg.tensor(bcast), 2), DISTINCT)


def test_errors_follow_torch() -> None:
    x = mg.tensor(DISTINCT)
    with pytest.raises(RuntimeError, match="out of range"):
        x.topk(5, 2)
    with pytest.raises(RuntimeError, match="out of range"):
        x.kthvalue(0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.sort(3)
    with pytest.raises(IndexError, match="out of range"):
        x.take(mg.tensor([24]))
    with pytest.raises(RuntimeError, match="long"):
        x.take(mg.tensor([1.0]))
    with pytest.raises(TypeError):
        x.masked_select(mg.tensor([1, 0, 1, 1]))
    with pytest.raises(RuntimeError, match="out of bounds"):  # no negative indices here
        x.take_along_dim(mg.tensor([-1]))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        x.take_along_dim(mg.tensor([0]), 1)
    with pytest.raises(RuntimeError, match="one-dimensional"):
        mg.tensor(1.0).diff()


NUMPY_NAMED = ["sum", "mean", "prod", "amax", "amin", "max", "min", "std", "var", "argmax",
               "argmin", "logsumexp", "any", "all", "nansum", "nanmean", "median", "kthvalue",
               "aminmax", "std_mean", "var_mean", "count_nonzero", "cumsum", "cumprod", "sort",
               "argsort", "cummax", "softmax", "log_softmax", "logcumsumexp"]


@pytest.mark.parametrize("name", NUMPY_NAMED)
def test_numpy_axis_and_keepdims_are_accepted_as_torch(name: str) -> None:
    x, t = _both(DISTINCT)
    if name in ("any", "all"):
        x, t = x > 0.5, t > 0.5
    lead = (2,) if name == "kthvalue" else ()
    keeps = name not in ("count_nonzero", "cumsum", "cumprod", "sort", "argsort", "cummax",
                         "softmax", "log_softmax", "logcumsumexp")
    for kw in [{"axis": 1}, {"axis": -1, "keepdims": True}, {"dim": 0, "keepdims": True}]:
        if not keeps and "keepdims" in kw:
            continue
        ours = getattr(mg, name)(x, *lead, **kw)
        ref = getattr(torch, name)(t, *lead, **kw)
        ours = ours if isinstance(ours, tuple) else (ours,)
        ref = ref if isinstance(ref, tuple) else (ref,)
        for o, r in zip(ours, ref, strict=True):
            _same(o, r)
    if name not in ("std_mean", "var_mean"):  # (function-only names)
        method = getattr(x, name)
        with pytest.raises(TypeError, match="multiple values"):
            method(*lead, 1, axis=1) if name != "aminmax" else method(dim=1, axis=1)


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_matches_torch(interpolation: str) -> None:
    x, t = _both(DISTINCT)
    for q in (0.3, [0.0, 0.25, 0.5, 1.0]):
        qm = mg.tensor(q, dtype=mg.float64) if isinstance(q, list) else q
        qt = torch.tensor(q, dtype=torch.float64) if isinstance(q, list) else q
        for dim in (None, 0, -1):
            for keep in (False, True):
                _same(mg.quantile(x, qm, dim, keep, interpolation=interpolation),
                      torch.quantile(t, qt, dim, keep, interpolation=interpolation))
    _check_grad(lambda a: a.quantile(mg.tensor([0.3, 0.5], dtype=mg.float64), 1,
                                     interpolation=interpolation), DISTINCT)
    v = np.array([[1.0, math.nan, 2.0], [3.0, 1.0, 2.0]])
    np.testing.assert_array_equal(mg.tensor(v).quantile(0.5, 1).numpy(),
                                  torch.tensor(v).quantile(0.5, 1).numpy())


def test_quantile_errors() -> None:
    with pytest.raises(RuntimeError, match="range"):
        mg.tensor([1.0]).quantile(1.5)
    with pytest.raises(RuntimeError, match="float"):
        mg.tensor([1]).quantile(0.5)
    with pytest.raises(RuntimeError, match="interpolation"):
        mg.tensor([1.0]).quantile(0.5, interpolation="cubic")


def test_unique_and_bincount() -> None:
    v = np.array([[3, 1, 3], [2, 1, 3]])
    x, t = _both(v)
    for kw in [{}, {"return_inverse": True}, {"return_counts": True},
               {"return_inverse": True, "return_counts": True, "dim": 0},
               {"return_inverse": True, "dim": 1}]:
        ours, ref = mg.unique(x, **kw), torch.unique(t, **kw)
        ours = ours if isinstance(ours, tuple) else (ours,)
        ref = ref if isinstance(ref, tuple) else (ref,)
        for o, r in zip(ours, ref, strict=True):
            _same(o, r)
    f = mg.tensor([1.0, 2.0, 1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="derivative for 'unique'"):
        f.unique().sum().backward()
    b, tb = _both(np.array([1, 1, 4, 0]))
    _same(mg.bincount(b), torch.bincount(tb))
    _same(b.bincount(minlength=7), tb.bincount(minlength=7))
    w = np.array([0.5, 1.0, 2.0, 3.0])
    _same(b.bincount(mg.tensor(w)), tb.bincount(torch.tensor(w)))
    _check_grad(lambda a: b.bincount(a), w)
    with pytest.raises(RuntimeError, match="non-negative"):
        mg.tensor([-1, 2]).bincount()


# distinct numbers (which of tied values gets the gradient is arbitrary), an all-nan slice
NANS = np.array([[[math.nan, math.nan, math.nan, math.nan], [3.0, math.nan, 1.5, 1.0],
                  [2.0, 5.0, 1.25, 0.5]],
                 [[math.nan, 4.0, math.nan, 2.5], [7.0, 6.0, 5.5, 4.5],
                  [0.75, math.nan, 0.25, math.nan]]])


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_nanmedian_matches_torch(dim: int) -> None:
    for keep in (False, True):
        x, t = mg.tensor(NANS, requires_grad=True), torch.tensor(NANS, requires_grad=True)
        ours, ref = x.nanmedian(dim, keep), t.nanmedian(dim, keep)
        np.testing.assert_array_equal(ours.values.detach().numpy(), ref.values.detach().numpy())
        # an all-nan slice: torch's index is any of its nans (nth_element's), ours the first
        some = ~np.isnan(ref.values.detach().numpy())
        np.testing.assert_array_equal(ours.indices.numpy()[some], ref.indices.numpy()[some])
        assert np.all(ours.indices.numpy()[~some] == 0)
        w = np.arange(1.0, ref.values.numel() + 1).reshape(tuple(ref.values.shape))
        (ours.values.nan_to_num() * mg.tensor(w)).sum().backward()
        (ref.values.nan_to_num() * torch.tensor(w)).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())
    _same(mg.nanmedian(mg.tensor(NANS)), torch.nanmedian(torch.tensor(NANS)))
    assert math.isnan(mg.tensor([math.nan, math.nan]).nanmedian().item())
    _same(mg.tensor([3, 1, 2, 5]).nanmedian(), torch.tensor([3, 1, 2, 5]).nanmedian())
    _check_grad(lambda a: a.nanmedian(1).values + a.nanmedian(), DISTINCT)  # no nan: median's
    with pytest.raises(IndexError, match="non-zero size"):
        mg.ones(2, 0).nanmedian(1)


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_nanquantile_matches_torch(interpolation: str) -> None:
    for q in (0.3, [0.0, 0.25, 0.5, 1.0]):
        qm, qt = (q, q) if isinstance(q, float) else (mg.tensor(q, dtype=mg.float64),
                                                      torch.tensor(q, dtype=torch.float64))
        for dim, keep in ((None, False), (None, True), (1, False), (2, True), (-3, False)):
            x, t = mg.tensor(NANS, requires_grad=True), torch.tensor(NANS, requires_grad=True)
            ours = mg.nanquantile(x, qm, dim, keep, interpolation=interpolation)
            ref = torch.nanquantile(t, qt, dim, keep, interpolation=interpolation)
            assert ours.shape == tuple(ref.shape)
            np.testing.assert_allclose(ours.detach().numpy(), ref.detach().numpy(), rtol=1e-15)
            ours.nan_to_num().sum().backward()
            ref.nan_to_num().sum().backward()
            np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-15)
    _check_grad(lambda a: a.nanquantile(mg.tensor([0.3, 0.5], dtype=mg.float64), 1,
                                        interpolation=interpolation), DISTINCT)

    # torch's errors, word for word (they say quantile() for nanquantile too)
    def message(call, lib) -> str:
        with pytest.raises(RuntimeError) as e:
            call(lib)
        return str(e.value)

    for call in (lambda m: m.tensor([1.0]).nanquantile(1.5),
                 lambda m: m.tensor([1.0]).nanquantile(math.nan),
                 lambda m: m.tensor([1.0, 2.0]).nanquantile(m.tensor([0.5, -0.1])),
                 lambda m: m.tensor([1.0]).nanquantile(0.5, interpolation="cubic"),
                 lambda m: m.tensor([1]).nanquantile(0.5),
                 lambda m: m.ones(0).nanquantile(0.5),
                 lambda m: m.ones(0).quantile(0.5)):
        assert message(call, mg) == message(call, torch)
