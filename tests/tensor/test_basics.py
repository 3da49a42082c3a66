"""Tensor basics: creation, dtypes, conversion, repr, in-place ops and integer tensors."""

from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg


# ---- creation and dtypes --------------------------------------------------------------------
@pytest.mark.parametrize("data,dtype", [
    (1.5, np.float32), ([1.0, 2.0], np.float32), ([[1, 2]], np.int64), (3, np.int64),
    ([True, False], np.bool_), ([1, 2.5], np.float32),
    (np.array([1.0], np.float64), np.float64), (np.array([1.0], np.float16), np.float16),
    (np.array([1], np.int32), np.int32), (np.float64(2.0), np.float64),
])
def test_tensor_dtype_from_data(data: object, dtype: type) -> None:
    t = mg.tensor(data)
    assert t.dtype == dtype
    np.testing.assert_array_equal(t.numpy(), np.asarray(data))


def test_explicit_dtype_and_dtype_names() -> None:
    assert mg.tensor([1, 2], dtype=mg.float64).dtype == np.float64
    assert mg.tensor([1.7], dtype=mg.int64).tolist() == [1]
    assert mg.tensor([1.0], dtype="float16").dtype == np.float16
    assert mg.float32 == np.float32 and mg.bool == np.bool_ and mg.int64 == np.int64
    with pytest.raises(TypeError):  # (complex is held since issue 27: tests/tensor/test_complex.py)
        mg.tensor(np.array(["a"]))


_DTYPE_NAMES = ["float16", "float32", "float64", "int32", "int64", "bool"]


@pytest.mark.parametrize("name", _DTYPE_NAMES)
def test_dtype_objects_are_one_per_dtype_as_torchs(name, tmp_path) -> None:
    """``t.dtype is mg.float64`` (ported ``if T.dtype is torch.float64``) holds however the
    tensor was made, and the dtype still equals numpy's."""
    import pickle

    dt = getattr(mg, name)
    made = [mg.tensor([1, 0], dtype=dt), mg.zeros(2, dtype=dt), mg.ones(2).to(dt),
            mg.tensor(np.ones(2, dtype=name)), mg.tensor(np.ones(2)).type(dt),
            mg.from_numpy(pickle.loads(pickle.dumps(np.ones(2, dtype=name))))]
    mg.save(mg.tensor([1, 0], dtype=dt), tmp_path / "t.pt")
    made.append(mg.load(tmp_path / "t.pt"))
    for t in made:
        assert t.dtype is dt and t.dtype == np.dtype(name)
    if name in ("int64", "bool"):
        t = mg.tensor(np.ones(2, dtype="q" if name == "int64" else "?"))
        assert t.dtype is dt
    assert (made[0] + made[0]).dtype is dt
    torch = pytest.importorskip("torch")
    tdt = getattr(torch, name)
    assert torch.tensor([1, 0], dtype=tdt).dtype is tdt


def test_a_0d_tensor_formats_as_its_number() -> None:
    cases = [(1.5, ".8f"), (1.5, ""), (2.0, "e"), (3, "d"), (3, "5"), (True, "")]
    got = ["{:{}}".format(mg.tensor(x), spec) for x, spec in cases]
    assert got == ["{:{}}".format(x, spec) for x, spec in cases]
    assert f"{mg.tensor(0.25, requires_grad=True) * 2:.3f}" == "0.500"
    with pytest.raises(TypeError):
        f"{mg.tensor([1.5]):.2f}"  # noqa: B018 - torch refuses a spec for n-d tensors too
    assert f"{mg.tensor([1.5])}" == str(mg.tensor([1.5]))
    torch = pytest.importorskip("torch")
    assert got == ["{:{}}".format(torch.tensor(x), spec) for x, spec in cases]
    with pytest.raises(TypeError):
        f"{torch.tensor([1.5]):.2f}"  # noqa: B018


def test_tensor_copies_but_from_numpy_shares_memory() -> None:
    a = np.array([1.0, 2.0])
    t = mg.tensor(a)
    f = mg.from_numpy(a)
    a[0] = 9.0
    assert t.tolist() == [1.0, 2.0]
    assert f.tolist() == [9.0, 2.0] and f.dtype == np.float64
    f[1] = 7.0
    assert a[1] == 7.0
    with pytest.raises(TypeError):
        mg.from_numpy([1.0])


