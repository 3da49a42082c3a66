"""The SVD backward off the poles (batches of small matrices): the one-pass numba kernel
used when the gradient is not differentiated again, the op path used when it is, and the
masked-quotient formula they replace, all give the same numbers; gradients against finite
differences and torch; a tie anywhere in the batch still takes the exact tie path."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd import gradcheck, gradgradcheck
from minigrad.linalg import _svd_backward as B
from minigrad.linalg._svd_forward import svd_forward
from minigrad.linalg._svd_parts import numerators, pairwise

rng = np.random.default_rng(0)


def _factors(a):
    return tuple(mg.tensor(x) for x in svd_forward(a))


def _gapped(batch, k, dtype):
    """Random matrices with singular values well apart (no pole in either precision)."""
    q1 = np.linalg.qr(rng.standard_normal((batch, k, k)))[0]
    q2 = np.linalg.qr(rng.standard_normal((batch, k, k)))[0]
    s = np.arange(k, 0, -1.0) + 0.3 * rng.random((batch, k))
    return ((q1 * s[:, None, :]) @ q2).astype(dtype)


def _cotangents(U, S, Vh, present, dtype):
    return [mg.tensor(rng.standard_normal(t.shape).astype(dtype)) if i in present else None
            for i, t in enumerate((U, S, Vh))]


def _masked_formula(U, S, Vh, gU, gS, gVh):
    """The plain masked quotients (the formula before the fast paths)."""
    num = numerators(U, Vh.mT, gU, None if gVh is None else gVh.mT, False, False)
    minus_s, plus_s = pairwise(S)
    P = B._plain(num, minus_s, plus_s, S)
    X = (P.plus + P.minus) * 0.5
    if gS is not None:
        X = X + gS.diag_embed()
    return (U @ X @ Vh).numpy()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", [2, 3, 4, 6])
@pytest.mark.parametrize("present", [(0, 1, 2), (0, 2), (0,), (2,), (1, 2)])
def test_kernel_ops_and_masked_formula_agree(k, present, dtype):
    U, S, Vh = _factors(_gapped(40, k, dtype))
    g = _cotangents(U, S, Vh, present, dtype)
    with mg.no_grad():
        fused = B.svd_backward(U, S, Vh, *g).numpy()
    with mg.enable_grad():
        ops = B.svd_backward(U, S, Vh, *g).numpy()
    eps = np.finfo(dtype).eps
    if k <= 4:  # ops/matmul.py's kernel: the same sums in the same order, the same numbers
        np.testing.assert_array_equal(fused, ops)  # (float32 too: no float64 slips in)
    else:  # BLAS sums the products of the op path in its own order
        np.testing.assert_allclose(fused, ops, rtol=0, atol=64 * eps * np.abs(ops).max())
    np.testing.assert_allclose(ops, _masked_formula(U, S, Vh, *g), rtol=0,
                               atol=64 * eps * np.abs(ops).max())


def test_a_plain_backward_runs_the_kernel_and_create_graph_the_ops(monkeypatch):
    calls = []
    real = B._fused
    monkeypatch.setattr(B, "_fused", lambda *a: calls.append(1) or real(*a))
    A = mg.tensor(rng.standard_normal((32, 3, 3)), requires_grad=True)
    U, _, Vh = mg.linalg.svd(A)
    (U @ Vh).sum().backward()
    assert calls == [1]
    U, _, Vh = mg.linalg.svd(A)
    mg.autograd.grad((U @ Vh).sum(), A, create_graph=True)
    assert calls == [1]
    for a in (A[0].detach(), A[:3].detach()):  # a lone matrix, a short batch: the kernel too
        calls.clear()
        x = a.clone().requires_grad_()
        U, S, Vh = mg.linalg.svd(x)
        (g,) = mg.autograd.grad((U @ Vh).sum() + S.sum(), x)
        assert calls == [1]
        x = a.clone().requires_grad_()
        U, S, Vh = mg.linalg.svd(x)
        (ops,) = mg.autograd.grad((U @ Vh).sum() + S.sum(), x, create_graph=True)
        np.testing.assert_allclose(g.numpy(), ops.detach().numpy(), rtol=1e-12, atol=1e-12)


def _polar(C):
    def loss(a):
        U, _, Vh = mg.linalg.svd(a)
        return (C * (U @ Vh)).sum()
    return loss


def test_polar_loss_gradcheck_and_gradgradcheck_on_a_batch():
    A = mg.tensor(rng.standard_normal((16, 3, 3)), requires_grad=True)
    C = mg.tensor(rng.standard_normal((16, 3, 3)))
    assert gradcheck(_polar(C), (A,), fast_mode=True)
    assert gradgradcheck(_polar(C), (A,), fast_mode=True)


def test_usv_loss_gradcheck_on_a_batch():
    A = mg.tensor(rng.standard_normal((16, 4, 4)), requires_grad=True)
    W = mg.tensor(rng.standard_normal((16, 4, 4)))

    def loss(a):
        U, S, Vh = mg.linalg.svd(a)
        return (W * ((U * S.unsqueeze(-2)) @ Vh) ** 2).sum() + S.sum()
    assert gradcheck(loss, (A,), fast_mode=True)


def test_polar_and_usv_gradients_match_torch_on_a_batch():
    torch = pytest.importorskip("torch")
    A0, C0 = rng.standard_normal((64, 3, 3)), rng.standard_normal((64, 3, 3))
    A = mg.tensor(A0, requires_grad=True)
    U, S, Vh = mg.linalg.svd(A)
    ((mg.tensor(C0) * (U @ Vh)).sum() + (S * S).sum()).backward()
    T = torch.tensor(A0, requires_grad=True)
    tU, tS, tVh = torch.linalg.svd(T)
    ((torch.tensor(C0) * (tU @ tVh)).sum() + (tS * tS).sum()).backward()
    np.testing.assert_allclose(A.grad.numpy(), T.grad.numpy(), rtol=1e-9, atol=1e-11)


def test_a_tie_in_one_batch_element_takes_the_exact_path_for_all():
    """The identity (s = 1, 1, 1) among regular matrices: the polar factor's gradient there
    is finite (torch's is NaN), and every element gets what it gets alone."""
    A0 = rng.standard_normal((24, 3, 3))
    A0[5] = np.eye(3)
    C = rng.standard_normal((24, 3, 3))
    A = mg.tensor(A0, requires_grad=True)
    _polar(mg.tensor(C))(A).backward()
    assert np.all(np.isfinite(A.grad.numpy()))
    for i in (0, 5, 23):
        a = mg.tensor(A0[i], requires_grad=True)
        _polar(mg.tensor(C[i]))(a).backward()
        np.testing.assert_allclose(A.grad.numpy()[i], a.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("scale", [1e300, 1e-300, 1e150, 1e-150])
def test_extreme_scales_on_a_batch(scale):
    """Scale-invariant polar loss: the gradient scales exactly as 1 / scale, from the
    bottom of the range to near its top (where 2 (s_i + s_j) would still fit)."""
    A0, C = rng.standard_normal((32, 3, 3)), mg.tensor(rng.standard_normal((32, 3, 3)))
    A, As = (mg.tensor(a, requires_grad=True) for a in (A0, A0 * scale))
    _polar(C)(A).backward()
    _polar(C)(As).backward()
    np.testing.assert_allclose(As.grad.numpy() * scale, A.grad.numpy(), rtol=1e-9,
                               atol=1e-12 * np.abs(A.grad.numpy()).max())


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_masked_quotients_in_numpy_are_the_ops_numbers(dtype):
    """quot and pairwise (k > 16) in numpy when nothing records: the recorded ops' numbers
    bit for bit, dtype too, with masked entries 0 (also where the denominator is 0)."""
    from minigrad.linalg._svd_parts import quot

    k = 20
    s = np.sort(rng.random(k))[::-1].astype(np.float32 if dtype == np.float32 else np.float64)
    s[-3:] = s[-3]  # a tie: s_j - s_i = 0 there
    nu = rng.standard_normal((k, k)).astype(dtype)
    S, N = mg.tensor(s), mg.tensor(nu)
    out = {}
    for grad in (True, False):
        with mg.set_grad_enabled(grad):
            minus_s, plus_s = pairwise(S)
            mask = np.eye(k, dtype=bool) | (minus_s.numpy() == 0)
            out[grad] = [t.numpy() for t in (minus_s, plus_s, quot(N, minus_s, mask))]
    for a, b in zip(out[True], out[False]):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    assert np.isfinite(out[False][2]).all()


def test_zero_policy_at_a_truncation_records_nothing_and_matches_the_ops():
    """A loss reading the top columns of U of a matrix whose discarded values tie at
    rounding level (a CTMRG cut): the "zero" policy's backward in numpy (a first-order walk)
    gives the recorded ops' numbers (create_graph=True) bit for bit."""
    q1, q2 = (np.linalg.qr(rng.standard_normal((24, 24)))[0] for _ in range(2))
    s = np.concatenate([np.linspace(2.0, 1.0, 8), np.full(16, 1e-17)])
    A = mg.tensor((q1 * s) @ q2, requires_grad=True)
    W = mg.tensor(rng.standard_normal((24, 8)))
    grads = []
    for create_graph in (True, False):
        with mg.linalg.tie_policy("zero"):
            U, _, _ = mg.linalg.svd(A, full_matrices=False)
            (g,) = mg.autograd.grad((U[:, :8] * W).sum(), A, create_graph=create_graph)
        grads.append(g.detach().numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
    assert np.isfinite(grads[1]).all()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", ["corner", "both sides", "tall", "tie", "solo", "cut tie"])
def test_zero_policy_pole_terms_in_one_kernel_match_the_ops(monkeypatch, dtype, case):
    """The "zero" policy's pole terms of a first-order backward come from one kernel pass
    (B.zero_poles): the same gradient bit for bit as pairwise, tie_zeros and the masked
    quotients, with absent triplets (a truncation), U and Vh both read, a tall A (its
    R S^-1 columns), an exact tie among the kept values, a read triplet of value at rounding
    beside absent ones, and a tie across the cut (solo pairs at each pole)."""
    n, m = 24, 30 if case == "tall" else 24
    q1, q2 = np.linalg.qr(rng.standard_normal((m, n)))[0], np.linalg.qr(
        rng.standard_normal((n, n)))[0]
    s = np.concatenate([np.linspace(2.0, 1.0, 8), np.logspace(-3, -19, 16)])
    if case == "tie":
        s[2] = s[1]
    elif case == "cut tie":
        s[8] = s[7]
    A = mg.tensor(((q1 * s) @ q2).astype(dtype), requires_grad=True)
    W = mg.tensor(rng.standard_normal((m, 8)).astype(dtype))
    Z = mg.tensor(rng.standard_normal((8, n)).astype(dtype))
    calls = []
    kernel = B.zero_poles
    monkeypatch.setattr(B, "zero_poles", lambda *a: calls.append(1) or kernel(*a))

    def gradient():
        A.grad = None
        with mg.linalg.tie_policy("zero"):
            U, _, Vh = mg.linalg.svd(A, full_matrices=False)
            loss = (U[:, :8] * W).sum()
            if case == "solo":
                loss = loss + U[:, 20].sum()
            if case == "both sides":
                loss = loss + (Vh[:8] * Z).sum()
            loss.backward()
        return A.grad.numpy()

    fused = gradient()
    assert calls
    monkeypatch.setattr(B, "_zero_fused", lambda *a: None)
    calls.clear()
    ops = gradient()
    assert not calls and fused.dtype == dtype and np.isfinite(fused).all()
    assert fused.tobytes() == ops.tobytes()
