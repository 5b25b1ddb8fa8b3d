"""Op table entries for ember/ops/reduction.py, reduction_stats.py and sorting.py.

Inputs are random floats, so there are no ties where a gradient picks one element
(max, sort, median, ...); ties are covered by tests/ops/test_reduction.py.
"""

import numpy as np

import ember
from tests.ops.opinfo import FLOATS_AND_INTS, OpInfo, Sample

INTS_AND_BOOL = ("float64", "int64", "bool")


def _reduce_samples(*, shapes=((3, 4), (5,), ()), dims=((1,), (0, 1), (-1,)), keepdim=True,
                    low=-2.0, high=2.0):
    """No dim, then each dim (tuple or int) that fits the shape, with keepdim."""
    def samples(rng):
        out = []
        for shape in shapes:
            out.append(Sample((rng.uniform(low, high, size=shape),)))
        a = rng.uniform(low, high, size=(3, 4))
        for d in dims:
            out.append(Sample((a,), {"dim": d}))
            if keepdim:
                out.append(Sample((a,), {"dim": d, "keepdim": True}))
        return out
    return samples


def _dim_samples(*, low=-2.0, high=2.0, dims=(0, 1, -1), keepdim=True, scalar=True):
    """Samples of an op with one int dim (keepdim too); a 0-dim input with dim 0."""
    def samples(rng):
        a = rng.uniform(low, high, size=(3, 4))
        out = []
        for d in dims:
            out.append(Sample((a,), {"dim": d}))
            if keepdim:
                out.append(Sample((a,), {"dim": d, "keepdim": True}))
        if scalar:
            out.append(Sample((rng.uniform(low, high, size=()),), {"dim": 0}))
        return out
    return samples


def _np_dims(dim, ndim):
    if dim is None or dim == ():
        return None
    return tuple(d % ndim for d in ((dim,) if isinstance(dim, int) else dim))


def _np_reduce(fn):
    """A NumPy reference taking PyTorch's (dim, keepdim) arguments."""
    def ref(a, dim=None, keepdim=False):
        return fn(a, axis=_np_dims(dim, a.ndim), keepdims=keepdim)
    return ref


def _np_select(value_fn, index_fn):
    """Reference of an op returning (values, indices) along one dim."""
    def ref(a, dim, keepdim=False):
        if a.ndim == 0:
            return a, np.array(0)
        values = value_fn(a, axis=dim, keepdims=keepdim)
        return values, index_fn(a, axis=dim, keepdims=keepdim)
    return ref


def _np_var(correction=1, sqrt=False):
    def ref(a, dim=None, keepdim=False, **kw):
        c = kw.get("correction", correction)
        v = np.var(a, axis=_np_dims(dim, a.ndim), ddof=c, keepdims=keepdim)
        return np.sqrt(v) if sqrt else v
    return ref


