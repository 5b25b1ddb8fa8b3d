"""Advanced indexing: ``x[key]`` with index tensors (Gather / GatherND) and
``x[key] = v`` / ``index_put`` (ScatterND), also with boolean masks.

ember turns a boolean mask into the arrays of its nonzero positions before the op runs,
outside the traced ops, so the record only holds those arrays.  When they change with
the inputs, the converter looks for the mask among the bool tensors of the trace (the
inputs and the outputs of earlier ops) whose nonzero positions are exactly these arrays
in both traces (the second one runs on other values), and computes the positions in the
graph with ``NonZero(mask)``.  A mask that matches nothing cannot be exported (it was
computed outside ember's traced ops) and is refused.

The indexed dims are moved to the front (Transpose), so that GatherND/ScatterND index
the leading dims with one (..., k) tensor of positions; the result is moved back to
NumPy's layout (the index dims stay in place when the index tensors are adjacent,
else they come first).
"""

from __future__ import annotations

import numpy as np

from ...ops import indexing
from .._convert import INT64_MAX, Call, same, to_numpy
from .._trace import Source

# ---------------------------------------------------------------------------
# the index columns


def _bool_tensors(c: Call):
    """(source, tensor, tensor in the check trace) of the bool tensors known before this
    record, the latest first."""
    check = c.ex.check
    seen = set()
    for rec in reversed(c.ex.trace.records[:c.rec.index]):
        for j, t in enumerate(rec.outputs):
            if t._data.dtype == np.bool_ and id(t) not in seen:
                seen.add(id(t))
                t2 = check.records[rec.index].outputs[j] if check is not None else t
                yield Source("op", (rec.index, j)), t, t2
    for i, t in enumerate(c.ex.trace.inputs):
        if t._data.dtype == np.bool_ and id(t) not in seen:
            t2 = check.inputs[i] if check is not None else t
            yield Source("input", i), t, t2


def _is_nonzero_of(mask, arrays) -> bool:
    mask = to_numpy(mask._data)
    if mask.ndim != len(arrays):
        return False
    return all(np.array_equal(a, to_numpy(b)) for a, b in zip(np.nonzero(mask), arrays))


def _find_mask(c: Call, arrays1: list, arrays2: list, dims1: tuple, dims2: tuple):
    """The ONNX name of a bool tensor whose nonzero positions are `arrays1` (over dims of
    sizes `dims1`) in the trace and `arrays2` in the check trace, or None."""
    for src, t1, t2 in _bool_tensors(c):
        if tuple(t1.shape) == dims1 and tuple(t2.shape) == dims2 and _is_nonzero_of(
                t1, arrays1) and _is_nonzero_of(t2, arrays2):
            try:
                return c.source_input(src)
            except Exception:  # noqa: BLE001 - (not converted: try the next candidate)
                continue
    return None


def _wrap_negative(c: Call, idx: str, x: str, axis: int, n: int | None) -> str:
    """Negative positions counted from the end of dim `axis` (of static size n, or None)."""
    size = c.const(np.int64(n)) if n is not None else c.op(
        "Gather", c.op("Shape", x), c.const(np.int64(axis)), axis=0)
    negative = c.op("Less", idx, c.const(np.int64(0)))
    return c.op("Where", negative, c.op("Add", idx, size), idx)


