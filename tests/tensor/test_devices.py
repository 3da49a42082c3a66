"""device= on every creation function, .to(device) / .cpu() / .cuda(), mg.device, mg.cuda:
the CPU is accepted however torch spells it, every other device refused with one message."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn

CPU_ONLY = "minigrad runs on the CPU only"
t0 = mg.ones(2, 3)

FACTORIES = {
    "tensor": lambda d: mg.tensor([1.0, 2.0], device=d),
    "as_tensor": lambda d: mg.as_tensor(np.ones(2), device=d),
    "zeros": lambda d: mg.zeros(2, 3, device=d),
    "ones": lambda d: mg.ones((2, 3), device=d),
    "empty": lambda d: mg.empty(2, device=d),
    "full": lambda d: mg.full((2,), 3.0, device=d),
    "eye": lambda d: mg.eye(3, device=d),
    "arange": lambda d: mg.arange(5, device=d),
    "linspace": lambda d: mg.linspace(0, 1, 5, device=d),
    "logspace": lambda d: mg.logspace(0, 1, 5, device=d),
    "rand": lambda d: mg.rand(2, device=d),
    "randn": lambda d: mg.randn(2, device=d),
    "randint": lambda d: mg.randint(0, 5, (3,), device=d),
    "randperm": lambda d: mg.randperm(4, device=d),
    "zeros_like": lambda d: mg.zeros_like(t0, device=d),
    "ones_like": lambda d: mg.ones_like(t0, device=d),
    "empty_like": lambda d: mg.empty_like(t0, device=d),
    "full_like": lambda d: mg.full_like(t0, 2.0, device=d),
    "rand_like": lambda d: mg.rand_like(t0, device=d),
    "randn_like": lambda d: mg.randn_like(t0, device=d),
    "new_tensor": lambda d: t0.new_tensor([1.0], device=d),
    "new_zeros": lambda d: t0.new_zeros(2, device=d),
    "new_ones": lambda d: t0.new_ones(2, device=d),
    "new_empty": lambda d: t0.new_empty(2, device=d),
    "new_full": lambda d: t0.new_full((2,), 1.0, device=d),
}


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_every_factory_takes_the_cpu_and_refuses_other_devices(name: str) -> None:
    make = FACTORIES[name]
    for cpu in ("cpu", "cpu:0", mg.device("cpu"), None):
        out = make(cpu)
        assert isinstance(out, mg.Tensor) and out.device == mg.device("cpu")
    for other in ("cuda", "cuda:0", mg.device("mps"), "meta"):
        with pytest.raises(RuntimeError, match=CPU_ONLY):
            make(other)


def test_factories_give_torchs_dtype_and_shape_with_device_cpu() -> None:
    torch = pytest.importorskip("torch")
    calls = {"zeros": ((2, 3), {}), "ones": ((2,), {}), "full": (((2,), 3), {}),
             "eye": ((3,), {}), "arange": ((5,), {}), "linspace": ((0, 1, 5), {}),
             "logspace": ((0, 1, 5), {}), "randint": ((0, 5, (3,)), {}), "randperm": ((4,), {}),
             "tensor": (([1, 2],), {}), "rand": ((2,), {"dtype": "float64"})}
    for name, (args, kw) in calls.items():
        kw_t = {k: getattr(torch, v) for k, v in kw.items()}
        kw_m = {k: getattr(mg, v) for k, v in kw.items()}
        ours = getattr(mg, name)(*args, device="cpu", **kw_m)
        theirs = getattr(torch, name)(*args, device="cpu", **kw_t)
        assert ours.shape == tuple(theirs.shape), name
        assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch."), name
        if name not in ("randint", "randperm", "rand"):
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_requires_grad_on_the_new_keywords() -> None:
    assert mg.zeros(2, device="cpu", requires_grad=True).requires_grad
    assert mg.randperm(3, dtype=mg.float64).dtype == np.float64
    with pytest.raises(RuntimeError, match="floating point and complex"):
        mg.randint(0, 3, (2,), requires_grad=True)


def test_device_is_torch_shaped() -> None:
    d = mg.device("cpu")
    assert (d.type, d.index, str(d), repr(d)) == ("cpu", None, "cpu", "device(type='cpu')")
    assert repr(mg.device("cpu", 0)) == "device(type='cpu', index=0)" == repr(mg.device("cpu:0"))
    assert str(mg.device("cuda:1")) == "cuda:1" and mg.device(d) == d
    assert d == "cpu" and d != "cuda" and d != mg.device("cpu:0") and d != "nonsense"
    assert hash(d) == hash(mg.device("cpu")) and {d: 1}[mg.device("cpu")] == 1
    assert pickle.loads(pickle.dumps(mg.device("cpu:0"))) == mg.device("cpu", 0)
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        mg.device("gpu")
    with pytest.raises(RuntimeError, match="Invalid device string"):
        mg.device("cpu:x")
    with pytest.raises(AttributeError):
        d.type = "cuda"
    x = mg.ones(2)
    assert x.device is mg.zeros(1).device and x.device.type == "cpu" and not x.is_cuda


def test_device_matches_torch_repr_and_fields() -> None:
    torch = pytest.importorskip("torch")
    for spec in ("cpu", "cpu:0", "cuda:1", "meta"):
        ours, theirs = mg.device(spec), torch.device(spec)
        assert (repr(ours), str(ours), ours.type, ours.index) == (
            repr(theirs), str(theirs), theirs.type, theirs.index)
    # a torch device is read as what it names
    assert mg.ones(2).to(torch.device("cpu")).device == "cpu"
    with pytest.raises(RuntimeError, match=CPU_ONLY):
        mg.zeros(2, device=torch.device("cuda"))


def test_to_cpu_cuda_and_module_to() -> None:
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    assert x.to(mg.device("cpu")) is x and x.to(x.device) is x and x.cpu() is x
    y = x.to(mg.device("cpu"), mg.float64)
    assert y.dtype == np.float64
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    assert x.cuda(device="cpu") is x
    for bad in (x.cuda, lambda: x.to(mg.device("cuda")), lambda: x.to("mps", mg.float64),
                lambda: x.to(device="cuda:0")):
        with pytest.raises(RuntimeError, match=CPU_ONLY):
            bad()
    m = nn.Linear(2, 2)
    w = m.weight
    assert m.to(mg.device("cpu")) is m and m.to("cpu", mg.float64) is m
    assert m.weight is w and w.dtype == np.float64 and m.cpu() is m
    with pytest.raises(RuntimeError, match=CPU_ONLY):
        m.cuda()
    with pytest.raises(RuntimeError, match=CPU_ONLY):
        m.to("cuda")


def test_cuda_and_accelerator_report_no_gpu() -> None:
    device = "cuda" if mg.cuda.is_available() else "cpu"
    assert device == "cpu" and mg.cuda.device_count() == 0
    mg.cuda.manual_seed_all(0)  # a no-op, as in torch without a GPU
    acc = mg.accelerator
    assert not acc.is_available() and acc.current_accelerator() is None
    assert mg.zeros(1, device=device).device == "cpu"


def test_torch_cpu_reports_match() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("compares against a torch without CUDA")
    assert mg.cuda.is_available() == torch.cuda.is_available()
    assert mg.cuda.device_count() == torch.cuda.device_count()
