"""The pole-free SVD backward of a loss read through a bond (linalg/_svd_gauge.py): it is the
gradient, its own derivatives are the Hessian, and a second pass through it meets
cotangents of the bond's form, so second derivatives at kept ties need no look downstream.
Checked against central differences and the plain formula off every pole."""

from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad.linalg._svd_backward import plain_backward
from minigrad.linalg._svd_gauge import bond_backward


def orthonormal(m: int, k: int, seed: int) -> np.ndarray:
    q, r = np.linalg.qr(np.random.default_rng(seed).standard_normal((m, m)))
    return (q * np.sign(np.diag(r)))[:, :k]


def matrix(m: int, n: int, s: list[float], seed: int = 0) -> np.ndarray:
    k = min(m, n)
    return orthonormal(m, k, seed) @ np.diag(s) @ orthonormal(n, k, seed + 1).T


def bond_loss(m: int, n: int, r: int, seed: int = 7, weights=None):
    """f(A, B) of A = U_r sqrt(S_r), B = sqrt(S_r) Vh_r through A A^T, B^T B and A B: a
    rotation A Q, Q^T B leaves it alone. ``weights`` (r,) scale A's and B's columns' reads
    in A A^T (a zero reads a triplet only at the rounding of the others)."""
    rng = np.random.default_rng(seed)
    C1, C3 = rng.standard_normal((m, m)), rng.standard_normal((m, n))
    C2 = rng.standard_normal((n, n))
    C1, C2, C3 = mg.tensor(C1 + C1.T), mg.tensor(C2 + C2.T), mg.tensor(C3)

    def parts(M):
        U, S, Vh = mg.linalg.svd(M, full_matrices=False)
        h = S[:r].sqrt()
        return (U, S, Vh), U[:, :r] * h, h.unsqueeze(-1) * Vh[:r]

    def f(A, B):
        return ((C1 * (A @ A.mT)).sum() ** 2 + ((C2 * (B.mT @ B)).sum()) ** 3
                + ((C3 * (A @ B)).sum()) ** 2)

    return parts, f


def first_pass(M, parts, f):
    """(G_bond, G_plain-or-library, the SVD's outputs) at M, G recorded for a second pass."""
    usv, A, B = parts(M)
    loss = f(A, B)
    gU, _, gVh = mg.autograd.grad(loss, usv, create_graph=True)
    return bond_backward(M, *usv, gU, gVh, A.shape[-1]), usv


def central_hvp(M0: np.ndarray, D: np.ndarray, parts, f, h: float = 1e-5) -> np.ndarray:
    """d/dt grad L(M0 + t D) at t = 0 by central differences of the library's gradient."""
    def grad(M):
        M = mg.tensor(M, requires_grad=True)
        _, A, B = parts(M)
        (g,) = mg.autograd.grad(f(A, B), M)
        return g.numpy()
    return (grad(M0 + h * D) - grad(M0 - h * D)) / (2 * h)


SHAPES = {  # (m, n, singular values, r): square read whole, truncated, tall, wide
    "square": (5, 5, [3.0, 2.0, 1.5, 0.7, 0.4], 5),
    "truncated": (5, 5, [3.0, 2.0, 1.5, 0.7, 0.4], 3),
    "tall": (7, 4, [3.0, 2.0, 1.5, 0.7], 2),
    "wide": (4, 7, [3.0, 2.0, 1.5, 0.7], 2),
    "rank-deficient rest": (6, 6, [3.0, 2.0, 1.8, 1.0, 1e-3, 0.0], 4),
}


@pytest.mark.parametrize("name", SHAPES)
def test_bond_backward_is_the_plain_gradient_off_every_pole(name):
    m, n, s, r = SHAPES[name]
    M = mg.tensor(matrix(m, n, s), requires_grad=True)
    parts, f = bond_loss(m, n, r)
    usv, A, B = parts(M)
    gU, gS, gVh = mg.autograd.grad(f(A, B), usv)
    plain = plain_backward(*usv, gU, gS, gVh).detach().numpy()
    bond = bond_backward(M, *usv, gU, gVh, r).detach().numpy()
    np.testing.assert_allclose(bond, plain, rtol=0, atol=1e-12 * np.abs(plain).max())


