"""Saving and loading checkpoints as numpy ``.npz`` archives (``mg.save`` / ``mg.load``).

Every tensor and array is one ``.npy`` member of the archive, named by its path in the saved
object (a state dict's own keys, ``"model/fc.weight"`` inside a dict, ``"state/0/exp_avg"``
in an optimizer's state), so numpy alone can read the numbers. What holds them together
(dicts, lists, tuples, numbers, strings, None, bools) is written as JSON in one more member,
``__minigrad__``. Nothing is ever pickled, so loading an untrusted file cannot run code.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from typing import IO, Any

import numpy as np

from ._tensor.convert import check_device
from .nn.parameter import Parameter
from .tensor import Tensor

PathOrFile = str | os.PathLike | IO[bytes]

_STRUCTURE = "__minigrad__"
_FORMAT = 1
_CONTAINERS = {list: "list", tuple: "tuple", dict: "dict", OrderedDict: "odict"}


def save(obj: Any, f: PathOrFile) -> None:
    """Write ``obj`` to ``f`` (a path, used as given, or a binary file) as an ``.npz``.

    ``obj`` is a Tensor, an ndarray, or dicts / lists / tuples of them, of numbers, strings,
    None and bools: a ``state_dict()``, an optimizer's ``state_dict()``, or torch's
    checkpoint recipe ``{"epoch": e, "model_state_dict": ..., "optimizer_state_dict": ...,
    "loss": l}``. Dtypes, shapes and ``requires_grad`` are kept; a tensor that appears twice
    is stored once and loads as one tensor. Anything else is refused before writing.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "ckpt.npz")
    >>> model = nn.Linear(2, 1)
    >>> mg.save({"epoch": 3, "model": model.state_dict()}, path)
    >>> mg.load(path)["epoch"], model.load_state_dict(mg.load(path)["model"])
    (3, IncompatibleKeys(missing_keys=[], unexpected_keys=[]))
    """
    import json  # here, not at the top: `import minigrad` stays fast

    arrays: dict[str, np.ndarray] = {}
    tree = _Packer(arrays).pack(obj, ())
    payload = json.dumps({"format": _FORMAT, "tree": tree}).encode()
    arrays[_STRUCTURE] = np.frombuffer(payload, dtype=np.uint8)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:  # np.savez(path) would append ".npz" to the name
            _write_npz(fh, arrays)
    else:
        _write_npz(f, arrays)


def load(f: PathOrFile, map_location: Any = None, *, weights_only: bool | None = None,
         **kwargs: Any) -> Any:
    """Read what ``save`` wrote, as it was saved (an OrderedDict state dict stays one).

    An ``.npz`` of arrays written by numpy itself loads as an OrderedDict name -> Tensor.
    ``weights_only`` (True or False) is accepted for torch's spelling: minigrad never
    unpickles, so it loads the same either way. ``map_location`` may only mean the CPU.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "model.npz")
    >>> mg.save(nn.Linear(2, 1).state_dict(), path)
    >>> sorted(mg.load(path, map_location="cpu", weights_only=True))
    ['bias', 'weight']
    """
    import json  # here, not at the top: `import minigrad` stays fast

    if kwargs:
        raise TypeError(f"load() got unexpected keyword arguments {sorted(kwargs)}")
    if map_location is not None:
        check_device(map_location)
    try:
        archive = np.load(f, allow_pickle=False)
    except ValueError as e:
        if "pickle" not in str(e):
            raise
        raise ValueError(_not_ours(f, "is not a numpy file (pickled data, such as an old "
                                      "torch.save file, or something else)")) from None
    if isinstance(archive, np.ndarray):
        raise ValueError(f"mg.load reads the .npz archives mg.save writes; {_name(f)} holds a "
                         "single numpy array (.npy): read it with np.load and wrap it with "
                         "mg.tensor")
    with archive:
        if not all(m.endswith(".npy") for m in archive.zip.namelist()):
            raise ValueError(_not_ours(f, "is a zip of other files (a torch.save file?)"))
        if _STRUCTURE not in archive.files:  # plain arrays: an older mg.save or np.savez
            return OrderedDict((k, Tensor(archive[k])) for k in archive.files)
        meta = json.loads(archive[_STRUCTURE].tobytes().decode())
        if meta.get("format") != _FORMAT:
            raise ValueError(f"{_name(f)} was written by a newer minigrad (format "
                             f"{meta.get('format')}); upgrade minigrad to read it")
        return _Unpacker(archive).unpack(meta["tree"])


def _not_ours(f: PathOrFile, what: str) -> str:
    return (f"mg.load reads the .npz archives mg.save writes; {_name(f)} {what}. minigrad never "
            "unpickles; from torch, save the tensors as arrays instead: "
            "np.savez(f, **{k: v.numpy() for k, v in state_dict.items()})")


def _name(f: PathOrFile) -> str:
    return repr(os.fspath(f)) if isinstance(f, (str, os.PathLike)) else "this file"


def _write_npz(fh: IO[bytes], arrays: dict[str, np.ndarray]) -> None:
    """np.savez's layout, written member by member (no keyword names to collide with)."""
    import zipfile  # as numpy does: only when a file is written

    with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        for key, arr in arrays.items():
            with zf.open(key + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(arr), allow_pickle=False)


