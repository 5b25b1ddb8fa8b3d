"""einsum: Einstein summation over any number of operands.

The public function parses the equation once into one term of letters per operand
(an ellipsis becomes fresh letters), broadcasts size-1 dims with ``expand`` and
hands an explicit equation to the `Einsum` Function.  Its backward is einsum again:
the gradient of operand i is the einsum of the output gradient with the other
operands, written to operand i's term.  Letters repeated within operand i (a
diagonal) are routed through identity matrices, and letters summed away inside
operand i alone through vectors of ones, so the backward is one einsum call.
"""

from __future__ import annotations

import string

import numpy as np

from .._core.function import Function
from .._core.tensor import Tensor, _make
from ._util import check_same_device, xp_of
from .linalg import _short, conj, widen

LETTERS = string.ascii_lowercase + string.ascii_uppercase


def _equation(terms, out_term) -> str:
    return ",".join(terms) + "->" + out_term


class Einsum(Function):
    @staticmethod
    def forward(ctx, *arrays, terms, out_term):
        ctx.terms, ctx.out_term = terms, out_term
        ctx.sizes = _letter_sizes(terms, [a.shape for a in arrays])
        ctx.save_for_backward(*arrays)
        xp = xp_of(arrays[0])
        dtype = arrays[0].dtype
        wide = widen(*arrays) if xp is np else arrays
        out = xp.einsum(_equation(terms, out_term), *wide, optimize=len(arrays) > 1)
        out = xp.asarray(out).astype(dtype, copy=False)
        # NOTE: a one-operand einsum may return a view of its input (a transpose, a
        # diagonal); this op is not a view op, so it must own its result.
        if any(xp.may_share_memory(out, a) for a in arrays):
            out = out.copy()
        return out

    @staticmethod
    def backward(ctx, grad):
        operands = ctx.saved_tensors
        grads = []
        for i, term in enumerate(ctx.terms):
            if ctx._edges[i][0] is None:
                grads.append(None)
                continue
            grads.append(_operand_grad(i, term, grad, operands, ctx))
        return tuple(grads)


def _letter_sizes(terms, shapes) -> dict:
    sizes = {}
    for term, shape in zip(terms, shapes):
        for letter, size in zip(term, shape):
            sizes[letter] = size
    return sizes


def _operand_grad(i: int, term: str, grad: Tensor, operands, ctx) -> Tensor:
    in_terms = [ctx.out_term] + [t for j, t in enumerate(ctx.terms) if j != i]
    # the gradient of a product is the other factors' conjugate (for complex operands)
    in_ops = [grad] + [conj(op) for j, op in enumerate(operands) if j != i]
    used = set("".join(ctx.terms) + ctx.out_term)
    fresh = (c for c in LETTERS if c not in used)
    xp = xp_of(grad._data)
    dtype = grad._data.dtype
    elsewhere = set("".join(in_terms))
    target = []
    seen = set()
    for letter in term:
        n = ctx.sizes[letter]
        if letter in seen:
            # a repeated letter: a diagonal of operand i; spread the gradient onto it
            new = next(fresh)
            in_terms.append(letter + new)
            in_ops.append(_make(xp.eye(n, dtype=dtype)))
            target.append(new)
            continue
        seen.add(letter)
        if letter not in elsewhere:
            # summed within operand i only: the gradient is constant along it
            in_terms.append(letter)
            in_ops.append(_make(xp.ones(n, dtype=dtype)))
            elsewhere.add(letter)
        target.append(letter)
    return Einsum.apply(*in_ops, terms=tuple(in_terms), out_term="".join(target))


def _parse_term(term: str, index: int, ndim: int | None, op_index: int) -> list:
    """Letters of one operand's subscripts ('...' kept as one token); `ndim` None for the
    output term."""
    labels = []
    pos = 0
    while pos < len(term):
        if term.startswith("...", pos):
            if "..." in labels:
                raise RuntimeError(f"einsum(): found '.' for operand {op_index} for which an "
                                   "ellipsis was already found")
            labels.append("...")
            pos += 3
            continue
        c = term[pos]
        if c not in LETTERS:
            raise RuntimeError(f"einsum(): invalid subscript given at index {index + pos} in the "
                               "equation string, subscripts must be in [a-zA-Z]")
        labels.append(c)
        pos += 1
    named = len(labels) - ("..." in labels)
    if ndim is None:
        return labels
    if "..." not in labels and named != ndim:
        raise RuntimeError(
            f"einsum(): the number of subscripts in the equation ({named}) does not match the "
            f"number of dimensions ({ndim}) for operand {op_index} and no ellipsis was given")
    if "..." in labels and named > ndim:
        raise RuntimeError(
            f"einsum(): the number of subscripts in the equation ({named}) is more than the "
            f"number of dimensions ({ndim}) for operand {op_index}")
    return labels


