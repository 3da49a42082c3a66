"""Module-level tensor functions, torch style: ``mg.cat``, ``mg.exp(x)``, ``mg.where`` ...

Those with a Tensor method of the same name are that method (``mg.exp is mg.Tensor.exp``);
the rest (joining, broadcasting, number-first arithmetic) are defined here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ._dims import wrap_dim
from ._tensor.arith import tensor_like
from ._tensor.elementwise import bool_mask
from .ops import arith, shape
from .tensor import Tensor


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Concatenate along an existing dim."""
    ts = list(tensors)
    if not ts:
        raise RuntimeError("cat expects a non-empty list of tensors")
    if ts[0].ndim == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = wrap_dim(dim, ts[0].ndim)
    for t in ts[1:]:
        rest, ref = t.shape[:d] + t.shape[d + 1:], ts[0].shape[:d] + ts[0].shape[d + 1:]
        if t.ndim != ts[0].ndim or rest != ref:
            raise RuntimeError(f"cat: sizes of tensors must match except in dimension {d}: "
                               f"got {tuple(ts[0].shape)} and {tuple(t.shape)}")
    return shape.Cat.apply(d, *ts)


concat = concatenate = cat


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join along a new dim; all tensors must have the same shape."""
    ts = list(tensors)
    if not ts:
        raise RuntimeError("stack expects a non-empty list of tensors")
    if len({t.shape for t in ts}) > 1:  # (not any(): this module binds mg.any)
        raise RuntimeError(f"stack expects each tensor to be equal size, got "
                           f"{[tuple(t.shape) for t in ts]}")
    d = wrap_dim(dim, ts[0].ndim + 1)
    return cat([t.unsqueeze(d) for t in ts], d)


def where(condition: Any, input: Any, other: Any) -> Tensor:
    """``input`` where ``condition`` holds, else ``other``; the condition gets no gradient."""
    return arith.Where.apply(bool_mask(condition), input, other)


def matmul(a: Tensor, b: Any) -> Tensor:
    return a.matmul(b)


def outer(a: Tensor, b: Tensor) -> Tensor:
    return a.outer(b)


def clamp(x: Tensor, min: Any = None, max: Any = None) -> Tensor:
    return x.clamp(min, max)


def maximum(a: Tensor, b: Any) -> Tensor:
    return a.maximum(b)


def minimum(a: Tensor, b: Any) -> Tensor:
    return a.minimum(b)


def pow(a: Any, b: Any) -> Tensor:
    return arith.Pow.apply(a, b)


def add(a: Any, b: Any, alpha: Any = 1) -> Tensor:
    return arith.Add.apply(a, b if alpha == 1 else b * alpha)


def sub(a: Any, b: Any, alpha: Any = 1) -> Tensor:
    return arith.Sub.apply(a, b if alpha == 1 else b * alpha)


def mul(a: Any, b: Any) -> Tensor:
    return arith.Mul.apply(a, b)


def div(a: Any, b: Any) -> Tensor:
    return arith.Div.apply(a, b)


def polygamma(n: int, input: Tensor) -> Tensor:
    """psi^(n)(input), number first as in torch.

    >>> mg.polygamma(1, mg.tensor([1.0])).round(decimals=4)
    tensor([1.6449])
    """
    return input.polygamma(n)


def is_tensor(x: Any) -> bool:
    return isinstance(x, Tensor)


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))


def broadcast_to(x: Tensor, shape_: Sequence[int]) -> Tensor:
    return tensor_like(x, x).expand(tuple(shape_))


# ---- the function forms of Tensor methods: mg.exp(x) is x.exp() (torch's, same signature).
# Bound by name, last in this file: several shadow builtins (abs, max, min, round, sum).

# elementwise
abs = Tensor.abs
neg = Tensor.neg
sign = Tensor.sign
exp = Tensor.exp
log = Tensor.log
sqrt = Tensor.sqrt
rsqrt = Tensor.rsqrt
sin = Tensor.sin
cos = Tensor.cos
tanh = Tensor.tanh
sigmoid = Tensor.sigmoid
relu = Tensor.relu
square = Tensor.square
log1p = Tensor.log1p
expm1 = Tensor.expm1
floor = Tensor.floor
ceil = Tensor.ceil
round = Tensor.round
trunc = Tensor.trunc
isnan = Tensor.isnan
isinf = Tensor.isinf
isfinite = Tensor.isfinite
masked_fill = Tensor.masked_fill
remainder = Tensor.remainder
floor_divide = Tensor.floor_divide

# reductions
sum = Tensor.sum
mean = Tensor.mean
amax = Tensor.amax
amin = Tensor.amin
max = Tensor.max
min = Tensor.min
prod = Tensor.prod
var = Tensor.var
std = Tensor.std
norm = Tensor.norm
argmax = Tensor.argmax
argmin = Tensor.argmin
logsumexp = Tensor.logsumexp
softmax = Tensor.softmax
log_softmax = Tensor.log_softmax
cumsum = Tensor.cumsum
allclose = Tensor.allclose
equal = Tensor.equal

# shape and indexing
reshape = Tensor.reshape
flatten = Tensor.flatten
transpose = Tensor.transpose
swapaxes = Tensor.swapaxes
permute = Tensor.permute
unsqueeze = Tensor.unsqueeze
squeeze = Tensor.squeeze
t = Tensor.t
flip = Tensor.flip
chunk = Tensor.chunk
split = Tensor.split
unbind = Tensor.unbind
gather = Tensor.gather
index_select = Tensor.index_select
diagonal = Tensor.diagonal
diag_embed = Tensor.diag_embed
diag = Tensor.diag
tril = Tensor.tril
triu = Tensor.triu
trace = Tensor.trace

# products
dot = Tensor.dot
mm = Tensor.mm
bmm = Tensor.bmm

# graph and storage
clone = Tensor.clone
detach = Tensor.detach
numel = Tensor.numel

# ---- issue 13: the torch names ports hit (math, sorting and selection, shape and scatter).
# (The function-only ones live in combine.py.)
absolute = Tensor.absolute
acos = arccos = Tensor.acos
acosh = arccosh = Tensor.acosh
addcdiv = Tensor.addcdiv
addcmul = Tensor.addcmul
addmm = Tensor.addmm
addmv = Tensor.addmv
all = Tensor.all
aminmax = Tensor.aminmax
any = Tensor.any
argsort = Tensor.argsort
argwhere = Tensor.argwhere
asin = arcsin = Tensor.asin
asinh = arcsinh = Tensor.asinh
atan = arctan = Tensor.atan
atan2 = arctan2 = Tensor.atan2
atanh = arctanh = Tensor.atanh
baddbmm = Tensor.baddbmm
bincount = Tensor.bincount
clamp_max = Tensor.clamp_max
clamp_min = Tensor.clamp_min
clip = Tensor.clip
copysign = Tensor.copysign
corrcoef = Tensor.corrcoef
cosh = Tensor.cosh
count_nonzero = Tensor.count_nonzero
cov = Tensor.cov
cummax = Tensor.cummax
cummin = Tensor.cummin
cumprod = Tensor.cumprod
deg2rad = Tensor.deg2rad
diff = Tensor.diff
digamma = Tensor.digamma
dist = Tensor.dist
divide = Tensor.divide
dsplit = Tensor.dsplit
erf = Tensor.erf
erfc = Tensor.erfc
erfinv = Tensor.erfinv
exp2 = Tensor.exp2
fliplr = Tensor.fliplr
flipud = Tensor.flipud
float_power = Tensor.float_power
fmax = Tensor.fmax
fmin = Tensor.fmin
fmod = Tensor.fmod
frac = Tensor.frac
ger = Tensor.ger
heaviside = Tensor.heaviside
hsplit = Tensor.hsplit
hypot = Tensor.hypot
index_add = Tensor.index_add
index_copy = Tensor.index_copy
index_fill = Tensor.index_fill
inner = Tensor.inner
isclose = Tensor.isclose
isneginf = Tensor.isneginf
isposinf = Tensor.isposinf
isreal = Tensor.isreal
kron = Tensor.kron
kthvalue = Tensor.kthvalue
i0 = Tensor.i0
lgamma = Tensor.lgamma
lerp = Tensor.lerp
log10 = Tensor.log10
log2 = Tensor.log2
logaddexp = Tensor.logaddexp
logaddexp2 = Tensor.logaddexp2
logcumsumexp = Tensor.logcumsumexp
logical_and = Tensor.logical_and
logical_not = Tensor.logical_not
logical_or = Tensor.logical_or
logical_xor = Tensor.logical_xor
logit = Tensor.logit
masked_select = Tensor.masked_select
median = Tensor.median
mode = Tensor.mode
moveaxis = Tensor.moveaxis
movedim = Tensor.movedim
msort = Tensor.msort
mvlgamma = Tensor.mvlgamma
multiply = Tensor.multiply
mv = Tensor.mv
nan_to_num = Tensor.nan_to_num
nanmean = Tensor.nanmean
nanmedian = Tensor.nanmedian
nanquantile = Tensor.nanquantile
nansum = Tensor.nansum
narrow = Tensor.narrow
negative = Tensor.negative
nonzero = Tensor.nonzero
positive = Tensor.positive
quantile = Tensor.quantile
rad2deg = Tensor.rad2deg
ravel = Tensor.ravel
repeat_interleave = Tensor.repeat_interleave
roll = Tensor.roll
rot90 = Tensor.rot90
scatter = Tensor.scatter
scatter_add = Tensor.scatter_add
scatter_reduce = Tensor.scatter_reduce
select = Tensor.select
sgn = Tensor.sgn
signbit = Tensor.signbit
sinc = Tensor.sinc
sinh = Tensor.sinh
sort = Tensor.sort
subtract = Tensor.subtract
swapdims = Tensor.swapdims
take = Tensor.take
take_along_dim = Tensor.take_along_dim
tan = Tensor.tan
tensor_split = Tensor.tensor_split
tile = Tensor.tile
topk = Tensor.topk
true_divide = Tensor.true_divide
unique = Tensor.unique
vdot = Tensor.vdot
vsplit = Tensor.vsplit
xlogy = Tensor.xlogy
