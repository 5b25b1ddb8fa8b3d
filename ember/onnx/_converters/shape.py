"""Shape ops: reshape/view, squeeze/unsqueeze, transposes, expand, slicing and
indexing, split/chunk/unbind, cat/stack, repeat, flip, roll, tril/triu, pad.

Reshape, expand and slicing are "dynamic" converters: when a dynamic dim changes
their arguments between the two traces, a Reshape gets 0 (copy the input's dim) or
-1 where the traced size was the dynamic one, an Expand keeps the input's own dim
(1 in the target), and a slice bound that follows the end of a dynamic dim is written
relative to the end.
"""

from __future__ import annotations

import numpy as np

from ...ops import indexing, joining, padding, scatter, shape, slicing
from ...ops import distance, index_dim
from .._convert import INT64_MAX, Call, UnsupportedOperatorError


def dynamic(convert):
    """Mark a converter that handles arguments varying with the dynamic dims."""
    convert.dynamic = True
    return convert


# ---------------------------------------------------------------------------
# reshape


@dynamic
def convert_view(c: Call) -> None:
    x = c.input(0)
    target, target2 = tuple(c.arg(1)), tuple(c.arg2(1))
    in1, in2 = c.shape(0), c.shape2(0)
    if target == target2:
        c.done(c.reshape(x, target))
        return
    entries, unresolved = [], []
    for i, (a, b) in enumerate(zip(target, target2)):
        if a == b:
            entries.append(a)
        elif i < len(in1) and (in1[i], in2[i]) == (a, b):
            entries.append(0)  # Reshape's "copy the input's dim"
        else:
            entries.append(None)
            unresolved.append(i)
    if len(unresolved) == 1:
        entries[unresolved[0]] = -1
        c.done(c.reshape(x, entries))
        return
    # several dims follow dynamic sizes: all but (at most) one from Shape ops
    parts, run, inferred = [], [], False
    for i, e in enumerate(entries):
        if e is not None:
            run.append(e)
            continue
        try:
            dim = c.dim_value(target[i], target2[i])
        except UnsupportedOperatorError:
            if inferred:
                raise
            inferred = True
            run.append(-1)
            continue
        if run:
            parts.append(c.ints(run))
            run = []
        parts.append(dim)
    if run:
        parts.append(c.ints(run))
    spec = parts[0] if len(parts) == 1 else c.op("Concat", *parts, axis=0)
    c.done(c.op("Reshape", x, spec))


def convert_squeeze(c: Call) -> None:
    dims = tuple(c.arg(1))
    x = c.input(0)
    c.done(c.squeeze(x, dims) if dims else c.op("Identity", x))


def convert_unsqueeze(c: Call) -> None:
    c.done(c.unsqueeze(c.input(0), [c.arg(1)]))


def convert_permute(c: Call) -> None:
    c.done(c.transpose(c.input(0), c.arg(1)))


def convert_transpose(c: Call) -> None:
    perm = list(range(len(c.shape(0))))
    d0, d1 = c.arg(1), c.arg(2)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    c.done(c.transpose(c.input(0), perm))


def convert_t(c: Call) -> None:
    x = c.input(0)
    c.done(c.transpose(x, (1, 0)) if len(c.shape(0)) == 2 else c.op("Identity", x))


@dynamic
def convert_expand(c: Call) -> None:
    x = c.input(0)
    target, target2 = tuple(c.arg(1)), tuple(c.arg2(1))
    in1, in2 = c.shape(0), c.shape2(0)
    lead = len(target) - len(in1)
    spec1, spec2 = [], []
    for i, (a, b) in enumerate(zip(target, target2)):
        j = i - lead
        if j >= 0 and (in1[j], in2[j]) == (a, b):
            a = b = 1  # Expand broadcasts: 1 keeps the input's own size
        spec1.append(a)
        spec2.append(b)
    c.done(c.op("Expand", x, c.shape_tensor(spec1, spec2)))


# ---------------------------------------------------------------------------
# slicing


def _bound(c: Call, value, n1: int, n2: int, value2, what: str):
    """A slice bound (or int index) on a dim of size n1 (n2 in the check trace): an int,
    or the ONNX name of a 1-element tensor when it follows a dynamic size elsewhere."""
    if value == value2:
        return value
    if value - n1 == value2 - n2:
        return value - n1 if value != n1 else INT64_MAX
    try:
        return c.dim_value(value, value2)  # e.g. pe[:, :x.size(1)]
    except UnsupportedOperatorError:
        c.fail(f"the {what} {value} depends on a dynamic dim in a way ONNX Slice cannot "
               "express")