class _Packer:
    """Turns an object into JSON-able nodes, moving its arrays into ``arrays``."""

    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self.arrays = arrays
        self.seen: dict[int, dict] = {}  # id(tensor) -> its node: shared tensors stored once

    def pack(self, obj: Any, path: tuple) -> Any:
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if type(obj) is int or type(obj) is float:
            return obj
        if isinstance(obj, Tensor):
            node = self.seen.get(id(obj))
            if node is None:
                node = {"tensor": self.store(obj.detach()._array, path),
                        "requires_grad": bool(obj.requires_grad),
                        "parameter": isinstance(obj, Parameter)}
                self.seen[id(obj)] = node
            return node
        if isinstance(obj, np.ndarray):
            return {"ndarray": self.store(obj, path)}
        if isinstance(obj, np.generic):
            return {"npscalar": self.store(np.asarray(obj), path)}
        kind = _CONTAINERS.get(type(obj))
        if kind in ("list", "tuple"):
            return {kind: [self.pack(v, path + (i,)) for i, v in enumerate(obj)]}
        if kind is not None:
            return {kind: [[self.key(k, path), self.pack(v, path + (k,))]
                           for k, v in obj.items()]}
        raise TypeError(f"mg.save cannot store {type(obj).__name__} at {_where(path)}: it "
                        "stores tensors, numpy arrays, numbers, strings, None and bools, in "
                        "dicts, lists and tuples (for a Module, save its state_dict())")

    def key(self, k: Any, path: tuple) -> Any:
        if k is None or type(k) in (bool, int, float, str):
            return k
        if type(k) is tuple:
            return {"tuple": [self.key(v, path) for v in k]}
        raise TypeError(f"mg.save cannot store a dict key of type {type(k).__name__} at "
                        f"{_where(path)}: keys must be strings, numbers, bools, None or tuples")

    def store(self, arr: np.ndarray, path: tuple) -> str:
        if arr.dtype.hasobject:
            raise TypeError(f"mg.save cannot store an object array at {_where(path)}")
        base = "/".join(str(p) for p in path) or "data"
        key, n = base, 1
        while key in self.arrays or key == _STRUCTURE:
            n += 1
            key = f"{base}#{n}"
        self.arrays[key] = arr
        return key


def _where(path: tuple) -> str:
    return "the top level" if not path else "".join(f"[{p!r}]" for p in path)


class _Unpacker:
    def __init__(self, archive: Any) -> None:
        self.archive = archive
        self.loaded: dict[str, Tensor] = {}

    def unpack(self, node: Any) -> Any:
        if not isinstance(node, dict):
            return node  # None, bool, int, float, str
        kind = next(iter(node))
        value = node[kind]
        if kind == "tensor":
            t = self.loaded.get(value)
            if t is None:
                arr = self.archive[value]
                t = Parameter(arr, node["requires_grad"]) if node["parameter"] else Tensor(arr)
                if node["requires_grad"] and not node["parameter"]:
                    t.requires_grad_(True)
                self.loaded[value] = t
            return t
        if kind == "ndarray":
            return self.archive[value]
        if kind == "npscalar":
            return self.archive[value][()]
        if kind == "list":
            return [self.unpack(v) for v in value]
        if kind == "tuple":
            return tuple(self.unpack(v) for v in value)
        if kind in ("dict", "odict"):
            pairs = [(self.unpack(k), self.unpack(v)) for k, v in value]
            return OrderedDict(pairs) if kind == "odict" else dict(pairs)
        raise ValueError(f"unknown entry {kind!r} in a minigrad archive")
