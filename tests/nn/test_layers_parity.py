"""nn layers, containers and loss modules against torch: BatchNorm running statistics and
modes, LayerNorm/RMSNorm/Embedding parameters, state_dict keys, reprs, Dropout's modes, and
two small training loops (embedding, norms, GELU, AdamW + OneCycleLR; RMSprop + plateau)
that must follow torch's step for step in float64."""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F

RTOL, ATOL = 1e-10, 1e-12


def normal(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def copy_params(src_torch, dst) -> None:
    """torch module -> minigrad module with the same state_dict keys."""
    dst.load_state_dict({k: v.detach().numpy() for k, v in src_torch.state_dict().items()})


def assert_close(a, b, rtol: float = RTOL) -> None:
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=ATOL)


# ---- batch norm -------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,momentum,kw", [
    ((6, 3), 0.1, {}), ((5, 3, 4), 0.3, {}), ((6, 3), None, {}),
    ((4, 3), 0.1, dict(affine=False)), ((4, 3, 2), 0.1, dict(track_running_stats=False)),
    ((6, 3), 0.1, dict(bias=False))])
def test_batchnorm1d_matches_torch_in_training_and_eval(shape, momentum, kw) -> None:
    torch = pytest.importorskip("torch")
    ours = nn.BatchNorm1d(3, momentum=momentum, dtype=mg.float64, **kw)
    theirs = torch.nn.BatchNorm1d(3, momentum=momentum, dtype=torch.float64, **kw)
    if ours.weight is not None:
        with torch.no_grad():
            theirs.weight.copy_(torch.tensor(normal(3, seed=1)))
        copy_params(theirs, ours)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for step in range(4):
        x = normal(*shape, seed=10 + step)
        xm, xt = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        ym, yt = ours(xm), theirs(xt)
        assert_close(ym.detach().numpy(), yt.detach().numpy())
        cot = normal(*shape, seed=20 + step)
        ym.backward(mg.tensor(cot))
        yt.backward(torch.tensor(cot))
        assert_close(xm.grad.numpy(), xt.grad.numpy())
    for (k, a), (_, b) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        assert_close(a.numpy(), b.numpy())
        assert a.dtype == mg.int64 if k == "num_batches_tracked" else a.dtype == mg.float64
    for p, q in zip(ours.parameters(), theirs.parameters()):
        assert_close(p.grad.numpy(), q.grad.numpy())
    ours.eval()
    theirs.eval()
    x = normal(*shape, seed=99)
    assert_close(ours(mg.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy())
    assert repr(ours) == repr(theirs)


def test_batchnorm_modes_and_errors() -> None:
    bn = nn.BatchNorm1d(2)
    bn(mg.tensor([[1.0, 2.0], [3.0, 6.0]]))
    np.testing.assert_allclose(bn.running_mean.numpy(), [0.2, 0.4], rtol=1e-6)
    np.testing.assert_allclose(bn.running_var.numpy(), [0.9 + 0.1 * 2, 0.9 + 0.1 * 8], rtol=1e-6)
    assert bn.num_batches_tracked.item() == 1
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        bn(mg.ones(2, 2, 2, 2))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        bn(mg.ones(1, 2))
    bn.eval()
    bn(mg.ones(1, 2))  # eval mode uses the running statistics: one sample is fine
    bn.reset_running_stats()
    assert bn.num_batches_tracked.item() == 0 and bn.running_var.tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(2)(mg.ones(2, 2))


def test_batchnorm2d_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    ours, theirs = nn.BatchNorm2d(3, dtype=mg.float64), torch.nn.BatchNorm2d(3).double()
    for step in range(2):
        x = normal(2, 3, 4, 5, seed=step)
        assert_close(ours(mg.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy())
    assert_close(ours.running_var.numpy(), theirs.running_var.numpy())
    ours.eval(), theirs.eval()
    x = normal(2, 3, 4, 5, seed=7)
    assert_close(ours(mg.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy())


# ---- other layers -----------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda lib, dt: lib.nn.LayerNorm(4, dtype=dt), lambda lib, dt: lib.nn.LayerNorm([3, 4],
                                                                                   dtype=dt),
    lambda lib, dt: lib.nn.LayerNorm(4, elementwise_affine=False, dtype=dt),
    lambda lib, dt: lib.nn.LayerNorm(4, bias=False, eps=1e-3, dtype=dt),
    lambda lib, dt: lib.nn.RMSNorm(4, dtype=dt), lambda lib, dt: lib.nn.RMSNorm(4, 1e-5, False),
    lambda lib, dt: lib.nn.PReLU(3, 0.1, dtype=dt), lambda lib, dt: lib.nn.Linear(4, 2, dtype=dt)])