def _int_tensor(c: Call, items: list) -> str:
    """A 1-D int64 tensor of ints and 1-element tensors (by name)."""
    if all(not isinstance(i, str) for i in items):
        return c.ints(items)
    parts = [i if isinstance(i, str) else c.ints([i]) for i in items]
    return c.op("Concat", *parts, axis=0)


@dynamic
def convert_subview(c: Call) -> None:
    """``x[key]`` for ints, slices, None and Ellipsis: Slice, then Squeeze the int dims,
    then Unsqueeze the None dims."""
    key, key2 = c.arg(1), c.arg2(1)
    in1, in2 = c.shape(0), c.shape2(0)
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    starts, ends, axes, steps, squeeze, unsqueeze = [], [], [], [], [], []
    d = out = 0
    for k, k2 in zip(key, key2):
        if k is Ellipsis:
            d += len(in1) - used
            out += len(in1) - used
        elif k is None:
            unsqueeze.append(out)
            out += 1
        elif isinstance(k, slice):
            step = k.step or 1
            start = 0 if k.start is None else _bound(c, k.start, in1[d], in2[d], k2.start,
                                                     "slice start")
            stop = INT64_MAX if k.stop is None else _bound(c, k.stop, in1[d], in2[d], k2.stop,
                                                           "slice end")
            if (start, stop, step) != (0, INT64_MAX, 1):
                starts.append(start)
                ends.append(stop)
                axes.append(d)
                steps.append(step)
            d += 1
            out += 1
        else:  # an int index
            i = _bound(c, int(k), in1[d], in2[d], int(k2), "index")
            if isinstance(i, str):
                c.fail(f"the index {k} depends on a dynamic dim")
            starts.append(i)
            ends.append(i + 1 if i != -1 else INT64_MAX)
            axes.append(d)
            steps.append(1)
            squeeze.append(d)
            d += 1
    x = c.input(0)
    if axes:
        x = c.op("Slice", x, _int_tensor(c, starts), _int_tensor(c, ends), c.ints(axes),
                 c.ints(steps))
    if squeeze:
        x = c.squeeze(x, squeeze)
    if unsqueeze:
        x = c.unsqueeze(x, unsqueeze)
    if not (axes or squeeze or unsqueeze):
        x = c.op("Identity", x)
    c.done(x)


def convert_split(c: Call) -> None:
    sizes = [int(s) for s in c.arg(2)]
    outs = c.op("Split", c.input(0), c.ints(sizes), axis=int(c.arg(1)), outputs=len(sizes))
    c.done(*([outs] if len(sizes) == 1 else outs))


def convert_unbind(c: Call) -> None:
    dim = int(c.arg(1))
    c.static_dims(0, [dim], "unbind makes one output per index")
    n = c.shape(0)[dim]
    parts = c.op("Split", c.input(0), c.ints([1] * n), axis=dim, outputs=n)
    parts = [parts] if n == 1 else parts
    c.done(*[c.squeeze(p, [dim]) for p in parts])


def convert_index_select(c: Call) -> None:
    index = c.get_input(2, "index")
    c.done(c.op("Gather", c.input(0), index, axis=int(c.get(1, "dim"))))


def convert_gather(c: Call) -> None:
    index = c.get_input(2, "index")
    c.done(c.op("GatherElements", c.input(0), index, axis=int(c.get(1, "dim"))))


def _scatter(c: Call, reduction: str) -> None:
    x = c.input(0)
    index_shape = tuple(np.shape(c.param("index")))
    if c.is_tensor(1):
        updates = c.input(1)
        if c.shape(1) != index_shape:
            updates = c.slice(updates, [0] * len(index_shape), index_shape,
                              range(len(index_shape)))
    else:
        updates = c.op("Expand", c.const(c.arg(1), c.dtype(0)), c.ints(index_shape))
    if reduction != "none" and c.opset < 16:
        c.fail("scatter with a reduction needs opset 16 or later")
    attrs = {"reduction": reduction} if reduction != "none" else {}
    c.done(c.op("ScatterElements", x, c.param_input("index"), updates,
                axis=int(c.param("dim")), **attrs))


def convert_scatter(c: Call) -> None:
    reduce = c.param("reduce")
    _scatter(c, {None: "none", "add": "add", "multiply": "mul"}[reduce])


def convert_scatter_add(c: Call) -> None:
    _scatter(c, "add")


def convert_masked_fill(c: Call) -> None:
    x = c.input(0)
    value = c.input(1, like=0)
    if c.is_tensor(1) and c.dtype(1) != c.dtype(0):
        value = c.cast(value, c.dtype(0))
    c.done(c.op("Where", c.param_input("mask"), value, x))


