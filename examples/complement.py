"""The orthogonal complement of col(A) from the full U, and a gradient through it.

For A = [[1, 2], [3, 4], [5, 6]] the last column of the full U spans the complement of
col(A). Projecting x = e_1 onto it gives the residual [1/6, -1/3, 1/6], the same as
(I - U U^T) x built from the reduced U. The loss |Up Up^T x|^2 has the same gradient both
ways, [[4/9, -13/36], [-8/9, 13/18], [4/9, -13/36]]: minigrad gets it through the full U's
complement columns, where PyTorch silently returns zeros.

    python examples/complement.py
"""

from __future__ import annotations

import numpy as np
from _common import parse_args

import minigrad as mg

EXPECTED_RESIDUAL = np.array([1 / 6, -1 / 3, 1 / 6])
EXPECTED_GRAD = np.array([[4 / 9, -13 / 36], [-8 / 9, 13 / 18], [4 / 9, -13 / 36]])
A_DATA = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]


def residual_full(A: mg.Tensor, x: mg.Tensor) -> mg.Tensor:
    """Up Up^T x with Up the complement columns of the full U."""
    U, _, _ = mg.linalg.svd(A, full_matrices=True)
    Up = U[:, A.shape[1]:]
    return Up @ (Up.mT @ x)


def residual_reduced(A: mg.Tensor, x: mg.Tensor) -> mg.Tensor:
    """(I - U U^T) x with the reduced U."""
    U, _, _ = mg.linalg.svd(A, full_matrices=False)
    return x - U @ (U.mT @ x)


def torch_full_u_grad() -> np.ndarray | None:
    """The same loss through torch's full U, for comparison (None without torch)."""
    try:
        import torch
    except ImportError:
        return None
    A = torch.tensor(A_DATA, dtype=torch.float64, requires_grad=True)
    x = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64)
    U = torch.linalg.svd(A, full_matrices=True).U
    r = U[:, 2:] @ (U[:, 2:].T @ x)
    (r @ r).backward()
    return A.grad.numpy()


def main(fast: bool = False) -> dict:
    """Print the story and return its numbers (``fast`` changes nothing: it is instant)."""
    fmt = {"float_kind": lambda v: f"{v:+.6f}"}
    A = mg.tensor(A_DATA, dtype=mg.float64, requires_grad=True)
    x = mg.tensor([1.0, 0.0, 0.0], dtype=mg.float64)
    results = {}
    for name, fn in (("full U, Up Up^T x", residual_full), ("reduced U, (I - U U^T) x",
                                                             residual_reduced)):
        r = fn(A, x)
        (grad,) = mg.autograd.grad((r * r).sum(), [A])
        results[name] = (r.detach().numpy(), grad.numpy())
        print(f"{name:<26} residual {np.array2string(r.detach().numpy(), formatter=fmt)}")
        print(f"{'':<26} dL/dA    {np.array2string(grad.numpy(), formatter=fmt)}"
              .replace("\n", "\n" + " " * 36))
    (r_full, g_full), (r_red, g_red) = results.values()
    ref = torch_full_u_grad()
    if ref is not None:
        print(f"{'PyTorch, full U':<26} dL/dA    {np.array2string(ref, formatter=fmt)}"
              .replace("\n", "\n" + " " * 36))
    res_err = max(np.abs(r_full - EXPECTED_RESIDUAL).max(), np.abs(r_red - EXPECTED_RESIDUAL).max())
    grad_err = max(np.abs(g_full - EXPECTED_GRAD).max(), np.abs(g_red - EXPECTED_GRAD).max())
    agree = np.abs(g_full - g_red).max()
    print(f"complement: residual error {res_err:.1e}, gradient error {grad_err:.1e}, "
          f"full vs reduced U gradients differ by {agree:.1e}, |dL/dA| = "
          f"{np.linalg.norm(g_full):.4f}" + ("" if ref is None else
                                              f" (PyTorch: {np.linalg.norm(ref):.4f})"))
    return {"residual_full": r_full, "residual_reduced": r_red, "grad_full": g_full,
            "grad_reduced": g_red, "residual_error": res_err, "grad_error": grad_err,
            "torch_grad": ref}


if __name__ == "__main__":
    main(**vars(parse_args(__doc__, training=False)))
