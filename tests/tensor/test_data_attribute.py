"""Tensor.data as torch's: a tensor sharing memory, outside autograd (issue 13)."""

import numpy as np
import pytest

import minigrad as mg


def test_data_shares_memory_and_never_requires_grad() -> None:
    p = mg.ones(3, requires_grad=True)
    d = p.data
    assert isinstance(d, mg.Tensor) and not d.requires_grad and d.grad_fn is None
    d[0] = 5.0
    assert p.tolist() == [5.0, 1.0, 1.0] and p.requires_grad


def test_in_place_through_data_is_invisible_to_autograd_as_in_torch() -> None:
    # A write through .data bumps no version, so backward uses the new values silently;
    # the same write through detach() is caught.
    p = mg.tensor([1.0, 2.0], requires_grad=True)
    y = (p * p).sum()
    p.data.mul_(2.0)
    y.backward()
    assert p.grad.tolist() == [4.0, 8.0]
    q = mg.tensor([1.0, 2.0], requires_grad=True)
    z = (q * q).sum()
    q.detach().mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def test_ported_parameter_updates() -> None:
    lin = mg.nn.Linear(2, 2)
    w = lin.weight
    lin.weight.data.copy_(mg.eye(2))
    lin.bias.data.zero_()
    assert lin.weight is w and np.array_equal(w.detach().numpy(), np.eye(2, dtype=np.float32))
    lin.weight.data = mg.zeros(3, 2)  # torch lets the values (and shape) be replaced
    assert lin.weight is w and w.shape == (3, 2) and w.requires_grad


def test_setting_data_to_a_non_tensor_says_what_to_do() -> None:
    p = mg.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match="mg.as_tensor"):
        p.data = np.zeros(2)


def test_against_torch() -> None:
    torch = pytest.importorskip("torch")
    for lib in (mg, torch):
        p = lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64, requires_grad=True)
        y = (p ** 3).sum()
        p.data.add_(1.0)
        y.backward()
        if lib is mg:
            got = p.grad.numpy()
        else:
            want = p.grad.numpy()
    np.testing.assert_array_equal(got, want)
