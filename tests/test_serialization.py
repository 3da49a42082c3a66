"""mg.save / mg.load: checkpoints of nested containers, never unpickled, with clear refusals
(issue 9, items 5 and 12), and pickling / deepcopy of tensors and modules (item 10)."""

from __future__ import annotations

import copy
import io
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn as nn


def _trained():
    mg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4, dtype=mg.float64), nn.Tanh(), nn.Linear(4, 1))
    opt = mg.optim.Adam(model.parameters(), lr=1e-2)
    x = mg.randn(8, 3, dtype=mg.float64)
    for _ in range(3):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
    return model, opt, loss, x


def _roundtrip(obj, **load_kw):
    buf = io.BytesIO()
    mg.save(obj, buf)
    buf.seek(0)
    return mg.load(buf, **load_kw)


def test_torch_checkpoint_recipe_round_trips_and_resumes_identically(tmp_path) -> None:
    model, opt, loss, x = _trained()
    path = tmp_path / "ckpt.tar"  # torch's tutorial name; the path is used as given
    mg.save({"epoch": 3, "model_state_dict": model.state_dict(),
             "optimizer_state_dict": opt.state_dict(), "loss": loss}, path)
    ck = mg.load(path, weights_only=True)
    assert ck["epoch"] == 3 and type(ck["epoch"]) is int
    assert isinstance(ck["model_state_dict"], OrderedDict)
    assert list(ck["model_state_dict"]) == list(model.state_dict())
    assert ck["loss"].item() == loss.item() and ck["loss"].dtype == loss.dtype
    model2 = nn.Sequential(nn.Linear(3, 4, dtype=mg.float64), nn.Tanh(), nn.Linear(4, 1))
    opt2 = mg.optim.Adam(model2.parameters(), lr=1e-2)
    model2.load_state_dict(ck["model_state_dict"])
    opt2.load_state_dict(ck["optimizer_state_dict"])
    for m, o in ((model, opt), (model2, opt2)):  # one more step each: identical
        o.zero_grad()
        m(x).pow(2).mean().backward()
        o.step()
    for p, q in zip(model.parameters(), model2.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


def test_optimizer_state_dict_keeps_int_keys_tuples_and_types() -> None:
    _, opt, _, _ = _trained()
    sd = _roundtrip(opt.state_dict())
    assert sorted(sd["state"]) == [0, 1, 2, 3]
    assert sd["param_groups"][0]["betas"] == (0.9, 0.999)
    assert sd["param_groups"][0]["params"] == [0, 1, 2, 3]
    assert sd["state"][0]["step"] == 3 and isinstance(sd["state"][0]["exp_avg"], mg.Tensor)


def test_every_supported_value_comes_back_as_itself() -> None:
    w = nn.Parameter(mg.ones(2, dtype=mg.float16))
    t = mg.tensor([1, 2], dtype=mg.int64)
    obj = {"none": None, "true": True, "int": -7, "big": 2 ** 70, "float": 0.1, "inf": np.inf,
           "str": "héllo", "list": [1, [2.5, "x"]], "tuple": (1, (2,)), "empty": {},
           (1, "a"): "tuple key", 3: "int key", "np_scalar": np.float32(1.5),
           "ndarray": np.arange(6).reshape(2, 3), "bool_arr": np.array([True, False]),
           "param": w, "tensor": t, "same_tensor_again": t, "grad": mg.ones(1, requires_grad=True)}
    back = _roundtrip(obj)
    assert back.keys() == obj.keys()
    for k in ("none", "true", "int", "big", "float", "inf", "str", "list", "tuple", "empty",
              (1, "a"), 3):
        assert back[k] == obj[k] and type(back[k]) is type(obj[k]), k
    assert type(back["np_scalar"]) is np.float32 and back["np_scalar"] == 1.5
    assert back["ndarray"].dtype == np.int64 and back["ndarray"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert back["bool_arr"].dtype == np.bool_
    assert isinstance(back["param"], nn.Parameter) and back["param"].dtype == np.float16
    assert back["param"].requires_grad and back["grad"].requires_grad
    assert back["tensor"] is back["same_tensor_again"] and back["tensor"].dtype == np.int64
    assert isinstance(_roundtrip(mg.tensor(3.0)), mg.Tensor)


def test_arrays_are_plain_npy_members_that_numpy_reads() -> None:
    model, opt, _, _ = _trained()
    buf = io.BytesIO()
    mg.save({"model": model.state_dict(), "opt": opt.state_dict()}, buf)
    buf.seek(0)
    with np.load(buf, allow_pickle=False) as npz:
        np.testing.assert_array_equal(npz["model/0.weight"], model[0].weight.detach().numpy())
        assert "opt/state/0/exp_avg" in npz.files
    buf = io.BytesIO()
    np.savez(buf, **{"fc.weight": np.ones((2, 2))})  # a plain npz of arrays loads too
    buf.seek(0)
    assert list(mg.load(buf)) == ["fc.weight"]


def test_unsupported_objects_are_refused_before_writing(tmp_path) -> None:
    for bad, what in (({"ok": 1, "bad": {1, 2}}, r"cannot store set at \['bad'\]"),
                      (nn.Linear(1, 1), "save its state_dict"),
                      ({object(): 1}, "dict key of type object"),
                      ([np.array([None])], "object array")):
        path = tmp_path / "x.npz"
        with pytest.raises(TypeError, match=what):
            mg.save(bad, path)
        assert not path.exists()


def test_load_refuses_other_files_clearly(tmp_path) -> None:
    npy = tmp_path / "a.npy"
    np.save(npy, np.ones(3))
    with pytest.raises(ValueError, match=r"single numpy array \(\.npy\)"):
        mg.load(npy)
    pickled = tmp_path / "a.pkl"
    pickled.write_bytes(pickle.dumps({"a": 1}))
    with pytest.raises(ValueError, match="never unpickles"):
        mg.load(pickled)
    torch = pytest.importorskip("torch")
    pt = tmp_path / "model.pt"
    torch.save({"w": torch.ones(2)}, pt)
    with pytest.raises(ValueError, match="a torch.save file"):
        mg.load(pt)


def test_load_accepts_torch_keywords_that_mean_the_cpu() -> None:
    sd = nn.Linear(2, 2).state_dict()
    for loc in (None, "cpu", "cpu:0"):
        assert list(_roundtrip(sd, map_location=loc, weights_only=False)) == list(sd)
    with pytest.raises(RuntimeError, match="CPU only"):
        _roundtrip(sd, map_location="cuda:0")
    torch = pytest.importorskip("torch")
    assert list(_roundtrip(sd, map_location=torch.device("cpu"))) == list(sd)


# ---- 10. pickle and deepcopy ----------------------------------------------------------------
def test_tensors_pickle_while_views_are_alive() -> None:
    w = mg.randn(3, 4, requires_grad=True)
    v = w[0]  # a view with a replay closure
    w.grad = mg.ones(3, 4)
    w2 = pickle.loads(pickle.dumps(w))
    assert w2.requires_grad and w2.is_leaf and w2.grad is None  # as torch: no .grad
    np.testing.assert_array_equal(w2.detach().numpy(), w.detach().numpy())
    v2 = pickle.loads(pickle.dumps(v))
    assert v2.is_leaf and v2.requires_grad and v2.shape == (4,)
    p = pickle.loads(pickle.dumps(nn.Parameter(mg.ones(2))))
    assert type(p) is nn.Parameter and p.requires_grad
    (w2 * 2).sum().backward()
    assert w2.grad.tolist() == [[2.0] * 4] * 3


def test_deepcopy_keeps_grads_views_and_types_like_torch() -> None:
    a = mg.arange(6.0).reshape(2, 3)
    b, c = a[0], a.T
    a2, b2, c2 = copy.deepcopy([a, b, c])
    b2[0] = 100.0  # views of a copied base stay views of its copy
    assert a2.numpy()[0, 0] == 100.0 and c2.numpy()[0, 0] == 100.0 and a.numpy()[0, 0] == 0.0
    x = mg.ones(2, requires_grad=True)
    x.grad = mg.tensor([3.0, 4.0])
    x2 = copy.deepcopy(x)
    assert x2.grad.tolist() == [3.0, 4.0] and x2.grad is not x.grad and x2.requires_grad
    p = nn.Parameter(mg.ones(2))
    p.grad = mg.ones(2)
    assert copy.deepcopy(p).grad is None  # torch's Parameter leaves .grad behind


def test_modules_pickle_and_deepcopy_after_training() -> None:
    model, _, _, x = _trained()
    row = model[0].weight[0]  # a view of a parameter, alive while the model is copied
    (model(x).sum() + row.sum()).backward()
    for clone in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        with mg.no_grad():
            np.testing.assert_array_equal(clone(x).numpy(), model(x).numpy())
        assert all(p is not q for p, q in zip(clone.parameters(), model.parameters()))
        clone(x).sum().backward()
        assert all(p.grad is not None for p in clone.parameters())


def test_reparametrised_modules_pickle_and_deepcopy() -> None:
    mg.manual_seed(1)
    sn = nn.utils.spectral_norm(nn.Linear(3, 3, dtype=mg.float64), exact=False)
    orth = nn.utils.parametrizations.orthogonal(nn.Linear(3, 3, dtype=mg.float64))
    psn = nn.utils.parametrizations.spectral_norm(nn.Linear(4, 2, dtype=mg.float64))
    x = mg.randn(2, 3, dtype=mg.float64)
    for m in (sn, orth, psn):
        inp = x if m is not psn else mg.randn(2, 4, dtype=mg.float64)
        m(inp).sum().backward()
        for clone in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
            assert type(clone).__name__ == type(m).__name__
            assert sorted(clone.state_dict()) == sorted(m.state_dict())
            np.testing.assert_allclose(clone.weight.detach().numpy(),
                                       m.weight.detach().numpy(), rtol=1e-12)
            clone(inp).sum().backward()
