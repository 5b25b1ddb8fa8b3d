"""Op table entries for ember/ops/indexing.py and ember/ops/scatter.py.

Index arguments are passed as ember int64 tensors (not NumPy arrays), so that the
generic tests neither cast them to the tested dtype nor ask for their gradient.
"""

import numpy as np

import ember
from tests.ops.opinfo import FLOATS_AND_INTS, OpInfo, Sample


def ix(data):
    """An int64 index tensor."""
    return ember.tensor(np.asarray(data, dtype=np.int64))


def arr(t):
    return np.asarray(t)


def _full_key(index, dim):
    dim = dim % index.ndim
    return tuple(index if d == dim else np.arange(n).reshape(
        [n if k == d else 1 for k in range(index.ndim)]) for d, n in enumerate(index.shape))


def _head(src, shape):
    return src[tuple(slice(0, n) for n in shape)]


def _gather_ref(x, dim, index):
    return x[_full_key(arr(index), dim)]


def _scatter_ref(x, dim, index, src):
    out = x.copy()
    index = arr(index)
    out[_full_key(index, dim)] = src if np.isscalar(src) else _head(src, index.shape)
    return out


def _scatter_add_ref(x, dim, index, src):
    out = x.copy()
    index = arr(index)
    np.add.at(out, _full_key(index, dim), _head(src, index.shape))
    return out


def _scatter_reduce_ref(x, dim, index, src, reduce, include_self):
    index = arr(index)
    key = _full_key(index, dim)
    src = _head(src, index.shape)
    out = x.astype(np.float64)
    groups = {}
    for pos, v in zip(zip(*(np.broadcast_to(k, index.shape).reshape(-1) for k in key)),
                      src.reshape(-1)):
        groups.setdefault(pos, []).append(v)
    for pos, values in groups.items():
        values = ([x[pos]] if include_self else []) + values
        out[pos] = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "amax": np.max,
                    "amin": np.min}[reduce](values)
    return out


def _unique_index(rng, shape, size, dim):
    """Index values along `dim` without repeats (so scatter's result is well defined)."""
    index = np.empty(shape, dtype=np.int64)
    for pos in np.ndindex(*(s for d, s in enumerate(shape) if d != dim)):
        lead, rest = pos[:dim], pos[dim:]
        index[lead + (slice(None),) + rest] = rng.permutation(size)[:shape[dim]]
    return index


def gather_samples(rng):
    x = rng.uniform(-2, 2, size=(3, 4))
    return [Sample((x, 0, ix(rng.integers(0, 3, size=(2, 4))))),
            Sample((x, 1, ix(rng.integers(0, 4, size=(3, 5))))),
            Sample((x, -1, ix(rng.integers(0, 4, size=(2, 2)))))]


def take_along_dim_samples(rng):
    x = rng.uniform(-2, 2, size=(3, 4))
    return [Sample((x, 0, ix(rng.integers(0, 3, size=(2, 4))))),
            Sample((x, 1, ix(rng.integers(0, 4, size=(1, 5))))),
            Sample((rng.uniform(-2, 2, size=(3, 1)), -1, ix(rng.integers(0, 1, size=(3, 2)))))]


def scatter_samples(rng):
    return [Sample((rng.uniform(-2, 2, size=(3, 4)), 0, ix(_unique_index(rng, (2, 4), 3, 0)),
                    rng.uniform(-2, 2, size=(2, 4)))),
            Sample((rng.uniform(-2, 2, size=(3, 4)), 1, ix(_unique_index(rng, (2, 2), 4, 1)),
                    rng.uniform(-2, 2, size=(3, 3))))]


def scatter_add_samples(rng):
    return [Sample((rng.uniform(-2, 2, size=(3, 4)), 0, ix(rng.integers(0, 3, size=(4, 4))),
                    rng.uniform(-2, 2, size=(4, 4)))),
            Sample((rng.uniform(-2, 2, size=(3, 4)), 1, ix(rng.integers(0, 4, size=(2, 6))),
                    rng.uniform(-2, 2, size=(3, 6))))]


def _reduce_samples(rng):
    # Distinct values everywhere, so that amax/amin have no ties.
    values = rng.permutation(np.linspace(0.5, 2.0, 12 + 15)) * rng.choice([-1, 1], 27)
    x, src = values[:12].reshape(3, 4), values[12:].reshape(5, 3)
    return [Sample((x, 0, ix(rng.integers(0, 3, size=(5, 3))), src)),
            Sample((x, 1, ix(rng.integers(0, 4, size=(3, 3))), src[:3]))]


