"""linalg.vector_norm for every ord torch accepts, linalg.norm's dispatch, cross, multi_dot,
matrix_power: values and gradients against torch and finite differences, torch's errors."""

import math

import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd import gradcheck, gradgradcheck

L = mg.linalg
INF = float("inf")
ORDS = [2, 1, 3, 0.5, -1, -2.5, INF, -INF, 0]


def rand(*shape, seed=0, grad=True):
    return mg.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=grad)


@pytest.mark.parametrize("ord", ORDS)
@pytest.mark.parametrize("dim, keepdim", [(None, False), (1, False), ((0, 2), True), (-1, True)])
def test_vector_norm_values_and_gradients_match_torch(ord, dim, keepdim):
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(1).standard_normal((2, 3, 4))
    if not 0 < ord < 1:  # there a zero entry has no derivative: refused (test below)
        a[0, 1, 2] = 0.0  # an exact zero: torch's zero-gradient convention there
    x, xt = mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    out = L.vector_norm(x, ord, dim, keepdim)
    ref = torch.linalg.vector_norm(xt, ord, dim, keepdim)
    assert out.shape == tuple(ref.shape)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
    w = np.random.default_rng(2).standard_normal(tuple(ref.shape))
    (out * mg.tensor(w)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    expected = np.zeros_like(a) if xt.grad is None else xt.grad.numpy()
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("ord", [2, 1, 3, 0.5, -1, INF])
def test_vector_norm_gradgradcheck(ord):
    x = rand(2, 4, seed=3)
    assert gradcheck(lambda t: L.vector_norm(t, ord, -1), (x,))
    if ord not in (1, INF):  # piecewise linear: second derivative 0 a.e., checked anyway below
        assert gradgradcheck(lambda t: L.vector_norm(t, ord, -1), (x,))
    else:
        assert gradgradcheck(lambda t: L.vector_norm(t, ord, -1) ** 2, (x,))


def test_vector_norm_at_zero_has_zero_gradient_like_torch():
    for ord in [2, 3, 0.5, -1, INF]:
        x = mg.zeros(3, dtype=mg.float64, requires_grad=True)
        L.vector_norm(x, ord).backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.zeros(3))


def test_vector_norm_refuses_the_cusp_of_p_below_one_at_a_zero_entry():
    # torch returns 0 there; the one-sided difference quotients say there is no derivative:
    # they have opposite signs and grow like h^(p - 1) as h shrinks
    a = np.array([0.0, 1.0, -2.0])
    f = lambda v: L.vector_norm(mg.tensor(v), 0.5).item()  # noqa: E731
    e = np.array([1.0, 0.0, 0.0])
    q = {h: ((f(a + h * e) - f(a)) / h, (f(a) - f(a - h * e)) / h) for h in (1e-4, 1e-8)}
    assert q[1e-4][0] > 0 > q[1e-4][1]
    assert q[1e-8][0] > 50 * q[1e-4][0]
    x = mg.tensor(a, requires_grad=True)
    with pytest.raises(RuntimeError, match="no derivative at a zero entry"):
        L.vector_norm(x, 0.5).backward()
    # the same for Tensor.norm, which is now the one implementation of the p-norm
    with pytest.raises(RuntimeError, match="no derivative at a zero entry"):
        mg.tensor(a, requires_grad=True).norm(0.5).backward()


def test_vector_norm_empty_and_errors_follow_torch():
    assert L.vector_norm(mg.ones(0)).item() == 0.0
    assert L.vector_norm(mg.ones(0), 0).item() == 0.0
    for ord in (INF, -1):
        with pytest.raises(RuntimeError, match="cannot compute the .* norm on an empty tensor"):
            L.vector_norm(mg.ones(0), ord)
    with pytest.raises(TypeError, match="argument 'ord' must be Number, not str"):
        L.vector_norm(mg.ones(2), "fro")
    with pytest.raises(RuntimeError, match="Expected a floating point tensor as input. Got Long"):
        L.vector_norm(mg.tensor([1, 2]))
    assert L.vector_norm(mg.ones(2, 3), dtype=mg.float64).dtype == np.float64
    with pytest.raises(RuntimeError, match="without narrowing"):
        L.vector_norm(mg.ones(2, dtype=mg.float64), dtype=mg.float32)


@pytest.mark.parametrize("ord, dim", [(None, None), ("fro", None), (2, None), ("nuc", None),
                                      (-2, None), (1, 0), (3, 1), (INF, 1), (2, (0, 1)),
                                      (-1, (1, 0)), (None, (0, 1))])
