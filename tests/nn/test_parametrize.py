"""nn.utils.parametrize and parametrizations (orthogonal, spectral_norm, weight_norm) as torch
spells and computes them: assignment through right_inverse, state-dict keys, and the same numbers as
torch from the same weights and vectors (issue 9 items 13 and 14, issue 13's spelling)."""

from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn as nn
from minigrad.nn.utils import parametrizations, parametrize

MAPS = ["matrix_exp", "cayley", "householder"]
SHAPES = [(4, 4), (5, 3), (3, 5)]


def linear(shape: tuple, seed: int = 0) -> nn.Linear:
    lin = nn.Linear(shape[1], shape[0], dtype=mg.float64)
    lin.load_state_dict({"weight": mg.tensor(np.random.default_rng(seed).standard_normal(shape)),
                         "bias": mg.zeros(shape[0], dtype=mg.float64)})
    return lin


def orthonormal(shape: tuple, seed: int = 1) -> np.ndarray:
    n, k = max(shape), min(shape)
    q = np.linalg.qr(np.random.default_rng(seed).standard_normal((n, k)))[0]
    return q if shape[0] >= shape[1] else q.T


def is_orthogonal(w: np.ndarray) -> bool:
    g = w.T @ w if w.shape[0] >= w.shape[1] else w @ w.T
    return bool(np.allclose(g, np.eye(min(w.shape)), atol=1e-12))


# ---- 13. assigning goes through right_inverse ---------------------------------------------
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("orthogonal_map", MAPS + ["polar"])
def test_assigning_an_orthogonal_weight_sets_it(orthogonal_map: str, shape: tuple) -> None:
    lin = parametrizations.orthogonal(linear(shape), orthogonal_map=orthogonal_map)
    assert is_orthogonal(lin.weight.detach().numpy())
    Q = orthonormal(shape)
    with mg.no_grad():
        lin.weight = mg.tensor(Q)
    np.testing.assert_allclose(lin.weight.detach().numpy(), Q, atol=1e-14)
    lin(mg.ones(1, shape[1], dtype=mg.float64))  # a forward keeps it (it used to be lost)
    np.testing.assert_allclose(lin.weight.detach().numpy(), Q, atol=1e-14)


def test_assigning_without_a_right_inverse_raises_like_torch() -> None:
    lin = parametrizations.orthogonal(linear((4, 4)), use_trivialization=False)
    with pytest.raises(NotImplementedError, match="use_trivialization=False"), mg.no_grad():
        lin.weight = mg.tensor(orthonormal((4, 4)))

    class Square(nn.Module):
        def forward(self, X):
            return X @ X

    sq = parametrize.register_parametrization(linear((3, 3)), "weight", Square())
    with pytest.raises(RuntimeError, match="Square does not implement right_inverse"):
        sq.weight = mg.eye(3, dtype=mg.float64)


def test_assigning_a_non_orthogonal_weight_orthogonalises_it_as_torch() -> None:
    W = np.random.default_rng(3).standard_normal((4, 4))
    lin = parametrizations.orthogonal(linear((4, 4)))
    lin.weight = mg.tensor(W)  # right_inverse runs under no_grad by itself, as in torch
    q, r = np.linalg.qr(W)
    np.testing.assert_allclose(lin.weight.detach().numpy(), q * np.sign(np.diag(r)),
                               atol=1e-13)
    polar = nn.utils.orthogonal(linear((4, 4)))  # minigrad's map: the nearest orthogonal
    polar.weight = mg.tensor(W)
    u, _, vh = np.linalg.svd(W)
    np.testing.assert_allclose(polar.weight.detach().numpy(), u @ vh, atol=1e-13)


