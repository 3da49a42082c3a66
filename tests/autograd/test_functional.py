"""mg.autograd.functional (jacobian, hessian, vjp) against torch.autograd.functional: shapes of
the tuple forms, values (energies of a 3x3 deformation gradient through det and the SVD),
create_graph, strict and the errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import minigrad as mg

AF = mg.autograd.functional
F0 = np.eye(3) + 0.2 * np.random.default_rng(10).standard_normal((3, 3))


def _energies(lib: Any) -> list:
    def neo(F: Any) -> Any:  # a stable neo-Hookean energy
        Ic = (F * F).sum()
        return 0.5 * (Ic - 3) + 5.0 * (lib.linalg.det(F) - 1.1) ** 2 - 0.5 * lib.log(Ic + 1)

    def corotated(F: Any) -> Any:
        S = lib.linalg.svdvals(F)
        return ((S - 1) ** 2).sum() + 0.5 * (S.prod() - 1) ** 2

    return [
        lambda x: AF_of(lib).jacobian(lambda F: F @ F.mT, x),
        lambda x: AF_of(lib).hessian(neo, x),
        lambda x: AF_of(lib).hessian(corotated, x),
        lambda x: AF_of(lib).jacobian(lambda a, b: (a * b, a.sum()), (x, x + 1)),
        lambda x: AF_of(lib).jacobian(lambda a, b: a.exp(), (x, x)),  # b unused: zeros
        lambda x: AF_of(lib).hessian(lambda a, b: (a * b ** 2).sum(), (x, x + 1)),
        lambda x: AF_of(lib).vjp(lambda a: lib.linalg.det(a), x),
        lambda x: AF_of(lib).vjp(lambda a, b: (a @ b, b), (x, x.mT), (x, x))[1],
    ]


def AF_of(lib: Any) -> Any:
    return lib.autograd.functional


def _flat(x: Any) -> list:
    return [t for item in x for t in _flat(item)] if isinstance(x, tuple) else [x]


@pytest.mark.parametrize("case", range(8))
def test_values_and_structure_match_torch(case: int) -> None:
    torch = pytest.importorskip("torch")
    ours = _energies(mg)[case](mg.tensor(F0))
    theirs = _energies(torch)[case](torch.tensor(F0))
    assert type(ours) is type(theirs) or isinstance(ours, mg.Tensor)
    a, b = _flat(ours), _flat(theirs)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.shape == tuple(y.shape) and not x.requires_grad
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-10, atol=1e-12)


def test_hessian_closed_form_and_create_graph() -> None:
    x = mg.tensor([1.0, -2.0, 0.5], dtype=mg.float64)
    np.testing.assert_allclose(AF.hessian(lambda t: (t ** 3).sum(), x).numpy(),
                               np.diag(6 * x.numpy()))
    mu = mg.tensor(2.0, dtype=mg.float64, requires_grad=True)
    H = AF.hessian(lambda t: mu * (t ** 4).sum(), x, create_graph=True)
    assert H.requires_grad
    H.trace().backward()  # d/dmu trace(12 mu diag(x^2)) = 12 sum x^2
    assert mu.grad.item() == pytest.approx(12 * float((x ** 2).sum()))


def test_independent_inputs_strict_and_errors() -> None:
    x = mg.tensor([1.0, 2.0])
    assert AF.jacobian(lambda a: a * 0 + 1, x).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    with pytest.raises(RuntimeError, match="independent of input 1"):
        AF.jacobian(lambda a, b: a * 2, (x, x), strict=True)
    with pytest.raises(RuntimeError, match="single element"):
        AF.hessian(lambda a: a * 2, x)
    with pytest.raises(RuntimeError, match="v can only be None"):
        AF.vjp(lambda a: a * 2, x)
    with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
        AF.jacobian(lambda a: 3.0, x)
