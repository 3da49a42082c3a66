"""minigrad: a small, readable autodiff tensor library with a differentiable Jacobi SVD."""

from math import e, inf, nan, pi  # torch's mg.pi, mg.inf ...

from . import accelerator, autograd, cuda, linalg, nn, optim, special, utils
from ._device import device
from .autograd.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .combine import (atleast_1d, atleast_2d, atleast_3d, block_diag, cartesian_prod, cdist,
                      column_stack, dstack, hstack, meshgrid, row_stack, std_mean, tril_indices,
                      triu_indices, var_mean, vstack)
from .creation import (arange, as_tensor, default_generator, empty, empty_like, eye, from_numpy,
                       full, full_like, Generator, linspace, logspace, manual_seed, ones, ones_like,
                       rand, rand_like, randint, randn, randn_like, randperm, tensor, zeros,
                       zeros_like)
from .dtypes import bool_ as bool  # noqa: A004  (torch spells it mg.bool)
from .dtypes import double, float16, float32, float64, half, int32, int64, long
from .einsum import einsum, tensordot
from .functions import (abs, absolute, acos, acosh, add, addcdiv, addcmul, addmm, addmv, all,
                        allclose, amax, amin, aminmax, any, arccos, arccosh, arcsin, arcsinh,
                        arctan, arctan2, arctanh, argmax, argmin, argsort, argwhere, asin, asinh,
                        atan, atan2, atanh, baddbmm, bincount, bmm, broadcast_shapes, broadcast_to,
                        cat, ceil, chunk, clamp, clamp_max, clamp_min, clip, clone, concat,
                        concatenate, copysign, corrcoef, cos, cosh, count_nonzero, cov, cummax,
                        cummin, cumprod, cumsum, deg2rad, detach, diag, diag_embed, diagonal, diff,
                        digamma, dist, div, divide, dot, dsplit, equal, erf, erfc, erfinv, exp,
                        exp2, expm1, flatten, flip, fliplr, flipud, float_power, floor,
                        floor_divide, fmax, fmin, fmod, frac, gather, ger, heaviside, hsplit, hypot,
                        i0, index_add, index_copy, index_fill, index_select, inner, is_tensor,
                        isclose, isfinite, isinf, isnan, isneginf, isposinf, isreal, kron, kthvalue,
                        lerp, lgamma, log, log10, log1p, log2, log_softmax, logaddexp, logaddexp2,
                        logcumsumexp, logical_and, logical_not, logical_or, logical_xor, logit,
                        logsumexp, masked_fill, masked_select, matmul, max, maximum, mean, median,
                        min, minimum, mm, mode, moveaxis, movedim, msort, mul, multiply, mv,
                        mvlgamma, nan_to_num, nanmean, nanmedian, nanquantile, nansum, narrow, neg,
                        negative, nonzero, norm, numel, outer, permute, polygamma, positive, pow,
                        prod, quantile, rad2deg, ravel, relu, remainder, repeat_interleave, reshape,
                        roll, rot90, round, rsqrt, scatter, scatter_add, scatter_reduce, select,
                        sgn, sigmoid, sign, signbit, sin, sinc, sinh, softmax, sort, split, sqrt,
                        square, squeeze, stack, std, sub, subtract, sum, swapaxes, swapdims, t,
                        take, take_along_dim, tan, tanh, tensor_split, tile, topk, trace, transpose,
                        tril, triu, true_divide, trunc, unbind, unique, unsqueeze, var, vdot,
                        vsplit, where, xlogy)
from .linalg._threads import get_num_threads, set_num_threads
from .linalg.det import det, logdet, slogdet
from .linalg.legacy import cholesky, qr, svd
from .linalg.lowrank import pca_lowrank, svd_lowrank
from .linalg.matrix_exp import matrix_exp
from .linalg.products import matrix_power
from .linalg.products import tensor_cross as cross
from .linalg.solve import inv as inverse
from .linalg.spectral import pinverse
from .serialization import load, save
from .tensor import Tensor

float = float32  # noqa: A001
__version__ = "0.1.0"