# ---- the same numbers and keys as torch -----------------------------------------------------
@pytest.mark.parametrize("use_trivialization", [True, False])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("orthogonal_map", MAPS)
def test_orthogonal_matches_torch(orthogonal_map: str, shape: tuple,
                                  use_trivialization: bool) -> None:
    torch = pytest.importorskip("torch")
    lin = linear(shape)
    ref = torch.nn.Linear(shape[1], shape[0]).double()
    ref.load_state_dict({k: torch.tensor(v.numpy()) for k, v in lin.state_dict().items()})
    kw = dict(orthogonal_map=orthogonal_map, use_trivialization=use_trivialization)
    parametrizations.orthogonal(lin, **kw)
    torch.nn.utils.parametrizations.orthogonal(ref, **kw)
    np.testing.assert_allclose(lin.weight.detach().numpy(), ref.weight.detach().numpy(),
                               atol=1e-13)
    assert list(lin.state_dict()) == list(ref.state_dict())
    # torch's state dict (a random base completion included) loads into minigrad
    lin.load_state_dict({k: mg.tensor(v.numpy()) for k, v in ref.state_dict().items()})
    step = np.random.default_rng(5).standard_normal(shape) * 0.3
    with mg.no_grad(), torch.no_grad():
        lin.parametrizations.weight.original.add_(mg.tensor(step))
        ref.parametrizations.weight.original.add_(torch.tensor(step))
    x = np.random.default_rng(6).standard_normal((2, shape[1]))
    lin(mg.tensor(x)).sin().sum().backward()
    ref(torch.tensor(x)).sin().sum().backward()
    np.testing.assert_allclose(lin.weight.detach().numpy(), ref.weight.detach().numpy(),
                               atol=1e-13)
    np.testing.assert_allclose(lin.parametrizations.weight.original.grad.numpy(),
                               ref.parametrizations.weight.original.grad.numpy(), atol=1e-12)


def test_orthogonal_maps_are_differentiable_twice() -> None:
    x = mg.tensor(np.random.default_rng(7).standard_normal((2, 3)))
    X = mg.tensor(np.random.default_rng(8).standard_normal((3, 3)) * 0.5, requires_grad=True)
    for orthogonal_map in MAPS:
        orth = parametrizations._Orthogonal(mg.zeros(3, 3), orthogonal_map,
                                            use_trivialization=False)
        assert mg.autograd.gradgradcheck(lambda t, o=orth: x @ o(t), (X,)), orthogonal_map


def _fit(m, lin, steps: int = 25) -> np.ndarray:
    rng = np.random.default_rng(9)
    X, Y = m.tensor(rng.standard_normal((16, 7))), m.tensor(rng.standard_normal((16, 5)))
    opt = m.optim.SGD(lin.parameters(), lr=0.5)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ((lin(X) - Y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses)


def _spectral(m, api: str):
    """A 7 -> 5 linear layer under spectral_norm, from fixed weights and vectors u, v."""
    rng = np.random.default_rng(10)
    W, b = rng.standard_normal((5, 7)), rng.standard_normal(5)
    lin = m.nn.Linear(7, 5).double() if m is not mg else nn.Linear(7, 5, dtype=mg.float64)
    with m.no_grad():
        lin.weight.copy_(m.tensor(W))
        lin.bias.copy_(m.tensor(b))
    if api == "parametrizations":
        m.nn.utils.parametrizations.spectral_norm(lin)
        u, v = lin.parametrizations.weight[0]._u, lin.parametrizations.weight[0]._v
    elif m is mg:
        nn.utils.spectral_norm(lin, exact=False)
        u, v = lin.weight_u, lin.weight_v
    else:
        m.nn.utils.spectral_norm(lin)
        u, v = lin.weight_u, lin.weight_v
    with m.no_grad():
        u.copy_(m.tensor(np.full(5, 5 ** -0.5)))
        v.copy_(m.tensor(np.full(7, 7 ** -0.5)))
    return lin


@pytest.mark.parametrize("api", ["parametrizations", "legacy"])
def test_spectral_norm_follows_torch_step_for_step(api: str) -> None:
    torch = pytest.importorskip("torch")
    ours, ref = _spectral(mg, api), _spectral(torch, api)
    assert sorted(ours.state_dict()) == sorted(ref.state_dict())
    np.testing.assert_allclose(_fit(mg, ours), _fit(torch, ref), rtol=1e-10)
    for k, v in ref.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[k].numpy(), v.numpy(), rtol=1e-9,
                                   atol=1e-12)
    fresh = _spectral(torch, api)  # and minigrad's state dict loads into torch
    fresh.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    fresh.eval()
    ours.eval()
    x = np.random.default_rng(11).standard_normal((3, 7))
    with mg.no_grad(), torch.no_grad():  # a forward: the legacy weight is set by a pre-hook
        np.testing.assert_allclose(fresh(torch.tensor(x)).numpy(), ours(mg.tensor(x)).numpy(),
                                   rtol=1e-12)


def test_the_two_power_iteration_orders_really_differ() -> None:
    # what made issue 9 item 14: the curves drift apart from the same weights and vectors
    new, old = _fit(mg, _spectral(mg, "parametrizations")), _fit(mg, _spectral(mg, "legacy"))
    assert np.max(np.abs(new - old) / old) > 1e-2


