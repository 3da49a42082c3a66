"""Einstein summation, built from minigrad ops (diagonal, expand, sum, permute, reshape,
matmul), so gradients of every order come from those ops' own backwards; and tensordot, one
op of its own (ops/matmul.py's TensorDot: a node per call, not one per permute and reshape).

einsum follows torch: subscripts in [a-zA-Z], spaces ignored, one ``...`` per operand
(broadcast like numpy, aligned on the right), a subscript of size 1 broadcasts against the
others, the implicit output is ``...`` then the subscripts seen once, in ASCII order, and
the sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])``. Three or more operands are
contracted pairwise along the path of fewest multiply-adds (exhaustive up to _OPTIMAL_MAX
operands, greedy beyond).
"""

from __future__ import annotations

import itertools
import math
import string
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ._dims import check_distinct
from .ops.matmul import TensorDot
from .tensor import Tensor

_LETTERS = string.ascii_uppercase + string.ascii_lowercase  # torch's sublist order: A-Z, a-z
_OPTIMAL_MAX = 6

# A label is a letter, or ("...", k) for the k-th dimension of the broadcast ellipsis,
# counted from its right end, so that shorter ellipses line up on the right.
Label = Any


def einsum(equation: Any, *operands: Any) -> Tensor:
    """sum over the repeated subscripts of the product of the operands, e.g. ``'ij,jk->ik'``.

    >>> a, b = mg.ones(2, 3), mg.ones(3, 4)
    >>> mg.einsum("ij,jk->ik", a, b).shape
    (2, 4)
    """
    if not isinstance(equation, str):
        equation, operands = _from_sublists((equation, *operands))
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    for i, op in enumerate(operands):
        if not isinstance(op, Tensor):
            raise TypeError(f"einsum(): operand {i} must be a Tensor, not {type(op).__name__}")
    inputs, output = _parse(equation, [op.ndim for op in operands])
    sizes = _sizes(inputs, operands)
    if output is None:
        counts = Counter(lab for labs in inputs for lab in labs)
        dots = sorted({lab for labs in inputs for lab in labs if isinstance(lab, tuple)},
                      key=lambda lab: -lab[1])
        output = dots + sorted(lab for lab, c in counts.items()
                               if isinstance(lab, str) and c == 1)
    terms = [_prepare(op, labs, sizes, inputs, output, i)
             for i, (op, labs) in enumerate(zip(operands, inputs))]
    while len(terms) > 1:
        i, j = _next_pair(terms, output, sizes)
        a, b = terms[i], terms[j]
        rest = [t for k, t in enumerate(terms) if k not in (i, j)]
        keep = set(output).union(*(labs for _, labs in rest))
        terms = rest + [_contract(a, b, keep, sizes)]
    t, labs = terms[0]
    extra = [d for d, lab in enumerate(labs) if lab not in output]
    if extra:
        t = t.sum(extra)
        labs = [lab for lab in labs if lab in output]
    perm = [labs.index(lab) for lab in output]
    if perm == list(range(len(perm))) and all(t is not op for op in operands):
        return t
    return t.permute(*perm)  # an operand itself comes back as a view of it, as in torch


def _from_sublists(args: tuple) -> tuple[str, tuple]:
    """einsum(op0, sub0, op1, sub1, ..., [out]) as an equation string and the operands."""
    out = None
    if len(args) % 2 == 1:
        args, out = args[:-1], args[-1]
    ops, subs = args[0::2], args[1::2]

    def spell(sub: Sequence) -> str:
        s = ""
        for v in sub:
            if v is Ellipsis:
                s += "..."
            elif isinstance(v, int) and 0 <= v < len(_LETTERS):
                s += _LETTERS[v]
            else:
                raise ValueError(f"einsum(): expected subscript to be in [0, {len(_LETTERS)})"
                                 f" or Ellipsis, got {v!r}")
        return s

    eq = ",".join(spell(s) for s in subs) + ("" if out is None else "->" + spell(out))
    return eq, tuple(ops)


