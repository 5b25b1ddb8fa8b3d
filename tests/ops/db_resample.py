"""Op table entries for the resampling ops: interpolate, pad, pixel_shuffle/unshuffle,
unfold/fold, grid_sample, affine_grid, cosine_similarity, pdist and one_hot.

The NumPy references build each separable resampling as a dense (out, in) matrix per
dim from the textbook formulas, use ``np.pad`` for padding, and loop over positions
elsewhere.  Modes without a simple reference here (bicubic grid_sample, reflection
padding of grids, antialiasing) are checked against PyTorch in tests/compat.
"""

import itertools

import numpy as np

import ember
from tests.ops.opinfo import OpInfo, Sample

F = ember.nn.functional


# ----------------------------------------------------------------------
# interpolate


def _matrix(mode, n_in, n_out, align_corners):
    """The (n_out, n_in) resampling matrix of one dim (size given, no scale_factor)."""
    m = np.zeros((n_out, n_in))
    for o in range(n_out):
        if mode == "nearest":
            m[o, min(int(np.floor(o * n_in / n_out)), n_in - 1)] = 1
            continue
        if align_corners:
            src = o * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        else:
            src = (o + 0.5) * n_in / n_out - 0.5
        if mode == "linear":
            src = max(src, 0.0)
            i0 = int(np.floor(src))
            t = src - i0
            m[o, min(i0, n_in - 1)] += 1 - t
            m[o, min(i0 + 1, n_in - 1)] += t
        else:  # cubic, Keys with a = -0.75, edges clamped
            i0 = int(np.floor(src))
            t = src - i0
            for j in range(-1, 3):
                s = abs(t - j)
                a = -0.75
                w = ((a + 2) * s - (a + 3)) * s * s + 1 if s <= 1 else (
                    ((a * s - 5 * a) * s + 8 * a) * s - 4 * a)
                m[o, min(max(i0 + j, 0), n_in - 1)] += w
    return m


