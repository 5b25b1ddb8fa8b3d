"""Work split over ember's threads (ops/_parallel.py, ops/_workers.py): split products
equal NumPy's, parts run in order and raise on the caller, the workers survive a fork,
and OpenBLAS stays on one thread while ember's threads do the splitting."""

import functools
import multiprocessing
import os
import time

import numpy as np
import pytest

import ember
from ember.ops import _blas, _native, _parallel, _workers
from ember.ops.conv_arrays import Geometry, conv_array, conv_transpose_array, conv_weight_array
from tests.processes import run_together


# Tests that count the products a worker took: its CBLAS loops are numba kernels.
needs_worker_loops = pytest.mark.skipif(
    not _native.available(), reason="the workers' CBLAS loops need numba (EMBER_NO_NUMBA=1 "
                                    "or numba missing: the caller computes every product)")


@pytest.fixture
def two_threads(on_two_threads, monkeypatch):
    """Two threads, and products split from the smallest size up."""
    monkeypatch.setattr(_parallel, "SPLIT_MIN", 1)
    monkeypatch.setattr(_parallel, "ROW_SPLIT_MIN", 1)
    monkeypatch.setattr(_parallel, "BATCH_ITEM_MIN", 1)


def _operands(rng, m, k, n, dtype, layout):
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    if layout == "transposed":          # F-ordered views: CBLAS's transpose flags
        a, b = np.asfortranarray(a), np.asfortranarray(b)
    elif layout == "strided":           # no unit stride: the worker takes a NumPy call
        a = np.repeat(a, 2, axis=1)[:, ::2]
        b = np.repeat(b, 2, axis=1)[:, ::2]
    return a, b


@pytest.mark.parametrize("layout", ["rows", "transposed", "strided"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(300, 17, 9), (5, 40, 301), (260, 8, 300), (64, 64, 64),
                                   (1, 3, 2)])
def test_split_product_equals_numpy(two_threads, shape, dtype, layout):
    a, b = _operands(np.random.default_rng(0), *shape, dtype, layout)
    got = _parallel.matmul(a, b)
    # (BLAS may take other kernels for a part's fewer rows: rounding, not bits, agrees)
    tol = 1e-5 if dtype == np.float32 else 1e-13
    exact = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got, exact, rtol=tol, atol=tol * np.abs(exact).max())
    assert got.dtype == dtype and got.shape == exact.shape
    out = np.full(got.shape, np.nan, dtype)
    assert _parallel.matmul(a, b, out=out) is out
    np.testing.assert_array_equal(out, got)


def test_split_direction():
    def by_rows(m, k, n):
        return _parallel._split_by_rows(np.empty((m, k)), np.empty((k, n)))
    assert by_rows(512, 128, 784)       # many rows: by rows, though `a` is the smaller
    assert by_rows(300, 17, 9)          # `a` the larger
    assert not by_rows(64, 9216, 128)   # few rows, `b` the larger: keep `b` whole
    assert not by_rows(5, 40, 301)


