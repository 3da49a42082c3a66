from collections.abc import Callable

import numpy as np
import pytest

from minigrad.linalg import _svd_forward


@pytest.fixture
def jacobi_only(monkeypatch):
    """svd_forward without its LAPACK route (_svd_lapack.py): for the tests that follow one
    float64 matrix, which that route would take, through the Jacobi paths."""
    monkeypatch.setattr(_svd_forward, "lapack_eligible", lambda m, n: False)


def _calls_of(monkeypatch, owner: object, name: str) -> list:
    """The shapes of the first argument of every call of owner.name while the test runs
    (owner.name still does its work): which LAPACK routine a path took."""
    calls: list = []
    inner: Callable = getattr(owner, name)

    def spy(a, *args, **kwargs):
        calls.append(a.shape)
        return inner(a, *args, **kwargs)

    monkeypatch.setattr(owner, name, spy)
    return calls


@pytest.fixture
def gesdd_calls(monkeypatch):
    """The shapes numpy's SVD was called on, while the test runs."""
    return _calls_of(monkeypatch, np.linalg, "svd")


@pytest.fixture
def lapack_eighs(monkeypatch):
    """The shapes numpy's eigh was called on, while the test runs."""
    return _calls_of(monkeypatch, np.linalg, "eigh")