def scatter_reduce_op(reduce, include_self):
    return OpInfo(
        f"scatter_reduce_{reduce}{'' if include_self else '_exclude_self'}",
        lambda x, d, i, s: ember.scatter_reduce(x, d, i, s, reduce, include_self=include_self),
        lambda x, d, i, s: _scatter_reduce_ref(x, d, i, s, reduce, include_self),
        _reduce_samples)


def index_samples(rng):
    return [Sample((rng.uniform(-2, 2, size=(3, 4)), 0, ix([2, 0, 2, 1]))),
            Sample((rng.uniform(-2, 2, size=(3, 4)), 1, ix([3, 3]))),
            Sample((rng.uniform(-2, 2, size=(5,)), 0, ix([4]))),
            Sample((rng.uniform(-2, 2, size=(2, 3)), 1, ix([]))),
            ]


def index_source_samples(unique):
    def samples(rng):
        rows = [2, 0] if unique else [2, 0, 2]
        return [Sample((rng.uniform(-2, 2, size=(3, 4)), 0, ix(rows),
                        rng.uniform(-2, 2, size=(len(rows), 4)))),
                Sample((rng.uniform(-2, 2, size=(3, 4)), 1, ix([1, 3] if unique else [3, 3]),
                        rng.uniform(-2, 2, size=(3, 2))))]
    return samples


def _index_add_ref(x, d, i, s, alpha=1):
    out = x.copy()
    np.add.at(out, (slice(None),) * d + (arr(i),), alpha * s)
    return out


def _index_copy_ref(x, d, i, s):
    out = x.copy()
    out[(slice(None),) * d + (arr(i),)] = s
    return out


def _index_fill_ref(x, d, i, v):
    out = x.copy()
    out[(slice(None),) * d + (arr(i),)] = v
    return out


def _index_reduce_ref(x, d, i, s, reduce, include_self):
    shape = [1] * s.ndim
    shape[d] = -1
    spread = np.broadcast_to(arr(i).reshape(shape), s.shape)
    return _scatter_reduce_ref(x, d, spread, s, reduce, include_self)


MASK = np.array([[True, False, True, False], [False, False, False, False],
                 [True, True, False, True]])


def mask_samples(with_value=False, source=None):
    def samples(rng):
        extra = () if not with_value else (rng.uniform(-2, 2, size=()),)
        if source is not None:
            extra = (rng.uniform(-2, 2, size=source),)
        return [Sample((rng.uniform(-2, 2, size=(3, 4)), ember.tensor(MASK)) + extra),
                Sample((rng.uniform(-2, 2, size=(4,)), ember.tensor(MASK)) + extra),
                Sample((rng.uniform(-2, 2, size=(3, 4)), ember.tensor(MASK[0])) + extra)]
    return samples


def _masked_fill_ref(x, m, v):
    m = arr(m)
    out = np.broadcast_to(x, np.broadcast_shapes(x.shape, m.shape)).copy()
    out[np.broadcast_to(m, out.shape)] = v
    return out


def _masked_select_ref(x, m):
    m = arr(m)
    shape = np.broadcast_shapes(x.shape, m.shape)
    return np.broadcast_to(x, shape)[np.broadcast_to(m, shape)]


def _masked_scatter_ref(x, m, s):
    m = arr(m)
    shape = np.broadcast_shapes(x.shape, m.shape)
    out = np.broadcast_to(x, shape).copy()
    full = np.broadcast_to(m, shape)
    out[full] = s.reshape(-1)[:full.sum()]
    return out


def getitem_samples(key):
    def samples(rng):
        return [Sample((rng.uniform(-2, 2, size=(3, 4, 5)),), kwargs={})]
    return samples


def _getitem(key):
    return (lambda x: x[key]), (lambda x: x[tuple(np.asarray(k) if isinstance(k, list) else k
                                                  for k in key)])


def getitem_op(name, key, dtypes=("float32", "float64"), ref=None):
    op, numpy_ref = _getitem(key)
    ref = ref or numpy_ref
    return OpInfo(name, op, ref, getitem_samples(key), dtypes=dtypes)


def _index_put_ref(x, indices, v, accumulate):
    out = x.copy()
    key = tuple(arr(i) for i in indices)
    if accumulate:
        np.add.at(out, key, np.broadcast_to(v, out[key].shape))
    else:
        out[key] = v
    return out


def index_put_samples(rng):
    x = rng.uniform(-2, 2, size=(3, 4))
    return [Sample((x, (ix([0, 2, 0]), ix([1, 1, 1])), rng.uniform(-2, 2, size=(3,)))),
            Sample((x, (ix([2, 0]),), rng.uniform(-2, 2, size=(4,)))),
            Sample((x, (ix([[1], [2]]), ix([0, 3])), rng.uniform(-2, 2, size=()))),
            ]