def _sublist_equation(args):
    """Turn the sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` into an equation."""
    def letters(sub):
        out = []
        for s in sub:
            if s is Ellipsis:
                out.append("...")
            elif isinstance(s, int) and 0 <= s < len(LETTERS):
                out.append(LETTERS[s])
            else:
                raise ValueError(f"einsum(): subscript in subscript list is not within the valid "
                                 f"range [0, 52), got {s}")
        return "".join(out)

    args = list(args)
    out_sub = args.pop() if len(args) % 2 == 1 else None
    operands = args[0::2]
    terms = [letters(sub) for sub in args[1::2]]
    equation = ",".join(terms) + ("" if out_sub is None else "->" + letters(out_sub))
    return equation, operands


def einsum(equation, *operands) -> Tensor:
    """Sum products of the operands' elements over the indices named in `equation`.

    ``einsum('ij,jk->ik', a, b)`` is a matrix product; '...' stands for any number of
    leading (broadcast) dims; without '->' the output holds the letters used once, in
    alphabetical order.  Operands may also be passed as one list.

    >>> ember.einsum('bij,bjk->bik', ember.ones(2, 3, 4), ember.ones(2, 4, 5)).shape
    ember.Size([2, 3, 5])
    """
    if not isinstance(equation, str):
        equation, operands = _sublist_equation((equation,) + operands)
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    for t in operands:
        if not isinstance(t, Tensor):
            raise TypeError(f"einsum(): operands must be Tensors, not {type(t).__name__}")
    check_same_device("einsum", *operands)
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    raw_terms = lhs.split(",")
    if len(raw_terms) > len(operands):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the "
                           "equation")
    if len(raw_terms) < len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the "
                           "equation")
    parsed = []
    offset = 0
    for k, (term, op) in enumerate(zip(raw_terms, operands)):
        parsed.append(_parse_term(term, offset, op.dim(), k))
        offset += len(term) + 1
    used = set(c for labels in parsed for c in labels if c != "...")
    ell_ndim = max((op.dim() - (len(labels) - 1) for labels, op in zip(parsed, operands)
                    if "..." in labels), default=0)
    spare = [c for c in LETTERS if c not in used]
    if ell_ndim > len(spare):
        raise RuntimeError("einsum(): too many dimensions for the available subscript letters")
    ell = "".join(spare[:ell_ndim])
    terms = []
    for labels, op in zip(parsed, operands):
        if "..." in labels:
            n = op.dim() - (len(labels) - 1)
            labels = [ell[ell_ndim - n:] if c == "..." else c for c in labels]
        terms.append("".join(labels))
    if arrow:
        out_labels = _parse_term(rhs, len(lhs) + 2, None, -1) if rhs else []
        out_term = ""
        for c in out_labels:
            if c == "...":
                out_term += ell
                continue
            if c in out_term:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in "
                                   "the output")
            if c not in used:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the "
                                   "equation for any input operand")
            out_term += c
    else:
        counts = {}
        for labels in parsed:
            for c in labels:
                if c != "...":
                    counts[c] = counts.get(c, 0) + 1
        out_term = ell + "".join(sorted(c for c, n in counts.items() if n == 1))
    operands = _broadcast_operands(terms, list(operands))
    dtype = operands[0]._data.dtype
    for op in operands[1:]:
        if op._data.dtype != dtype:
            raise RuntimeError(f"expected scalar type {_short(operands[0])} but found "
                               f"{_short(op)}")
    if operands[0]._data.dtype == np.bool_:
        raise NotImplementedError("einsum(): bool operands are not supported")
    return Einsum.apply(*operands, terms=tuple(terms), out_term=out_term)


def _broadcast_operands(terms, operands) -> list:
    """Check each letter's sizes agree (1 broadcasts) and expand size-1 dims to match."""
    sizes = {}
    for k, (term, op) in enumerate(zip(terms, operands)):
        own = {}
        for c, s in zip(term, op.shape):
            if c in own and own[c] != s:
                raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {k} but the "
                                   f"sizes don't match, {own[c]} != {s}")
            own[c] = s
            if c not in sizes or sizes[c] == 1:
                sizes[c] = s
            elif s != 1 and s != sizes[c]:
                raise RuntimeError(f"einsum(): subscript {c} has size {s} for operand {k} which "
                                   f"does not broadcast with previously seen size {sizes[c]}")
    out = []
    for term, op in zip(terms, operands):
        want = tuple(sizes[c] for c in term)
        out.append(op if tuple(op.shape) == want else op.expand(want))
    return out
