"""Op table entries for ember/ops/pooling.py: max, average, Lp, adaptive pooling, unpooling.

Max-pooling inputs are a shuffled ramp (distinct values, far apart compared with the
finite-difference step) so that no gradient sits on a tie.  The NumPy references loop
over output positions (tiny inputs), computing each window's bounds from PyTorch's
formulas.
"""

import itertools
import math

import numpy as np

import ember
from tests.ops.opinfo import OpInfo, Sample

F = ember.nn.functional


def _tup(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _out_size(n, k, s, p, d, ceil_mode):
    span = n + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _windows(size, kernel, stride, padding, dilation, ceil_mode):
    """For each output position: the input positions of its window, per dim (all of them,
    padding included, as raw coordinates)."""
    nd = len(size)
    k, s = _tup(kernel, nd), _tup(stride if stride is not None else kernel, nd)
    p, d = _tup(padding, nd), _tup(dilation, nd)
    outs = [_out_size(n, *a, ceil_mode) for n, a in zip(size, zip(k, s, p, d))]
    for o in itertools.product(*(range(m) for m in outs)):
        yield o, [[oi * si - pi + j * di for j in range(ki)]
                  for oi, si, pi, di, ki in zip(o, s, p, d, k)], outs


def ref_max_pool(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                 return_indices=False):
    size = x.shape[2:]
    out = idx = None
    for o, axes, outs in _windows(size, kernel_size, stride, padding, dilation, ceil_mode):
        if out is None:
            out = np.empty(x.shape[:2] + tuple(outs))
            idx = np.empty(x.shape[:2] + tuple(outs), dtype=np.int64)
        pos = [q for q in itertools.product(*axes)
               if all(0 <= c < n for c, n in zip(q, size))]
        vals = np.stack([x[(Ellipsis,) + q] for q in pos], -1)
        best = vals.argmax(-1)
        out[(Ellipsis,) + o] = vals.max(-1)
        flat = [np.ravel_multi_index(q, size) for q in pos]
        idx[(Ellipsis,) + o] = np.asarray(flat)[best]
    return (out, idx) if return_indices else out


def ref_avg_pool(x, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
    size = x.shape[2:]
    nd = len(size)
    p = _tup(padding, nd)
    out = None
    for o, axes, outs in _windows(size, kernel_size, stride, padding, 1, ceil_mode):
        if out is None:
            out = np.empty(x.shape[:2] + tuple(outs))
        pos = [q for q in itertools.product(*axes) if all(0 <= c < n for c, n in zip(q, size))]
        total = sum(x[(Ellipsis,) + q] for q in pos)
        if divisor_override:
            div = divisor_override
        elif count_include_pad:  # the window clipped to the padded input
            div = math.prod(min(a[-1] + 1, n + pi) - a[0] for a, n, pi in zip(axes, size, p))
        else:
            div = len(pos)
        out[(Ellipsis,) + o] = total / div
    return out


def ref_lp_pool(x, norm_type, kernel_size, stride=None, ceil_mode=False):
    k = _tup(kernel_size, x.ndim - 2)
    avg = ref_avg_pool(x ** norm_type, k, stride, 0, ceil_mode)
    return (avg * math.prod(k)) ** (1.0 / norm_type)


def _adaptive(x, output_size, reduce):
    size = x.shape[2:]
    out_size = tuple(n if o is None else o for o, n in zip(_tup(output_size, len(size)), size))
    out = np.empty(x.shape[:2] + out_size)
    for o in itertools.product(*(range(m) for m in out_size)):
        box = tuple(slice(i * n // m, -(-(i + 1) * n // m)) for i, n, m in zip(o, size, out_size))
        block = x[(Ellipsis,) + box].reshape(x.shape[:2] + (-1,))
        out[(Ellipsis,) + o] = reduce(block, axis=-1)
    return out


def ref_adaptive_avg(x, output_size):
    return _adaptive(x, output_size, np.mean)


def ref_adaptive_max(x, output_size, return_indices=False):
    return _adaptive(x, output_size, np.max)


def _ramp(rng, *shape):
    """Distinct values (a shuffled ramp, steps of 0.1) for max-pooling gradients."""
    n = math.prod(shape)
    return (rng.permutation(n).reshape(shape) - n / 2) * 0.1


def _max_samples(nd):
    def samples(rng):
        size = {1: (7,), 2: (5, 6), 3: (4, 4, 5)}[nd]
        x = _ramp(rng, 1, 2, *size)
        configs = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                   dict(kernel_size=2, stride=1, dilation=2, ceil_mode=True),
                   dict(kernel_size=3, stride=2, ceil_mode=True)]
        if nd == 3:
            configs = configs[:2]
        return [Sample((x,), c) for c in configs]
    return samples


def _avg_samples(nd):
    def samples(rng):
        size = {1: (7,), 2: (5, 6), 3: (4, 4, 5)}[nd]
        x = rng.uniform(-1, 1, size=(1, 2) + size)
        configs = [dict(kernel_size=3, stride=2, padding=1),
                   dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                        count_include_pad=False),
                   dict(kernel_size=2, ceil_mode=True), dict(kernel_size=2, stride=1)]
        if nd > 1:
            configs.append(dict(kernel_size=2, padding=1, divisor_override=3))
        if nd == 3:
            configs = configs[:2]
        return [Sample((x,), c) for c in configs]
    return samples


def _adaptive_samples(nd, ramp=False):
    def samples(rng):
        size = {1: (7,), 2: (5, 7), 3: (3, 4, 5)}[nd]
        x = _ramp(rng, 1, 2, *size) if ramp else rng.uniform(-1, 1, size=(1, 2) + size)
        # (output 1: global average pooling, one mean)
        outs = {1: (3, 4, 1), 2: ((2, 3), (3, None), 1), 3: ((2, 2, 3), (1, 1, 1))}[nd]
        return [Sample((x,), {"output_size": o}) for o in outs]
    return samples


def _lp_samples(nd):
    def samples(rng):
        size = {1: (7,), 2: (5, 6), 3: (3, 3, 4)}[nd]
        x = rng.uniform(0.5, 1.5, size=(1, 2) + size)
        return [Sample((x, 2.0, 2), {}), Sample((x, 3.0, 3), {"stride": 2, "ceil_mode": True})]
    return samples


def _unpool_samples(rng):
    x = _ramp(rng, 1, 2, 6, 6)
    values, indices = F.max_pool2d(ember.tensor(x), 2, return_indices=True)
    return [Sample((values.numpy(), indices), {"kernel_size": 2})]


def _ref_unpool(x, indices, kernel_size):
    out = np.zeros(x.shape[:2] + (x.shape[2] * 2, x.shape[3] * 2))
    flat = out.reshape(x.shape[:2] + (-1,))
    np.put_along_axis(flat, indices.numpy().reshape(x.shape[:2] + (-1,)),
                      x.reshape(x.shape[:2] + (-1,)), axis=-1)
    return out


OPS = []
for _nd in (1, 2, 3):
    OPS += [
        OpInfo(f"max_pool{_nd}d", getattr(F, f"max_pool{_nd}d"), ref_max_pool,
               _max_samples(_nd)),
        OpInfo(f"max_pool{_nd}d_with_indices", getattr(F, f"max_pool{_nd}d_with_indices"),
               lambda x, **kw: ref_max_pool(x, return_indices=True, **kw),
               _max_samples(_nd)),
        OpInfo(f"avg_pool{_nd}d", getattr(F, f"avg_pool{_nd}d"), ref_avg_pool,
               _avg_samples(_nd)),
        OpInfo(f"adaptive_avg_pool{_nd}d", getattr(F, f"adaptive_avg_pool{_nd}d"),
               ref_adaptive_avg, _adaptive_samples(_nd)),
        OpInfo(f"adaptive_max_pool{_nd}d", getattr(F, f"adaptive_max_pool{_nd}d"),
               ref_adaptive_max, _adaptive_samples(_nd, ramp=True)),
        OpInfo(f"lp_pool{_nd}d", getattr(F, f"lp_pool{_nd}d"), ref_lp_pool, _lp_samples(_nd)),
    ]
OPS.append(OpInfo("max_unpool2d", F.max_unpool2d, _ref_unpool, _unpool_samples))


def _fractional_samples(nd):
    def samples(rng):
        size = {2: (6, 7), 3: (5, 5, 6)}[nd]
        u = ember.tensor(rng.uniform(0, 1, (2, 2, nd)))
        return [Sample((_ramp(rng, 2, 2, *size), 2), {"output_size": (3,) * nd,
                                                      "_random_samples": u})]
    return samples


def _ref_fractional(x, kernel_size, output_size, _random_samples):
    """Window starts floor((i + u) alpha) - floor(u alpha), the last at size - k; u's last
    axis lists (W, H) for 2-D and (T, H, W) for 3-D."""
    nd = x.ndim - 2
    u = _random_samples.numpy()
    axis_of = [1, 0] if nd == 2 else [0, 1, 2]  # spatial dim -> sample axis
    out = np.empty(x.shape[:2] + tuple(output_size))
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        starts = []
        for dim in range(nd):
            size, o, s = x.shape[2 + dim], output_size[dim], u[n, c, axis_of[dim]]
            alpha = (size - kernel_size) / (o - 1)
            starts.append([math.floor((i + s) * alpha) - math.floor(s * alpha)
                           for i in range(o - 1)] + [size - kernel_size])
        for o in itertools.product(*(range(m) for m in output_size)):
            window = tuple(slice(st[i], st[i] + kernel_size) for st, i in zip(starts, o))
            out[(n, c) + o] = x[(n, c) + window].max()
    return out


OPS += [OpInfo(f"fractional_max_pool{_nd}d", getattr(F, f"fractional_max_pool{_nd}d"),
               _ref_fractional, _fractional_samples(_nd)) for _nd in (2, 3)]