def index_put_unique_samples(rng):
    x = rng.uniform(-2, 2, size=(3, 4))
    return [Sample((x, (ix([0, 2]), ix([1, 3])), rng.uniform(-2, 2, size=(2,)))),
            Sample((x, (ix([2, 0]),), rng.uniform(-2, 2, size=(2, 4))))]


def _take_along_dim_ref(x, i, d=None):
    i = arr(i)
    if d is None:
        return x.reshape(-1)[i.reshape(-1)]
    return np.take_along_axis(x, i, d)


OPS = [
    getitem_op("getitem_list", ([2, 0, 2],), FLOATS_AND_INTS),
    getitem_op("getitem_two_lists", ([0, 2], [1, 3])),
    getitem_op("getitem_separated", ([0, 2], slice(None), [1, 3])),
    # PyTorch applies ints as a view first (NumPy would count them as advanced indices).
    getitem_op("getitem_int_and_list", (1, slice(None), [4, 0, 4]),
               ref=lambda x: x[1][:, [4, 0, 4]]),
    getitem_op("getitem_slice_and_list", (slice(1, 3), [[0], [2]], slice(None, None, 2))),
    getitem_op("getitem_none_ellipsis_list", (None, Ellipsis, [1, 1])),
    OpInfo("getitem_mask", lambda x: x[ember.tensor(MASK)], lambda x: x[MASK],
           lambda rng: [Sample((rng.uniform(-2, 2, size=(3, 4)),)),
                        Sample((rng.uniform(-2, 2, size=(3, 4, 2)),))],
           dtypes=FLOATS_AND_INTS),
    OpInfo("getitem_mask_row", lambda x: x[:, ember.tensor(MASK[0])], lambda x: x[:, MASK[0]],
           lambda rng: [Sample((rng.uniform(-2, 2, size=(2, 4)),))]),
    OpInfo("getitem_tensor", lambda x: x[ix([[0, 1], [1, 1]])], lambda x: x[[[0, 1], [1, 1]]],
           lambda rng: [Sample((rng.uniform(-2, 2, size=(2, 3)),))]),
    OpInfo("index_put", lambda x, i, v: ember.index_put(x, i, v),
           lambda x, i, v: _index_put_ref(x, i, v, False), index_put_unique_samples),
    OpInfo("index_put_accumulate", lambda x, i, v: ember.index_put(x, i, v, accumulate=True),
           lambda x, i, v: _index_put_ref(x, i, v, True), index_put_samples),
    OpInfo("index_put_inplace", lambda x, i, v: (x * 1).index_put_(i, v, True),
           lambda x, i, v: _index_put_ref(x, i, v, True), index_put_samples),
    OpInfo("gather", ember.gather, _gather_ref, gather_samples, dtypes=FLOATS_AND_INTS),
    OpInfo("take_along_dim", lambda x, d, i: ember.take_along_dim(x, i, d),
           lambda x, d, i: _take_along_dim_ref(x, i, d), take_along_dim_samples),
    OpInfo("take_along_dim_flat", lambda x, d, i: ember.take_along_dim(x, i),
           lambda x, d, i: _take_along_dim_ref(x, i), take_along_dim_samples),
    OpInfo("scatter", ember.scatter, _scatter_ref, scatter_samples, dtypes=FLOATS_AND_INTS),
    OpInfo("scatter_value", lambda x, d, i, s: ember.scatter(x, d, i, 1.5),
           lambda x, d, i, s: _scatter_ref(x, d, i, 1.5), scatter_samples),
    OpInfo("scatter_inplace", lambda x, d, i, s: (x * 1).scatter_(d, i, s),
           _scatter_ref, scatter_samples),
    OpInfo("scatter_add", ember.scatter_add, _scatter_add_ref, scatter_add_samples,
           dtypes=FLOATS_AND_INTS),
    OpInfo("scatter_add_inplace", lambda x, d, i, s: (x * 1).scatter_add_(d, i, s),
           _scatter_add_ref, scatter_add_samples),
    scatter_reduce_op("sum", True),
    scatter_reduce_op("sum", False),
    scatter_reduce_op("prod", True),
    scatter_reduce_op("prod", False),
    scatter_reduce_op("mean", True),
    scatter_reduce_op("mean", False),
    scatter_reduce_op("amax", True),
    scatter_reduce_op("amax", False),
    scatter_reduce_op("amin", True),
    scatter_reduce_op("amin", False),
    OpInfo("scatter_reduce_inplace",
           lambda x, d, i, s: (x * 1).scatter_reduce_(d, i, s, "prod"),
           lambda x, d, i, s: _scatter_reduce_ref(x, d, i, s, "prod", True), _reduce_samples),
    OpInfo("index_select", ember.index_select, lambda x, d, i: np.take(x, arr(i), d),
           index_samples, dtypes=FLOATS_AND_INTS),
    OpInfo("index_add", lambda x, d, i, s: ember.index_add(x, d, i, s, alpha=2),
           lambda x, d, i, s: _index_add_ref(x, d, i, s, 2), index_source_samples(False),
           dtypes=FLOATS_AND_INTS),
    OpInfo("index_add_inplace", lambda x, d, i, s: (x * 1).index_add_(d, i, s),
           _index_add_ref, index_source_samples(False)),
    OpInfo("index_copy", ember.index_copy, _index_copy_ref, index_source_samples(True),
           dtypes=FLOATS_AND_INTS),
    OpInfo("index_copy_inplace", lambda x, d, i, s: (x * 1).index_copy_(d, i, s),
           _index_copy_ref, index_source_samples(True)),
    OpInfo("index_fill", lambda x, d, i: ember.index_fill(x, d, i, -1.5),
           lambda x, d, i: _index_fill_ref(x, d, i, -1.5), index_samples),
    OpInfo("index_fill_tensor",
           lambda x, v: ember.index_fill(x, 1, ix([0, 2]), v),
           lambda x, v: _index_fill_ref(x, 1, [0, 2], v),
           lambda rng: [Sample((rng.uniform(-2, 2, size=(3, 4)), rng.uniform(-2, 2, size=())))]),
    OpInfo("index_fill_inplace", lambda x, d, i: (x * 1).index_fill_(d, i, 2.0),
           lambda x, d, i: _index_fill_ref(x, d, i, 2.0), index_samples),
    OpInfo("index_reduce_prod",
           lambda x, d, i, s: ember.index_reduce(x, d, i, s, "prod"),
           lambda x, d, i, s: _index_reduce_ref(x, d, i, s, "prod", True),
           index_source_samples(False)),
    OpInfo("index_reduce_amax",
           lambda x, d, i, s: ember.index_reduce(x, d, i, s, "amax", include_self=False),
           lambda x, d, i, s: _index_reduce_ref(x, d, i, s, "amax", False),
           index_source_samples(False)),
    OpInfo("masked_fill", lambda x, m: ember.masked_fill(x, m, 0.5), lambda x, m:
           _masked_fill_ref(x, m, 0.5), mask_samples(), dtypes=FLOATS_AND_INTS),
    OpInfo("masked_fill_tensor", ember.masked_fill, _masked_fill_ref, mask_samples(True)),
    OpInfo("masked_fill_inplace", lambda x, m: (x * 1).masked_fill_(m[0], -2.0),
           lambda x, m: _masked_fill_ref(x, arr(m)[0], -2.0),
           lambda rng: [Sample((rng.uniform(-2, 2, size=(3, 4)), ember.tensor(MASK)))]),
    OpInfo("masked_select", ember.masked_select, _masked_select_ref, mask_samples(),
           dtypes=FLOATS_AND_INTS),
    OpInfo("masked_scatter", ember.masked_scatter, _masked_scatter_ref,
           mask_samples(source=(3, 5))),
    OpInfo("masked_scatter_inplace", lambda x, m, s: (x * 1).masked_scatter_(m, s),
           _masked_scatter_ref,
           lambda rng: [Sample((rng.uniform(-2, 2, size=(3, 4)), ember.tensor(MASK),
                                rng.uniform(-2, 2, size=(7,))))]),
    OpInfo("take", lambda x: ember.take(x, ix([[0, 11], [5, 5]])),
           lambda x: x.reshape(-1)[[[0, 11], [5, 5]]],
           lambda rng: [Sample((rng.uniform(-2, 2, size=(3, 4)),))], dtypes=FLOATS_AND_INTS),
    OpInfo("put", lambda x, s: ember.put(x, ix([0, 11, 5]), s, accumulate=True),
           lambda x, s: _put_ref(x, [0, 11, 5], s),
           lambda rng: [Sample((rng.uniform(-2, 2, size=(3, 4)), rng.uniform(-2, 2, size=3)))]),
    OpInfo("nonzero", ember.nonzero, lambda x: np.argwhere(x),
           lambda rng: [Sample((np.round(rng.uniform(-1, 1, size=(3, 4))),))],
           dtypes=FLOATS_AND_INTS, grad_order=0),
]


def _put_ref(x, index, s):
    out = x.copy().reshape(-1)
    np.add.at(out, index, s)
    return out.reshape(x.shape)