def test_parametrised_layers_match_torch(make) -> None:
    torch = pytest.importorskip("torch")
    ours, theirs = make(mg, mg.float64), make(torch, torch.float64)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    if type(ours).__name__ == "Linear":
        copy_params(theirs, ours)
    for (_, a), (_, b) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        assert_close(a.numpy(), b.numpy())  # the same initial values (Linear: copied)
    x = normal(2, 3, 4)
    xm, xt = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ym, yt = ours(xm), theirs(xt)
    assert_close(ym.detach().numpy(), yt.detach().numpy())
    cot = normal(*yt.shape, seed=1)
    ym.backward(mg.tensor(cot))
    yt.backward(torch.tensor(cot))
    assert_close(xm.grad.numpy(), xt.grad.numpy())
    for p, q in zip(ours.parameters(), theirs.parameters()):
        assert_close(p.grad.numpy(), q.grad.numpy())
    assert repr(ours) == repr(theirs)


def test_embedding_layer_init_padding_and_from_pretrained() -> None:
    mg.manual_seed(0)
    emb = nn.Embedding(10, 4, padding_idx=-1)
    assert emb.padding_idx == 9 and emb.weight.shape == (10, 4)
    np.testing.assert_array_equal(emb.weight.detach().numpy()[9], np.zeros(4))
    assert 0.5 < emb.weight.detach().numpy()[:9].std() < 1.5  # N(0, 1), as torch
    out = emb(mg.tensor([[9, 3], [3, 0]]))
    assert out.shape == (2, 2, 4)
    out.sum().backward()
    grad = emb.weight.grad.numpy()
    np.testing.assert_array_equal(grad[9], np.zeros(4))  # the padding row never learns
    np.testing.assert_array_equal(grad[3], np.full(4, 2.0))
    assert repr(emb) == "Embedding(10, 4, padding_idx=9)"

    table = mg.tensor(normal(5, 3))
    frozen = nn.Embedding.from_pretrained(table)
    assert not frozen.weight.requires_grad
    np.testing.assert_array_equal(frozen(mg.tensor([4])).numpy(), table.numpy()[[4]])
    assert nn.Embedding.from_pretrained(table, freeze=False).weight.requires_grad
    with pytest.raises(ValueError, match="does not match"):
        nn.Embedding(3, 2, _weight=mg.ones(2, 2))
    with pytest.raises(ValueError, match="within num_embeddings"):
        nn.Embedding(3, 2, padding_idx=3)


def test_dropout_layer_follows_train_and_eval_and_the_seed() -> None:
    drop = nn.Dropout(0.25)
    x = mg.ones(1000)
    mg.manual_seed(1)
    a = drop(x).numpy()
    mg.manual_seed(1)
    np.testing.assert_array_equal(drop(x).numpy(), a)
    assert set(np.unique(a)) == {0.0, np.float32(1 / 0.75)}
    assert drop.eval()(x) is x
    assert repr(drop) == "Dropout(p=0.25, inplace=False)"
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(-0.1)


