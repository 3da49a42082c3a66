"""Names the docstring examples use without importing them, as a reader of the docs would."""

import numpy as np
import pytest

import minigrad as mg

# minigrad.dask's docstrings need its optional extra; without it its tests skip, so must they.
collect_ignore = []
try:
    import dask.array  # noqa: F401
    import threadpoolctl  # noqa: F401
except ImportError:
    collect_ignore.append("minigrad/dask")


@pytest.fixture(autouse=True)
def _doctest_names(doctest_namespace: dict) -> None:
    doctest_namespace.update(mg=mg, nn=mg.nn, F=mg.nn.functional, np=np)
