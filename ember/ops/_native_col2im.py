"""numba kernel of the col2im of 2-D transposed convolutions (and of every convolution's
input gradient) on the general path: each column of the product added into the strided
input positions its kernel offset covers, one task per channel.

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


@native.kernel(parallel=True)
def _col2im(cols, out, sh, sw, dh, dw):
    channels, kh, kw, images, out_h, out_w = cols.shape
    for c in native.prange(channels):
        for a in range(kh):
            for b in range(kw):
                for i in range(images):
                    src, dst = cols[c, a, b, i], out[i, c]
                    for r in range(out_h):
                        line, row = src[r], dst[r * sh + a * dh]
                        for q in range(out_w):
                            row[q * sw + b * dw] += line[q]


def add_columns(cols, out, stride, dilation) -> None:
    """Add each column block of `cols` (C, kh, kw, m, oh, ow) into `out` (m, C, H, W) at
    the positions its window reads: ``out[i, c, r*s + a*d, q*s + b*d] += cols[c, a, b, i,
    r, q]``; every such position lies inside `out`."""
    native.run(_col2im, cols.size, cols, out, stride[0], stride[1], dilation[0], dilation[1])
