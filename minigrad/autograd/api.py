"""backward and grad: the two ways into the engine, with torch's argument rules."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from . import function
from .engine import accumulate, run_backward
from .function import make_tensor

if TYPE_CHECKING:
    from ..tensor import Tensor


def _as_list(x: Tensor | Sequence) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _root_grads(outputs: list, grad_outputs: list | None) -> list:
    grads = []
    for i, t in enumerate(outputs):
        if not t.requires_grad:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn"
            )
        g = None if grad_outputs is None else grad_outputs[i]
        if g is None:
            if t._array.dtype.kind == "c":
                raise RuntimeError("grad can be implicitly created only for real scalar "
                                   f"outputs but got {t.dtype}")
            if t._array.size != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for scalar outputs (output {i} has "
                    f"shape {tuple(t.shape)}); pass a gradient of that shape"
                )
            g = make_tensor(np.ones(t.shape, dtype=t.dtype))
        elif not function.is_tensor(g):
            g = function.tensor_class(np.asarray(g, dtype=t.dtype))
        if g.shape != t.shape:
            raise RuntimeError(f"gradient has shape {tuple(g.shape)}, output {i} has "
                               f"shape {tuple(t.shape)}")
        grads.append(g)
    return grads


def backward(tensors: Tensor | Sequence[Tensor], grad_tensors: Sequence | None = None,
             retain_graph: bool | None = None, create_graph: bool = False,
             inputs: Sequence[Tensor] | None = None) -> None:
    """Accumulate the gradients of ``tensors`` into the ``.grad`` of the leaves."""
    outs = _as_list(tensors)
    grads = _root_grads(outs, None if grad_tensors is None else _as_list(grad_tensors))
    if inputs is not None:
        ins = _as_list(inputs)
        res = run_backward(outs, grads, retain_graph, create_graph, inputs=ins)
        assert res is not None  # given inputs, the walk returns their gradients
        for t, g in zip(ins, res):
            if g is not None:
                accumulate(t, g, create_graph)
        return
    run_backward(outs, grads, retain_graph, create_graph)


def grad(outputs: Tensor | Sequence[Tensor], inputs: Tensor | Sequence[Tensor],
         grad_outputs: Sequence | None = None, retain_graph: bool | None = None,
         create_graph: bool = False, allow_unused: bool = False) -> tuple[Tensor | None, ...]:
    """d(outputs)/d(inputs) contracted with ``grad_outputs``, returned instead of stored."""
    outs = _as_list(outputs)
    ins = _as_list(inputs)
    grads = _root_grads(outs, None if grad_outputs is None else _as_list(grad_outputs))
    res = run_backward(outs, grads, retain_graph, create_graph, inputs=ins)
    assert res is not None  # given inputs, the walk returns their gradients
    for i, g in enumerate(res):
        if g is None and not allow_unused:
            raise RuntimeError(
                f"One of the differentiated Tensors (input {i}) appears to not have been used "
                "in the graph. Set allow_unused=True if this is the desired behavior."
            )
    return tuple(res)