def test_split_product_of_integers_and_batches(two_threads):
    rng = np.random.default_rng(1)
    a, b = rng.integers(-9, 9, (40, 30)), rng.integers(-9, 9, (30, 20))
    np.testing.assert_array_equal(_parallel.matmul(a, b), a @ b)
    x, y = rng.standard_normal((6, 8, 5)), rng.standard_normal((5, 7))
    np.testing.assert_allclose(_parallel.matmul(x, y), x @ y, rtol=1e-12)
    z = rng.standard_normal((6, 5, 7))
    np.testing.assert_allclose(_parallel.matmul(x, z), x @ z, rtol=1e-12)
    # 4-D batches, one side broadcast (attention's shapes)
    q, kt = rng.standard_normal((4, 3, 8, 5)), rng.standard_normal((1, 3, 5, 8))
    np.testing.assert_allclose(_parallel.matmul(q, kt), q @ kt, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_stacks_of_products_split_over_the_workers(two_threads, dtype, monkeypatch):
    """Stacks posted to a worker as CBLAS loops: transposed views (attention's q @ k^T,
    two batch dims that do not merge), broadcast operands, a first batch dim of one, and
    more batch dims than the workers take (NumPy's own split then)."""
    stacks = []
    real = _parallel._split_stack
    monkeypatch.setattr(_parallel, "_split_stack",
                        lambda *args: stacks.append(real(*args)) or stacks[-1])
    rng = np.random.default_rng(4)
    qkv = rng.standard_normal((6, 10, 3 * 8)).astype(dtype)
    q = qkv[..., :8].reshape(6, 10, 2, 4).transpose(0, 2, 1, 3)       # (6, 2, 10, 4)
    k = qkv[..., 8:16].reshape(6, 10, 2, 4).transpose(0, 2, 3, 1)     # (6, 2, 4, 10)
    cases = [(q, k), (rng.standard_normal((5, 7, 3)).astype(dtype),
                      rng.standard_normal((3, 4)).astype(dtype)),
             (rng.standard_normal((1, 5, 7, 3)).astype(dtype),
              rng.standard_normal((1, 5, 3, 4)).astype(dtype)),
             (rng.standard_normal((2, 3, 2, 4, 5)).astype(dtype),
              rng.standard_normal((5, 3)).astype(dtype))]
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for a, b in cases:
        exact = a.astype(np.float64) @ b.astype(np.float64)
        got = _parallel.matmul(a, b)
        assert got.dtype == dtype
        np.testing.assert_allclose(got, exact, rtol=tol, atol=tol * np.abs(exact).max())
    assert stacks == [True, True, True, False]


@needs_worker_loops
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_product_pairs_run_side_by_side_and_equal_numpy(two_threads, dtype, monkeypatch,
                                                        workers_asleep):
    """`matmul_pair`: the second product posted whole to the worker, the first on the
    caller; operands the worker cannot take (no unit stride) go one after the other."""
    posted = []
    real = _workers.Worker.post_product
    monkeypatch.setattr(_workers.Worker, "post_product",
                        lambda self, *args: posted.append(real(self, *args)) or posted[-1])
    real_pair = _workers.pair_products   # (posted from compiled code)
    monkeypatch.setattr(_workers, "pair_products",
                        lambda *args: posted.append(real_pair(*args)) or posted[-1])
    rng = np.random.default_rng(6)
    g, x, w = (rng.standard_normal(s).astype(dtype) for s in ((30, 8), (30, 12), (8, 12)))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    strided = np.repeat(x, 2, axis=1)[:, ::2]
    calls = []
    for a1, b1, a2, b2 in [(g, w, g.T, x), (g, w, x.T, g), (g, w, g.T, strided)]:
        before = len(posted)
        got = _parallel.matmul_pair(a1, b1, a2, b2)
        calls.append(posted[before:])
        for product, (a, b) in zip(got, [(a1, b1), (a2, b2)]):
            exact = a.astype(np.float64) @ b.astype(np.float64)
            assert product.dtype == dtype and product.shape == exact.shape
            np.testing.assert_allclose(product, exact, rtol=tol, atol=tol * np.abs(exact).max())
    # each unit-stride pair handed over once: from compiled code, or, where the worker
    # was asleep (compiled code cannot wake it), posted from Python after that refusal;
    # the strided pair's posts are refused both ways, and its products split in turn
    # (posting their halves, or not, as `matmul` does)
    assert calls[0] in ([True], [False, True]) and calls[1] in ([True], [False, True])
    assert calls[2][:2] == [False, False]
    workers_asleep()   # asleep: refused from compiled code, posted from Python
    before = len(posted)
    got = _parallel.matmul_pair(g, w, g.T, x)
    assert posted[before:] == [False, True]
    np.testing.assert_allclose(got[1], g.T @ x, rtol=tol, atol=tol * np.abs(g.T @ x).max())
    ember.set_num_threads(1)   # one thread: in turn, nothing posted
    before = len(posted)
    got = _parallel.matmul_pair(g, w, g.T, x)
    np.testing.assert_array_equal(got[0], g @ w)
    assert len(posted) == before


def test_linear_backward_with_the_pair_matches_float64(two_threads):
    # a linear layer's input and weight gradients come from `matmul_pair` (weight.t() is
    # an F-ordered view: its gradient is computed transposed and given back C-ordered)
    rng = np.random.default_rng(7)
    x = ember.tensor(rng.standard_normal((9, 5)), requires_grad=True)
    w = ember.tensor(rng.standard_normal((4, 5)), requires_grad=True)
    b = ember.tensor(rng.standard_normal(4), requires_grad=True)
    g = rng.standard_normal((9, 4))
    ember.nn.functional.linear(x, w, b).backward(ember.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), g @ w.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), g.T @ x.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), g.sum(0), rtol=1e-12)
    assert w.grad.numpy().flags.c_contiguous


def test_half_precision_linear_gradients_take_float32_products(two_threads, monkeypatch):
    # the side-by-side pair takes float32/float64 only; half precision keeps `widen`'s
    # float32 BLAS products (NumPy's float16 matmul has no BLAS kernel)
    pairs = []
    real = _parallel.matmul_pair
    monkeypatch.setattr(_parallel, "matmul_pair",
                        lambda *args: pairs.append(args[0].dtype) or real(*args))
    rng = np.random.default_rng(0)
    for dtype in (np.float16, np.float32):
        x = ember.tensor(rng.standard_normal((64, 96)).astype(dtype), requires_grad=True)
        w = ember.tensor(rng.standard_normal((64, 96)).astype(dtype), requires_grad=True)
        g = rng.standard_normal((64, 64)).astype(dtype)
        ember.nn.functional.linear(x, w).backward(ember.tensor(g))
        tol = 2 ** -10 if dtype == np.float16 else 1e-5
        exact = g.astype(np.float64) @ w.detach().numpy().astype(np.float64)
        np.testing.assert_allclose(x.grad.numpy(), exact, rtol=tol, atol=tol * np.abs(exact).max())
        assert x.grad.dtype == (ember.float16 if dtype == np.float16 else ember.float32)
    assert pairs == [np.dtype(np.float32)]


def test_products_without_the_poll_loops(two_threads, monkeypatch):
    # no numba (or no CBLAS): a worker takes products as Python calls, and sleeps
    monkeypatch.setattr(_workers, "_compiled_loops", lambda: None)
    worker = _workers.Worker()
    a, b = np.ones((4, 3), np.float32), np.ones((3, 5), np.float32)
    out = np.zeros((4, 5), np.float32)
    assert not worker.post_product(a, b, out)
    worker.post(lambda xy: xy[0] @ xy[1], (a, b))
    np.testing.assert_array_equal(worker.join(), np.full((4, 5), 3, np.float32))
    worker.post(lambda _: 1 / 0, None)
    with pytest.raises(ZeroDivisionError):
        worker.join()