@pytest.mark.parametrize("name", ["truncated", "tall", "wide"])
def test_a_second_pass_through_it_sees_the_bond_form(name):
    """s_i Z_ij = s_j Z_ji and 2 s_i gS_i = Z_ii on the read triplets (Z = J + K) hold to
    rounding for the second pass's cotangents, and the triplets left out get none: the
    rule that decides ties from first-order data applies again. Through the plain formula,
    which reads U and V off their manifold, they fail by O(1)."""
    m, n, s, r = SHAPES[name]
    M = mg.tensor(matrix(m, n, s), requires_grad=True)
    parts, f = bond_loss(m, n, r)
    D = mg.tensor(np.random.default_rng(3).standard_normal((m, n)))
    usv, A, B = parts(M)
    gU, gS, gVh = mg.autograd.grad(f(A, B), usv, create_graph=True)

    def worst(G):
        g2U, g2S, g2Vh = mg.autograd.grad((G * D).sum(), usv, retain_graph=True)
        U, S, Vh = (t.detach().numpy() for t in usv)
        J, K = U.T @ g2U.numpy(), Vh @ g2Vh.numpy().T
        sv, gs = S[:r], g2S.numpy()[:r]
        sz = sv[:, None] * (J + K)[:r, :r]
        scale = np.abs(J).max() + np.abs(K).max()
        off = np.abs(sz - sz.T).max() / (scale * sv[0])
        diag = np.abs(2 * sv * gs - np.diag(J + K)[:r]).max() / scale
        rest = max(np.abs(J[:, r:]).max(initial=0), np.abs(gs[r:]).max(initial=0))
        return max(off, diag), rest

    bond_form, rest = worst(bond_backward(M, *usv, gU, gVh, r))
    assert bond_form < 1e-13 and rest == 0
    assert worst(plain_backward(*usv, gU, gS, gVh))[0] > 1e-3


@pytest.mark.parametrize("name", SHAPES)
def test_its_derivatives_are_the_hessian(name):
    m, n, s, r = SHAPES[name]
    M0 = matrix(m, n, s)
    parts, f = bond_loss(m, n, r)
    D = np.random.default_rng(4).standard_normal((m, n))
    M = mg.tensor(M0, requires_grad=True)
    G, _ = first_pass(M, parts, f)
    (H,) = mg.autograd.grad((G * mg.tensor(D)).sum(), M)
    fd = central_hvp(M0, D, parts, f)
    np.testing.assert_allclose(H.numpy(), fd, rtol=0, atol=1e-7 * np.abs(fd).max())


def _counting(monkeypatch) -> tuple[list, list]:
    """(bond backwards taken, looks downstream run), appended to as they happen."""
    from minigrad.linalg import _svd_backward, _tie_limits

    bonds: list = []
    looks: list = []
    real_bond, real_general = _svd_backward.bond_gradient, _tie_limits._general
    monkeypatch.setattr(_svd_backward, "bond_gradient",
                        lambda *a: bonds.append(1) or real_bond(*a))
    monkeypatch.setattr(_tie_limits, "_general",
                        lambda *a, **k: looks.append(1) or real_general(*a, **k))
    return bonds, looks


def _two_passes(monkeypatch, M0: np.ndarray, parts, f, seed: int) -> tuple:
    """A first pass recorded and a second one through it (a Hessian-vector product, checked
    against central differences): the (bond backwards, looks) counted after each."""
    D = np.random.default_rng(seed).standard_normal(M0.shape)
    bonds, looks = _counting(monkeypatch)
    M = mg.tensor(M0, requires_grad=True)
    _, A, B = parts(M)
    (G,) = mg.autograd.grad(f(A, B), M, create_graph=True)
    first = len(bonds), len(looks)
    (H,) = mg.autograd.grad((G * mg.tensor(D)).sum(), M)
    second = len(bonds), len(looks)
    fd = central_hvp(M0, D, parts, f)
    np.testing.assert_allclose(H.numpy(), fd, rtol=0, atol=1e-7 * np.abs(fd).max())
    return first, second


