"""nn: Parameter, Module bookkeeping, state dicts and .npz files, layers, init, functional,
the SVD-powered spectral_norm / orthogonal reparametrisations and the matrix norms."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
import minigrad.optim as optim
from minigrad.autograd import gradcheck, gradgradcheck
from minigrad.linalg.norms import matrix_norm, nuclear_norm
from minigrad.serialization import load, save


def f64(a, requires_grad: bool = False) -> mg.Tensor:
    return mg.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def rand64(*shape: int, seed: int = 0, requires_grad: bool = True) -> mg.Tensor:
    return f64(np.random.default_rng(seed).standard_normal(shape), requires_grad)


class TwoLayer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.act = nn.Tanh()
        self.fc2 = nn.Linear(4, 2)
        self.scale = nn.Parameter(mg.ones(2))
        self.register_buffer("steps", mg.zeros(1))
        self.register_buffer("scratch", mg.zeros(1), persistent=False)

    def forward(self, x: mg.Tensor) -> mg.Tensor:
        return self.fc2(self.act(self.fc1(x))) * self.scale


# ---- Parameter ------------------------------------------------------------------------------
def test_parameter_requires_grad_and_gets_gradients_through_ops() -> None:
    p = nn.Parameter(f64([1.0, 2.0]))
    assert p.requires_grad and p.is_leaf and isinstance(p, mg.Tensor)
    (p * p).sum().backward()  # a Tensor subclass must be seen by Function.apply
    np.testing.assert_allclose(p.grad.numpy(), [2.0, 4.0])
    assert type(p * 2) is mg.Tensor  # ops return plain tensors
    assert not nn.Parameter(mg.zeros(2), requires_grad=False).requires_grad


def test_parameter_shares_memory_with_its_data() -> None:
    t = mg.zeros(3)
    p = nn.Parameter(t)
    t.data[0] = 5.0
    assert p.data[0] == 5.0


# ---- Module bookkeeping ---------------------------------------------------------------------
def test_attributes_register_parameters_buffers_and_children_in_order() -> None:
    m = TwoLayer()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["scale", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert [n for n, _ in m.named_children()] == ["fc1", "act", "fc2"]
    assert [n for n, _ in m.named_buffers()] == ["steps", "scratch"]
    assert len(list(m.parameters())) == 5 and len(list(m.modules())) == 4
    assert m.fc1.weight is m._modules["fc1"]._parameters["weight"]


def test_reassigning_and_deleting_attributes() -> None:
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="cannot assign"):
        m.weight = mg.zeros(2, 2)  # a plain tensor is not a Parameter
    m.bias = None
    assert [n for n, _ in m.named_parameters()] == ["weight"]
    m.extra = nn.Parameter(mg.zeros(1))
    del m.extra
    assert "extra" not in dict(m.named_parameters())
    with pytest.raises(AttributeError):
        _ = m.nonexistent


def test_assigning_before_init_is_a_clear_error() -> None:
    class Bad(nn.Module):
        def __init__(self) -> None:
            self.w = nn.Parameter(mg.zeros(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Bad()


def test_shared_parameters_are_listed_once() -> None:
    lin = nn.Linear(3, 3)
    net = nn.Sequential(lin, nn.ReLU(), lin)
    assert len(list(net.parameters())) == 2


def test_train_eval_propagate_and_zero_grad() -> None:
    m = TwoLayer()
    assert m.training and m.fc1.training
    m.eval()
    assert not m.training and not m.fc1.training
    m.train()
    assert m.fc2.training
    m(mg.randn(5, 3)).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in m.parameters())
    m.zero_grad()  # torch's default: set_to_none=True
    assert all(p.grad is None for p in m.parameters())


def test_forward_hooks_run_and_can_be_removed() -> None:
    m = nn.Linear(2, 2)
    seen = []
    h = m.register_forward_pre_hook(lambda mod, args: seen.append("pre"))
    m.register_forward_hook(lambda mod, args, out: out * 0)
    out = m(mg.ones(1, 2))
    assert seen == ["pre"] and not out.detach().numpy().any()
    h.remove()
    m(mg.ones(1, 2))
    assert seen == ["pre"]


# ---- state dicts and files ------------------------------------------------------------------
def test_state_dict_is_detached_ordered_and_shares_memory() -> None:
    m = TwoLayer()
    sd = m.state_dict()
    assert list(sd) == ["scale", "steps", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert all(not t.requires_grad for t in sd.values())
    sd["scale"].data[0] = 7.0
    assert m.scale.data[0] == 7.0


def test_load_state_dict_copies_in_place_and_checks_keys_and_shapes() -> None:
    a, b = TwoLayer(), TwoLayer()
    w = b.fc1.weight
    assert b.load_state_dict(a.state_dict()) == ([], [])
    assert b.fc1.weight is w  # in place: optimizers holding w stay valid
    np.testing.assert_array_equal(w.detach().numpy(), a.fc1.weight.detach().numpy())

    sd = a.state_dict()
    del sd["fc2.bias"]
    sd["extra"] = mg.zeros(1)
    with pytest.raises(RuntimeError, match=r'Missing key\(s\).*"fc2.bias"'):
        b.load_state_dict(sd)
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\).*"extra"'):
        b.load_state_dict(sd)
    assert b.load_state_dict(sd, strict=False) == (["fc2.bias"], ["extra"])

    sd = a.state_dict()
    sd["fc1.weight"] = mg.zeros(3, 4)
    with pytest.raises(RuntimeError, match="size mismatch for fc1.weight"):
        b.load_state_dict(sd, strict=False)


def test_save_and_load_npz_roundtrip(tmp_path) -> None:
    mg.manual_seed(1)
    a = nn.Sequential(nn.Linear(3, 5, dtype=mg.float64), nn.ReLU(), nn.Linear(5, 1))
    path = tmp_path / "model.npz"
    save(a.state_dict(), path)
    assert path.exists()  # the path is used as given
    sd = load(path)
    assert list(sd) == list(a.state_dict()) and sd["0.weight"].dtype == np.float64
    b = nn.Sequential(nn.Linear(3, 5, dtype=mg.float64), nn.ReLU(), nn.Linear(5, 1))
    b.load_state_dict(sd)
    x = mg.randn(4, 3, dtype=mg.float64)
    with mg.no_grad():
        np.testing.assert_array_equal(a(x).numpy(), b(x).numpy())
    buf = io.BytesIO()
    save(a.state_dict(), buf)
    buf.seek(0)
    assert list(load(buf)) == list(sd)
    with pytest.raises(TypeError, match="cannot store set"):
        save({1, 2}, tmp_path / "x.npz")
    assert not (tmp_path / "x.npz").exists()  # refused before anything is written


# ---- layers and init ------------------------------------------------------------------------
def test_linear_shapes_and_torch_default_init() -> None:
    mg.manual_seed(0)
    lin = nn.Linear(400, 300)
    assert lin.weight.shape == (300, 400) and lin.bias.shape == (300,)
    bound = 1 / math.sqrt(400)
    w = lin.weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.02 * bound  # uniform(-b, b)
    assert np.abs(lin.bias.detach().numpy()).max() <= bound
    x = mg.randn(7, 400)
    np.testing.assert_allclose(lin(x).detach().numpy(),
                               x.numpy() @ w.T + lin.bias.detach().numpy(), rtol=1e-5, atol=1e-5)
    assert lin(mg.randn(2, 5, 400)).shape == (2, 5, 300)
    assert nn.Linear(2, 3, bias=False).bias is None
    assert repr(lin) == "Linear(in_features=400, out_features=300, bias=True)"


def test_manual_seed_makes_init_repeatable() -> None:
    mg.manual_seed(3)
    a = nn.Linear(4, 4).weight.detach().numpy().copy()
    mg.manual_seed(3)
    np.testing.assert_array_equal(a, nn.Linear(4, 4).weight.detach().numpy())


def test_sequential_containers_and_repr() -> None:
    net = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1), nn.Sigmoid())
    assert len(net) == 4 and isinstance(net[1], nn.ReLU) and len(net[:2]) == 2
    out = net(mg.randn(5, 2)).detach().numpy()
    assert out.shape == (5, 1) and ((out > 0) & (out < 1)).all()
    assert repr(net).startswith("Sequential(\n  (0): Linear(in_features=2")
    ml = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)])
    assert len(list(ml.parameters())) == 4 and len(ml) == 2


def test_init_functions_follow_torch_formulas() -> None:
    assert nn.init.calculate_gain("relu") == math.sqrt(2)
    assert nn.init.calculate_gain("tanh") == 5 / 3
    assert nn.init.calculate_gain("leaky_relu", math.sqrt(5)) == math.sqrt(1 / 3)
    t = mg.zeros(200, 100)
    nn.init.xavier_uniform_(t)
    assert np.abs(t.numpy()).max() <= math.sqrt(6 / 300)
    nn.init.kaiming_normal_(t, nonlinearity="relu")
    assert abs(t.numpy().std() - math.sqrt(2 / 100)) < 0.01
    q = mg.zeros(3, 5)
    nn.init.orthogonal_(q)
    np.testing.assert_allclose(q.numpy() @ q.numpy().T, np.eye(3), atol=1e-6)
    nn.init.constant_(q, 2.5)
    assert (q.numpy() == 2.5).all()
    p = nn.Parameter(mg.zeros(4))
    nn.init.ones_(p)  # in place on a leaf that requires grad: must work (runs under no_grad)
    assert p.is_leaf and (p.detach().numpy() == 1).all()
    with pytest.raises(ValueError):
        nn.init.xavier_uniform_(mg.zeros(3))


# ---- functional -----------------------------------------------------------------------------
def test_cross_entropy_matches_the_formula_and_is_stable() -> None:
    logits = np.array([[1000.0, 0.0, -1000.0], [2.0, 1.0, 0.5]])
    target = np.array([1, 2])
    logp = logits - (np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1, keepdims=True))
                     + logits.max(1, keepdims=True))
    per = -logp[np.arange(2), target]
    x, t = f64(logits), mg.tensor(target)
    np.testing.assert_allclose(F.cross_entropy(x, t, reduction="none").numpy(), per)
    np.testing.assert_allclose(F.cross_entropy(x, t).item(), per.mean())
    np.testing.assert_allclose(F.cross_entropy(x, t, reduction="sum").item(), per.sum())
    assert np.isfinite(per).all()
    np.testing.assert_allclose(nn.CrossEntropyLoss()(x, t).item(), per.mean())


def test_cross_entropy_weights_ignore_index_and_probabilities() -> None:
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((6, 4))
    target = np.array([0, 3, -100, 2, 1, 3])
    w = np.array([1.0, 2.0, 0.5, 3.0])
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    keep = target != -100
    safe = np.where(keep, target, 0)
    wt = w[safe] * keep
    expected = (-logp[np.arange(6), safe] * wt).sum() / wt.sum()
    got = F.cross_entropy(f64(logits), mg.tensor(target), weight=f64(w))
    np.testing.assert_allclose(got.item(), expected)
    probs = rng.dirichlet(np.ones(4), size=6)
    np.testing.assert_allclose(F.cross_entropy(f64(logits), f64(probs)).item(),
                               -(probs * logp).sum(1).mean())
    with pytest.raises(IndexError):
        F.cross_entropy(f64(logits), mg.tensor([0, 1, 2, 3, 4, 0]))
    with pytest.raises(ValueError):
        F.cross_entropy(f64(logits), mg.tensor(target), reduction="avg")


def test_cross_entropy_accepts_class_dim_and_extra_dims() -> None:
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((2, 3, 5))  # (N, C, d)
    target = rng.integers(0, 3, (2, 5))
    flat = F.cross_entropy(f64(logits.transpose(0, 2, 1).reshape(-1, 3)),
                           mg.tensor(target.reshape(-1)), reduction="none")
    got = F.cross_entropy(f64(logits), mg.tensor(target), reduction="none")
    assert got.shape == (2, 5)
    np.testing.assert_allclose(got.numpy().reshape(-1), flat.numpy())


def test_mse_loss_reductions() -> None:
    x, y = f64([1.0, 2.0, 4.0]), f64([0.0, 2.0, 1.0])
    assert F.mse_loss(x, y).item() == pytest.approx(10 / 3)
    assert F.mse_loss(x, y, reduction="sum").item() == 10
    np.testing.assert_array_equal(F.mse_loss(x, y, reduction="none").numpy(), [1, 0, 9])
    # Another target shape broadcasts with torch's warning, in both losses.
    with pytest.warns(UserWarning, match=r"target size \(\(3, 1\)\) that is different"):
        loss = F.mse_loss(x, f64([[1.0], [2.0], [3.0]]))
    assert loss.item() == pytest.approx(np.mean((np.array([1, 2, 4]) - [[1], [2], [3]]) ** 2))
    with pytest.warns(UserWarning, match="broadcasting"):
        loss = F.l1_loss(x, f64([2.0]))
    assert loss.item() == pytest.approx((1 + 0 + 2) / 3)


def test_functional_gradients_gradcheck() -> None:
    x, w, b = rand64(4, 3, seed=1), rand64(5, 3, seed=2), rand64(5, seed=3)
    t = mg.tensor([0, 4, 2, 1])
    assert gradcheck(lambda x, w, b: F.linear(x, w, b), (x, w, b))
    assert gradcheck(lambda z: F.cross_entropy(z, t), (rand64(4, 5, seed=4),))
    wt = f64([1.0, 2.0, 0.5, 1.0, 3.0])
    assert gradcheck(lambda z: F.cross_entropy(z, mg.tensor([0, 4, -100, 1]), weight=wt),
                     (rand64(4, 5, seed=5),))
    assert gradcheck(lambda a, c: F.mse_loss(a, c), (rand64(3, 2, seed=6), rand64(3, 2, seed=7)))
    assert gradcheck(lambda z: F.log_softmax(z, 1), (rand64(2, 4, seed=8),))
    assert gradcheck(lambda z: F.softmax(z, 0), (rand64(3, 2, seed=9),))


def test_fused_layers_and_losses_have_second_derivatives() -> None:
    t = mg.tensor([2, 0, 1])
    assert gradgradcheck(lambda z: F.cross_entropy(z, t), (rand64(3, 4, seed=13),))
    assert gradgradcheck(lambda x, w, b: F.linear(x, w, b).tanh(),
                         (rand64(2, 3, seed=14), rand64(4, 3, seed=15), rand64(4, seed=16)))
    assert gradgradcheck(lambda z: F.log_softmax(z, -1), (rand64(2, 5, seed=17),))


def test_functional_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    logits = rng.standard_normal((8, 5)) * 4
    target = rng.integers(0, 5, 8)
    target[3] = -100
    w = rng.uniform(0.5, 2.0, 5)
    for red in ("mean", "sum", "none"):
        z = f64(logits, requires_grad=True)
        ours = F.cross_entropy(z, mg.tensor(target), weight=f64(w), reduction=red)
        zt = torch.tensor(logits, requires_grad=True)
        ref = torch.nn.functional.cross_entropy(zt, torch.tensor(target), weight=torch.tensor(w),
                                                reduction=red)
        np.testing.assert_allclose(ours.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
        ours.sum().backward()
        ref.sum().backward()
        np.testing.assert_allclose(z.grad.numpy(), zt.grad.numpy(), rtol=1e-10, atol=1e-14)
    a, c = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    for red in ("mean", "sum"):
        np.testing.assert_allclose(
            F.mse_loss(f64(a), f64(c), reduction=red).item(),
            torch.nn.functional.mse_loss(torch.tensor(a), torch.tensor(c), reduction=red).item())


# ---- spectral_norm and orthogonal -----------------------------------------------------------
def test_exact_spectral_norm_has_unit_spectral_norm_and_true_gradient() -> None:
    mg.manual_seed(0)
    lin = nn.utils.spectral_norm(nn.Linear(6, 4, dtype=mg.float64))
    assert [n for n, _ in lin.named_parameters()] == ["bias", "weight_orig"]
    assert list(lin.state_dict()) == ["bias", "weight_orig"]
    x = mg.randn(3, 6, dtype=mg.float64)
    lin(x).sum().backward()
    assert np.linalg.svd(lin.weight.detach().numpy(), compute_uv=False)[0] == pytest.approx(1.0)
    assert lin.weight_orig.grad is not None and np.abs(lin.weight_orig.grad.numpy()).max() > 0

    def normalised(w: mg.Tensor) -> mg.Tensor:
        return (x @ (w / mg.linalg.svdvals(w)[0]).T).tanh().sum()

    assert gradcheck(normalised, (rand64(4, 6, seed=11),))


def test_power_iteration_spectral_norm_converges_and_freezes_in_eval() -> None:
    mg.manual_seed(0)
    lin = nn.utils.spectral_norm(nn.Linear(8, 5, dtype=mg.float64), exact=False)
    assert {"weight_u", "weight_v", "weight_orig"} <= set(lin.state_dict())
    x = mg.randn(2, 8, dtype=mg.float64)
    for _ in range(30):
        lin(x)
    sigma = np.linalg.svd(lin.weight.detach().numpy(), compute_uv=False)[0]
    assert sigma == pytest.approx(1.0, abs=1e-4)  # an estimate: error ~ (s2 / s1)^(2 n)
    lin(x).sum().backward()  # the buffers' in-place updates must not break the graph
    assert lin.weight_orig.grad is not None
    lin.eval()
    u = lin.weight_u.numpy().copy()
    lin(x)
    np.testing.assert_array_equal(lin.weight_u.numpy(), u)
    with pytest.raises(ValueError):
        nn.utils.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)


def test_spectral_norm_can_be_removed_and_not_applied_twice() -> None:
    lin = nn.utils.spectral_norm(nn.Linear(3, 3))
    with pytest.raises(RuntimeError, match="two"):
        nn.utils.spectral_norm(lin)
    nn.utils.remove_spectral_norm(lin)
    assert [n for n, _ in lin.named_parameters()] == ["bias", "weight"]
    assert isinstance(lin.weight, nn.Parameter)
    assert np.linalg.svd(lin.weight.detach().numpy(), compute_uv=False)[0] == pytest.approx(1.0)


def test_spectral_norm_matches_torch_exact_value() -> None:
    torch = pytest.importorskip("torch")
    w = np.random.default_rng(5).standard_normal((5, 7))
    lin = nn.Linear(7, 5, dtype=mg.float64)
    lin.load_state_dict({"weight": f64(w), "bias": f64(np.zeros(5))})
    nn.utils.spectral_norm(lin)
    ref = torch.tensor(w) / torch.linalg.matrix_norm(torch.tensor(w), 2)
    np.testing.assert_allclose(lin.weight.detach().numpy(), ref.numpy(), rtol=1e-12)


def test_orthogonal_weight_stays_orthogonal_and_has_gradients_at_the_identity() -> None:
    lin = nn.Linear(4, 4, bias=False, dtype=mg.float64)
    nn.init.eye_(lin.weight)
    nn.utils.orthogonal(lin)  # U Vh at the identity: every singular value repeated
    target = rand64(4, 4, seed=3, requires_grad=False)
    ((lin.weight - target) ** 2).sum().backward()
    g = lin.parametrizations.weight.original.grad.numpy()
    assert np.isfinite(g).all() and np.abs(g).max() > 0
    # d polar(W) at W = I is the skew part: dQ = (dW - dW^T) / 2
    expected = 0.5 * (2 * (np.eye(4) - target.numpy()) - 2 * (np.eye(4) - target.numpy()).T)
    np.testing.assert_allclose(g, expected, atol=1e-10)
    opt = optim.SGD(lin.parameters(), lr=0.1)
    for _ in range(5):
        opt.zero_grad()
        ((lin(mg.eye(4, dtype=mg.float64)) - target) ** 2).sum().backward()
        opt.step()
    w = lin(mg.eye(4, dtype=mg.float64)).detach().numpy().T
    np.testing.assert_allclose(w.T @ w, np.eye(4), atol=1e-10)


def test_orthogonal_semi_orthogonal_and_gradcheck() -> None:
    lin = nn.utils.orthogonal(nn.Linear(5, 3, dtype=mg.float64))
    w = lin.weight.detach().numpy()
    np.testing.assert_allclose(w @ w.T, np.eye(3), atol=1e-12)
    x = rand64(2, 3, seed=4, requires_grad=False)

    def polar_loss(m: mg.Tensor) -> mg.Tensor:
        u, _, vh = mg.linalg.svd(m, full_matrices=False)
        return ((u @ vh) * x[0].reshape(3, 1)).sum()

    assert gradcheck(polar_loss, (rand64(3, 5, seed=12),))
    nn.utils.remove_orthogonal(lin)
    assert isinstance(lin.weight, nn.Parameter)


# ---- matrix norms ---------------------------------------------------------------------------
@pytest.mark.parametrize("ord", ["fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf])
def test_matrix_norm_values_match_numpy(ord) -> None:
    a = np.random.default_rng(7).standard_normal((3, 4, 5))
    got = matrix_norm(f64(a), ord).numpy()
    np.testing.assert_allclose(got, [np.linalg.norm(m, ord) for m in a], rtol=1e-10)
    got_t = matrix_norm(f64(a), ord, dim=(-1, -2), keepdim=True)
    assert got_t.shape == (3, 1, 1)
    np.testing.assert_allclose(got_t.numpy().ravel(), [np.linalg.norm(m.T, ord) for m in a],
                               rtol=1e-10)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 0)])
def test_matrix_norms_of_empty_matrices_are_zero_like_numpy(shape) -> None:
    a = mg.zeros(*shape, dtype=mg.float64, requires_grad=True)
    for ord in ("fro", "nuc", 2, 1, math.inf):
        out = matrix_norm(a, ord)
        assert out.shape == shape[:-2] and out.tolist() == np.zeros(shape[:-2]).tolist()
        out.sum().backward()  # the gradient of an empty input is empty, not an error
        assert a.grad.shape == shape
    # the minimum over no singular values, columns (-1) or rows (-inf) has no value: torch
    # raises IndexError too; a minimum over zero-length columns or rows is 0
    for ord, empty in ((-2, True), (-1, shape[-1] == 0), (-math.inf, shape[-2] == 0)):
        if empty:
            with pytest.raises(IndexError, match="empty matrix is undefined"):
                matrix_norm(a, ord)
        else:
            assert matrix_norm(a, ord).tolist() == np.zeros(shape[:-2]).tolist()


def test_matrix_norm_dims_are_validated_like_torch() -> None:
    a = mg.ones(2, 3)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                                         r"\[-2, 1\], but got 3\)"):
        matrix_norm(a, "nuc", dim=(0, 3))  # used to wrap to (0, 1) silently
    with pytest.raises(RuntimeError, match=r"dims must be different. Got \(0, -2\)"):
        matrix_norm(a, dim=(0, -2))
    with pytest.raises(RuntimeError, match="must be a 2-tuple"):
        matrix_norm(a, dim=(1,))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        matrix_norm(mg.ones(3))
    b = mg.tensor(np.random.default_rng(2).standard_normal((2, 3, 4)))
    np.testing.assert_allclose(matrix_norm(b, "nuc", dim=(2, 0)).numpy(),
                               [np.linalg.norm(b.numpy()[:, i, :].T, "nuc") for i in range(3)])


def test_nuclear_norm_and_spectral_norm_gradients() -> None:
    a = rand64(4, 3, seed=8)
    assert gradcheck(nuclear_norm, (a,))
    assert gradcheck(lambda m: matrix_norm(m, 2), (a,))
    assert gradcheck(lambda m: matrix_norm(m, "fro"), (a,))
    nuclear_norm(a).backward()
    u, _, vh = np.linalg.svd(a.detach().numpy(), full_matrices=False)
    np.testing.assert_allclose(a.grad.numpy(), u @ vh, atol=1e-12)  # d||A||_* = U Vh
    with pytest.raises(RuntimeError):
        matrix_norm(a, 3)


def test_clip_grad_norm_scales_all_gradients_jointly() -> None:
    a, b = nn.Parameter(mg.zeros(2)), nn.Parameter(mg.zeros(1))
    a.grad, b.grad = mg.tensor([3.0, 0.0]), mg.tensor([4.0])
    total = nn.utils.clip_grad_norm_([a, b], max_norm=1.0)
    assert total.item() == pytest.approx(5.0)
    np.testing.assert_allclose(np.r_[a.grad.numpy(), b.grad.numpy()], [0.6, 0, 0.8], rtol=1e-5)
    assert nn.utils.clip_grad_norm_([a, b], max_norm=10.0).item() == pytest.approx(1.0, rel=1e-5)


def test_module_to_float_double_cast_parameters_in_place() -> None:
    net = nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 1))
    net.register_buffer("steps", mg.tensor([1, 2]))  # integer buffers keep their dtype
    params = list(net.parameters())
    opt = mg.optim.SGD(net.parameters(), lr=0.1)
    assert net.double() is net
    assert list(net.parameters()) == params  # same objects: the optimizer still holds them
    assert all(p.dtype == np.float64 and isinstance(p, nn.Parameter) and p.is_leaf
               and p.requires_grad for p in params)
    assert net.steps.dtype == np.int64
    net(mg.ones(4, 2, dtype=mg.float64)).sum().backward()
    opt.step()
    assert params[0].grad.dtype == np.float64
    assert net.float().to("cpu") is net and params[0].dtype == np.float32
    assert params[0].grad.dtype == np.float32
    assert net.to(mg.ones(1, dtype=mg.float64)) is net and params[2].dtype == np.float64
    with pytest.raises(TypeError, match="floating point"):
        net.to(mg.int64)
    with pytest.raises(RuntimeError, match="CPU only"):
        net.to("cuda")


def test_linear_with_the_wrong_input_width_names_the_shapes_like_torch() -> None:
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(2x3 and 4x2\)"):
        nn.Linear(4, 2)(mg.ones(2, 3))
    with pytest.raises(RuntimeError, match=r"\(6x3 and 4x2\)"):
        nn.Linear(4, 2)(mg.ones(2, 3, 3))
