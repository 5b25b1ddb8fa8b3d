"""Work split over ember's threads (ops/_workers.py): a large matrix product cut into
parts, each a single-threaded BLAS call, and any job given as parts.

NOTE: why ember splits products itself rather than let OpenBLAS thread them.  After each
threaded call OpenBLAS's worker threads keep spinning for ~0.1 s (2**28 cycles; the
OPENBLAS_THREAD_TIMEOUT it reads once, when it loads), each holding a core.  A training
step calls BLAS every few milliseconds, so they never stop, and whatever else ember
runs on a second thread (a convolution split over the batch, numba's parallel kernels)
finds no core free.  On the 2-core test VM a convolution split over two threads took
6.8 ms with no threaded product before it and 12.9 ms right after one, as long as on
one thread, while the process kept both cores busy (`/proc/self/task`: the OpenBLAS
worker at 100%).  So `_threads.take_over_blas` keeps OpenBLAS on one thread, and the
threads `ember.set_num_threads` asks for are ember's.
"""

from __future__ import annotations

import threading

import numpy as np

from . import _blas, _native_fill, _workers
from ._util import xp_of

# Products of fewer multiply-adds stay whole on the calling thread: a part's hand-off
# costs a few microseconds, and 1M multiply-adds take ~12 us on one thread.
SPLIT_MIN = 1 << 20
# A row times a matrix (a batch-1 linear layer) reads the whole matrix once per call: it
# is bound by memory, and two threads read it twice as fast, from this many elements.
# NOTE: one row, float32, with a bias, 2 threads, us, split / whole / PyTorch (2-core
# Intel Xeon, 2026-12-08): 784 -> 512 21.0 / 35.0 / 21.8, 1024 -> 512 26.5 / 60.9 /
# 28.5, 640 -> 512 20.3 / 23.6 / 19.3; at 262K even (1024 -> 256 18.4 / 18.9 / 16.6);
# below, the hand-off loses (512 -> 256 13.4 / 8.8 / 11.0).
ROW_SPLIT_MIN = 1 << 18

# A batch of products is split only when each one is this large: two threads running
# many small single-threaded OpenBLAS products at once slowed each other (GPT's
# attention, 128 of 64x32 @ 32x64: 555 us split, 347 us on one thread).
BATCH_ITEM_MIN = 1 << 18

set_threads = _workers.set_threads
threads = _workers.threads

_busy = threading.local()
_run_lock = threading.Lock()