def _parse(equation: str, ndims: list[int]) -> tuple[list[list], list | None]:
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    if "->" in rhs:
        at = eq.index("->", len(lhs) + 2) + 1
        raise RuntimeError(f"einsum(): invalid subscript given at index {at} in the equation "
                           "string, subscripts must be in [a-zA-Z]")
    parts = lhs.split(",")
    if len(parts) > len(ndims):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the "
                           "equation")
    if len(parts) < len(ndims):
        raise RuntimeError("einsum(): more operands were provided than specified in the "
                           "equation")
    inputs = []
    pos = 0
    for i, (part, nd) in enumerate(zip(parts, ndims)):
        letters, ell = _letters(part, pos, f"for operand {i}", eq)
        pos += len(part) + 1
        if ell is None:
            if len(letters) != nd:
                raise RuntimeError(
                    f"einsum(): the number of subscripts in the equation ({len(letters)}) does "
                    f"not match the number of dimensions ({nd}) for operand {i} and no "
                    "ellipsis was given")
            inputs.append(letters)
            continue
        n_ell = nd - len(letters)
        if n_ell < 0:
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({len(letters)}) is more "
                f"than the number of dimensions ({nd}) for operand {i}")
        dots = [("...", k) for k in range(n_ell - 1, -1, -1)]
        inputs.append(letters[:ell] + dots + letters[ell:])
    if not arrow:
        return inputs, None
    letters, ell = _letters(rhs, len(lhs) + 2, "in the output", eq)
    for lab, c in Counter(letters).items():
        if c > 1:
            raise RuntimeError(f"einsum(): output subscript {lab} appears more than once in "
                               "the output")
    seen = {lab for labs in inputs for lab in labs}
    for lab in letters:
        if lab not in seen:
            raise RuntimeError(f"einsum(): output subscript {lab} does not appear in the "
                               "equation for any input operand")
    if ell is None:
        return inputs, letters
    n_ell = max((sum(isinstance(lab, tuple) for lab in labs) for labs in inputs), default=0)
    dots = [("...", k) for k in range(n_ell - 1, -1, -1)]
    return inputs, letters[:ell] + dots + letters[ell:]


def _letters(part: str, start: int, where: str, eq: str) -> tuple[list[str], int | None]:
    """The subscripts of one term and the position of its ellipsis (None if it has none)."""
    letters: list[str] = []
    ell = None
    i = 0
    while i < len(part):
        ch = part[i]
        if ch == ".":
            if part[i:i + 3] != "...":
                raise RuntimeError(f"einsum(): found '.' {where} that is not part of any "
                                   "ellipsis")
            if ell is not None:
                raise RuntimeError(f"einsum(): found '.' {where} for which an ellipsis was "
                                   "already found")
            ell = len(letters)
            i += 3
            continue
        if ch not in _LETTERS:
            raise RuntimeError(f"einsum(): invalid subscript given at index {start + i} in "
                               "the equation string, subscripts must be in [a-zA-Z]")
        letters.append(ch)
        i += 1
    return letters, ell


def _sizes(inputs: list[list], operands: Sequence[Tensor]) -> dict:
    """Each label's size; a size of 1 broadcasts against any other, as in torch."""
    sizes: dict = {}
    for i, (labs, op) in enumerate(zip(inputs, operands)):
        own: dict = {}
        for lab, n in zip(labs, op.shape):
            if lab in own and own[lab] != n:
                raise RuntimeError(f"einsum(): subscript {lab} is repeated for operand {i} but "
                                   f"the sizes don't match, {n} != {own[lab]}")
            own[lab] = n
            old = sizes.get(lab)
            if old is None or old == 1:
                sizes[lab] = n
            elif n != 1 and n != old:
                name = "..." if isinstance(lab, tuple) else lab
                raise RuntimeError(f"einsum(): subscript {name} has size {n} for operand {i} "
                                   f"which does not broadcast with previously seen size {old}")
    return sizes


def _prepare(t: Tensor, labs: list, sizes: dict, inputs: list[list], output: list,
             i: int) -> tuple[Tensor, list]:
    """One operand with its repeated subscripts reduced to diagonals, its size-1 broadcast
    dims expanded, and the subscripts that appear nowhere else summed out."""
    labs = list(labs)
    while len(set(labs)) < len(labs):
        lab = next(lab for lab, c in Counter(labs).items() if c > 1)
        d1 = labs.index(lab)
        d2 = labs.index(lab, d1 + 1)
        t = t.diagonal(0, d1, d2)  # the diagonal goes last
        labs = [x for k, x in enumerate(labs) if k not in (d1, d2)] + [lab]
    shape = tuple(sizes[lab] for lab in labs)
    if tuple(t.shape) != shape:
        t = t.expand(*shape)
    others = set(output).union(*(x for k, x in enumerate(inputs) if k != i))
    alone = [d for d, lab in enumerate(labs) if lab not in others]
    if alone:
        t = t.sum(alone)
        labs = [lab for lab in labs if lab in others]
    return t, labs


def _contract(a: tuple[Tensor, list], b: tuple[Tensor, list], keep: set,
              sizes: dict) -> tuple[Tensor, list]:
    """The pairwise contraction as one batched matmul: (batch, left, sum) @ (batch, sum, right)."""
    (x, lx), (y, ly) = a, b
    x, lx = _sum_unused(x, lx, set(ly) | keep)
    y, ly = _sum_unused(y, ly, set(lx) | keep)
    batch = [lab for lab in lx if lab in ly and lab in keep]
    summed = [lab for lab in lx if lab in ly and lab not in keep]
    left = [lab for lab in lx if lab not in ly]
    right = [lab for lab in ly if lab not in lx]
    x = _arrange(x, lx, batch + left + summed)
    y = _arrange(y, ly, batch + summed + right)
    nb = [sizes[lab] for lab in batch]
    m, k, n = (math.prod(sizes[lab] for lab in g) for g in (left, summed, right))
    out = x.reshape(*nb, m, k) @ y.reshape(*nb, k, n)
    out = out.reshape(*nb, *(sizes[lab] for lab in left), *(sizes[lab] for lab in right))
    return out, batch + left + right


