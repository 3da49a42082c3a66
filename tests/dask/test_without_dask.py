"""Without dask, minigrad works and minigrad.dask says how to install what it needs."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest


@pytest.mark.parametrize("missing", ["dask", "threadpoolctl"])
def test_minigrad_dask_says_how_to_install_what_is_missing(missing, monkeypatch) -> None:
    for name in [m for m in sys.modules if m == "minigrad.dask" or
                 m.startswith(("minigrad.dask.", missing + "."))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, missing, None)  # as if it were not installed
    with pytest.raises(ModuleNotFoundError,
                       match=rf"\({missing} is missing\): install them with pip install "
                             r"'minigrad\[dask\]'") as err:
        importlib.import_module("minigrad.dask")
    assert err.value.name == missing


def test_import_minigrad_does_not_import_dask() -> None:
    out = subprocess.run([sys.executable, "-c", "import sys, minigrad; print('dask' in "
                          "sys.modules, 'numba' in sys.modules)"], capture_output=True,
                         text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
