"""Saving and loading state dicts as numpy ``.npz`` archives (``mg.save`` / ``mg.load``)."""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Mapping
from typing import IO, Any

import numpy as np

from .tensor import Tensor

PathOrFile = str | os.PathLike | IO[bytes]


def save(obj: Mapping[str, Any], f: PathOrFile) -> None:
    """Write a mapping of name -> Tensor (or ndarray), e.g. ``model.state_dict()``, to ``f``
    as an uncompressed ``.npz`` (dtypes and shapes kept; the path is used as given).

    >>> mg.save(model.state_dict(), "model.npz")  # doctest: +SKIP
    >>> model.load_state_dict(mg.load("model.npz"))  # doctest: +SKIP
    """
    if not isinstance(obj, Mapping):
        raise TypeError(f"mg.save stores a mapping of name -> tensor (a state_dict), "
                        f"not {type(obj).__name__}")
    arrays = {}
    for k, v in obj.items():
        if not isinstance(k, str):
            raise TypeError(f"state_dict keys must be strings, got {k!r}")
        arrays[k] = v.detach().data if isinstance(v, Tensor) else np.asarray(v)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:  # np.savez(path) would append ".npz" to the name
            np.savez(fh, **arrays)
    else:
        np.savez(f, **arrays)


def load(f: PathOrFile) -> OrderedDict[str, Tensor]:
    """Read what ``save`` wrote: an OrderedDict of name -> Tensor, in the saved order.

    No pickles are loaded (``allow_pickle=False``), so an untrusted file can't run code.
    """
    with np.load(f, allow_pickle=False) as npz:
        return OrderedDict((k, Tensor(npz[k])) for k in npz.files)
