"""Autograd on complex tensors (issue 27), with torch's convention: for a real loss L of
z = x + iy, z.grad = dL/dx + i dL/dy, so gradient descent works unchanged; complex outputs
need an explicit gradient; gradcheck and gradgradcheck perturb real and imaginary parts."""

from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg

RNG = np.random.default_rng(27)


def _z(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def _leaf(a: np.ndarray) -> mg.Tensor:
    return mg.tensor(a, requires_grad=True)


def _by_parts(loss, z0: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """dL/dx + i dL/dy by central differences."""
    out = np.zeros(z0.shape, complex)
    for idx in np.ndindex(z0.shape):
        for unit in (1, 1j):
            d = np.zeros(z0.shape, complex)
            d[idx] = unit * eps
            slope = (loss(z0 + d) - loss(z0 - d)) / (2 * eps)
            out[idx] += unit * slope
    return out


def test_gradient_is_dL_dx_plus_i_dL_dy() -> None:
    z0, b0 = _z(3), _z(3)

    def loss_np(z: np.ndarray) -> float:
        return float(np.sum(np.abs(z * b0 + z.conj()) ** 2 + np.angle(z) + (z * z).real))

    z = _leaf(z0)
    b = mg.tensor(b0)
    loss = ((z * b + z.conj()).abs() ** 2 + z.angle() + (z * z).real).sum()
    loss.backward()
    assert z.grad.dtype is mg.complex128
    np.testing.assert_allclose(z.grad.numpy(), _by_parts(loss_np, z0), rtol=1e-6, atol=1e-8)


def test_gradient_descent_works_unchanged() -> None:
    target = mg.tensor(_z(4))
    z = mg.zeros(4, dtype=mg.complex128, requires_grad=True)
    opt = mg.optim.SGD([z], lr=0.1)
    for _ in range(200):
        opt.zero_grad()
        loss = ((z - target).abs() ** 2).sum()
        loss.backward()
        opt.step()
    np.testing.assert_allclose(z.detach().numpy(), target.numpy(), atol=1e-8)


def test_backward_of_a_complex_output_needs_a_gradient() -> None:
    z = _leaf(_z(2))
    with pytest.raises(RuntimeError, match="only for real scalar outputs"):
        (z * z).sum().backward()
    with pytest.raises(RuntimeError, match="only for real scalar outputs"):
        mg.autograd.grad((z * z).sum(), z)
    with pytest.raises(RuntimeError, match="only for real scalar outputs"):
        (z * z).backward()
    g = mg.tensor(_z(2))
    (z * z).backward(g)  # an explicit gradient: grad_z = g conj(2 z)
    np.testing.assert_allclose(z.grad.numpy(), g.numpy() * np.conj(2 * z.detach().numpy()))


def test_rules_match_torch_values_and_gradients() -> None:
    torch = pytest.importorskip("torch")
    a0, b0, m0, x0 = _z(3, 4), _z(4, 2), _z(3, 2), RNG.standard_normal((3, 4))
    w0 = _z(3, 2)

    def run(lib, a, b, m, x):
        p = (a * x) @ b  # a real input promoted into a complex product
        q = (p / m).exp() + lib.sqrt(m) * lib.tanh(p) - p ** 2.5 + (p.conj() * m).sin()
        r = (q.abs() + q.real * x[:, :2] - q.imag).sum(0)
        return (q * lib.tensor(w0)).sum().real + r.sum() + (a.mean(1) * a.var(1)).sum().real

    results = []
    for lib in (mg, torch):
        leaves = [lib.tensor(v, requires_grad=True) for v in (a0, b0, m0, x0)]
        out = run(lib, *leaves)
        out.backward()
        results.append([out.item()] + [t.grad.detach().numpy() for t in leaves])
    ours, theirs = results
    assert ours[0] == pytest.approx(theirs[0], rel=1e-12)
    assert ours[4].dtype == np.float64  # the real input's gradient is real
    for a, b in zip(ours[1:], theirs[1:]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_mul_and_matmul_rules_conjugate() -> None:
    a0, b0, g0 = _z(2, 3), _z(3, 2), _z(2, 2)
    a, b = _leaf(a0), _leaf(b0)
    (a @ b).backward(mg.tensor(g0))
    np.testing.assert_allclose(a.grad.numpy(), g0 @ b0.conj().T)
    np.testing.assert_allclose(b.grad.numpy(), a0.conj().T @ g0)
    a, b = _leaf(a0), _leaf(b0.T)
    (a * b).backward(mg.tensor(_z(2, 3)))
    g = a.grad.numpy() / np.conj(b0.T)
    np.testing.assert_allclose(b.grad.numpy(), g * np.conj(a0))


def test_a_real_input_of_a_complex_op_gets_the_real_part() -> None:
    x = mg.tensor([1.0, -2.0], dtype=mg.float64, requires_grad=True)
    g = mg.tensor([1 + 2j, 3 - 1j])
    (x * (2 + 1j)).backward(g)
    assert x.grad.dtype is mg.float64
    np.testing.assert_allclose(x.grad.numpy(), (g.numpy() * np.conj(2 + 1j)).real)
    x.grad = None
    mg.complex(x, x * x).backward(g)  # d/dx of x + i x^2 against g: Re g + 2 x Im g
    np.testing.assert_allclose(x.grad.numpy(), [1 + 2 * 2, 3 + -2 * 2 * -1])


CASES = {
    "mul_div": (lambda a, b: a * b / (b + 3), (_z(2, 3), _z(2, 3))),
    "matmul": (lambda a, b: a @ b.mT, (_z(2, 3), _z(2, 3))),
    "abs_angle": (lambda a, b: a.abs() * b.angle() + (a - b).abs(), (_z(4), _z(4))),
    "parts": (lambda a, b: mg.complex(a.real * b.imag, a.imag) * a.conj(), (_z(3), _z(3))),
    "real_in_complex_out": (lambda x, y: mg.polar(x.exp(), y) * (1 - 2j),
                            (RNG.standard_normal(3), RNG.standard_normal(3))),
    "views": (lambda a, b: mg.view_as_complex(mg.view_as_real(a) * b.abs().unsqueeze(-1)),
              (_z(3), _z(3))),
    "reductions": (lambda a, b: (a * b).sum(0) + a.mean(1).prod() + b.norm(), (_z(2, 3),
                                                                               _z(2, 3))),
}


@pytest.mark.parametrize("name", CASES)
def test_gradcheck_and_gradgradcheck_on_complex(name: str) -> None:
    fn, arrays = CASES[name]
    leaves = [_leaf(a) for a in arrays]
    assert mg.autograd.gradcheck(fn, leaves)
    assert mg.autograd.gradcheck(fn, leaves, fast_mode=True)
    assert mg.autograd.gradgradcheck(fn, leaves)


class _MulWithoutConj(mg.autograd.Function):
    """a * b with the real rule's backward (no conj): wrong on complex inputs."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b, g * a


def test_gradcheck_catches_a_missing_conjugate() -> None:
    a, b = _leaf(_z(3)), _leaf(_z(3))
    assert not mg.autograd.gradcheck(_MulWithoutConj.apply, (a, b), raise_exception=False)
    x, y = (mg.tensor(RNG.standard_normal(3), requires_grad=True) for _ in range(2))
    assert mg.autograd.gradcheck(_MulWithoutConj.apply, (x, y))  # right on reals
