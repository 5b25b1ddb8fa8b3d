"""Op table entries for ember/ops/conv.py: conv1d/2d/3d and conv_transpose1d/2d/3d.

One entry per combination of stride, padding, dilation and groups (so that each gets
its own gradgradcheck), on tiny inputs.  The NumPy references add one kernel offset at
a time (a different route from ember's im2col + matrix product).
"""

import itertools

import numpy as np

import ember
from tests.ops.opinfo import OpInfo, Sample


def ref_conv(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Naive N-d convolution: out += w[:, :, k] . x[:, :, k*d + s*o] per kernel offset k."""
    nd = w.ndim - 2
    s, d = _tup(stride, nd), _tup(dilation, nd)
    k = w.shape[2:]
    if padding == "valid":
        padding = 0
    if padding == "same":
        total = [di * (ki - 1) for ki, di in zip(k, d)]
        pads = [(t // 2, t - t // 2) for t in total]
    else:
        pads = [(p, p) for p in _tup(padding, nd)]
    x = np.pad(x, [(0, 0), (0, 0)] + pads)
    out_sp = [(n - di * (ki - 1) - 1) // si + 1 for n, ki, si, di in zip(x.shape[2:], k, s, d)]
    n, cin = x.shape[:2]
    cout = w.shape[0]
    out = np.zeros((n, cout) + tuple(out_sp))
    cg, og = cin // groups, cout // groups
    for off in itertools.product(*(range(ki) for ki in k)):
        sl = tuple(slice(o * di, o * di + si * (m - 1) + 1, si)
                   for o, si, di, m in zip(off, s, d, out_sp))
        patch = x[(slice(None), slice(None)) + sl]
        for g in range(groups):
            wk = w[(slice(g * og, (g + 1) * og), slice(None)) + off]      # (og, cg)
            out[:, g * og:(g + 1) * og] += np.einsum("oc,nc...->no...", wk,
                                                     patch[:, g * cg:(g + 1) * cg])
    if b is not None:
        out += b.reshape((-1,) + (1,) * nd)
    return out


def ref_conv_transpose(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1,
                       dilation=1):
    """Naive transposed convolution: each input pixel scatters w[c] into the output."""
    nd = w.ndim - 2
    s, d = _tup(stride, nd), _tup(dilation, nd)
    p, op = _tup(padding, nd), _tup(output_padding, nd)
    k = w.shape[2:]
    n, cin = x.shape[:2]
    og = w.shape[1]
    cout = og * groups
    full = [(m - 1) * si + di * (ki - 1) + 1 + o
            for m, si, di, ki, o in zip(x.shape[2:], s, d, k, op)]
    out = np.zeros((n, cout) + tuple(full))
    ig = cin // groups
    for off in itertools.product(*(range(ki) for ki in k)):
        sl = tuple(slice(o * di, o * di + si * (m - 1) + 1, si)
                   for o, si, di, m in zip(off, s, d, x.shape[2:]))
        for g in range(groups):
            wk = w[(slice(g * ig, (g + 1) * ig), slice(None)) + off]      # (ig, og)
            out[(slice(None), slice(g * og, (g + 1) * og)) + sl] += np.einsum(
                "io,ni...->no...", wk, x[:, g * ig:(g + 1) * ig])
    crop = tuple(slice(pi, f - pi) for pi, f in zip(p, full))
    out = out[(slice(None), slice(None)) + crop]
    if b is not None:
        out = out + b.reshape((-1,) + (1,) * nd)
    return out


def _tup(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


_KERNEL = {1: (3,), 2: (2, 3), 3: (2, 2, 2)}
_SIZE = {1: (6,), 2: (4, 5), 3: (3, 3, 4)}


def _conv_samples(nd, stride, padding, dilation, groups, bias=True, batch=1):
    def samples(rng):
        cin, cout = 2 * groups, 2 * groups if groups > 1 else 3
        x = rng.uniform(-1, 1, size=(batch, cin) + _SIZE[nd])
        w = rng.uniform(-1, 1, size=(cout, cin // groups) + _KERNEL[nd])
        b = rng.uniform(-1, 1, size=cout) if bias else None
        kw = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
        return [Sample((x, w, b), kw)]
    return samples


def _transpose_samples(nd, stride, padding, dilation, groups, output_padding=0):
    def samples(rng):
        cin, cout = 2 * groups, 2 * groups if groups > 1 else 3
        x = rng.uniform(-1, 1, size=(1, cin) + tuple(max(s - 2, 2) for s in _SIZE[nd]))
        w = rng.uniform(-1, 1, size=(cin, cout // groups) + _KERNEL[nd])
        b = rng.uniform(-1, 1, size=cout)
        kw = {"stride": stride, "padding": padding, "output_padding": output_padding,
              "groups": groups, "dilation": dilation}
        return [Sample((x, w, b), kw)]
    return samples


def _conv_entries():
    ops = []
    for nd in (1, 2):
        fn = getattr(ember.nn.functional, f"conv{nd}d")
        for stride, padding, dilation, groups in itertools.product(
                (1, 2), (0, 1, "same"), (1, 2), (1, 2)):
            if padding == "same" and stride != 1:
                continue
            name = f"conv{nd}d_s{stride}_p{padding}_d{dilation}_g{groups}"
            ops.append(OpInfo(name, fn, ref_conv,
                              _conv_samples(nd, stride, padding, dilation, groups)))
        ops.append(OpInfo(f"conv{nd}d_nobias_batch2", fn, ref_conv,
                          _conv_samples(nd, 1, "valid", 1, 1, bias=False, batch=2)))
    fn3 = ember.nn.functional.conv3d
    for stride, padding, dilation, groups in ((1, 0, 1, 1), (2, 1, 1, 2), (1, "same", 2, 1),
                                              (1, 1, 1, 2)):
        ops.append(OpInfo(f"conv3d_s{stride}_p{padding}_d{dilation}_g{groups}", fn3, ref_conv,
                          _conv_samples(3, stride, padding, dilation, groups)))
    # depthwise: one filter per channel (groups == in_channels), two per channel here
    ops.append(OpInfo("conv2d_depthwise", ember.nn.functional.conv2d, ref_conv,
                      lambda rng: [Sample((rng.uniform(-1, 1, (1, 3, 4, 5)),
                                           rng.uniform(-1, 1, (6, 1, 2, 3)), None),
                                          {"padding": 1, "groups": 3})]))
    return ops


def _transpose_entries():
    ops = []
    for nd in (1, 2):
        fn = getattr(ember.nn.functional, f"conv_transpose{nd}d")
        for stride, padding, dilation, groups in itertools.product(
                (1, 2), (0, 1), (1, 2), (1, 2)):
            out_pad = 1 if stride == 2 and dilation == 1 and groups == 1 else 0
            name = f"conv_transpose{nd}d_s{stride}_p{padding}_d{dilation}_g{groups}_o{out_pad}"
            ops.append(OpInfo(name, fn, ref_conv_transpose,
                              _transpose_samples(nd, stride, padding, dilation, groups,
                                                 out_pad)))
    fn3 = ember.nn.functional.conv_transpose3d
    for stride, padding, dilation, groups in ((1, 0, 1, 1), (2, 1, 1, 2)):
        ops.append(OpInfo(f"conv_transpose3d_s{stride}_p{padding}_d{dilation}_g{groups}", fn3,
                          ref_conv_transpose,
                          _transpose_samples(3, stride, padding, dilation, groups,
                                             stride - 1)))
    return ops


OPS = _conv_entries() + _transpose_entries()