def test_creation_functions() -> None:
    assert mg.zeros(2, 3).shape == (2, 3) and mg.zeros(2, 3).dtype == np.float32
    assert mg.ones((2,), dtype=mg.float64).dtype == np.float64
    assert mg.zeros(()).shape == ()
    np.testing.assert_array_equal(mg.eye(3).numpy(), np.eye(3))
    assert mg.eye(2, 3).shape == (2, 3)
    a = mg.arange(5)
    assert a.dtype == np.int64 and a.tolist() == [0, 1, 2, 3, 4]
    b = mg.arange(1, 2, 0.25)
    assert b.dtype == np.float32 and b.tolist() == [1.0, 1.25, 1.5, 1.75]
    l = mg.linspace(0, 1, 5)
    assert l.dtype == np.float32 and l.tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert mg.full((2,), 7).dtype == np.int64 and mg.full((2,), 7).tolist() == [7, 7]
    assert mg.full((2,), 0.5).dtype == np.float32
    assert mg.full((1,), True).dtype == np.bool_
    x = mg.tensor([[1, 2]])
    assert mg.zeros_like(x).dtype == np.int64 and mg.ones_like(x).tolist() == [[1, 1]]
    assert mg.full_like(x, 3).tolist() == [[3, 3]]
    assert mg.ones_like(x, dtype=mg.float32).dtype == np.float32
    assert mg.rand_like(mg.ones(2, dtype=mg.float64)).dtype == np.float64
    r = mg.zeros(2, requires_grad=True)
    assert r.requires_grad and r.is_leaf


def test_random_is_reproducible_with_seeds_and_generators() -> None:
    mg.manual_seed(123)
    a = mg.randn(4, 3)
    mg.manual_seed(123)
    b = mg.randn(4, 3)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert a.dtype == np.float32 and a.shape == (4, 3)
    g1, g2 = mg.Generator(7), mg.Generator().manual_seed(7)
    np.testing.assert_array_equal(mg.rand(5, generator=g1).numpy(),
                                  mg.rand(5, generator=g2).numpy())
    assert not np.array_equal(mg.rand(5, generator=g1).numpy(), mg.rand(5).numpy())
    u = mg.rand(1000, generator=mg.Generator(0))
    assert 0 <= u.numpy().min() and u.numpy().max() < 1
    n = mg.randn(20000, generator=mg.Generator(1), dtype=mg.float64)
    assert abs(n.numpy().mean()) < 0.05 and abs(n.numpy().std() - 1) < 0.05
    assert mg.randn(2, 2, dtype=mg.float16).dtype == np.float16
    assert mg.randn(3, requires_grad=True).requires_grad
    p = mg.randperm(6, generator=mg.Generator(0))
    assert sorted(p.tolist()) == list(range(6))


# ---- conversion and metadata ----------------------------------------------------------------
def test_item_tolist_numpy_asarray() -> None:
    t = mg.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert mg.tensor([2.5]).item() == 2.5 and isinstance(mg.tensor(3).item(), int)
    with pytest.raises(RuntimeError, match="4 elements"):
        t.item()
    assert np.shares_memory(t.numpy(), np.asarray(t))
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert float(mg.tensor(1.5)) == 1.5 and int(mg.tensor([4])) == 4
    r = mg.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="detach"):
        r.numpy()
    assert r.detach().numpy().tolist() == [1.0]


def test_metadata() -> None:
    t = mg.zeros(2, 3, 4)
    assert t.shape == (2, 3, 4) and t.ndim == 3 and t.numel() == 24 and len(t) == 2
    assert t.size() == (2, 3, 4) and t.size(-1) == 4 and t.dim() == 3
    assert t.T.shape == (4, 3, 2) and t.mT.shape == (2, 4, 3)
    assert mg.zeros(3).T.shape == (3,)
    assert t.is_floating_point() and not mg.tensor([1]).is_floating_point()
    with pytest.raises(TypeError):
        len(mg.tensor(1.0))


def test_repr_is_readable() -> None:
    assert repr(mg.tensor([1.0, 2.5])) == "tensor([1. , 2.5])"
    assert repr(mg.tensor([1, 2])) == "tensor([1, 2])"
    assert "dtype=minigrad.float64" in repr(mg.tensor([1.0], dtype=mg.float64))
    assert "requires_grad=True" in repr(mg.tensor([1.0], requires_grad=True))
    r = repr(mg.tensor([1.0], requires_grad=True) * 2)
    assert "grad_fn=<MulBackward>" in r
    assert repr(mg.tensor(3.0)) == "tensor(3.)"


