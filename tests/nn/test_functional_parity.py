"""nn.functional parity with torch: one table of calls, each run in minigrad and torch on the
same float64 inputs, comparing value, shape, dtype and the gradient of every float input (a
random cotangent); plus float64 gradcheck (and gradgradcheck) of each call on its own."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F
from minigrad.autograd import gradcheck, gradgradcheck

RTOL, ATOL = 1e-10, 1e-12


def normal(*shape: int, seed: int = 0, scale: float = 1.0) -> np.ndarray:
    return scale * np.random.default_rng(seed).standard_normal(shape)


def uniform(*shape: int, seed: int = 0, lo: float = 0.0, hi: float = 1.0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(lo, hi, shape)


X = normal(3, 4, scale=2.0)
WIDE = normal(3, 4, seed=1, scale=8.0)  # crosses relu6's, hardswish's and softplus's kinks
LABELS = np.array([1, 0, 3])
LABELS_IGNORED = np.array([1, -100, 3])
PROBS = uniform(3, 4, seed=2, lo=0.02, hi=0.98)

# name -> (call(F, *inputs), inputs, float inputs that get gradients)
CASES: dict[str, tuple] = {
    "relu": (lambda F, x: F.relu(x), [X]),
    "relu6": (lambda F, x: F.relu6(x), [WIDE]),
    "hardtanh": (lambda F, x: F.hardtanh(x, -0.5, 1.5), [X]),
    "hardsigmoid": (lambda F, x: F.hardsigmoid(x), [WIDE]),
    "hardswish": (lambda F, x: F.hardswish(x), [WIDE]),
    "silu": (lambda F, x: F.silu(x), [WIDE]),
    "mish": (lambda F, x: F.mish(x), [WIDE]),
    "gelu": (lambda F, x: F.gelu(x), [WIDE]),
    "gelu-tanh": (lambda F, x: F.gelu(x, approximate="tanh"), [WIDE]),
    "leaky_relu": (lambda F, x: F.leaky_relu(x, 0.2), [X]),
    "elu": (lambda F, x: F.elu(x, 0.7), [WIDE]),
    "selu": (lambda F, x: F.selu(x), [X]),
    "celu": (lambda F, x: F.celu(x, 1.5), [X]),
    "softplus": (lambda F, x: F.softplus(x), [WIDE]),
    "softplus-beta": (lambda F, x: F.softplus(x, beta=2.0, threshold=5.0), [WIDE]),
    "logsigmoid": (lambda F, x: F.logsigmoid(x), [WIDE]),
    "softsign": (lambda F, x: F.softsign(x), [X]),
    "tanhshrink": (lambda F, x: F.tanhshrink(x), [X]),
    "threshold": (lambda F, x: F.threshold(x, 0.1, -2.0), [X]),
    "glu": (lambda F, x: F.glu(x, 1), [X]),
    "prelu": (lambda F, x, w: F.prelu(x, w), [X, uniform(4, seed=3)]),
    "prelu-one": (lambda F, x, w: F.prelu(x, w), [X, np.array([0.3])]),
    "softmax": (lambda F, x: F.softmax(x, dim=1), [WIDE]),
    "log_softmax": (lambda F, x: F.log_softmax(x, dim=0), [WIDE]),
    "softmin": (lambda F, x: F.softmin(x, dim=-1), [X]),
    "layer_norm": (lambda F, x, w, b: F.layer_norm(x, (4,), w, b),
                   [X, normal(4, seed=4), normal(4, seed=5)]),
    "layer_norm-2d": (lambda F, x: F.layer_norm(x, (3, 4), eps=1e-3), [X]),
    "rms_norm": (lambda F, x, w: F.rms_norm(x, [4], w, eps=1e-6), [X, normal(4, seed=6)]),
    "batch_norm-train": (lambda F, x, w, b: F.batch_norm(
        x, None, None, w, b, training=True), [normal(5, 3, 2), normal(3, seed=7),
                                              normal(3, seed=8)]),
    "batch_norm-eval": (lambda F, x, m, v, w: F.batch_norm(x, m, v, w, training=False),
                        [X, normal(4, seed=9), uniform(4, seed=10, lo=0.5, hi=2), normal(4)],
                        [0, 3]),
    "normalize": (lambda F, x: F.normalize(x), [X]),
    "normalize-p1-dim0": (lambda F, x: F.normalize(x, p=1, dim=0), [X]),
    "normalize-p3": (lambda F, x: F.normalize(x, p=3.0, dim=-1), [X]),
    "normalize-inf": (lambda F, x: F.normalize(x, p=math.inf), [X]),
    "pad-constant": (lambda F, x: F.pad(x, (1, 2, 0, 1), value=0.5), [X]),
    "pad-crop": (lambda F, x: F.pad(x, (-1, 2, 1, -2)), [X]),
    "pad-reflect": (lambda F, x: F.pad(x, (3, 2)), [normal(2, 3, 4)]),
    "pad-reflect-2d": (lambda F, x: F.pad(x, (3, 1, 1, 2), mode="reflect"), [normal(2, 3, 4)]),
    "pad-replicate": (lambda F, x: F.pad(x, (2, 5, 3, 0), mode="replicate"), [normal(2, 3, 4)]),
    "pad-circular": (lambda F, x: F.pad(x, (4, 1, 1, 3), mode="circular"), [normal(2, 3, 4)]),
    "cosine_similarity": (lambda F, a, b: F.cosine_similarity(a, b), [X, normal(3, 4, seed=11)]),
    "cosine_similarity-bcast": (lambda F, a, b: F.cosine_similarity(a, b, dim=-1, eps=1e-6),
                                [X, normal(4, seed=12)]),
    "pairwise_distance": (lambda F, a, b: F.pairwise_distance(a, b), [X, normal(3, 4, seed=13)]),
    "pairwise_distance-p1": (lambda F, a, b: F.pairwise_distance(a, b, p=1.0, keepdim=True),
                             [X, normal(3, 4, seed=14)]),
    "pairwise_distance-p3": (lambda F, a, b: F.pairwise_distance(a, b, p=3.0),
                             [X, normal(4, seed=15)]),
    "mse_loss": (lambda F, a, b: F.mse_loss(a, b), [X, normal(3, 4, seed=16)]),
    "mse_loss-weight": (lambda F, a, b, w: F.mse_loss(a, b, reduction="sum", weight=w),
                        [X, normal(3, 4, seed=16), uniform(3, 4)]),
    "l1_loss": (lambda F, a, b: F.l1_loss(a, b, reduction="none"), [X, normal(3, 4, seed=17)]),
    "smooth_l1_loss": (lambda F, a, b: F.smooth_l1_loss(a, b, beta=0.5),
                       [X, normal(3, 4, seed=18)]),
    "smooth_l1_loss-beta0": (lambda F, a, b: F.smooth_l1_loss(a, b, reduction="sum", beta=0.0),
                             [X, normal(3, 4, seed=19)]),
    "huber_loss": (lambda F, a, b: F.huber_loss(a, b, delta=0.7), [X, normal(3, 4, seed=20)]),
    "huber_loss-weight": (lambda F, a, b, w: F.huber_loss(a, b, "none", 2.0, w),
                          [X, normal(3, 4, seed=20), uniform(3, 4, seed=1)]),
    "binary_cross_entropy": (lambda F, p, y: F.binary_cross_entropy(p, y), [PROBS, uniform(3, 4)]),
    "binary_cross_entropy-weight": (lambda F, p, y, w: F.binary_cross_entropy(
        p, y, w, reduction="sum"), [PROBS, uniform(3, 4, seed=3), uniform(4, seed=4)], [0, 1]),
    "bce_with_logits": (lambda F, x, y: F.binary_cross_entropy_with_logits(x, y),
                        [WIDE, uniform(3, 4, seed=5)]),
    "bce_with_logits-pos_weight": (lambda F, x, y, w, pw: F.binary_cross_entropy_with_logits(
        x, y, w, reduction="none", pos_weight=pw),
        [WIDE, uniform(3, 4, seed=6), uniform(3, 1, seed=7), uniform(4, seed=8, lo=0.5, hi=3)],
        [0, 1]),  # torch does not differentiate the weights
    "kl_div-batchmean": (lambda F, x, y: F.kl_div(x, y, reduction="batchmean"),
                         [np.log(PROBS), np.where(PROBS > 0.3, PROBS, 0.0)], [0]),
    "kl_div-log_target": (lambda F, x, y: F.kl_div(x, y, reduction="sum", log_target=True),
                          [normal(3, 4), normal(3, 4, seed=9)]),
    "nll_loss": (lambda F, x, t: F.nll_loss(x.log_softmax(1), t), [X, LABELS]),
    "nll_loss-weight-ignore": (lambda F, x, t, w: F.nll_loss(x, t, w, reduction="mean"),
                               [X, LABELS_IGNORED, uniform(4, seed=9)], [0]),
    "cross_entropy": (lambda F, x, t: F.cross_entropy(x, t), [WIDE, LABELS]),
    "cross_entropy-smooth": (lambda F, x, t: F.cross_entropy(x, t, label_smoothing=0.2),
                             [WIDE, LABELS]),
    "cross_entropy-smooth-weight-ignore": (lambda F, x, t, w: F.cross_entropy(
        x, t, w, ignore_index=-100, label_smoothing=0.3), [WIDE, LABELS_IGNORED,
                                                           uniform(4, seed=10)], [0]),
    "cross_entropy-smooth-sum": (lambda F, x, t: F.cross_entropy(
        x, t, reduction="sum", label_smoothing=0.1, ignore_index=0), [X, LABELS]),
    "cross_entropy-smooth-none-3d": (lambda F, x, t: F.cross_entropy(
        x, t, reduction="none", label_smoothing=0.4), [normal(2, 4, 3), np.array([[0, 3, 1],
                                                                               [2, 2, 0]])]),
    "cross_entropy-probs-smooth": (lambda F, x, p, w: F.cross_entropy(
        x, p, w, label_smoothing=0.25), [X, PROBS / PROBS.sum(1, keepdims=True),
                                         uniform(4, seed=11)], [0, 1]),
    "embedding": (lambda F, i, w: F.embedding(i, w), [np.array([[0, 2, 2], [4, 1, 0]]),
                                                      normal(5, 3)]),
    "embedding-padding-freq": (lambda F, i, w: F.embedding(i, w, padding_idx=2,
                                                           scale_grad_by_freq=True),
                               [np.array([[0, 2, 2], [4, 1, 0]]), normal(5, 3)]),
    "embedding-negative-padding": (lambda F, i, w: F.embedding(i, w, padding_idx=-1),
                                   [np.array([3, 4, 4, 1]), normal(5, 3)]),
}


# torch's float64 hardsigmoid backward multiplies by 1/6 rounded to float32 (3e-8 off); the
# gradcheck below is the reference for ours.
GRAD_RTOL = {"hardsigmoid": 1e-7}


def _case(name: str) -> tuple:
    call, inputs, *rest = CASES[name]
    grads = rest[0] if rest else [i for i, a in enumerate(inputs) if a.dtype.kind == "f"]
    return call, inputs, grads


def _run(lib, F_, call, inputs, grads):
    ts = [lib.tensor(a, requires_grad=i in grads) for i, a in enumerate(inputs)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call(F_, *ts), ts


@pytest.mark.parametrize("name", list(CASES))
def test_value_and_gradient_match_torch(name) -> None:
    torch = pytest.importorskip("torch")
    call, inputs, grads = _case(name)
    ours, ts = _run(mg, F, call, inputs, grads)
    theirs, tts = _run(torch, torch.nn.functional, call, inputs, grads)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.numpy() if not ours.requires_grad else ours.detach().numpy(),
                               theirs.detach().numpy(), rtol=RTOL, atol=ATOL)
    if not grads:
        return
    cot = normal(*theirs.shape, seed=99)
    ours.backward(mg.tensor(cot))
    theirs.backward(torch.tensor(cot))
    for i in grads:
        np.testing.assert_allclose(ts[i].grad.numpy(), tts[i].grad.numpy(),
                                   rtol=GRAD_RTOL.get(name, RTOL), atol=ATOL,
                                   err_msg=f"gradient of input {i}")


# Kinks where finite differences cannot agree with any one-sided gradient are avoided by the
# inputs above (random normals never hit 0, a clamp edge or a threshold exactly).
# padding_idx and scale_grad_by_freq change the gradient on purpose (torch's definition), so
# finite differences are no reference for them; the torch comparison above covers them.
NOT_DERIVATIVES = ("embedding-padding-freq", "embedding-negative-padding")


@pytest.mark.parametrize("name", [n for n in CASES if n not in NOT_DERIVATIVES])
def test_gradcheck(name) -> None:
    call, inputs, grads = _case(name)
    fixed = [mg.tensor(a) for a in inputs]

    def fn(*xs):
        args = list(fixed)
        for i, x in zip(grads, xs):
            args[i] = x
        return call(F, *args)

    xs = tuple(mg.tensor(inputs[i], requires_grad=True) for i in grads)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert gradcheck(fn, xs, atol=1e-6, rtol=1e-5)


SECOND_ORDER = ["gelu", "gelu-tanh", "silu", "mish", "elu", "softplus", "logsigmoid",
                "layer_norm", "batch_norm-train", "normalize-p3", "cosine_similarity",
                "bce_with_logits-pos_weight", "binary_cross_entropy", "cross_entropy-smooth",
                "embedding", "pad-reflect-2d", "pad-constant", "huber_loss",
                "hardswish", "celu", "glu"]


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_gradgradcheck(name) -> None:
    call, inputs, grads = _case(name)
    fixed = [mg.tensor(a) for a in inputs]
    i = grads[0]

    def fn(x):
        args = list(fixed)
        args[i] = x
        return call(F, *args)

    assert gradgradcheck(fn, (mg.tensor(inputs[i], requires_grad=True),), atol=1e-5, rtol=1e-4)


# ---- numerics the table cannot show ---------------------------------------------------------
def test_softplus_logsigmoid_and_bce_with_logits_are_stable_at_large_x() -> None:
    x = mg.tensor([-1000.0, -50.0, 0.0, 50.0, 1000.0], dtype=mg.float64, requires_grad=True)
    sp = F.softplus(x)
    np.testing.assert_allclose(sp.detach().numpy(),
                               [0.0, math.exp(-50), math.log(2), 50.0, 1000.0], rtol=1e-15)
    sp.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, math.exp(-50), 0.5, 1.0, 1.0], rtol=1e-15)
    np.testing.assert_allclose(F.logsigmoid(x).detach().numpy(),
                               [-1000.0, -50.0, -math.log(2), -math.exp(-50), 0.0], rtol=1e-15)
    y = mg.tensor([1.0, 1.0, 0.5, 0.0, 0.0], dtype=mg.float64)
    loss = F.binary_cross_entropy_with_logits(x, y, reduction="none")
    np.testing.assert_allclose(loss.detach().numpy(),
                               [1000.0, 50.0, math.log(2), 50.0, 1000.0], rtol=1e-15)
    x.grad = None
    loss.sum().backward()  # sigmoid(x) - y: finite everywhere
    np.testing.assert_allclose(x.grad.numpy(), [-1.0, -1.0, 0.0, 1.0, 1.0], atol=1e-15)


def test_bce_clamps_its_logs_at_minus_100_like_torch() -> None:
    p = mg.tensor([0.0, 1.0, 0.0], dtype=mg.float64)
    y = mg.tensor([1.0, 0.0, 0.0], dtype=mg.float64)
    np.testing.assert_array_equal(F.binary_cross_entropy(p, y, reduction="none").numpy(),
                                  [100.0, 100.0, 0.0])
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(mg.tensor([1.5]), mg.tensor([1.0]))


def test_gelu_matches_its_definition_via_erf() -> None:
    x = np.linspace(-6, 6, 25)
    want = [v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x]
    np.testing.assert_allclose(F.gelu(mg.tensor(x)).numpy(), want, rtol=1e-15, atol=1e-300)
    assert F.gelu(mg.tensor([1.0], dtype=mg.float32)).dtype == mg.float32


def test_elu_keeps_precision_near_zero() -> None:
    x = mg.tensor([-1e-12, -1e-8], dtype=mg.float64)  # exp(x) - 1 would lose half the digits
    np.testing.assert_allclose(F.elu(x).numpy(), np.expm1(x.numpy()), rtol=1e-15)


def test_activations_refuse_integer_input_like_torch() -> None:
    for fn in (F.gelu, F.elu, F.leaky_relu, F.softplus):
        with pytest.raises(NotImplementedError, match="not implemented"):
            fn(mg.tensor([1, 2]))


def test_normalize_and_norms_have_zero_gradient_at_a_zero_vector() -> None:
    """torch's subgradient there is 0 too; finite differences do not exist (a kink)."""
    for p in (1.0, 2.0, 3.0, math.inf):
        x = mg.zeros(2, 3, dtype=mg.float64, requires_grad=True)
        out = F.normalize(x, p=p)
        np.testing.assert_array_equal(out.detach().numpy(), np.zeros((2, 3)))
        (out * mg.tensor(normal(2, 3))).sum().backward()
        assert np.isfinite(x.grad.numpy()).all(), p
    for p in (2.0, 3.0):
        a = mg.ones(2, 3, dtype=mg.float64, requires_grad=True)
        F.pairwise_distance(a, mg.ones(2, 3, dtype=mg.float64) + 1e-6, p=p,
                            eps=0.0).sum().backward()
        assert np.isfinite(a.grad.numpy()).all()


