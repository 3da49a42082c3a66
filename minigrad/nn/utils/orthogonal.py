"""minigrad's ``nn.utils.orthogonal``: the polar-factor orthogonal parametrization."""

from __future__ import annotations

from ..module import Module
from .parametrizations import orthogonal as _orthogonal
from .parametrize import remove_parametrizations


def orthogonal(module: Module, name: str = "weight") -> Module:
    """Reparametrise ``module.<name>`` as the polar factor ``U @ Vh`` of a free matrix (the
    orthogonal matrix nearest to it; semi-orthogonal when not square; leading dims are a
    batch): ``parametrizations.orthogonal(module, name, orthogonal_map="polar")``.

    The free matrix is ``module.parametrizations.<name>.original``. The gradient goes
    through the differentiable SVD and stays finite when singular values repeat (e.g. at the
    identity, where torch's SVD backward gives NaN). Assigning ``module.<name> = W`` sets the
    free matrix to W, so the weight becomes W's polar factor (W itself when orthogonal).

    >>> layer = nn.utils.orthogonal(nn.Linear(4, 4))
    >>> float((layer.weight.T @ layer.weight - mg.eye(4)).abs().max()) < 1e-5
    True
    """
    return _orthogonal(module, name, orthogonal_map="polar")


def remove_orthogonal(module: Module, name: str = "weight") -> Module:
    """Undo ``orthogonal``: ``<name>`` becomes a Parameter holding the orthogonal weight."""
    return remove_parametrizations(module, name, leave_parametrized=True)
