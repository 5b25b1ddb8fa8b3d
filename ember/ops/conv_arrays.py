"""The array kernels of the convolutions (conv.py): sliding windows, and the three
products hidden in a convolution (forward, input gradient, weight gradient) on NumPy or
CuPy arrays.

Everything rests on sliding windows: the zero-padded input seen as a strided view
of shape (N, C, *out, *kernel) (no copy), copied into a column matrix and multiplied by
the weight, one matrix product for each group and each cache-sized chunk of the batch
("im2col").  The transposed convolution runs the other way: the matrix product gives
the columns, which are added back into the (padded) output by strided slices, one per
kernel offset ("col2im", a loop over the k^d kernel positions, never over pixels); with
stride 1 two faster paths avoid the strided adds.

The window helpers (``window_view``, ``kernel_offsets``, ``pad_array``) are shared
with pooling.py and resample.py.
"""

from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import numpy as np

from . import _native as native
from . import (_native_col2im, _native_depthwise, _native_direct_conv, _native_winograd,
               _parallel)
from ._util import xp_of

# ----------------------------------------------------------------------
# sliding windows (shared with pooling.py and resample.py)


def window_view(x, kernel, stride, dilation):
    """A read-only view (..., *out, *kernel) of the windows over the last len(kernel) dims.

    `x` is already padded; ``out[i] = (size[i] - dilation[i]*(kernel[i]-1) - 1)
    // stride[i] + 1``.  No data is copied.
    """
    nd = len(kernel)
    lead, spatial = x.shape[:-nd], x.shape[-nd:]
    out = tuple((n - d * (k - 1) - 1) // s + 1
                for n, k, s, d in zip(spatial, kernel, stride, dilation))
    st = x.strides[-nd:]
    strides = (x.strides[:-nd] + tuple(a * s for a, s in zip(st, stride))
               + tuple(a * d for a, d in zip(st, dilation)))
    xp = xp_of(x)
    shape = lead + out + tuple(kernel)
    if xp is np and x.flags.c_contiguous:
        # (NumPy's `as_strided` goes through a Python-level array interface: 2.4 us a
        # call against 0.8 here, a tenth of a batch-1 convolution's bookkeeping; the
        # constructor checks the windows against the buffer's size)
        view = np.ndarray(shape, x.dtype, buffer=x, strides=strides)
        view.flags.writeable = False
        return view
    if xp is np:
        return np.lib.stride_tricks.as_strided(x, shape, strides, writeable=False)
    return xp.lib.stride_tricks.as_strided(x, shape, strides)  # (CuPy has no read-only views)


def kernel_offsets(kernel, stride, dilation, out):
    """(kernel index, slices) for every kernel position: the slices pick, from a padded
    buffer, the elements that position touches for every output (a strided view)."""
    for index in itertools.product(*(range(k) for k in kernel)):
        slices = tuple(slice(i * d, i * d + s * (o - 1) + 1, s)
                       for i, s, d, o in zip(index, stride, dilation, out))
        yield index, slices


def pad_array(x, lo, hi, value=0):
    """`x` with its last len(lo) dims padded by lo/hi elements of `value` (x itself if none)."""
    if not any(lo) and not any(hi):
        return x
    nd = len(lo)
    xp = xp_of(x)
    shape = x.shape[:-nd] + tuple(n + a + b for n, a, b in zip(x.shape[-nd:], lo, hi))
    out = xp.full(shape, value, dtype=x.dtype)
    inner = tuple(slice(a, a + n) for a, n in zip(lo, x.shape[-nd:]))
    out[(Ellipsis,) + inner] = x
    return out


# ----------------------------------------------------------------------
# array kernels