def _np_logsumexp(a, dim, keepdim=False):
    axis = _np_dims(dim, a.ndim)
    m = np.max(a, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    return out if keepdim else np.squeeze(out, axis=axis)


def _np_norm(p):
    def ref(a, dim=None, keepdim=False):
        axis = _np_dims(dim, a.ndim)
        x = np.abs(a)
        if p == np.inf:
            return x.max(axis=axis, keepdims=keepdim)
        if p == 0:
            return (x != 0).sum(axis=axis, keepdims=keepdim).astype(a.dtype)
        return (x ** p).sum(axis=axis, keepdims=keepdim) ** (1 / p)
    return ref


def _np_median(a, dim=None, keepdim=False):
    """Lower median and its index (stable order)."""
    if dim is None:
        return np.sort(a.reshape(-1))[(a.size - 1) // 2]
    if a.ndim == 0:
        return a, np.array(0)
    order = np.argsort(a, axis=dim, kind="stable")
    pos = np.take(order, [(a.shape[dim] - 1) // 2], axis=dim)
    return (np.take_along_axis(a, pos, dim) if keepdim else
            np.take_along_axis(a, pos, dim).squeeze(dim)), (pos if keepdim else pos.squeeze(dim))


def _np_kthvalue(a, k, dim=-1, keepdim=False):
    order = np.argsort(a, axis=dim, kind="stable")
    pos = np.take(order, [k - 1], axis=dim)
    values = np.take_along_axis(a, pos, dim)
    return (values, pos) if keepdim else (values.squeeze(dim), pos.squeeze(dim))


def _np_mode_1d(row):
    values, counts = np.unique(row, return_counts=True)
    value = values[np.argmax(counts)]  # first (smallest) of the most frequent
    return value, np.nonzero(row == value)[0][-1]  # its last occurrence


def _np_mode(a, dim=-1, keepdim=False):
    moved = np.moveaxis(a, dim, -1)
    flat = moved.reshape(-1, moved.shape[-1])
    pairs = [_np_mode_1d(r) for r in flat]
    values = np.array([p[0] for p in pairs]).reshape(moved.shape[:-1])
    indices = np.array([p[1] for p in pairs]).reshape(moved.shape[:-1])
    if keepdim:
        values, indices = np.expand_dims(values, dim), np.expand_dims(indices, dim)
    return values, indices


def _np_sort(a, dim=-1, descending=False):
    if descending:
        idx = np.argsort(-a if a.dtype != bool else ~a, axis=dim, kind="stable")
    else:
        idx = np.argsort(a, axis=dim, kind="stable")
    return np.take_along_axis(a, idx, dim), idx


def _np_topk(a, k, dim=-1, largest=True):
    values, idx = _np_sort(a, dim, descending=largest)
    idx = np.take(idx, np.arange(k), axis=dim)
    return np.take_along_axis(a, idx, dim), idx


def _np_cum_extreme(largest):
    def ref(a, dim):
        if a.ndim == 0:
            return a, np.array(0)
        moved = np.moveaxis(a, dim, -1)
        values = np.empty_like(moved)
        indices = np.empty(moved.shape, dtype=np.int64)
        for pos in np.ndindex(moved.shape[:-1]):
            best, at = None, 0
            for i, v in enumerate(moved[pos]):
                if best is None or (v >= best if largest else v <= best):
                    best, at = v, i
                values[pos + (i,)], indices[pos + (i,)] = best, at
        return np.moveaxis(values, -1, dim), np.moveaxis(indices, -1, dim)
    return ref


def _with_zeros(rng):
    """prod/cumprod inputs: no zero, one zero, and two zeros in a slice."""
    a = rng.uniform(0.5, 1.5, size=(3, 4)) * rng.choice([-1, 1], size=(3, 4))
    one = a.copy()
    one[1, 2] = 0.0
    two = one.copy()
    two[1, 0] = 0.0
    return a, one, two


def _prod_samples(rng):
    a, one, two = _with_zeros(rng)
    # zeros first: gradgradcheck runs the first two samples
    return [Sample((one,), {"dim": 1, "keepdim": True}), Sample((two,), {"dim": 1}),
            Sample((a,)), Sample((a,), {"dim": 1}), Sample((one,)), Sample((two,), {"dim": 0}),
            Sample((rng.uniform(0.5, 1.5, size=()),))]


def _cumprod_samples(rng):
    a, one, two = _with_zeros(rng)
    return [Sample((one,), {"dim": 1}), Sample((two,), {"dim": 1}), Sample((a,), {"dim": 0}),
            Sample((a,), {"dim": -1}), Sample((rng.uniform(0.5, 1.5, size=()),), {"dim": 0})]


def _nan_samples(rng):
    a = rng.uniform(-2, 2, size=(3, 4))
    a[0, 1] = a[2, 3] = np.nan
    return [Sample((a,)), Sample((a,), {"dim": 1}), Sample((a,), {"dim": 0, "keepdim": True})]


def _search_samples(rng):
    seq = np.sort(rng.uniform(-2, 2, size=6))
    rows = np.sort(rng.uniform(-2, 2, size=(2, 5)), axis=1)
    return [Sample((seq, rng.uniform(-2, 2, size=(3, 2)))),
            Sample((seq, rng.uniform(-2, 2, size=4)), {"right": True}),
            Sample((rows, rng.uniform(-2, 2, size=(2, 3))))]


def _np_searchsorted(seq, values, right=False):
    side = "right" if right else "left"
    if seq.ndim == 1:
        return np.searchsorted(seq, values, side=side)
    return np.stack([np.searchsorted(s, v, side=side) for s, v in zip(seq, values)])


def _np_unique(a, return_inverse=False, return_counts=False, dim=None):
    values, inverse, counts = np.unique(a, return_inverse=True, return_counts=True, axis=dim)
    out = [values]
    if return_inverse:
        out.append(inverse.reshape(a.shape if dim is None else -1))
    if return_counts:
        out.append(counts)
    return out[0] if len(out) == 1 else tuple(out)


def _np_unique_consecutive(a, return_counts=False):
    flat = a.reshape(-1)
    keep = np.ones(flat.size, dtype=bool)
    keep[1:] = flat[1:] != flat[:-1]
    starts = np.nonzero(keep)[0]
    counts = np.diff(np.append(starts, flat.size))
    return (flat[keep], counts) if return_counts else flat[keep]


def _np_histc(a, bins=100, min=0, max=0):
    lo, hi = (min, max) if min != max else (a.min(), a.max())
    return np.histogram(a, bins=bins, range=(lo, hi))[0].astype(a.dtype)


def _int_samples(rng):
    return [Sample((rng.uniform(0, 2, size=8),)), Sample((rng.uniform(0, 2, size=5),),
                                                        {"minlength": 9})]


def _set_samples(**kwargs):
    def samples(rng):
        a = np.round(rng.uniform(-2, 2, size=(3, 4)), 0)
        return [Sample((a,), kwargs), Sample((np.round(rng.uniform(-2, 2, size=7)),), kwargs)]
    return samples


def _fill_diagonal_ref(x):
    out = x.copy()
    index = np.arange(min(out.shape))
    out[(index,) * out.ndim] = 2.5
    return out


OPS = [
    # sums, means, products --------------------------------------------------------------
    OpInfo("sum_dim", ember.sum, _np_reduce(np.sum), _reduce_samples(),
           dtypes=FLOATS_AND_INTS),
    OpInfo("nansum", ember.nansum, _np_reduce(np.nansum), _nan_samples),
    OpInfo("mean", ember.mean, _np_reduce(np.mean), _reduce_samples()),
    OpInfo("nanmean", ember.nanmean, _np_reduce(np.nanmean), _nan_samples),
    OpInfo("prod", ember.prod, _np_reduce(np.prod), _prod_samples, dtypes=FLOATS_AND_INTS),
    # extrema ------------------------------------------------------------------------------
    OpInfo("max", ember.max, np.max, _reduce_samples(dims=()), dtypes=FLOATS_AND_INTS),
    OpInfo("min", ember.min, np.min, _reduce_samples(dims=()), dtypes=FLOATS_AND_INTS),
    OpInfo("max_dim", ember.max, _np_select(np.max, np.argmax), _dim_samples(),
           dtypes=FLOATS_AND_INTS),
    OpInfo("min_dim", ember.min, _np_select(np.min, np.argmin), _dim_samples(),
           dtypes=FLOATS_AND_INTS),
    OpInfo("amax", ember.amax, _np_reduce(np.max), _reduce_samples(), dtypes=FLOATS_AND_INTS),
    OpInfo("amin", ember.amin, _np_reduce(np.min), _reduce_samples(), dtypes=FLOATS_AND_INTS),
    OpInfo("aminmax", ember.aminmax, lambda a, **kw: (_np_reduce(np.min)(a, **kw),
                                                      _np_reduce(np.max)(a, **kw)),
           _dim_samples(dims=(1,), scalar=False), dtypes=FLOATS_AND_INTS),
    OpInfo("argmax", ember.argmax, lambda a, dim, keepdim=False: np.argmax(a, dim,
                                                                           keepdims=keepdim),
           _dim_samples(scalar=False), dtypes=FLOATS_AND_INTS, grad_order=0),
    OpInfo("argmin", ember.argmin, lambda a, dim, keepdim=False: np.argmin(a, dim,
                                                                           keepdims=keepdim),
           _dim_samples(scalar=False), dtypes=FLOATS_AND_INTS, grad_order=0),
    # statistics ---------------------------------------------------------------------------
    OpInfo("var", ember.var, _np_var(), _reduce_samples(shapes=((3, 4), (5,)))),
    OpInfo("var_correction0", lambda a, **kw: ember.var(a, correction=0, **kw),
           _np_var(correction=0), _reduce_samples(shapes=((3, 4),))),
    OpInfo("std", ember.std, _np_var(sqrt=True), _reduce_samples(shapes=((3, 4), (5,)))),
    OpInfo("std_unbiased_false", lambda a, **kw: ember.std(a, unbiased=False, **kw),
           _np_var(correction=0, sqrt=True), _reduce_samples(shapes=((3, 4),))),
    OpInfo("var_mean", ember.var_mean, lambda a, **kw: (_np_var()(a, **kw),
                                                        _np_reduce(np.mean)(a, **kw)),
           _reduce_samples(shapes=((3, 4),), dims=((1,),))),
    OpInfo("std_mean", ember.std_mean, lambda a, **kw: (_np_var(sqrt=True)(a, **kw),
                                                        _np_reduce(np.mean)(a, **kw)),
           _reduce_samples(shapes=((3, 4),), dims=((0,),))),
    OpInfo("logsumexp", ember.logsumexp, _np_logsumexp,
           _dim_samples(dims=(1, (0, 1), -1), scalar=False), torch_name="logsumexp"),
    OpInfo("norm_fro", ember.norm, _np_norm(2), _reduce_samples()),
    OpInfo("norm_p1", lambda a, **kw: ember.norm(a, 1, **kw), _np_norm(1), _reduce_samples()),
    OpInfo("norm_inf", lambda a, **kw: ember.norm(a, float("inf"), **kw), _np_norm(np.inf),
           _reduce_samples()),
    OpInfo("norm_p3", lambda a, **kw: ember.norm(a, 3, **kw), _np_norm(3), _reduce_samples()),
    OpInfo("norm_p0_5", lambda a, **kw: ember.norm(a, 0.5, **kw), _np_norm(0.5),
           _reduce_samples(shapes=((3, 4),)), gradcheck_atol=1e-4),
    OpInfo("norm_p0", lambda a, **kw: ember.norm(a, 0, **kw), _np_norm(0),
           _reduce_samples(shapes=((3, 4),)), grad_order=0),
    # logical and counting -----------------------------------------------------------------
    OpInfo("all", ember.all, _np_reduce(np.all), _reduce_samples(), dtypes=INTS_AND_BOOL,
           grad_order=0),
    OpInfo("any", ember.any, _np_reduce(np.any), _reduce_samples(), dtypes=INTS_AND_BOOL,
           grad_order=0),
    OpInfo("count_nonzero", ember.count_nonzero,
           lambda a, dim=None: np.count_nonzero(a, axis=_np_dims(dim, a.ndim)),
           _reduce_samples(keepdim=False), dtypes=INTS_AND_BOOL, grad_order=0),
    # cumulative ---------------------------------------------------------------------------
    OpInfo("cumsum", ember.cumsum, lambda a, dim: np.cumsum(a, axis=dim) if a.ndim else a,
           _dim_samples(keepdim=False), dtypes=FLOATS_AND_INTS),
    OpInfo("cumprod", ember.cumprod, lambda a, dim: np.cumprod(a, axis=dim) if a.ndim else a,
           _cumprod_samples, dtypes=FLOATS_AND_INTS),
    OpInfo("cummax", ember.cummax, _np_cum_extreme(True), _dim_samples(keepdim=False),
           dtypes=FLOATS_AND_INTS),
    OpInfo("cummin", ember.cummin, _np_cum_extreme(False), _dim_samples(keepdim=False),
           dtypes=FLOATS_AND_INTS),
    OpInfo("logcumsumexp", ember.logcumsumexp,
           lambda a, dim: np.logaddexp.accumulate(a, axis=dim) if a.ndim else a,
           _dim_samples(keepdim=False)),
    # sorting and selection ----------------------------------------------------------------
    OpInfo("sort", ember.sort, lambda a, **kw: _np_sort(a, **kw) if a.ndim else (a, 0),
           _dim_samples(keepdim=False), dtypes=FLOATS_AND_INTS),
    OpInfo("sort_descending", lambda a, **kw: ember.sort(a, descending=True, **kw),
           lambda a, **kw: _np_sort(a, descending=True, **kw),
           _dim_samples(keepdim=False, scalar=False), dtypes=FLOATS_AND_INTS),
    OpInfo("argsort", ember.argsort, lambda a, dim: np.argsort(a, axis=dim, kind="stable"),
           _dim_samples(keepdim=False, scalar=False), dtypes=FLOATS_AND_INTS, grad_order=0),
    OpInfo("msort", ember.msort, lambda a: np.sort(a, axis=0),
           lambda rng: [Sample((rng.uniform(-2, 2, size=(3, 4)),))], dtypes=FLOATS_AND_INTS),
    OpInfo("topk", lambda a, **kw: ember.topk(a, 2, **kw), lambda a, **kw: _np_topk(a, 2, **kw),
           _dim_samples(keepdim=False, scalar=False), dtypes=FLOATS_AND_INTS),
    OpInfo("topk_smallest", lambda a, **kw: ember.topk(a, 3, largest=False, **kw),
           lambda a, **kw: _np_topk(a, 3, largest=False, **kw),
           _dim_samples(dims=(0, -1), keepdim=False, scalar=False), dtypes=FLOATS_AND_INTS),
    OpInfo("kthvalue", lambda a, **kw: ember.kthvalue(a, 2, **kw),
           lambda a, **kw: _np_kthvalue(a, 2, **kw), _dim_samples(scalar=False),
           dtypes=FLOATS_AND_INTS),
    OpInfo("median", ember.median, _np_median, _reduce_samples(dims=()),
           dtypes=FLOATS_AND_INTS),
    OpInfo("median_dim", ember.median, _np_median, _dim_samples(), dtypes=FLOATS_AND_INTS),
    OpInfo("nanmedian_dim", ember.nanmedian, _np_median, _dim_samples(scalar=False)),
    OpInfo("mode", ember.mode, _np_mode, _dim_samples(scalar=False), dtypes=FLOATS_AND_INTS),
    # sets, counts, buckets (no gradients) -------------------------------------------------
    OpInfo("unique", ember.unique, _np_unique, _set_samples(), dtypes=FLOATS_AND_INTS,
           grad_order=0),
    OpInfo("unique_inverse_counts", ember.unique, _np_unique,
           _set_samples(return_inverse=True, return_counts=True), dtypes=FLOATS_AND_INTS,
           grad_order=0),
    OpInfo("unique_dim", ember.unique, _np_unique,
           lambda rng: [Sample((np.array([[1., 2], [0, 5], [1, 2]]),),
                               {"dim": 0, "return_inverse": True, "return_counts": True})],
           dtypes=FLOATS_AND_INTS, grad_order=0),
    OpInfo("unique_consecutive", ember.unique_consecutive, _np_unique_consecutive,
           _set_samples(return_counts=True), dtypes=FLOATS_AND_INTS, grad_order=0),
    OpInfo("bincount", ember.bincount, np.bincount, _int_samples, dtypes=("int64",),
           grad_order=0),
    OpInfo("histc", lambda a, **kw: ember.histc(a, bins=5, **kw),
           lambda a, **kw: _np_histc(a, bins=5, **kw),
           lambda rng: [Sample((rng.uniform(-2, 2, size=(3, 4)),)),
                        Sample((rng.uniform(-2, 2, size=9),), {"min": -1, "max": 1})],
           grad_order=0),
    OpInfo("searchsorted", ember.searchsorted, _np_searchsorted, _search_samples,
           dtypes=FLOATS_AND_INTS, grad_order=0),
    OpInfo("bucketize", lambda v, b, **kw: ember.bucketize(v, b, **kw),
           lambda v, b, right=False: np.searchsorted(b, v, side="right" if right else "left"),
           lambda rng: [Sample((rng.uniform(-2, 2, size=(3, 2)),
                                np.sort(rng.uniform(-2, 2, size=5)))),
                        Sample((rng.uniform(-2, 2, size=4), np.sort(rng.uniform(-2, 2, size=5))),
                               {"right": True})],
           dtypes=FLOATS_AND_INTS, grad_order=0),
    # statistics (statistics.py) ------------------------------------------------
    OpInfo("quantile", lambda x: ember.quantile(x, 0.3, dim=1), lambda x: np.quantile(x, 0.3, 1),
           lambda rng: [Sample((rng.uniform(-2, 2, size=(3, 5)),))]),
    OpInfo("quantile_many", lambda x: ember.quantile(x, ember.tensor([0.2, 0.9], dtype=x.dtype)),
           lambda x: np.quantile(x, [0.2, 0.9]),
           lambda rng: [Sample((rng.uniform(-2, 2, size=(4, 3)),))]),
    OpInfo("nanquantile", lambda x: ember.nanquantile(x, 0.6, dim=0, keepdim=True),
           lambda x: np.nanquantile(x, 0.6, 0, keepdims=True),
           lambda rng: [Sample((rng.uniform(-2, 2, size=(5, 2)),))]),
    OpInfo("cov", ember.cov, np.cov, lambda rng: [Sample((rng.uniform(-2, 2, size=(3, 6)),)),
                                                  Sample((rng.uniform(-2, 2, size=(5,)),))]),
    OpInfo("cov_weighted",
           lambda x, a: ember.cov(x, fweights=ember.tensor([1, 2, 1, 3]), aweights=a.abs() + 0.5),
           lambda x, a: np.cov(x, fweights=[1, 2, 1, 3], aweights=np.abs(a) + 0.5),
           lambda rng: [Sample((rng.uniform(-2, 2, size=(2, 4)), rng.uniform(-1, 1, size=(4,))),
                               grad_args=(0,))]),
    OpInfo("corrcoef", ember.corrcoef, np.corrcoef,
           lambda rng: [Sample((rng.uniform(-2, 2, size=(3, 6)),))]),
    OpInfo("fill_diagonal_", lambda x: (x * 1).fill_diagonal_(2.5), _fill_diagonal_ref,
           lambda rng: [Sample((rng.uniform(-2, 2, size=(3, 4)),)),
                        Sample((rng.uniform(-2, 2, size=(3, 3, 3)),))]),
]