def ref_interpolate(x, size, mode="nearest", align_corners=None):
    kind = {"bilinear": "linear", "trilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    sizes = size if isinstance(size, tuple) else (size,) * (x.ndim - 2)
    for d, n_out in enumerate(sizes):
        m = _matrix(kind, x.shape[2 + d], n_out, bool(align_corners))
        x = np.moveaxis(np.tensordot(m, np.moveaxis(x, 2 + d, 0), axes=1), 0, 2 + d)
    return x


def _interp_samples(nd, mode, corners=(None,)):
    def samples(rng):
        size = {1: (5,), 2: (4, 5), 3: (3, 3, 4)}[nd]
        x = rng.uniform(-1, 1, size=(1, 2) + size)
        outs = {1: (8, 3), 2: ((6, 7), (3, 2)), 3: ((4, 5, 3),)}[nd]
        return [Sample((x,), {"size": o, "mode": mode, "align_corners": c})
                for o in outs for c in corners]
    return samples


def _ref_area(x, size, mode="area", align_corners=None):
    from tests.ops.db_pooling import ref_adaptive_avg

    return ref_adaptive_avg(x, size)


# ----------------------------------------------------------------------
# padding, pixel shuffle, unfold / fold


def ref_pad(x, pad, mode="constant", value=0.0):
    widths = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        widths[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    np_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
               "circular": "wrap"}[mode]
    if mode == "constant":
        return np.pad(x, widths, constant_values=value)
    return np.pad(x, widths, mode=np_mode)


def _pad_samples(mode):
    def samples(rng):
        x = rng.uniform(-1, 1, size=(1, 2, 4, 5))
        out = [Sample((x[0], (1, 2)), {"mode": mode}), Sample((x, (2, 1, 1, 3)), {"mode": mode})]
        if mode == "constant":
            out.append(Sample((x, (1, 0, 2, 1, 1, 1)), {"value": 0.5}))
        else:
            out.append(Sample((rng.uniform(-1, 1, size=(1, 2, 3, 3, 4)), (1, 2, 2, 1, 1, 2)),
                              {"mode": mode}))
        return out
    return samples


def ref_channel_shuffle(x, groups=3):
    n, c = x.shape[:2]
    return x.reshape(n, groups, c // groups, *x.shape[2:]).swapaxes(1, 2).reshape(x.shape)


def ref_pixel_shuffle(x, upscale_factor):
    r = upscale_factor
    n, c, h, w = x.shape
    out = np.empty((n, c // (r * r), h * r, w * r))
    for i, j in itertools.product(range(r), range(r)):
        out[:, :, i::r, j::r] = x[:, i * r + j::r * r]
    return out


def ref_pixel_unshuffle(x, downscale_factor):
    r = downscale_factor
    n, c, h, w = x.shape
    out = np.empty((n, c * r * r, h // r, w // r))
    for i, j in itertools.product(range(r), range(r)):
        out[:, i * r + j::r * r] = x[:, :, i::r, j::r]
    return out


def _blocks(size, kernel, dilation, padding, stride):
    return [(n + 2 * p - d * (k - 1) - 1) // s + 1
            for n, k, d, p, s in zip(size, kernel, dilation, padding, stride)]


def ref_unfold(x, kernel_size, dilation=1, padding=0, stride=1):
    k, d, p, s = (_pair(v) for v in (kernel_size, dilation, padding, stride))
    xp = np.pad(x, [(0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])])
    bh, bw = _blocks(x.shape[2:], k, d, p, s)
    cols = np.empty((x.shape[0], x.shape[1], k[0], k[1], bh, bw))
    for i, j, a, b in itertools.product(range(k[0]), range(k[1]), range(bh), range(bw)):
        cols[:, :, i, j, a, b] = xp[:, :, a * s[0] + i * d[0], b * s[1] + j * d[1]]
    return cols.reshape(x.shape[0], -1, bh * bw)


def ref_fold(cols, output_size, kernel_size, dilation=1, padding=0, stride=1):
    k, d, p, s, size = (_pair(v) for v in (kernel_size, dilation, padding, stride,
                                           output_size))
    n = cols.shape[0]
    c = cols.shape[1] // (k[0] * k[1])
    bh, bw = _blocks(size, k, d, p, s)
    cols = cols.reshape(n, c, k[0], k[1], bh, bw)
    out = np.zeros((n, c, size[0] + 2 * p[0], size[1] + 2 * p[1]))
    for i, j, a, b in itertools.product(range(k[0]), range(k[1]), range(bh), range(bw)):
        out[:, :, a * s[0] + i * d[0], b * s[1] + j * d[1]] += cols[:, :, i, j, a, b]
    return out[:, :, p[0]:p[0] + size[0], p[1]:p[1] + size[1]]


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def _unfold_samples(rng):
    x = rng.uniform(-1, 1, size=(1, 2, 4, 5))
    return [Sample((x,), {"kernel_size": 2}),
            Sample((x,), {"kernel_size": (2, 3), "dilation": (1, 2), "padding": 1, "stride": 2})]


def _fold_samples(rng):
    return [Sample((rng.uniform(-1, 1, size=(1, 8, 12)),), {"output_size": (4, 5),
                                                             "kernel_size": 2}),
            Sample((rng.uniform(-1, 1, size=(1, 12, 6)),),
                   {"output_size": (4, 5), "kernel_size": (2, 3), "dilation": (1, 2),
                    "padding": 1, "stride": 2})]


# ----------------------------------------------------------------------
# grid_sample, affine_grid


def ref_grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    """Bilinear/nearest sampling of (N, C, H, W) at grid points, zeros or border padding."""
    n, c, h, w = x.shape
    out = np.zeros((n, c) + grid.shape[1:3])

    def coord(g, size):
        v = (g + 1) / 2 * (size - 1) if align_corners else ((g + 1) * size - 1) / 2
        return np.clip(v, 0, size - 1) if padding_mode == "border" else v

    def pixel(b, yy, xx):
        if 0 <= yy < h and 0 <= xx < w:
            return x[b, :, yy, xx]
        return np.zeros(c)

    for b, i, j in itertools.product(range(n), range(grid.shape[1]), range(grid.shape[2])):
        gx, gy = coord(grid[b, i, j, 0], w), coord(grid[b, i, j, 1], h)
        if mode == "nearest":
            out[b, :, i, j] = pixel(b, int(np.rint(gy)), int(np.rint(gx)))
            continue
        x0, y0 = int(np.floor(gx)), int(np.floor(gy))
        tx, ty = gx - x0, gy - y0
        out[b, :, i, j] = (pixel(b, y0, x0) * (1 - tx) * (1 - ty) + pixel(b, y0, x0 + 1) * tx
                           * (1 - ty) + pixel(b, y0 + 1, x0) * (1 - tx) * ty
                           + pixel(b, y0 + 1, x0 + 1) * tx * ty)
    return out


def _grid_samples(mode, padding_mode, corners=(False, True), nd=2):
    def samples(rng):
        out = []
        for c in corners:
            if nd == 2:
                x = rng.uniform(-1, 1, size=(1, 2, 3, 4))
                grid = rng.uniform(-1.2, 1.2, size=(1, 2, 3, 2))
            else:
                x = rng.uniform(-1, 1, size=(1, 2, 2, 3, 3))
                grid = rng.uniform(-1.2, 1.2, size=(1, 2, 2, 2, 3))
            out.append(Sample((x, grid), {"mode": mode, "padding_mode": padding_mode,
                                          "align_corners": c}))
        return out
    return samples


def ref_affine_grid(theta, size, align_corners=False):
    n, _, h, w = size

    def base(m):
        pts = np.linspace(-1, 1, m)
        return pts if align_corners else pts * (m - 1) / m

    ys, xs = np.meshgrid(base(h), base(w), indexing="ij")
    points = np.stack([xs, ys, np.ones_like(xs)], -1)          # (H, W, 3)
    return np.einsum("hwk,nck->nhwc", points, theta)


def _affine_samples(rng):
    theta = rng.uniform(-1, 1, size=(2, 2, 3))
    return [Sample((theta, (2, 1, 3, 4)), {"align_corners": c}) for c in (False, True)]


def _affine3d_samples(rng):
    return [Sample((rng.uniform(-1, 1, size=(1, 3, 4)), (1, 1, 2, 3, 2)),
                   {"align_corners": False})]


# ----------------------------------------------------------------------
# distances, one_hot


def ref_cosine_similarity(x1, x2, dim=1, eps=1e-8):
    n1 = np.maximum(np.linalg.norm(x1, axis=dim, keepdims=True), eps)
    n2 = np.maximum(np.linalg.norm(x2, axis=dim, keepdims=True), eps)
    return np.sum(x1 / n1 * (x2 / n2), axis=dim)


def ref_cdist(a, b, p=2.0, compute_mode=None):
    diff = np.abs(a[..., :, None, :] - b[..., None, :, :])
    return (diff ** p).sum(-1) ** (1.0 / p)


def ref_pdist(x, p=2):
    n = x.shape[0]
    return np.asarray([np.linalg.norm(x[i] - x[j], ord=p)
                       for i in range(n) for j in range(i + 1, n)])


def ref_one_hot(x, num_classes=-1):
    n = int(x.max()) + 1 if num_classes == -1 else num_classes
    return np.eye(n, dtype=np.int64)[x]


OPS = [
    OpInfo("interpolate_nearest_1d", F.interpolate, ref_interpolate, _interp_samples(1, "nearest")),
    OpInfo("interpolate_nearest_2d", F.interpolate, ref_interpolate, _interp_samples(2, "nearest")),
    OpInfo("interpolate_nearest_3d", F.interpolate, ref_interpolate, _interp_samples(3, "nearest")),
    OpInfo("interpolate_nearest_exact", F.interpolate, None, _interp_samples(2, "nearest-exact")),
    OpInfo("interpolate_linear", F.interpolate, ref_interpolate,
           _interp_samples(1, "linear", (False, True))),
    OpInfo("interpolate_bilinear", F.interpolate, ref_interpolate,
           _interp_samples(2, "bilinear", (False, True))),
    OpInfo("interpolate_bicubic", F.interpolate, ref_interpolate,
           _interp_samples(2, "bicubic", (False, True))),
    OpInfo("interpolate_trilinear", F.interpolate, ref_interpolate,
           _interp_samples(3, "trilinear", (False, True))),
    OpInfo("interpolate_area", F.interpolate, _ref_area, _interp_samples(2, "area")),
    OpInfo("interpolate_bilinear_antialias",
           lambda x, **kw: F.interpolate(x, antialias=True, **kw), None,
           _interp_samples(2, "bilinear", (False, True))),
    OpInfo("interpolate_bicubic_antialias",
           lambda x, **kw: F.interpolate(x, antialias=True, **kw), None,
           _interp_samples(2, "bicubic", (False,))),
    OpInfo("pad_constant", F.pad, ref_pad, _pad_samples("constant")),
    OpInfo("pad_reflect", F.pad, ref_pad, _pad_samples("reflect")),
    OpInfo("pad_replicate", F.pad, ref_pad, _pad_samples("replicate")),
    OpInfo("pad_circular", F.pad, ref_pad, _pad_samples("circular")),
    OpInfo("channel_shuffle", lambda x: F.channel_shuffle(x, 3), ref_channel_shuffle,
           lambda rng: [Sample((rng.uniform(-1, 1, size=(2, 6, 2, 3)),)),
                        Sample((rng.uniform(-1, 1, size=(1, 6, 4)),))]),
    OpInfo("pixel_shuffle", F.pixel_shuffle, ref_pixel_shuffle,
           lambda rng: [Sample((rng.uniform(-1, 1, size=(1, 8, 2, 3)), 2))]),
    OpInfo("pixel_unshuffle", F.pixel_unshuffle, ref_pixel_unshuffle,
           lambda rng: [Sample((rng.uniform(-1, 1, size=(1, 2, 4, 6)), 2))]),
    OpInfo("nn_unfold", F.unfold, ref_unfold, _unfold_samples),
    OpInfo("nn_fold", F.fold, ref_fold, _fold_samples),
    OpInfo("grid_sample_bilinear_zeros", F.grid_sample, ref_grid_sample,
           _grid_samples("bilinear", "zeros")),
    OpInfo("grid_sample_bilinear_border", F.grid_sample, ref_grid_sample,
           _grid_samples("bilinear", "border")),
    OpInfo("grid_sample_bilinear_reflection", F.grid_sample, None,
           _grid_samples("bilinear", "reflection")),
    OpInfo("grid_sample_nearest", F.grid_sample, ref_grid_sample,
           _grid_samples("nearest", "zeros"), grad_order=1),
    OpInfo("grid_sample_bicubic", F.grid_sample, None,
           _grid_samples("bicubic", "border", corners=(True,))),
    OpInfo("grid_sample_3d", F.grid_sample, None,
           _grid_samples("bilinear", "zeros", corners=(False,), nd=3)),
    OpInfo("affine_grid", F.affine_grid, ref_affine_grid, _affine_samples),
    OpInfo("affine_grid_3d", F.affine_grid, None, _affine3d_samples),
    OpInfo("cosine_similarity", F.cosine_similarity, ref_cosine_similarity,
           lambda rng: [Sample((rng.uniform(-1, 1, size=(3, 4)), rng.uniform(-1, 1, size=(3, 4)))),
                        Sample((rng.uniform(-1, 1, size=(2, 3)), rng.uniform(-1, 1, size=(3,))),
                               {"dim": -1})]),
    OpInfo("pdist", F.pdist, ref_pdist,
           lambda rng: [Sample((rng.uniform(-1, 1, size=(4, 3)),)),
                        Sample((rng.uniform(-1, 1, size=(3, 2)),), {"p": 3})]),
    OpInfo("cdist", ember.cdist, ref_cdist,
           lambda rng: [Sample((rng.uniform(-1, 1, size=(3, 4)), rng.uniform(-1, 1, size=(2, 4)))),
                        Sample((rng.uniform(-1, 1, size=(2, 3, 2)),
                                rng.uniform(-1, 1, size=(1, 4, 2))), {"p": 1.0}),
                        Sample((rng.uniform(-1, 1, size=(3, 2)), rng.uniform(-1, 1, size=(2, 2))),
                               {"p": 3.0})]),
    OpInfo("cdist_matrix_product",
           lambda a, b: ember.cdist(a, b, compute_mode="use_mm_for_euclid_dist"), ref_cdist,
           lambda rng: [Sample((rng.uniform(-1, 1, size=(3, 4)), rng.uniform(-1, 1, size=(2, 4)))),
                        Sample((rng.uniform(-1, 1, size=(2, 3, 2)),
                                rng.uniform(-1, 1, size=(2, 4, 2))))]),
    OpInfo("one_hot", F.one_hot, ref_one_hot,
           lambda rng: [Sample((rng.uniform(0, 1.3, size=(2, 3)),)),
                        Sample((rng.uniform(0, 1.3, size=(4,)),), {"num_classes": 6})],
           dtypes=("int64",), grad_order=0),
]