def _columns(c: Call, x: str, key, sources, key2, sources2) -> tuple:
    """The positions of the indexed dims as one int64 tensor (*B, k) for GatherND /
    ScatterND, and the rank of B."""
    shape, shape2 = c.shape(0), c.shape2(0)
    positions = [p for p, k in enumerate(key) if not isinstance(k, slice)]
    parts, shapes, p = [], [], 0
    while p < len(key):
        k = key[p]
        if isinstance(k, slice):
            p += 1
            continue
        src = sources[p]
        if src.kind == "const":
            run = p
            while run < len(key) and not isinstance(key[run], slice) and sources[
                    run].kind == "const":
                run += 1
            part, used = _const_run(c, x, key, key2, p, run, shape, shape2)
            parts.append(part)
            shapes.append(used[1])
            p += used[0]
            continue
        idx = c.source_input(src, sources2[p] if sources2 is not None else None)
        if np.asarray(k).dtype != np.int64:
            idx = c.cast(idx, np.int64)
        static = shape[p] == shape2[p]
        idx = _wrap_negative(c, idx, x, p, shape[p] if static else None)
        parts.append(c.unsqueeze(idx, [-1]))
        shapes.append((np.shape(k), np.shape(key2[p])))
        p += 1
    return _join_columns(c, parts, shapes), len(np.broadcast_shapes(
        *[s[0] for s in shapes])), positions


def _mask_run(c: Call, arrays: list, arrays2: list, dims: tuple, dims2: tuple):
    """(m, ONNX name of the mask) when the index arrays `arrays` (`arrays2` in the check
    trace) begin with m that are the nonzero positions of a bool tensor of the trace over
    dims of sizes dims[:m] (the longest such run), else None.

    NOTE: looked for before taking equal arrays in both traces for constants: a mask's
    positions can be the same in both by chance (all 3 rows of the trace, the first 3
    of the check trace's 4), and a constant would freeze them into the graph."""
    for m in range(len(arrays), 0, -1):
        lengths = {a.shape for a in arrays[:m]} | {a.shape for a in arrays2[:m]}
        if any(len(s) != 1 for s in lengths):
            continue
        mask = _find_mask(c, arrays[:m], arrays2[:m], tuple(dims[:m]), tuple(dims2[:m]))
        if mask is not None:
            return m, mask
    return None


def _const_run(c: Call, x: str, key, key2, start: int, stop: int, shape, shape2):
    """Columns for the constant index arrays key[start:stop]: the nonzero positions of a
    mask found in the graph, or the constants themselves when they do not vary."""
    arrays = [to_numpy(a) for a in key[start:stop]]
    arrays2 = [to_numpy(a) for a in key2[start:stop]]
    found = _mask_run(c, arrays, arrays2, shape[start:stop], shape2[start:stop])
    if found is not None:
        m, mask = found
        col = c.transpose(c.op("NonZero", mask), [1, 0])
        return col, (m, (arrays[0].shape, arrays2[0].shape))
    if all(same(a, b) for a, b in zip(arrays, arrays2)):
        a = to_numpy(arrays[0]).astype(np.int64)
        static = shape[start] == shape2[start]
        if static:
            col = c.unsqueeze(c.const(np.where(a < 0, a + shape[start], a)), [-1])
        else:
            col = c.unsqueeze(_wrap_negative(c, c.const(a), x, start, None), [-1])
        return col, (1, (a.shape, np.shape(arrays2[0])))
    c.fail("an index (or boolean mask) depends on the input values but was computed "
           "outside ember's traced ops, so the graph cannot recompute it; index with a "
           "tensor computed from the inputs, or write the update with torch.where")


def _join_columns(c: Call, parts: list, shapes: list) -> str:
    """Concat the (*B_i, k_i) columns into (*B, sum k_i), broadcasting the B_i."""
    if len(parts) == 1:
        return parts[0]
    first, second = [s[0] for s in shapes], [s[1] for s in shapes]
    if len(set(first)) > 1 or len(set(second)) > 1:
        if first != second:
            c.fail("index tensors of different shapes are broadcast together, and some of "
                   "their sizes are dynamic")
        common = tuple(np.broadcast_shapes(*first))
        parts = [part if s == common else c.op(
            "Expand", part, c.ints(common + (1,))) for part, s in zip(parts, first)]
    return c.op("Concat", *parts, axis=-1)


def _layout(ndim: int, positions: list) -> tuple:
    """(perm moving the indexed dims first, where NumPy puts the index dims in the result:
    after how many of the other dims)."""
    rest = [d for d in range(ndim) if d not in positions]
    adjacent = positions == list(range(positions[0], positions[-1] + 1))
    return positions + rest, positions[0] if adjacent else 0