@needs_worker_loops
def test_polls_are_bounded_in_time_whatever_the_load():
    # the poll loops count the CPU's ticks, not rounds: a wait for a part that never
    # finishes gives up after its budget of ticks, busy machine or idle
    loops = _workers._compiled_loops()
    if loops is None:
        pytest.skip("no CBLAS loops here")
    assert 1e8 < loops.ticks_per_second < 1e11
    assert loops.spin == int(loops.ticks_per_second * _workers.SPIN_SECONDS)
    never = np.array([1, 0], np.int64)   # (a part posted, none done)
    start = time.perf_counter()
    assert not _workers._wait(never, int(loops.ticks_per_second * 0.05), loops.functions)
    assert 0.045 < time.perf_counter() - start < 2.0
    assert _workers._wait(np.array([3, 3], np.int64), 1, loops.functions)   # done already


def test_workers_wake_after_sleeping(two_threads, workers_asleep):
    # past SPIN_SECONDS of polling a worker blocks on its event; a new part wakes it
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((64, 40)), rng.standard_normal((40, 48))
    for _ in range(3):
        np.testing.assert_allclose(_parallel.matmul(a, b), a @ b, rtol=1e-12)
        assert _parallel.run_parts(lambda x: x + 1, [1, 2]) == [2, 3]
        workers_asleep()


def test_run_parts_order_errors_and_nesting(two_threads):
    assert _parallel.run_parts(lambda x: x * 10, [1, 2, 3, 4, 5]) == [10, 20, 30, 40, 50]
    with pytest.raises(ValueError, match="part 1"):
        _parallel.run_parts(lambda x: (_ for _ in ()).throw(ValueError(f"part {x}"))
                            if x == 1 else x, [0, 1])
    # a part that splits work again runs it on its own thread: no deadlock
    nested = _parallel.run_parts(lambda x: _parallel.run_parts(lambda y: x + y, [1, 2]),
                                 [10, 20])
    assert nested == [[11, 12], [21, 22]]
    assert _parallel.split(10, 3) == [slice(0, 3), slice(3, 6), slice(6, 10)]
    assert _parallel.split(2, 5) == [slice(0, 1), slice(1, 2)]


def _child(queue):
    a = np.arange(12.0).reshape(3, 4)
    queue.put((_parallel.run_parts(lambda x: x + 1, [1, 2]),
               _parallel.matmul(a, a.T).tolist()))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_workers_start_again_in_a_forked_child(two_threads):
    _parallel.run_parts(lambda x: x, [0, 1])   # the parent's workers exist
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child, args=(queue,))
    child.start()
    parts, product = queue.get(timeout=60)
    child.join(timeout=60)
    a = np.arange(12.0).reshape(3, 4)
    assert parts == [2, 3] and product == (a @ a.T).tolist()


@pytest.mark.parametrize("threads", [1, 2])
def test_convolutions_split_over_the_batch_match_float64(threads):
    before = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        rng = np.random.default_rng(2)
        x = rng.standard_normal((9, 3, 10, 10)).astype(np.float32)
        w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
        c = rng.standard_normal((9, 4, 10, 10)).astype(np.float32)
        geo = Geometry((10, 10), (1, 1), (1, 1), (1, 1), (1, 1), 1)
        for fn, args in ((conv_array, (x, w, geo)), (conv_transpose_array, (c, w, geo)),
                         (conv_weight_array, (x, c, (3, 3), geo))):
            wide = [t.astype(np.float64) if isinstance(t, np.ndarray) else t for t in args]
            np.testing.assert_allclose(fn(*args), fn(*wide), rtol=1e-4, atol=1e-4)
    finally:
        ember.set_num_threads(before)


@pytest.mark.skipif(_blas.openblas() is None, reason="NumPy's BLAS is not OpenBLAS")
def test_openblas_stays_on_one_thread_and_can_be_left_alone():
    assert _blas.openblas().get_num_threads() == 1
    code = ("import numpy, ember; from ember.ops import _blas; "
            "print(_blas.openblas().get_num_threads(), ember.get_num_threads())")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="2")
    runs = run_together({"left": (code, dict(env, EMBER_OWN_THREADS="0")),
                         "taken": (code, dict(env, EMBER_OWN_THREADS="1"))})
    assert runs["left"].stdout.split() == ["2", "2"]
    assert runs["taken"].stdout.split() == ["1", "2"]


def _record_splits(monkeypatch, into: list | None = None) -> list:
    """Make `_workers.split_product` append whether it ran to `into` (a new list if
    None), which is returned."""
    into = [] if into is None else into
    real = _workers.split_product
    monkeypatch.setattr(_workers, "split_product",
                        lambda *args: into.append(real(*args)) or into[-1])
    return into


