"""ember's worker threads: the threads besides the caller's that split work runs on
(ops/_parallel.py deals the parts out).

A worker takes one part at a time, of three kinds:
- a matrix product, or a stack of them (items at fixed strides), which it runs by
  calling OpenBLAS's CBLAS product from numba code that holds no GIL: it starts within
  microseconds of being posted;
- a native part (ops/_native_parts.py): a numba-compiled C function it calls the same
  way, on an argument block giving its share of the work (an activation's, a fused
  optimizer step's);
- a Python callable (a convolution's chunk), which first needs the GIL: ~30 us later
  on the 2-core test VM.

Between parts a worker polls its flag for `SPIN_SECONDS`, yielding its core to any
other thread that wants it each time round, then sleeps on an event.  NOTE: a sleeping
thread took 25-50 us to wake on the VM (its virtual CPU halts), a polled hand-off 4-8
us, and a training step posts parts every few hundred microseconds; a product of
128x784 by 784x512 took 578 us split this way, 591 us on OpenBLAS's own two threads,
686 us split with Python's ThreadPoolExecutor.

The poll loops are numba kernels, given the C functions they call as arguments.  Without
numba, on a CPU other than x86-64 (whose ordered stores the flags rely on) or without a
known CBLAS interface, the workers take every part as a Python callable and sleep
between parts.
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import statistics
import threading
import time

import numpy as np

from . import _blas
from . import _native as native

SPIN_SECONDS = 0.002

_PYTHON, _SGEMM, _DGEMM, _SGEMV, _DGEMV, _NATIVE = 1, 2, 3, 4, 5, 6  # kinds of part (desc[0])
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112  # CBLAS's enums


# desc: kind, M, N, K, A, lda, B, ldb, C, ldc, trans A, trans B (CBLAS's arguments, the
# arrays by address); then, for stacks of products, the counts of items along two batch
# dims and the byte strides of A, B and C along the first dim, then along the second.
# Last, for one product (not a stack), the address of a row of N values added to each row
# of C once it is computed (a linear layer's bias), or 0; then 1 where C is then clamped
# at 0 (a ReLU after the linear layer: ops/fused_linear.py), else 0.
# A matrix-vector part: kind, M, N, -, A, lda, x, incx, y, incy, trans.
# A native part (ops/_native_parts.py): kind, the C function's address, its block's.
_DESC, _BIAS, _RELU = 22, 20, 21

# The C functions the compiled loops call, by address (an int64 array, `_Loops.functions`):
# the CBLAS products and libc's sched_yield.  NOTE: passed as numbers, not ctypes
# functions: numba unboxes a ctypes function argument in ~0.7 us even through a build's
# entry point, and types it anew on every call through the dispatcher (~140 us).
# The BLAS's integer type comes beside them as `ints`, a zero of that type (np.int64 or
# np.int32): builds for either kind of library are told apart by their signatures (and
# so in numba's disk cache), and each holds the calls of its own kind only.  (With both
# kinds of call behind a flag, `_run` took 1.27-1.35 s to compile cold; 0.80-0.88 s now.)
_SGEMM_AT, _DGEMM_AT, _SGEMV_AT, _DGEMV_AT, _PAUSE_AT = range(5)

# numba's calls of C functions by address, and its view of memory given by address
# (ops/_native_parts.py), for the kernels below; set by `_compiled_loops`, which imports
# that module only once numba is known usable.
call_address = call_gemm = call_gemv = call_plain = array_at = release_fence = ticks = None
as_type_of = None


# NOTE: `_gemm`, `_gemv`, `_finish_rows`, `_describe_row` and `_run_part` are inlined into
# their callers (their machine code's speed does not matter: a BLAS call or a part is
# behind each).  As calls, each was a numba build of its own, the first three twice
# (float32 and float64 constants).  The products' first calls in a process (`_Loops`, one
# split product and one matrix-vector product) from a cold cache, min to max of five
# runs alternated with the tree before (2-core AMD EPYC): the first four inlined, 3.86-5.30
# -> 3.59-4.75 s; then `_run_part` too, 3.54-4.16 -> 2.99-3.20 s.
@native.kernel(inline=True)
def _gemm(function, ints, desc, a, b, c, one, zero):
    """The CBLAS product of `desc`'s sizes and layouts at addresses `a`, `b`, `c`, through
    `function` (alpha `one` and beta `zero` of its element type; sizes of `ints`' type)."""
    order, trans_a, trans_b = np.int32(_ROW_MAJOR), np.int32(desc[10]), np.int32(desc[11])
    call_gemm(function, order, trans_a, trans_b, as_type_of(ints, desc[1]),
              as_type_of(ints, desc[2]), as_type_of(ints, desc[3]), one, a,
              as_type_of(ints, desc[5]), b, as_type_of(ints, desc[7]), zero, c,
              as_type_of(ints, desc[9]))


@native.kernel(inline=True)
def _gemv(function, ints, desc, one, zero):
    """The CBLAS matrix-vector product `desc` describes, through `function`."""
    order, trans = np.int32(_ROW_MAJOR), np.int32(desc[10])
    call_gemv(function, order, trans, as_type_of(ints, desc[1]), as_type_of(ints, desc[2]),
              one, desc[4], as_type_of(ints, desc[5]), desc[6], as_type_of(ints, desc[7]),
              zero, desc[8], as_type_of(ints, desc[9]))


@native.kernel
def _run(desc, functions, ints):
    """Run the product (or stack of them) or matrix-vector product `desc` describes
    (see _DESC) with the CBLAS functions at `functions` (see _SGEMM_AT), whose integers
    are of `ints`' type."""
    kind = desc[0]
    if kind == _SGEMV:
        _gemv(functions[_SGEMV_AT], ints, desc, np.float32(1), np.float32(0))
    elif kind == _DGEMV:
        _gemv(functions[_DGEMV_AT], ints, desc, 1.0, 0.0)
    for i in range(desc[12] if kind < _SGEMV else 0):
        for j in range(desc[13]):
            a = desc[4] + i * desc[14] + j * desc[17]
            b = desc[6] + i * desc[15] + j * desc[18]
            c = desc[8] + i * desc[16] + j * desc[19]
            if kind == _SGEMM:
                _gemm(functions[_SGEMM_AT], ints, desc, a, b, c, np.float32(1), np.float32(0))
            else:
                _gemm(functions[_DGEMM_AT], ints, desc, a, b, c, 1.0, 0.0)
    if (desc[_BIAS] != 0 or desc[_RELU] != 0) and kind == _SGEMM:
        _finish_rows(desc, np.float32)
    elif (desc[_BIAS] != 0 or desc[_RELU] != 0) and kind == _DGEMM:
        _finish_rows(desc, np.float64)
    return 0


@native.kernel(inline=True)
def _finish_rows(desc, dtype):
    """Add the row of N values at desc[_BIAS] (unless 0) to each row of the product's C
    (its M rows at ldc apart; see _DESC), then where desc[_RELU] is 1 clamp C at 0 (NaN
    stays NaN, as relu's kernels keep it), while the rows are in this core's cache."""
    m, n, ldc = desc[1], desc[2], desc[9]
    c = array_at(desc[8], (m - 1) * ldc + n, dtype)
    zero = dtype(0)
    if desc[_BIAS] != 0:
        bias = array_at(desc[_BIAS], n, dtype)
        for i in range(m):
            row = c[i * ldc:i * ldc + n]
            for j in range(n):
                row[j] += bias[j]
    if desc[_RELU] != 0:
        for i in range(m):
            row = c[i * ldc:i * ldc + n]
            for j in range(n):
                v = row[j]
                row[j] = v if v > zero or v != v else zero


@native.kernel
def _layout(rows, cols, stride0, stride1, item):
    """(leading dimension, CBLAS transpose flag) of a rows x cols matrix with these byte
    strides as a row-major CBLAS operand; (0, 0) when neither dimension has unit stride."""
    if (stride1 == item or cols == 1) and stride0 % item == 0 \
            and stride0 // item >= max(cols, 1):
        return stride0 // item, _NO_TRANS
    if (stride0 == item or rows == 1) and stride1 % item == 0 \
            and stride1 // item >= max(rows, 1):
        return stride1 // item, _TRANS
    return 0, 0


_INTS = "int64"   # the BLAS's integer type, by name (`_Loops.ints`'; set by `_compiled_loops`)


def _ints_type(types):
    """The numba type of `ints` in this process's builds (`_INTS`): the kernels with fixed
    signatures are built for the one library the process calls."""
    return getattr(types, _INTS)


def _matrices(numba, *rest, result: str = "boolean", products: int = 1) -> list:
    """Signatures of a kernel taking `products` triples of 2-D float arrays of one dtype
    and any layout (a, b, out), then `rest` (a function of the numba module's types),
    returning `result` (a numba type's name): one build per dtype.
    (Left to numba, each combination of layouts met, C, F or strided, took a build of
    its own: ~0.4 s each to compile cold.)"""
    types = numba.types
    signatures = []
    for real in (types.float32, types.float64):
        operand = types.Array(real, 2, "A", readonly=True)   # (writable ones convert)
        triple = (operand, operand, types.Array(real, 2, "A"))
        signatures.append(getattr(types, result)(*triple * products, *rest[0](types)))
    return signatures


@native.kernel(signatures=lambda numba: _matrices(
    numba, lambda t: (t.int64, t.int64[::1], t.boolean)))
def _describe_matrices(a, b, out, bias_at, desc, row_as_vector):
    """Write into `desc` the CBLAS call computing ``out = a @ b`` for 2-D float arrays of
    one dtype (checked by the caller), plus the bias row at address `bias_at` (0: none);
    one row `a` as a matrix-vector product where `row_as_vector` (and no bias).  False
    where their strides do not fit CBLAS."""
    item = a.itemsize
    lb, trans_b = _layout(b.shape[0], b.shape[1], b.strides[0], b.strides[1], item)
    if row_as_vector and a.shape[0] == 1:
        return bias_at == 0 and _describe_row(a, b, out, desc, lb, trans_b)
    la, trans_a = _layout(a.shape[0], a.shape[1], a.strides[0], a.strides[1], item)
    lc, trans_c = _layout(out.shape[0], out.shape[1], out.strides[0], out.strides[1], item)
    if la == 0 or lb == 0 or lc == 0 or trans_c != _NO_TRANS:
        return False
    desc[0] = _SGEMM if item == 4 else _DGEMM
    desc[1], desc[2], desc[3] = a.shape[0], b.shape[1], a.shape[1]
    desc[4], desc[5], desc[6], desc[7] = a.ctypes.data, la, b.ctypes.data, lb
    desc[8], desc[9], desc[10], desc[11] = out.ctypes.data, lc, trans_a, trans_b
    desc[12] = desc[13] = 1
    desc[14:_BIAS] = 0   # (no batch strides)
    desc[_BIAS] = bias_at
    desc[_RELU] = 0
    return True


@native.kernel(inline=True)
def _describe_row(a, b, out, desc, lb, trans_b):
    """``out = a @ b`` for one row `a` as a matrix-vector product, as NumPy computes it
    (`lb`, `trans_b`: b's `_layout`).
    (As a GEMM, OpenBLAS's Haswell kernels (`_blas.preferred_core`) pack `b` first: batch-1
    CNN inference's 1x9216 @ 9216x128 layer waited 114 us for a GEMM half, against 67 us
    for the whole product on one thread; split so, 54 us.)"""
    item = a.itemsize
    step_a, step_out = a.strides[1], out.strides[1]
    if lb == 0 or step_a % item or step_out % item or step_a <= 0 or step_out <= 0:
        return False
    k, n = b.shape
    # b (k, n) row-major: y = b^T a; b transposed storage (n, k): y = B a
    desc[0] = _SGEMV if item == 4 else _DGEMV
    if trans_b == _NO_TRANS:
        desc[1], desc[2], desc[10] = k, n, _TRANS
    else:
        desc[1], desc[2], desc[10] = n, k, _NO_TRANS
    desc[3], desc[4], desc[5] = 0, b.ctypes.data, lb
    desc[6], desc[7] = a.ctypes.data, step_a // item
    desc[8], desc[9] = out.ctypes.data, step_out // item
    return True


@native.kernel(signatures=lambda numba: _matrices(
    numba, lambda t: (t.int64, t.int64[::1], t.int64[::1], _ints_type(t))))
def _describe_and_run(a, b, out, bias_at, desc, functions, ints):
    """`_describe_matrices`, then `_run` on the calling thread: False, nothing computed,
    where CBLAS cannot take the arrays."""
    if not _describe_matrices(a, b, out, bias_at, desc, True):
        return False
    _run(desc, functions, ints)
    return True


@native.kernel(signatures=lambda numba: _matrices(
    numba, lambda t: (t.int64, t.boolean, t.boolean, t.int64[::1], t.int64[::1],
                      t.int64[::1], t.int64[::1], t.int64, _ints_type(t)), result="int64"))
def _split_and_run(a, b, out, bias_at, by_rows, relu, mine, theirs, flag, functions, spin,
                   ints):
    """``out = a @ b`` (plus the bias row at `bias_at`, 0: none; clamped at 0 where
    `relu`) for 2-D arrays in two halves, of the rows of `a` (`by_rows`) or of the
    columns of `b`: the second posted to
    the worker whose desc and flag are `theirs` and `flag`, the first run here (in
    `mine`); then up to `spin` ticks of polling for the worker to finish.
    1: all done; 0: posted, not seen done (the caller joins the worker); -1: nothing
    done, an operand CBLAS cannot take (or a one-row half with a bias)."""
    m, n = out.shape
    if by_rows:
        h = m // 2
        posted = _describe_matrices(a[h:], b, out[h:], bias_at, theirs, True)
        ok = posted and _describe_matrices(a[:h], b, out[:h], bias_at, mine, True)
    else:
        h = n // 2
        shifted = bias_at + h * out.itemsize if bias_at != 0 else 0
        posted = _describe_matrices(a, b[:, h:], out[:, h:], shifted, theirs, True)
        ok = posted and _describe_matrices(a, b[:, :h], out[:, :h], bias_at, mine, True)
    if not ok:
        return -1
    theirs[_RELU] = mine[_RELU] = 1 if relu else 0
    return _hand_over_and_run(mine, flag, functions, spin, ints)


@native.kernel(signatures=lambda numba: _matrices(
    numba, lambda t: (t.int64[::1],) * 4 + (t.int64, _ints_type(t)), result="int64",
    products=2))
def _pair_and_run(a1, b1, out1, a2, b2, out2, mine, theirs, flag, functions, spin, ints):
    """``out1 = a1 @ b1`` here and ``out2 = a2 @ b2`` on the worker whose desc and flag
    are `theirs` and `flag`, from one call (results as `_split_and_run`'s)."""
    if not (_describe_matrices(a2, b2, out2, 0, theirs, True)
            and _describe_matrices(a1, b1, out1, 0, mine, True)):
        return -1
    return _hand_over_and_run(mine, flag, functions, spin, ints)


@native.kernel
def _hand_over_and_run(mine, flag, functions, spin, ints):
    """Hand the worker its part (described in its desc), run `mine` (a product or a
    native part) here, then poll up to `spin` ticks for the worker: 1 done, 0 not seen
    done."""
    release_fence()   # (the worker's desc is written before its flag says so)
    flag[0] += 1
    _run_part(mine, functions, ints)
    return 1 if _wait(flag, spin, functions) else 0


@native.kernel
def _hand_over_native(entry, theirs, mine, desc, own, flag, functions, spin, ints):
    """Post the native part at address `entry` on block `theirs` (an int64 array) to the
    worker whose desc and flag are `desc` and `flag`, and run it on block `mine` here
    (described in `own`): `_hand_over_and_run`."""
    desc[0], desc[1], desc[2] = _NATIVE, entry, theirs.ctypes.data
    own[0], own[1], own[2] = _NATIVE, entry, mine.ctypes.data
    return _hand_over_and_run(own, flag, functions, spin, ints)


@native.kernel(inline=True)
def _run_part(desc, functions, ints):
    """Run the product or native part `desc` describes (not a Python part)."""
    if desc[0] == _NATIVE:
        call_address(desc[1], desc[2])
    else:
        _run(desc, functions, ints)


@native.kernel
def _serve(flag, desc, spin, functions, ints):
    """Poll `flag` for a posted part until `spin` ticks (`ticks`) pass idle, calling
    sched_yield each round; run each posted product (`_run`) or native part, and mark it
    done.  1: a Python part waits (the caller runs it); 0: idle all along."""
    # (the calls are also what makes LLVM read flag[0] afresh each round)
    idle_since = ticks()
    while ticks() - idle_since < spin:
        if flag[0] != flag[1]:
            kind = desc[0]
            if kind == _PYTHON:
                return 1
            _run_part(desc, functions, ints)
            flag[1] = flag[0]
            idle_since = ticks()
        else:
            call_plain(functions[_PAUSE_AT])
    return 0


@native.kernel
def _wait(flag, spin, functions):
    """Poll until flag[1] == flag[0] (True), or for `spin` ticks (False)."""
    start = ticks()
    while ticks() - start < spin:
        if flag[1] == flag[0]:
            return True
        call_plain(functions[_PAUSE_AT])
    return flag[1] == flag[0]


@native.kernel
def _read_ticks():
    """`ticks` read from Python (to measure their rate)."""
    return ticks()


def _tick_rate() -> float:
    """`ticks` per second over 1 ms of `perf_counter`.  (`_Loops` keeps the median of
    three: the thread losing its core between reading one clock and the other skews one.)"""
    first, start = _read_ticks(), time.perf_counter()
    while time.perf_counter() - start < 0.001:
        pass
    return (_read_ticks() - first) / (time.perf_counter() - start)


class _Loops:
    """The poll loops bound to this process's C functions (passed to the kernels as
    arguments, not read as globals: numba can then keep the builds in its disk cache)."""

    def __init__(self, sgemm, dgemm, sgemv, dgemv, pause):
        self.sgemm, self.dgemm, self.pause = sgemm, dgemm, pause  # (ctypes functions)
        self.ints = np.int64(0) if sgemm.argtypes[3] is ctypes.c_int64 else np.int32(0)
        self.functions = np.array([ctypes.cast(f, ctypes.c_void_p).value
                                   for f in (sgemm, dgemm, sgemv, dgemv, pause)], np.int64)
        _serve(np.zeros(2, np.int64), np.zeros(_DESC, np.int64), 1, self.functions,
               self.ints)
        _run(np.zeros(_DESC, np.int64), self.functions, self.ints)
        _wait(np.zeros(2, np.int64), 1, self.functions)
        # the polls are bounded in ticks, not rounds: a round takes a few hundred ns on
        # an idle machine and a whole time slice when other threads want the core (a
        # worker calibrated in rounds on a busy machine slept at once on an idle one, and
        # one calibrated on an idle machine polled for seconds on a busy one)
        _read_ticks()   # (built, or loaded from numba's cache, outside the timing)
        self.ticks_per_second = statistics.median(_tick_rate() for _ in range(3))
        self.spin = max(1, int(self.ticks_per_second * SPIN_SECONDS))
        # a compiled hand-over's own wait for the worker (an eighth of that): past it,
        # the caller checks from Python whether the worker fell asleep (`_finish`)
        self.hand_over_spin = max(1, self.spin // 8)

    def serve(self, flag, desc) -> int:
        return _serve(flag, desc, self.spin, self.functions, self.ints)

    def wait(self, flag) -> bool:
        return _wait(flag, self.spin, self.functions)

    def run(self, desc) -> None:
        _run(desc, self.functions, self.ints)

    def describe_and_run(self, a, b, out, bias_at, desc) -> bool:
        return _describe_and_run(a, b, out, bias_at, desc, self.functions, self.ints)

    def split_and_run(self, a, b, out, bias_at, by_rows, relu, mine, worker) -> int:
        return _split_and_run(a, b, out, bias_at, by_rows, relu, mine, worker.desc,
                              worker.flag, self.functions, self.hand_over_spin, self.ints)

    def hand_over_native(self, entry, theirs, mine, own, worker) -> int:
        return _hand_over_native(entry, theirs, mine, worker.desc, own, worker.flag,
                                 self.functions, self.hand_over_spin, self.ints)

    def pair_and_run(self, a1, b1, out1, a2, b2, out2, mine, worker) -> int:
        return _pair_and_run(a1, b1, out1, a2, b2, out2, mine, worker.desc, worker.flag,
                             self.functions, self.hand_over_spin, self.ints)


_entry_points: dict = {}   # kernel -> (its number of builds, `_entry_point`'s answer)


def _entry_point(kernel):
    """The compiled function behind `kernel`'s one build, callable without dispatch (the
    kernel itself when numba holds other builds than the one).  Kept while the kernel's
    builds stay the same: looking it up took ~13 us a call."""
    overloads = kernel._compiled.overloads
    known = _entry_points.get(kernel)
    if known is not None and known[0] == len(overloads):
        return known[1]
    builds = list(overloads.values())
    entry = builds[0].entry_point if len(builds) == 1 else kernel
    _entry_points[kernel] = (len(builds), entry)
    return entry


@functools.cache
def _compiled_loops() -> _Loops | None:
    """The poll loops (made once per process), or None where they cannot run."""
    global array_at, as_type_of, call_address, call_gemm, call_gemv, call_plain
    global release_fence, ticks, _INTS
    if not native.enabled() or platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    blas = _blas.products()
    if blas is None:
        return None
    from . import _native_parts as parts

    array_at, call_address, call_plain = parts.array_at, parts.call_address, parts.call_plain
    as_type_of = parts.as_type_of
    call_gemm, call_gemv = parts.call_gemm, parts.call_gemv
    release_fence, ticks = parts.release_fence, parts.ticks
    pause = ctypes.CDLL(None).sched_yield
    pause.argtypes, pause.restype = [], ctypes.c_int
    loops = _Loops(blas.sgemm, blas.dgemm, blas.sgemv, blas.dgemv, pause)
    _INTS = type(loops.ints).__name__   # (before any kernel with fixed signatures is built)
    return loops if loops.ticks_per_second > 0 else None   # (a counter that stands still)


def _fits(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> bool:
    """Whether CBLAS can take ``out = a @ b`` by dtype and shape: one float dtype, no empty
    dimension, 2-D arrays or stacks of them with up to two batch dims of one shape."""
    return (a.dtype == b.dtype == out.dtype and a.dtype in (np.float32, np.float64)
            and 0 not in a.shape + b.shape and 2 <= a.ndim == b.ndim == out.ndim <= 4
            and a.shape[:-2] == b.shape[:-2] == out.shape[:-2])


def describe_product(a: np.ndarray, b: np.ndarray, out: np.ndarray, desc: np.ndarray,
                     bias_at: int = 0) -> bool:
    """Write into `desc` the CBLAS call(s) computing ``out = a @ b``: 2-D arrays of one
    float dtype, or stacks of them with up to two batch dims of one shape (any strides);
    a product of 2-D arrays with more than one row may add the bias row at `bias_at`.
    False where CBLAS cannot take them (`desc` then means nothing).  Needs numba (the
    compiled loops)."""
    if not _fits(a, b, out):
        return False
    if a.ndim == 2:
        return _describe_matrices(a, b, out, bias_at, desc, True)
    corner = (0,) * (a.ndim - 2)   # the first item of each; the rest at fixed strides
    if bias_at or not _describe_matrices(a[corner], b[corner], out[corner], 0, desc, False):
        return False
    lead = (1,) * (4 - a.ndim) + out.shape[:-2]
    steps = [(0,) * (4 - x.ndim) + x.strides[:-2] for x in (a, b, out)]
    desc[12:_BIAS] = (*lead, *(step[0] for step in steps), *(step[1] for step in steps))
    return True


def _bias_at(bias, out: np.ndarray) -> int | None:
    """The address of `bias`, a row to add to each row of the 2-D `out` (0 when None);
    None where the compiled loops cannot take it: not one C-contiguous row of out's
    dtype and width."""
    if bias is None:
        return 0
    if (out.ndim != 2 or bias.dtype != out.dtype or bias.shape != out.shape[1:]
            or not bias.flags.c_contiguous):
        return None
    return bias.ctypes.data


_here = threading.local()   # the calling thread's own desc, for `run_product`


def run_product(a: np.ndarray, b: np.ndarray, out: np.ndarray, bias=None) -> bool:
    """Compute ``out = a @ b`` (``+ bias``, a row added to each of out's rows) on the
    calling thread with the CBLAS functions the workers call (`_blas.products`: MKL's or
    OpenBLAS's), so that all parts of a split product come from one library.  False, and
    nothing computed, where they cannot take them."""
    loops = _compiled_loops()
    bias_at = _bias_at(bias, out)
    if loops is None or bias_at is None or not _fits(a, b, out):
        return False
    desc = _own_desc()
    if a.ndim == 2:   # (one compiled call: ~1 us besides the product)
        return loops.describe_and_run(a, b, out, bias_at, desc)
    if not describe_product(a, b, out, desc, bias_at):
        return False
    loops.run(desc)
    return True


def split_product(worker, a: np.ndarray, b: np.ndarray, out: np.ndarray, by_rows: bool,
                  bias=None, relu: bool = False) -> bool:
    """``out = a @ b`` (``+ bias``, a row added to each of out's rows; then clamped at 0
    where `relu`) for 2-D arrays of one float dtype, in two halves (`_split_and_run`):
    the second on `worker` (an idle worker this thread has claimed), the first on the
    calling thread, in one compiled call.  False, and nothing computed, where that cannot
    run (no poll loops, a sleeping worker, operands CBLAS cannot take): the caller then
    splits the product itself.

    NOTE: the same parts as posting the worker's half and running the caller's from
    Python, ~7 us sooner: a 2-D split product took 10.4 us of Python around its parts
    (16x8 @ 8x16, 2-core Intel Xeon), three times that inside a training step."""
    if (not _compiled_by_hand(worker) or not _fits(a, b, out) or a.ndim != 2
            or out.shape[0 if by_rows else 1] < 2):
        return False
    # one row: two matrix-vector halves, which take no bias; the row's bias and relu are
    # then added here (one row: ~1 us)
    row = a.shape[0] == 1
    bias_at = 0 if row else _bias_at(bias, out)
    if bias_at is None:
        return False
    worker._arrays = (a, b, out, bias)
    if not _finish(worker, worker._loops.split_and_run(a, b, out, bias_at, by_rows,
                                                       relu and not row, _own_desc(),
                                                       worker)):
        return False
    if row and bias is not None:
        out += bias
    if row and relu:
        np.maximum(out, 0, out=out)   # (NaN stays NaN)
    return True


def pair_products(worker, a1, b1, out1, a2, b2, out2) -> bool:
    """``out1 = a1 @ b1`` on the calling thread and ``out2 = a2 @ b2`` on `worker`, in one
    compiled call (`_pair_and_run`): 2-D arrays of one float dtype.  False, and nothing
    computed, where that cannot run (as `split_product`).  (~3.5 us sooner than posting
    and running from Python.)"""
    if (not _compiled_by_hand(worker) or not _fits(a1, b1, out1) or not _fits(a2, b2, out2)
            or a1.ndim != 2 or a2.ndim != 2 or a1.dtype != a2.dtype):
        return False
    worker._arrays = (a2, b2, out2)
    return _finish(worker, worker._loops.pair_and_run(a1, b1, out1, a2, b2, out2,
                                                      _own_desc(), worker))


def native_halves(worker, entry: int, theirs: np.ndarray, mine: np.ndarray,
                  arrays: tuple) -> bool:
    """Run the native part at `entry` (ops/_native_parts.py) on block `theirs` on
    `worker` and on block `mine` on the calling thread, from one compiled call: the two
    shares of a cut kernel (ops/_native_cuts.py), `arrays` what the blocks point into.
    False, and nothing run, where that cannot run (as `split_product`)."""
    if not _compiled_by_hand(worker):
        return False
    worker._arrays = (theirs, mine, arrays)
    return _finish(worker, worker._loops.hand_over_native(entry, theirs, mine, _own_desc(),
                                                          worker))


def _compiled_by_hand(worker) -> bool:
    """Whether a part may be handed to `worker` from compiled code: it has poll loops and
    is awake (compiled code cannot set its event)."""
    return worker._loops is not None and not worker._sleeping


def _own_desc() -> np.ndarray:
    """The calling thread's own desc, for the part it runs itself."""
    desc = getattr(_here, "desc", None)
    if desc is None:
        desc = _here.desc = np.zeros(_DESC, np.int64)
    return desc


def _finish(worker, done: int) -> bool:
    """After a compiled hand-over (`_hand_over_and_run`'s result, -1 when nothing was
    posted): True once the worker's part is done, False when none was posted."""
    if done != 0:
        worker._arrays = None
        return done == 1
    with worker._lock:   # (it fell asleep as its part was posted: wake it, then wait)
        if worker._sleeping:
            worker._wake.set()
    worker.join()
    return True


class Worker:
    """One worker thread (see the module's docstring); `post` or `post_product`, then
    `join` for the result, one part at a time."""

    def __init__(self):
        self.flag = np.zeros(2, np.int64)    # [0]: parts posted, [1]: parts done
        self.desc = np.zeros(_DESC, np.int64)  # the posted part (see _DESC)
        self._task = None
        self._result = self._error = None
        self._arrays = None                  # what a posted product reads and writes
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._done = threading.Event()
        self._sleeping = False
        self._loops = _compiled_loops()
        threading.Thread(target=self._serve, daemon=True, name="ember-worker").start()

    def _serve(self) -> None:
        loops = self._loops
        while True:
            if loops is not None:
                if loops.serve(self.flag, self.desc) == 1:
                    self._run_python()
                    continue
            elif self.flag[0] != self.flag[1]:   # (a Python part is waiting)
                self._run_python()
                continue
            with self._lock:
                self._sleeping = self.flag[0] == self.flag[1]
            if self._sleeping:
                self._wake.wait()
                with self._lock:
                    self._wake.clear()
                    self._sleeping = False

    def _run_python(self) -> None:
        fn, arg = self._task
        try:
            self._result = fn(arg)
        except BaseException as exc:  # re-raised by join, on the posting thread
            self._error = exc
        self._task = None
        self.flag[1] = self.flag[0]
        self._done.set()

    def _posted(self) -> None:
        self.flag[0] += 1
        with self._lock:
            if self._sleeping:
                self._wake.set()

    def post(self, fn, arg) -> None:
        """Run ``fn(arg)`` on this worker."""
        self._task = (fn, arg)
        self.desc[0] = _PYTHON
        self._done.clear()   # (only a Python part's join waits on it)
        self._posted()

    def post_product(self, a: np.ndarray, b: np.ndarray, out: np.ndarray, bias=None) -> bool:
        """Compute ``out = a @ b`` (``+ bias``, as `run_product`) on this worker without the
        GIL (`describe_product` says which arrays it takes).  False, and nothing posted,
        when it cannot take them."""
        bias_at = _bias_at(bias, out)
        if self._loops is None or bias_at is None \
                or not describe_product(a, b, out, self.desc, bias_at):
            return False
        self._arrays = (a, b, out, bias)
        self._posted()
        return True

    def post_native(self, address: int, block: np.ndarray, arrays: tuple) -> bool:
        """Run the native part at `address` (ops/_native_parts.py) on `block`, which
        describes its share of `arrays` (kept alive until `join`).  False, and nothing
        posted, where the worker has no poll loop to call it from."""
        if self._loops is None:
            return False
        self._arrays = (block, arrays)
        self.desc[:3] = (_NATIVE, address, block.ctypes.data)
        self._posted()
        return True

    def join(self):
        """Wait for the posted part; its result (None for a product), or its exception."""
        if self._loops is not None:
            while not self._loops.wait(self.flag):
                if self._task is not None:   # a long Python part: sleep, do not poll
                    self._done.wait()
        else:
            while self.flag[1] != self.flag[0]:
                self._done.wait()
        result, error = self._result, self._error
        self._result = self._error = self._arrays = None
        if error is not None:
            raise error
        return result


_threads = 1
_pool = []
_pool_pid = None
_pool_lock = threading.Lock()


def set_threads(num: int) -> None:
    """Use `num` threads (the caller's and num - 1 workers) for split work."""
    global _threads
    _threads = max(1, int(num))


def threads() -> int:
    """How many threads split work runs on."""
    return _threads


def workers() -> list:
    """``threads() - 1`` workers, started on first use, and again in a forked child
    (whose copies of the parent's have no threads behind them)."""
    global _pool, _pool_pid
    with _pool_lock:
        if _pool_pid != os.getpid():
            _pool, _pool_pid = [], os.getpid()
        while len(_pool) < _threads - 1:
            _pool.append(Worker())
        return _pool[:_threads - 1]