def test_cosine_similarity_below_eps_is_differentiated_as_computed() -> None:
    """torch's gradient ignores the eps clamp of a tiny norm; ours is the derivative of the
    value returned, so finite differences are the reference there."""
    tiny = mg.tensor(np.full((1, 3), 1e-10), requires_grad=True)
    other = mg.tensor([[1.0, 2.0, 3.0]])
    assert gradcheck(lambda a: F.cosine_similarity(a, other), (tiny,), eps=1e-13, atol=1e-3)
    zero = mg.zeros(1, 3, dtype=mg.float64)
    assert F.cosine_similarity(zero, other).item() == 0.0


def test_dropout_is_seeded_scaled_and_off_in_eval() -> None:
    x = mg.ones(200, 50, dtype=mg.float64, requires_grad=True)
    mg.manual_seed(3)
    a = F.dropout(x, 0.3)
    mg.manual_seed(3)
    b = F.dropout(x, 0.3)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    vals = np.unique(a.detach().numpy())
    np.testing.assert_allclose(vals, [0.0, 1 / 0.7])
    kept = (a.detach().numpy() != 0).mean()
    assert abs(kept - 0.7) < 0.02  # 10,000 draws: 4.6 standard deviations
    a.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), a.detach().numpy())  # the same mask
    assert F.dropout(x, 0.3, training=False) is x
    assert F.dropout(x, 0.0) is x
    np.testing.assert_array_equal(F.dropout(x, 1.0).detach().numpy(), np.zeros((200, 50)))
    with pytest.raises(ValueError, match="between 0 and 1, but got 1.5"):
        F.dropout(x, 1.5)