@needs_worker_loops
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_single_rows_go_to_the_worker_as_matrix_vector_products(two_threads, dtype,
                                                                 monkeypatch):
    # a (1, k) row times a (k, n) matrix, stored either way round, into a strided output;
    # the worker's half goes as a matrix-vector part, posted from compiled code or Python
    posted = []
    real = _workers.Worker.post_product
    monkeypatch.setattr(_workers.Worker, "post_product",
                        lambda self, *args: posted.append(real(self, *args)) or posted[-1])
    _record_splits(monkeypatch, posted)
    worker = _workers.workers()[0]
    rng = np.random.default_rng(8)
    row = rng.standard_normal((1, 40)).astype(dtype)
    weight = rng.standard_normal((30, 40)).astype(dtype)            # (n, k): b = weight.T
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for a, b in [(row, weight.T), (row, np.ascontiguousarray(weight.T)),
                 (np.repeat(row, 2, axis=1)[:, ::2], weight.T)]:
        exact = a.astype(np.float64) @ b.astype(np.float64)
        got = _parallel.matmul(a, b)
        np.testing.assert_allclose(got, exact, rtol=tol, atol=tol * np.abs(exact).max())
        wide = np.full((1, 60), np.nan, dtype)
        _parallel.matmul(a, b, out=wide[:, ::2])
        np.testing.assert_allclose(wide[:, ::2], exact, rtol=tol,
                                   atol=tol * np.abs(exact).max())
        assert np.isnan(wide[:, 1::2]).all()
        assert worker.desc[0] in (_workers._SGEMV, _workers._DGEMV)
    # (each of the six calls posted once: compiled, or from Python after the compiled
    # hand-over declined a sleeping worker)
    assert posted.count(True) == 6


@needs_worker_loops
def test_single_rows_split_from_fewer_multiply_adds(on_two_threads, monkeypatch):
    # a batch-1 linear layer reads its whole weight: one row is split from
    # ROW_SPLIT_MIN multiply-adds, more rows only from SPLIT_MIN
    split = _record_splits(monkeypatch)
    rng = np.random.default_rng(21)
    weight = rng.standard_normal((512, 512)).astype(np.float32)
    assert 512 * 512 >= _parallel.ROW_SPLIT_MIN and 2 * 512 * 512 < _parallel.SPLIT_MIN
    for rows, expected in [(1, 1), (2, 0)]:   # (split_product calls: a sleeping worker
        # declines the compiled hand-over, and the halves are then posted from Python)
        split.clear()
        x = rng.standard_normal((rows, 512)).astype(np.float32)
        got = _parallel.matmul(x, weight.T)
        np.testing.assert_allclose(got, x.astype(np.float64) @ weight.T.astype(np.float64),
                                   rtol=1e-4, atol=1e-3)
        assert len(split) == expected
    split.clear()
    _parallel.matmul(rng.standard_normal((1, 256)).astype(np.float32), weight[:, :256].T)
    assert split == []   # (131K multiply-adds: on this thread)


@needs_worker_loops
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("stored", ["transposed", "row-major"])
def test_single_rows_take_the_bias_and_relu_in_their_parts(two_threads, dtype, stored,
                                                            monkeypatch):
    # batch-1 inference's linear layer, x @ W.T + b then relu: the two halves of the row
    # from one compiled call, then the bias and the clamp (NaN kept)
    compiled = _record_splits(monkeypatch)
    rng = np.random.default_rng(12)
    row = rng.standard_normal((1, 300)).astype(dtype)
    weight = rng.standard_normal((70, 300)).astype(dtype)
    b = weight.T if stored == "transposed" else np.ascontiguousarray(weight.T)
    bias = rng.standard_normal(70).astype(dtype)
    bias[5] = np.nan
    monkeypatch.setattr(_parallel, "SPLIT_MIN", 1)
    _parallel.matmul(row, b)   # (wakes the worker)
    compiled.clear()
    exact = row.astype(np.float64) @ b.astype(np.float64) + bias
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for relu in (False, True):
        got = _parallel.matmul(row, b, bias=bias, relu=relu)
        want = np.where(exact > 0, exact, 0) if relu else exact
        want[0, 5] = np.nan
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(exact[0, 6:]).max())
        assert got.dtype == dtype and got.shape == (1, 70)
        assert _workers.workers()[0].desc[0] in (_workers._SGEMV, _workers._DGEMV)
    assert compiled == [True, True]


def test_openblas_kernel_family_choice():
    # on AMD processors ember prefers OpenBLAS's Haswell kernels to its AVX-512 ones;
    # EMBER_BLAS_CORETYPE=keep leaves OpenBLAS's choice, a name asks for that family
    choose = _blas.preferred_core
    assert choose("AuthenticAMD", "SkylakeX", None) == "Haswell"
    assert choose("AuthenticAMD", "Cooperlake", "") == "Haswell"
    assert choose("GenuineIntel", "SkylakeX", None) is None
    assert choose("AuthenticAMD", "Haswell", None) is None
    assert choose("AuthenticAMD", "SkylakeX", "keep") is None
    assert choose("GenuineIntel", "SkylakeX", " Haswell ") == "Haswell"
    assert choose("GenuineIntel", "Haswell", "Haswell") is None
    # an AVX-512 family on a processor without AVX-512 would die of an illegal instruction
    with pytest.warns(RuntimeWarning, match="SkylakeX.*cannot run"):
        assert choose("AuthenticAMD", "Haswell", "SkylakeX", avx512=False) is None
    assert choose("AuthenticAMD", "Zen", "Haswell", avx512=False) == "Haswell"
    assert choose("AuthenticAMD", "Haswell", None, avx512=False) is None


