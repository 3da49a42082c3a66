"""torch.autograd.functional's jacobian, hessian and vjp: whole derivatives of a function, built
from ``grad`` one output element at a time (reverse mode), so any op minigrad differentiates
twice (the SVD and eigh included) has a Hessian. Meant for the small inputs of energies and
residuals (a 3x3 deformation gradient, a pose): the cost is one backward per output element."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..tensor import Tensor
from .api import grad
from .grad_mode import enable_grad

Inputs = Tensor | tuple[Tensor, ...]


def _as_tuple(x: Any, what: str, fn: str) -> tuple[bool, tuple[Tensor, ...]]:
    is_tuple = isinstance(x, (tuple, list))
    xs = tuple(x) if is_tuple else (x,)
    if not all(isinstance(t, Tensor) for t in xs):
        raise TypeError(f"The {what} given to {fn} must be either a Tensor or a tuple of "
                        f"Tensors but the given {what} has type {type(x)}.")
    return is_tuple, xs


def _leaves(xs: tuple[Tensor, ...], create_graph: bool) -> tuple[Tensor, ...]:
    """Fresh leaves to differentiate at; with create_graph an input that requires grad stays
    on its graph (a view of itself), so the result can be differentiated again."""
    return tuple(x.view_as(x) if create_graph and x.requires_grad
                 else x.detach().requires_grad_(True) for x in xs)


def _filled(gs: tuple[Tensor | None, ...], ins: tuple[Tensor, ...], strict: bool,
            output: str) -> list[Tensor]:
    """The gradients, zeros for an input the output does not depend on (strict: an error)."""
    for k, g in enumerate(gs):
        if g is None and strict:
            raise RuntimeError(f"{output} of the user-provided function is independent of "
                               f"input {k}. This is not allowed in strict mode.")
    return [x.detach().new_zeros(x.shape) if g is None else g for g, x in zip(gs, ins)]


def _rows(out: Tensor, ins: tuple[Tensor, ...], i: int, create_graph: bool,
          strict: bool) -> tuple[Tensor, ...]:
    """d out / d ins[k] for each k, shaped out.shape + ins[k].shape: one backward per element."""
    from ..functions import stack  # (functions imports the tensor layer, which imports us)
    per_input: list[list[Tensor]] = [[] for _ in ins]
    flat = out.reshape(-1)
    for j in range(flat.numel()):
        gs = (grad(flat[j], ins, retain_graph=True, create_graph=create_graph, allow_unused=True)
              if out.requires_grad else (None,) * len(ins))
        for k, g in enumerate(_filled(gs, ins, strict, f"Output {i}")):
            per_input[k].append(g)
    jac = []
    for column, x in zip(per_input, ins):
        d = stack(column) if column else x.detach().new_zeros((0,) + tuple(x.shape))
        d = d.reshape(tuple(out.shape) + tuple(x.shape))
        jac.append(d if create_graph else d.detach())
    return tuple(jac)


def jacobian(func: Callable[..., Any], inputs: Inputs, create_graph: bool = False,
             strict: bool = False, vectorize: bool = False,
             strategy: str = "reverse-mode") -> Any:
    """d func(*inputs) / d inputs, shaped output.shape + input.shape, as torch's: a tuple per
    output (if func returns a tuple) of a tuple per input (if inputs is a tuple). An input the
    output does not depend on gives zeros (strict: an error). ``vectorize`` is accepted and
    changes nothing.

    >>> mg.autograd.functional.jacobian(lambda x: x ** 2, mg.tensor([1.0, 2.0]))
    tensor([[2., 0.],
            [0., 4.]])
    """
    if strategy != "reverse-mode":
        raise NotImplementedError("minigrad's jacobian is reverse-mode only")
    in_tuple, ins = _as_tuple(inputs, "inputs", "jacobian")
    with enable_grad():
        ins = _leaves(ins, create_graph)
        out_tuple, outs = _as_tuple(func(*ins), "outputs of the user-provided function",
                                    "jacobian")
        jac = tuple(_rows(out, ins, i, create_graph, strict) for i, out in enumerate(outs))
    per_output = [j if in_tuple else j[0] for j in jac]
    return tuple(per_output) if out_tuple else per_output[0]


def hessian(func: Callable[..., Any], inputs: Inputs, create_graph: bool = False,
            strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The second derivatives of a function with one-element output, shaped input.shape +
    input.shape (for a tuple of inputs, a tuple of tuples, block (i, j) = d2 f / dx_i dx_j).

    >>> mg.autograd.functional.hessian(lambda x: (x ** 3).sum(), mg.tensor([1.0, 2.0]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    in_tuple, ins = _as_tuple(inputs, "inputs", "hessian")

    def scalar(*xs: Tensor) -> Tensor:
        out = func(*xs)
        if not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        return out.reshape(())

    def gradient(*xs: Tensor) -> tuple[Tensor, ...]:
        return jacobian(scalar, xs, create_graph=True, strict=strict)

    res = jacobian(gradient, ins, create_graph=create_graph, strict=strict,
                   strategy=outer_jacobian_strategy)
    return res if in_tuple else res[0][0]


def vjp(func: Callable[..., Any], inputs: Inputs, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """(func(*inputs), v^T J): the vector-Jacobian product, as torch's; v may be omitted for a
    one-element output.

    >>> mg.autograd.functional.vjp(lambda x: 3 * x, mg.tensor([1.0, 2.0]), mg.ones(2))[1]
    tensor([3., 3.])
    """
    in_tuple, ins = _as_tuple(inputs, "inputs", "vjp")
    with enable_grad():
        ins = _leaves(ins, create_graph)
        out_tuple, outs = _as_tuple(func(*ins), "outputs of the user-provided function", "vjp")
        if v is None:
            if any(o.numel() != 1 for o in outs):
                raise RuntimeError("The vector v can only be None if the user-provided "
                                   "function returns a single Tensor with a single element.")
            vs = tuple(o.detach().new_ones(o.shape) for o in outs)
        else:
            vs = _as_tuple(v, "v", "vjp")[1]
        used = [k for k, o in enumerate(outs) if o.requires_grad]
        gs: tuple[Tensor | None, ...] = (None,) * len(ins)
        if used:
            gs = grad([outs[k] for k in used], ins, [vs[k] for k in used],
                      create_graph=create_graph, allow_unused=True)
    res = [g if create_graph else g.detach() for g in _filled(gs, ins, strict, "The output")]
    out = tuple(o if create_graph else o.detach() for o in outs)
    return (out if out_tuple else out[0]), (tuple(res) if in_tuple else res[0])
