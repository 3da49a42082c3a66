"""torch.nn.utils.parametrizations: ``orthogonal`` and ``spectral_norm`` built on
``parametrize.register_parametrization``, with torch's behaviour and state-dict keys
(``parametrizations.weight.original``, ``parametrizations.weight.0.base`` / ``._u`` /
``._v``), so a state dict and the training curves move between the two."""

from __future__ import annotations

import numpy as np

from ...autograd.function import make_tensor
from ...autograd.grad_mode import no_grad
from ...creation import default_generator
from ...functions import cat
from ...linalg import svd
from ...tensor import Tensor
from ..module import Module
from . import _orthogonal_maps as maps
from .parametrize import register_parametrization

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]

_MAPS = ("matrix_exp", "cayley", "householder", "polar")


class _Orthogonal(Module):
    """Q(X) orthogonal (orthonormal columns if tall, rows if wide) for any X of the weight's
    shape, by one of torch's maps of the lower triangle of X (or minigrad's polar factor)."""

    def __init__(self, weight: Tensor, orthogonal_map: str, *,
                 use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization and orthogonal_map != "polar":
            self.register_buffer("base", None)

    def _has_base(self) -> bool:
        return "base" in self._buffers

    def forward(self, X: Tensor) -> Tensor:
        if self.orthogonal_map == "polar":
            U, _, Vh = svd(X, full_matrices=False)
            return U @ Vh
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            X = X.tril()
            if n != k:  # embed the tall X in a square one: n k - k (k - 1) / 2 parameters
                pad = make_tensor(np.zeros(X.shape[:-1] + (n - k,), X.dtype))
                X = cat([X, pad], -1)
            A = X - X.mT  # skew-symmetric
            Q = maps.matrix_exp(A) if self.orthogonal_map == "matrix_exp" else maps.cayley(A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(-1)
            tau = 2.0 / (1.0 + (A * A).sum(-2))
            Q = maps.householder_product(A, tau)
            # The diagonal of X holds +-1 (set by right_inverse) and takes no gradient.
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if self._has_base():
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        """An X with forward(X) = Q, for an orthogonal Q (other Q are first orthogonalised by
        QR, as in torch; for the polar map, forward(Q) is the orthogonal matrix nearest Q)."""
        if tuple(Q.shape) != tuple(self.shape):
            raise ValueError(f"Expected a matrix or batch of matrices of shape "
                             f"{tuple(self.shape)}. Got a tensor of shape {tuple(Q.shape)}.")
        with no_grad():
            if self.orthogonal_map == "polar":
                return Q.detach().clone()
            q = Q.detach()._array
            n, k = q.shape[-2], q.shape[-1]
            transpose = n < k
            if transpose:
                q = np.swapaxes(q, -1, -2)
                n, k = k, n
            if not self._has_base():
                if self.orthogonal_map != "householder":
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the Cayley "
                        "parametrizations when use_trivialization=False.")
                A, tau = maps.geqrf(q)
                i = np.arange(k)
                d = np.sign(A[..., i, i])  # forward multiplies column j by this sign
                d[tau == 0] *= -1  # LAPACK skipped that reflection: forward would apply it
                A[..., i, i] = d
                return make_tensor(np.swapaxes(A, -1, -2).copy() if transpose else A)
            if n == k:
                base = q.copy() if maps.is_orthogonal(q) else maps.make_orthogonal(q)
            else:  # complete Q to an orthogonal n x n matrix with random columns
                rng = default_generator.rng
                extra = rng.standard_normal(q.shape[:-1] + (n - k,)).astype(q.dtype)
                base = maps.make_orthogonal(np.concatenate([q, extra], -1))
            self.base = make_tensor(base)
            # -Id: the map sends it to the identity (householder included), so forward = base.
            neg_id = np.zeros(Q.shape, Q.dtype)
            i = np.arange(k)
            neg_id[..., i, i] = -1.0
            return make_tensor(neg_id)


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Keep ``module.<name>`` orthogonal (orthonormal columns if tall, rows if wide; leading
    dims are a batch), as torch's ``parametrizations.orthogonal``.

    ``orthogonal_map`` is torch's ``"matrix_exp"`` (the default for square weights),
    ``"cayley"`` or ``"householder"`` (the default otherwise), or minigrad's ``"polar"``:
    the polar factor U Vh of the free matrix, through the differentiable SVD (gradients stay
    finite at repeated singular values). With ``use_trivialization`` (torch's default) a
    buffer ``base`` holds the current orthogonal matrix and the map moves away from it; the
    initial weight is the QR orthogonalisation of the old one. Assigning
    ``module.<name> = Q`` sets the weight to Q through ``right_inverse``.

    >>> layer = nn.utils.parametrizations.orthogonal(nn.Linear(4, 4))
    >>> float((layer.weight.T @ layer.weight - mg.eye(4)).abs().max()) < 1e-6
    True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of "
                         f"{weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    if orthogonal_map not in _MAPS:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder" (or minigrad\'s "polar"). Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    register_parametrization(module, name, orth, unsafe=True)
    return module


class _SpectralNorm(Module):
    """W / sigma(W) with sigma estimated by power iteration on the buffers ``_u`` and ``_v``,
    in torch's current order: u = W v / |W v|, then v = W^T u / |W^T u|."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, "
                             f"{ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = self._reshape_weight_to_matrix(weight)._array
            rng = default_generator.rng
            h, w = mat.shape
            self.register_buffer("_u", make_tensor(
                self._normalize(rng.standard_normal(h).astype(mat.dtype))))
            self.register_buffer("_v", make_tensor(
                self._normalize(rng.standard_normal(w).astype(mat.dtype))))
            self._power_method(mat, 15)  # start from a good estimate, as torch does

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _normalize(self, x: np.ndarray) -> np.ndarray:
        return x / max(float(np.linalg.norm(x)), self.eps)

    def _power_method(self, mat: np.ndarray, n: int) -> None:
        """n rounds of u = W v / |W v|, v = W^T u / |W^T u|, written into the buffers."""
        u, v = self._u._array, self._v._array
        for _ in range(n):
            np.copyto(u, self._normalize(mat @ v))
            np.copyto(v, self._normalize(mat.T @ u))
        # In place, like torch's out=: graphs that saved the buffers notice.
        self._u._version_counter[0] += 1
        self._v._version_counter[0] += 1

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return weight / weight.norm().clamp(min=self.eps)
        mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(mat.detach()._array, self.n_power_iterations)
        # Clones: sigma's graph must not see the next in-place update of the buffers.
        u, v = self._u.clone(), self._v.clone()
        sigma = u.dot(mat.matmul(v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Reparametrise ``module.<name>`` as W / sigma(W), sigma estimated as torch's current
    ``torch.nn.utils.parametrizations.spectral_norm`` does: ``n_power_iterations`` rounds of
    u = W v / |W v|, v = W^T u / |W^T u| on every access in training mode (15 at
    registration), sigma = u^T W v, no gradient through u and v. ``dim`` (default 0) is the
    output dim; others are flattened. Buffers: ``parametrizations.<name>.0._u`` / ``._v``.

    For sigma exact at every step (through the differentiable SVD) see
    ``mg.nn.utils.spectral_norm(module, exact=True)``.

    >>> layer = nn.utils.parametrizations.spectral_norm(nn.Linear(20, 40))
    >>> sorted(layer.state_dict())
    ['bias', 'parametrizations.weight.0._u', 'parametrizations.weight.0._v', \
'parametrizations.weight.original']
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:  # torch: 1 for ConvTranspose layers, whose weight is (in, out, ...)
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
    register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of v over every dim but ``dim`` (kept, size 1); dim -1: over all, a scalar
    (torch's _weight_norm convention, not the last dim)."""
    if dim == -1:
        return v.norm()
    return v.norm(2, tuple(d for d in range(v.ndim) if d != dim % v.ndim), keepdim=True)


class _WeightNorm(Module):
    """W = g v / |v|, the norm over every dim but ``dim`` (Salimans and Kingma, 2016)."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrise ``module.<name>`` as g v / |v| (norm over every dim but ``dim``; None:
    over all), as torch's ``parametrizations.weight_norm``: g is
    ``parametrizations.<name>.original0``, v ``original1``, both learnable.

    >>> layer = nn.utils.parametrizations.weight_norm(nn.Linear(3, 2))
    >>> layer.parametrizations.weight.original0.shape
    (2, 1)
    """
    register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module
