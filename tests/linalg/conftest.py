import pytest

from minigrad.linalg import _svd_forward


@pytest.fixture
def jacobi_only(monkeypatch):
    """svd_forward without its LAPACK route (_svd_lapack.py): for the tests that follow one
    float64 matrix, which that route would take, through the Jacobi paths."""
    monkeypatch.setattr(_svd_forward, "lapack_eligible", lambda m, n: False)