def test_casts() -> None:
    x = mg.tensor([1.5, -2.5])
    assert x.double().dtype == np.float64 and x.half().dtype == np.float16
    assert x.long().tolist() == [1, -2] and x.bool().tolist() == [True, True]
    assert x.to(mg.float32) is x
    y = mg.tensor([1.0, 2.0], requires_grad=True)
    y.double().sum().backward()
    assert y.grad.dtype == np.float32



def test_type_names_round_trip_as_torchs() -> None:
    """Ported code writes x.type(), x.type(y.type()) and x.type('torch.FloatTensor')."""
    torch = pytest.importorskip("torch")
    for dt in ("float16", "float32", "float64", "int32", "int64", "bool", "complex64",
               "complex128"):
        x, t = mg.zeros(2, dtype=getattr(mg, dt)), torch.zeros(2, dtype=getattr(torch, dt))
        assert x.type().split(".") == ["minigrad", t.type().split(".")[1]]
        assert x.type(t.type()).dtype == x.dtype and x.type(x.type()) is x
        assert mg.ones(1).type(t.type()).dtype == x.dtype
    y = mg.tensor([1.0], requires_grad=True)
    y.type("torch.DoubleTensor").sum().backward()
    assert y.grad.tolist() == [1.0]
    with pytest.raises(ValueError, match="invalid type"):
        mg.ones(1).type("torch.FooTensor")
    with pytest.raises(RuntimeError, match="CPU only"):
        mg.ones(1).type("torch.cuda.FloatTensor")


def test_finfo_and_iinfo_are_torchs() -> None:
    torch = pytest.importorskip("torch")
    for dt in ("float16", "float32", "float64", "complex64", "complex128", None):
        f = mg.finfo(getattr(mg, dt) if dt else None)
        g = torch.finfo(getattr(torch, dt)) if dt else torch.finfo()
        for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution",
                     "dtype"):
            assert getattr(f, attr) == getattr(g, attr) and type(getattr(f, attr)) is type(
                getattr(g, attr)), (dt, attr)
    for dt in ("int32", "int64"):
        i, j = mg.iinfo(getattr(mg, dt)), torch.iinfo(getattr(torch, dt))
        assert (i.bits, i.min, i.max, i.dtype) == (j.bits, j.min, j.max, j.dtype)
    for bad, make in ((mg.int64, mg.finfo), (mg.float32, mg.iinfo), (mg.bool, mg.iinfo)):
        with pytest.raises(TypeError):
            make(bad)


@pytest.mark.parametrize("name", ["float64", "float16"])
def test_set_default_dtype_as_torchs(name: str) -> None:
    """Scientific code starts with torch.set_default_dtype(torch.float64): Python floats, the
    float factories, layers and integer input to float functions follow, as in torch."""
    torch = pytest.importorskip("torch")

    def probe(lib: object) -> list:
        i = lib.tensor([1, 4])
        return [lib.get_default_dtype(), lib.tensor(1.5).dtype, lib.zeros(1).dtype,
                lib.arange(3.0).dtype, lib.rand(2).dtype, lib.full((1,), 2.0).dtype,
                lib.linspace(0, 1, 3).dtype, lib.eye(2).dtype, lib.nn.Linear(2, 2).weight.dtype,
                lib.nn.Parameter().dtype, (i * 1.5).dtype, i.sqrt().dtype, (i / i).dtype,
                lib.maximum(i, i).dtype, lib.tensor([1.5], dtype=lib.float32).dtype]

    try:
        torch.set_default_dtype(getattr(torch, name))
        mg.set_default_dtype(getattr(mg, name))
        ours, theirs = probe(mg), probe(torch)
        assert "dtype" not in repr(mg.tensor([1.5])) and "float32" in repr(mg.ones(1).float())
    finally:
        torch.set_default_dtype(torch.float32)
        mg.set_default_dtype(mg.float32)
    assert [str(d) for d in ours] == [str(d).split(".")[1] for d in theirs]
    assert mg.tensor(1.5).dtype == mg.float32 == mg.get_default_dtype()
    with pytest.raises(TypeError, match="only floating-point types"):
        mg.set_default_dtype(mg.int64)