def test_norm_dispatch_matches_torch(ord, dim):
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(4).standard_normal((3, 4))
    out = L.norm(mg.tensor(a), ord, dim)
    np.testing.assert_allclose(out.numpy(), torch.linalg.norm(torch.tensor(a), ord, dim).numpy(),
                               rtol=1e-12)
    x = mg.tensor(a, requires_grad=True)
    assert gradcheck(lambda t: L.norm(t, ord, dim), (x,))


def test_norm_errors_follow_torch():
    with pytest.raises(RuntimeError, match="If dim is not specified but ord is, the input must be "
                                           "1D or 2D. Got 3D."):
        L.norm(mg.ones(2, 2, 2), 2)
    with pytest.raises(RuntimeError, match="dim is specified, it must be of length 1 or 2"):
        L.norm(mg.ones(2, 2, 2), 2, (0, 1, 2))
    assert L.norm(mg.ones(2, 2, 2)).item() == pytest.approx(np.sqrt(8))


def test_cross_broadcasts_and_differentiates():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((2, 1, 3)), rng.standard_normal((1, 4, 3))
    np.testing.assert_allclose(L.cross(mg.tensor(a), mg.tensor(b)).numpy(),
                               torch.linalg.cross(torch.tensor(a), torch.tensor(b)).numpy())
    c = rng.standard_normal((3, 2))
    np.testing.assert_allclose(L.cross(mg.tensor(c), mg.tensor(c[::-1].copy()), dim=0).numpy(),
                               np.cross(c, c[::-1], axis=0))
    np.testing.assert_allclose(mg.cross(mg.tensor(c), mg.tensor(c[::-1].copy())).numpy(),
                               np.cross(c, c[::-1], axis=0))  # torch.cross: first dim of size 3
    x, y = rand(2, 3, seed=6), rand(2, 3, seed=7)
    assert gradgradcheck(L.cross, (x, y))
    with pytest.raises(RuntimeError, match="inputs dimension -1 must have length 3. Got 2 and 2"):
        L.cross(mg.ones(2), mg.ones(2))
    with pytest.raises(RuntimeError, match="inputs must have the same number of dimensions"):
        L.cross(mg.ones(3), mg.ones(2, 3))


def test_cross_is_one_node_with_the_composites_numbers():
    """cross's own node: np.cross's values (broadcast, any dim, complex), bit for bit the
    components x_i y_j - x_j y_i as separate ops rounded them, its gradients by finite
    differences (broadcast dims summed back; complex by torch's convention, checked on a
    real loss), and torch's refusal of mixed dtypes (it promotes nothing)."""
    rng = np.random.default_rng(9)
    for sa, sb, dim in [((6, 3), (6, 3), -1), ((2, 1, 3), (1, 4, 3), -1), ((3, 5), (3, 1), 0),
                        ((2, 3, 4), (1, 3, 4), 1), ((0, 3), (1, 3), 1)]:
        a = rng.standard_normal(sa).astype(np.float32)
        b = rng.standard_normal(sb).astype(np.float32)
        got = L.cross(mg.tensor(a), mg.tensor(b), dim=dim).numpy()
        assert got.dtype == np.float32 and got.flags.c_contiguous
        x, y = np.moveaxis(a, dim, -1), np.moveaxis(b, dim, -1)
        want = np.stack([x[..., i] * y[..., j] - x[..., j] * y[..., i]
                         for i, j in ((1, 2), (2, 0), (0, 1))], -1)
        assert np.array_equal(got, np.moveaxis(want, -1, dim))
        np.testing.assert_allclose(got, np.cross(a, b, axis=dim), rtol=1e-6, atol=1e-6)
    x, y = rand(4, 1, 3, seed=1), rand(1, 2, 3, seed=2)
    assert gradcheck(L.cross, (x, y)) and gradgradcheck(L.cross, (x, y))
    assert gradcheck(lambda u, v: L.cross(u, v, dim=0), (rand(3, 2, seed=3), rand(3, 1, seed=4)))
    z = mg.tensor(rng.standard_normal((4, 3)) + 1j * rng.standard_normal((4, 3)),
                  requires_grad=True)
    w = mg.tensor(rng.standard_normal((4, 3)) + 1j * rng.standard_normal((4, 3)),
                  requires_grad=True)
    assert np.allclose(L.cross(z, w).detach().numpy(),
                       np.cross(z.detach().numpy(), w.detach().numpy()))
    assert gradcheck(lambda u, v: (L.cross(u, v).abs() ** 2).sum(), (z, w))
    with pytest.raises(RuntimeError, match="one dtype"):
        L.cross(mg.ones(3), mg.ones(3, dtype=mg.float64))
    with pytest.raises(NotImplementedError, match="Bool"):
        L.cross(mg.tensor([True, False, True]), mg.tensor([True, True, False]))
    with pytest.raises(RuntimeError, match=r"tensor a \(2\) must match .* tensor b \(4\)"):
        L.cross(mg.ones(2, 3), mg.ones(4, 3))


