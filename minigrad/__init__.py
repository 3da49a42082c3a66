"""minigrad: a small, readable autodiff tensor library with a differentiable Jacobi SVD."""

from . import autograd, linalg, nn, optim
from .autograd.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .creation import (Generator, arange, as_tensor, default_generator, empty, empty_like, eye,
                       from_numpy, full, full_like, linspace, logspace, manual_seed, ones,
                       ones_like, rand, rand_like, randint, randn, randn_like, randperm, tensor,
                       zeros, zeros_like)
from .dtypes import bool_ as bool  # noqa: A004  (torch spells it mg.bool)
from .dtypes import double, float16, float32, float64, half, int32, int64, long
from .functions import (abs, add, allclose, amax, amin, argmax, argmin, bmm, broadcast_shapes,
                        broadcast_to, cat, ceil, chunk, clamp, clone, concat, concatenate, cos,
                        cumsum, detach, diag, diag_embed, diagonal, div, dot, equal, exp, flatten,
                        flip, floor, floor_divide, gather, index_select, is_tensor, isfinite,
                        isinf, isnan, log, log1p, log_softmax, logsumexp, masked_fill, matmul,
                        max, maximum, mean, min, minimum, mm, mul, neg, norm, numel, outer,
                        permute, pow, prod, relu, remainder, reshape, round, rsqrt, sigmoid, sign,
                        sin, softmax, split, sqrt, square, squeeze, stack, std, sub, sum,
                        swapaxes, t, tanh, trace, transpose, tril, triu, trunc, unbind, unsqueeze,
                        var, where, expm1)
from .linalg._threads import get_num_threads, set_num_threads
from .serialization import load, save
from .tensor import Tensor
from .einsum import einsum, tensordot
from .linalg.det import det, logdet, slogdet
from .linalg.products import matrix_power, tensor_cross as cross
from .linalg.solve import inv as inverse
from .linalg.spectral import pinverse

float = float32  # noqa: A001
__version__ = "0.1.0"

__all__ = [
    "Tensor", "autograd", "linalg", "nn", "optim", "save", "load",
    "tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full",
    "eye", "arange", "linspace", "logspace", "rand", "randn", "randint", "randperm",
    "zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like",
    "Generator", "manual_seed", "default_generator",
    "float16", "float32", "float64", "int32", "int64", "bool", "half", "double", "long", "float",
    "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
    "abs", "add", "allclose", "amax", "amin", "argmax", "argmin", "broadcast_shapes",
    "broadcast_to", "cat", "chunk", "clamp", "clone", "concat", "concatenate", "cos", "cumsum",
    "detach", "diag", "diag_embed", "diagonal", "div", "dot", "equal", "exp", "flatten",
    "is_tensor", "isfinite", "isinf", "isnan", "log", "log1p", "log_softmax", "logsumexp",
    "matmul", "max", "maximum", "mean", "min", "minimum", "mm", "mul", "neg", "norm", "numel",
    "outer", "permute", "pow", "prod", "relu", "reshape", "rsqrt", "sigmoid", "sign", "sin",
    "softmax", "split", "sqrt", "square", "squeeze", "stack", "std", "sub", "sum", "swapaxes",
    "t", "tanh", "trace", "transpose", "tril", "triu", "unbind", "unsqueeze", "var", "where",
    "bmm", "ceil", "flip", "floor", "floor_divide", "gather", "index_select", "masked_fill",
    "remainder", "round", "trunc", "expm1", "get_num_threads", "set_num_threads",
]
__all__ += ["einsum", "tensordot", "det", "logdet", "slogdet", "matrix_power", "cross",
            "inverse", "pinverse"]
from . import accelerator, cuda  # noqa: E402
from ._device import device  # noqa: E402

__all__ += ["device", "cuda", "accelerator"]
from .linalg.legacy import cholesky, qr, svd  # noqa: E402
from .linalg.matrix_exp import matrix_exp  # noqa: E402

__all__ += ["svd", "cholesky", "qr", "matrix_exp"]