def _sum_unused(t: Tensor, labs: list, needed: set) -> tuple[Tensor, list]:
    gone = [d for d, lab in enumerate(labs) if lab not in needed]
    if not gone:
        return t, labs
    return t.sum(gone), [lab for lab in labs if lab in needed]


def _arrange(t: Tensor, labs: list, order: list) -> Tensor:
    perm = [labs.index(lab) for lab in order]
    return t if perm == list(range(len(perm))) else t.permute(*perm)


def _next_pair(terms: list[tuple[Tensor, list]], output: list, sizes: dict) -> tuple[int, int]:
    """The two terms to contract next on the path of fewest multiply-adds (exhaustive for
    few terms, greedy beyond)."""
    sets = [frozenset(labs) for _, labs in terms]
    if len(sets) <= 2:
        return 0, 1
    if len(sets) > _OPTIMAL_MAX:
        return _greedy_pair(sets, frozenset(output), sizes)
    return _optimal_first(sets, frozenset(output), sizes)


def _flops(a: frozenset, b: frozenset, sizes: dict) -> int:
    return math.prod(sizes[lab] for lab in a | b)


def _greedy_pair(sets: list[frozenset], out: frozenset, sizes: dict) -> tuple[int, int]:
    """The pair whose result shrinks the total size most, then the cheapest (opt_einsum's
    greedy rule)."""
    def size(labs: frozenset) -> int:
        return math.prod(sizes[lab] for lab in labs)

    best = None
    for i, j in itertools.combinations(range(len(sets)), 2):
        rest = out.union(*(s for k, s in enumerate(sets) if k not in (i, j)))
        joined = (sets[i] | sets[j]) & rest
        key = (size(joined) - size(sets[i]) - size(sets[j]), _flops(sets[i], sets[j], sizes))
        if best is None or key < best[0]:
            best = (key, (i, j))
    return best[1]


def _optimal_first(sets: list[frozenset], out: frozenset, sizes: dict) -> tuple[int, int]:
    """The first pair of the cheapest contraction tree, by dynamic programming over subsets."""
    n = len(sets)
    full = (1 << n) - 1

    def labels(mask: int) -> frozenset:
        inside = frozenset().union(*(sets[i] for i in range(n) if mask >> i & 1))
        outside = out.union(*(sets[i] for i in range(n) if not mask >> i & 1))
        return inside & outside

    lab = {1 << i: labels(1 << i) for i in range(n)}
    cost = {1 << i: 0 for i in range(n)}
    split: dict[int, tuple[int, int]] = {}
    for mask in sorted(range(1, full + 1), key=lambda m: bin(m).count("1")):
        if mask in cost:
            continue
        lab[mask] = labels(mask)
        best = None
        sub = (mask - 1) & mask
        while sub:
            rest = mask ^ sub
            if sub < rest:  # each split once
                c = cost[sub] + cost[rest] + _flops(lab[sub], lab[rest], sizes)
                if best is None or c < best[0]:
                    best = (c, sub, rest)
            sub = (sub - 1) & mask
        cost[mask] = best[0]
        split[mask] = (best[1], best[2])

    # The deepest first contraction of the tree: descend until a split joins two leaves...
    def first(mask: int) -> tuple[int, int] | None:
        if mask not in split:
            return None
        a, b = split[mask]
        for part in (a, b):
            f = first(part)
            if f is not None:
                return f
        return a, b

    a, b = first(full)
    return (a.bit_length() - 1, b.bit_length() - 1)


def tensordot(a: Tensor, b: Tensor, dims: Any = 2) -> Tensor:
    """Contract the last ``dims`` dims of a with the first ``dims`` of b, or the dims listed
    in ``dims = (dims_a, dims_b)``; the rest of a's dims then the rest of b's, as in torch.

    >>> mg.tensordot(mg.ones(2, 3, 4), mg.ones(3, 4, 5)).shape
    (2, 5)
    """
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
        if len(da) != len(db):
            raise RuntimeError(f"both dimension lists should have same length, got {len(da)} "
                               f"and {len(db)}")
    da = [d % a.ndim if a.ndim else d for d in da]
    db = [d % b.ndim if b.ndim else d for d in db]
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[x]} in dim {x} and second has size {b.shape[y]} "
                               f"in dim {y}")
    check_distinct(da)
    check_distinct(db)
    ra = tuple([d for d in range(a.ndim) if d not in da])
    rb = tuple([d for d in range(b.ndim) if d not in db])
    return TensorDot.apply(a, b, ra, tuple(da), tuple(db), rb)