class Geometry(NamedTuple):
    """Where the windows of a convolution lie.

    `size` is the spatial shape of the convolution's input (the "a" of ``T(a, w, c)``),
    before padding; `lo`/`hi` the zeros added before/after each spatial dim.
    """

    size: tuple
    stride: tuple
    lo: tuple
    hi: tuple
    dilation: tuple
    groups: int

    # NOTE: 2-D geometries spelled out: a batch-1 layer asks these up to seven times, and
    # the general tuple-of-generator forms cost ~1 us a call
    def padded(self) -> tuple:
        size, lo, hi = self.size, self.lo, self.hi
        if len(size) == 2:
            return (size[0] + lo[0] + hi[0], size[1] + lo[1] + hi[1])
        return tuple(n + a + b for n, a, b in zip(size, lo, hi))

    def out(self, kernel) -> tuple:
        size, lo, hi, s, d = self.size, self.lo, self.hi, self.stride, self.dilation
        if len(size) == 2 and len(kernel) == 2:
            return ((size[0] + lo[0] + hi[0] - d[0] * (kernel[0] - 1) - 1) // s[0] + 1,
                    (size[1] + lo[1] + hi[1] - d[1] * (kernel[1] - 1) - 1) // s[1] + 1)
        return tuple((n - dn * (k - 1) - 1) // sn + 1
                     for n, k, sn, dn in zip(self.padded(), kernel, s, d))


# NOTE: the batch is processed in chunks of a few MB of columns, with the buffers allocated
# once per call: the column matrix is then written and read back by the matrix product
# from the CPU's cache, not memory (measured on the MNIST shapes: 1.3-1.5x faster than one
# product over the whole batch, whose columns also take 9x the input's memory for a 3x3
# kernel).  Each chunk is ONE matrix product per group, with the images side by side in
# its columns (layout (C, *kernel, images, *out)), not one small product per image: a
# multithreaded BLAS synchronizes its threads at every product, and on a busy machine
# (a descheduled thread) per-image products made the MNIST CNN step up to 2x slower.
_CHUNK_BYTES = 4 << 20
_WEIGHT_CHUNK_BYTES = 1 << 20  # (conv_weight_array's: see there)
_TRANSPOSED_MAX = 1 << 17      # (conv_weight_array's: weights per group summed transposed)
# A whole batch's columns are copied by both threads from this many elements (a worker
# takes ~40 us to start: ResNet-18's 1x1 stride-2 shortcut, 32K elements, ran 10% slower
# split; its 3x3 stride-2 layers, 295K-903K elements, ~10% faster forward + backward).
_SPLIT_COLUMNS = 1 << 17


def _chunks(xp, n: int, item_bytes: int, budget: int = _CHUNK_BYTES) -> list:
    """Slices of the batch holding about `budget` bytes of columns each (all of it on GPU).
    On CPU each of ember's threads fills buffers of its own: a chunk takes its share of
    the budget, and the threads together hold what one did (the peak memory of MNIST
    training at batch 256 grew 25-35 MiB with whole-budget chunks per thread).  The
    chunks are of near-equal sizes, the larger first (`step`, a buffer's size, is the
    first's), and as many as a multiple of the threads where the images allow, so that
    each thread's run of them (`_per_thread`) is as long as the others'.  NOTE: cut at a
    fixed size, 64 images in chunks of 13 made five, three for one thread and two for the
    other."""
    if n == 0:
        return []
    if xp is not np:
        return [slice(0, n)]
    threads = _parallel.threads()
    step = max(1, budget // threads // max(item_bytes, 1))
    count = -(-n // step)
    count = min(n, -(-count // threads) * threads)
    size, extra = divmod(n, count)
    bounds = [0]
    for i in range(count):
        bounds.append(bounds[-1] + size + (i < extra))
    return [slice(a, b) for a, b in zip(bounds, bounds[1:])]


def _dealt_evenly(xp, parts: list) -> bool:
    """Whether the chunks `parts` go to ember's threads as runs of equal counts (NumPy
    arrays, more than one thread, a multiple of the threads in chunks)."""
    threads = _parallel.threads()
    return xp is np and threads > 1 and len(parts) % threads == 0


def _per_thread(xp, parts: list) -> list:
    """The chunks `parts` dealt out to ember's threads as contiguous runs (one run on
    GPU): each thread takes its run with buffers of its own."""
    if xp is not np:
        return [parts]
    return [parts[s] for s in _parallel.split(len(parts), _parallel.threads())]


def _column_view(a, kernel, geo):
    """The windows of zero-padded `a` as a view (C, *kernel, N, *out) (nothing copied)."""
    nd = len(kernel)
    win = window_view(pad_array(a, geo.lo, geo.hi), kernel, geo.stride, geo.dilation)
    return win.transpose((1,) + tuple(range(2 + nd, 2 + 2 * nd)) + (0,)
                         + tuple(range(2, 2 + nd)))


def _chunk_columns(a, part: slice, kernel, geo, out_shape):
    """The windows of images `part` of `a` for the first `out_shape` outputs, as a view
    (C, *k, m, *out) of those images zero-padded (im2col copies it into a chunk's
    columns).  Padding a chunk at a time keeps it in cache and on the thread that copies
    it: padding the whole batch first was a serial pass over memory (64 images of 32
    channels at 16x16: 0.2-0.4 ms)."""
    view = _column_view(a[part], kernel, geo)
    return view[(Ellipsis,) + tuple(slice(0, o) for o in out_shape)]


def _fill_columns(xp, chunk, a, part: slice, kernel, geo, out_shape, split: bool) -> None:
    """im2col: the windows of images `part` of `a` into `chunk` (C, *k, m, *out); with
    `split` (a whole batch's columns, made on the calling thread) and SPLIT_COLUMNS
    elements or more, the channels are cut over ember's threads, each copying its own
    rows (NumPy's copies let go of the GIL)."""
    if not split or chunk.size < _SPLIT_COLUMNS or a.shape[1] < 2:
        xp.copyto(chunk, _chunk_columns(a, part, kernel, geo, out_shape))
        return

    def fill(channels: slice) -> None:
        xp.copyto(chunk[channels], _chunk_columns(a[:, channels], part, kernel, geo,
                                                  out_shape))

    _parallel.run_parts(fill, _parallel.split(a.shape[1], _parallel.threads()))


def _images_last(x, g: int, m: int):
    """(m, C, *out) chunk -> a fresh (G, C/G, m * prod(out)) array, images side by side."""
    rows = x.reshape(m, g, x.shape[1] // g, -1).transpose(1, 2, 0, 3)
    return rows.reshape(g, x.shape[1] // g, -1)                     # copies (transposed)


def _images_first(prod, target, m: int) -> None:
    """(G, O/G, m * P) product -> written into `target` (m, O, P)."""
    g, og = prod.shape[:2]
    target[...] = prod.reshape(g * og, m, -1).transpose(1, 0, 2)


def _pointwise(a, kernel, dtype, geo) -> bool:
    """Whether a convolution of `a` with filters of spatial size `kernel` and `dtype` is a
    1x1 one (every kernel size 1, stride 1, no padding, one group) on a float NumPy `a`
    of the filters' dtype: per image, one
    matrix product of the weight and the input as it lies (`conv_array` and its
    adjoints).  NOTE: the columns of the general path are a copy of the input for such
    a kernel; (8, 64, 32, 32) to 128 channels, float32, forward + backward: 4.4 ms
    that way, 1.7 ms so (PyTorch 2.35; 2-core Intel Xeon, 2026-12-06)."""
    return (_ones(kernel) and type(a) is np.ndarray and a.dtype == dtype
            and a.dtype in (np.float32, np.float64) and geo.groups == 1
            and _ones(geo.stride) and not any(geo.lo) and not any(geo.hi))


def _ones(sizes) -> bool:
    """Whether every one of `sizes` is 1.  (A loop: the convolutions' checks run per layer
    call, and the usual 3x3 layer fails at the first size.)"""
    for n in sizes:
        if n != 1:
            return False
    return True


def _strided_pointwise(a, kernel, dtype, geo) -> bool:
    """Whether a convolution is `_pointwise` but for a stride: it reads every s-th pixel
    and is a 1x1 convolution of those.  NOTE: the general path's columns were a strided
    copy of the input: a lone (1, 32, 16, 16) image to 64 channels at stride 2 took 60 us
    through it (PyTorch ~16)."""
    return (_ones(kernel) and not _ones(geo.stride)
            and _pointwise(a, kernel, dtype, _unstrided(geo, geo.size)))


def _read_pixels(geo) -> tuple:
    """The index of the pixels a strided 1x1 convolution reads: every s-th of each dim."""
    return (Ellipsis,) + tuple(slice(None, None, s) for s in geo.stride)


def _unstrided(geo, size):
    """`geo` at stride 1 over `size` (a strided 1x1 convolution of the pixels it reads)."""
    return geo._replace(size=tuple(size), stride=(1,) * len(geo.stride))


def _whole_window(kernel, geo) -> bool:
    """Whether each input's one window is the whole of it: one group, no padding or
    dilation, the kernel as large as the input (a single output position, whatever the
    stride).  Such a convolution is a dense layer over the flattened images, so it and
    its two adjoints are each one matrix product, with no columns and no col2im.
    NOTE: why.  DCGAN's first generator layer (100 -> 256 channels from 1x1 to 4x4)
    went through col2im one element at a time: 3.45 ms forward for 32 images against
    PyTorch's 0.57 (its last discriminator layer and LeNet's C5 are of this kind too)."""
    return (geo.groups == 1 and not any(geo.lo) and not any(geo.hi)
            and all(d == 1 for d in geo.dilation) and tuple(geo.size) == tuple(kernel))


def _flat_images(x):
    """(N, C, *size) -> (N, C * prod(size)): each image (or its gradient) as one row."""
    return x.reshape(x.shape[0], -1)


def _with_bias(out, bias):
    if bias is not None:
        out += bias.reshape((1, -1) + (1,) * (out.ndim - 2)).astype(out.dtype, copy=False)
    return out


def conv_array(a, w, geo, bias=None):
    """The convolution of `a` (N, C, *size) with `w` (Cout, C/groups, *k), plus `bias`."""
    xp = xp_of(a)
    if _whole_window(w.shape[2:], geo):
        out = _parallel.matmul(_flat_images(a), w.reshape(w.shape[0], -1).T)
        return _with_bias(out.reshape(out.shape + (1,) * (w.ndim - 2)), bias)
    if xp is np and _strided_pointwise(a, w.shape[2:], w.dtype, geo):
        # (a ResNet's 1x1 stride-2 shortcut: the pixels it reads, then a 1x1 convolution)
        a = np.ascontiguousarray(a[_read_pixels(geo)])
        geo = _unstrided(geo, a.shape[2:])
    if xp is np and _pointwise(a, w.shape[2:], w.dtype, geo):
        out = _parallel.matmul(w.reshape(w.shape[0], -1),
                               np.ascontiguousarray(a).reshape(a.shape[0], a.shape[1], -1))
        return _with_bias(out.reshape((a.shape[0], w.shape[0]) + a.shape[2:]), bias)
    if xp is np:  # the native kernels for the shapes they serve (see their `supports`)
        if _native_depthwise.supports(a, w.shape, w.dtype, geo):
            return _native_depthwise.forward(a, w, geo, bias)
        dtype = np.result_type(a, w)
        blocked = _blocked_conv(dtype, a.shape[0], w.shape[1], w.shape[0], w.shape[2:], geo)
        if blocked is not None:
            return blocked.conv_forward(a, w, geo, bias)
        if _native_direct_conv.supports(dtype, a.shape[0], w.shape[1], w.shape[0],
                                        w.shape[2:], geo):
            return _native_direct_conv.conv_forward(a, w, geo, bias)
        if _native_direct_conv.supports_strided(dtype, a.shape[0], w.shape[1], w.shape[0],
                                                w.shape[2:], geo):
            return _native_direct_conv.conv_forward_strided(a, w, geo, bias)
        if _native_winograd.supports(a.shape[0], dtype, w.shape[1], w.shape[0], w.shape[2:],
                                     geo):
            out = _native_winograd.conv_forward(a, w, geo, bias)
            if out is not None:
                return out
    kernel = tuple(w.shape[2:])
    out_shape = geo.out(kernel)
    g, co, n, c = geo.groups, w.shape[0], a.shape[0], a.shape[1]
    p = math.prod(out_shape)
    wg = w.reshape(g, co // g, -1)                                   # (G, Og, Cg*k)
    dtype = xp.result_type(a, w)
    out = xp.empty((n, co, p), dtype=dtype)
    item_bytes = c * math.prod(kernel) * p * a.itemsize
    whole = _whole_batch(xp, g, n, item_bytes, _CHUNK_BYTES)
    parts = [slice(0, n)] if whole else _chunks(xp, n, item_bytes)
    step = parts[0].stop if parts else 0
    lead = (c,) + kernel                                             # (C, *k)
    depth = math.prod(lead)                                          # rows of the columns
    # NOTE: with one group the bias rides in the product: a row of ones under the
    # columns and the bias as one more weight column.  A separate add was one more pass
    # over the output (MNIST conv2 at batch 64: 0.8 of 13.7 ms).
    fold = bias is not None and g == 1
    if fold:
        wg = xp.concatenate([wg[0], bias.reshape(co, 1).astype(wg.dtype, copy=False)],
                            axis=1)[None]                            # (1, Cout, C*k + 1)
    rows = depth + fold
    per_channel = None if bias is None or fold else bias.reshape(co, 1)

    def run(chunks):
        cols = xp.empty(rows * step * p, dtype=a.dtype)              # flat: chunks stay
        prod = xp.empty(co * step * p, dtype=dtype)                  # contiguous
        for part in chunks:
            m = part.stop - part.start
            block = cols[:rows * m * p]
            chunk = block[:depth * m * p].reshape(lead + (m,) + out_shape)
            _fill_columns(xp, chunk, a, part, kernel, geo, out_shape, whole)
            if fold:
                block[depth * m * p:] = 1
            if m == 1 and g == 1:  # one image: the product is laid out as the output
                _parallel.matmul(wg[0], block.reshape(-1, p), out=out[part].reshape(co, p))
            elif whole:  # (the product split over the threads)
                result = _parallel.matmul(wg[0], block.reshape(rows, m * p),
                                          out=prod[:co * m * p].reshape(co, m * p))
                _images_first(result[None], out[part], m)
            elif m == 1:
                _product(xp, wg, block.reshape(g, -1, p), out[part].reshape(g, co // g, p))
            else:
                result = _product(xp, wg, block.reshape(g, -1, m * p),
                                  prod[:co * m * p].reshape(g, co // g, m * p))
                _images_first(result, out[part], m)
            if per_channel is not None:  # added while the chunk is still in cache
                out[part] += per_channel

    if whole:
        run(parts)
    else:
        _parallel.run_parts(run, _per_thread(xp, parts))
    return out.reshape((n, co) + out_shape)


_lazy: dict = {}   # modules imported on first use (a function-level import costs ~1 us)


def _blocked_conv(dtype, images: int, in_channels: int, out_channels: int, kernel, geo,
                  weight: bool = False, adjoint: bool = False):
    """ops/_native_blocked_conv.py where it takes this convolution, its weight gradient
    with `weight` or its input gradient (strided) with `adjoint` (see its `supports`,
    `weight_supports` and `input_supports`), else None.  (Imported here, once the
    geometry fits: it imports numba.)"""
    if dtype != np.float32 or len(kernel) != 2 or not native.enabled():
        return None
    blocked = _lazy.get("blocked")
    if blocked is None:
        from . import _native_blocked_conv as blocked

        _lazy["blocked"] = blocked
    if weight:
        takes = blocked.weight_supports(dtype, in_channels, out_channels, kernel, geo)
    elif adjoint:
        takes = blocked.input_supports(dtype, in_channels, out_channels, kernel, geo)
    else:
        takes = blocked.supports(dtype, images, in_channels, out_channels, kernel, geo)
    return blocked if takes else None


def _whole_batch(xp, groups: int, images: int, item_bytes: int, budget: int) -> bool:
    """Whether a convolution's columns are made for the whole batch at once and go
    through one product split over the threads, rather than in chunks of images, a run
    of chunks per thread: with one group, on NumPy arrays, several images whose columns
    fit `budget` together.  NOTE: dealt out by images, a few images made uneven runs (8
    images of 512 channels at 4x4: chunks of 7 and 1) and thin products (a weight
    gradient summed image by image: 16 columns each, into a 4608 x 512 sum); ResNet-18's
    512 -> 512 layer, 8 images at 4x4, forward and both gradients: 33.5 -> 16.5 ms
    (PyTorch 10.6-13.1), its 256 -> 512 stride-2 one 10.0 -> 6.9 (5.5-6.0)."""
    return xp is np and groups == 1 and images > 1 and images * item_bytes <= budget


def conv_transpose_array(c, w, geo, bias=None):
    """The adjoint of `conv_array` in its input: (N, Cout, *out) -> (N, C, *size)."""
    xp = xp_of(c)
    if _whole_window(w.shape[2:], geo):   # (then `c` holds one output position)
        out = _parallel.matmul(_flat_images(c), w.reshape(w.shape[0], -1))
        return _with_bias(out.reshape((c.shape[0], w.shape[1] * geo.groups)
                                      + tuple(geo.size)), bias)
    if xp is np and _strided_pointwise(c, w.shape[2:], w.dtype, geo) \
            and c.shape[2:] == geo.out(w.shape[2:]):
        # (a 1x1 strided layer's input gradient: its pixels get the 1x1 layer's adjoint,
        # the others nothing; col2im took 0.83 ms for a ResNet's 32 -> 64 shortcut at
        # 16x16 over 64 images, PyTorch 0.46)
        read = conv_transpose_array(c, w, _unstrided(geo, c.shape[2:]))
        out = np.zeros(read.shape[:2] + tuple(geo.size), read.dtype)
        out[_read_pixels(geo)] = read
        return _with_bias(out, bias)
    if xp is np and _pointwise(c, w.shape[2:], w.dtype, geo) and c.shape[2:] == tuple(geo.size):
        wt = np.ascontiguousarray(w.reshape(w.shape[0], -1).T)
        out = _parallel.matmul(wt, np.ascontiguousarray(c).reshape(c.shape[0], c.shape[1], -1))
        return _with_bias(out.reshape((c.shape[0], wt.shape[0]) + c.shape[2:]), bias)
    # NOTE: the paths below up to the general one also multiply the weight by zeros (of
    # the padding, the border, or the columns between a plane's rows): an inf weight would
    # give NaN where PyTorch gives inf, so they take only finite ones.
    if (xp is np and _native_depthwise.supports(c, w.shape, w.dtype, geo)
            and np.isfinite(w).all()):
        return _native_depthwise.adjoint(c, w, geo, bias)
    if xp is np and all(s == 1 for s in geo.stride):
        co, ci, nk = w.shape[0], w.shape[1] * geo.groups, math.prod(w.shape[2:])
        dtype, inner = np.result_type(c, w), _as_conv_geometry(c, w, geo)
        winograd = _native_winograd.supports(c.shape[0], dtype, co, ci, w.shape[2:], inner)
        # NOTE: filters larger than `c` (many channels on a small plane) go to the
        # general path, whose product reads them as they lie: the helpers below check
        # them for infinities and the forward copies them flipped and transposed.  A
        # ResNet-18's 512 -> 512 layer at 4x4, 8 images: 7.19 ms so, 3.13 by col2im
        # (PyTorch 2.03); 1 image of 512 -> 512 at 7x7: 7.13 against 1.54 (2-core Intel
        # Xeon, 2026-12-07).  Winograd's forward still gains where it runs (256 -> 256
        # at 4x4, 16 images: 2.12 against 3.08).
        if (w.size <= c.size or winograd) and np.isfinite(w).all():
            # no strided col2im: the helper that writes fewer columns, unless they are
            # fewer than `c`'s channels (then copying `c` costs the most: general path)
            if co * math.prod(geo.size) < ci * math.prod(geo.padded()) or winograd \
                    or _blocked_conv(dtype, c.shape[0], co, ci, w.shape[2:], inner) is not None:
                return _transpose_as_conv(c, w, geo, bias)
            if ci * nk >= co:
                return _transpose_by_shifts(c, w, geo, bias)
    elif xp is np:
        blocked = _blocked_conv(np.result_type(c, w), c.shape[0], w.shape[1] * geo.groups,
                                w.shape[0], w.shape[2:], geo, adjoint=True)
        if blocked is not None and np.isfinite(w).all():   # (as the helpers above)
            return blocked.input_grad_strided(c, w, geo, bias)
    return _transpose_col2im(c, w, geo, bias)


def _transpose_col2im(c, w, geo, bias):
    """`conv_transpose_array` for any geometry: columns, then one strided add per offset.

    The images' chunks are dealt out to ember's threads when they divide evenly, each
    thread making its chunks' columns with a product of its own, adding them into a
    zeroed padded buffer of its own and copying the inside of that into its images of
    the result; otherwise each chunk's product and col2im are split over the threads in
    turn, into one padded buffer for the batch.  NOTE: why.  Split in turn, each chunk's
    product, col2im and the copy of its rows waited for both threads three times, and
    the products (a weight of C*k rows by the few channels of `c`) ran at ~140 GFLOP/s
    on the two threads against ~88 for each thread's own; the batch's buffer was zeroed
    and cropped by the calling thread alone (DCGAN's 128 -> 64 transposed convolution,
    32 images from 8x8 to 16x16: see docs/performance.md, thirty-third session)."""
    xp = xp_of(c)
    kernel = tuple(w.shape[2:])
    out_shape = tuple(c.shape[2:])
    nd = len(kernel)
    g, co, cg, n = geo.groups, w.shape[0], w.shape[1], c.shape[0]
    p = math.prod(out_shape)
    wt = w.reshape(g, co // g, -1).transpose(0, 2, 1)               # (G, Cg*k, Og)
    dtype = xp.result_type(c, w)
    parts = _chunks(xp, n, g * cg * math.prod(kernel) * p * c.itemsize)
    step = parts[0].stop if parts else 0
    ck = g * cg * math.prod(kernel)
    offsets = list(kernel_offsets(kernel, geo.stride, geo.dilation, out_shape))
    every = (slice(None), slice(None))
    cropped = any(geo.lo) or any(geo.hi)
    inner = (Ellipsis,) + tuple(slice(a, a + s) for a, s in zip(geo.lo, geo.size))
    per_thread = _dealt_evenly(xp, parts)
    if per_thread:
        result = xp.empty((n, g * cg) + tuple(geo.size), dtype=dtype)
    else:
        buf = xp.zeros((n, g * cg) + geo.padded(), dtype=dtype)

    def run(chunks):
        cols = xp.empty(ck * step * p, dtype=dtype)                 # flat: chunks contiguous
        scratch = (xp.empty((step, g * cg) + geo.padded(), dtype=dtype)
                   if per_thread and cropped else None)
        for part in chunks:
            m = part.stop - part.start
            rows = _images_last(c[part], g, m)                       # (G, Og, m*P)
            block = cols[:ck * m * p].reshape(g, ck // g, m * p)
            if per_thread:
                chunk = _product(xp, wt, rows, out=block)
            elif g == 1 and xp is np:  # (one product: split over ember's threads)
                chunk = _parallel.matmul(wt[0], rows[0], out=block[0])[None]
            else:
                chunk = xp.matmul(wt, rows, out=block)
            chunk = chunk.reshape((g * cg,) + kernel + (m,) + out_shape)    # (C, *k, m, *out)
            if per_thread:
                target = scratch[:m] if cropped else result[part]
                target[...] = 0
            else:
                target = buf[part]
            if nd == 2 and _native_col2im.supports(chunk, target):
                _native_col2im.add_columns(chunk, target, geo.stride, geo.dilation,
                                           split=not per_thread)
            else:
                for index, slices in offsets:                        # col2im
                    piece = chunk[(slice(None),) + index]            # (C, m, *out)
                    target[every + slices] += piece.swapaxes(0, 1)
            if per_thread and cropped:
                result[part] = target[inner]

    if per_thread:
        _parallel.run_parts(run, _per_thread(xp, parts))
    else:
        run(parts)
        result = xp.ascontiguousarray(buf[inner]) if cropped else buf
    if bias is not None:
        result += bias.reshape((-1,) + (1,) * nd)
    return result


def _transpose_by_shifts(c, w, geo, bias):
    """`conv_transpose_array` for stride 1, with a col2im of k^d contiguous adds.

    With stride 1 a kernel offset moves every output by one flat distance in the padded
    input.  So `c` is placed in a zero grid shaped like the padded input, and each offset's
    columns of the product are added to the result as ONE run per group, shifted by that
    distance (what runs past an image's end comes from the zero border).  The general
    path adds one short strided row at a time, which NumPy does 2-4x slower than a
    contiguous run: its col2im took as long as the product (MNIST conv2: 9 of 17 ms).
    Costs products over the border (17% more multiply-adds for 3x3 on 24x24 outputs).
    """
    kernel = tuple(w.shape[2:])
    nk = math.prod(kernel)
    padded = geo.padded()
    pp = math.prod(padded)
    pstrides = [math.prod(padded[j + 1:]) for j in range(len(padded))]
    offsets = [sum(i * d * s for i, d, s in zip(index, geo.dilation, pstrides))
               for index in itertools.product(*(range(k) for k in kernel))]
    g, co, cg, n = geo.groups, w.shape[0], w.shape[1], c.shape[0]
    # weight rows ordered (G, k, Cg): each offset's columns are one block per group
    wt = w.reshape(g, co // g, cg, nk).transpose(0, 3, 2, 1).reshape(g, nk * cg, co // g)
    dtype = np.result_type(c, w)
    out = np.empty((n, g * cg) + tuple(geo.size), dtype=dtype)
    parts = _chunks(np, n, g * cg * nk * pp * c.itemsize)
    step = parts[0].stop if parts else 0
    place = (slice(None), slice(None)) + tuple(slice(0, o) for o in c.shape[2:])
    crop = (slice(None), slice(None)) + tuple(slice(a, a + s) for a, s in zip(geo.lo, geo.size))

    def work(chunks):
        cols = np.empty(g * cg * nk * step * pp, dtype=dtype)
        acc = np.empty(g * cg * step * pp, dtype=dtype)
        grids = {}                                   # zero-filled once per chunk size
        for part in chunks:
            m = part.stop - part.start
            if m not in grids:
                grids[m] = np.zeros((co, m) + padded, dtype=c.dtype)
            grid = grids[m]
            grid[place] = c[part].swapaxes(0, 1)
            run = cg * m * pp                        # one group's columns for one offset
            prod = _product(np, wt, grid.reshape(g, co // g, m * pp),
                            cols[:g * nk * run].reshape(g, nk * cg, m * pp))
            prod = prod.reshape(g, nk, run)
            total = acc[:g * run].reshape(g, run)
            np.copyto(total, prod[:, 0])             # offsets[0] == 0
            length = run - max(offsets)
            for j in range(1, nk):                                   # col2im
                off = offsets[j]
                total[:, off:off + length] += prod[:, j, :length]
            result = total.reshape((g * cg, m) + padded)[crop]
            np.copyto(out[part], result.swapaxes(0, 1))

    _parallel.run_parts(work, _per_thread(np, parts))
    if bias is not None:
        out += bias.reshape((-1,) + (1,) * len(kernel))
    return out


def _transpose_as_conv(c, w, geo, bias):
    """`conv_transpose_array` for stride 1, as a forward convolution of `c`.

    With stride 1, ``x[i] = sum_k c[i + lo - d*k] w[k]``: the correlation of `c`, padded
    by ``d*(k-1) - lo`` before (cropped where negative), with the kernel flipped and its
    in/out channels swapped: `conv_array`'s im2col and products, no col2im at all.  Its
    columns come from `c`, so it wins when `c` has fewer channels than the result
    (depthwise: 2x faster than col2im; MNIST conv2, 64 -> 32 channels: 1.3x slower).
    """
    kernel = tuple(w.shape[2:])
    nd, g = len(kernel), geo.groups
    co, cg = w.shape[:2]
    lo, hi = _as_conv_padding(c, w, geo)
    inner = _as_conv_geometry(c, w, geo, lo, hi)
    crop = tuple(slice(max(-a, 0), o - max(-b, 0)) for a, b, o in zip(lo, hi, c.shape[2:]))
    c = c[(Ellipsis,) + crop]
    flipped = w[(Ellipsis,) + (slice(None, None, -1),) * nd]
    wt = flipped.reshape((g, co // g, cg) + kernel).swapaxes(1, 2)
    wt = wt.reshape((g * cg, co // g) + kernel)                      # (C, Cout/G, *k)
    return conv_array(c, wt, inner, bias)


def _as_conv_padding(c, w, geo) -> tuple:
    """(lo, hi) padding of `c` in `_transpose_as_conv` (negative: cropped)."""
    kernel = tuple(w.shape[2:])
    lo = [d * (k - 1) - a for k, d, a in zip(kernel, geo.dilation, geo.lo)]
    # c_pad must span size + d*(k-1): what is left after lo and c goes after it
    hi = [n + a - o for n, a, o in zip(geo.size, geo.lo, c.shape[2:])]
    return lo, hi


def _as_conv_geometry(c, w, geo, lo=None, hi=None) -> Geometry:
    """The geometry of `_transpose_as_conv`'s forward convolution of `c` (once cropped)."""
    if lo is None:
        lo, hi = _as_conv_padding(c, w, geo)
    size = tuple(o - max(-a, 0) - max(-b, 0) for a, b, o in zip(lo, hi, c.shape[2:]))
    return Geometry(size, geo.stride, tuple(max(a, 0) for a in lo),
                    tuple(max(b, 0) for b in hi), geo.dilation, geo.groups)


def _product(xp, a, b, out=None):
    """``a @ b`` (into `out`) for a thread's part of a convolution: with NumPy arrays on
    the BLAS of ember's threads (MKL's where chosen: ops/_mkl.py).  NOTE: MNIST conv2's
    weight gradient products, (288, m*576) @ (m*576, 64) for chunks of m images, took
    490-2164 us on MKL against 657-2681 on NumPy's OpenBLAS, one thread, and the CNN
    training step 29.8 against 31.2 ms (2-core Intel Xeon, 2026-12-05); Winograd's 36
    small products per image stay on OpenBLAS (35 against 43 us)."""
    if xp is np:
        return _parallel.product_here(a, b, out)
    return xp.matmul(a, b, out=out)


def _direct_weight(a, c, kernel, geo):
    """The weight gradient by the blocked or direct kernels where they serve (few
    channels, stride 1 or 2: sums over each plane's taps, no columns); else None, as
    where it is not finite."""
    args = (np.result_type(a, c), a.shape[0], a.shape[1], c.shape[1], kernel, geo)
    blocked = _blocked_conv(*args, weight=True)
    if blocked is not None:
        return blocked.weight_grad(a, c, geo, kernel[0])
    if _native_direct_conv.weight_supports(*args):
        return _native_direct_conv.weight_grad(a, c, geo)
    if _native_direct_conv.supports_strided(*args):
        return _native_direct_conv.weight_grad_strided(a, c, geo)
    return None


def conv_weight_array(a, c, kernel, geo):
    """The adjoint of `conv_array` in its weight: <conv(a, w), c> = <w, conv_weight(a, c)>."""
    xp = xp_of(a)
    kernel = tuple(kernel)
    if _whole_window(kernel, geo):   # (then `c` holds one output position)
        weight = _parallel.matmul(_flat_images(c).T, _flat_images(a))
        return weight.reshape((c.shape[1], a.shape[1]) + kernel)
    if (xp is np and type(c) is np.ndarray and c.shape[2:] == geo.out(kernel)
            and _strided_pointwise(a, kernel, c.dtype, geo)):
        # (a 1x1 strided layer: the 1x1 weight gradient of the pixels it reads; by
        # im2col's strided columns 0.73 ms for a ResNet's 16 -> 32 shortcut at 32x32 over
        # 64 images, PyTorch 0.41)
        a = np.ascontiguousarray(a[_read_pixels(geo)])
        geo = _unstrided(geo, a.shape[2:])
    if (xp is np and type(c) is np.ndarray and c.shape[2:] == a.shape[2:]
            and _pointwise(a, kernel, c.dtype, geo)):
        n, ch, co = a.shape[0], a.shape[1], c.shape[1]
        a3 = np.ascontiguousarray(a).reshape(n, ch, -1)
        c3 = np.ascontiguousarray(c).reshape(n, co, -1)
        per_image = _parallel.matmul(c3, a3.transpose(0, 2, 1))      # (N, Cout, C)
        return per_image.sum(axis=0).reshape((co, ch) + kernel)
    if (xp is np and type(c) is np.ndarray and c.shape[1] == a.shape[1]
            and _native_depthwise.supports(a, (a.shape[1], 1) + kernel, c.dtype, geo)):
        weight = _native_depthwise.weight_grad(a, c, kernel, geo)
        if weight is not None:
            return weight
    if xp is np and type(c) is np.ndarray and c.shape[2:] == geo.out(kernel):
        weight = _direct_weight(a, c, kernel, geo)
        if weight is not None:
            return weight
    if (xp is np and type(c) is np.ndarray and a.dtype == c.dtype
            and c.shape[2:] == geo.out(kernel)
            and _native_winograd.weight_supports(a.shape[0], a.dtype, a.shape[1], c.shape[1],
                                                 kernel, geo)):
        weight = _native_winograd.conv_weight(a, c, geo)
        if weight is not None:
            return weight
    g, co, n, ch = geo.groups, c.shape[1], a.shape[0], a.shape[1]
    p = math.prod(c.shape[2:])
    ck = ch * math.prod(kernel)
    dtype = xp.result_type(a, c)
    # NOTE: smaller chunks than the forward's, and for small filters the transposed
    # product (columns @ rows^T, accumulated as (Cg*k, Og), transposed at the end): MNIST
    # conv2's weight gradient at batch 64 took 10.7 ms so, against 13.8-14.5 with 4 MB
    # chunks and rows @ columns^T.  For large filters that final transposed copy cost
    # more than the whole product (NumPy copies a transpose at ~6 ns an element: 512 ->
    # 512 channels, 3x3, 15.6 ms against the product's 3.3), so from TRANSPOSED_MAX
    # weights on they accumulate as (Og, Cg*k), rows @ columns^T (0-5% slower products).
    by_rows = ck // g * (co // g) > _TRANSPOSED_MAX
    if _whole_batch(xp, g, n, ck * p * a.itemsize, _CHUNK_BYTES):
        columns = xp.empty((ck, n * p), dtype=a.dtype)
        _fill_columns(xp, columns.reshape((ch,) + kernel + (n,) + tuple(c.shape[2:])), a,
                      slice(0, n), kernel, geo, c.shape[2:], True)
        rows = _images_last(c, 1, n)[0]                              # (Cout, N*P)
        return _parallel.matmul(rows, columns.T).reshape((co, ch) + kernel)
    parts = _chunks(xp, n, ck * p * a.itemsize, budget=_WEIGHT_CHUNK_BYTES)
    step = parts[0].stop if parts else 0
    lead = (ch,) + kernel                                            # (C, *k)

    def run(chunks):
        cols = xp.empty(ck * step * p, dtype=a.dtype)               # flat: chunks contiguous
        sums = xp.zeros((g, co // g, ck // g) if by_rows else (g, ck // g, co // g),
                        dtype=dtype)
        for part in chunks:
            m = part.stop - part.start
            chunk = cols[:ck * m * p].reshape(lead + (m,) + tuple(c.shape[2:]))
            # (a transposed convolution's output_padding can leave windows that `c` does
            # not cover: only the first of them)
            xp.copyto(chunk, _chunk_columns(a, part, kernel, geo, c.shape[2:]))
            rows = _images_last(c[part], g, m)                       # (G, Og, m*P)
            columns = chunk.reshape(g, ck // g, m * p)
            if by_rows:
                sums += _product(xp, rows, columns.transpose(0, 2, 1))
            else:
                sums += _product(xp, columns, rows.transpose(0, 2, 1))
        return sums

    threads = _parallel.run_parts(run, _per_thread(xp, parts))
    total = threads[0]
    for more in threads[1:]:   # (added in place: a new array per sum was one more pass)
        total += more
    if not by_rows:
        total = xp.ascontiguousarray(total.transpose(0, 2, 1))
    return total.reshape((co, ch // g) + kernel)
