"""The matrix exponential (torch.linalg.matrix_exp), written with minigrad ops so every order
of derivative goes through it."""

from __future__ import annotations

import math

import numpy as np

from ..autograd.function import make_tensor
from ..tensor import Tensor
from ._checks import check_matrix


def matrix_exp(A: Tensor) -> Tensor:
    """exp(A) = sum_k A^k / k! of a (batch of) square matrix, by scaling and squaring.

    A is scaled by 2^-s until its 1-norm is at most 1/2, where the Taylor tail of degree 18
    (10 in float32 and complex64) is below the rounding error; the result is squared s times.
    Built from matmuls, so it differentiates to any order.

    >>> mg.linalg.matrix_exp(mg.zeros(2, 2)).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    check_matrix(A, "linalg.matrix_exp", square=True, complex_ok=True)
    n = A.shape[-1]
    norm = float(np.abs(A._array).sum(-2).max()) if A._array.size else 0.0
    if not math.isfinite(norm):
        raise RuntimeError("linalg.matrix_exp: the input holds inf or NaN; exp(A) is undefined")
    s = max(0, math.ceil(math.log2(norm / 0.5))) if norm > 0.5 else 0
    X = A / 2.0 ** s if s else A
    eye = make_tensor(np.eye(n, dtype=A.dtype))
    P = eye
    for k in range(18 if A._array.dtype.char in "dD" else 10, 0, -1):  # Horner: I + X/k (...)
        P = eye + (X @ P) / k
    for _ in range(s):
        P = P @ P
    return P