def test_spectral_norm_keys_buffers_and_modes() -> None:
    mg.manual_seed(0)
    lin = parametrizations.spectral_norm(nn.Linear(6, 4, dtype=mg.float64))
    assert sorted(lin.state_dict()) == ["bias", "parametrizations.weight.0._u",
                                        "parametrizations.weight.0._v",
                                        "parametrizations.weight.original"]
    sigma = np.linalg.svd(lin.weight.detach().numpy(), compute_uv=False)[0]
    assert sigma == pytest.approx(1.0, abs=1e-6)  # 15 rounds at registration, as torch
    lin.eval()
    u = lin.parametrizations.weight[0]._u.numpy().copy()
    lin(mg.ones(1, 6, dtype=mg.float64))  # reads the weight: no power iteration in eval
    np.testing.assert_array_equal(lin.parametrizations.weight[0]._u.numpy(), u)
    vec = parametrizations.spectral_norm(parametrize_vector(), name="w")
    np.testing.assert_allclose(vec.w.detach().numpy(), [0.6, 0.8])
    with pytest.raises(ValueError, match="n_power_iterations"):
        parametrizations.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        parametrizations.spectral_norm(nn.Linear(2, 2), dim=2)
    with pytest.raises(ValueError, match="no parameter or buffer with name 'nope'"):
        parametrizations.spectral_norm(nn.Linear(2, 2), name="nope")


def parametrize_vector() -> nn.Module:
    m = nn.Module()
    m.w = nn.Parameter(mg.tensor([3.0, 4.0], dtype=mg.float64))
    return m


def test_legacy_spectral_norm_refuses_an_assignment_it_would_lose() -> None:
    lin = nn.utils.spectral_norm(nn.Linear(3, 3))
    lin.weight = mg.eye(3)
    with pytest.raises(RuntimeError, match="assign to weight_orig instead"):
        lin(mg.ones(1, 3))


# ---- the parametrize API itself ---------------------------------------------------------------
class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).mT

    def right_inverse(self, A):
        return A.triu()


class Scale(nn.Module):
    def forward(self, X):
        return X * 2

    def right_inverse(self, A):
        return A / 2


def test_register_chain_assign_and_remove() -> None:
    lin = linear((3, 3))
    weight = lin.weight
    parametrize.register_parametrization(lin, "weight", Symmetric())
    assert parametrize.is_parametrized(lin) and parametrize.is_parametrized(lin, "weight")
    assert not parametrize.is_parametrized(lin, "bias")
    assert lin.parametrizations.weight.original is weight  # optimizers keep working
    assert type(lin).__name__ == "ParametrizedLinear"
    assert parametrize.type_before_parametrizations(lin) is nn.Linear
    parametrize.register_parametrization(lin, "weight", Scale())
    w = lin.weight.detach().numpy()
    np.testing.assert_allclose(w, w.T)
    S = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 5.0], [3.0, 5.0, 6.0]])
    lin.weight = mg.tensor(S)  # through Scale's then Symmetric's right_inverse
    np.testing.assert_allclose(lin.weight.detach().numpy(), S)
    np.testing.assert_allclose(lin.parametrizations.weight.original.detach().numpy(),
                               np.triu(S) / 2)
    (lin(mg.ones(2, 3, dtype=mg.float64)) ** 2).sum().backward()
    assert weight.grad is not None and np.tril(weight.grad.numpy(), -1).max() == 0
    assert [n for n, _ in lin.named_parameters()] == ["bias", "parametrizations.weight.original"]
    parametrize.remove_parametrizations(lin, "weight")
    assert type(lin) is nn.Linear and isinstance(lin.weight, nn.Parameter)
    np.testing.assert_allclose(lin.weight.detach().numpy(), S)
    assert [n for n, _ in lin.named_parameters()] == ["bias", "weight"]  # as torch
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        parametrize.remove_parametrizations(lin, "weight")


def test_remove_keeping_the_original_and_the_checks_at_registration() -> None:
    lin = linear((3, 3))
    parametrize.register_parametrization(lin, "weight", Scale())
    parametrize.remove_parametrizations(lin, "weight", leave_parametrized=False)
    np.testing.assert_allclose(lin.weight.detach().numpy(),
                               linear((3, 3)).weight.detach().numpy() / 2)

    class Rows(nn.Module):
        def forward(self, X):
            return X[:1]

    with pytest.raises(ValueError, match="may not change the shape"):
        parametrize.register_parametrization(linear((3, 3)), "weight", Rows())
    assert parametrize.register_parametrization(linear((3, 3)), "weight", Rows(),
                                                unsafe=True).weight.shape == (1, 3)
    with pytest.raises(ValueError, match="does not have a parameter, a buffer"):
        parametrize.register_parametrization(linear((3, 3)), "nope", Scale())


