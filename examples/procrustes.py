"""Learning a batch of rotations through the batched 3x3 SVD and its gradient.

Each of 64 noisy 3-D point clouds Q_b is a rotated copy of a cloud P_b. Each rotation is
the polar factor R_b = U_b Vh_b of a free 3x3 matrix W_b, one batched
``mg.linalg.svd`` call for all of them, and gradient descent on mean |P_b R_b^T - Q_b|^2
learns the W_b. Training starts at W_b = I, where all three singular values are equal:
PyTorch's SVD backward returns NaN there, minigrad returns the exact (finite) gradient.
Reports the alignment error and how far the learned rotations are from the closed-form
Procrustes (Kabsch) solution.

    python examples/procrustes.py [--fast] [--plot-dir DIR]
"""

from __future__ import annotations

import time

import numpy as np
from _common import parse_args, save_loss_curve

import minigrad as mg
import minigrad.optim as optim

BATCH, POINTS, NOISE = 64, 40, 0.05


def random_rotations(rng: np.random.Generator, n: int) -> np.ndarray:
    """Uniformly random rotations: QR of Gaussian matrices, signs fixed, det = +1."""
    q, r = np.linalg.qr(rng.standard_normal((n, 3, 3)))
    q = q * np.sign(np.diagonal(r, axis1=1, axis2=2))[:, None, :]
    q[np.linalg.det(q) < 0, :, 0] *= -1
    return q


def make_problem(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    P = rng.standard_normal((BATCH, POINTS, 3))
    R = random_rotations(rng, BATCH)
    Q = P @ R.transpose(0, 2, 1) + NOISE * rng.standard_normal(P.shape)
    return P, Q, R


def kabsch(P: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """The closed-form best rotations: argmin_R |P R^T - Q| (numpy's SVD, det fixed)."""
    U, _, Vh = np.linalg.svd(Q.transpose(0, 2, 1) @ P)
    d = np.sign(np.linalg.det(U @ Vh))
    U[:, :, 2] *= d[:, None]
    return U @ Vh


def angle_deg(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """The angle of the rotation A B^T, per batch element, in degrees."""
    cos = (np.trace(A @ B.transpose(0, 2, 1), axis1=1, axis2=2) - 1) / 2
    return np.degrees(np.arccos(np.clip(cos, -1, 1)))


def torch_grad_at_identity() -> bool | None:
    """Does torch give a finite gradient of a polar-factor loss at W = I? (None: no torch)."""
    try:
        import torch
    except ImportError:
        return None
    W = torch.eye(3, dtype=torch.float64, requires_grad=True)
    U, _, Vh = torch.linalg.svd(W)
    ((U @ Vh - torch.ones(3, 3, dtype=torch.float64)) ** 2).sum().backward()
    return bool(torch.isfinite(W.grad).all())


def main(fast: bool = False, plot_dir: str | None = None) -> dict:
    steps = 100 if fast else 200
    P, Q, R_true = make_problem()
    Pt, Qt = mg.tensor(P), mg.tensor(Q)
    W = mg.tensor(np.tile(np.eye(3), (BATCH, 1, 1)), requires_grad=True)  # start at I
    opt = optim.SGD([W], lr=8.0, momentum=0.5)
    print(f"procrustes: {BATCH} clouds of {POINTS} points, noise {NOISE}, {steps} steps, "
          "rotations = polar factors of W (W = I at the start)")
    R_best = kabsch(P, Q)
    losses = []
    t0 = time.perf_counter()
    for step in range(steps):
        opt.zero_grad()
        U, _, Vh = mg.linalg.svd(W)  # batched (64, 3, 3)
        R = U @ Vh
        loss = ((Pt @ R.mT - Qt) ** 2).sum(-1).mean()
        loss.backward()
        if step == 0:
            finite = bool(np.isfinite(W.grad.numpy()).all())
            torch_ok = torch_grad_at_identity()
            print(f"  gradient at W = I (repeated singular values): finite={finite}"
                  + ("" if torch_ok is None else f"  (PyTorch: finite={torch_ok})"))
        opt.step()
        losses.append(loss.item())
        if step % (steps // 10) == 0 or step == steps - 1:
            err = angle_deg(R.detach().numpy(), R_true)
            print(f"  step {step:4d}  mean |P R^T - Q|^2 {loss.item():.5f}  "
                  f"rotation error vs truth {err.mean():7.3f} deg (max {err.max():7.3f})")
    with mg.no_grad():
        U, _, Vh = mg.linalg.svd(W)
        R = (U @ Vh).numpy()
    rms = float(np.sqrt(((P @ R.transpose(0, 2, 1) - Q) ** 2).sum(-1).mean()))
    to_best = angle_deg(R, R_best)
    to_true = angle_deg(R, R_true)
    dets = np.linalg.det(R)
    png = save_loss_curve(losses, plot_dir, "procrustes")
    if png:
        print(f"  loss curve saved to {png}")
    print(f"procrustes: RMS alignment error {rms:.4f} (noise floor {NOISE * np.sqrt(3):.4f}), "
          f"max angle to the closed-form solution {to_best.max():.2e} deg, mean angle to the "
          f"true rotations {to_true.mean():.3f} deg ({time.perf_counter() - t0:.1f} s)")
    return {"rms": rms, "max_angle_to_kabsch": float(to_best.max()),
            "mean_angle_to_truth": float(to_true.mean()), "dets": dets, "losses": losses}


if __name__ == "__main__":
    main(**vars(parse_args(__doc__)))
