"""minigrad: a small, readable autodiff tensor library with a differentiable Jacobi SVD."""

from . import autograd, linalg, nn, optim, utils
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
    "Tensor", "autograd", "linalg", "nn", "optim", "utils", "save", "load",
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
from . import accelerator, cuda, special  # noqa: E402
from ._device import device  # noqa: E402

__all__ += ["device", "cuda", "accelerator", "special"]
from .linalg.legacy import cholesky, qr, svd  # noqa: E402
from .linalg.matrix_exp import matrix_exp  # noqa: E402

__all__ += ["svd", "cholesky", "qr", "matrix_exp"]

# issue 13: the torch names ports hit (math, sorting and selection, shape and scatter)
from .functions import (absolute, acos, acosh, addcdiv, addcmul, addmm, addmv, all, aminmax, any,  # noqa: E402
                        arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh, argsort,
                        argwhere, asin, asinh, atan, atan2, atanh, baddbmm, bincount, clamp_max,
                        clamp_min, clip, copysign, corrcoef, cosh, count_nonzero, cov, cummax,
                        cummin, cumprod, deg2rad, diff, digamma, dist, divide, dsplit, erf, erfc,
                        erfinv, i0, lgamma, mvlgamma, polygamma,
                        exp2, fliplr, flipud, float_power, fmax, fmin, fmod, frac, ger, heaviside,
                        hsplit, hypot, index_add, index_copy, index_fill, inner, isclose, isneginf,
                        isposinf, isreal, kron, kthvalue, lerp, log10, log2, logaddexp, logaddexp2,
                        logcumsumexp, logical_and, logical_not, logical_or, logical_xor, logit,
                        masked_select, median, mode, moveaxis, movedim, msort, multiply, mv,
                        nan_to_num, nanmean, nanmedian, nanquantile, nansum, narrow, negative,
                        nonzero, positive, quantile, rad2deg, ravel, repeat_interleave, roll,
                        rot90, scatter, scatter_add, scatter_reduce,
                        select, sgn, signbit, sinc, sinh, sort, subtract, swapdims, take,
                        take_along_dim, tan, tensor_split, tile, topk, true_divide, unique, vdot,
                        vsplit, xlogy)
from .combine import (atleast_1d, atleast_2d, atleast_3d, block_diag, cartesian_prod, cdist,  # noqa: E402
                      column_stack, dstack, hstack, meshgrid, row_stack, std_mean, tril_indices,
                      triu_indices, var_mean, vstack)
from math import e, inf, nan, pi  # noqa: E402  (torch's mg.pi, mg.inf ...)

__all__ += ["absolute", "acos", "acosh", "addcdiv", "addcmul", "addmm", "addmv", "all", "aminmax",
            "any", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2", "arctanh",
            "argsort", "argwhere", "asin", "asinh", "atan", "atan2", "atanh", "atleast_1d",
            "atleast_2d", "atleast_3d", "baddbmm", "bincount", "block_diag", "cartesian_prod",
            "cdist", "clamp_max", "clamp_min", "clip", "column_stack", "copysign", "corrcoef",
            "cosh", "count_nonzero", "cov", "cummax", "cummin", "cumprod", "deg2rad", "diff",
            "dist", "divide", "dsplit", "dstack", "erf", "erfc", "erfinv", "exp2", "fliplr",
            "flipud", "float_power", "fmax", "fmin", "fmod", "frac", "ger", "heaviside", "hsplit",
            "hstack", "hypot", "index_add", "index_copy", "index_fill", "inner", "isclose",
            "isneginf", "isposinf", "isreal", "kron", "kthvalue", "lerp", "log10", "log2",
            "logaddexp", "logaddexp2", "logcumsumexp", "logical_and", "logical_not", "logical_or",
            "logical_xor", "logit", "masked_select", "median", "meshgrid", "mode", "moveaxis",
            "movedim", "msort", "multiply", "mv", "nan_to_num", "nanmean", "nansum", "narrow",
            "negative", "nonzero", "positive", "quantile", "rad2deg", "ravel", "repeat_interleave",
            "roll", "rot90", "row_stack", "scatter", "scatter_add", "select", "sgn", "signbit",
            "sinc", "sinh", "sort", "std_mean", "subtract", "swapdims", "take", "take_along_dim",
            "tan", "tensor_split", "tile", "topk", "tril_indices", "triu_indices", "true_divide",
            "unique", "var_mean", "vdot", "vsplit", "vstack", "xlogy", "e", "inf", "nan", "pi",
            "digamma", "lgamma", "mvlgamma", "polygamma", "nanmedian", "nanquantile",
            "scatter_reduce", "i0"]
from .linalg.lowrank import pca_lowrank, svd_lowrank  # noqa: E402

__all__ += ["svd_lowrank", "pca_lowrank"]
