"""minigrad: a small, readable autodiff tensor library with a differentiable Jacobi SVD."""

from math import e, inf, nan, pi  # torch's mg.pi, mg.inf ...

from . import _malloc  # noqa: F401  (malloc keeps freed temporaries: minigrad/_malloc.py)
from . import accelerator, autograd, cuda, functions, linalg, nn, optim, special, utils
from ._device import device
from .autograd.grad_mode import (enable_grad, inference_mode, is_grad_enabled,
                                  is_inference_mode_enabled, no_grad, set_grad_enabled)
from .combine import (atleast_1d, atleast_2d, atleast_3d, block_diag, cartesian_prod, cdist,
                      pdist,
                      column_stack, dstack, hstack, meshgrid, row_stack, std_mean, tril_indices,
                      triu_indices, var_mean, vstack)
from .creation import (arange, as_tensor, default_generator, empty, empty_like, eye, from_numpy,
                       full, full_like, Generator, linspace, logspace, manual_seed, ones, ones_like,
                       rand, rand_like, randint, randn, randn_like, randperm, tensor, zeros,
                       zeros_like)
from .dtypes import bool_ as bool  # noqa: A004  (torch spells it mg.bool)
from .dtypes import (cdouble, cfloat, complex64, complex128, double, finfo, float16, float32,
                     float64, get_default_dtype, half, iinfo, int32, int64, long,
                     set_default_dtype)
from .einsum import einsum, tensordot
from .functions import *  # noqa: F403  (their names: functions.__all__, below)
from .linalg._threads import get_num_threads, set_num_threads
from .linalg.det import det, logdet, slogdet
from .linalg.legacy import cholesky, lu, lu_solve, qr, svd, triangular_solve
from .linalg.lu import lu_unpack
from .linalg.lowrank import pca_lowrank, svd_lowrank
from .linalg.matrix_exp import matrix_exp
from .linalg.products import matrix_power
from .linalg.products import tensor_cross as cross
from .linalg.solve import cholesky_inverse, cholesky_solve
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
    "cdouble", "cfloat", "complex64", "complex128", "finfo", "iinfo", "get_default_dtype",
    "set_default_dtype",
    # grad mode
    "enable_grad", "is_grad_enabled", "no_grad", "set_grad_enabled", "inference_mode",
    "is_inference_mode_enabled",
    # constants
    "e", "inf", "nan", "pi",
    # the functions (functions.py; most are Tensor methods: mg.exp is Tensor.exp)
    *functions.__all__,
    # functions of several tensors (combine.py)
    "atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "cartesian_prod", "cdist", "pdist",
    "column_stack", "dstack", "hstack", "meshgrid", "row_stack", "std_mean", "tril_indices",
    "triu_indices", "var_mean", "vstack",
    # linear algebra at the top level, as torch's
    "cholesky", "cross", "det", "einsum", "get_num_threads", "inverse", "logdet", "matrix_exp",
    "matrix_power", "pca_lowrank", "pinverse", "qr", "set_num_threads", "slogdet", "svd",
    "svd_lowrank", "tensordot", "cholesky_solve", "cholesky_inverse", "triangular_solve",
    "lu", "lu_solve", "lu_unpack",
]
