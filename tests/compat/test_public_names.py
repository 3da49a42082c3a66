"""The public surface is what ``__all__`` says: every listed name imports, and a package's
``__init__`` binds no public name that its ``__all__`` leaves out."""

from __future__ import annotations

import importlib
import types

import pytest

import minigrad as mg

PACKAGES = ["minigrad", "minigrad.autograd", "minigrad.linalg", "minigrad.nn",
            "minigrad.nn.functional", "minigrad.nn.modules", "minigrad.nn.utils",
            "minigrad.optim", "minigrad.utils"]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_names_exactly_what_the_package_binds(name: str) -> None:
    pkg = importlib.import_module(name)
    listed = pkg.__all__
    assert len(set(listed)) == len(listed), "a name is listed twice"
    assert [n for n in listed if not hasattr(pkg, n)] == []
    bound = {n for n, v in vars(pkg).items()
             if not n.startswith("_") and not isinstance(v, types.ModuleType)}
    modules = {n for n in listed if isinstance(getattr(pkg, n), types.ModuleType)}
    assert bound == set(listed) - modules


@pytest.mark.parametrize("name", PACKAGES)
def test_star_import_gives_all(name: str) -> None:
    scope: dict = {}
    exec(f"from {name} import *", scope)
    assert set(scope) - {"__builtins__"} == set(importlib.import_module(name).__all__)


def test_function_forms_are_the_tensor_methods() -> None:
    x = mg.tensor([[1.0, -2.0], [3.0, 0.5]])
    assert mg.exp is mg.Tensor.exp and mg.sum is mg.Tensor.sum
    assert mg.max(x, 1).indices.tolist() == [0, 0]
    assert mg.round(x * 0.5).tolist() == [[0.0, -1.0], [2.0, 0.0]]
    assert mg.remainder(2.5, mg.tensor([2.0])).tolist() == [0.5]


def test_comparison_and_broadcast_functions_of_ported_code() -> None:
    """torch.gt(x, 0), torch.is_floating_point(x), torch.broadcast_tensors(a, b): function
    forms that ported masks and geometry code calls."""
    x = mg.tensor([[1.0, -2.0], [3.0, 0.5]])
    for name in ("eq", "ne", "lt", "le", "gt", "ge", "is_floating_point"):
        assert getattr(mg, name) is getattr(mg.Tensor, name)
    assert mg.gt(x, 0.75).tolist() == [[True, False], [True, False]]
    assert mg.is_floating_point(x) and not mg.is_floating_point(mg.tensor([1]))
    a, b = mg.broadcast_tensors(mg.ones(2, 1, requires_grad=True), mg.tensor([1.0, 2.0, 3.0]))
    assert a.shape == b.shape == (2, 3) and b.tolist() == [[1.0, 2.0, 3.0]] * 2