# (run before ember is imported: OpenBLAS's own choice)
_CORE_BEFORE_EMBER = (
    "import ctypes, numpy as np\n"
    "path = [l.split()[-1] for l in open('/proc/self/maps') if 'blas' in l.lower()][0]\n"
    "lib = ctypes.CDLL(path)\n"
    "name = next(getattr(lib, n) for n in ('scipy_openblas_get_corename64_',\n"
    "            'openblas_get_corename64_', 'openblas_get_corename') if hasattr(lib, n))\n"
    "name.restype = ctypes.c_char_p\n"
    "before = name().decode()\n")


_FAMILY_CASES = [("Haswell", None, "Haswell"), ("SkylakeX", None, "SkylakeX"),
                 ("keep", None, None), ("Haswell", "Sandybridge", "Sandybridge"),
                 (None, None, "auto")]


@functools.cache
def _family_runs() -> dict:
    """Each case's fresh process (setting, user's OPENBLAS_CORETYPE), all run at once."""
    code = _CORE_BEFORE_EMBER + (
        "import os, ember; from ember.ops import _blas\n"
        "a = np.random.default_rng(0).standard_normal((70, 90)); b = a.astype(np.float32)\n"
        "ok = np.allclose(b @ b.T, a @ a.T, rtol=1e-4, atol=1e-3) and "
        "np.allclose(a @ a.T, np.einsum('ik,jk->ij', a, a))\n"
        "print(before, _blas.core_name(), ok, os.environ.get('OPENBLAS_CORETYPE'),"
        " _blas._cpu_vendor() or '-')\n")
    base = {k: v for k, v in os.environ.items()
            if k not in ("OPENBLAS_CORETYPE", "EMBER_BLAS_CORETYPE")}
    jobs = {}
    for setting, user, _ in _FAMILY_CASES:
        env = dict(base)
        if setting is not None:
            env["EMBER_BLAS_CORETYPE"] = setting
        if user is not None:
            env["OPENBLAS_CORETYPE"] = user
        jobs[setting, user] = (code, env)
    return run_together(jobs)


@pytest.mark.skipif(_blas.core_name() is None, reason="OpenBLAS does not say its kernels")
@pytest.mark.parametrize("setting, user, expected", _FAMILY_CASES)
def test_openblas_kernel_family_switch_in_a_fresh_process(setting, user, expected):
    run = _family_runs()[setting, user]
    before, after, ok, left, vendor = run.stdout.split()
    assert ok == "True"
    if expected == "auto":   # Haswell on AMD for OpenBLAS's AVX-512 families, else kept
        expected = _blas.preferred_core(vendor, before, None)
    if expected in _blas._AVX512_CORES and not _blas._has_avx512():
        expected = None      # refused, with a warning, on a processor without AVX-512
        assert "cannot run" in run.stderr
    assert after == (before if expected is None else expected)
    assert left == (user or "None")   # the environment is put back as it was


@_native.kernel
def _doubled(x):
    return x * 2


@needs_worker_loops
def test_a_kernels_entry_point_is_kept_until_it_gains_another_build():
    _doubled(np.float64(1.5))
    assert len(_doubled._compiled.overloads) == 1
    first = _workers._entry_point(_doubled)
    assert first is not _doubled and first(2.0) == 4.0
    assert _workers._entry_point(_doubled) is first          # looked up once, then kept
    assert _doubled(np.int64(3)) == 6                        # a second build...
    assert _workers._entry_point(_doubled) is _doubled       # ...so the dispatcher chooses


@needs_worker_loops
def test_products_reach_a_blas_with_c_int_sizes(monkeypatch):
    # a CBLAS built with C ints (an LP64 OpenBLAS) takes 32-bit sizes: the compiled loops
    # built with an int32 `ints` narrow them.  Stand-in: a plain row-major product compiled
    # as a C function of exactly that signature, checked against NumPy.
    from numba import carray, cfunc, types

    from ember.ops._native_parts import pointer_to

    i32, f32, i64 = types.int32, types.float32, types.int64

    @cfunc(types.void(i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32))
    def naive_sgemm(order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
        if order != 101 or trans_a != 111 or trans_b != 111:
            return
        left = carray(pointer_to(a, np.float32), m * lda)
        right = carray(pointer_to(b, np.float32), k * ldb)
        target = carray(pointer_to(c, np.float32), m * ldc)
        for i in range(m):
            for j in range(n):
                total = np.float32(0)
                for p in range(k):
                    total += left[i * lda + p] * right[p * ldb + j]
                kept = beta * target[i * ldc + j] if beta != 0 else np.float32(0)
                target[i * ldc + j] = alpha * total + kept

    loops = _workers._compiled_loops()
    if loops is None:
        pytest.skip("no CBLAS interface known for NumPy's BLAS")
    functions = loops.functions.copy()
    functions[_workers._SGEMM_AT] = naive_sgemm.address
    # (this process's builds are for its own library's integers: a build for C ints)
    monkeypatch.setattr(_workers, "_INTS", "int32")
    narrow = _native.kernel(signatures=_workers._describe_and_run.signatures)(
        _workers._describe_and_run.py_func)
    rng = np.random.default_rng(8)
    wide = rng.standard_normal((5, 9)).astype(np.float32)
    a, b = wide[:, :7], rng.standard_normal((7, 3)).astype(np.float32)  # (lda 9)
    out = np.full((5, 3), np.nan, np.float32)
    desc = np.zeros(_workers._DESC, np.int64)
    assert narrow(a, b, out, 0, desc, functions, np.int32(0))
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-5)
    assert list(desc[:4]) == [_workers._SGEMM, 5, 3, 7] and desc[5] == 9


