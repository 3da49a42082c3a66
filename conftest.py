"""Names the docstring examples use without importing them, as a reader of the docs would."""

import numpy as np
import pytest

import minigrad as mg


@pytest.fixture(autouse=True)
def _doctest_names(doctest_namespace: dict) -> None:
    doctest_namespace.update(mg=mg, nn=mg.nn, F=mg.nn.functional, np=np)