def test_activation_modules_are_their_functions_with_torchs_reprs() -> None:
    torch = pytest.importorskip("torch")
    x = normal(3, 4, seed=3) * 4
    for name, kw in [("ReLU", {}), ("ReLU6", {}), ("LeakyReLU", dict(negative_slope=0.2)),
                     ("ELU", dict(alpha=0.5)), ("CELU", {}), ("SELU", {}), ("GELU", {}),
                     ("GELU", dict(approximate="tanh")), ("SiLU", dict(inplace=True)),
                     ("Mish", {}), ("Softplus", dict(beta=2.0)), ("Softsign", {}),
                     ("Tanhshrink", {}), ("Hardtanh", dict(min_val=-2.0)), ("Hardsigmoid", {}),
                     ("Hardswish", {}), ("LogSigmoid", {}), ("Threshold", dict(threshold=0.1,
                                                                               value=20.0)),
                     ("GLU", {}), ("Softmax", dict(dim=1)), ("LogSoftmax", dict(dim=0)),
                     ("Softmin", dict(dim=-1)), ("Tanh", {}), ("Sigmoid", {}), ("Identity", {}),
                     ("Flatten", dict(start_dim=0)), ("Unflatten", dict(dim=1,
                                                                        unflattened_size=(2, 2)))]:
        ours, theirs = getattr(nn, name)(**kw), getattr(torch.nn, name)(**kw)
        assert repr(ours) == repr(theirs), name
        assert_close(ours(mg.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy())
    assert not isinstance(nn.LogSoftmax(1), nn.Softmax)  # siblings, as in torch
    assert isinstance(nn.Identity(3, bias=True)(mg.ones(1)), mg.Tensor)
    with pytest.raises(RuntimeError, match="don't multiply up"):
        nn.Unflatten(1, (2, 2))(mg.ones(3, 5))


def test_distance_modules_match_functions() -> None:
    a, b = mg.tensor(normal(3, 4)), mg.tensor(normal(3, 4, seed=1))
    np.testing.assert_array_equal(nn.CosineSimilarity(dim=1)(a, b).numpy(),
                                  F.cosine_similarity(a, b).numpy())
    np.testing.assert_array_equal(nn.PairwiseDistance(p=1.0)(a, b).numpy(),
                                  F.pairwise_distance(a, b, p=1.0).numpy())


def test_layers_accept_cpu_device_and_refuse_others() -> None:
    assert nn.LayerNorm(3, device="cpu").weight.shape == (3,)
    nn.Linear(2, 2, device="cpu")
    with pytest.raises(RuntimeError, match="CPU only"):
        nn.BatchNorm1d(3, device="cuda")


# ---- containers -------------------------------------------------------------------------------
def test_module_dict_registers_and_behaves_like_a_dict() -> None:
    torch = pytest.importorskip("torch")
    ours = nn.ModuleDict({"enc": nn.Linear(2, 3), "dec": nn.Linear(3, 2)})
    theirs = torch.nn.ModuleDict({"enc": torch.nn.Linear(2, 3), "dec": torch.nn.Linear(3, 2)})
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert list(ours) == ["enc", "dec"] and "enc" in ours and len(ours) == 2
    ours["act"] = nn.ReLU()
    ours.update([("out", nn.Identity())])
    assert list(ours.keys()) == ["enc", "dec", "act", "out"]
    assert isinstance(ours.pop("act"), nn.ReLU) and "act" not in ours
    del ours["out"]
    assert [k for k, _ in ours.items()] == ["enc", "dec"]
    assert len(list(ours.parameters())) == 4
    with pytest.raises(TypeError):
        ours["bad"] = 3


def test_parameter_list_and_dict_register_parameters_like_torch() -> None:
    torch = pytest.importorskip("torch")
    ours = nn.ParameterList([nn.Parameter(mg.ones(2)), mg.zeros(3)])
    theirs = torch.nn.ParameterList([torch.nn.Parameter(torch.ones(2)), torch.zeros(3)])
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["0", "1"]
    assert isinstance(ours[1], nn.Parameter) and ours[1].requires_grad  # a Tensor is promoted
    ours.append(mg.ones(4))
    ours.extend([mg.ones(5)])
    assert len(ours) == 4 and ours[-1].shape == (5,) and len(ours[1:3]) == 2
    assert [p.shape for p in ours] == [(2,), (3,), (4,), (5,)]
    ours[0] = mg.full((2,), 7.0)
    assert ours[0].tolist() == [7.0, 7.0] and len(list(ours.parameters())) == 4
    with pytest.raises(IndexError):
        ours[4]

    pd = nn.ParameterDict({"scale": mg.ones(2), "shift": nn.Parameter(mg.zeros(2))})
    tpd = torch.nn.ParameterDict({"scale": torch.ones(2), "shift": torch.zeros(2)})
    assert list(pd.state_dict()) == list(tpd.state_dict())
    assert list(pd) == ["scale", "shift"] and isinstance(pd["scale"], nn.Parameter)
    pd.update({"bias": mg.ones(1)})
    assert pd.keys() == ["scale", "shift", "bias"] and "bias" in pd
    assert pd.pop("shift").shape == (2,) and "shift" not in pd and len(pd) == 2
    assert pd.get("missing") is None
    pd["keys"] = mg.ones(3)  # a key that names a method still maps to its value
    assert pd["keys"].shape == (3,) and callable(pd.keys)
    del pd["keys"]
    with pytest.raises(KeyError):
        pd["missing"]
    model = nn.Module()
    model.extra = pd
    assert [n for n, _ in model.named_parameters()] == ["extra.scale", "extra.bias"]


def test_module_list_extend_insert_delete_and_slice() -> None:
    ml = nn.ModuleList([nn.ReLU()])
    ml.extend([nn.Tanh(), nn.Sigmoid()])
    ml.insert(1, nn.Identity())
    assert [type(m).__name__ for m in ml] == ["ReLU", "Identity", "Tanh", "Sigmoid"]
    del ml[0]
    assert list(ml._modules) == ["0", "1", "2"] and isinstance(ml[0], nn.Identity)
    assert isinstance(ml[1:], nn.ModuleList) and len(ml[1:]) == 2
    ml += [nn.ReLU()]
    ml[0] = nn.GELU()
    assert len(ml) == 4 and isinstance(ml[0], nn.GELU)


# ---- loss modules -----------------------------------------------------------------------------
def test_loss_modules_match_torch_and_keep_weights_as_buffers() -> None:
    torch = pytest.importorskip("torch")
    x, y = normal(4, 3), normal(4, 3, seed=1)
    p, q = 1 / (1 + np.exp(-x)), 1 / (1 + np.exp(-y))
    w, labels = np.array([0.2, 1.0, 3.0]), np.array([2, 0, 1, 1])
    cases = [("MSELoss", {}, x, y), ("L1Loss", dict(reduction="sum"), x, y),
             ("SmoothL1Loss", dict(beta=0.3), x, y), ("HuberLoss", dict(delta=0.5), x, y),
             ("BCELoss", dict(weight=w), p, q), ("BCEWithLogitsLoss", dict(pos_weight=w), x, q),
             ("NLLLoss", dict(weight=w, reduction="none"), x, labels),
             ("CrossEntropyLoss", dict(weight=w, label_smoothing=0.1, ignore_index=1), x,
              labels),
             ("KLDivLoss", dict(reduction="batchmean", log_target=True), x, y)]
    for name, kw, a, b in cases:
        tkw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        mkw = {k: mg.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        ours, theirs = getattr(nn, name)(**mkw), getattr(torch.nn, name)(**tkw)
        assert list(ours.state_dict()) == list(theirs.state_dict()), name
        assert_close(ours(mg.tensor(a), mg.tensor(b)).numpy(),
                     theirs(torch.tensor(a), torch.tensor(b)).numpy())
    assert repr(nn.MSELoss(reduction="sum")) == "MSELoss()"  # as torch: no fields printed
    with pytest.warns(UserWarning, match="reduction='sum'"):
        assert nn.L1Loss(size_average=False).reduction == "sum"


# ---- whole training loops ---------------------------------------------------------------------
def _tagger(lib, dt):
    nn_ = lib.nn
    return nn_.ModuleDict({
        "emb": nn_.Embedding(12, 6, padding_idx=0, dtype=dt),
        "body": nn_.Sequential(nn_.LayerNorm(6, dtype=dt), nn_.Linear(6, 8, dtype=dt),
                               nn_.GELU(), nn_.Dropout(0.0), nn_.Linear(8, 8, dtype=dt),
                               nn_.SiLU()),
        "norm": nn_.BatchNorm1d(8, dtype=dt),
        "head": nn_.Linear(8, 4, dtype=dt)})


def _tagger_loss(model, lib, tokens, labels):
    h = model["body"](model["emb"](tokens)).mean(1)
    logits = model["head"](model["norm"](h))
    return lib.nn.functional.cross_entropy(logits, labels, label_smoothing=0.1)


def test_a_small_model_trains_step_for_step_like_torch() -> None:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)  # the start both copy; the test order must not change it
    theirs = _tagger(torch, torch.float64)
    ours = _tagger(mg, mg.float64)
    copy_params(theirs, ours)
    rng = np.random.default_rng(0)
    tokens = [rng.integers(0, 12, (8, 5)) for _ in range(15)]
    batches = [(t, t[:, 0] % 4) for t in tokens]  # learnable: the first token decides
    runs = []
    for lib, model in ((mg, ours), (torch, theirs)):
        decay = [p for n, p in model.named_parameters() if n.endswith("weight")]
        rest = [p for n, p in model.named_parameters() if not n.endswith("weight")]
        opt = lib.optim.AdamW([{"params": decay}, {"params": rest, "weight_decay": 0.0}],
                              lr=1e-2, weight_decay=0.05)
        sched = lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=len(batches))
        losses = []
        for tokens, labels in batches:
            opt.zero_grad()
            loss = _tagger_loss(model, lib, lib.tensor(tokens), lib.tensor(labels))
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
        runs.append(losses)
    assert_close(runs[0], runs[1], rtol=1e-9)
    assert np.mean(runs[0][-5:]) < np.mean(runs[0][:5])
    for (k, a), (_, b) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-8, atol=1e-10, err_msg=k)