# ---- integer and bool tensors ---------------------------------------------------------------
def test_integer_tensor_ops() -> None:
    a = mg.tensor([5, -3, 4])
    assert (a + 1).dtype == np.int64 and (a * 2).tolist() == [10, -6, 8]
    assert (a / 2).dtype == np.float32 and (a / 2).tolist() == [2.5, -1.5, 2.0]
    assert (a // 2).tolist() == [2, -2, 2]
    assert a.sum().dtype == np.int64 and a.sum().item() == 6
    assert mg.tensor([True, True, False]).sum().item() == 2
    assert a.exp().dtype == np.float32
    assert a.max().item() == 5 and a.abs().tolist() == [5, 3, 4]
    with pytest.raises(RuntimeError, match="floating point"):
        a.mean()
    assert a.float().mean().item() == 2.0
    with pytest.raises(RuntimeError, match="negative"):
        a ** -1
    with pytest.raises(TypeError):
        mg.tensor([True]) - mg.tensor([False])


def test_bool_masks_and_logic() -> None:
    x = mg.tensor([1.0, -2.0, 3.0])
    m = x > 0
    assert m.dtype == np.bool_ and m.tolist() == [True, False, True]
    assert (~m).tolist() == [False, True, False]
    assert (m & (x < 2)).tolist() == [True, False, False]
    assert x[m].tolist() == [1.0, 3.0]
    assert x.masked_fill(~m, 0.0).tolist() == [1.0, 0.0, 3.0]
    with pytest.raises(TypeError, match="bool"):
        mg.where(mg.tensor([1, 0]), x[:2], x[:2])


# ---- in-place ops (values, dtypes, version counter) -----------------------------------------
def test_in_place_ops_values() -> None:
    x = mg.tensor([1.0, 2.0, 3.0])
    data = x.numpy()
    assert x.add_(1) is x and x.tolist() == [2.0, 3.0, 4.0]
    x.sub_(mg.tensor([1.0, 1.0, 1.0]), alpha=2)
    assert x.tolist() == [0.0, 1.0, 2.0]
    x.mul_(3)
    x.div_(mg.tensor(2.0))
    assert x.tolist() == [0.0, 1.5, 3.0]
    x += 1
    x -= 0.5
    x *= 2
    x /= 4
    assert x.tolist() == [0.25, 1.0, 1.75]
    x.copy_(mg.tensor([7.0]))  # broadcast
    assert x.tolist() == [7.0, 7.0, 7.0]
    x.copy_(np.array([1, 2, 3]))
    assert x.tolist() == [1.0, 2.0, 3.0] and x.dtype == np.float32
    x.fill_(2.5)
    assert x.tolist() == [2.5] * 3
    x.zero_()
    assert x.tolist() == [0.0] * 3
    assert x.numpy() is data  # every in-place op wrote into the same memory


def test_setitem() -> None:
    x = mg.zeros(3, 4)
    x[0] = 1.0
    x[1, 1:3] = mg.tensor([2.0, 3.0])
    x[:, -1] = mg.tensor([5.0, 6.0, 7.0], dtype=mg.float64)  # cast to x's dtype
    x[x > 6] = -1.0
    x[[2, 2], [0, 1]] = 9.0
    np.testing.assert_array_equal(x.numpy(), [[1, 1, 1, 5], [0, 2, 3, 6], [9, 9, 0, -1]])
    assert x.dtype == np.float32
    i = mg.zeros(2, dtype=mg.int64)
    i[0] = 3
    assert i.tolist() == [3, 0]


def test_in_place_dtype_rules_follow_torch() -> None:
    i = mg.tensor([1, 2])
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.add_(0.5)  # float result into an int tensor
    f = mg.tensor([1.0, 2.0], dtype=mg.float16)
    f.add_(mg.tensor([1.0], dtype=mg.float64))  # same kind: allowed, stays float16
    assert f.dtype == np.float16 and f.tolist() == [2.0, 3.0]


def test_in_place_bumps_the_version_shared_by_views() -> None:
    x = mg.zeros(2, 3)
    v = x[0]
    r = x.reshape(6)
    d = x.detach()
    before = x._version
    x.add_(1)
    assert v.tolist() == [1.0, 1.0, 1.0] and r.tolist()[-1] == 1.0
    assert x._version == v._version == r._version == d._version == before + 1
    v.mul_(5)  # writing through the view changes the base
    assert x.tolist()[0] == [5.0, 5.0, 5.0] and x._version == before + 2
    c = x.clone()
    c.add_(1)
    assert x._version == before + 2  # a clone has its own memory and version


def test_in_place_through_a_full_integer_index_writes_into_the_base() -> None:
    x = mg.zeros(3)
    x[0].add_(1)
    y = mg.zeros(2, 3)
    y[1, 2].fill_(5)
    assert x.tolist() == [1.0, 0.0, 0.0] and y.tolist() == [[0, 0, 0], [0, 0, 5]]
    e = x[1]  # a 0-d view: sees later writes to its base and shares its version
    x.add_(1)
    assert e.item() == 1.0 and e._version_counter is x._version_counter
    assert [t.item() for t in x] == [2.0, 1.0, 1.0]


# ---- porting helpers: to(), new_*(), more in-place ops ------------------------------------------
def test_to_takes_torch_style_dtype_device_and_tensor_arguments() -> None:
    x = mg.tensor([1.5, 2.0], requires_grad=True)
    assert x.to("cpu") is x and x.to(device="cpu") is x and x.cpu() is x
    assert x.to(mg.ones(1, dtype=mg.float64)).dtype == np.float64
    assert x.to("cpu", mg.float64).dtype == np.float64
    assert x.to(dtype=mg.float16).dtype == np.float16
    y = x.to("cpu:0", dtype=mg.float64)
    y.sum().backward()  # still differentiable, the gradient cast back
    assert x.grad.dtype == np.float32 and x.grad.tolist() == [1.0, 1.0]
    c = x.detach().to("cpu", copy=True)
    assert c.tolist() == [1.5, 2.0] and not np.shares_memory(c.numpy(), x.detach().numpy())
    for bad in (lambda: x.to("cuda"), lambda: x.to(device="mps"), lambda: x.cuda()):
        with pytest.raises(RuntimeError, match="minigrad runs on the CPU only"):
            bad()


def test_new_tensor_methods_take_this_tensors_dtype() -> None:
    x = mg.ones(2, dtype=mg.float64)
    z = x.new_zeros(2, 3)
    assert z.shape == (2, 3) and z.dtype == np.float64 and not z.any()
    assert x.new_ones((3,)).tolist() == [1.0] * 3
    f = x.new_full((2,), 7, dtype=mg.int64)
    assert f.dtype == np.int64 and f.tolist() == [7, 7]
    t = x.new_tensor([1, 2], requires_grad=True)
    assert t.dtype == np.float64 and t.requires_grad and t.is_leaf
    src = np.array([1.0, 2.0])
    x.new_tensor(src).add_(1)
    assert src.tolist() == [1.0, 2.0]  # a copy


def test_more_in_place_ops() -> None:
    x = mg.tensor([-1.0, 0.0, 2.0])
    assert x.masked_fill_(x < 0, 5.0) is x and x.tolist() == [5.0, 0.0, 2.0]
    x.relu_().neg_().abs_().pow_(2).sqrt_()
    assert x.tolist() == [5.0, 0.0, 2.0]
    x.exp_()
    np.testing.assert_allclose(x.numpy(), np.exp([5.0, 0.0, 2.0]), rtol=1e-6)
    a = mg.tensor([1.0, -2.0], requires_grad=True)
    y = a * 1
    y.masked_fill_(mg.tensor([False, True]), 0.0)
    y.tanh_()
    y.sum().backward()  # recorded like the out-of-place ops
    np.testing.assert_allclose(a.grad.numpy(), [1 - np.tanh(1.0) ** 2, 0.0], rtol=1e-6)


def test_mean_and_var_use_one_element_count() -> None:
    x = mg.tensor(np.arange(6.0).reshape(2, 3))
    assert x.var(1, correction=0).tolist() == pytest.approx([2 / 3, 2 / 3])
    with np.errstate(invalid="ignore"):
        assert np.isnan(mg.zeros(0).mean().item())  # 0 / 0, as in torch
    with pytest.raises(RuntimeError, match="floating point"):
        mg.tensor([1, 2]).var()