def _shape_from(c: Call, x: str, start: int, end: int = INT64_MAX) -> str:
    return c.slice(c.op("Shape", x), [start], [end], [0])


# ---------------------------------------------------------------------------
# converters


def _index_source(c: Call, position: int):
    src = c.rec.sources[1][position]
    src2 = c.rec2.sources[1][position] if c.rec2 is not None else None
    return c.source_input(src, src2)


def convert_index(c: Call) -> None:
    """``x[key]`` with index arrays: one (not from a mask) is a Gather; several, or a mask,
    a GatherND on the input with the indexed dims moved first."""
    key, key2 = c.arg(1), c.arg2(1)
    sources = c.rec.sources[1]
    sources2 = c.rec2.sources[1] if c.rec2 is not None else None
    positions = [p for p, k in enumerate(key) if not isinstance(k, slice)]
    x = c.input(0)
    if len(positions) == 1:
        p = positions[0]
        if sources[p].kind != "const" or (same(key[p], key2[p]) and _mask_run(
                c, [to_numpy(key[p])], [to_numpy(key2[p])], c.shape(0)[p:p + 1],
                c.shape2(0)[p:p + 1]) is None):
            c.done(c.op("Gather", x, _index_source(c, p), axis=p))
            return
    ndim = len(c.shape(0))
    cols, nb, positions = _columns(c, x, key, sources, key2, sources2)
    perm, front = _layout(ndim, positions)
    data = x if perm == sorted(perm) else c.transpose(x, perm)
    out = c.op("GatherND", data, cols)
    if front:
        rank = nb + ndim - len(positions)
        out = c.transpose(out, list(range(nb, nb + front)) + list(range(nb)) +
                          list(range(nb + front, rank)))
    c.done(out)


def convert_index_put(c: Call) -> None:
    """index_put / ``x[key] = v``: ScatterND (with reduction 'add' for accumulate)."""
    x, values = c.input(0), c.input(1)
    key, key2 = c.param("key"), c.param2("key")
    accumulate = bool(c.param("accumulate"))
    ndim = len(c.shape(0))
    if c.dtype(1) != c.dtype(0):
        values = c.cast(values, c.dtype(0))
    positions = [p for p, k in enumerate(key) if k is not Ellipsis and not isinstance(k, slice)]
    if not positions:  # every element
        if accumulate:
            c.done(c.op("Add", x, values))
        else:
            c.done(c.op("Expand", values, c.op("Shape", x)))
        return
    if accumulate and c.opset < 16:
        c.fail("index_put with accumulate=True needs opset 16 or later (ScatterND 'add')")
    sources = c.rec.param_sources["key"]
    sources2 = c.rec2.param_sources["key"] if c.rec2 is not None else None
    cols, nb, positions = _columns(c, x, key, sources, key2, sources2)
    perm, front = _layout(ndim, positions)
    data = x if perm == sorted(perm) else c.transpose(x, perm)
    # the values, from NumPy's layout of x[key] to ScatterND's (B, then the other dims)
    rank = nb + ndim - len(positions)
    given = len(c.shape(1))
    if given < rank:
        values = c.unsqueeze(values, list(range(rank - given)))
    if front:
        values = c.transpose(values, list(range(front, front + nb)) + list(range(front)) +
                             list(range(front + nb, rank)))
    target = c.op("Concat", _shape_from(c, cols, 0, -1), _shape_from(c, data, len(positions)),
                  axis=0)
    updates = c.op("Expand", values, target)
    attrs = {"reduction": "add"} if accumulate else {}
    out = c.op("ScatterND", data, cols, updates, **attrs)
    if perm != sorted(perm):
        out = c.transpose(out, list(np.argsort(perm)))
    c.done(out)


CONVERTERS = {
    indexing.Index: convert_index, indexing.IndexPut: convert_index_put,
}
