"""Complex tensors (issue 27): dtypes and torch's promotion, creation, the parts as views
(writes through them reach the tensor), conversions, printing, and torch's refusals."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import minigrad as mg

DTYPES = ["bool", "int32", "int64", "float16", "float32", "float64", "complex64", "complex128"]


def test_dtype_names_and_kinds() -> None:
    assert mg.complex64 is mg.cfloat and mg.complex128 is mg.cdouble
    z = mg.tensor([1 + 2j, 3 - 1j])
    assert z.dtype is mg.complex64 and z.is_complex() and mg.is_complex(z)
    assert not z.is_floating_point() and not mg.ones(2).is_complex()
    assert mg.tensor(1 + 2j).dtype is mg.complex64  # a Python complex: the default float's
    assert mg.tensor(np.array([1j])).dtype is mg.complex128  # numpy keeps its dtype
    assert mg.tensor(np.array([1j], np.complex64)).dtype is mg.complex64
    assert mg.tensor([1, 2], dtype=mg.cdouble).dtype is mg.complex128
    assert mg.from_numpy(np.zeros(2, np.complex128)).dtype is mg.complex128


def _promoted(lib, a: str, b: str, shapes: tuple) -> str:
    x = lib.ones(shapes[0], dtype=getattr(lib, a))
    y = lib.ones(shapes[1], dtype=getattr(lib, b))
    return str((x + y).dtype).removeprefix("torch.")


@pytest.mark.parametrize("shapes", [((2,), (2,)), ((2,), ()), ((), (2,))],
                         ids=["dim-dim", "dim-0d", "0d-dim"])
def test_promotion_as_torchs_on_a_grid(shapes: tuple) -> None:
    torch = pytest.importorskip("torch")
    for a, b in itertools.product(DTYPES, DTYPES):
        if "bool" == a == b:
            continue
        want = _promoted(torch, a, b, shapes)
        if want == "complex32":  # no numpy dtype: minigrad's smallest complex
            want = "complex64"
        assert _promoted(mg, a, b, shapes) == want, (a, b, shapes)


@pytest.mark.parametrize("dtype", DTYPES[1:])
def test_python_complex_scalar_promotes_as_torchs(dtype: str) -> None:
    torch = pytest.importorskip("torch")
    for shape in ((2,), ()):
        want = str(torch.result_type(torch.ones(shape, dtype=getattr(torch, dtype)), 1j))
        want = want.removeprefix("torch.").replace("complex32", "complex64")
        assert str((mg.ones(shape, dtype=getattr(mg, dtype)) * 1j).dtype) == want


def test_creation_with_complex_dtypes() -> None:
    for fn in (mg.zeros, mg.ones, mg.randn, mg.rand, mg.empty):
        assert fn(2, 3, dtype=mg.cdouble).dtype is mg.complex128
    assert mg.eye(2, dtype=mg.cfloat).tolist() == [[1, 0], [0, 1]]
    assert mg.full((2,), 1 + 2j).dtype is mg.complex64
    assert mg.full((2,), 1 + 2j).tolist() == [1 + 2j, 1 + 2j]
    r = mg.rand(2000, dtype=mg.cdouble).numpy()
    assert 0 <= r.real.min() and r.real.max() < 1 and 0 <= r.imag.min() and r.imag.max() < 1


def test_randn_complex_has_torchs_variance() -> None:
    z = mg.randn(200_000, dtype=mg.complex128, generator=mg.Generator(3)).numpy()
    # E|z|^2 = 1, each part variance 1/2 (torch's); 5 standard errors
    assert abs(np.mean(np.abs(z) ** 2) - 1) < 5 * np.sqrt(1 / 200_000)
    assert abs(np.var(z.real) - 0.5) < 5 * np.sqrt(0.5 / 200_000)
    assert abs(np.var(z.imag) - 0.5) < 5 * np.sqrt(0.5 / 200_000)


def test_complex_real_imag_polar_and_views_between_real_and_complex() -> None:
    re, im = mg.tensor([1.0, -2.0]), mg.tensor([0.5, 3.0])
    z = mg.complex(re, im)
    assert z.dtype is mg.complex64 and z.tolist() == [1 + 0.5j, -2 + 3j]
    np.testing.assert_allclose(mg.polar(mg.tensor([2.0]), mg.tensor([np.pi / 2])).numpy(),
                               [2j], atol=1e-6)
    pairs = mg.view_as_real(z)
    assert pairs.shape == (2, 2) and pairs.tolist() == [[1, 0.5], [-2, 3]]
    back = mg.view_as_complex(pairs)
    assert back.tolist() == z.tolist() and np.shares_memory(back.numpy(), z.numpy())
    with pytest.raises(RuntimeError, match="Expected object of scalar type"):
        mg.complex(re, im.double())
    with pytest.raises(RuntimeError, match="last dimension of size 2"):
        mg.view_as_complex(mg.ones(2, 3))
    with pytest.raises(RuntimeError, match="stride 1"):
        mg.view_as_complex(mg.ones(2, 2).T)
    with pytest.raises(RuntimeError, match="only supported for complex"):
        mg.view_as_real(mg.ones(2))


def test_real_and_imag_are_views_whose_writes_reach_the_tensor() -> None:
    z = mg.tensor([1 + 2j, 3 - 1j])
    z.real.mul_(3)
    z.imag[0] = 7
    assert z.tolist() == [3 + 7j, 9 - 1j]
    mg.view_as_real(z)[1, 1] = 5
    assert z.tolist() == [3 + 7j, 9 + 5j]
    z.real.zero_()
    assert z.tolist() == [7j, 5j]
    x = mg.ones(2)
    assert x.real is x  # a real tensor's real part is itself, as torch's
    with pytest.raises(RuntimeError, match="non-complex"):
        _ = x.imag


def test_writes_through_the_parts_are_differentiated() -> None:
    w = mg.tensor([1 + 2j, 3 - 1j], dtype=mg.complex128, requires_grad=True)
    x = mg.tensor([0.5, 2.0], dtype=mg.float64, requires_grad=True)

    def f(w: mg.Tensor, x: mg.Tensor) -> mg.Tensor:
        y = w * 1
        y.imag.mul_(x)
        y.real[1] = x[0] ** 2
        mg.view_as_real(y)[0, 0] = x[1] * 3
        return y

    assert f(w, x).tolist() == [6 + 1j, 0.25 - 2j]
    assert mg.autograd.gradcheck(f, (w, x))
    assert mg.autograd.gradgradcheck(f, (w, x))


def test_conj_angle_abs_sgn_item_and_printing() -> None:
    z = mg.tensor([3 + 4j, -1 + 0j, 0j], dtype=mg.complex128)
    assert z.conj().tolist() == [3 - 4j, -1, 0] and z.conj_physical().tolist() == [3 - 4j, -1, 0]
    assert not z.conj().is_conj() and z.resolve_conj() is z
    assert z.abs().dtype is mg.float64 and z.abs().tolist() == [5, 1, 0]
    np.testing.assert_allclose(z.angle().numpy(), [np.arctan2(4, 3), np.pi, 0])
    np.testing.assert_allclose(z.sgn().numpy(), [0.6 + 0.8j, -1, 0], rtol=1e-15)
    assert mg.tensor([-2.0, 3.0]).angle().tolist() == pytest.approx([np.pi, 0])
    assert mg.tensor([1 + 0j, 1j]).isreal().tolist() == [True, False]
    assert mg.tensor(1 + 2j).item() == 1 + 2j and isinstance(mg.tensor(1j).item(), complex)
    assert mg.tensor([1 + 1j]).tolist() == [1 + 1j]
    assert repr(mg.tensor([1 + 2j, 3 - 1j])) == "tensor([1.+2.j, 3.-1.j])"
    assert repr(mg.tensor([1j], dtype=mg.cdouble)) == "tensor([0.+1.j], dtype=minigrad.complex128)"
    with pytest.raises(RuntimeError, match="cannot be converted"):
        float(mg.tensor(1 + 1j))
    assert float(mg.tensor(2 + 0j)) == 2.0


def test_casts_to_and_from_complex() -> None:
    z = mg.tensor([1 + 2j, 3 - 1j])
    assert mg.tensor([1, 2]).to(mg.cfloat).tolist() == [1, 2]
    assert z.to(mg.complex128).dtype is mg.complex128 and z.type(mg.cdouble).dtype is mg.cdouble
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        r = z.to(mg.float32)
    assert r.tolist() == [1, 3]  # torch's: the real part
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's ComplexWarning must not leak
        assert z.real.tolist() == [1, 3]


REFUSED = {
    "lt": lambda z: z < z, "gt": lambda z: z > 1, "le": lambda z: z <= z,
    "ge": lambda z: z >= 0, "max": lambda z: z.max(), "min": lambda z: z.min(),
    "amax": lambda z: z.amax(0), "max_dim": lambda z: z.max(0), "argmax": lambda z: z.argmax(),
    "argmin": lambda z: z.argmin(0), "sort": lambda z: z.sort(), "topk": lambda z: z.topk(1),
    "median": lambda z: z.median(), "clamp": lambda z: z.clamp(0, 1),
    "relu": lambda z: z.relu(), "maximum": lambda z: z.maximum(z),
    "floor": lambda z: z.floor(), "remainder": lambda z: z % 2,
    "floor_divide": lambda z: z // 2, "erf": lambda z: z.erf(), "sign": lambda z: z.sign(),
    "cummax": lambda z: z.cummax(0), "kthvalue": lambda z: z.kthvalue(1),
    "softmax": lambda z: z.softmax(0), "log_softmax": lambda z: z.log_softmax(0),
    "fmax": lambda z: z.fmax(z), "copysign": lambda z: z.copysign(z),
    "heaviside": lambda z: z.heaviside(z), "logit": lambda z: z.logit(),
    "xlogy": lambda z: z.xlogy(z), "signbit": lambda z: z.signbit(),
    "isposinf": lambda z: z.isposinf(), "deg2rad": lambda z: z.deg2rad(),
    "digamma": lambda z: z.digamma(), "i0": lambda z: z.i0(), "atan2": lambda z: z.atan2(z),
    "hypot": lambda z: z.hypot(z), "mode": lambda z: z.mode(), "unique": lambda z: z.unique(),
    "logaddexp2": lambda z: z.logaddexp2(z), "logaddexp2_real": lambda z: z.real.logaddexp2(z),
}


def test_a_complex_number_does_not_fit_a_real_tensor() -> None:
    torch = pytest.importorskip("torch")
    writes = [lambda x: x.__setitem__(0, 1j), lambda x: x.fill_(1j),
              lambda x: x.masked_fill(x == 0, 1j)]
    for write in writes:
        with pytest.raises(RuntimeError, match="cannot be converted") as theirs:
            write(torch.zeros(3))
        with pytest.raises(type(theirs.value), match="cannot be converted"):
            write(mg.zeros(3))
    z = mg.zeros(2, dtype=mg.cfloat)
    z[0] = 1 + 2j
    z.masked_fill_(z == 0, 3j)
    assert z.tolist() == [1 + 2j, 3j]


@pytest.mark.parametrize("name", REFUSED)
def test_torchs_refusals_on_complex(name: str) -> None:
    """Where torch has no complex version, a RuntimeError (NotImplementedError is one, as
    torch raises it), never numpy's lexicographic order."""
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as theirs:
        REFUSED[name](torch.tensor([1 + 2j, 3 - 1j]))
    with pytest.raises(type(theirs.value)):
        REFUSED[name](mg.tensor([1 + 2j, 3 - 1j]))