def test_inplace_flags_write_into_the_input() -> None:
    for fn in (lambda t: F.relu(t, inplace=True), lambda t: F.leaky_relu(t, 0.1, True),
               lambda t: F.elu(t, inplace=True), lambda t: F.silu(t, inplace=True),
               lambda t: F.hardtanh(t, inplace=True)):
        x = mg.tensor(X)
        before = x.numpy().copy()
        out = fn(x)
        assert out is x and not np.array_equal(x.numpy(), before)
    leaf = mg.tensor(X, requires_grad=True)
    h = leaf * 1.0
    F.relu(h, inplace=True).sum().backward()  # recorded in the graph like torch
    np.testing.assert_array_equal(leaf.grad.numpy(), (X > 0).astype(float))
    with pytest.raises(RuntimeError, match="leaf Variable"):
        F.relu(leaf, inplace=True)


def test_embedding_max_norm_renormalises_looked_up_rows_in_place_like_torch() -> None:
    torch = pytest.importorskip("torch")
    w0 = normal(6, 3, scale=3.0)
    idx = np.array([[0, 2], [2, 5]])
    w, tw = mg.tensor(w0), torch.tensor(w0)
    out = F.embedding(mg.tensor(idx), w, max_norm=1.5, norm_type=1.0)
    tout = torch.nn.functional.embedding(torch.tensor(idx), tw, max_norm=1.5, norm_type=1.0)
    np.testing.assert_allclose(out.numpy(), tout.numpy(), rtol=RTOL)
    np.testing.assert_allclose(w.numpy(), tw.numpy(), rtol=RTOL)  # same rows rescaled
    np.testing.assert_array_equal(w.numpy()[[1, 3, 4]], w0[[1, 3, 4]])  # others untouched