@needs_worker_loops
def test_products_cblas_cannot_take_are_refused():
    # neither dimension of unit stride: no CBLAS layout, nothing computed
    loops = _workers._compiled_loops()
    if loops is None:
        pytest.skip("no CBLAS interface known for NumPy's BLAS")
    a = np.ones((6, 8), np.float32)[::2, ::2]
    b, out = np.ones((4, 2), np.float32), np.zeros((3, 2), np.float32)
    assert not _workers.run_product(a, b, out)
    assert not _workers.run_product(np.ones((3, 4)), b, out)   # mixed dtypes
    assert (out == 0).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("by_rows", [True, False])
def test_a_bias_is_added_by_the_threads_that_computed_each_part(two_threads, monkeypatch,
                                                                dtype, by_rows):
    # `matmul(a, b, bias=row)` gives the bits of the product plus the row, whichever way
    # it is split; rows of the product's dtype go with the workers' CBLAS parts, other
    # biases (a broadcast value, a whole matrix, a strided row) are added at the end
    posted = []
    real = _workers.Worker.post_product
    monkeypatch.setattr(_workers.Worker, "post_product",
                        lambda self, *args: posted.append(real(self, *args)) or posted[-1])
    real_split = _workers.split_product

    def split(*args):   # (the worker's half posted from compiled code: a CBLAS part)
        done = real_split(*args)
        if done:
            posted.append(True)
        return done

    monkeypatch.setattr(_workers, "split_product", split)
    monkeypatch.setattr(_parallel, "_split_by_rows", lambda a, b: by_rows)
    rng = np.random.default_rng(9)
    a = rng.standard_normal((37, 23)).astype(dtype)
    w = rng.standard_normal((19, 23)).astype(dtype)
    plain = _parallel.matmul(a, w.T)
    wide = rng.standard_normal(38).astype(dtype)
    other = np.float32 if dtype == np.float64 else np.float64
    # (bias, whether the worker's part goes as a CBLAS part: a row it refuses goes with a
    # Python part; a bias added at the end leaves the parts without one)
    for bias, native_part in ((wide[:19], True), (wide[::2], False), (wide[:1], not by_rows),
                              (rng.standard_normal((37, 19)).astype(dtype), True),
                              (np.asarray(2.5, dtype), True), (wide[:19].astype(other), False)):
        posted.clear()
        got = _parallel.matmul(a, w.T, bias=bias)
        np.testing.assert_array_equal(got, plain + bias.astype(dtype))
        assert got.dtype == dtype and got.shape == (37, 19)
        if _native.available() and _workers._compiled_loops() is not None:
            assert posted == [native_part]
    expected = _parallel.matmul(a[:1], w.T) + wide[:19]
    posted.clear()   # one row: matrix-vector parts, the bias added at the end
    np.testing.assert_array_equal(_parallel.matmul(a[:1], w.T, bias=wide[:19]), expected)
    if _native.available() and _workers._compiled_loops() is not None:
        assert posted == ([] if by_rows else [True])   # (one row: nothing to cut by rows)
    exact = a.astype(np.float64) @ w.T.astype(np.float64) + wide[:19]
    np.testing.assert_allclose(_parallel.matmul(a, w.T, bias=wide[:19]), exact,
                               rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("by_rows", [True, False])
@pytest.mark.parametrize("split", ["threads", "python parts", "one thread"])
def test_relu_after_the_product_wherever_it_is_computed(two_threads, monkeypatch, dtype,
                                                        by_rows, split):
    # `matmul(a, b, bias=row, relu=True)` is max(a @ b + row, 0) with NaN kept: applied by
    # each thread to its part (the compiled loops), after Python parts, or after an
    # unsplit product
    monkeypatch.setattr(_parallel, "_split_by_rows", lambda a, b: by_rows)
    if split == "python parts":
        monkeypatch.setattr(_workers, "split_product", lambda *args: False)
        monkeypatch.setattr(_workers.Worker, "post_product", lambda self, *args: False)
    elif split == "one thread":
        monkeypatch.setattr(_parallel, "SPLIT_MIN", 1 << 40)
    compiled = _record_splits(monkeypatch)
    rng = np.random.default_rng(11)
    a = rng.standard_normal((37, 23)).astype(dtype)
    a[3, :] = np.nan                                   # a NaN row stays NaN
    w = rng.standard_normal((19, 23)).astype(dtype)
    bias = rng.standard_normal(19).astype(dtype)
    _parallel.matmul(a, w.T)   # (wakes the worker: a sleeping one takes a Python part)
    compiled.clear()
    for row in (bias, None):
        plain = _parallel.matmul(a, w.T, bias=row)
        got = _parallel.matmul(a, w.T, bias=row, relu=True)
        np.testing.assert_array_equal(got, np.maximum(plain, 0))
        assert np.isnan(got[3]).all() and (got[~np.isnan(got)] >= 0).all()
        assert not np.signbit(got[got == 0]).any()     # (+0.0, as relu gives)
    if split == "threads" and _native.available() and _workers._compiled_loops() is not None:
        assert compiled and all(compiled)


@needs_worker_loops
def test_the_compiled_loops_refuse_a_bias_they_cannot_add():
    # a matrix-vector product (one row) or a stack takes no bias: nothing computed
    if _workers._compiled_loops() is None:
        pytest.skip("no CBLAS interface known for NumPy's BLAS")
    rng = np.random.default_rng(10)
    row, b = rng.standard_normal((1, 6)), rng.standard_normal((6, 4))
    out = np.zeros((1, 4))
    assert not _workers.run_product(row, b, out, np.ones(4))
    assert (out == 0).all()
    assert _workers.run_product(row, b, out)
    np.testing.assert_allclose(out, row @ b, rtol=1e-12)
    stack, items = rng.standard_normal((2, 3, 6)), rng.standard_normal((2, 6, 4))
    assert not _workers.run_product(stack, items, np.zeros((2, 3, 4)), np.ones(4))
    worker = _workers.Worker()
    assert not worker.post_product(row, b, out, np.ones(4))
    assert not worker.post_product(rng.standard_normal((3, 6)), b, np.zeros((3, 4)),
                                   np.ones(4, np.float32))   # (not the product's dtype)


def test_large_strided_copies_split_over_the_threads(two_threads, monkeypatch):
    # `contiguous`: a C-contiguous copy, blocks of leading rows on each thread; reshape's
    # copy and contiguous() go through it
    monkeypatch.setattr(_parallel, "COPY_SPLIT_MIN", 1)
    rng = np.random.default_rng(11)
    a = rng.standard_normal((6, 3, 5, 4)).transpose(0, 2, 1, 3)
    got = _parallel.contiguous(a)
    assert got.flags.c_contiguous and got is not a
    np.testing.assert_array_equal(got, a)
    assert _parallel.contiguous(got) is got
    t = ember.tensor(a, requires_grad=True)
    r = t.reshape(6, 5, 12)
    np.testing.assert_array_equal(r.detach().numpy(), a.reshape(6, 5, 12))
    c = t.contiguous()
    np.testing.assert_array_equal(c.detach().numpy(), a)
    assert c.detach().numpy().flags.c_contiguous
    (r.sum() + (c * 2).sum()).backward()
    np.testing.assert_array_equal(t.grad.numpy(), np.full(a.shape, 3.0))


def test_transposed_copies_split_from_a_smaller_size(two_threads, monkeypatch):
    # a copy whose last dim is strided splits from GATHERING_COPY_SPLIT_MIN, one whose
    # rows are contiguous from COPY_SPLIT_MIN
    monkeypatch.setattr(_parallel, "COPY_SPLIT_MIN", 1 << 40)
    monkeypatch.setattr(_parallel, "GATHERING_COPY_SPLIT_MIN", 1)
    parts, real = [], _parallel.run_parts
    monkeypatch.setattr(_parallel, "run_parts", lambda fn, p: parts.append(p) or real(fn, p))
    base = np.random.default_rng(12).standard_normal((6, 3, 5, 4))
    rows_kept = base.transpose(0, 2, 1, 3)
    np.testing.assert_array_equal(_parallel.contiguous(rows_kept), rows_kept)
    assert not parts
    gathering = base.transpose(0, 1, 3, 2)
    got = _parallel.contiguous(gathering)
    assert len(parts) == 1 and got.flags.c_contiguous
    np.testing.assert_array_equal(got, gathering)


@pytest.mark.parametrize("op, ufunc", [("add", np.add), ("subtract", np.subtract),
                                       ("multiply", np.multiply)])
def test_large_views_are_combined_on_the_threads(two_threads, monkeypatch, op, ufunc):
    """Views the native kernels do not take (cat's two gradient slices) go to NumPy's
    loops on blocks of rows, one per thread: the same values as one call."""
    from ember.ops import _native as native
    from ember.ops import _native_binary

    monkeypatch.setattr(native, "SPLIT_MIN", 1)
    monkeypatch.setattr(_parallel, "BINARY_SPLIT_MIN", 8)
    parts, real = [], _parallel.run_parts
    monkeypatch.setattr(_parallel, "run_parts", lambda fn, p: parts.append(p) or real(fn, p))
    g = np.random.default_rng(13).standard_normal((7, 10)).astype(np.float32)
    x, y = g[:, :5], g[:, 5:]
    got = getattr(_native_binary, op)(x, y)
    assert len(parts) == 1 and len(parts[0]) == 2
    assert got.flags.c_contiguous and got.dtype == np.float32
    np.testing.assert_array_equal(got, ufunc(x, y))
    parts.clear()
    getattr(_native_binary, op)(x[:1], y[:1])               # one row: nothing to cut
    getattr(_native_binary, op)(x, y[:, :1])                # shapes differ: broadcast
    assert not parts


def test_a_tensor_concatenated_with_itself_sums_its_gradient_slices(two_threads,
                                                                    monkeypatch):
    from ember.ops import _native as native

    monkeypatch.setattr(native, "SPLIT_MIN", 1)
    monkeypatch.setattr(_parallel, "BINARY_SPLIT_MIN", 8)
    x = ember.tensor(np.random.default_rng(14).standard_normal((6, 4)), requires_grad=True)
    g = np.random.default_rng(15).standard_normal((6, 8))
    ember.cat([x, x], 1).backward(ember.tensor(g))
    np.testing.assert_array_equal(x.grad.numpy(), g[:, :4] + g[:, 4:])


def test_bias_gradients_sum_over_leading_dims_on_the_threads(two_threads, monkeypatch):
    # `sum_leading` is a row of ones times the rows, split over the threads; a
    # convolution's first-order bias gradient is such a sum, then one per channel
    from ember.ops import _kernels

    monkeypatch.setattr(_kernels, "BLOCK", 1)
    splits = []
    real = _parallel._split_product
    monkeypatch.setattr(_parallel, "_split_product",
                        lambda *args: splits.append(args[0].shape) or real(*args))
    rng = np.random.default_rng(12)
    x = rng.standard_normal((7, 5, 6))
    np.testing.assert_allclose(_kernels.sum_leading(x, (0,), False), x.sum(0), rtol=1e-12)
    assert splits == [(1, 7)]
    inputs = ember.tensor(rng.standard_normal((4, 3, 6, 6)), requires_grad=True)
    weight = ember.tensor(rng.standard_normal((5, 3, 3, 3)), requires_grad=True)
    bias = ember.tensor(rng.standard_normal(5), requires_grad=True)
    g = rng.standard_normal((4, 5, 4, 4))
    ember.nn.functional.conv2d(inputs, weight, bias).backward(ember.tensor(g))
    np.testing.assert_allclose(bias.grad.numpy(), g.sum(axis=(0, 2, 3)), rtol=1e-12)
    assert (1, 4) in splits


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unsplit_products_with_a_transposed_right_operand(dtype, monkeypatch):
    # an unsplit linear layer's x @ W.T (one thread: nothing is split) runs on the
    # threads' BLAS (`product_here`) from TRANSPOSED_MKL_MIN multiply-adds; the rest on
    # NumPy's
    rng = np.random.default_rng(7)
    here = []
    monkeypatch.setattr(_parallel, "product_here",
                        lambda a, b, out=None, bias=None: here.append(a.shape) or np.matmul(
                            a, b, out=out))
    monkeypatch.setattr(_parallel, "threads", lambda: 1)
    assert _parallel.TRANSPOSED_MKL_MIN == 1 << 20
    cases = [((128, 1024), (10, 1024), True),   # 1,310,720 multiply-adds, transposed: here
             ((128, 256), (10, 256), False),    # 327,680: below the threshold
             ((1, 8192), (300, 8192), False)]   # one row: a matrix-vector product
    for (m, k), (n, _), expect_here in cases:
        x = rng.standard_normal((m, k)).astype(dtype)
        w = rng.standard_normal((n, k)).astype(dtype)
        here.clear()
        out = _parallel.matmul(x, w.T)
        assert bool(here) == expect_here
        np.testing.assert_allclose(out, x.astype(np.float64) @ w.T.astype(np.float64),
                                   rtol=1e-4 if dtype == np.float32 else 1e-12, atol=1e-4)
    x = rng.standard_normal((128, 256)).astype(dtype)
    here.clear()
    _parallel.matmul(x, rng.standard_normal((256, 10)).astype(dtype))   # row-major: NumPy's
    assert not here


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unsplit_transposed_products_equal_float64(dtype):
    rng = np.random.default_rng(8)
    for m, k, n in ((128, 256, 10), (64, 100, 100), (20, 256, 128)):
        x = rng.standard_normal((m, k)).astype(dtype)
        w = rng.standard_normal((n, k)).astype(dtype)
        bias = rng.standard_normal(n).astype(dtype)
        expected = x.astype(np.float64) @ w.T.astype(np.float64) + bias
        np.testing.assert_allclose(_parallel.matmul(x, w.T, bias=bias), expected,
                                   rtol=1e-4 if dtype == np.float32 else 1e-12, atol=1e-4)


@needs_worker_loops
def test_a_split_posted_from_compiled_code_to_a_sleeping_worker(two_threads, workers_asleep):
    # `_workers.split_product` posts the worker's half from compiled code, which cannot
    # wake a sleeping worker: it declines one it knows asleep, and when the worker falls
    # asleep just as the half is posted, its bounded wait returns 0 and Python wakes it
    if _workers._compiled_loops() is None:
        pytest.skip("no CBLAS loops here")
    rng = np.random.default_rng(11)
    a, b = rng.standard_normal((64, 40)), rng.standard_normal((40, 48))
    bias = rng.standard_normal(48)
    worker = workers_asleep()
    out = np.full((64, 48), np.nan)
    assert not _workers.split_product(worker, a, b, out, True, bias)   # declined: asleep
    assert not _workers.pair_products(worker, a, b, out, a, b, out)
    assert np.isnan(out).all()
    mine = np.zeros(_workers._DESC, np.int64)
    loops = _workers._compiled_loops()
    assert loops.split_and_run(a, b, out, bias.ctypes.data, False, False, mine, worker) == 0
    np.testing.assert_allclose(out[:, :24], a @ b[:, :24] + bias[:24], rtol=1e-12)
    assert np.isnan(out[:, 24:]).all()           # the worker's half waits, posted
    with worker._lock:
        worker._wake.set()
    worker.join()
    np.testing.assert_allclose(out, a @ b + bias, rtol=1e-12)
    out2 = _parallel.matmul(a, b, bias=bias)      # awake: taken by the compiled split
    np.testing.assert_allclose(out2, a @ b + bias, rtol=1e-12)