@pytest.mark.parametrize("r", [4, 6])
def test_second_derivatives_at_a_coupled_kept_tie_take_no_look(monkeypatch, r):
    """A tie among the read triplets (s = 2, 2), read coupled: the first pass looks there
    (first-order data cannot tell a bond from a polar factor of the tied block at a coupled
    tie), finds the bond's value and takes the bond backward; the second pass through it
    meets the tie again with cotangents of the bond's form by construction, so it takes it
    too instead of walking the recorded first pass (each such look cost about 3x a whole
    pass of TRG's specific heat at bond 16). The Hessian matches central differences."""
    M0 = matrix(6, 6, [3.0, 2.0, 2.0, 1.0, 0.5, 0.2], seed=2)
    parts, f = bond_loss(6, 6, r)
    first, second = _two_passes(monkeypatch, M0, parts, f, seed=5)
    assert first == (1, 1) and second == (2, 1)  # (bond backwards, looks) after each pass


def test_a_tie_read_only_at_rounding_is_confirmed_by_a_look(monkeypatch):
    """The tied pair (s = 1, 1) is read by the loss only at the rounding of the others
    (its weight is 1e-30): no member witnesses the bond, so first-order data cannot tell it
    from a matrix function vanishing there, and a look runs, once, in the first pass. Its
    limits equal the bond's value, so the backward is the bond's, and the second pass
    through it takes no look. The Hessian matches central differences."""
    M0 = matrix(5, 5, [3.0, 1.0, 1.0, 0.5, 0.2], seed=3)
    rng = np.random.default_rng(9)
    U0 = np.linalg.svd(M0)[0]
    w = np.array([1.0, 1e-30, 1e-30, 0.7, 0.4])
    C1 = mg.tensor(U0 @ np.diag(w) @ U0.T)
    C2 = mg.tensor(rng.standard_normal((5, 5)))

    def parts(M):
        U, S, Vh = mg.linalg.svd(M, full_matrices=False)
        h = S.sqrt()
        return (U, S, Vh), U * h, h.unsqueeze(-1) * Vh

    def f(A, B):
        return (C1 * (A @ A.mT)).sum() ** 2 + ((C2 * (A @ B)).sum()) ** 2 * 1e-3

    first, second = _two_passes(monkeypatch, M0, parts, f, seed=6)
    assert first == (1, 1) and second[1] == 1


def test_a_second_derivative_through_bonds_frees_its_graph_without_a_collection(monkeypatch):
    """TRG's specific heat (bond 8, 6 steps, T = 1.5: kept ties, so bond backwards and a walk
    through them): once the results are dropped, the graph is freed by reference counting
    alone. A walk kept strongly on the SVD's node made a cycle that held each run's whole
    graph until a full collection (+1 GB a run at bond 16)."""
    import gc
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    import ising_trg

    from minigrad.autograd.context import Context

    def contexts() -> int:  # by type(o): isinstance reads a dead weakref.proxy's referent
        return sum(issubclass(type(o), Context) for o in gc.get_objects())

    bonds, _ = _counting(monkeypatch)
    gc.collect()
    before = contexts()
    gc.disable()
    try:
        beta = mg.tensor(1 / 1.5, dtype=mg.float64, requires_grad=True)
        (d1,) = mg.autograd.grad(ising_trg.ln_z(beta, 8, 6), beta, create_graph=True)
        (d2,) = mg.autograd.grad(d1, beta)
        del d1, d2
        left = contexts() - before
    finally:
        gc.enable()
    assert bonds and left <= 0