def test_cached_computes_each_parametrized_tensor_once() -> None:
    calls = []

    class Counted(nn.Module):
        def forward(self, X):
            calls.append(1)
            return X * 1

    lin = parametrize.register_parametrization(linear((2, 2)), "weight", Counted())
    calls.clear()
    with parametrize.cached():
        a, b = lin.weight, lin.weight
    assert a is b and len(calls) == 1
    assert lin.weight is not a and len(calls) == 2  # outside the block: computed again


def test_a_right_inverse_returning_two_tensors_makes_two_originals() -> None:
    class Norm(nn.Module):  # weight_norm's shape: w = g * v / |v|
        def forward(self, g, v):
            return g * v / v.norm(dim=1, keepdim=True)

        def right_inverse(self, w):
            return w.norm(dim=1, keepdim=True), w

    lin = parametrize.register_parametrization(linear((3, 2)), "weight", Norm())
    assert sorted(lin.state_dict()) == ["bias", "parametrizations.weight.original0",
                                        "parametrizations.weight.original1"]
    np.testing.assert_allclose(lin.weight.detach().numpy(), linear((3, 2)).weight.detach().numpy())
    lin.weight = mg.ones(3, 2, dtype=mg.float64)
    np.testing.assert_allclose(lin.weight.detach().numpy(), np.ones((3, 2)))


def _same_forward_and_gradients(m: nn.Module, t: object, torch: object) -> None:
    """m (loaded from t's state dict) gives t's output and parameter gradients on a batch."""
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 5))
    yt, ym = t(torch.tensor(x)), m(mg.tensor(x))
    (yt ** 2).sum().backward()
    (ym ** 2).sum().backward()
    np.testing.assert_allclose(ym.detach().numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    for a, b in zip(m.parameters(), t.parameters()):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dim", [0, 1, None, -2])
def test_weight_norm_matches_torch_from_a_torch_state_dict(dim: int | None) -> None:
    """Flow and GAN code wraps layers in parametrizations.weight_norm: the same keys (g as
    original0, v as original1), g's shape, forward and gradients as torch's."""
    torch = pytest.importorskip("torch")
    t = torch.nn.utils.parametrizations.weight_norm(torch.nn.Conv2d(3, 4, 3).double(), dim=dim)
    m = parametrizations.weight_norm(nn.Conv2d(3, 4, 3, dtype=mg.float64), dim=dim)
    m.load_state_dict({k: mg.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    assert m.parametrizations.weight.original0.shape == tuple(
        t.parametrizations.weight.original0.shape)
    _same_forward_and_gradients(m, t, torch)
    w = np.random.default_rng(1).standard_normal((4, 3, 3, 3))
    m.weight = mg.tensor(w)  # through right_inverse: v = W and g its norms, so W comes back
    np.testing.assert_allclose(m.weight.detach().numpy(), w, rtol=1e-12)


@pytest.mark.filterwarnings("ignore:.*weight_norm is deprecated")
@pytest.mark.parametrize("dim", [0, 1, None])
def test_legacy_weight_norm_matches_torch_and_removes(dim: int | None) -> None:
    """Older vocoder and GAN code calls torch.nn.utils.weight_norm / remove_weight_norm."""
    torch = pytest.importorskip("torch")
    t = torch.nn.utils.weight_norm(torch.nn.Conv2d(3, 4, 3).double(), dim=dim)
    m = nn.utils.weight_norm(nn.Conv2d(3, 4, 3, dtype=mg.float64), dim=dim)
    m.load_state_dict({k: mg.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    _same_forward_and_gradients(m, t, torch)
    with pytest.raises(RuntimeError, match="Cannot register two"):
        nn.utils.weight_norm(m)
    torch.nn.utils.remove_weight_norm(t)
    nn.utils.remove_weight_norm(m)
    assert sorted(m.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(m.weight.detach().numpy(), t.weight.detach().numpy(), atol=1e-15)
    with pytest.raises(ValueError, match="not found"):
        nn.utils.remove_weight_norm(m)
