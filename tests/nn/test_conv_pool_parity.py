"""Convolutions and pooling against torch (issue 26): F.conv1d / conv2d, max_pool1d / 2d,
avg_pool1d / 2d, adaptive_avg_pool1d / 2d and their layers, over a grid of settings in
float64, values, indices and gradients; gradcheck and gradgradcheck; and a PointNet-style
registration model (kernel-1 Conv1d features into an SVD head) that trains."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import nn

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RTOL = 1e-12


@pytest.fixture(autouse=True, scope="module")
def _torch_one_thread():
    # torch's thread pool makes each new convolution setting cost ~0.1 s on a busy machine
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _both(fn_mg: Any, fn_torch: Any, arrays: list, *args: Any, **kwargs: Any) -> tuple:
    """Each library's ``fn(*tensors, *args, **kwargs)`` with ``arrays`` as tensors (None
    stays None): the output(s) and the gradients of <output, fixed weights>; an exception's
    type and first words instead when the call raises."""
    res = []
    for lib, fn in ((mg, fn_mg), (torch, fn_torch)):
        ins = [None if a is None else lib.tensor(a, requires_grad=a.dtype.kind == "f")
               for a in arrays]
        try:
            out = fn(*ins, *args, **kwargs)
        except (RuntimeError, ValueError) as e:
            res.append([type(e).__name__, str(e).split(",")[0]])
            continue
        y, rest = (out[0], list(out[1:])) if isinstance(out, tuple) else (out, [])
        weights = lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)))
        grads = lib.autograd.grad((y * weights).sum(),
                                  [t for t in ins if t is not None and t.requires_grad])
        res.append([y.detach().numpy(), *[r.numpy() for r in rest],
                    *[g.numpy() for g in grads]])
    return res[0], res[1]


def _same(name: str, arrays: list, *args: Any, **kwargs: Any) -> None:
    """F.<name> and torch's on the same inputs give the same values, indices, gradients,
    or the same kind of error."""
    _assert_same(*_both(getattr(F, name), getattr(TF, name), arrays, *args, **kwargs),
                 f"{name} {args} {kwargs}")


def _assert_same(ours: list, theirs: list, where: str) -> None:
    assert len(ours) == len(theirs), where
    for a, b in zip(ours, theirs):
        if isinstance(b, str):
            assert a == b, where
            continue
        assert a.shape == b.shape and a.dtype == b.dtype, where
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=RTOL, err_msg=where)


R = np.random.default_rng(26)


def _pairwise(*values: tuple) -> list[tuple]:
    """Settings in which every pair of values of two settings occurs at least once (greedy
    over the full product, in a fixed order)."""
    todo = {(i, a, j, b) for i, j in itertools.combinations(range(len(values)), 2)
            for a in range(len(values[i])) for b in range(len(values[j]))}
    picked = []
    for combo in itertools.product(*[range(len(v)) for v in values]):
        pairs = {(i, combo[i], j, combo[j])
                 for i, j in itertools.combinations(range(len(values)), 2)}
        if pairs & todo:
            todo -= pairs
            picked.append(tuple(v[c] for v, c in zip(values, combo)))
    return picked


@pytest.mark.parametrize("n", [1, 2])
def test_conv_grid_matches_torch(n: int) -> None:
    spatial = (9,) if n == 1 else (7, 6)
    x = R.standard_normal((2, 4, *spatial))
    bias = R.standard_normal(6)
    # every value of each setting against every value of each other one (a pairwise grid),
    # not the full product: the same coverage of interactions for a tenth of the time
    for k, stride, padding, dilation, groups in _pairwise(
            (1, 2, 3), (1, 2, (2, 1)[:n]), (0, 1, (2, 0)[:n], "same", "valid"), (1, 2), (1, 2)):
        w = R.standard_normal((6, 4 // groups) + (k,) * n)
        for b in (bias, None):
            _same(f"conv{n}d", [x, w, b], stride, padding, dilation, groups)


def test_conv_unbatched_and_errors_match_torch() -> None:
    x, w = R.standard_normal((3, 10)), R.standard_normal((4, 3, 3))
    _same("conv1d", [x, w])  # one sample without a batch dim
    for args, kwargs in [((x[None], w[:, :2]), {}), ((x[None, :, :2], w), {}),
                         ((x[None], w), {"padding": -1}), ((x[None], w), {"stride": 0}),
                         ((x[None], w), {"stride": 2, "padding": "same"}),
                         ((x[None], w), {"padding": "full"}), ((x[None, :, :, None], w), {})]:
        _same("conv1d", list(args), **kwargs)


@pytest.mark.parametrize("n", [1, 2])
def test_pooling_grid_matches_torch(n: int) -> None:
    x = R.standard_normal((2, 3) + ((9,) if n == 1 else (7, 6)))
    x.flat[5] = x.flat[6]  # a tie inside a window: torch's gradient goes to the first
    for k, s, p, d, ceil in _pairwise((1, 2, 3), (None, 1, 2, 3), (0, 1), (1, 2), (False, True)):
        for a in (x, x[0]):
            _same(f"max_pool{n}d", [a], k, s, p, d, ceil, return_indices=True)
        if d == 1:
            for count_pad in (True, False):
                _same(f"avg_pool{n}d", [x], k, s, p, ceil, count_pad)
    for o in (1, 2, 4, 5, 9, (3, None)[:n]):
        _same(f"adaptive_avg_pool{n}d", [x], o)
    _same("avg_pool2d", [x], 3, 2, 1, True, False, divisor_override=5)


def test_gradcheck_and_gradgradcheck() -> None:
    x = mg.tensor(R.standard_normal((2, 4, 5, 4)), requires_grad=True)
    w = mg.tensor(R.standard_normal((4, 2, 2, 3)), requires_grad=True)
    b = mg.tensor(R.standard_normal(4), requires_grad=True)
    cases = [(lambda x, w, b: F.conv2d(x, w, b, (2, 1), 1, (1, 2), 2), (x, w, b)),
             (lambda x, w: F.conv1d(x[:, :, 0], w[:, :, 0], padding="same", groups=2), (x, w)),
             (lambda x: F.max_pool2d(x, 2, 1, 1, ceil_mode=True), (x,)),
             (lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), (x,)),
             (lambda x: F.adaptive_avg_pool2d(x, (3, 2)), (x,))]
    for f, args in cases:
        assert mg.autograd.gradcheck(f, args)
        assert mg.autograd.gradgradcheck(f, args)


def test_layers_match_torch_repr_init_and_values() -> None:
    for name, args, kwargs in [
            ("Conv1d", (4, 6, 3), {}), ("Conv1d", (4, 6, 1), {"bias": False}),
            ("Conv2d", (4, 4, 3), dict(stride=2, padding=(1, 2), dilation=2, groups=2,
                                       padding_mode="reflect")),
            ("Conv2d", (3, 6, (2, 3)), dict(padding="same", padding_mode="circular",
                                            dilation=(1, 2))),
            ("Conv1d", (4, 4, 4), dict(padding="same", padding_mode="replicate"))]:
        ours, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
        assert repr(ours) == repr(theirs)
        fan_in = args[0] // kwargs.get("groups", 1) * ours.weight[0, 0].numel()
        assert np.abs(ours.weight.detach().numpy()).max() <= 1 / np.sqrt(fan_in)
        ours.double()
        theirs.double()
        with torch.no_grad():
            for p, q in zip(ours.parameters(), theirs.parameters()):
                q.copy_(torch.tensor(p.detach().numpy()))
        x = R.standard_normal((2, args[0]) + ((9,) if name == "Conv1d" else (9, 8)))
        _assert_same(*_both(ours, theirs, [x]), repr(ours))
    for name, args in [("MaxPool2d", (3, 2)), ("AvgPool2d", (3,)), ("MaxPool1d", (2,)),
                       ("AdaptiveAvgPool2d", ((2, None),)), ("AvgPool1d", (2,)),
                       ("AdaptiveAvgPool1d", (3,))]:
        ours, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
        assert repr(ours) == repr(theirs)
        x = R.standard_normal((2, 3, 9) if name.endswith("1d") else (2, 3, 9, 8))
        _assert_same(*_both(ours, theirs, [x]), name)
    # torch's init: a conv draws like a Linear of the same fan-in, from the same seed
    mg.manual_seed(7)
    conv = nn.Conv2d(8, 16, 3)
    mg.manual_seed(7)
    lin = nn.Linear(72, 16)
    np.testing.assert_array_equal(conv.weight.detach().numpy().reshape(16, 72),
                                  lin.weight.detach().numpy())
    np.testing.assert_array_equal(conv.bias.detach().numpy(), lin.bias.detach().numpy())
    for kwargs in (dict(groups=2), dict(padding_mode="zero"), dict(stride=2, padding="same")):
        for lib in (nn, torch.nn):
            with pytest.raises(ValueError):
                lib.Conv1d(3, 4, 3, **kwargs)


class _PointNetRegistration(nn.Module):
    """Deep-Closest-Point in miniature: shared pointwise (kernel 1) Conv1d features, soft
    correspondences, and the rotation from the SVD of the cross-covariance."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv1d(3, 32, 1), nn.ReLU(), nn.Conv1d(32, 32, 1))

    def forward(self, src: mg.Tensor, tgt: mg.Tensor) -> mg.Tensor:
        fs, ft = self.features(src), self.features(tgt)  # (B, 32, N)
        match = (fs.transpose(1, 2) @ ft).softmax(dim=2)  # (B, N, N)
        corr = tgt @ match.transpose(1, 2)  # each source point's soft partner
        s = src - src.mean(dim=2, keepdim=True)
        c = corr - corr.mean(dim=2, keepdim=True)
        u, _, vh = mg.linalg.svd(s @ c.transpose(1, 2))
        r = vh.transpose(1, 2) @ u.transpose(1, 2)
        d = mg.linalg.det(r)  # keep a rotation: flip the last axis where det = -1
        flip = mg.stack([mg.ones_like(d), mg.ones_like(d), d], dim=1)
        return (vh.transpose(1, 2) * flip.unsqueeze(1)) @ u.transpose(1, 2)


def _rotations(rng: np.random.Generator, batch: int) -> np.ndarray:
    q, _ = np.linalg.qr(rng.standard_normal((batch, 3, 3)))
    return q * np.sign(np.linalg.det(q))[:, None, None]


def test_pointnet_registration_trains() -> None:
    mg.manual_seed(0)
    rng = np.random.default_rng(0)
    model = _PointNetRegistration()
    opt = mg.optim.Adam(model.parameters(), lr=1e-2)
    src = rng.standard_normal((8, 3, 20)).astype(np.float32)
    rot = _rotations(rng, 8).astype(np.float32)
    perm = rng.permutation(20)
    tgt = (rot @ src)[:, :, perm]
    src_t, tgt_t, rot_t = mg.tensor(src), mg.tensor(tgt), mg.tensor(rot)
    losses = []
    for _ in range(60):
        opt.zero_grad()
        loss = ((model(src_t, tgt_t) - rot_t) ** 2).sum(dim=(1, 2)).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert np.isfinite(losses).all()
    assert model.features[0].weight.grad is not None
    assert losses[-1] < 0.1 * losses[0]