def test_one_hot_matches_torch_and_checks_classes() -> None:
    torch = pytest.importorskip("torch")
    t = np.array([[0, 3], [2, 2]])
    ours = F.one_hot(mg.tensor(t))
    theirs = torch.nn.functional.one_hot(torch.tensor(t))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert ours.dtype == mg.int64 and F.one_hot(mg.tensor(t), 6).shape == (2, 2, 6)
    assert F.one_hot(mg.tensor(2), 4).tolist() == [0, 0, 1, 0]
    for bad, n, msg in (([0.0], -1, "LongTensor"), ([0, -1], -1, "non-negative"),
                        ([0, 3], 3, "smaller than num_classes")):
        with pytest.raises(RuntimeError, match=msg):
            F.one_hot(mg.tensor(bad), n)


def test_errors_name_the_problem_like_torch() -> None:
    x = mg.tensor(X)
    cases = [
        (RuntimeError, "divisible by 2", lambda: F.pad(x, (1,))),
        (RuntimeError, "two times the input dimension", lambda: F.pad(x, (1,) * 6)),
        (NotImplementedError, "Unrecognised padding mode foo", lambda: F.pad(x, (1, 1), "foo")),
        (NotImplementedError, "not supported for 3D input",
         lambda: F.pad(mg.ones(2, 3, 4), (1,) * 6, "reflect")),
        (RuntimeError, "should be less than the corresponding input dimension",
         lambda: F.pad(x, (4, 0), "reflect")),
        (RuntimeError, "wrapping around more than once", lambda: F.pad(x, (5, 0), "circular")),
        (RuntimeError, "doesn't take in value", lambda: F.pad(x, (1, 1), "reflect", 2.0)),
        (RuntimeError, "approximate argument", lambda: F.gelu(x, approximate="erf")),
        (RuntimeError, r"expected input with shape \[\*, 3\]", lambda: F.layer_norm(x, (3,))),
        (RuntimeError, "running_mean must be defined",
         lambda: F.batch_norm(x, None, None, training=False)),
        (ValueError, "more than 1 value per channel",
         lambda: F.batch_norm(x[:1], None, None, training=True)),
        (RuntimeError, "Halving dimension must be even", lambda: F.glu(mg.ones(3))),
        (RuntimeError, "label_smoothing must be between",
         lambda: F.cross_entropy(x, mg.tensor(LABELS), label_smoothing=1.5)),
        (ValueError, "Target size", lambda: F.binary_cross_entropy_with_logits(x, x[0])),
        (ValueError, "different to the input size", lambda: F.binary_cross_entropy(x, x[0])),
        (RuntimeError, "negative values for beta", lambda: F.smooth_l1_loss(x, x, beta=-1)),
        (RuntimeError, "non-positive values for delta", lambda: F.huber_loss(x, x, delta=0)),
        (ValueError, "Weights and input must have the same size",
         lambda: F.mse_loss(x, x, weight=mg.ones(4))),
        (ValueError, "not a valid value for reduction", lambda: F.l1_loss(x, x, reduction="avg")),
        (RuntimeError, "'indices'", lambda: F.embedding(mg.tensor([0.0]), x)),
        (IndexError, "index out of range", lambda: F.embedding(mg.tensor([3]), x)),
        (ValueError, "Padding_idx must be within", lambda: F.embedding(mg.tensor([0]), x,
                                                                       padding_idx=3)),
        (NotImplementedError, "sparse", lambda: F.embedding(mg.tensor([0]), x, sparse=True)),
    ]
    for exc, msg, fn in cases:
        with pytest.raises(exc, match=msg):
            fn()


def test_legacy_size_average_and_implicit_softmax_dim_warn_like_torch() -> None:
    a, b = mg.tensor(X), mg.tensor(X * 0.5)
    with pytest.warns(UserWarning, match="reduction='sum'"):
        summed = F.mse_loss(a, b, size_average=False)
    assert summed.item() == pytest.approx(F.mse_loss(a, b, reduction="sum").item())
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert F.l1_loss(a, b, reduce=False).shape == (3, 4)
    with pytest.warns(UserWarning, match="Implicit dimension"):
        np.testing.assert_allclose(F.softmax(a).numpy(), F.softmax(a, 1).numpy())
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(a, b.exp())
