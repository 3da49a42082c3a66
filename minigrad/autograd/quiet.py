"""numpy's floating-point warnings, silenced inside minigrad's computations as torch computes
inf and nan silently (1 / 0, log(0), inf - inf, overflow): ``Function.apply`` runs each
forward between ``enter()`` and ``leave(token)``, and the engine each backward walk. The
user's own numpy keeps its settings (``np.seterr`` at import would change them).

numpy >= 2 keeps its error state in a context variable: setting it to a state built once
costs about a tenth of ``np.errstate``, which builds the state on every entry. Where those
internals are not there (numpy 1.x), ``np.errstate`` itself does the same job, slower.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import numpy as np

enter: Callable[[], Any]
leave: Callable[[Any], None]

try:
    from numpy._core._ufunc_config import (  # type: ignore[attr-defined]  # not in stubs
        _extobj_contextvar,
    )
    from numpy._core.umath import _make_extobj

    enter = partial(_extobj_contextvar.set, _make_extobj(all="ignore"))
    leave = _extobj_contextvar.reset
except ImportError:  # numpy 1.x

    def enter() -> Any:
        state = np.errstate(all="ignore")
        state.__enter__()
        return state

    def leave(state: Any) -> None:
        state.__exit__(None, None, None)


_R = TypeVar("_R")


def unrecorded(fn: Callable[..., _R], *args: Any, **kwargs: Any) -> _R:
    """fn(*args, **kwargs) with numpy's warnings silenced, as Function.apply runs a forward:
    the path of a call that records nothing, without apply's bookkeeping (for one small
    matrix, a node's fixed cost, plan and tie tests were most of the time; for a sum of
    76800 float32, apply was a fifth of torch's whole time)."""
    token = enter()
    try:
        return fn(*args, **kwargs)
    finally:
        leave(token)
