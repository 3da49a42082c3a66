"""Reverse-mode autodiff: backward, grad, Function, gradcheck."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .engine import accumulate, run_backward
from .function import Context, Function
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled

if TYPE_CHECKING:
    from ..tensor import Tensor

__all__ = ["Function", "Context", "backward", "grad", "gradcheck", "gradgradcheck",
           "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled"]


def _as_list(x: Tensor | Sequence[Tensor] | None) -> list | None:
    if x is None:
        return None
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _root_grads(outputs: list, grad_outputs: list | None) -> list:
    from ..tensor import Tensor

    grads = []
    for i, t in enumerate(outputs):
        if not t.requires_grad:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn"
            )
        g = None if grad_outputs is None else grad_outputs[i]
        if g is None:
            if t.data.size != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for scalar outputs (output {i} has "
                    f"shape {tuple(t.shape)}); pass a gradient of that shape"
                )
            g = Tensor._make(np.ones(t.shape, dtype=t.dtype))
        elif not isinstance(g, Tensor):
            g = Tensor(np.asarray(g, dtype=t.dtype))
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
    grads = _root_grads(outs, _as_list(grad_tensors))
    keep = create_graph if retain_graph is None else retain_graph
    if inputs is not None:
        ins = _as_list(inputs)
        res = run_backward(outs, grads, keep, create_graph, inputs=ins)
        for t, g in zip(ins, res):
            if g is not None:
                accumulate(t, g, create_graph)
        return
    run_backward(outs, grads, keep, create_graph)


def grad(outputs: Tensor | Sequence[Tensor], inputs: Tensor | Sequence[Tensor],
         grad_outputs: Sequence | None = None, retain_graph: bool | None = None,
         create_graph: bool = False, allow_unused: bool = False) -> tuple[Tensor | None, ...]:
    """d(outputs)/d(inputs) contracted with ``grad_outputs``, returned instead of stored."""
    outs = _as_list(outputs)
    ins = _as_list(inputs)
    grads = _root_grads(outs, _as_list(grad_outputs))
    keep = create_graph if retain_graph is None else retain_graph
    res = run_backward(outs, grads, keep, create_graph, inputs=ins)
    for i, g in enumerate(res):
        if g is None and not allow_unused:
            raise RuntimeError(
                f"One of the differentiated Tensors (input {i}) appears to not have been used "
                "in the graph. Set allow_unused=True if this is the desired behavior."
            )
    return tuple(res)


from .gradcheck import gradcheck, gradgradcheck  # noqa: E402  (needs grad above)
