"""numba kernel of the col2im of 2-D transposed convolutions (and of every convolution's
input gradient) on the general path: each column of the product added into the strided
input positions its kernel offset covers, the channels cut over ember's threads.

NOTE: why.  NumPy adds one kernel offset at a time into a strided view of the padded
input (`conv_arrays._transpose_col2im`): 16 strided adds for a 4x4 kernel, each reading a
transposed (non-contiguous) block of columns.  In a DCGAN step (32 images of 32x32,
stride-2 4x4 kernels) that col2im took 24 of ember's 65 ms, against PyTorch's 27 ms for
the whole step (2-core Intel Xeon, 2026-12-06).
"""

from __future__ import annotations

import numpy as np

from . import _native as native


def supports(cols, out) -> bool:
    """Whether the kernel takes these: a (C, kh, kw, m, oh, ow) column block and a
    (m, C, H, W) target, C-contiguous float32/float64 NumPy arrays of one dtype."""
    return (native.enabled() and type(cols) is np.ndarray and type(out) is np.ndarray
            and cols.ndim == 6 and out.ndim == 4 and cols.dtype == out.dtype
            and cols.dtype in (np.float32, np.float64)
            and cols.flags.c_contiguous and out.flags.c_contiguous)


@native.kernel(inline=True)
def _interleave_add(row, phases, sw):
    """``row[k * sw + p] += phases[p, k]`` for every element of `row`; stride 2 (the
    common one) by a loop of its own, two stores a step (twice as fast as the general
    loop there)."""
    width = row.shape[0]
    if sw == 2:
        even, odd = phases[0], phases[1]
        for k in range(width // 2):
            row[2 * k] += even[k]
            row[2 * k + 1] += odd[k]
        if width % 2:
            row[width - 1] += even[width // 2]
        return
    for phase in range(sw):
        part = phases[phase]
        for k in range((width - phase + sw - 1) // sw):
            row[k * sw + phase] += part[k]


@native.kernel(parallel=True)
def _col2im(cols, out, sh, sw, dh, dw):
    """The adds of `add_columns` into `out` (C, m, H, W), channel by channel.  Across a
    row the adds go first into the row's `sw` phase rows (the columns x with x % sw == p,
    side by side), where each column block's run is contiguous and the adds vectorize;
    the phases are then interleaved into the row once.  (Added straight into the strided
    row, one element at a time, a stride-2 col2im took 2.4 of a 4.0 ms input gradient:
    64 images 16 -> 32 channels at 32x32.)"""
    channels, kh, kw, images, out_h, out_w = cols.shape   # out: (C, m, H, W)
    height, width = out.shape[2], out.shape[3]
    phase_width = (width + sw - 1) // sw
    for c in native.prange(channels):
        phases = np.empty((height, sw, phase_width), out.dtype)
        for i in range(images):
            phases[:] = 0
            for a in range(kh):
                for b in range(kw):
                    phase, shift = (b * dw) % sw, (b * dw) // sw
                    src = cols[c, a, b, i]
                    for r in range(out_h):
                        line, into = src[r], phases[r * sh + a * dh, phase, shift:]
                        for q in range(out_w):
                            into[q] += line[q]
            dst = out[c, i]
            for y in range(height):
                _interleave_add(dst[y], phases[y], sw)


def add_columns(cols, out, stride, dilation, split: bool = True) -> None:
    """Add each column block of `cols` (C, kh, kw, m, oh, ow) into `out` (m, C, H, W) at
    the positions its window reads: ``out[i, c, r*s + a*d, q*s + b*d] += cols[c, a, b, i,
    r, q]``; every such position lies inside `out`.  With `split` the channels are cut
    over ember's threads; without, it runs on the calling thread (one of a
    convolution's own thread runs)."""
    by_channel = out.transpose(1, 0, 2, 3)    # (cut over the threads by channels)
    args = (cols, by_channel, stride[0], stride[1], dilation[0], dilation[1])
    if split:
        native.run(_col2im, cols.size, *args, cut=(0, 1))
    else:
        _col2im.serial(*args)