def test_multi_dot_order_shapes_and_gradients():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    shapes = [(3,), (3, 5), (5, 2), (2, 7), (7,)]
    arrays = [rng.standard_normal(s) for s in shapes]
    out = L.multi_dot([mg.tensor(a) for a in arrays])
    ref = torch.linalg.multi_dot([torch.tensor(a) for a in arrays])
    assert out.shape == tuple(ref.shape) == ()
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12)
    xs = [rand(*s, seed=i) for i, s in enumerate([(2, 3), (3, 4), (4, 2)])]
    assert gradgradcheck(lambda *t: L.multi_dot(t), xs)
    with pytest.raises(RuntimeError, match="expected at least 2 tensors but got 1"):
        L.multi_dot([mg.ones(2)])
    with pytest.raises(RuntimeError, match=r"tensors 0 and 1 with shapes \[2, 2\] and \[3, 3\] "
                                           "cannot be multiplied"):
        L.multi_dot([mg.ones(2, 2), mg.ones(3, 3)])


def test_multi_dot_picks_the_cheap_order():
    from minigrad.linalg.products import _order

    ts = [mg.ones(100, 2), mg.ones(2, 100), mg.ones(100, 100)]
    assert int(_order(ts)[0, 2]) == 0  # A (B C): 4e4 multiply-adds, not 1e6


@pytest.mark.parametrize("n", [0, 1, 2, 3, 6, -1, -2])
def test_matrix_power_matches_torch_and_differentiates(n):
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(9).standard_normal((2, 3, 3)) + 2 * np.eye(3)
    np.testing.assert_allclose(L.matrix_power(mg.tensor(a), n).numpy(),
                               torch.linalg.matrix_power(torch.tensor(a), n).numpy(), rtol=1e-10)
    if n:
        A = mg.tensor(a, requires_grad=True)
        assert gradgradcheck(lambda t: L.matrix_power(t, n), (A,), fast_mode=True)


def test_matrix_power_errors():
    with pytest.raises(RuntimeError, match="A must be batches of square matrices"):
        L.matrix_power(mg.ones(2, 3), 2)
    with pytest.raises(mg.linalg.LinAlgError, match="singular"):
        L.matrix_power(mg.tensor([[1.0, 2.0], [2.0, 4.0]]), -1)


@pytest.mark.parametrize("ord, dim", [(None, None), (3, 1), ("nuc", None), (2, (0, 1))])
def test_norm_gradgradcheck(ord, dim):
    x = rand(3, 4, seed=10)
    assert gradgradcheck(lambda t: L.norm(t, ord, dim), (x,), fast_mode=True)


def test_p_below_one_refuses_only_the_slices_the_loss_uses():
    torch = pytest.importorskip("torch")
    a = np.array([[1.0, 2.0, 3.0], [0.0, 1.0, 2.0]])  # the zero is in the unused row
    x, xt = mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    L.vector_norm(x, 0.5, dim=1)[0].backward()
    torch.linalg.vector_norm(xt, 0.5, dim=1)[0].backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="no derivative at a zero entry"):
        L.vector_norm(mg.tensor(a, requires_grad=True), 0.5, dim=1)[1].backward()


def test_second_derivative_at_a_zero_entry_for_p_between_one_and_two_is_inf():
    # f = (|t|^1.5 + 1 + 2^1.5)^(2/3) along the zero entry t: f'' ~ |t|^-0.5 / n^0.5, so the
    # central second differences grow without bound as h shrinks (torch says nan)
    a = np.array([0.0, 1.0, -2.0])
    f = lambda v: L.vector_norm(mg.tensor(v), 1.5).item()  # noqa: E731
    e = np.array([1.0, 0.0, 0.0])
    d2 = {h: (f(a + h * e) - 2 * f(a) + f(a - h * e)) / h ** 2 for h in (1e-2, 1e-4)}
    assert d2[1e-4] > 5 * d2[1e-2] > 0
    x = mg.tensor(a, requires_grad=True)
    (g,) = mg.autograd.grad(L.vector_norm(x, 1.5), x, create_graph=True)
    (h,) = mg.autograd.grad(g[0], x, create_graph=True)
    assert h[0].item() == math.inf and h[1:].tolist() == [0.0, 0.0]
    with pytest.raises(RuntimeError, match="third derivative does not exist"):
        mg.autograd.grad(h[0], x)
    # away from the zero entry every order is finite and checks against finite differences
    assert gradgradcheck(lambda t: L.vector_norm(t, 1.5), (rand(5, seed=9),))