# The public names: tests/test_public_names.py checks this list is exactly what the package binds.
__all__ = [
    # the tensor, devices and files
    "device", "load", "save", "Tensor",
    # submodules
    "accelerator", "autograd", "cuda", "linalg", "nn", "optim", "special", "utils",
    # creation and random numbers
    "arange", "as_tensor", "default_generator", "empty", "empty_like", "eye", "from_numpy", "full",
    "full_like", "Generator", "linspace", "logspace", "manual_seed", "ones", "ones_like", "rand",
    "rand_like", "randint", "randn", "randn_like", "randperm", "tensor", "zeros", "zeros_like",
    # dtypes
    "bool", "double", "float", "float16", "float32", "float64", "half", "int32", "int64", "long",
    # grad mode
    "enable_grad", "is_grad_enabled", "no_grad", "set_grad_enabled",
    # constants
    "e", "inf", "nan", "pi",
    # functions (functions.py: most are the Tensor methods, mg.exp is Tensor.exp)
    "abs", "absolute", "acos", "acosh", "add", "addcdiv", "addcmul", "addmm", "addmv", "all",
    "allclose", "amax", "amin", "aminmax", "any", "arccos", "arccosh", "arcsin", "arcsinh",
    "arctan", "arctan2", "arctanh", "argmax", "argmin", "argsort", "argwhere", "asin", "asinh",
    "atan", "atan2", "atanh", "baddbmm", "bincount", "bmm", "broadcast_shapes", "broadcast_to",
    "cat", "ceil", "chunk", "clamp", "clamp_max", "clamp_min", "clip", "clone", "concat",
    "concatenate", "copysign", "corrcoef", "cos", "cosh", "count_nonzero", "cov", "cummax",
    "cummin", "cumprod", "cumsum", "deg2rad", "detach", "diag", "diag_embed", "diagonal", "diff",
    "digamma", "dist", "div", "divide", "dot", "dsplit", "equal", "erf", "erfc", "erfinv", "exp",
    "exp2", "expm1", "flatten", "flip", "fliplr", "flipud", "float_power", "floor", "floor_divide",
    "fmax", "fmin", "fmod", "frac", "gather", "ger", "heaviside", "hsplit", "hypot", "i0",
    "index_add", "index_copy", "index_fill", "index_select", "inner", "is_tensor", "isclose",
    "isfinite", "isinf", "isnan", "isneginf", "isposinf", "isreal", "kron", "kthvalue", "lerp",
    "lgamma", "log", "log10", "log1p", "log2", "log_softmax", "logaddexp", "logaddexp2",
    "logcumsumexp", "logical_and", "logical_not", "logical_or", "logical_xor", "logit",
    "logsumexp", "masked_fill", "masked_select", "matmul", "max", "maximum", "mean", "median",
    "min", "minimum", "mm", "mode", "moveaxis", "movedim", "msort", "mul", "multiply", "mv",
    "mvlgamma", "nan_to_num", "nanmean", "nanmedian", "nanquantile", "nansum", "narrow", "neg",
    "negative", "nonzero", "norm", "numel", "outer", "permute", "polygamma", "positive", "pow",
    "prod", "quantile", "rad2deg", "ravel", "relu", "remainder", "repeat_interleave", "reshape",
    "roll", "rot90", "round", "rsqrt", "scatter", "scatter_add", "scatter_reduce", "select", "sgn",
    "sigmoid", "sign", "signbit", "sin", "sinc", "sinh", "softmax", "sort", "split", "sqrt",
    "square", "squeeze", "stack", "std", "sub", "subtract", "sum", "swapaxes", "swapdims", "t",
    "take", "take_along_dim", "tan", "tanh", "tensor_split", "tile", "topk", "trace", "transpose",
    "tril", "triu", "true_divide", "trunc", "unbind", "unique", "unsqueeze", "var", "vdot",
    "vsplit", "where", "xlogy",
    # functions of several tensors (combine.py)
    "atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "cartesian_prod", "cdist",
    "column_stack", "dstack", "hstack", "meshgrid", "row_stack", "std_mean", "tril_indices",
    "triu_indices", "var_mean", "vstack",
    # linear algebra at the top level, as torch's
    "cholesky", "cross", "det", "einsum", "get_num_threads", "inverse", "logdet", "matrix_exp",
    "matrix_power", "pca_lowrank", "pinverse", "qr", "set_num_threads", "slogdet", "svd",
    "svd_lowrank", "tensordot",
]
