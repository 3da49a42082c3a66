"""torch.special's names: the gamma family, erf and kin, the normal distribution's CDF, log-CDF
and quantile, the modified Bessel functions of the first kind, and the numerically careful
logs and exponentials, so ``torch.special.x`` ports as ``mg.special.x``.

Most are the Tensor methods under torch.special's spelling; xlog1py and ndtr are composites
of minigrad ops, the rest ops of their own, so every name differentiates to every order.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import functions as _f
from ._tensor.arith import tensor_like
from .autograd.function import make_tensor
from .nn.functional import log_softmax, softmax
from .ops import bessel as _bessel
from .ops import normal as _normal
from .ops import unary as _unary
from .tensor import Tensor

__all__ = ["digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1",
           "gammaln", "i0", "i0e", "i1", "i1e", "log1p", "log_ndtr", "log_softmax", "logit",
           "logsumexp", "modified_bessel_i0", "modified_bessel_i1", "multigammaln", "ndtr",
           "ndtri", "polygamma", "psi", "round", "sinc", "softmax", "xlog1py", "xlogy"]

digamma = psi = Tensor.digamma
erf, erfc, erfinv = Tensor.erf, Tensor.erfc, Tensor.erfinv
exp2, expm1, log1p = Tensor.exp2, Tensor.expm1, Tensor.log1p
expit = Tensor.sigmoid
gammaln = Tensor.lgamma
i0 = modified_bessel_i0 = Tensor.i0
logit, logsumexp, round, sinc, xlogy = (Tensor.logit, Tensor.logsumexp, Tensor.round,
                                        Tensor.sinc, Tensor.xlogy)
multigammaln = Tensor.mvlgamma
polygamma = _f.polygamma


def entr(input: Tensor) -> Tensor:
    """-x log x elementwise: 0 at x = 0, -inf for x < 0 (the entropy term).

    >>> mg.special.entr(mg.tensor([0.0, 0.5, -1.0])).round(decimals=4)
    tensor([0.    , 0.3466,   -inf])
    """
    return _unary.Entr.apply(input if input.is_floating_point() else input.float())


def xlog1py(input: Any, other: Any) -> Tensor:
    """x log1p(y), 0 where x == 0 unless y is nan (even at y = -1 or inf).

    >>> mg.special.xlog1py(mg.tensor([0.0, 2.0]), mg.tensor([-1.0, 1e-10]))
    tensor([0.e+00, 2.e-10])
    """
    x = tensor_like(input, other) if isinstance(other, Tensor) else tensor_like(input, input)
    y = tensor_like(other, x)
    with np.errstate(invalid="ignore"):
        zero = np.asarray((x._array == 0) & ((y._array <= -1) | np.isinf(y._array)))
    if np.any(zero):  # log1p would give -inf there (and nan in the gradient): log1p 0 = 0
        y = _f.where(make_tensor(zero), 0.0, y)
    return x * y.log1p()


def ndtr(input: Tensor) -> Tensor:
    """The standard normal CDF, erfc(-x / sqrt 2) / 2 (no cancellation in the lower tail).

    >>> mg.special.ndtr(mg.tensor([0.0, -10.0], dtype=mg.float64))
    tensor([5.00000000e-01, 7.61985302e-24], dtype=minigrad.float64)
    """
    return (-input * (1 / math.sqrt(2.0))).erfc() * 0.5


def _float(input: Tensor) -> Tensor:
    return input if input.is_floating_point() else input.float()


def erfcx(input: Tensor) -> Tensor:
    """exp(x^2) erfc(x), with neither factor's overflow or underflow.

    >>> mg.special.erfcx(mg.tensor([0.0, 30.0, -2.0], dtype=mg.float64))
    tensor([1.00000000e+00, 1.87958889e-02, 1.08940904e+02], dtype=minigrad.float64)
    """
    return _unary.Erfcx.apply(_float(input))


def log_ndtr(input: Tensor) -> Tensor:
    """log of the standard normal CDF, finite far into the lower tail.

    >>> mg.special.log_ndtr(mg.tensor([0.0, -40.0], dtype=mg.float64))
    tensor([-6.93147181e-01, -8.04608442e+02], dtype=minigrad.float64)
    """
    return _normal.LogNdtr.apply(_float(input))


def ndtri(input: Tensor) -> Tensor:
    """The standard normal quantile, the inverse of ndtr: -inf at 0, inf at 1.

    >>> mg.special.ndtri(mg.tensor([0.5, 0.975, 1e-300], dtype=mg.float64))
    tensor([  0.        ,   1.95996398, -37.0470963 ], dtype=minigrad.float64)
    """
    return _normal.Ndtri.apply(_float(input))


def i0e(input: Tensor) -> Tensor:
    """exp(-|x|) I_0(x), the exponentially scaled modified Bessel function of order 0.

    >>> mg.special.i0e(mg.tensor([0.0, 1000.0], dtype=mg.float64))
    tensor([1.        , 0.01261724], dtype=minigrad.float64)
    """
    return _bessel.BesselI.apply(_float(input), 0, True)


def i1(input: Tensor) -> Tensor:
    """I_1(x), the modified Bessel function of the first kind of order 1.

    >>> mg.special.i1(mg.tensor([0.0, 1.0])).round(decimals=4)
    tensor([0.    , 0.5652])
    """
    return _bessel.BesselI.apply(_float(input), 1, False)


def i1e(input: Tensor) -> Tensor:
    """exp(-|x|) I_1(x).

    >>> mg.special.i1e(mg.tensor([-1.0, 1.0])).round(decimals=4)
    tensor([-0.2079,  0.2079])
    """
    return _bessel.BesselI.apply(_float(input), 1, True)


modified_bessel_i1 = i1