def _regressor(lib):
    return lib.nn.Sequential(OrderedDict(
        fc=lib.nn.Linear(3, 16, dtype=lib.float64), act=lib.nn.Softplus(beta=2.0),
        out=lib.nn.Linear(16, 1, dtype=lib.float64)))


def test_rmsprop_with_reduce_on_plateau_follows_torch() -> None:
    torch = pytest.importorskip("torch")
    x = normal(32, 3)
    y = np.sin(x).sum(1, keepdims=True)
    torch.manual_seed(0)
    theirs, ours = _regressor(torch), _regressor(mg)
    copy_params(theirs, ours)
    traces = []
    for lib, net in ((mg, ours), (torch, theirs)):
        opt = lib.optim.RMSprop(net.parameters(), lr=0.01, momentum=0.5, centered=True)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1)
        xt, yt = lib.tensor(x), lib.tensor(y)
        trace = []
        for _ in range(12):
            opt.zero_grad()
            loss = lib.nn.functional.huber_loss(net(xt), yt, delta=0.5)
            loss.backward()
            opt.step()
            sched.step(math.floor(loss.item() * 20) / 20)  # coarse: plateaus cut the lr
            trace.append((loss.item(), opt.param_groups[0]["lr"]))
        traces.append(trace)
    assert_close(traces[0], traces[1], rtol=1e-9)
    assert traces[0][-1][1] < 0.01