def test_a_tiny_singular_value_read_apart_keeps_the_plain_backward(monkeypatch):
    """A bond loss plus c s_5 with s_5 = 1e-13 (read apart from the bond: its cotangent is
    gS alone): 2 s_5 gS_5 = Z_55 holds at s_1's scale (2e-11), but the bond backward would
    drop c u_5 v_5^T. Judged triplet by triplet it is not taken, and the gradient with
    create_graph matches the one without (which never takes it)."""
    M0 = matrix(7, 5, [3.0, 2.0, 1.5, 1.0, 1e-13], seed=2)
    parts, f = bond_loss(7, 5, 4)
    bonds, _ = _counting(monkeypatch)

    def grad(create_graph: bool) -> np.ndarray:
        M = mg.tensor(M0, requires_grad=True)
        usv, A, B = parts(M)
        (g,) = mg.autograd.grad(f(A, B) + 100.0 * usv[1][4], M, create_graph=create_graph)
        return g.detach().numpy()

    plain = grad(False)
    assert not bonds
    np.testing.assert_allclose(grad(True), plain, rtol=0, atol=1e-12 * np.abs(plain).max())
    assert not bonds


@pytest.mark.parametrize("scale", [1e-135, 1e-100, 1e-60, 1e60, 1e100, 1e120])
def test_second_derivatives_at_extreme_scales(scale):
    """The Hessian of a function of M = A B is the same at every scale of M. The bond
    backward works at s_1 = 1 (it is homogeneous of degree -1): its solves' derivatives
    reach s^-4, which at s ~ 1e-135 had made the Hessian 8x off. The tie tests measure
    cotangents in units of their largest entry: at S ~ 1e+-100 the loss's cotangents reach
    1e+-200, whose squares had overflowed into a NaN Hessian.

    Upward the loss, of degree 2, is what runs out of range: at M ~ 1e140 it is 1e280, and
    where the tie's basis makes the bond's test defer to a look, the look's Hessian-vector
    products overflow (NaN for 10 of 12 random bases at 1e140 and 1e150, none at 1e120 and
    1e130). 1e150 had passed only for this seed's basis, which rounding on another CPU
    may change; the scales here keep the loss below 1e240."""
    M0 = matrix(6, 6, [3.0, 2.0, 2.0, 1.0, 0.5, 0.2], seed=2)
    parts, _ = bond_loss(6, 6, 3)
    rng = np.random.default_rng(8)
    C, D = mg.tensor(rng.standard_normal((6, 6))), rng.standard_normal((6, 6))

    def hvp(M0):
        M = mg.tensor(M0, requires_grad=True)
        _, A, B = parts(M)
        (g,) = mg.autograd.grad(((A @ B) * C).sum() ** 2, M, create_graph=True)
        (h,) = mg.autograd.grad((g * mg.tensor(D)).sum(), M)
        return h.numpy()

    ref = hvp(M0)
    np.testing.assert_allclose(hvp(M0 * scale), ref, rtol=1e-10, atol=1e-10 * np.abs(ref).max())


_TINY_PLAIN = pytest.mark.xfail(strict=True, reason=(
    "the look's own Hessian-vector products through the recorded first pass meet inf * 0 "
    "at S ~ 1e-100 and below (its quotients' derivatives reach s^-4), not fixed yet"))


@pytest.mark.parametrize("scale", [1e-60, 1e60, 1e100,
                                   pytest.param(1e-100, marks=_TINY_PLAIN),
                                   pytest.param(1e-135, marks=_TINY_PLAIN)])
def test_second_derivatives_at_extreme_scales_without_the_bond(scale, monkeypatch):
    """The same Hessian through the looks downstream alone (the bond backward off): their
    series along the tie's direction runs in units of s_1 (in absolute units it overflowed
    into a NaN at S ~ 1e100). Not past 1e100: there the looks' own Hessian-vector products
    overflow (NaN for 7 of 8 random bases of the tie at 1e120 and 1e150; 1e150 had passed
    for this seed's basis alone, which rounding on another CPU may change)."""
    from minigrad.linalg import _svd_backward

    monkeypatch.setattr(_svd_backward, "bond_fit", lambda *a: None)
    test_second_derivatives_at_extreme_scales(scale)