# ---------------------------------------------------------------------------
# joining


def convert_cat(c: Call) -> None:
    dim = int(c.param("dim"))
    ndim = len(c.out_shape())
    parts = [c.input(i) for i in range(c.n_args())
             if not (c.shape(i) == (0,) and ndim > 1)]
    c.done(c.op("Concat", *parts, axis=dim) if len(parts) > 1 else c.op("Identity", parts[0]))


def convert_stack(c: Call) -> None:
    dim = int(c.param("dim"))
    parts = [c.unsqueeze(c.input(i), [dim]) for i in range(c.n_args())]
    c.done(c.op("Concat", *parts, axis=dim) if len(parts) > 1 else parts[0])


def convert_repeat(c: Call) -> None:
    x = c.input(0)
    repeats = [int(r) for r in c.arg(1)]
    extra = len(repeats) - len(c.shape(0))
    if extra:
        x = c.unsqueeze(x, range(extra))
    c.done(c.op("Tile", x, c.ints(repeats)))


def convert_flip(c: Call) -> None:
    dims = [int(d) for d in c.arg(1)]
    if not dims:
        c.done(c.op("Identity", c.input(0)))
        return
    n = len(dims)
    c.done(c.slice(c.input(0), [-1] * n, [-INT64_MAX] * n, dims, [-1] * n))


def convert_roll(c: Call) -> None:
    x = c.input(0)
    shifts, dims = c.arg(1), c.arg(2)
    full = c.shape(0)
    c.static_dims(0, range(len(full)) if not dims else dims, "roll shifts")
    if not dims:
        x = c.reshape(x, [-1])
        shape_dims = [(0, int(np.prod(full)))]
    else:
        shape_dims = [(int(d), full[int(d)]) for d in dims]
    for s, (d, n) in zip(shifts, shape_dims):
        s = int(s) % n if n else 0
        if s:
            tail = c.slice(x, [n - s], [n], [d])
            head = c.slice(x, [0], [n - s], [d])
            x = c.op("Concat", tail, head, axis=d)
    if not dims:
        x = c.reshape(x, full)
    c.done(x if x != c.input(0) else c.op("Identity", x))


def convert_tril(c: Call) -> None:
    upper = int(issubclass(c.cls, joining.Triu))
    c.done(c.op("Trilu", c.input(0), c.const(np.int64(c.arg(1))), upper=upper))


def convert_constant_pad(c: Call) -> None:
    pairs = c.arg(1)
    ndim = len(c.shape(0))
    lead = ndim - len(pairs)
    begins = [0] * lead + [int(lo) for lo, _ in pairs]
    ends = [0] * lead + [int(hi) for _, hi in pairs]
    value = c.const(c.arg(2), c.dtype(0))
    c.done(c.op("Pad", c.input(0), c.ints(begins + ends), value, mode="constant"))


def convert_nonzero(c: Call) -> None:
    """nonzero: NonZero gives (ndim, n); ember's result is its transpose."""
    if not c.shape(0):
        c.fail("nonzero of a 0-dim tensor")
    c.done(c.transpose(c.op("NonZero", c.input(0)), [1, 0]))


def convert_one_hot(c: Call) -> None:
    if c.varies(1):
        c.fail("the number of classes was inferred from the values (pass num_classes)")
    values = c.const(np.array([0, 1], dtype=np.int64))
    c.done(c.op("OneHot", c.input(0), c.const(np.int64(c.arg(1))), values, axis=-1))


CONVERTERS = {
    shape.View: convert_view, shape.Reshape: convert_view,
    shape.Squeeze: convert_squeeze, shape.Unsqueeze: convert_unsqueeze,
    shape.Permute: convert_permute, shape.Transpose: convert_transpose, shape.T: convert_t,
    shape.Expand: convert_expand,
    slicing.Subview: convert_subview, slicing.Split: convert_split,
    slicing.Unbind: convert_unbind,
    indexing.MaskedFill: convert_masked_fill,
    indexing.Nonzero: convert_nonzero, distance.OneHot: convert_one_hot,
    index_dim.IndexSelect: convert_index_select, scatter.Gather: convert_gather,
    scatter.Scatter: convert_scatter, scatter.ScatterAdd: convert_scatter_add,
    joining.Cat: convert_cat, joining.Stack: convert_stack, joining.Repeat: convert_repeat,
    joining.Flip: convert_flip, joining.Roll: convert_roll,
    joining.Tril: convert_tril, joining.Triu: convert_tril,
    padding.ConstantPad: convert_constant_pad,
}