def split(n: int, parts: int) -> list:
    """`n` items as `parts` contiguous slices of near-equal size (no empty ones)."""
    parts = max(1, min(parts, n))
    bounds = [n * i // parts for i in range(parts + 1)]
    return [slice(bounds[i], bounds[i + 1]) for i in range(parts)]


def _claim():
    """The workers, for a caller that may hand them parts now; None when it may not:
    one thread, a part of split work itself, or another thread's split in progress."""
    if threads() <= 1 or getattr(_busy, "on", False) or not _run_lock.acquire(blocking=False):
        return None
    _busy.on = True
    return _workers.workers()


def _release() -> None:
    _busy.on = False
    _run_lock.release()


def run_parts(fn, parts: list) -> list:
    """``[fn(p) for p in parts]``, one part per thread (the first on the calling thread;
    parts past the thread count run there too).  `fn` must release the GIL for this to
    pay, as BLAS, NumPy's copies and numba kernels do."""
    workers = _claim() if len(parts) > 1 else None
    if workers is None:
        return [fn(p) for p in parts]
    try:
        posted = list(zip(workers, parts[1:]))
        for worker, part in posted:
            worker.post(fn, part)
        mine = [fn(parts[0])] + [fn(p) for p in parts[len(posted) + 1:]]
        return mine[:1] + [worker.join() for worker, _ in posted] + mine[1:]
    finally:
        _release()


# From this many elements a C-contiguous copy of a strided array is split over the threads
# (`contiguous`).  NOTE: float32 transposes (0, 2, 1, 3) made contiguous, one thread
# against split (2-core Intel Xeon, 2026-12-05): 262K elements 44 against 76 us (the
# worker's part waits for the GIL), 1M 301 against 266, 4M 1202 against 728.
COPY_SPLIT_MIN = 1 << 20
# A copy whose last dim is strided (a transpose of the last two dims: each row of the copy
# gathers across the source's rows) costs more an element once it leaves the core's
# caches, and is split from this many.  NOTE: float32 (32, 64, 256) transposed in its
# last two dims, one thread against split: 0.54-0.61 against 0.35-0.38 ms; (32, 32, 256)
# 0.12 against 0.13 (AMD EPYC, 2026-12-07).
GATHERING_COPY_SPLIT_MIN = 1 << 19


def contiguous(a: np.ndarray) -> np.ndarray:
    """`a` itself when C-contiguous, else a C-contiguous copy (`copy`)."""
    return a if a.flags.c_contiguous else copy(a)


def copy(a):
    """A new C-contiguous copy of `a`: large NumPy ones copied by the threads, a block of
    leading rows each (NumPy's copy lets go of the GIL); another library's (CuPy) by its
    own copy."""
    if type(a) is not np.ndarray or a.ndim == 0 or a.shape[0] < 2 or threads() <= 1:
        return a.copy()
    if 0 in a.strides:
        # a broadcast (a mean's gradient): a few values written out, which NumPy does
        # twice as fast on this thread as cut in Python parts ((8, 64, 1, 1) to (8, 64,
        # 32, 32) float32: 39 against 75-82 us); one value, large, by the threads' fill
        return _native_fill.contiguous(a) if not any(a.strides) else a.copy()
    gathering = a.strides[-1] != a.itemsize
    if a.size < (GATHERING_COPY_SPLIT_MIN if gathering else COPY_SPLIT_MIN):
        return a.copy()
    out = np.empty(a.shape, a.dtype)
    run_parts(lambda rows: np.copyto(out[rows], a[rows]), split(a.shape[0], threads()))
    return out


# From this many elements ``ufunc(x, y)`` of two same-shaped arrays that the native
# kernels do not take (views: the two slices of cat's gradient summed for a tensor
# concatenated with itself) is cut over the threads (`binary`).  NOTE: two (4096, 256)
# float32 halves of a (4096, 512) array added: 0.55-0.67 ms on one thread, 0.35-0.38
# split (AMD EPYC, 2026-12-07).
BINARY_SPLIT_MIN = 1 << 20


def splits_binary(x, y) -> bool:
    """Whether `binary` cuts ``ufunc(x, y)``: NumPy arrays of one shape and dtype, large
    (BINARY_SPLIT_MIN), of at least two leading rows, with threads to cut over."""
    return (type(x) is np.ndarray and x.size >= BINARY_SPLIT_MIN and type(y) is np.ndarray
            and x.shape == y.shape and x.dtype == y.dtype and x.shape[0] > 1
            and threads() > 1)


def binary(ufunc, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``ufunc(x, y)`` into a new C-contiguous array, a block of leading rows per thread
    (NumPy's loops let go of the GIL): for `splits_binary` arrays."""
    out = np.empty(x.shape, np.result_type(x, y))
    run_parts(lambda rows: ufunc(x[rows], y[rows], out=out[rows]),
              split(x.shape[0], threads()))
    return out


def _product_dtype(a, b):
    """The dtype of ``a @ b``: their own when they share one (``np.result_type`` costs
    ~0.5 us, a few percent of a small split product's Python)."""
    return a.dtype if a.dtype is b.dtype else np.result_type(a, b)


def matmul(a, b, out=None, *, bias=None, relu: bool = False):
    """``np.matmul(a, b, out=out)``, cut over the threads when it is large: a batch of
    products by the batch, one product by the rows of `a` or the columns of `b`
    (`_split_by_rows` chooses).  `bias`, an array broadcasting to the product, is added
    to it; a row of a split 2-D product's dtype by each thread to the part it computed.
    With `relu` the result is then clamped at 0 (NaN kept), by the same threads.
    Arrays of another library (CuPy) go to its own matmul."""
    if (type(a) is np.ndarray and type(b) is np.ndarray and a.ndim == b.ndim == 2
            and threads() > 1  # (multiply-adds:)
            and a.size * b.shape[1] >= (SPLIT_MIN if a.shape[0] > 1 else ROW_SPLIT_MIN)):
        out = np.empty((a.shape[0], b.shape[1]), _product_dtype(a, b)) if out is None else out
        return _split_product(a, b, out, bias, relu)
    result = _matmul_unsplit_or_batched(a, b, out)
    if bias is not None:
        result += bias
    return _clamped(result, relu)


def _clamped(result, relu: bool):
    """`result`, clamped at 0 in place where `relu` (NaN stays NaN: ``maximum``'s rule)."""
    if relu:
        xp_of(result).maximum(result, 0, out=result)
    return result


# An unsplit product with a transposed right operand (a linear layer's ``x @ W.T``) of at
# least this many multiply-adds runs on the BLAS of ember's threads (`product_here`: MKL
# where installed).  NOTE: one thread, float32, 2-core Intel Xeon (2026-12-05), NumPy's
# OpenBLAS against MKL: 128x256 @ 256x10 14.2 against 9.7 us, 64x100 @ 100x100 14.0
# against 11.0, 32x256 @ 256x128 28.1 against 19.2; below ~100K multiply-adds OpenBLAS
# wins (16x128 @ 128x64: 3.5 against 5.0).  With both operands row-major the two are even
# (128x256 @ 256x10: 9.3 against 9.9), and OpenBLAS keeps those.
# NOTE: but timed in the MLP step, MKL's 128x256 @ 256x10 cost more than it saved: the
# Python of the ops after it ran slower (a `t()` right after it took 6.2 us, 3.7 after
# OpenBLAS's and 2.9 after no product: MKL's call leaves less of the interpreter's data in
# the core's caches), and the step took 2584 against 2552 us (medians of 16 alternated
# blocks of 100 steps, 2026-12-06).  So from SPLIT_MIN only, i.e. on one thread.
TRANSPOSED_MKL_MIN = 1 << 20


def _matmul_unsplit_or_batched(a, b, out):
    """`matmul` of all but a split 2-D product, without a bias."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray:
        return xp_of(a).matmul(a, b, out=out)
    if a.ndim == b.ndim == 2:
        if (b.flags.f_contiguous and not b.flags.c_contiguous
                and a.size * b.shape[1] >= TRANSPOSED_MKL_MIN and a.shape[0] > 1):
            return product_here(a, b, out)
        return np.matmul(a, b, out=out)
    if threads() <= 1 or a.ndim < 2 or b.ndim < 2:
        return np.matmul(a, b, out=out)
    m, n = a.shape[-2], b.shape[-1]
    if a.size * n < SPLIT_MIN and b.size * m < SPLIT_MIN:  # (multiply-adds, batch included)
        return np.matmul(a, b, out=out)
    k = a.shape[-1]
    if out is None:
        shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (m, n)
        out = np.empty(shape, _product_dtype(a, b))
    lead = out.shape[:-2]
    aa, bb = np.broadcast_to(a, lead + a.shape[-2:]), np.broadcast_to(b, lead + b.shape[-2:])
    if _split_stack(aa, bb, out):
        return out
    if out.shape[0] >= threads() and m * n * k >= BATCH_ITEM_MIN:
        # split over the first batch dim (broadcast views: no copies)
        run_parts(lambda s: np.matmul(aa[s], bb[s], out=out[s]), split(out.shape[0], threads()))
        return out
    return np.matmul(a, b, out=out)


def matmul_pair(a1, b1, a2, b2) -> tuple:
    """``(a1 @ b1, a2 @ b2)`` for 2-D arrays: on two threads, when both products are
    large, each runs whole on a thread of its own (the second posted to a worker as a
    CBLAS call); otherwise one after the other, each through `matmul`.

    NOTE: why not split each in turn: a split product's parts each pack the operand
    they share again, and wait for each other at the end.  A linear layer's two gradient
    products, split in turn against side by side (median of 5, 2 threads): the MLP's
    128x256 @ 256x512 pair 434-436 against 362-367 us, GPT's 2048x128 @ 128x512 pair
    2.96-3.06 against 2.94-3.01 ms, the LSTM decoder's 700x10000 @ 10000x256 pair
    36.5-39.0 against 36.0-36.3 ms.
    """
    if (threads() == 2 and type(a1) is type(b1) is type(a2) is type(b2) is np.ndarray
            and a1.ndim == b1.ndim == a2.ndim == b2.ndim == 2
            and min(a1.shape[0] * a1.shape[1] * b1.shape[1],
                    a2.shape[0] * a2.shape[1] * b2.shape[1]) >= SPLIT_MIN):
        workers = _claim()
        if workers is not None:
            try:
                out2 = np.empty((a2.shape[0], b2.shape[1]), _product_dtype(a2, b2))
                out1 = np.empty((a1.shape[0], b1.shape[1]), _product_dtype(a1, b1))
                if _workers.pair_products(workers[0], a1, b1, out1, a2, b2, out2):
                    return out1, out2
                if workers[0].post_product(a2, b2, out2):
                    try:
                        # (a fresh out1: passing the one made for the compiled pair
                        # left glibc's heap 12 MiB larger after the CNN's batch-256
                        # training, 252.3 against 240.6 MiB growth)
                        return product_here(a1, b1), out2
                    finally:
                        workers[0].join()
            finally:
                _release()
    return matmul(a1, b1), matmul(a2, b2)


def product_here(a, b, out=None, bias=None):
    """``np.matmul(a, b, out=out)`` (``+ bias``) on the calling thread, with the BLAS of
    ember's threads: the workers' CBLAS functions when those are MKL's (ops/_mkl.py), so
    that a split product's parts all come from one library (and a convolution's parts
    run on MKL too), else NumPy's (the same OpenBLAS)."""
    if out is None:
        out = np.empty(a.shape[:-1] + b.shape[-1:], _product_dtype(a, b))
    blas = _blas.products()
    if blas is not None and blas.library == "mkl" and a.shape[-2] > 1 \
            and _workers.run_product(a, b, out, bias):
        return out
    np.matmul(a, b, out=out)
    if bias is not None:
        out += bias
    return out


def _split_stack(a, b, out) -> bool:
    """`out` = a @ b for stacks of products with one or two batch dims (broadcast views:
    any strides), dealt to the threads along the first batch dim of more than one item,
    the workers' shares posted as loops of CBLAS calls that hold no GIL.  False, and
    nothing computed, where the workers cannot take them.
    NOTE: why not Python parts, as `run_parts` posts: GPT's attention products (128 of
    64x32 @ 32x64: 305-363 us on one thread) took 246-294 us split that way, a Python
    part waiting tens of microseconds for the GIL, and 219-261 us so."""
    lead = out.shape[:-2]
    if len(lead) > 2:
        return False
    dim = 0 if lead[0] > 1 or len(lead) == 1 else 1
    if lead[dim] < 2:
        return False
    workers = _claim()
    if workers is None:
        return False
    try:
        parts = split(lead[dim], len(workers) + 1)
        at = (lambda s: (s,)) if dim == 0 else (lambda s: (slice(None), s))  # noqa: E731
        posted = []
        for worker, part in zip(workers, parts[1:]):
            if not worker.post_product(a[at(part)], b[at(part)], out[at(part)]):
                break
            posted.append(worker)
        for part in [parts[0]] + parts[len(posted) + 1:]:   # (and any not posted)
            product_here(a[at(part)], b[at(part)], out=out[at(part)])
        for worker in posted:
            worker.join()
        return True
    finally:
        _release()


# Products with at least this many rows are split by rows whatever their operands' sizes.
ROWS_SPLIT_MIN = 256


def _split_by_rows(a, b) -> bool:
    """Whether a @ b is cut into bands of rows (else of columns): by rows when `a` has
    `ROWS_SPLIT_MIN` rows or more, otherwise so as to keep the smaller operand whole
    (each part packs it again).

    NOTE: measured inside the training steps, two threads, OpenBLAS's Haswell kernels:
    the MLP's weight gradient 512x128 @ 128x784 took 526 us by rows against 573-576 by
    columns, the LSTM's input projection 700x256 @ 256x1024 2.12 against 2.35 ms, and no
    product of the steps with 256 rows or more was slower by rows (timed alone, 2 of 72
    shapes and layouts were: docs/performance.md, tenth session).  Below that the
    columns can win (the CNN's 64x9216 @ 9216x128: 1.03 against 1.09 ms)."""
    return a.shape[0] >= ROWS_SPLIT_MIN or a.size >= b.size


def _split_product(a, b, out, bias=None, relu: bool = False):
    """`out` = a @ b (+ `bias`, broadcast; clamped at 0 where `relu`) for 2-D arrays, the
    parts posted to the workers as CBLAS calls.

    NOTE: a bias row is added by each thread to its part, right after computing it: added
    after the whole product, on the calling thread, it took 19 us of a 128x784 @ 784x512
    linear layer's ~320 (half of the rows came from the other core) and 1.7 ms of the
    LSTM decoder's 700x256 @ 256x10000 (~11.5 ms; 2-core Intel Xeon, 2026-12-05)."""
    workers = _claim()
    if workers is None:
        np.matmul(a, b, out=out)
        if bias is not None:
            out += bias
        return _clamped(out, relu)
    try:
        m, n = out.shape
        by_rows = _split_by_rows(a, b)
        if len(workers) == 1 and _workers.split_product(workers[0], a, b, out, by_rows,
                                                        bias, relu):
            return out
        parts = split(m if by_rows else n, len(workers) + 1)
        # the parts take a row of bias, except matrix-vector ones (a single row of `a`);
        # any other bias is added at the end
        row = bias if bias is not None and bias.ndim == 1 and m > 1 else None

        def operands(s):
            if by_rows:
                return a[s], b, out[s], row
            return a, b[:, s], out[:, s], (None if row is None or row.shape[0] == 1
                                           else row[s])

        posted = []
        for worker, part in zip(workers, parts[1:]):
            x, y, z, r = operands(part)
            if not worker.post_product(x, y, z, r):
                worker.post(_python_product, (x, y, z, r))
            posted.append(worker)
        x, y, z, r = operands(parts[0])
        product_here(x, y, z, r)
        for worker in posted:
            worker.join()
        if bias is not None and row is None:
            out += bias
        elif bias is not None and not by_rows and row.shape[0] == 1:
            out += row
        return _clamped(out, relu)
    finally:
        _release()


def _python_product(xyzr) -> None:
    """A split product's part as a Python call: ``z = x @ y (+ r)``."""
    x, y, z, r = xyzr
    np.matmul(x, y, out=z)
    if r is not None:
        z += r
